//! What an async runtime costs a ping-pong on this machine, without any middleware: 32-byte
//! requests and 25-byte replies over loopback TCP, with blocking sockets (the raw baseline's
//! way) and with bare tokio tasks (a multi-thread runtime with one worker, and a current-thread
//! runtime, as floe's single-threaded servers and clients use). The tokio rates are the ceiling
//! for any tokio-based implementation of the twoway test. A last variant spins on non-blocking
//! sockets instead of sleeping: the difference to blocking sockets is what waking a sleeping
//! thread (and, on a virtual machine, its CPU) costs per round trip.
//!
//! Each variant runs twice: with the server in a process of its own, as `floe-bench` runs
//! every system, and as a thread of this process. Printed as medians of interleaved runs and as
//! ratios to the blocking rate of the same arrangement; with separate processes also the CPU
//! time (user and system) that each side spends per round trip.
//!
//! ```text
//! cargo run --release -p floe-bench --example pingpong_floor
//! ```

use std::io::{BufRead, Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 5;
const MEASURE_FOR: Duration = Duration::from_millis(700);
const REQUEST: [u8; 32] = [0u8; 32];
const REPLY: [u8; 25] = [0u8; 25];

/// How each side waits for the other's message.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    /// Blocking std sockets: the raw baseline's way.
    Blocking,
    /// A tokio task on a multi-thread runtime with one worker.
    MultiThread,
    /// A tokio task on a current-thread runtime.
    CurrentThread,
    /// Non-blocking std sockets, spinning while nothing is there.
    Spinning,
}

impl Kind {
    const ALL: [Kind; 4] = [Kind::Blocking, Kind::MultiThread, Kind::CurrentThread, Kind::Spinning];

    fn name(self) -> &'static str {
        match self {
            Kind::Blocking => "blocking",
            Kind::MultiThread => "multi-thread",
            Kind::CurrentThread => "current-thread",
            Kind::Spinning => "spinning",
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Kind::Blocking => "blocking sockets",
            Kind::MultiThread => "tokio, multi-thread (1 worker)",
            Kind::CurrentThread => "tokio, current-thread",
            Kind::Spinning => "spinning, no sleep",
        }
    }

    fn from_name(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }
}

/// Reads exactly `buf.len()` bytes: blocking, or from a non-blocking socket spinning while
/// none are there.
fn read_full(s: &mut std::net::TcpStream, buf: &mut [u8], spin: bool) -> std::io::Result<()> {
    if !spin {
        return s.read_exact(buf);
    }
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn runtime(kind: Kind) -> tokio::runtime::Runtime {
    let mut builder = if kind == Kind::MultiThread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(1);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().unwrap()
}

/// Accepts one connection on `listener` and answers each request until the client closes it.
fn serve(kind: Kind, listener: std::net::TcpListener) {
    match kind {
        Kind::Blocking | Kind::Spinning => {
            let spin = kind == Kind::Spinning;
            let (mut s, _) = listener.accept().unwrap();
            s.set_nodelay(true).unwrap();
            s.set_nonblocking(spin).unwrap();
            let mut request = [0u8; 32];
            while read_full(&mut s, &mut request, spin).is_ok() {
                if s.write_all(&REPLY).is_err() {
                    break;
                }
            }
        }
        Kind::MultiThread | Kind::CurrentThread => runtime(kind).block_on(async move {
            listener.set_nonblocking(true).unwrap();
            let listener = tokio::net::TcpListener::from_std(listener).unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            // Spawned, as a server's connection tasks are (a multi-thread runtime's block_on
            // runs on the calling thread, not on its worker).
            tokio::spawn(async move {
                s.set_nodelay(true).unwrap();
                let mut request = [0u8; 32];
                while s.read_exact(&mut request).await.is_ok() {
                    if s.write_all(&REPLY).await.is_err() {
                        break;
                    }
                }
            })
            .await
            .unwrap();
        }),
    }
}

/// Round trips counted over `MEASURE_FOR`.
struct Tally {
    start: Instant,
    calls: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally { start: Instant::now(), calls: 0 }
    }

    fn running(&self) -> bool {
        self.start.elapsed() < MEASURE_FOR
    }

    /// Round trips made, and per second.
    fn done(self) -> (u64, f64) {
        (self.calls, self.calls as f64 / self.start.elapsed().as_secs_f64())
    }
}

/// Round trips against the server at `address` for `MEASURE_FOR`: how many, and per second.
fn client(kind: Kind, address: SocketAddr) -> (u64, f64) {
    match kind {
        Kind::Blocking | Kind::Spinning => {
            let spin = kind == Kind::Spinning;
            let mut c = std::net::TcpStream::connect(address).unwrap();
            c.set_nodelay(true).unwrap();
            c.set_nonblocking(spin).unwrap();
            let mut reply = [0u8; 25];
            let mut tally = Tally::new();
            while tally.running() {
                for _ in 0..100 {
                    c.write_all(&REQUEST).unwrap();
                    read_full(&mut c, &mut reply, spin).unwrap();
                }
                tally.calls += 100;
            }
            tally.done()
        }
        Kind::MultiThread | Kind::CurrentThread => runtime(kind).block_on(async move {
            tokio::spawn(async move {
                let mut c = tokio::net::TcpStream::connect(address).await.unwrap();
                c.set_nodelay(true).unwrap();
                let mut reply = [0u8; 25];
                let mut tally = Tally::new();
                while tally.running() {
                    for _ in 0..100 {
                        c.write_all(&REQUEST).await.unwrap();
                        c.read_exact(&mut reply).await.unwrap();
                    }
                    tally.calls += 100;
                }
                tally.done()
            })
            .await
            .unwrap()
        }),
    }
}

/// CPU seconds (user and system) in `usage`.
fn cpu_seconds(usage: &libc::rusage) -> f64 {
    let s = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    s(usage.ru_utime) + s(usage.ru_stime)
}

/// CPU seconds this process (every thread) has used so far.
fn own_cpu_seconds() -> f64 {
    // SAFETY: getrusage writes a whole rusage into memory we own.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut usage) }, 0, "getrusage");
    cpu_seconds(&usage)
}

/// One measurement: round trips per second, and with the server in a process of its own the
/// CPU time per round trip of the client and of the server, in µs (each process's start-up
/// and connection included, a few hundred µs over some thousand round trips).
struct Sample {
    rate: f64,
    cpu_us: Option<(f64, f64)>,
}

/// One measurement: the server as a thread of this process, or as a process of its own (this
/// program again, told `--serve KIND`; it prints its port, then serves one connection).
// The server process is reaped by `wait4`, which clippy does not know of.
#[allow(clippy::zombie_processes)]
fn measure(kind: Kind, separate_process: bool) -> Sample {
    if !separate_process {
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        let address = listener.local_addr().unwrap();
        let server = std::thread::spawn(move || serve(kind, listener));
        let (_, rate) = client(kind, address);
        server.join().unwrap();
        return Sample { rate, cpu_us: None };
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--serve", kind.name()])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let port: u16 = line.trim().parse().unwrap();
    let before = own_cpu_seconds();
    let (calls, rate) = client(kind, SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    let client_cpu = own_cpu_seconds() - before;
    // Reaped with wait4 for the server's resource usage.
    let mut status = 0;
    // SAFETY: wait4 writes a whole rusage into memory we own; the child is ours and not yet
    // waited for.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let pid = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut usage) };
    assert_eq!(pid, child.id() as libc::pid_t, "wait4");
    let per_trip = |seconds: f64| seconds * 1e6 / calls.max(1) as f64;
    Sample { rate, cpu_us: Some((per_trip(client_cpu), per_trip(cpu_seconds(&usage)))) }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() == 3 && args[1] == "--serve" {
        let kind = Kind::from_name(&args[2]).expect("a kind of server");
        let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
        println!("{}", listener.local_addr().unwrap().port());
        std::io::stdout().flush().unwrap();
        serve(kind, listener);
        return;
    }
    for (separate_process, arrangement) in [(true, "server in a process of its own"), (false, "server as a thread")] {
        let mut samples: Vec<Vec<Sample>> = Kind::ALL.iter().map(|_| Vec::new()).collect();
        for run in 1..=RUNS {
            let mut line = format!("run {run} ({arrangement}):");
            for (i, kind) in Kind::ALL.into_iter().enumerate() {
                let sample = measure(kind, separate_process);
                line.push_str(&format!(" {} {:.0}", kind.name(), sample.rate));
                samples[i].push(sample);
            }
            eprintln!("{line} round trips/s");
        }
        let rates: Vec<f64> = samples.iter().map(|s| median(s.iter().map(|s| s.rate).collect())).collect();
        println!("32 B / 25 B ping-pong over loopback, {arrangement}, medians of {RUNS} interleaved runs:");
        for ((kind, rate), samples) in Kind::ALL.into_iter().zip(&rates).zip(&samples) {
            let cpu: Vec<(f64, f64)> = samples.iter().filter_map(|s| s.cpu_us).collect();
            let cpu = if cpu.is_empty() {
                String::new()
            } else {
                let client = median(cpu.iter().map(|c| c.0).collect());
                let server = median(cpu.iter().map(|c| c.1).collect());
                format!("; CPU per round trip: client {client:.1} µs, server {server:.1} µs")
            };
            println!("  {:<32}{rate:>9.0} round trips/s  ({:.2} × blocking){cpu}", kind.describe(), rate / rates[0]);
        }
    }
}
