//! The `storm` test: events per second and p99 delivery latency through floe-storm and
//! ZeroC's IceStorm (Debian's libzeroc-icestorm3.7 inside icebox), with the same publisher and
//! subscribers for both.
//!
//! The publisher and the subscribers are threads of this process that speak the Ice protocol
//! over blocking sockets: the publisher writes pre-encoded oneway `tick` requests to the
//! topic's publisher object, and each subscriber accepts the service's connection, counts the
//! events, answers the twoway ones and timestamps what it receives (each event's parameters
//! end with its send time). floe's client is used only to create the topics and subscribe.
//! Neither service is favoured by the load generator: it does the same work for both. A raw
//! relay (threads of this process copying each event to every subscriber's connection, with
//! no middleware) runs the same cases: its figures are the caps, what any service could reach
//! with this publisher and these subscribers on this machine.
//!
//! For 1, 3 and 10 subscribers, oneway and twoway subscriber proxies, and 16-byte and 1 kB
//! events, each round measures, for each service (the order alternating between rounds):
//! - latency: the publisher sends 1,000 events/s for 1 s (0.5 s with `--quick`); p99 over
//!   every delivery to every subscriber;
//! - events/s: the publisher sends N events as fast as it can write them, N being 60,000
//!   deliveries (20,000 with `--quick`) over the number of subscribers; the rate is N over
//!   the time until every subscriber has all N.
//!
//! Both services run on their defaults, stay up for the whole stage, and get a topic of their
//! own per case and round, destroyed afterwards.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::encoding::{EncodingVersion, Identity};
use floe::protocol::request::encode_request;
use floe::protocol::{OperationMode, RequestPrefix};
use floe::{Communicator, Context, Proxy};
use floe_storm::slice::ice_storm::TopicManagerPrx;

use serde::Serialize;

use crate::report::{figure_cell as cell, ratio_cell as ratio};
use crate::stats::{middle as median, round_to};
use crate::charts::{Group, Spread};
use crate::suite::{Context as RunContext, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// The Ice protocol's validate-connection message, which a server sends first.
const VALIDATE: [u8; 14] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

/// A service under test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Service {
    Floe,
    IceStorm,
    /// The baseline: a relay of this process that copies each event, as it arrives, to every
    /// subscriber's connection, with no middleware at all.
    Relay,
}

impl Service {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Service::Floe => "floe-storm",
            Service::IceStorm => "IceStorm",
            Service::Relay => "raw relay",
        }
    }
}

/// One case: how many subscribers, their proxies' mode, the event's parameter size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Case {
    pub(crate) subscribers: usize,
    pub(crate) twoway: bool,
    pub(crate) size: usize,
}

impl Case {
    fn label(self) -> String {
        format!(
            "{} sub, {}, {}",
            self.subscribers,
            if self.twoway { "twoway" } else { "oneway" },
            if self.size >= 1024 { format!("{} kB", self.size / 1024) } else { format!("{} B", self.size) }
        )
    }

    fn key(self) -> String {
        format!("{}-{}-{}", self.subscribers, if self.twoway { "twoway" } else { "oneway" }, self.size)
    }
}

/// Every case, in the order each round runs them.
pub(crate) fn cases() -> Vec<Case> {
    let mut v = Vec::new();
    for subscribers in [1, 3, 10] {
        for twoway in [false, true] {
            for size in [16, 1024] {
                v.push(Case { subscribers, twoway, size });
            }
        }
    }
    v
}

/// One case's figures of one service over the rounds.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) service: Service,
    pub(crate) case: Case,
    pub(crate) events_per_s: Vec<f64>,
    pub(crate) p99_us: Vec<f64>,
}

/// A running service, killed when dropped.
struct Running {
    child: Child,
    /// The topic manager's proxy string.
    manager: String,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts `cmd` and waits (at most [`crate::proc::READY_LIMIT`]) for a stdout line containing
/// `marker`; the rest of its output is read and dropped.
fn start(mut cmd: Command, marker: &'static str, manager: String, what: &str) -> Result<Running, String> {
    cmd.stdout(Stdio::piped()).stderr(Stdio::null());
    let child = cmd.spawn().map_err(|e| format!("cannot start {what}: {e}"))?;
    let mut running = Running { child, manager };
    let stdout = running.child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let mut said = false;
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => break,
                Ok(_) if !said && line.contains(marker) => {
                    said = true;
                    let _ = tx.send(());
                }
                Ok(_) => {}
            }
        }
    });
    rx.recv_timeout(crate::proc::READY_LIMIT).map_err(|_| format!("{what} did not print {marker:?}"))?;
    Ok(running)
}

/// floe-storm, built beside this binary (`cargo build --release -p floe-storm`, which
/// `scripts/bench` does).
fn floe_storm_binary() -> Result<PathBuf, String> {
    crate::proc::beside_exe("floe-storm", "cargo build --release -p floe-storm")
}

fn start_service(service: Service, dir: &Path) -> Result<Running, String> {
    let (manager_port, publish_port) = (crate::proc::free_port(), crate::proc::free_port());
    let manager = format!("IceStorm/TopicManager:tcp -h 127.0.0.1 -p {manager_port}");
    let mut cmd = match service {
        Service::Floe => {
            let mut c = Command::new(floe_storm_binary()?);
            // `--floe-property` settings apply to floe-storm too.
            crate::floe_system::forward_as_program_properties(&mut c);
            c
        }
        Service::Relay => return Err("the raw relay is no process".into()),
        Service::IceStorm => {
            let mut c = Command::new("icebox");
            c.arg("--IceBox.Service.IceStorm=IceStormService,37:createIceStorm")
                .arg("--IceBox.InheritProperties=1")
                .arg("--IceBox.PrintServicesReady=IceBox")
                .arg("--IceStorm.LMDB.MapSize=16");
            crate::proc::ice_malloc_env(&mut c);
            c
        }
    };
    cmd.arg(format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {manager_port}"))
        .arg(format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {publish_port}"))
        .arg(format!("--IceStorm.LMDB.Path={}", dir.display()));
    let marker = if service == Service::Floe { "floe-storm ready" } else { "IceBox ready" };
    start(cmd, marker, manager, service.name())
}

/// What a case's subscribers saw.
#[derive(Default)]
struct Seen {
    delivered: AtomicUsize,
    latencies_ns: Mutex<Vec<u64>>,
    /// Whether receptions are timed (the latency part) or only counted.
    timing: AtomicBool,
}

/// A raw subscriber: accepts the service's connections, validates them, reads requests,
/// answers twoway ones, and records each event's latency (its parameters end with the send
/// time in ns since `epoch`). Dropping it closes its listener and connections, which ends its
/// threads.
struct Subscriber {
    port: u16,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Subscriber {
    fn start(epoch: Instant, seen: Arc<Seen>) -> Result<Subscriber, String> {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (stop2, streams2) = (stop.clone(), streams.clone());
        std::thread::spawn(move || {
            for s in listener.incoming() {
                if stop2.load(Ordering::Relaxed) {
                    return;
                }
                let Ok(s) = s else { return };
                if let Ok(clone) = s.try_clone() {
                    streams2.lock().expect("streams").push(clone);
                }
                let seen = seen.clone();
                std::thread::spawn(move || serve_subscriber_connection(s, epoch, &seen));
            }
        });
        Ok(Subscriber { port, stop, streams })
    }
}

impl Drop for Subscriber {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread, which then sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for s in self.streams.lock().expect("streams").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

fn serve_subscriber_connection(mut s: TcpStream, epoch: Instant, seen: &Seen) {
    let _ = s.set_nodelay(true);
    if s.write_all(&VALIDATE).is_err() {
        return;
    }
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
        let now = epoch.elapsed().as_nanos() as u64;
        let timing = seen.timing.load(Ordering::Relaxed);
        let mut at = 0;
        let mut events = 0;
        while buf.len() - at >= 14 {
            let size = i32::from_le_bytes([buf[at + 10], buf[at + 11], buf[at + 12], buf[at + 13]]).max(14) as usize;
            if buf.len() - at < size {
                break;
            }
            let msg = &buf[at..at + size];
            // Requests (type 0) are events; a close-connection message (4) ends it.
            match msg[8] {
                0 if size >= 26 => {
                    let id = i32::from_le_bytes([msg[14], msg[15], msg[16], msg[17]]);
                    if timing {
                        let mut t = [0u8; 8];
                        t.copy_from_slice(&msg[size - 8..]);
                        lat.push(now.saturating_sub(u64::from_le_bytes(t)));
                    }
                    events += 1;
                    if id != 0 {
                        // An empty successful reply.
                        replies.extend_from_slice(&[b'I', b'c', b'e', b'P', 1, 0, 1, 0, 2, 0, 25, 0, 0, 0]);
                        replies.extend_from_slice(&id.to_le_bytes());
                        replies.extend_from_slice(&[0, 6, 0, 0, 0, 1, 1]);
                    }
                }
                4 => return,
                _ => {}
            }
            at += size;
        }
        buf.drain(..at);
        if !lat.is_empty() {
            seen.latencies_ns.lock().expect("latencies").append(&mut lat);
        }
        seen.delivered.fetch_add(events, Ordering::Relaxed);
        if !replies.is_empty() {
            if s.write_all(&replies).is_err() {
                return;
            }
            replies.clear();
        }
    }
}

/// A pre-encoded oneway `tick` request to the topic's publisher object; its parameters end
/// with the send time (ns since the run's epoch), which [`Event::stamp`] sets before each write.
struct Event {
    bytes: Vec<u8>,
    epoch: Instant,
}

impl Event {
    fn new(epoch: Instant, size: usize, id: &Identity) -> Event {
        let prefix = RequestPrefix::new(id, "", "tick", OperationMode::Normal);
        let pad = vec![0u8; size.saturating_sub(8)];
        let m = encode_request(0, &prefix, &Context::new(), EncodingVersion::V1_1, |e| {
            e.write_raw(&pad);
            e.write_raw(&0u64.to_le_bytes());
        });
        Event { bytes: m.to_vec(), epoch }
    }

    fn stamp(&mut self) {
        let n = self.bytes.len();
        let t = self.epoch.elapsed().as_nanos() as u64;
        self.bytes[n - 8..].copy_from_slice(&t.to_le_bytes());
    }
}

/// The raw relay of one case: accepts the publisher's connection and copies each complete
/// message it reads, as it arrives, to every subscriber's connection (with request ids of its
/// own for twoway subscribers, whose replies a thread per subscriber reads and drops). It does
/// what any event service must do at the least, with no middleware: its figures are what a
/// service could reach on this machine with the same publisher and subscribers.
struct Relay {
    port: u16,
    stop: Arc<AtomicBool>,
    streams: Arc<Mutex<Vec<TcpStream>>>,
}

impl Relay {
    fn start(subscribers: &[Subscriber], twoway: bool) -> Result<Relay, String> {
        let mut outs = Vec::new();
        let streams: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        for sub in subscribers {
            let mut s = TcpStream::connect(("127.0.0.1", sub.port)).map_err(|e| format!("relay: {e}"))?;
            let _ = s.set_nodelay(true);
            let mut v = [0u8; 14];
            s.read_exact(&mut v).map_err(|e| format!("relay: {e}"))?;
            let mut replies = s.try_clone().map_err(|e| e.to_string())?;
            streams.lock().expect("streams").push(s.try_clone().map_err(|e| e.to_string())?);
            std::thread::spawn(move || {
                let mut sink = vec![0u8; 64 * 1024];
                while replies.read(&mut sink).map(|n| n > 0).unwrap_or(false) {}
            });
            outs.push(s);
        }
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        let stop = Arc::new(AtomicBool::new(false));
        let (stop2, streams2) = (stop.clone(), streams.clone());
        std::thread::spawn(move || {
            let Ok((mut publisher, _)) = listener.accept() else { return };
            if stop2.load(Ordering::Relaxed) {
                return;
            }
            if let Ok(clone) = publisher.try_clone() {
                streams2.lock().expect("streams").push(clone);
            }
            let _ = publisher.set_nodelay(true);
            if publisher.write_all(&VALIDATE).is_err() {
                return;
            }
            let mut buf: Vec<u8> = Vec::with_capacity(1 << 20);
            let mut chunk = vec![0u8; 256 * 1024];
            let mut next_id: i32 = 1;
            loop {
                let n = match publisher.read(&mut chunk) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                buf.extend_from_slice(&chunk[..n]);
                // The complete messages read so far.
                let mut at = 0;
                while let Some(size) = crate::raw::complete_message_at(&buf, at) {
                    if twoway && buf[at + 8] == 0 && size >= 18 {
                        buf[at + 14..at + 18].copy_from_slice(&next_id.to_le_bytes());
                        next_id = next_id.checked_add(1).unwrap_or(1);
                    }
                    at += size;
                }
                for out in &mut outs {
                    if out.write_all(&buf[..at]).is_err() {
                        return;
                    }
                }
                buf.drain(..at);
            }
        });
        Ok(Relay { port, stop, streams })
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wakes the accepting thread if the publisher never came.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for s in self.streams.lock().expect("streams").drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Waits until `seen` counts `want` deliveries or `limit` passes; returns the count.
fn wait_for(seen: &Seen, want: usize, limit: Duration) -> usize {
    let deadline = Instant::now() + limit;
    loop {
        let got = seen.delivered.load(Ordering::Relaxed);
        if got >= want || Instant::now() > deadline {
            return got;
        }
        std::thread::sleep(Duration::from_micros(500));
    }
}

/// Measures one case through the raw relay.
fn run_relay_case(case: Case, quick: bool) -> Result<Measured, String> {
    let epoch = Instant::now();
    let seen = Arc::new(Seen::default());
    let subscribers: Vec<Subscriber> =
        (0..case.subscribers).map(|_| Subscriber::start(epoch, seen.clone())).collect::<Result<_, _>>()?;
    let relay = Relay::start(&subscribers, case.twoway)?;
    let outcome = publish(relay.port, &Identity::new("relay"), &seen, epoch, case, quick);
    drop(relay);
    drop(subscribers);
    outcome
}

/// Measures one case on one service.
fn run_case(c: &Communicator, service: &Running, case: Case, round: usize, quick: bool) -> Result<Measured, String> {
    let epoch = Instant::now();
    let seen = Arc::new(Seen::default());
    let topic_name = format!("bench-{}-r{round}", case.key());
    let subscribers: Vec<Subscriber> =
        (0..case.subscribers).map(|_| Subscriber::start(epoch, seen.clone())).collect::<Result<_, _>>()?;
    let (topic, publisher) = c.block_on(async {
        let e = |what: &str, e: &dyn std::fmt::Debug| format!("setting up the topic ({what}): {e:?}");
        let proxy = c.string_to_proxy(&service.manager).map_err(|x| e("manager", &x))?;
        let manager = TopicManagerPrx::from_object(proxy);
        let topic = manager.create(&topic_name).await.map_err(|x| e("create", &x))?.ok_or("no topic")?;
        for (k, sub) in subscribers.iter().enumerate() {
            let p = c
                .string_to_proxy(&format!("sub{k}:tcp -h 127.0.0.1 -p {}", sub.port))
                .map_err(|x| e("subscriber", &x))?;
            let p = if case.twoway { p } else { p.ice_oneway() };
            topic.subscribe_and_get_publisher(&Default::default(), Some(&p)).await.map_err(|x| e("subscribe", &x))?;
        }
        let publisher = topic.get_publisher().await.map_err(|x| e("getPublisher", &x))?.ok_or("no publisher")?;
        Ok::<_, String>((topic, publisher))
    })?;
    let endpoint = publisher.to_string();
    let port: u16 = endpoint
        .rsplit("-p ")
        .next()
        .and_then(|t| t.split_whitespace().next())
        .and_then(|p| p.parse().ok())
        .ok_or_else(|| format!("no port in the publisher proxy {endpoint:?}"))?;
    let outcome = publish(port, publisher.ice_get_identity(), &seen, epoch, case, quick);
    let _ = c.block_on(topic.destroy());
    drop(subscribers);
    outcome
}

/// The events of a case's throughput part: the same number of deliveries whatever the number
/// of subscribers (60,000, or 20,000 with `--quick`).
fn events_per_burst(case: Case, quick: bool) -> usize {
    (if quick { 20_000 } else { 60_000 }) / case.subscribers.max(1)
}

/// The publisher's part of a case (see the module doc).
fn publish(
    port: u16,
    publisher: &Identity,
    seen: &Seen,
    epoch: Instant,
    case: Case,
    quick: bool,
) -> Result<Measured, String> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).map_err(|e| e.to_string())?;
    let _ = s.set_nodelay(true);
    let mut v = [0u8; 14];
    s.read_exact(&mut v).map_err(|e| format!("publisher connection: {e}"))?;
    let mut event = Event::new(epoch, case.size, publisher);

    // Latency at 1,000 events/s.
    let paced = if quick { 500 } else { 1000 };
    seen.timing.store(true, Ordering::Relaxed);
    let start = Instant::now();
    for k in 0..paced {
        let due = start + Duration::from_micros(k as u64 * 1000);
        let now = Instant::now();
        if due > now {
            std::thread::sleep(due - now);
        }
        event.stamp();
        s.write_all(&event.bytes).map_err(|e| format!("publishing: {e}"))?;
    }
    let want = paced * case.subscribers;
    let got = wait_for(seen, want, Duration::from_secs(20));
    if got < want {
        return Err(format!("{got} of {want} paced deliveries within 20 s"));
    }
    seen.timing.store(false, Ordering::Relaxed);
    let mut lat = std::mem::take(&mut *seen.latencies_ns.lock().expect("latencies"));
    lat.sort_unstable();
    let p99_us = crate::stats::rank(&lat, 99, 100).unwrap_or(0) as f64 / 1000.0;
    let p50_us = crate::stats::rank(&lat, 1, 2).unwrap_or(0) as f64 / 1000.0;

    // Throughput: n events as fast as the publisher can write them.
    let n = events_per_burst(case, quick);
    seen.delivered.store(0, Ordering::Relaxed);
    let mut burst = Vec::with_capacity(event.bytes.len() * 64);
    let start = Instant::now();
    let mut sent = 0;
    while sent < n {
        burst.clear();
        for _ in 0..64.min(n - sent) {
            event.stamp();
            burst.extend_from_slice(&event.bytes);
            sent += 1;
        }
        s.write_all(&burst).map_err(|e| format!("publishing: {e}"))?;
    }
    let want = n * case.subscribers;
    let got = wait_for(seen, want, Duration::from_secs(60));
    let elapsed = start.elapsed().as_secs_f64();
    if got < want {
        return Err(format!("{got} of {want} deliveries within 60 s"));
    }
    Ok(Measured { events_per_s: n as f64 / elapsed, p50_us, p99_us })
}

/// One case's figures on one service in one round.
struct Measured {
    events_per_s: f64,
    p50_us: f64,
    p99_us: f64,
}

/// The stage: `runs` rounds of every case on both services. Returns the series and notes.
pub(crate) fn run(quick: bool, runs: usize) -> (Vec<Series>, Vec<String>) {
    let mut notes = Vec::new();
    let mut series: Vec<Series> = Vec::new();
    let dir = std::env::temp_dir().join(format!("floe-bench-storm-{}", std::process::id()));
    let mut services: Vec<(Service, Option<Running>)> = vec![(Service::Relay, None)];
    for service in [Service::Floe, Service::IceStorm] {
        let d = dir.join(service.name());
        let _ = std::fs::remove_dir_all(&d);
        if let Err(e) = std::fs::create_dir_all(&d) {
            notes.push(format!("storm: {e}"));
            continue;
        }
        match start_service(service, &d) {
            Ok(r) => services.push((service, Some(r))),
            Err(e) => notes.push(format!("{} skipped: {e}", service.name())),
        }
    }
    let c = match Communicator::new() {
        Ok(c) => c,
        Err(e) => {
            notes.push(format!("storm test skipped: {e}"));
            return (series, notes);
        }
    };
    let started = Instant::now();
    for round in 0..runs {
        for case in cases() {
            // The order alternates between rounds, so that neither service always runs
            // right after the other's load.
            let order: Vec<&(Service, Option<Running>)> =
                if round % 2 == 0 { services.iter().collect() } else { services.iter().rev().collect() };
            for (service, running) in order {
                let outcome = match running {
                    Some(running) => run_case(&c, running, case, round, quick),
                    None => run_relay_case(case, quick),
                };
                match outcome {
                    Ok(Measured { events_per_s: rate, p50_us, p99_us: p99 }) => {
                        eprintln!(
                            "[{:>4.0}s] round {} storm {:<10} {:<22} {:>9.0} events/s, p50 {:>7.1} µs, p99 {:>7.1} µs",
                            started.elapsed().as_secs_f64(),
                            round + 1,
                            service.name(),
                            case.label(),
                            rate,
                            p50_us,
                            p99
                        );
                        match series.iter_mut().find(|s| s.service == *service && s.case == case) {
                            Some(s) => {
                                s.events_per_s.push(rate);
                                s.p99_us.push(p99);
                            }
                            None => series.push(Series {
                                service: *service,
                                case,
                                events_per_s: vec![rate],
                                p99_us: vec![p99],
                            }),
                        }
                    }
                    Err(e) => notes.push(format!("{} / {} round {}: {e}", service.name(), case.label(), round + 1)),
                }
            }
        }
    }
    c.destroy_blocking();
    drop(services);
    let _ = std::fs::remove_dir_all(&dir);
    (series, notes)
}

fn get(series: &[Series], service: Service, case: Case) -> Option<&Series> {
    series.iter().find(|s| s.service == service && s.case == case)
}

/// The Markdown table: per case, both services' events/s and p99, with the ratios
/// floe-storm / IceStorm.
pub(crate) fn table(series: &[Series], quick: bool, runs: usize, notes: &[String]) -> String {
    let mut s = String::new();
    let rounds = series.iter().map(|s| s.events_per_s.len()).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "storm: one raw-protocol publisher → raw-protocol subscribers through floe-storm, IceStorm and a raw relay \
         ({} deliveries as fast as possible for events/s; 1,000 events/s for {} s for p99 delivery latency), \
         medians of {rounds} of {runs} round(s)\n",
        if quick { "20,000" } else { "60,000" },
        if quick { "0.5" } else { "1" }
    );
    // The caps: what the raw relay reaches against IceStorm. Where a cap is below a target
    // ratio (or above, for latency), the publisher's and subscribers' own time on this machine
    // make the target unreachable for any service.
    s.push_str(
        "| subscribers, mode, event size | floe-storm events/s | IceStorm events/s | raw relay events/s | floe-storm / IceStorm | cap (relay / IceStorm) | floe-storm p99 (µs) | IceStorm p99 (µs) | raw relay p99 (µs) | p99 floe-storm / IceStorm | p99 cap (relay / IceStorm) |\n",
    );
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    for case in cases() {
        let rate = |service| get(series, service, case).and_then(|s| median(&s.events_per_s));
        let p99 = |service| get(series, service, case).and_then(|s| median(&s.p99_us));
        let (fr, ir, rr) = (rate(Service::Floe), rate(Service::IceStorm), rate(Service::Relay));
        let (fl, il, rl) = (p99(Service::Floe), p99(Service::IceStorm), p99(Service::Relay));
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            case.label(),
            cell(fr),
            cell(ir),
            cell(rr),
            ratio(fr, ir),
            ratio(rr, ir),
            cell(fl),
            cell(il),
            cell(rl),
            ratio(fl, il),
            ratio(rl, il)
        );
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// floe-storm's events/s over IceStorm's per case, with the spread of the rounds' ratios.
fn ratios(series: &[Series]) -> Vec<Ratio> {
    let rates = |service, case| get(series, service, case).map_or(&[][..], |s| &s.events_per_s);
    cases()
        .into_iter()
        .filter_map(|c| of_runs(&c.label(), "IceStorm", rates(Service::Floe, c), rates(Service::IceStorm, c)))
        .collect()
}

/// The stage's charts: each service's events/s and p99 delivery latency per case.
fn charts(series: &[Series]) -> String {
    let labels: Vec<String> = cases().iter().map(|c| c.label()).collect();
    let groups = |f: fn(&Series) -> &[f64]| -> Vec<Group> {
        [Service::Floe, Service::IceStorm, Service::Relay]
            .iter()
            .map(|sv| Group {
                name: sv.name().to_string(),
                values: cases().into_iter().map(|c| get(series, *sv, c).and_then(|s| Spread::of(f(s)))).collect(),
            })
            .collect()
    };
    let mut s = crate::charts::bars("Storm: events delivered per second", "events/s", &labels, &groups(|s| &s.events_per_s));
    s.push_str(&crate::charts::bars("Storm: p99 delivery latency at 1,000 events/s", "µs", &labels, &groups(|s| &s.p99_us)));
    s
}

/// The JSON record of one figure of a service and case.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: String,
    metric: &'static str,
    unit: &'static str,
    median: f64,
    runs: usize,
}

/// JSON records, two per service and case (events/s and p99), for the report's array.
pub(crate) fn json_records(series: &[Series]) -> Vec<serde_json::Value> {
    let mut out = Vec::new();
    for s in series {
        for (metric, unit, values) in [("events", "events/s", &s.events_per_s), ("p99", "us", &s.p99_us)] {
            if let Some(m) = median(values) {
                out.push(crate::json::record(&Record {
                    system: s.service.name(),
                    test: format!("storm/{}/{metric}", s.case.key()),
                    metric: "storm",
                    unit,
                    median: round_to(m, 3),
                    runs: values.len(),
                }));
            }
        }
    }
    out
}

/// The storm test, with the Ice peer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Storm;

impl Suite for Storm {
    type Results = (Vec<Series>, Vec<String>);

    fn name(&self) -> &'static str {
        "storm"
    }

    fn title(&self) -> &'static str {
        "Storm"
    }

    fn selected(&self, ctx: &RunContext) -> bool {
        ctx.args.peer("ice") && ctx.args.runs_suite(self.name())
    }

    fn systems(&self, _ctx: &RunContext) -> Vec<String> {
        [Service::Floe, Service::IceStorm, Service::Relay].iter().map(|s| s.name().to_string()).collect()
    }

    fn run(&self, ctx: &RunContext) -> Self::Results {
        run(ctx.args.quick, ctx.stage_rounds())
    }

    fn table(&self, ctx: &RunContext, (series, notes): &Self::Results) -> String {
        table(series, ctx.args.quick, ctx.stage_rounds(), notes)
    }

    fn charts(&self, ctx: &RunContext, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &RunContext, (series, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("storm", "cases (events/s)", ratios(series))
    }

    fn records(&self, (series, _): &Self::Results) -> Vec<serde_json::Value> {
        json_records(series)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_has_every_case_with_both_ratios() {
        let case = Case { subscribers: 3, twoway: true, size: 1024 };
        let series = vec![
            Series {
                service: Service::Floe,
                case,
                events_per_s: vec![200_000.0, 100_000.0, 300_000.0],
                p99_us: vec![50.0],
            },
            Series { service: Service::IceStorm, case, events_per_s: vec![50_000.0], p99_us: vec![200.0] },
        ];
        let mut series = series;
        series.push(Series { service: Service::Relay, case, events_per_s: vec![400_000.0], p99_us: vec![40.0] });
        let t = table(&series, false, 3, &["a note".into()]);
        assert!(
            t.contains(
                "| 3 sub, twoway, 1 kB | 200.0k | 50.0k | 400.0k | 4.00 | 8.00 | 50.0 | 200 | 40.0 | 0.25 | 0.20 |"
            ),
            "{t}"
        );
        assert_eq!(t.lines().filter(|l| l.starts_with("| ") && l.contains(" sub, ")).count(), 12, "{t}");
        assert!(t.contains("note: a note"));
        let json = json_records(&series);
        assert_eq!(json.len(), 6);
        assert!(json[0]["test"] == "storm/3-twoway-1024/events" && json[0]["median"] == 200000.0);
    }

    #[test]
    fn the_subscriber_counts_answers_and_times_events() {
        let epoch = Instant::now();
        let seen = Arc::new(Seen::default());
        seen.timing.store(true, Ordering::Relaxed);
        let sub = Subscriber::start(epoch, seen.clone()).expect("subscriber");
        let mut s = TcpStream::connect(("127.0.0.1", sub.port)).expect("connect");
        let mut v = [0u8; 14];
        s.read_exact(&mut v).expect("validate");
        assert_eq!(v, VALIDATE);
        let id = Identity::new("t");
        let mut event = Event::new(epoch, 16, &id);
        // A twoway copy of the event: request id 7.
        let mut twoway = event.bytes.clone();
        twoway[14..18].copy_from_slice(&7i32.to_le_bytes());
        event.stamp();
        s.write_all(&event.bytes).expect("oneway");
        s.write_all(&twoway).expect("twoway");
        let mut reply = [0u8; 25];
        s.read_exact(&mut reply).expect("reply");
        assert_eq!(reply[8], 2, "a reply");
        assert_eq!(i32::from_le_bytes([reply[14], reply[15], reply[16], reply[17]]), 7);
        assert_eq!(wait_for(&seen, 2, Duration::from_secs(5)), 2);
        assert_eq!(seen.latencies_ns.lock().unwrap().len(), 2);
        drop(sub);
    }
}
