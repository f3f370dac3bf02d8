//! The raw-socket baseline: the same bytes as an Ice twoway/oneway/batch exchange, written and
//! read with blocking sockets and no middleware — the physical limit on this machine.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::encoding::{Encode, EncodingVersion, Identity};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};

use crate::stats::Steps;
use crate::tests::{Kind, Measured, Test};
use crate::tls::Buffered;

/// A reply message with status OK and `payload` as its encapsulation's contents.
pub(crate) fn reply_ok(request_id: i32, payload: &[u8]) -> Vec<u8> {
    let size = 14 + 4 + 1 + 6 + payload.len();
    let mut r = Vec::with_capacity(size);
    r.extend_from_slice(b"IceP\x01\x00\x01\x00\x02\x00");
    r.extend_from_slice(&(size as i32).to_le_bytes());
    r.extend_from_slice(&request_id.to_le_bytes());
    r.push(0);
    r.extend_from_slice(&((payload.len() + 6) as i32).to_le_bytes());
    r.extend_from_slice(&[1, 1]);
    r.extend_from_slice(payload);
    r
}

/// The size of the message starting at `at` in `buf` when `buf` holds all of it (sizes below
/// a header's 14 bytes count as 14, so that a scan always moves on), or `None`.
pub(crate) fn complete_message_at(buf: &[u8], at: usize) -> Option<usize> {
    let header = buf.get(at..at + 14)?;
    let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]).max(14) as usize;
    (buf.len() - at >= size).then_some(size)
}

/// A reader of request bodies that never fails (out-of-range reads give zeros), for
/// baselines that trust their peer.
pub(crate) struct Cursor<'a> {
    pub(crate) b: &'a [u8],
    pub(crate) p: usize,
}

impl Cursor<'_> {
    fn byte(&mut self) -> u8 {
        let v = self.b.get(self.p).copied().unwrap_or(0);
        self.p += 1;
        v
    }
    fn size(&mut self) -> usize {
        let b = self.byte();
        if b < 255 {
            return b as usize;
        }
        self.int() as usize
    }
    pub(crate) fn int(&mut self) -> i32 {
        let mut a = [0u8; 4];
        if let Some(s) = self.b.get(self.p..self.p + 4) {
            a.copy_from_slice(s);
        }
        self.p += 4;
        i32::from_le_bytes(a)
    }
    fn str(&mut self) -> &str {
        let n = self.size();
        let s = self.b.get(self.p..self.p + n).and_then(|s| std::str::from_utf8(s).ok()).unwrap_or("");
        self.p += n;
        s
    }
    /// Skips identity, facet; returns (operation, params) and moves past the request.
    pub(crate) fn request(&mut self) -> (String, Vec<u8>) {
        let (op, params) = self.request_range();
        (op, self.b[params].to_vec())
    }

    /// Like [`Cursor::request`], with the parameters as a range of the body (no copy).
    pub(crate) fn request_range(&mut self) -> (String, std::ops::Range<usize>) {
        self.str();
        self.str();
        if self.size() == 1 {
            self.str();
        }
        let op = self.str().to_string();
        self.byte();
        let ctx = self.size();
        for _ in 0..ctx {
            self.str();
            self.str();
        }
        // The encapsulation size counts its own four bytes, already read.
        let rest = self.int().max(6) as usize - 4;
        let start = (self.p + 2).min(self.b.len());
        let end = (self.p + rest).min(self.b.len()).max(start);
        self.p += rest;
        (op, start..end)
    }
}

fn payload_for(op: &str, param: i32) -> Vec<u8> {
    let mut e = floe::encoding::Encoder::new(EncodingVersion::V1_1);
    let n = param.max(0) as usize;
    match op {
        "recvByteSeq" => e.write_byte_seq(&vec![0u8; n]),
        "recvFixedSeq" => {
            e.write_size(n);
            for _ in 0..n {
                e.write_i32(1);
                e.write_i32(2);
                e.write_f64(3.0);
            }
        }
        "recvStringDoubleSeq" => {
            e.write_size(n);
            for _ in 0..n {
                e.write_str("hello");
                e.write_f64(3.14);
            }
        }
        _ => {}
    }
    e.into_buffer().to_vec()
}

/// Serves the raw protocol on `port`, and over TLS on `ssl_port` if given, until a
/// `shutdown` request arrives.
pub(crate) fn serve(port: u16, ssl_port: Option<u16>) -> std::io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    let counter = Arc::new(AtomicI64::new(0));
    if let Some(ssl_port) = ssl_port {
        let tls = TcpListener::bind(("127.0.0.1", ssl_port))?;
        let config = crate::tls::raw_server_config()?;
        let counter = counter.clone();
        std::thread::spawn(move || {
            for stream in tls.incoming().flatten() {
                let counter = counter.clone();
                let config = config.clone();
                std::thread::spawn(move || {
                    if let Ok(stream) = crate::tls::raw_accept(stream, config) {
                        let _ = serve_connection(stream, &counter);
                    }
                });
            }
        });
    }
    println!("ready");
    for stream in listener.incoming() {
        let stream = stream?;
        let counter = counter.clone();
        std::thread::spawn(move || {
            let _ = stream.set_nodelay(true);
            let _ = serve_connection(stream, &counter);
        });
    }
    Ok(())
}

fn serve_connection<S: Read + Write>(stream: S, counter: &AtomicI64) -> std::io::Result<()> {
    let mut stream = Buffered::new(stream, 64 * 1024);
    stream.write_all(&floe::protocol::header::VALIDATE_CONNECTION)?;
    let mut header = [0u8; 14];
    let mut body = Vec::new();
    let mut cache: Vec<(String, i32, Vec<u8>)> = Vec::new();
    loop {
        if stream.read_exact(&mut header).is_err() {
            return Ok(());
        }
        let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]).max(14) as usize;
        body.resize(size - 14, 0);
        stream.read_exact(&mut body)?;
        match header[8] {
            0 => {
                let mut c = Cursor { b: &body, p: 0 };
                let id = c.int();
                let (op, params) = c.request();
                let param = Cursor { b: &params, p: 0 }.int();
                let payload: Vec<u8> = match op.as_str() {
                    "incr" => {
                        counter.fetch_add(1, Ordering::Relaxed);
                        Vec::new()
                    }
                    "reset" => {
                        counter.store(0, Ordering::Relaxed);
                        Vec::new()
                    }
                    "count" => (counter.load(Ordering::Relaxed) as i32).to_le_bytes().to_vec(),
                    "work" => {
                        let end = Instant::now() + Duration::from_micros(param.max(0) as u64);
                        while Instant::now() < end {}
                        Vec::new()
                    }
                    "recvByteSeq" | "recvFixedSeq" | "recvStringDoubleSeq" => {
                        match cache.iter().find(|(o, p, _)| *o == op && *p == param) {
                            Some((_, _, r)) => r.clone(),
                            None => {
                                let r = payload_for(&op, param);
                                cache.push((op.clone(), param, r.clone()));
                                r
                            }
                        }
                    }
                    "shutdown" => {
                        if id != 0 {
                            stream.write_all(&reply_ok(id, &[]))?;
                        }
                        std::process::exit(0);
                    }
                    _ => Vec::new(),
                };
                if id != 0 {
                    stream.write_all(&reply_ok(id, &payload))?;
                }
            }
            1 => {
                let mut c = Cursor { b: &body, p: 0 };
                let n = c.int();
                for _ in 0..n {
                    let (op, _) = c.request();
                    if counted(&op) {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
            4 => return Ok(()),
            _ => {}
        }
    }
}

/// The request a batched-oneway test sends (as a whole message; a batch shares its first 18
/// bytes): `o()`, `incr()`, or a cxRmi payload variant such as `d4` with parameters 1, 2, 3, 4.
fn batched_request(test: &Test) -> Vec<u8> {
    match test.kind {
        Kind::BatchSend => message("o", |_| {}),
        Kind::BatchDelivered => message("incr", |_| {}),
        _ => {
            let variant = test.payload_variant();
            let count: i32 = variant[1..].parse().unwrap_or(0);
            message(variant, |e| {
                for k in 1..=count {
                    match &variant[..1] {
                        "b" => e.write_u8(k as u8),
                        "s" => e.write_i16(k as i16),
                        "i" => e.write_i32(k),
                        "l" => e.write_i64(k as i64),
                        "f" => e.write_f32(k as f32),
                        _ => e.write_f64(k as f64),
                    }
                }
            })
        }
    }
}

/// A batch message of `n` copies of the batched request `body`.
fn batch_message(body: &[u8], n: usize) -> Vec<u8> {
    batch_message_into(Vec::with_capacity(18 + n * body.len()), body, n)
}

/// Like [`batch_message`], reusing `buf`'s allocation.
fn batch_message_into(mut buf: Vec<u8>, body: &[u8], n: usize) -> Vec<u8> {
    buf.clear();
    buf.extend_from_slice(b"IceP\x01\x00\x01\x00\x01\x00\0\0\0\0\0\0\0\0");
    for _ in 0..n {
        buf.extend_from_slice(body);
    }
    let size = buf.len() as i32;
    buf[10..14].copy_from_slice(&size.to_le_bytes());
    buf[14..18].copy_from_slice(&(n as i32).to_le_bytes());
    buf
}

/// True for the operations the server counts: `incr` and the cxRmi payload variants.
fn counted(op: &str) -> bool {
    matches!(op.as_bytes(), b"incr" | [b'b' | b's' | b'i' | b'l' | b'f' | b'd', b'1' | b'2' | b'4' | b'8'])
}

/// The request of the twoway test, `o()` (request id 1), as the raw client sends it.
pub(crate) fn twoway_request() -> Vec<u8> {
    message("o", |_| {})
}

/// A whole request message to identity `a` (request id 1).
fn message(op: &str, params: impl FnOnce(&mut floe::encoding::Encoder)) -> Vec<u8> {
    let prefix = RequestPrefix::new(&Identity::new("a"), "", op, OperationMode::Normal);
    encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, params).to_vec()
}

/// Bytes on the wire for one request and its reply (0 for a oneway), as floe and Ice encode
/// them.
pub(crate) fn wire_sizes(test: &Test) -> (usize, usize) {
    let param = test.param;
    let n = param.max(0) as usize;
    let empty_reply = reply_ok(1, &[]).len();
    match test.kind {
        Kind::Twoway | Kind::Demarey | Kind::Ami | Kind::BatchTwoway => (message("o", |_| {}).len(), empty_reply),
        Kind::Oneway => (message("o", |_| {}).len(), 0),
        // Per request inside a batch message (its 18-byte header and count are shared).
        Kind::BatchSend | Kind::BatchDelivered | Kind::BatchSendPayload | Kind::BatchDeliveredPayload => {
            (batched_request(test).len() - 18, 0)
        }
        Kind::BytesSend => (message("sendByteSeq", |e| e.write_byte_seq(&vec![0u8; n])).len(), empty_reply),
        Kind::BytesRecv => {
            (message("recvByteSeq", |e| param.encode(e)).len(), reply_ok(1, &payload_for("recvByteSeq", param)).len())
        }
        Kind::FixedSend => {
            (message("sendFixedSeq", |e| e.write_raw(&payload_for("recvFixedSeq", param))).len(), empty_reply)
        }
        Kind::FixedRecv => {
            (message("recvFixedSeq", |e| param.encode(e)).len(), reply_ok(1, &payload_for("recvFixedSeq", param)).len())
        }
        Kind::StringsSend => (
            message("sendStringDoubleSeq", |e| e.write_raw(&payload_for("recvStringDoubleSeq", param))).len(),
            empty_reply,
        ),
        Kind::StringsRecv => (
            message("recvStringDoubleSeq", |e| param.encode(e)).len(),
            reply_ok(1, &payload_for("recvStringDoubleSeq", param)).len(),
        ),
        _ => (message("work", |e| param.encode(e)).len(), empty_reply),
    }
}

struct Conn<S: Read + Write> {
    stream: Buffered<S>,
    body: Vec<u8>,
}

impl Conn<TcpStream> {
    fn open(port: u16) -> std::io::Result<Self> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        Conn::validated(s)
    }
}

impl<S: Read + Write> Conn<S> {
    /// A connection over `stream`, once the server's validate-connection message is read.
    fn validated(stream: S) -> std::io::Result<Self> {
        let mut stream = Buffered::new(stream, 1 << 20);
        let mut v = [0u8; 14];
        stream.read_exact(&mut v)?;
        Ok(Conn { stream, body: Vec::new() })
    }

    fn read_reply(&mut self) -> std::io::Result<()> {
        let mut h = [0u8; 14];
        self.stream.read_exact(&mut h)?;
        let size = i32::from_le_bytes([h[10], h[11], h[12], h[13]]).max(14) as usize;
        self.body.resize(size - 14, 0);
        self.stream.read_exact(&mut self.body)
    }

    fn call(&mut self, msg: &[u8]) -> std::io::Result<()> {
        self.stream.write_all(msg)?;
        self.read_reply()
    }

    fn count(&mut self) -> std::io::Result<i64> {
        self.call(&message("count", |_| {}))?;
        let b = &self.body;
        Ok(i32::from_le_bytes([b[11], b[12], b[13], b[14]]) as i64)
    }
}

/// Runs `test` against the raw server on `port` (its TLS port for an ssl test) for about
/// `duration`; returns the operations done and the seconds they took.
pub(crate) fn measure(test: &Test, port: u16, duration: Duration) -> std::io::Result<Measured> {
    if test.ssl {
        let stream = crate::tls::raw_connect(port, crate::tls::raw_client_config()?)?;
        return run(test, Conn::validated(stream)?, duration);
    }
    run(test, Conn::open(port)?, duration)
}

fn run<S: Read + Write>(test: &Test, mut c: Conn<S>, duration: Duration) -> std::io::Result<Measured> {
    let o = twoway_request();
    for _ in 0..100 {
        c.call(&o)?;
    }
    let param = test.param;
    let mut ops: u64 = 0;
    let start = Instant::now();
    let deadline = start + duration;
    match test.kind {
        Kind::Twoway => {
            while Instant::now() < deadline {
                for _ in 0..100 {
                    c.call(&o)?;
                }
                ops += 100;
            }
        }
        Kind::Demarey => {
            let mut steps = Steps::default();
            for _ in 0..1000 {
                c.call(&o)?;
            }
            let start = Instant::now();
            for _ in 0..10 {
                let s0 = Instant::now();
                for _ in 0..param {
                    c.call(&o)?;
                }
                steps.push(s0.elapsed(), param as u64);
                ops += param as u64;
            }
            return Ok(Measured { ops, secs: start.elapsed().as_secs_f64(), steps: Some(steps.stats()) });
        }
        Kind::Oneway => {
            let mut ow = o.clone();
            ow[14..18].copy_from_slice(&0i32.to_le_bytes());
            while Instant::now() < deadline {
                for _ in 0..1000 {
                    c.stream.write_all(&ow)?;
                }
                ops += 1000;
            }
            c.call(&o)?;
        }
        Kind::BatchSend | Kind::BatchSendPayload => {
            // cxRmi TEST1 times only the batching: rounds of requests copied into batch
            // messages of at most Ice.BatchAutoFlushSize (1 MB); each round is then written and
            // confirmed by a twoway call, untimed.
            let req = batched_request(test);
            let body = &req[18..];
            let round = crate::tests::sender_round(duration) as usize;
            let per_message = ((1 << 20) - 18) / body.len();
            let mut queuing = Duration::ZERO;
            while ops == 0 || Instant::now() < deadline {
                let t0 = Instant::now();
                let mut messages = Vec::with_capacity(round / per_message + 1);
                let mut left = round;
                while left > 0 {
                    let n = left.min(per_message);
                    messages.push(batch_message(body, n));
                    left -= n;
                }
                queuing += t0.elapsed();
                ops += round as u64;
                for m in &messages {
                    c.stream.write_all(m)?;
                }
                c.call(&o)?;
            }
            return Ok(Measured::new(ops, queuing.as_secs_f64()));
        }
        Kind::BatchDelivered | Kind::BatchDeliveredPayload => {
            let req = batched_request(test);
            let body = &req[18..];
            c.call(&message("reset", |_| {}))?;
            let mut buf: Vec<u8> = Vec::new();
            while Instant::now() < deadline {
                buf = batch_message_into(buf, body, 10_000);
                ops += 10_000;
                c.stream.write_all(&buf)?;
            }
            let give_up = Instant::now() + Duration::from_secs(30);
            while c.count()? < ops as i64 {
                if Instant::now() > give_up {
                    return Err(std::io::Error::other("batched requests lost"));
                }
            }
        }
        Kind::BatchTwoway => {
            let mut all = Vec::with_capacity(o.len() * param as usize);
            for k in 0..param {
                let mut m = o.clone();
                m[14..18].copy_from_slice(&(k + 1).to_le_bytes());
                all.extend_from_slice(&m);
            }
            while Instant::now() < deadline {
                c.stream.write_all(&all)?;
                for _ in 0..param {
                    c.read_reply()?;
                }
                ops += param as u64;
            }
        }
        Kind::Ami => {
            let mut inflight = 0;
            while Instant::now() < deadline {
                for _ in 0..100 {
                    c.stream.write_all(&o)?;
                    inflight += 1;
                    if inflight >= param {
                        c.read_reply()?;
                        inflight -= 1;
                    }
                }
                ops += 100;
            }
            for _ in 0..inflight {
                c.read_reply()?;
            }
        }
        kind => {
            let n = param.max(0) as usize;
            let msg = match kind {
                Kind::BytesSend => message("sendByteSeq", |e| e.write_byte_seq(&vec![0u8; n])),
                Kind::BytesRecv => message("recvByteSeq", |e| param.encode(e)),
                Kind::FixedSend => message("sendFixedSeq", |e| {
                    e.write_raw(&payload_for("recvFixedSeq", param));
                }),
                Kind::FixedRecv => message("recvFixedSeq", |e| param.encode(e)),
                Kind::StringsSend => message("sendStringDoubleSeq", |e| {
                    e.write_raw(&payload_for("recvStringDoubleSeq", param));
                }),
                Kind::StringsRecv => message("recvStringDoubleSeq", |e| param.encode(e)),
                _ => message("work", |e| param.encode(e)),
            };
            while Instant::now() < deadline {
                c.call(&msg)?;
                ops += 1;
            }
        }
    }
    Ok(Measured::new(ops, start.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn complete_message_at_finds_whole_messages_only() {
        let reply = reply_ok(7, &[1, 2, 3]);
        let mut two = reply.clone();
        two.extend_from_slice(&reply);
        assert_eq!(complete_message_at(&two, 0), Some(reply.len()));
        assert_eq!(complete_message_at(&two, reply.len()), Some(reply.len()));
        assert_eq!(complete_message_at(&two[..two.len() - 1], reply.len()), None, "the second is cut short");
        assert_eq!(complete_message_at(&two, two.len()), None);
        assert_eq!(complete_message_at(&two, two.len() + 5), None, "past the end");
        // A size below the header's counts as the header, so that a scan moves on.
        let mut tiny = reply[..14].to_vec();
        tiny[10..14].copy_from_slice(&3i32.to_le_bytes());
        assert_eq!(complete_message_at(&tiny, 0), Some(14));
        tiny[10..14].copy_from_slice(&(-1i32).to_le_bytes());
        assert_eq!(complete_message_at(&tiny, 0), Some(14));
    }
}
