//! The caps of the cross pairs: a raw-socket side of `Interop::Tester` that replays
//! pre-encoded messages and does no other work, so that `Ice client → raw server` and
//! `raw client → Ice server` show how fast each test can go when only the Ice peer works.
//! Where that cap is below 1.3× the Ice → Ice figure, no implementation of the other side can
//! reach 1.3× (the Ice peer's own time sets the pace), and floe's side is judged against the
//! cap instead.
//!
//! - The raw server (`--serve raw-tester`) answers the operations of the `--against` workload
//!   (`ping`, the counter, the six sequence operations, `ice_ping`/`ice_isA`) with replies
//!   encoded once per operation and size, skips the parameters it does not need, and keeps
//!   the counter for oneway and batched `incCounter`. Blocking sockets, a thread per
//!   connection.
//! - The raw client (`--raw-against PORT`) plays the `--against` workload with messages
//!   encoded before each test starts, reading the replies without decoding them, and prints
//!   the same `RESULT` lines.
#![allow(clippy::approx_constant)] // 3.14 is the value Test.ice specifies.

use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::encoding::{Encode, Encoder, EncodingVersion, Identity};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};

use crate::raw::{reply_ok, Cursor};

/// The reply payload (encapsulation contents) of a `recv*` operation for `param`, as Test.ice
/// specifies the values.
fn recv_payload(op: &str, param: i32) -> Vec<u8> {
    let n = param.max(0) as usize;
    let mut e = Encoder::new(EncodingVersion::V1_1);
    match op {
        "recvByteSeq" => e.write_byte_seq(&(0..n).map(|k| k as u8).collect::<Vec<u8>>()),
        "recvFixedSeq" => {
            e.write_size(n);
            for k in 0..n as i32 {
                e.write_i32(k);
                e.write_i32(k.wrapping_neg());
                e.write_f64(f64::from(k) * 0.5);
            }
        }
        _ => {
            e.write_size(n);
            for _ in 0..n {
                e.write_str("hello");
                e.write_f64(3.14);
            }
        }
    }
    e.into_buffer().to_vec()
}

/// Serves the raw Tester on `port` until killed.
pub(crate) fn serve(port: u16) -> std::io::Result<()> {
    let listener = TcpListener::bind(("127.0.0.1", port))?;
    println!("ready");
    let counter = Arc::new(AtomicI64::new(0));
    for stream in listener.incoming() {
        let stream = stream?;
        let counter = counter.clone();
        std::thread::spawn(move || {
            let _ = serve_connection(stream, &counter);
        });
    }
    Ok(())
}

fn serve_connection(stream: TcpStream, counter: &AtomicI64) -> std::io::Result<()> {
    stream.set_nodelay(true)?;
    let mut writer = stream.try_clone()?;
    writer.write_all(&floe::protocol::header::VALIDATE_CONNECTION)?;
    let mut reader = BufReader::with_capacity(256 * 1024, stream);
    let mut header = [0u8; 14];
    let mut body = Vec::new();
    // Replies of the recv* operations, by operation and size: encoded once.
    let mut cache: Vec<(String, i32, Vec<u8>)> = Vec::new();
    loop {
        if reader.read_exact(&mut header).is_err() {
            return Ok(());
        }
        let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]).max(14) as usize;
        body.resize(size - 14, 0);
        reader.read_exact(&mut body)?;
        match header[8] {
            0 => {
                let mut c = Cursor { b: &body, p: 0 };
                let id = c.int();
                let (op, params) = c.request_range();
                let param = || Cursor { b: &body[params.clone()], p: 0 }.int();
                let reply = match op.as_str() {
                    "incCounter" => {
                        counter.fetch_add(i64::from(param()), Ordering::Relaxed);
                        reply_ok(id, &[])
                    }
                    "resetCounter" => {
                        counter.store(0, Ordering::Relaxed);
                        reply_ok(id, &[])
                    }
                    "getCounter" => reply_ok(id, &(counter.load(Ordering::Relaxed) as i32).to_le_bytes()),
                    "ice_isA" => reply_ok(id, &[1]),
                    "recvByteSeq" | "recvFixedSeq" | "recvStringDoubleSeq" => {
                        let n = param();
                        let at = match cache.iter().position(|(o, p, _)| *o == op && *p == n) {
                            Some(at) => at,
                            None => {
                                cache.push((op.clone(), n, reply_ok(0, &recv_payload(&op, n))));
                                cache.len() - 1
                            }
                        };
                        // The cached reply with this request's id.
                        let reply = &mut cache[at].2;
                        reply[14..18].copy_from_slice(&id.to_le_bytes());
                        if id != 0 {
                            writer.write_all(reply)?;
                        }
                        continue;
                    }
                    // ping, ice_ping and the send* operations, whose parameters are skipped.
                    _ => reply_ok(id, &[]),
                };
                if id != 0 {
                    writer.write_all(&reply)?;
                }
            }
            1 => {
                let mut c = Cursor { b: &body, p: 0 };
                let n = c.int();
                for _ in 0..n {
                    let (op, params) = c.request_range();
                    if op == "incCounter" {
                        let k = Cursor { b: &body[params], p: 0 }.int();
                        counter.fetch_add(i64::from(k), Ordering::Relaxed);
                    }
                }
            }
            4 => return Ok(()),
            _ => {}
        }
    }
}

/// A request message to `tester`, with request id `id` (0 for a oneway).
fn request(id: i32, op: &str, params: impl FnOnce(&mut Encoder)) -> Vec<u8> {
    let prefix = RequestPrefix::new(&Identity::new("tester"), "", op, OperationMode::Normal);
    encode_request(id, &prefix, &Default::default(), EncodingVersion::V1_1, params).to_vec()
}

/// A batch message of `n` oneway `incCounter(1)` requests.
fn counter_batch(n: usize) -> Vec<u8> {
    let one = request(0, "incCounter", |e| 1i32.encode(e));
    // A batch request is a request without its 14-byte header and request id.
    let body = &one[18..];
    let mut m = Vec::with_capacity(18 + n * body.len());
    m.extend_from_slice(b"IceP\x01\x00\x01\x00\x01\x00\0\0\0\0");
    m.extend_from_slice(&(n as i32).to_le_bytes());
    for _ in 0..n {
        m.extend_from_slice(body);
    }
    let size = m.len() as i32;
    m[10..14].copy_from_slice(&size.to_le_bytes());
    m
}

/// A blocking client connection: buffered reads, direct writes.
struct Conn {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    body: Vec<u8>,
}

impl Conn {
    fn open(port: u16) -> std::io::Result<Conn> {
        let s = TcpStream::connect(("127.0.0.1", port))?;
        s.set_nodelay(true)?;
        let mut reader = BufReader::with_capacity(1 << 20, s.try_clone()?);
        let mut validate = [0u8; 14];
        reader.read_exact(&mut validate)?;
        Ok(Conn { reader, writer: s, body: Vec::new() })
    }

    /// Reads one message; its body stays in `self.body`.
    fn read(&mut self) -> std::io::Result<()> {
        let mut h = [0u8; 14];
        self.reader.read_exact(&mut h)?;
        let size = i32::from_le_bytes([h[10], h[11], h[12], h[13]]).max(14) as usize;
        self.body.resize(size - 14, 0);
        self.reader.read_exact(&mut self.body)
    }

    fn call(&mut self, msg: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(msg)?;
        self.read()?;
        // Request id (4), reply status (1): 0 is OK.
        match self.body.get(4) {
            Some(0) => Ok(()),
            other => Err(std::io::Error::other(format!("reply status {other:?}"))),
        }
    }

    fn counter(&mut self, get: &[u8]) -> std::io::Result<i64> {
        self.call(get)?;
        // Request id, status, encapsulation size and version, then the int.
        let b = self.body.get(11..15).ok_or_else(|| std::io::Error::other("short getCounter reply"))?;
        Ok(i64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])))
    }

    fn wait_counter(&mut self, n: usize) -> std::io::Result<()> {
        let get = request(1, "getCounter", |_| {});
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let got = self.counter(&get)?;
            if got == n as i64 {
                return Ok(());
            }
            if Instant::now() > deadline {
                return Err(std::io::Error::other(format!("the counter stayed at {got} of {n}")));
            }
        }
    }
}

fn mbits(calls: usize, bytes: usize, secs: f64) -> f64 {
    (calls * bytes) as f64 * 8.0 / secs / 1e6
}

/// Plays the `--against` workload against the Tester on `port` with pre-encoded messages;
/// prints a `RESULT` line per test. Returns whether every test produced a value.
/// With `stepped`, after the warm-up it prints `warm` and then plays each test named on a line
/// of standard input, until the end of input (as `--against --stepped` does).
pub(crate) fn run(port: u16, quick: bool, only: &[&'static str], stepped: bool) -> std::io::Result<bool> {
    let scale = if quick { 1 } else { 5 };
    let mut c = Conn::open(port)?;
    let ping = request(1, "ping", |_| {});
    for _ in 0..5_000 * scale {
        c.call(&ping)?;
    }
    let mut all_ok = true;
    for step in crate::against::steps(stepped, only) {
        let Some((name, unit)) = crate::against::known_step(step) else {
            all_ok = false;
            continue;
        };
        match one(&mut c, name, scale) {
            Ok(v) => println!("RESULT {name} {v:.2} {unit}"),
            Err(e) => {
                all_ok = false;
                println!("RESULT {name} error {}", e.to_string().replace('\n', " "));
            }
        }
    }
    Ok(all_ok)
}

fn one(c: &mut Conn, name: &str, scale: usize) -> std::io::Result<f64> {
    let secs = |start: Instant| start.elapsed().as_secs_f64();
    match name {
        "twoway" => {
            let n = 10_000 * scale;
            let ping = request(1, "ping", |_| {});
            let start = Instant::now();
            for _ in 0..n {
                c.call(&ping)?;
            }
            Ok(n as f64 / secs(start))
        }
        "oneway" => {
            let n = 40_000 * scale;
            c.call(&request(1, "resetCounter", |_| {}))?;
            let inc = request(0, "incCounter", |e| 1i32.encode(e));
            let start = Instant::now();
            {
                // Written back to back, as fast as the socket takes them.
                let mut w = BufWriter::with_capacity(64 * 1024, &c.writer);
                for _ in 0..n {
                    w.write_all(&inc)?;
                }
                w.flush()?;
            }
            c.wait_counter(n)?;
            Ok(n as f64 / secs(start))
        }
        "batch_oneway" => {
            let n = 200_000 * scale;
            c.call(&request(1, "resetCounter", |_| {}))?;
            let batch = counter_batch(10_000);
            let start = Instant::now();
            for _ in 0..n / 10_000 {
                c.writer.write_all(&batch)?;
            }
            c.wait_counter(n)?;
            Ok(n as f64 / secs(start))
        }
        "ami" => {
            let n = 20_000 * scale;
            let ping = request(1, "ping", |_| {});
            let start = Instant::now();
            let (mut sent, mut done) = (0usize, 0usize);
            let mut out = Vec::with_capacity(1_000 * ping.len());
            while done < n {
                // Top up to 1,000 in flight in one write, then read every reply already here.
                out.clear();
                while sent < n && sent - done < 1_000 {
                    out.extend_from_slice(&ping);
                    sent += 1;
                }
                if !out.is_empty() {
                    c.writer.write_all(&out)?;
                }
                c.read()?;
                done += 1;
                while done < sent && c.reader.buffer().len() >= 14 {
                    c.read()?;
                    done += 1;
                }
            }
            Ok(n as f64 / secs(start))
        }
        "bytes_send" | "bytes_recv" | "fixed_send" | "fixed_recv" | "sd_send" | "sd_recv" => {
            let (calls, bytes, msg) = match name {
                "bytes_send" => {
                    (200, 500_000, request(1, "sendByteSeq", |e| e.write_raw(&recv_payload("recvByteSeq", 500_000))))
                }
                "bytes_recv" => (200, 500_000, request(1, "recvByteSeq", |e| 500_000i32.encode(e))),
                "fixed_send" => {
                    (40, 800_000, request(1, "sendFixedSeq", |e| e.write_raw(&recv_payload("recvFixedSeq", 50_000))))
                }
                "fixed_recv" => (40, 800_000, request(1, "recvFixedSeq", |e| 50_000i32.encode(e))),
                "sd_send" => {
                    (20, 650_000, request(1, "sendStringDoubleSeq", |e| e.write_raw(&recv_payload("", 50_000))))
                }
                _ => (20, 650_000, request(1, "recvStringDoubleSeq", |e| 50_000i32.encode(e))),
            };
            let calls = calls * scale;
            let start = Instant::now();
            for _ in 0..calls {
                c.call(&msg)?;
            }
            Ok(mbits(calls, bytes, secs(start)))
        }
        other => Err(std::io::Error::other(format!("no test {other}"))),
    }
}
