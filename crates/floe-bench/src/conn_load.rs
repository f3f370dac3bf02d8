//! The load of the `connections` test and its raw server: a load process (`--conn-load`)
//! opens its share of the connections from its own source address, reports them, then pings
//! each connection every interval and reports the latencies; the raw baseline's scale server
//! (`--serve raw-scale`) is one epoll thread that answers validation and pings.

use std::fmt::Write as _;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use floe::encoding::{EncodingVersion, Identity};
use floe::protocol::header::VALIDATE_CONNECTION;
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};

/// The request every connection sends: a twoway `ice_ping` on identity `a` with id 1 (the id
/// is patched per request).
fn ping_request() -> Vec<u8> {
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "ice_ping", OperationMode::Nonmutating);
    encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {}).to_vec()
}

/// What a load process is asked to do.
#[derive(Debug, Clone)]
pub(crate) struct LoadArgs {
    /// The server's port on 127.0.0.1.
    pub(crate) port: u16,
    /// Connections to open.
    pub(crate) count: usize,
    /// The local address to connect from.
    pub(crate) source: Ipv4Addr,
    /// Connections opened at once.
    pub(crate) burst: usize,
    /// Time between two pings of one connection.
    pub(crate) interval: Duration,
    /// How long to ping.
    pub(crate) duration: Duration,
}

/// The load process (`--conn-load`): opens its connections in bursts, prints
/// `connected <ok> <failed> [first error]`, waits for `go` on stdin, pings every connection once
/// per interval for the duration, prints `latencies <µs …>`, `errors <n> [first error]` and
/// `done`, and keeps its connections open until stdin closes.
pub(crate) fn load(args: LoadArgs) -> Result<(), String> {
    crate::proc::raise_fd_limit();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(load_async(args))
}

async fn load_async(args: LoadArgs) -> Result<(), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let target = SocketAddr::from((Ipv4Addr::LOCALHOST, args.port));
    let source = SocketAddr::from((args.source, 0));
    let mut streams = Vec::with_capacity(args.count);
    let mut failed = 0u64;
    let mut first_error: Option<String> = None;
    let mut left = args.count;
    while left > 0 {
        let n = left.min(args.burst);
        left -= n;
        let tasks: Vec<_> = (0..n)
            .map(|_| {
                tokio::spawn(async move {
                    let socket = tokio::net::TcpSocket::new_v4()?;
                    // The port is chosen at connect, for this destination: bound with port 0,
                    // the kernel would pick it among all of the address's ports, and earlier
                    // runs' TIME_WAIT sockets would exhaust them.
                    bind_address_no_port(&socket)?;
                    socket.bind(source)?;
                    let open = async {
                        let mut s = socket.connect(target).await?;
                        let mut header = [0u8; 14];
                        s.read_exact(&mut header).await?;
                        if header != VALIDATE_CONNECTION {
                            return Err(std::io::Error::other("the first message was not ValidateConnection"));
                        }
                        s.set_nodelay(true)?;
                        Ok(s)
                    };
                    match tokio::time::timeout(Duration::from_secs(30), open).await {
                        Ok(r) => r,
                        Err(_) => Err(std::io::Error::other("not validated within 30 s")),
                    }
                })
            })
            .collect();
        for t in tasks {
            match t.await {
                Ok(Ok(s)) => streams.push(s),
                Ok(Err(e)) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| e.to_string());
                }
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| e.to_string());
                }
            }
        }
    }
    println!("connected {} {failed} {}", streams.len(), one_line(first_error.as_deref().unwrap_or("")));
    // The parent's word comes on stdin: `go`, then end of file when it is done.
    let (word_tx, mut words) = tokio::sync::mpsc::unbounded_channel::<String>();
    std::thread::spawn(move || {
        for line in std::io::stdin().lines() {
            let Ok(line) = line else { break };
            if word_tx.send(line).is_err() {
                return;
            }
        }
        let _ = word_tx.send("eof".into());
    });
    if words.recv().await.as_deref().map(str::trim) != Some("go") {
        return Ok(());
    }
    let go = tokio::time::Instant::now();
    let end = go + args.duration;
    let count = streams.len().max(1);
    let request = ping_request();
    let tasks: Vec<_> = streams
        .into_iter()
        .enumerate()
        .map(|(i, mut s)| {
            let request = request.clone();
            let interval = args.interval;
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                let mut error: Option<String> = None;
                let mut next = go + interval.mul_f64(i as f64 / count as f64);
                let mut id: i32 = 0;
                let mut request = request;
                let mut body = Vec::new();
                while next < end {
                    tokio::time::sleep_until(next).await;
                    next += interval;
                    id = id.wrapping_add(1).max(1);
                    request[14..18].copy_from_slice(&id.to_le_bytes());
                    let sent = Instant::now();
                    let exchange = async {
                        s.write_all(&request).await?;
                        loop {
                            let mut h = [0u8; 14];
                            s.read_exact(&mut h).await?;
                            let size = i32::from_le_bytes([h[10], h[11], h[12], h[13]]).max(14) as usize;
                            // A reply to a ping is 25 bytes; a server announcing more than a
                            // megabyte is broken, and gets an error rather than an allocation.
                            if size > 1 << 20 {
                                return Err(std::io::Error::other(format!("a message of {size} bytes")));
                            }
                            body.resize(size - 14, 0);
                            s.read_exact(&mut body).await?;
                            match h[8] {
                                2 if body.len() >= 5 && body[..4] == id.to_le_bytes() => {
                                    return if body[4] == 0 {
                                        Ok(())
                                    } else {
                                        Err(std::io::Error::other(format!("reply status {}", body[4])))
                                    };
                                }
                                4 => return Err(std::io::Error::other("the server closed the connection")),
                                // Heartbeats and anything else are not the reply.
                                _ => {}
                            }
                        }
                    };
                    match tokio::time::timeout(Duration::from_secs(10), exchange).await {
                        Ok(Ok(())) => latencies.push(sent.elapsed().as_micros().min(u32::MAX as u128) as u32),
                        Ok(Err(e)) => {
                            error = Some(e.to_string());
                            break;
                        }
                        Err(_) => {
                            error = Some("no reply within 10 s".into());
                            break;
                        }
                    }
                }
                (latencies, error, s)
            })
        })
        .collect();
    let mut all = Vec::new();
    let mut errors = 0u64;
    let mut first_error: Option<String> = None;
    let mut keep = Vec::with_capacity(tasks.len());
    for t in tasks {
        match t.await {
            Ok((l, e, s)) => {
                all.extend(l);
                keep.push(s);
                if let Some(e) = e {
                    errors += 1;
                    first_error.get_or_insert(e);
                }
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    let mut out = String::with_capacity(all.len() * 6 + 64);
    out.push_str("latencies");
    for v in &all {
        let _ = write!(out, " {v}");
    }
    println!("{out}");
    println!("errors {errors} {}", one_line(first_error.as_deref().unwrap_or("")));
    println!("done");
    // The connections stay open until the parent has read the server's memory.
    while let Some(word) = words.recv().await {
        if word == "eof" {
            break;
        }
    }
    drop(keep);
    Ok(())
}

/// Sets `IP_BIND_ADDRESS_NO_PORT`, so that binding a source address leaves the port to
/// `connect`.
fn bind_address_no_port(socket: &tokio::net::TcpSocket) -> std::io::Result<()> {
    use std::os::fd::AsRawFd;
    let on: libc::c_int = 1;
    // SAFETY: the descriptor is the socket's own and the option value is a c_int on the stack.
    let r = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::IPPROTO_IP,
            libc::IP_BIND_ADDRESS_NO_PORT,
            (&on as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

fn one_line(s: &str) -> String {
    s.replace(['\n', '\r'], " ")
}

/// The raw server of the `connections` test (`--serve raw-scale`): one thread, one epoll set
/// (through mio), and per connection only its socket and a few bytes of parsing state. It sends
/// ValidateConnection and answers every twoway request with an empty success: what a server
/// must keep per connection at the least, for the RSS and latency comparison.
pub(crate) fn serve_raw_scale(port: u16) -> std::io::Result<()> {
    use mio::net::TcpListener;
    use mio::{Events, Interest, Poll, Token};

    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None)?;
    socket.set_reuse_address(true)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, port)).into())?;
    socket.listen(libc::SOMAXCONN)?;
    socket.set_nonblocking(true)?;
    let mut listener = TcpListener::from_std(socket.into());
    let mut poll = Poll::new()?;
    const LISTENER: Token = Token(usize::MAX);
    poll.registry().register(&mut listener, LISTENER, Interest::READABLE)?;
    println!("ready");
    let mut conns: Vec<Option<RawConn>> = Vec::new();
    let mut free: Vec<usize> = Vec::new();
    let mut events = Events::with_capacity(1024);
    loop {
        if let Err(e) = poll.poll(&mut events, None) {
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for event in events.iter() {
            if event.token() == LISTENER {
                loop {
                    match listener.accept() {
                        Ok((mut stream, _)) => {
                            let _ = stream.set_nodelay(true);
                            let slot = free.pop().unwrap_or_else(|| {
                                conns.push(None);
                                conns.len() - 1
                            });
                            if poll.registry().register(&mut stream, Token(slot), Interest::READABLE).is_err() {
                                free.push(slot);
                                continue;
                            }
                            let mut c = RawConn { stream, header: [0; 18], have: 0, skip: 0, out: None };
                            c.queue(&VALIDATE_CONNECTION);
                            conns[slot] = Some(c);
                            if !conns[slot].as_mut().is_some_and(RawConn::flush) {
                                close_raw(&mut poll, &mut conns, &mut free, slot);
                            }
                        }
                        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                        // A connection reset before it was accepted: on to the next one (with
                        // edge-triggered readiness, stopping here would strand the others).
                        Err(e)
                            if matches!(
                                e.kind(),
                                std::io::ErrorKind::ConnectionAborted | std::io::ErrorKind::Interrupted
                            ) => {}
                        // Out of descriptors: the pending connections wait for the next event.
                        Err(_) => break,
                    }
                }
                continue;
            }
            let slot = event.token().0;
            let keep = match conns.get_mut(slot).and_then(Option::as_mut) {
                Some(c) => c.flush() && c.read(),
                None => continue,
            };
            if !keep {
                close_raw(&mut poll, &mut conns, &mut free, slot);
            } else if let Some(c) = conns[slot].as_mut() {
                let interest =
                    if c.out.is_some() { Interest::READABLE | Interest::WRITABLE } else { Interest::READABLE };
                let _ = poll.registry().reregister(&mut c.stream, Token(slot), interest);
            }
        }
    }
}

fn close_raw(poll: &mut mio::Poll, conns: &mut [Option<RawConn>], free: &mut Vec<usize>, slot: usize) {
    if let Some(mut c) = conns[slot].take() {
        let _ = poll.registry().deregister(&mut c.stream);
        free.push(slot);
    }
}

/// One connection of the raw scale server.
struct RawConn {
    stream: mio::net::TcpStream,
    /// The header and request id of the message being read.
    header: [u8; 18],
    have: usize,
    /// Bytes of the current message still to skip after its first 18.
    skip: usize,
    /// A reply the socket did not take whole: the bytes and how many were written.
    out: Option<([u8; 25], usize, usize)>,
}

impl RawConn {
    fn queue(&mut self, bytes: &[u8]) {
        let mut b = [0u8; 25];
        b[..bytes.len()].copy_from_slice(bytes);
        self.out = Some((b, bytes.len(), 0));
    }

    /// Writes what is pending; false when the connection failed.
    fn flush(&mut self) -> bool {
        while let Some((b, len, done)) = self.out.as_mut() {
            match self.stream.write(&b[*done..*len]) {
                Ok(0) => return false,
                Ok(n) => {
                    *done += n;
                    if *done == *len {
                        self.out = None;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            }
        }
        true
    }

    /// Reads what the socket has; false when the connection is finished.
    fn read(&mut self) -> bool {
        let mut buf = [0u8; 4096];
        loop {
            let n = match self.stream.read(&mut buf) {
                Ok(0) => return false,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(_) => return false,
            };
            let mut at = 0;
            while at < n {
                if self.skip > 0 {
                    let k = self.skip.min(n - at);
                    self.skip -= k;
                    at += k;
                    continue;
                }
                // The header first; a request's id (4 more bytes) only once the type says so.
                let need = if self.have < 14 { 14 } else { 18 };
                let k = (need - self.have).min(n - at);
                self.header[self.have..self.have + k].copy_from_slice(&buf[at..at + k]);
                self.have += k;
                at += k;
                let h = &self.header;
                if self.have == 14 && h[8] != 0 {
                    // Not a request: skip it whole (a CloseConnection ends the connection).
                    if h[8] == 4 {
                        return false;
                    }
                    let size = i32::from_le_bytes([h[10], h[11], h[12], h[13]]).max(14) as usize;
                    self.skip = size - 14;
                    self.have = 0;
                    continue;
                }
                if self.have == 18 {
                    let size = i32::from_le_bytes([h[10], h[11], h[12], h[13]]).max(18) as usize;
                    let id = [h[14], h[15], h[16], h[17]];
                    self.skip = size - 18;
                    self.have = 0;
                    if id != [0; 4] {
                        if self.out.is_some() {
                            // A second reply before the first left: this client pipelines,
                            // which the scale test never does.
                            return false;
                        }
                        let mut reply = [0u8; 25];
                        reply[..10].copy_from_slice(b"IceP\x01\x00\x01\x00\x02\x00");
                        reply[10..14].copy_from_slice(&25i32.to_le_bytes());
                        reply[14..18].copy_from_slice(&id);
                        reply[18] = 0;
                        reply[19..23].copy_from_slice(&6i32.to_le_bytes());
                        reply[23..25].copy_from_slice(&[1, 1]);
                        self.queue(&reply);
                        if !self.flush() {
                            return false;
                        }
                    }
                }
            }
        }
    }
}
