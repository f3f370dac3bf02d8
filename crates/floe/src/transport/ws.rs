//! ws: WebSocket (RFC 6455) as Ice 3.7 uses it, for the `ws` and `wss` endpoints.
//!
//! The client opens with an HTTP/1.1 upgrade request (`GET <resource>` with `Upgrade:
//! websocket`, `Connection: Upgrade`, `Sec-WebSocket-Protocol: ice.zeroc.com`,
//! `Sec-WebSocket-Version: 13` and a random `Sec-WebSocket-Key`); the server answers `101
//! Switching Protocols` with the matching `Sec-WebSocket-Accept`. Ice's messages then travel
//! as the payload of binary frames, masked from client to server and unmasked the other way;
//! the bytes form one stream. Frames end where Ice messages end, as Ice's own frames do: Ice
//! 3.7 unmasks a frame relative to the message it starts in, so a masked frame that ran on
//! into the next message would be garbled there. [`WsStream`] finds the boundaries from the
//! size in each message's header. Pings are
//! answered with pongs, text frames are refused as Ice refuses them, fragmented messages
//! (continuation frames) are read, and closing exchanges close frames.
//!
//! [`WsStream`] is the framing as an `AsyncRead + AsyncWrite` adaptor over any stream, so it
//! composes with TCP (`ws`) and with TLS (`wss`). docs/adr/0005-websocket-framing.md says why
//! the framing is written here rather than taken from a WebSocket crate.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use base64::Engine as _;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, ReadBuf};

use crate::error::{Error, Result};

/// The WebSocket sub-protocol Ice speaks.
pub const ICE_PROTOCOL: &str = "ice.zeroc.com";
/// RFC 6455's key suffix for `Sec-WebSocket-Accept`.
const GUID: &str = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";
/// The largest upgrade request or response read (its header, up to the blank line).
pub const MAX_HEADER: usize = 16 * 1024;
/// The most payload one written frame carries.
const MAX_FRAME: usize = 256 * 1024;

/// Unsent output past which pings are no longer answered.
const PONG_BACKLOG: usize = 64 * 1024;

const OP_CONT: u8 = 0x0;
const OP_TEXT: u8 = 0x1;
const OP_BINARY: u8 = 0x2;
const OP_CLOSE: u8 = 0x8;
const OP_PING: u8 = 0x9;
const OP_PONG: u8 = 0xA;

/// `Sec-WebSocket-Accept` for a `Sec-WebSocket-Key`.
pub fn accept_key(key: &str) -> String {
    let mut input = key.as_bytes().to_vec();
    input.extend_from_slice(GUID.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY, &input);
    base64::engine::general_purpose::STANDARD.encode(digest.as_ref())
}

fn bad(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.into())
}

/// Where the reader is in the frame sequence.
#[derive(Debug, Clone, Copy)]
enum ReadState {
    /// Expecting a frame header.
    Header,
    /// Inside a data frame's payload.
    Payload { remaining: u64, mask: Option<[u8; 4]>, offset: usize },
}

/// A WebSocket connection after its upgrade: reads and writes the bytes of Ice messages as
/// the payload of binary frames.
pub struct WsStream<S> {
    inner: S,
    /// This side is the client: it masks what it sends, and expects unmasked frames.
    client: bool,
    /// Bytes read from `inner` and not yet consumed (`rbuf[rpos..]`).
    rbuf: Vec<u8>,
    rpos: usize,
    state: ReadState,
    /// A data frame without FIN was read: continuation frames follow.
    fragmented: bool,
    /// A close frame was read (the reading side reports end of stream).
    eof: bool,
    /// Frames to write (`out[opos..]`), whole frames only.
    out: Vec<u8>,
    opos: usize,
    close_sent: bool,
    /// State of the generator of masking keys.
    seed: u64,
    /// The header fields of the upgrade: the client's request on the server side, the
    /// server's response on the client side.
    headers: Vec<(String, String)>,
    /// Where the written bytes are in the Ice message sequence.
    messages: Boundaries,
}

/// Finds where Ice messages end in the stream of written bytes, so that frames end there.
#[derive(Debug, Default)]
struct Boundaries {
    /// Bytes left in the current message (0: at a header; `u64::MAX`: not Ice messages,
    /// frames end where writes do).
    remaining: u64,
    header: [u8; 14],
    have: usize,
}

impl Boundaries {
    /// How many bytes of `data` belong in the next frame: up to the end of the current
    /// message, or all of it.
    fn frame_len(&mut self, data: &[u8]) -> usize {
        let mut i = 0;
        while i < data.len() {
            if self.remaining == u64::MAX {
                return data.len();
            }
            if self.remaining == 0 {
                let take = (14 - self.have).min(data.len() - i);
                self.header[self.have..self.have + take].copy_from_slice(&data[i..i + take]);
                self.have += take;
                i += take;
                if self.have < 14 {
                    return i;
                }
                self.have = 0;
                let size = i32::from_le_bytes([self.header[10], self.header[11], self.header[12], self.header[13]]);
                if &self.header[..4] != b"IceP" || size < 14 {
                    self.remaining = u64::MAX;
                    continue;
                }
                self.remaining = size as u64 - 14;
                if self.remaining == 0 {
                    return i;
                }
            } else {
                let take = self.remaining.min((data.len() - i) as u64) as usize;
                i += take;
                self.remaining -= take as u64;
                if self.remaining == 0 {
                    return i;
                }
            }
        }
        i
    }
}

impl<S> std::fmt::Debug for WsStream<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WsStream").field("client", &self.client).finish()
    }
}

fn apply_mask(data: &mut [u8], mask: [u8; 4], offset: usize) {
    for (i, b) in data.iter_mut().enumerate() {
        *b ^= mask[(offset + i) & 3];
    }
}

impl<S> WsStream<S> {
    /// Framing over `inner`, after the upgrade; `buffered` are bytes already read past the
    /// upgrade's header.
    pub fn new(inner: S, client: bool, buffered: Vec<u8>) -> Self {
        let seed = u64::from_le_bytes(uuid::Uuid::new_v4().as_bytes()[..8].try_into().unwrap_or([7; 8])) | 1;
        WsStream {
            inner,
            client,
            rbuf: buffered,
            rpos: 0,
            state: ReadState::Header,
            fragmented: false,
            eof: false,
            out: Vec::new(),
            opos: 0,
            close_sent: false,
            seed,
            headers: Vec::new(),
            messages: Boundaries::default(),
        }
    }

    /// The stream underneath.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The header fields of the upgrade (names as sent): the client's request on the server
    /// side, the server's response on the client side, as Ice's `WSConnectionInfo.headers`.
    pub fn headers(&self) -> &[(String, String)] {
        &self.headers
    }

    fn with_headers(mut self, headers: Vec<(String, String)>) -> Self {
        self.headers = headers;
        self
    }

    fn next_mask(&mut self) -> [u8; 4] {
        // xorshift64: masking keys need to be unpredictable to web intermediaries, not secret.
        self.seed ^= self.seed << 13;
        self.seed ^= self.seed >> 7;
        self.seed ^= self.seed << 17;
        (self.seed as u32).to_le_bytes()
    }

    /// Appends one frame of `payload` (the concatenation of `parts`) to the output.
    fn push_frame(&mut self, opcode: u8, parts: &[&[u8]]) {
        if self.opos == self.out.len() {
            self.out.clear();
            self.opos = 0;
        }
        let len: usize = parts.iter().map(|p| p.len()).sum();
        self.out.push(0x80 | opcode);
        let mask_bit = if self.client { 0x80 } else { 0 };
        if len < 126 {
            self.out.push(mask_bit | len as u8);
        } else if len <= u16::MAX as usize {
            self.out.push(mask_bit | 126);
            self.out.extend_from_slice(&(len as u16).to_be_bytes());
        } else {
            self.out.push(mask_bit | 127);
            self.out.extend_from_slice(&(len as u64).to_be_bytes());
        }
        let mask = self.client.then(|| self.next_mask());
        if let Some(m) = mask {
            self.out.extend_from_slice(&m);
        }
        let start = self.out.len();
        for p in parts {
            self.out.extend_from_slice(p);
        }
        if let Some(m) = mask {
            apply_mask(&mut self.out[start..], m, 0);
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> WsStream<S> {
    /// Writes out the pending frames.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.opos < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.opos..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.opos += n;
        }
        self.out.clear();
        self.opos = 0;
        Poll::Ready(Ok(()))
    }

    /// Reads more bytes from `inner` into `rbuf`; the count read (0 at end of stream).
    fn poll_fill(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<usize>> {
        if self.rpos > 0 {
            self.rbuf.drain(..self.rpos);
            self.rpos = 0;
        }
        let mut tmp = [0u8; 4096];
        let mut rb = ReadBuf::new(&mut tmp);
        ready!(Pin::new(&mut self.inner).poll_read(cx, &mut rb))?;
        let n = rb.filled().len();
        self.rbuf.extend_from_slice(rb.filled());
        Poll::Ready(Ok(n))
    }

    /// Parses one frame header (and, for a control frame, its payload) from the buffered
    /// bytes: `None` when more bytes are needed.
    fn parse_frame(&mut self) -> io::Result<Option<()>> {
        let b = &self.rbuf[self.rpos..];
        if b.len() < 2 {
            return Ok(None);
        }
        let (b0, b1) = (b[0], b[1]);
        if b0 & 0x70 != 0 {
            return Err(bad("WebSocket frame with reserved bits set"));
        }
        let fin = b0 & 0x80 != 0;
        let opcode = b0 & 0x0f;
        let masked = b1 & 0x80 != 0;
        if masked == self.client {
            return Err(bad(if self.client {
                "masked WebSocket frame from the server"
            } else {
                "unmasked WebSocket frame from the client"
            }));
        }
        let mut pos = 2;
        let len = match b1 & 0x7f {
            126 => {
                if b.len() < pos + 2 {
                    return Ok(None);
                }
                pos += 2;
                u64::from(u16::from_be_bytes([b[2], b[3]]))
            }
            127 => {
                if b.len() < pos + 8 {
                    return Ok(None);
                }
                pos += 8;
                let l = u64::from_be_bytes(b[2..10].try_into().map_err(|_| bad("frame length"))?);
                if l >> 63 != 0 {
                    return Err(bad("invalid WebSocket payload length"));
                }
                l
            }
            n => u64::from(n),
        };
        let mask = if masked {
            if b.len() < pos + 4 {
                return Ok(None);
            }
            let m = [b[pos], b[pos + 1], b[pos + 2], b[pos + 3]];
            pos += 4;
            Some(m)
        } else {
            None
        };
        match opcode {
            OP_BINARY | OP_CONT => {
                if opcode == OP_BINARY && self.fragmented {
                    return Err(bad("WebSocket data frame while a fragmented message is incomplete"));
                }
                if opcode == OP_CONT && !self.fragmented {
                    return Err(bad("WebSocket continuation frame without a fragmented message"));
                }
                self.fragmented = !fin;
                self.rpos += pos;
                self.state = ReadState::Payload { remaining: len, mask, offset: 0 };
                Ok(Some(()))
            }
            OP_TEXT => Err(bad("WebSocket text frames are not supported")),
            OP_CLOSE | OP_PING | OP_PONG => {
                if !fin || len > 125 {
                    return Err(bad("invalid WebSocket control frame"));
                }
                let len = len as usize;
                if b.len() < pos + len {
                    return Ok(None);
                }
                let mut payload = b[pos..pos + len].to_vec();
                if let Some(m) = mask {
                    apply_mask(&mut payload, m, 0);
                }
                self.rpos += pos + len;
                match opcode {
                    // A peer that sends pings without reading cannot grow the output without
                    // bound: past PONG_BACKLOG unsent bytes, pings go unanswered (RFC 6455 lets
                    // an endpoint answer only the latest of several pings).
                    OP_PING if !self.close_sent && self.out.len() - self.opos < PONG_BACKLOG => {
                        self.push_frame(OP_PONG, &[&payload])
                    }
                    OP_CLOSE => {
                        self.eof = true;
                        if !self.close_sent {
                            // Echo the peer's status code (1000, normal closure, if none).
                            let code =
                                if payload.len() >= 2 { [payload[0], payload[1]] } else { 1000u16.to_be_bytes() };
                            self.push_frame(OP_CLOSE, &[&code]);
                            self.close_sent = true;
                        }
                    }
                    _ => {}
                }
                Ok(Some(()))
            }
            other => Err(bad(format!("unsupported WebSocket opcode {other}"))),
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for WsStream<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            // Pongs and the close reply go out as soon as possible, whoever is writing.
            if this.opos < this.out.len() {
                if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
                    return Poll::Ready(Err(e));
                }
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            match this.state {
                ReadState::Payload { remaining: 0, .. } => this.state = ReadState::Header,
                ReadState::Payload { remaining, mask, offset } => {
                    if buf.remaining() == 0 {
                        return Poll::Ready(Ok(()));
                    }
                    let want = (buf.remaining() as u64).min(remaining) as usize;
                    let n = if this.rpos < this.rbuf.len() {
                        let n = want.min(this.rbuf.len() - this.rpos);
                        let start = buf.filled().len();
                        buf.put_slice(&this.rbuf[this.rpos..this.rpos + n]);
                        this.rpos += n;
                        if let Some(m) = mask {
                            apply_mask(&mut buf.filled_mut()[start..], m, offset);
                        }
                        n
                    } else {
                        // Straight from the stream into the caller's buffer.
                        let start = buf.filled().len();
                        let mut limited = buf.take(want);
                        ready!(Pin::new(&mut this.inner).poll_read(cx, &mut limited))?;
                        let n = limited.filled().len();
                        if n == 0 {
                            return Poll::Ready(Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "connection closed inside a WebSocket frame",
                            )));
                        }
                        // SAFETY: `limited` is `buf`'s unfilled part and its first `n` bytes
                        // were just initialised by the read.
                        unsafe { buf.assume_init(n) };
                        buf.advance(n);
                        if let Some(m) = mask {
                            apply_mask(&mut buf.filled_mut()[start..], m, offset);
                        }
                        n
                    };
                    this.state = ReadState::Payload { remaining: remaining - n as u64, mask, offset: offset + n };
                    return Poll::Ready(Ok(()));
                }
                ReadState::Header => {
                    if this.parse_frame()?.is_some() {
                        continue;
                    }
                    let n = ready!(this.poll_fill(cx))?;
                    if n == 0 {
                        if this.rbuf.len() == this.rpos && !this.fragmented {
                            // The peer closed the connection without a close frame.
                            return Poll::Ready(Ok(()));
                        }
                        return Poll::Ready(Err(io::Error::new(
                            io::ErrorKind::UnexpectedEof,
                            "connection closed inside a WebSocket frame",
                        )));
                    }
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncWrite for WsStream<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        self.poll_write_vectored(cx, &[io::IoSlice::new(data)])
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.close_sent {
            return Poll::Ready(Err(io::Error::new(io::ErrorKind::BrokenPipe, "WebSocket closed")));
        }
        ready!(this.poll_drain(cx))?;
        // What is given (up to MAX_FRAME), one frame per Ice message or part of one; Ice
        // never sees an empty data frame.
        let mut data: Vec<u8> = Vec::new();
        for b in bufs {
            let take = b.len().min(MAX_FRAME - data.len());
            data.extend_from_slice(&b[..take]);
            if data.len() == MAX_FRAME {
                break;
            }
        }
        if data.is_empty() {
            return Poll::Ready(Ok(0));
        }
        let mut start = 0;
        while start < data.len() {
            let len = this.messages.frame_len(&data[start..]).max(1);
            let end = (start + len).min(data.len());
            this.push_frame(OP_BINARY, &[&data[start..end]]);
            start = end;
        }
        let total = data.len();
        // Start sending; what does not fit now goes with the next write or flush.
        if let Poll::Ready(Err(e)) = this.poll_drain(cx) {
            return Poll::Ready(Err(e));
        }
        Poll::Ready(Ok(total))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if !this.close_sent {
            this.push_frame(OP_CLOSE, &[&1000u16.to_be_bytes()]);
            this.close_sent = true;
        }
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.inner).poll_shutdown(cx)
    }
}

/// An HTTP request or response head: its first line and its header fields (names as sent,
/// values trimmed).
struct Head {
    first: String,
    fields: Vec<(String, String)>,
}

impl Head {
    /// The value of the field `name` (matched without regard to case).
    fn field(&self, name: &str) -> Option<&str> {
        self.fields.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
    }
}

/// Reads an HTTP head (up to the blank line, at most [`MAX_HEADER`] bytes); the bytes read
/// past it are returned too.
async fn read_head<S: AsyncRead + Unpin>(io: &mut S) -> std::result::Result<(Head, Vec<u8>), String> {
    let mut buf = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    let end = loop {
        let n = io.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("connection closed during the HTTP upgrade".into());
        }
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            break from + i + 4;
        }
        if buf.len() > MAX_HEADER {
            return Err(format!("HTTP upgrade header larger than {MAX_HEADER} bytes"));
        }
    };
    let rest = buf.split_off(end);
    let text = std::str::from_utf8(&buf[..end - 4]).map_err(|_| "HTTP upgrade header is not text".to_string())?;
    let mut lines = text.split("\r\n");
    let first = lines.next().unwrap_or("").to_string();
    let mut fields = Vec::new();
    for line in lines {
        let (name, value) = line.split_once(':').ok_or_else(|| format!("malformed HTTP header line {line:?}"))?;
        fields.push((name.trim().to_string(), value.trim().to_string()));
    }
    Ok((Head { first, fields }, rest))
}

/// The client's side of the upgrade over `io`, to `host` (the `Host` field) and `resource`.
pub async fn client_handshake<S>(mut io: S, host: &str, resource: &str) -> Result<WsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let fail = |reason: String| Error::ConnectFailed { endpoint: format!("ws {host}{resource}"), reason };
    let key = base64::engine::general_purpose::STANDARD.encode(uuid::Uuid::new_v4().as_bytes());
    let resource = if resource.is_empty() { "/" } else { resource };
    let request = format!(
        "GET {resource} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Protocol: {ICE_PROTOCOL}\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: {key}\r\n\r\n"
    );
    io.write_all(request.as_bytes()).await.map_err(|e| fail(e.to_string()))?;
    io.flush().await.map_err(|e| fail(e.to_string()))?;
    let (head, rest) = read_head(&mut io).await.map_err(fail)?;
    let mut words = head.first.split_whitespace();
    let (version, status) = (words.next().unwrap_or(""), words.next().unwrap_or(""));
    if version != "HTTP/1.1" {
        return Err(fail(format!("unsupported HTTP version in {:?}", head.first)));
    }
    if status != "101" {
        return Err(fail(format!("upgrade refused: {:?}", head.first)));
    }
    if !head.field("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        return Err(fail("response without Upgrade: websocket".into()));
    }
    if !head.field("connection").is_some_and(|v| v.to_ascii_lowercase().contains("upgrade")) {
        return Err(fail("response without Connection: Upgrade".into()));
    }
    if let Some(p) = head.field("sec-websocket-protocol") {
        if p != ICE_PROTOCOL {
            return Err(fail(format!("unexpected WebSocket protocol {p:?}")));
        }
    }
    if head.field("sec-websocket-accept") != Some(accept_key(&key).as_str()) {
        return Err(fail("wrong or missing Sec-WebSocket-Accept".into()));
    }
    Ok(WsStream::new(io, true, rest).with_headers(head.fields))
}

/// Checks an upgrade request; the response to send, or why it is refused.
fn upgrade_response(head: &Head) -> std::result::Result<String, String> {
    let words: Vec<&str> = head.first.split_whitespace().collect();
    let [method, _resource, version] = words[..] else {
        return Err(format!("malformed request line {:?}", head.first));
    };
    if method != "GET" {
        return Err(format!("method {method} is not GET"));
    }
    if version != "HTTP/1.1" {
        return Err(format!("unsupported HTTP version {version}"));
    }
    if !head.field("upgrade").is_some_and(|v| v.eq_ignore_ascii_case("websocket")) {
        return Err("missing Upgrade: websocket".into());
    }
    if !head.field("connection").is_some_and(|v| v.to_ascii_lowercase().contains("upgrade")) {
        return Err("missing Connection: Upgrade".into());
    }
    if head.field("sec-websocket-version") != Some("13") {
        return Err("missing or unsupported Sec-WebSocket-Version (13 expected)".into());
    }
    let mut add_protocol = false;
    if let Some(p) = head.field("sec-websocket-protocol") {
        for item in p.split(',') {
            if item.trim() != ICE_PROTOCOL {
                return Err(format!("unknown WebSocket protocol {:?}", item.trim()));
            }
            add_protocol = true;
        }
    }
    let key = head.field("sec-websocket-key").ok_or("missing Sec-WebSocket-Key")?;
    match base64::engine::general_purpose::STANDARD.decode(key) {
        Ok(k) if k.len() == 16 => {}
        _ => return Err(format!("invalid Sec-WebSocket-Key {key:?}")),
    }
    let protocol = if add_protocol { format!("Sec-WebSocket-Protocol: {ICE_PROTOCOL}\r\n") } else { String::new() };
    Ok(format!(
        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n{protocol}\
         Sec-WebSocket-Accept: {}\r\n\r\n",
        accept_key(key)
    ))
}

/// The server's side of the upgrade over `io`. A request that is not a valid upgrade is
/// answered `400 Bad Request` (when it was at least complete) and refused.
pub async fn server_handshake<S>(mut io: S) -> Result<WsStream<S>>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let fail = |reason: String| Error::ConnectionLost(format!("ws upgrade refused: {reason}"));
    let (head, rest) = read_head(&mut io).await.map_err(fail)?;
    match upgrade_response(&head) {
        Ok(response) => {
            io.write_all(response.as_bytes()).await.map_err(|e| fail(e.to_string()))?;
            io.flush().await.map_err(|e| fail(e.to_string()))?;
            Ok(WsStream::new(io, false, rest).with_headers(head.fields))
        }
        Err(reason) => {
            let _ = io.write_all(b"HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n").await;
            let _ = io.shutdown().await;
            Err(fail(reason))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_key_of_rfc_6455() {
        assert_eq!(accept_key("dGhlIHNhbXBsZSBub25jZQ=="), "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
    }

    async fn pair() -> (WsStream<tokio::io::DuplexStream>, WsStream<tokio::io::DuplexStream>) {
        let (a, b) = tokio::io::duplex(1 << 16);
        let server = tokio::spawn(server_handshake(b));
        let client = client_handshake(a, "localhost", "/x").await.unwrap();
        (client, server.await.unwrap().unwrap())
    }

    #[tokio::test]
    async fn bytes_both_ways_and_close() {
        let (mut c, mut s) = pair().await;
        let big: Vec<u8> = (0..600_000u32).map(|i| i as u8).collect();
        let sent = big.clone();
        let writer = tokio::spawn(async move {
            c.write_all(&sent).await.unwrap();
            c.flush().await.unwrap();
            c
        });
        let mut got = vec![0u8; big.len()];
        s.read_exact(&mut got).await.unwrap();
        assert_eq!(got, big);
        let mut c = writer.await.unwrap();
        s.write_all(b"hello").await.unwrap();
        s.flush().await.unwrap();
        let mut h = [0u8; 5];
        c.read_exact(&mut h).await.unwrap();
        assert_eq!(&h, b"hello");
        // The client closes: the server reads the end and answers the close frame.
        c.shutdown().await.unwrap();
        let mut rest = Vec::new();
        s.read_to_end(&mut rest).await.unwrap();
        assert!(rest.is_empty());
    }

    #[test]
    fn frames_end_where_messages_end() {
        let mut b = Boundaries::default();
        let msg = |size: i32| {
            let mut m = b"IceP\x01\x00\x01\x00\x00\x00".to_vec();
            m.extend_from_slice(&size.to_le_bytes());
            m.resize(size as usize, 9);
            m
        };
        let (a, v, c) = (msg(20), msg(14), msg(30));
        let all = [a.clone(), v.clone(), c.clone()].concat();
        assert_eq!(b.frame_len(&all), 20);
        assert_eq!(b.frame_len(&all[20..]), 14);
        // A message split across writes, its header too.
        assert_eq!(b.frame_len(&all[34..40]), 6);
        assert_eq!(b.frame_len(&all[40..50]), 10);
        assert_eq!(b.frame_len(&all[50..]), 14);
        // Not Ice: frames end where writes do.
        assert_eq!(b.frame_len(b"GET / HTTP/1.1 and more"), 23);
    }

    #[tokio::test]
    async fn ping_fragments_and_pong() {
        let (a, b) = tokio::io::duplex(1 << 16);
        let mut server = WsStream::new(b, false, Vec::new());
        let mut raw = a;
        // A ping, then "abc" fragmented over a binary frame and a continuation, masked.
        let mask = [1u8, 2, 3, 4];
        let mut frames = vec![0x89, 0x80 | 2];
        frames.extend_from_slice(&mask);
        frames.extend([b'p' ^ 1, b'g' ^ 2]);
        frames.extend([0x02, 0x80 | 2]);
        frames.extend_from_slice(&mask);
        frames.extend([b'a' ^ 1, b'b' ^ 2]);
        frames.extend([0x80, 0x80 | 1]);
        frames.extend_from_slice(&mask);
        frames.push(b'c' ^ 1);
        raw.write_all(&frames).await.unwrap();
        let mut got = [0u8; 3];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"abc");
        let mut pong = [0u8; 4];
        raw.read_exact(&mut pong).await.unwrap();
        assert_eq!(pong, [0x8A, 2, b'p', b'g']);
    }

    #[tokio::test]
    async fn a_ping_flood_without_reading_stays_bounded() {
        let (a, b) = tokio::io::duplex(1024);
        let mut server = WsStream::new(b, false, Vec::new());
        let mut raw = a;
        let mut ping = vec![0x89u8, 0x80 | 125, 0, 0, 0, 0];
        ping.extend_from_slice(&[0u8; 125]);
        let flood = ping.repeat(5000);
        let writer = tokio::spawn(async move {
            raw.write_all(&flood).await.unwrap();
            raw.write_all(&[0x82, 0x81, 0, 0, 0, 0, 42]).await.unwrap();
            raw
        });
        let mut got = [0u8; 1];
        server.read_exact(&mut got).await.unwrap();
        assert_eq!(got[0], 42);
        assert!(server.out.len() - server.opos <= PONG_BACKLOG + 200);
        drop(writer.await.unwrap());
    }

    #[tokio::test]
    async fn refuses_bad_frames() {
        for frame in [&[0x81u8, 0x80, 0, 0, 0, 0][..], &[0x82, 0x01, 0x00], &[0x80, 0x80, 0, 0, 0, 0, 0]] {
            let (a, b) = tokio::io::duplex(1024);
            let mut server = WsStream::new(b, false, Vec::new());
            let mut raw = a;
            raw.write_all(frame).await.unwrap();
            let mut got = [0u8; 1];
            assert!(server.read(&mut got).await.is_err(), "{frame:?}");
        }
    }

    #[tokio::test]
    async fn refuses_bad_upgrades() {
        let requests: [&[u8]; 4] = [
            b"POST / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n",
            b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n",
            b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: chat\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n",
            b"\x00\x01garbage\r\n\r\n",
        ];
        for r in requests {
            let (a, b) = tokio::io::duplex(1 << 16);
            let mut raw = a;
            raw.write_all(r).await.unwrap();
            assert!(server_handshake(b).await.is_err());
        }
    }
}
