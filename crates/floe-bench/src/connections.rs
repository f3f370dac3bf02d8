//! The `connections` test, after Henning's 80,000 clients on one Ice server: N connections
//! opened in bursts, then one `ice_ping` per connection every 4 s, against floe, Ice C++ and a
//! raw server. It reports how long the N connections took to be accepted and validated, the
//! server's RSS growth per connection, the ping latencies (p50, p99, max) and the errors.
//!
//! The load comes from separate processes of this binary (`--conn-load`), each with at most
//! `--conn-per-process` connections and a source address of its own (127.<run>.0.10, .11, …), so
//! that N can exceed one process's file limit and one source address's ephemeral ports. Every
//! system meets the same generator: it speaks the Ice protocol with pre-encoded requests and
//! no middleware. The server process's own file limit is the one N cannot exceed here; the
//! run lowers N to it and says so instead of failing.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use floe::encoding::{EncodingVersion, Identity};
use floe::protocol::header::VALIDATE_CONNECTION;
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};

/// How a `connections` run is shaped.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Connections to open.
    pub(crate) n: usize,
    /// Connections opened at once (spread over the load processes).
    pub(crate) burst: usize,
    /// Time between two pings of one connection.
    pub(crate) interval: Duration,
    /// How long the pings are measured once every connection is open.
    pub(crate) measure: Duration,
    /// The most connections one load process opens.
    pub(crate) per_process: usize,
}

impl Plan {
    /// The default plan: 19,000 connections (the most this machine's 20,000-descriptor limit
    /// leaves a server), measured for 20 s; 2,000 for 8 s with `--quick`.
    pub(crate) fn new(quick: bool, n: Option<usize>, per_process: Option<usize>) -> Plan {
        Plan {
            n: n.unwrap_or(if quick { 2_000 } else { 19_000 }),
            burst: 500,
            interval: Duration::from_secs(4),
            measure: Duration::from_secs(if quick { 8 } else { 20 }),
            per_process: per_process.unwrap_or(10_000).max(1),
        }
    }

    fn processes(&self) -> usize {
        self.n.div_ceil(self.per_process).max(1)
    }
}

/// What one run against one server measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The system's name.
    pub(crate) system: &'static str,
    /// Connections asked for (after lowering to the server's limit).
    pub(crate) n: usize,
    /// Connections accepted and validated.
    pub(crate) connected: usize,
    /// Seconds from the first connect to the last validation.
    pub(crate) connect_s: f64,
    /// Server RSS growth per validated connection, in bytes, at the end of the pings.
    pub(crate) rss_per_conn: f64,
    /// The server's RSS before and after, in kB.
    pub(crate) rss_kb: (u64, u64),
    /// Ping latencies in microseconds, sorted.
    pub(crate) latencies_us: Vec<u32>,
    /// The server's CPU time (user + system) per ping answered while pinging, in µs.
    pub(crate) cpu_us_per_ping: Option<f64>,
    /// Connects not validated, pings not answered, connections lost.
    pub(crate) errors: u64,
    /// The first error the load processes met, if any.
    pub(crate) first_error: Option<String>,
}

impl Outcome {
    fn percentile(&self, p: f64) -> Option<f64> {
        if self.latencies_us.is_empty() {
            return None;
        }
        let i = ((self.latencies_us.len() as f64 - 1.0) * p).round() as usize;
        Some(self.latencies_us[i] as f64 / 1000.0)
    }
}

/// Raises this process's soft file-descriptor limit to its hard limit; returns the limit.
/// Children (servers, load processes) inherit it.
pub(crate) fn raise_fd_limit() -> u64 {
    let mut lim = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit/setrlimit only read and write the struct passed in.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return 1024;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit { rlim_cur: lim.rlim_max, rlim_max: lim.rlim_max };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    lim.rlim_cur
}

/// The soft file limit of process `pid`, from /proc.
pub(crate) fn fd_limit_of(pid: u32) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/limits")).ok()?;
    let line = text.lines().find(|l| l.starts_with("Max open files"))?;
    line.split_whitespace().nth(3)?.parse().ok()
}

/// The resident set of process `pid` in kB (VmRSS: what it holds now, not its peak).
pub(crate) fn rss_kb(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines().find(|l| l.starts_with("VmRSS:")).and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        })
        .unwrap_or(0)
}

/// The request every connection sends: a twoway `ice_ping` on identity `a` with id 1 (the id
/// is patched per request).
fn ping_request() -> Vec<u8> {
    let prefix = RequestPrefix::new(&Identity::new("a"), "", "ice_ping", OperationMode::Nonmutating);
    encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {}).to_vec()
}

/// Runs one `connections` measurement against the server `server_pid` listening on `port`.
/// `exe` is this binary (the load processes are more of it).
pub(crate) fn run(system: &'static str, server_pid: u32, port: u16, plan: &Plan) -> Result<Outcome, String> {
    // Each run connects from addresses of its own (127.0.<k>.x), so that no run meets the
    // TIME_WAIT sockets of the one before.
    static RUNS: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    let second_octet = 10 + RUNS.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 200;
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let mut plan = *plan;
    // What the server may hold: its file limit, less what it keeps open besides connections.
    if let Some(limit) = fd_limit_of(server_pid) {
        let room = limit.saturating_sub(64) as usize;
        if plan.n > room {
            plan.n = room;
        }
    }
    // Settle, then the baseline.
    std::thread::sleep(Duration::from_millis(300));
    let rss_before = rss_kb(server_pid);
    let processes = plan.processes();
    let burst = plan.burst.div_ceil(processes).max(1);
    let (tx, rx) = mpsc::channel::<(usize, String)>();
    // Load processes are killed if this returns early (an error); otherwise they are waited
    // for below.
    let mut children = KillOnDrop(Vec::new());
    let mut stdins: Vec<ChildStdin> = Vec::new();
    let started = Instant::now();
    for i in 0..processes {
        let count = plan.n / processes + usize::from(i < plan.n % processes);
        let source = Ipv4Addr::new(127, second_octet.wrapping_add((i / 240) as u8), 0, (10 + i % 240) as u8);
        let mut child = Command::new(&exe)
            .args(["--conn-load", "--port", &port.to_string()])
            .args(["--conn-count", &count.to_string(), "--conn-source", &source.to_string()])
            .args(["--conn-burst", &burst.to_string()])
            .args(["--conn-interval-ms", &plan.interval.as_millis().to_string()])
            .args(["--duration-ms", &plan.measure.as_millis().to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("cannot start a load process: {e}"))?;
        stdins.push(child.stdin.take().ok_or("no stdin")?);
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let tx = tx.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((i, line)).is_err() {
                    break;
                }
            }
            let _ = tx.send((i, "eof".into()));
        });
        children.0.push(child);
    }
    drop(tx);
    let mut connected = 0usize;
    let mut errors = 0u64;
    let mut first_error: Option<String> = None;
    let note_error = |e: &str, first_error: &mut Option<String>| {
        if first_error.is_none() && !e.is_empty() {
            *first_error = Some(e.to_string());
        }
    };
    // Phase 1: every process reports its connect phase.
    let limit = Duration::from_secs(60 + (plan.n / 200) as u64);
    let mut reported = 0;
    let mut connect_s = 0.0;
    while reported < processes {
        let (_, line) =
            rx.recv_timeout(limit).map_err(|_| "load processes did not report their connects".to_string())?;
        let mut it = line.splitn(4, ' ');
        match it.next() {
            Some("connected") => {
                let ok: usize = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                let failed: u64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
                connected += ok;
                errors += failed;
                note_error(it.next().unwrap_or(""), &mut first_error);
                reported += 1;
                connect_s = started.elapsed().as_secs_f64();
            }
            Some("eof") => return Err("a load process ended before connecting".into()),
            _ => {}
        }
    }
    // Phase 2: every process pings for the measurement, starting together.
    let cpu_before = crate::proc_stats(server_pid).0;
    for s in &mut stdins {
        let _ = s.write_all(b"go\n").and_then(|_| s.flush());
    }
    let mut latencies_us: Vec<u32> = Vec::new();
    let mut done = 0;
    let wait = plan.measure + plan.interval + Duration::from_secs(30);
    while done < processes {
        let (_, line) = rx.recv_timeout(wait).map_err(|_| "load processes did not report their pings".to_string())?;
        let mut it = line.splitn(2, ' ');
        match it.next() {
            Some("latencies") => {
                latencies_us.extend(it.next().unwrap_or("").split_whitespace().filter_map(|v| v.parse::<u32>().ok()))
            }
            Some("errors") => {
                let rest = it.next().unwrap_or("");
                let (count, first) = rest.split_once(' ').unwrap_or((rest, ""));
                errors += count.parse::<u64>().unwrap_or(0);
                note_error(first, &mut first_error);
            }
            Some("done") => done += 1,
            Some("eof") => return Err("a load process ended before reporting its pings".into()),
            _ => {}
        }
    }
    // Every connection is still open: the server's RSS now, then the load goes away.
    let rss_after = rss_kb(server_pid);
    let cpu = crate::proc_stats(server_pid).0 - cpu_before;
    drop(stdins);
    for mut c in std::mem::take(&mut children.0) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while c.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
    latencies_us.sort_unstable();
    let rss_per_conn =
        if connected > 0 { rss_after.saturating_sub(rss_before) as f64 * 1024.0 / connected as f64 } else { 0.0 };
    Ok(Outcome {
        system,
        n: plan.n,
        connected,
        connect_s,
        rss_per_conn,
        rss_kb: (rss_before, rss_after),
        cpu_us_per_ping: (!latencies_us.is_empty()).then(|| cpu * 1e6 / latencies_us.len() as f64),
        latencies_us,
        errors,
        first_error,
    })
}

/// Child processes killed and reaped when dropped.
struct KillOnDrop(Vec<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
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
    raise_fd_limit();
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

/// Medians over the runs of each system, as table rows.
fn rows(outcomes: &[Outcome]) -> Vec<Row> {
    let mut systems: Vec<&'static str> = outcomes.iter().map(|o| o.system).collect();
    systems.dedup();
    let mut seen = Vec::new();
    systems.retain(|s| {
        let new = !seen.contains(s);
        seen.push(*s);
        new
    });
    systems
        .into_iter()
        .map(|system| {
            let runs: Vec<&Outcome> = outcomes.iter().filter(|o| o.system == system).collect();
            let med = |f: &dyn Fn(&Outcome) -> Option<f64>| {
                let mut v: Vec<f64> = runs.iter().filter_map(|o| f(o)).collect();
                v.sort_by(f64::total_cmp);
                if v.is_empty() {
                    None
                } else {
                    Some(v[v.len() / 2])
                }
            };
            Row {
                system,
                runs: runs.len(),
                n: runs.iter().map(|o| o.n).max().unwrap_or(0),
                connected: runs.iter().map(|o| o.connected).min().unwrap_or(0),
                connect_s: med(&|o| Some(o.connect_s)),
                rss_per_conn: med(&|o| Some(o.rss_per_conn)),
                p50: med(&|o| o.percentile(0.5)),
                p99: med(&|o| o.percentile(0.99)),
                max: med(&|o| o.latencies_us.last().map(|v| *v as f64 / 1000.0)),
                cpu_us_per_ping: med(&|o| o.cpu_us_per_ping),
                pings: runs.iter().map(|o| o.latencies_us.len()).sum(),
                errors: runs.iter().map(|o| o.errors).sum(),
            }
        })
        .collect()
}

/// One system's line of the table.
#[derive(Debug)]
struct Row {
    system: &'static str,
    runs: usize,
    n: usize,
    connected: usize,
    connect_s: Option<f64>,
    rss_per_conn: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    max: Option<f64>,
    cpu_us_per_ping: Option<f64>,
    pings: usize,
    errors: u64,
}

fn fmt(v: Option<f64>, digits: usize) -> String {
    v.map(|v| format!("{v:.digits$}")).unwrap_or_else(|| "–".into())
}

/// The plain-text (and Markdown) table of a `connections` run, with floe's ratios to Ice C++.
pub(crate) fn table(plan: &Plan, outcomes: &[Outcome], notes: &[String]) -> String {
    let rows = rows(outcomes);
    let mut s = String::new();
    let n = rows.iter().map(|r| r.n).max().unwrap_or(plan.n);
    let _ = writeln!(
        s,
        "connections: {n} connections opened in bursts of {}, then one ice_ping per connection every {} s for {} s; medians of {} run(s)\n",
        plan.burst,
        plan.interval.as_secs(),
        plan.measure.as_secs(),
        rows.iter().map(|r| r.runs).max().unwrap_or(0)
    );
    s.push_str("| server | validated | connect time (s) | RSS per connection (bytes) | p50 (ms) | p99 (ms) | max (ms) | pings | errors | server CPU per ping (µs) |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|\n");
    for r in &rows {
        let _ = writeln!(
            s,
            "| {} | {} / {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.system,
            r.connected,
            r.n,
            fmt(r.connect_s, 2),
            fmt(r.rss_per_conn, 0),
            fmt(r.p50, 3),
            fmt(r.p99, 3),
            fmt(r.max, 2),
            r.pings,
            r.errors,
            fmt(r.cpu_us_per_ping, 1)
        );
    }
    let floe = rows.iter().find(|r| r.system == "floe");
    let ice = rows.iter().find(|r| r.system == "ice-cpp");
    if let (Some(f), Some(i)) = (floe, ice) {
        let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
            (Some(a), Some(b)) if b > 0.0 => format!("{:.2}", a / b),
            _ => "–".into(),
        };
        let _ = writeln!(
            s,
            "\nfloe/Ice C++: RSS per connection {}, p99 {}, connect time {}",
            ratio(f.rss_per_conn, i.rss_per_conn),
            ratio(f.p99, i.p99),
            ratio(f.connect_s, i.connect_s)
        );
    }
    // What 100,000 connections pinging at the same interval would cost, from the measured
    // per-connection memory and per-ping CPU.
    let pings_per_s = 100_000.0 / plan.interval.as_secs_f64();
    for r in &rows {
        if let (Some(bytes), Some(cpu)) = (r.rss_per_conn, r.cpu_us_per_ping) {
            let _ = writeln!(
                s,
                "{} at 100,000 connections (projected): {:.0} MB of user-space memory, {:.0}% of one core for {:.0} pings/s",
                r.system,
                bytes * 100_000.0 / 1e6,
                cpu * pings_per_s / 1e4,
                pings_per_s
            );
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// JSON records of a `connections` run, one per system (medians), for the report's array.
pub(crate) fn json_records(outcomes: &[Outcome]) -> Vec<String> {
    let num = |v: Option<f64>| v.map(|v| format!("{v:.4}")).unwrap_or_else(|| "null".into());
    rows(outcomes)
        .iter()
        .map(|r| {
            format!(
                "{{\"system\": \"{}\", \"test\": \"connections\", \"metric\": \"connections\", \"runs\": {}, \"connections\": {}, \"validated\": {}, \"connect_s\": {}, \"rss_bytes_per_connection\": {}, \"p50_ms\": {}, \"p99_ms\": {}, \"max_ms\": {}, \"pings\": {}, \"errors\": {}, \"server_cpu_us_per_ping\": {}}}",
                r.system,
                r.runs,
                r.n,
                r.connected,
                num(r.connect_s),
                num(r.rss_per_conn),
                num(r.p50),
                num(r.p99),
                num(r.max),
                r.pings,
                r.errors,
                num(r.cpu_us_per_ping)
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(system: &'static str, latencies: Vec<u32>, rss: f64) -> Outcome {
        Outcome {
            system,
            n: 10,
            connected: 10,
            connect_s: 0.5,
            rss_per_conn: rss,
            rss_kb: (0, 0),
            cpu_us_per_ping: Some(20.0),
            latencies_us: latencies,
            errors: 0,
            first_error: None,
        }
    }

    #[test]
    fn percentiles_come_from_the_sorted_latencies() {
        let o = outcome("floe", (1..=100).collect(), 1.0);
        assert_eq!(o.percentile(0.5), Some(0.051));
        assert_eq!(o.percentile(0.99), Some(0.099));
        assert_eq!(outcome("floe", vec![], 1.0).percentile(0.99), None);
    }

    #[test]
    fn the_table_has_a_row_per_system_with_medians_and_the_ratio_to_ice() {
        let outcomes = vec![
            outcome("floe", vec![100, 200], 1000.0),
            outcome("ice-cpp", vec![100, 400], 4000.0),
            outcome("floe", vec![100, 200], 3000.0),
            outcome("floe", vec![100, 200], 2000.0),
        ];
        let t = table(&Plan::new(true, Some(10), None), &outcomes, &[]);
        assert!(t.contains("| floe | 10 / 10 | 0.50 | 2000 |"), "{t}");
        assert!(t.contains("| ice-cpp | 10 / 10 | 0.50 | 4000 |"), "{t}");
        assert!(t.contains("RSS per connection 0.50, p99 0.50"), "{t}");
        assert_eq!(json_records(&outcomes).len(), 2);
    }

    #[test]
    fn load_is_split_over_processes_of_at_most_the_cap() {
        assert_eq!(Plan::new(false, Some(19_000), None).processes(), 2);
        assert_eq!(Plan::new(true, Some(2_000), None).processes(), 1);
        assert_eq!(Plan::new(true, Some(2_001), Some(1_000)).processes(), 3);
    }
}
