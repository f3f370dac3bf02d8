//! Events per second and delivery latency through floe-storm and ZeroC's IceStorm, with the
//! same raw-protocol publisher and subscribers for both (threads of this process, speaking the
//! Ice protocol over blocking sockets with pre-encoded messages; floe is used only to create
//! the topic and subscribe).
//!
//! `cargo run --release -p floe-storm --example storm-bench -- [--quick]`
//! (needs `cargo build --release -p floe-storm --bin floe-storm` and Debian's zeroc-icebox).
//!
//! For 1, 3 and 10 subscribers, oneway and twoway, 16-byte and 1 kB events: one publisher
//! sends N oneway events as fast as it can; events/s is N over the time until every
//! subscriber has all N. Latency: the same publisher sends 1,000 events/s for 2 s and each
//! subscriber timestamps what it receives; p99 over all deliveries.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::encoding::{EncodingVersion, Identity};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};
use floe::{Communicator, Context, Proxy};
use floe_storm::slice::ice_storm::TopicManagerPrx;

const VALIDATE: [u8; 14] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

struct Service {
    child: Child,
    manager: String,
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(mut cmd: Command, marker: &str, manager: String) -> Service {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("service starts");
    let mut out = child.stdout.take().unwrap();
    let mut seen = Vec::new();
    let mut buf = [0u8; 256];
    while !String::from_utf8_lossy(&seen).contains(marker) {
        let n = out.read(&mut buf).unwrap();
        assert!(n > 0, "service exited: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    std::thread::spawn(move || while out.read(&mut buf).map(|n| n > 0).unwrap_or(false) {});
    Service { child, manager }
}

fn floe_storm(dir: &std::path::Path) -> Service {
    let exe = std::env::current_exe().unwrap();
    let bin: PathBuf = exe.parent().unwrap().parent().unwrap().join("floe-storm");
    let (t, p) = (free_port(), free_port());
    let mut cmd = Command::new(bin);
    cmd.arg(format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {t}"))
        .arg(format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {p}"))
        .arg(format!("--IceStorm.LMDB.Path={}", dir.display()));
    start(cmd, "floe-storm ready", format!("IceStorm/TopicManager:tcp -h 127.0.0.1 -p {t}"))
}

fn icestorm(dir: &std::path::Path) -> Service {
    let (t, p) = (free_port(), free_port());
    let mut cmd = Command::new("icebox");
    cmd.arg("--IceBox.Service.IceStorm=IceStormService,37:createIceStorm")
        .arg("--IceBox.InheritProperties=1")
        .arg("--IceBox.PrintServicesReady=IceBox")
        .arg(format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {t}"))
        .arg(format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {p}"))
        .arg(format!("--IceStorm.LMDB.Path={}", dir.display()))
        .arg("--IceStorm.LMDB.MapSize=16");
    start(cmd, "IceBox ready", format!("IceStorm/TopicManager:tcp -h 127.0.0.1 -p {t}"))
}

/// What the subscribers saw.
#[derive(Default)]
struct Seen {
    delivered: AtomicUsize,
    latencies_ns: Mutex<Vec<u64>>,
}

/// A raw subscriber: accepts connections, validates them, reads requests, answers twoway
/// ones, and records each event's latency (its parameters start with the send time in ns
/// since `epoch`).
fn subscriber(epoch: Instant, seen: Arc<Seen>, record: bool) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(mut s) = s else { return };
            let seen = seen.clone();
            std::thread::spawn(move || {
                let _ = s.set_nodelay(true);
                s.write_all(&VALIDATE).unwrap();
                let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
                let mut chunk = vec![0u8; 256 * 1024];
                let mut replies = Vec::new();
                let mut lat = Vec::new();
                loop {
                    let n = match s.read(&mut chunk) {
                        Ok(0) | Err(_) => return,
                        Ok(n) => n,
                    };
                    buf.extend_from_slice(&chunk[..n]);
                    let mut at = 0;
                    let now = epoch.elapsed().as_nanos() as u64;
                    while buf.len() - at >= 14 {
                        let size = i32::from_le_bytes(buf[at + 10..at + 14].try_into().unwrap()) as usize;
                        if buf.len() - at < size {
                            break;
                        }
                        let msg = &buf[at..at + size];
                        if msg[8] == 0 {
                            let id = i32::from_le_bytes(msg[14..18].try_into().unwrap());
                            // The send time ends the parameters, and so the message.
                            let t = u64::from_le_bytes(msg[size - 8..].try_into().unwrap());
                            if record {
                                lat.push(now.saturating_sub(t));
                            }
                            seen.delivered.fetch_add(1, Ordering::Relaxed);
                            if id != 0 {
                                replies.extend_from_slice(&[b'I', b'c', b'e', b'P', 1, 0, 1, 0, 2, 0, 25, 0, 0, 0]);
                                replies.extend_from_slice(&id.to_le_bytes());
                                replies.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
                            }
                        }
                        at += size;
                    }
                    buf.drain(..at);
                    if !replies.is_empty() {
                        if s.write_all(&replies).is_err() {
                            return;
                        }
                        replies.clear();
                    }
                    if !lat.is_empty() {
                        seen.latencies_ns.lock().unwrap().append(&mut lat);
                    }
                }
            });
        }
    });
    port
}

/// A pre-encoded oneway `tick` request for `id`; its parameters end with the send time (ns
/// since the run's epoch), which [`Msg::stamp`] sets before each write.
struct Msg {
    bytes: Vec<u8>,
    epoch: Instant,
}

impl Msg {
    fn new(epoch: Instant, size: usize, id: &Identity) -> Msg {
        let prefix = RequestPrefix::new(id, "", "tick", OperationMode::Normal);
        let pad = vec![0u8; size.saturating_sub(8)];
        let m = encode_request(0, &prefix, &Context::new(), EncodingVersion::V1_1, |e| {
            e.write_raw(&pad);
            e.write_raw(&0u64.to_le_bytes());
        });
        Msg { bytes: m.to_vec(), epoch }
    }

    fn stamp(&mut self) {
        let n = self.bytes.len();
        let t = self.epoch.elapsed().as_nanos() as u64;
        self.bytes[n - 8..].copy_from_slice(&t.to_le_bytes());
    }
}

struct Row {
    system: &'static str,
    subscribers: usize,
    mode: &'static str,
    size: usize,
    events_per_s: f64,
    p99_us: f64,
}

fn run_one(service: &Service, system: &'static str, subscribers: usize, twoway: bool, size: usize, n: usize) -> Row {
    let c = Communicator::new().unwrap();
    let epoch = Instant::now();
    let seen = Arc::new(Seen::default());
    let topic_name = format!("bench-{subscribers}-{twoway}-{size}");
    let publisher = c.block_on(async {
        let m = TopicManagerPrx::from_object(c.string_to_proxy(&service.manager).unwrap());
        let topic = m.create(&topic_name).await.unwrap().unwrap();
        for k in 0..subscribers {
            let port = subscriber(epoch, seen.clone(), true);
            let p = c.string_to_proxy(&format!("sub{k}:tcp -h 127.0.0.1 -p {port}")).unwrap();
            let p = if twoway { p } else { p.ice_oneway() };
            topic.subscribe_and_get_publisher(&Default::default(), Some(&p)).await.unwrap();
        }
        topic.get_publisher().await.unwrap().unwrap()
    });
    let endpoint = publisher.to_string();
    let port: u16 = endpoint.rsplit("-p ").next().unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = s.set_nodelay(true);
    let mut v = [0u8; 14];
    s.read_exact(&mut v).unwrap();
    let mut msg = Msg::new(epoch, size, publisher.ice_get_identity());

    // Latency at 1,000 events/s for 2 s (1 s with --quick: n is smaller then).
    let paced = if n >= 20_000 { 2000 } else { 1000 };
    let start = Instant::now();
    for k in 0..paced {
        let due = start + Duration::from_micros(k as u64 * 1000);
        while Instant::now() < due {
            std::thread::sleep(due - Instant::now());
        }
        msg.stamp();
        s.write_all(&msg.bytes).unwrap();
    }
    let want = paced * subscribers;
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.delivered.load(Ordering::Relaxed) < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(2));
    }
    let mut lat = std::mem::take(&mut *seen.latencies_ns.lock().unwrap());
    lat.sort_unstable();
    let p99_us = lat.get(lat.len() * 99 / 100).copied().unwrap_or(0) as f64 / 1000.0;

    // Throughput: n events as fast as the publisher can write them.
    seen.delivered.store(0, Ordering::Relaxed);
    let mut burst = Vec::with_capacity(msg.bytes.len() * 64);
    let start = Instant::now();
    let mut sent = 0;
    while sent < n {
        burst.clear();
        for _ in 0..64.min(n - sent) {
            msg.stamp();
            burst.extend_from_slice(&msg.bytes);
            sent += 1;
        }
        s.write_all(&burst).unwrap();
    }
    let want = n * subscribers;
    let deadline = Instant::now() + Duration::from_secs(60);
    while seen.delivered.load(Ordering::Relaxed) < want && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(1));
    }
    let got = seen.delivered.load(Ordering::Relaxed);
    let elapsed = start.elapsed().as_secs_f64();
    if got < want {
        eprintln!("{system}: {got} of {want} deliveries within 60 s");
    }
    c.destroy_blocking();
    Row {
        system,
        subscribers,
        mode: if twoway { "twoway" } else { "oneway" },
        size,
        events_per_s: got as f64 / subscribers as f64 / elapsed,
        p99_us,
    }
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let n = if quick { 10_000 } else { 50_000 };
    let dir = std::env::temp_dir().join(format!("storm-bench-{}", std::process::id()));
    let mut rows = Vec::new();
    for (system, make) in [("floe-storm", floe_storm as fn(&std::path::Path) -> Service), ("IceStorm", icestorm)] {
        let d = dir.join(system);
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        let service = make(&d);
        for subscribers in [1, 3, 10] {
            for twoway in [false, true] {
                for size in [16, 1024] {
                    let row = run_one(&service, system, subscribers, twoway, size, n);
                    println!(
                        "{:<10} {:>2} sub {:<6} {:>4} B: {:>9.0} events/s, p99 {:>8.1} µs",
                        row.system, row.subscribers, row.mode, row.size, row.events_per_s, row.p99_us
                    );
                    rows.push(row);
                }
            }
        }
    }
    println!("\nfloe-storm / IceStorm: events/s ratio, p99 ratio");
    for r in rows.iter().filter(|r| r.system == "floe-storm") {
        if let Some(i) = rows
            .iter()
            .find(|o| o.system == "IceStorm" && o.subscribers == r.subscribers && o.mode == r.mode && o.size == r.size)
        {
            println!(
                "{:>2} sub {:<6} {:>4} B: {:.2}x events/s, {:.2}x p99",
                r.subscribers,
                r.mode,
                r.size,
                r.events_per_s / i.events_per_s,
                r.p99_us / i.p99_us
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}
