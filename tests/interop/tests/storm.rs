//! floe-storm (crates/floe-storm) between real programs, and the same checks against ZeroC's
//! IceStorm (the Debian service run by icebox) so that the tests hold floe-storm to the
//! reference: Ice's Python publishers and subscribers in every mode, Ice's C++ publishers and
//! subscribers (cpp/StormClient.cpp) in every mode and mixed with Python and floe peers, floe's
//! own publishers and subscribers, the topic manager's and topics' exceptions, links and their
//! costs, icestormadmin, slow, hung and dead subscribers, a restart on the same data directory,
//! and garbage on both endpoints.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{free_port, rss_kb, start_until, Server};
use floe::protocol::OperationMode;
use floe::{CallError, Communicator, Context, DispatchFuture, Dispatcher, IncomingRequest, ObjectPrx, Proxy};
use floe_storm::slice::ice_storm::{
    TopicLinkError, TopicManagerCreateError, TopicManagerPrx, TopicManagerRetrieveError, TopicPrx,
    TopicSubscribeAndGetPublisherError, TopicUnlinkError,
};

fn id_str(id: &floe::Identity) -> String {
    floe::reference::identity_to_string(id)
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// The floe-storm binary, built once per test process (it belongs to another package).
fn storm_binary() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let status = Command::new(env!("CARGO"))
                .args(["build", "--quiet", "-p", "floe-storm", "--bin", "floe-storm"])
                .current_dir(root().join("../.."))
                .status()
                .expect("cargo runs");
            assert!(status.success(), "building floe-storm failed");
            Path::new(env!("CARGO_BIN_EXE_floe-interop-client")).with_file_name("floe-storm")
        })
        .clone()
}

/// The services' logs go to the test's stderr with `FLOE_STORM_TEST_LOG=1`.
fn service_stderr() -> Stdio {
    if std::env::var_os("FLOE_STORM_TEST_LOG").is_some() {
        Stdio::inherit()
    } else {
        Stdio::null()
    }
}

/// A fresh directory for a service's data.
fn data_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("floe-storm-test-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Floe,
    IceStorm,
}

/// A running publish/subscribe service.
struct Service {
    server: Server,
    kind: Kind,
    manager: String,
    topic_port: u16,
    publish_port: u16,
}

fn floe_storm_on(dir: &Path, topic_port: u16, publish_port: u16, extra: &[&str]) -> Service {
    let mut cmd = Command::new(storm_binary());
    cmd.arg(format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {topic_port}"))
        .arg(format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {publish_port}"))
        .arg(format!("--IceStorm.LMDB.Path={}", dir.display()))
        .args(extra)
        .stderr(service_stderr());
    let server = start_until(cmd, "floe-storm ready");
    Service {
        server,
        kind: Kind::Floe,
        manager: format!("IceStorm/TopicManager:tcp -h 127.0.0.1 -p {topic_port}"),
        topic_port,
        publish_port,
    }
}

fn floe_storm(name: &str, extra: &[&str]) -> Service {
    floe_storm_on(&data_dir(name), free_port(), free_port(), extra)
}

/// ZeroC's IceStorm, in icebox (Debian's zeroc-icebox and libzeroc-icestorm3.7).
fn icestorm(name: &str, extra: &[&str]) -> Service {
    let (topic_port, publish_port) = (free_port(), free_port());
    let mut cmd = Command::new("icebox");
    cmd.arg("--IceBox.Service.IceStorm=IceStormService,37:createIceStorm")
        .arg("--IceBox.InheritProperties=1")
        .arg("--IceBox.PrintServicesReady=IceBox")
        .arg(format!("--IceStorm.TopicManager.Endpoints=tcp -h 127.0.0.1 -p {topic_port}"))
        .arg(format!("--IceStorm.Publish.Endpoints=tcp -h 127.0.0.1 -p {publish_port}"))
        .arg(format!("--IceStorm.LMDB.Path={}", data_dir(name).display()))
        .arg("--IceStorm.LMDB.MapSize=16")
        .args(extra)
        .stderr(service_stderr());
    let server = start_until(cmd, "IceBox ready");
    Service {
        server,
        kind: Kind::IceStorm,
        manager: format!("IceStorm/TopicManager:tcp -h 127.0.0.1 -p {topic_port}"),
        topic_port,
        publish_port,
    }
}

// ---- Ice's Python peers

fn python_peer(args: &[&str]) -> Command {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/storm_peer.py")).args(args);
    cmd
}

/// Python subscribers in every mode and a Python publisher sending oneway, batched and
/// twoway: every subscriber gets every tick once, in order.
fn python_peers(service: &Service, topic: &str, modes: &[&str], count: usize) {
    let expect = count.to_string();
    let subscribers: Vec<(String, Peer)> = modes
        .iter()
        .map(|mode| {
            let mut cmd = python_peer(&[
                "subscribe",
                "--manager",
                &service.manager,
                "--topic",
                topic,
                "--mode",
                mode,
                "--expect",
                &expect,
                "--size",
                "100",
            ]);
            cmd.stderr(Stdio::inherit());
            (mode.to_string(), start_until_keep(cmd, "subscriber ready"))
        })
        .collect();
    let out = python_peer(&[
        "publish",
        "--manager",
        &service.manager,
        "--topic",
        topic,
        "--count",
        &expect,
        "--size",
        "100",
        "--mode",
        "mixed",
        "--pace-ms",
        "0.5",
    ])
    .output()
    .unwrap();
    assert!(out.status.success(), "publisher failed: {}", String::from_utf8_lossy(&out.stderr));
    for (mode, sub) in subscribers {
        let text = sub.finish(Duration::from_secs(60));
        assert!(text.contains(&format!("received {count} in order")), "{:?} {mode} subscriber: {text}", service.kind);
    }
}

/// A child process whose whole output is kept.
struct Peer {
    child: std::process::Child,
    out: Arc<Mutex<String>>,
}

impl Peer {
    fn finish(mut self, limit: Duration) -> String {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.child.try_wait().unwrap().is_some() {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        std::thread::sleep(Duration::from_millis(50));
        let text = self.out.lock().unwrap().clone();
        text
    }
}

fn start_until_keep(mut cmd: Command, marker: &str) -> Peer {
    cmd.stdout(Stdio::piped());
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    let mut stdout = child.stdout.take().unwrap();
    let out = Arc::new(Mutex::new(String::new()));
    let o = out.clone();
    std::thread::spawn(move || {
        let mut buf = [0u8; 1024];
        while let Ok(n) = stdout.read(&mut buf) {
            if n == 0 {
                break;
            }
            o.lock().unwrap().push_str(&String::from_utf8_lossy(&buf[..n]));
        }
    });
    let deadline = Instant::now() + Duration::from_secs(30);
    while !out.lock().unwrap().contains(marker) {
        assert!(Instant::now() < deadline, "{cmd:?} did not get ready: {:?}", out.lock().unwrap());
        if let Some(status) = child.try_wait().unwrap() {
            panic!("{cmd:?} exited ({status}): {:?}", out.lock().unwrap());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Peer { child, out }
}

#[test]
fn ice_python_peers_through_floe_storm_in_every_mode() {
    let storm = floe_storm("python", &[]);
    python_peers(&storm, "python", &["oneway", "twoway", "ordered", "batch", "datagram"], 600);
}

#[test]
fn ice_python_peers_through_icestorm_in_every_mode() {
    let storm = icestorm("python", &[]);
    python_peers(&storm, "python", &["oneway", "twoway", "ordered", "batch", "datagram"], 600);
}

// ---- Ice's C++ peers

/// Ice's C++ publisher and subscriber (`cpp/StormClient.cpp`), built once per test process.
fn cpp_storm_client() -> PathBuf {
    static BUILT: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    BUILT
        .get_or_init(|| {
            let out = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp-storm-client");
            let status = Command::new("make")
                .arg("-s")
                .arg("-C")
                .arg(root().join("cpp"))
                .arg(format!("OUT={}", out.display()))
                .arg("storm-client")
                .status()
                .expect("make runs");
            assert!(status.success(), "building the C++ IceStorm client failed");
            out.join("storm-client")
        })
        .clone()
}

/// The payload of tick `seq` that the C++ peers send and check: byte i is (seq + i) mod 256.
fn cpp_payload(seq: i32, size: usize) -> Vec<u8> {
    (0..size).map(|i| (seq as usize).wrapping_add(i) as u8).collect()
}

/// A C++ subscriber (`proxy`: oneway, twoway or batch, with `qos` as key=value) to `topic`
/// expecting `count` ticks of `size` bytes, started and subscribed.
fn cpp_subscriber(service: &Service, topic: &str, proxy: &str, qos: &[&str], count: usize, size: usize) -> Peer {
    let mut cmd = Command::new(cpp_storm_client());
    cmd.args(["subscribe", "--manager", &service.manager, "--topic", topic, "--proxy", proxy])
        .args(["--expect", &count.to_string(), "--size", &size.to_string(), "--timeout", "20"])
        .stderr(Stdio::inherit());
    for q in qos {
        cmd.args(["--qos", q]);
    }
    start_until_keep(cmd, "subscriber ready")
}

/// Runs the C++ publisher: `count` ticks of `size` bytes to `topic`, sent `mode` (oneway,
/// twoway or batch, flushed every 100); returns how long it took.
fn cpp_publish(service: &Service, topic: &str, mode: &str, count: usize, size: usize) -> Duration {
    let started = Instant::now();
    let mut cmd = Command::new(cpp_storm_client());
    cmd.args(["publish", "--manager", &service.manager, "--topic", topic, "--mode", mode])
        .args(["--count", &count.to_string(), "--size", &size.to_string(), "--flush-every", "100"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let out = cmd.output().unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains(&format!("published {count}")),
        "{:?} C++ publisher ({mode}) failed: {} {}",
        service.kind,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    started.elapsed()
}

/// The C++ subscribers of every kind: oneway, twoway, twoway with ordered reliability, and
/// batch oneway.
const CPP_SUBSCRIBERS: [(&str, &str, &[&str]); 4] = [
    ("oneway", "oneway", &[]),
    ("twoway", "twoway", &[]),
    ("ordered", "twoway", &["reliability=ordered"]),
    ("batch", "batch", &[]),
];

/// For each publishing mode (oneway, batched, twoway), a C++ publisher sends 2,000 ticks of
/// 100 bytes to a topic with C++ subscribers of every kind, and each of them gets every tick
/// exactly once, in order, with its payload.
fn cpp_peers(service: &Service) {
    let (count, size) = (2000, 100);
    cpp_storm_client(); // built before the clock starts
    for mode in ["oneway", "batch", "twoway"] {
        let topic = format!("cpp-{mode}");
        let started = Instant::now();
        let subscribers: Vec<(&str, Peer)> = CPP_SUBSCRIBERS
            .iter()
            .map(|(name, proxy, qos)| (*name, cpp_subscriber(service, &topic, proxy, qos, count, size)))
            .collect();
        let sent = cpp_publish(service, &topic, mode, count, size);
        for (name, sub) in subscribers {
            let text = sub.finish(Duration::from_secs(25));
            assert!(
                text.contains(&format!("received {count} in order")),
                "{:?}: C++ {mode} publisher to the C++ {name} subscriber: {text}",
                service.kind
            );
        }
        eprintln!(
            "{:?}: C++ {mode} publisher, {count} ticks sent in {sent:?}, all 4 C++ subscribers done in {:?}",
            service.kind,
            started.elapsed()
        );
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{:?}: {mode} round took {:?}",
            service.kind,
            started.elapsed()
        );
    }
}

/// Mixed peers: a C++ publisher to a Python subscriber, and a floe publisher to C++
/// subscribers (twoway ordered, and oneway).
fn mixed_cpp_peers(service: &Service) {
    let (count, size) = (1000, 100);
    let started = Instant::now();
    cpp_storm_client();
    // C++ publisher → Ice Python subscriber.
    let mut cmd = python_peer(&[
        "subscribe",
        "--manager",
        &service.manager,
        "--topic",
        "cpp-to-python",
        "--mode",
        "twoway",
        "--expect",
        &count.to_string(),
        "--size",
        &size.to_string(),
    ]);
    cmd.stderr(Stdio::inherit());
    let python = start_until_keep(cmd, "subscriber ready");
    cpp_publish(service, "cpp-to-python", "oneway", count, size);
    let text = python.finish(Duration::from_secs(25));
    assert!(text.contains(&format!("received {count} in order")), "{:?}: C++ → Python: {text}", service.kind);

    // floe publisher → C++ subscribers.
    let ordered = cpp_subscriber(service, "floe-to-cpp", "twoway", &["reliability=ordered"], count, size);
    let oneway = cpp_subscriber(service, "floe-to-cpp", "oneway", &[], count, size);
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let topic = manager(&c, service).retrieve("floe-to-cpp").await.unwrap().unwrap();
        let publisher = topic.get_publisher().await.unwrap().unwrap();
        let (oneway, batch) = (publisher.ice_oneway(), publisher.ice_batch_oneway());
        for seq in 0..count as i32 {
            let p = if seq % 2 == 0 { &oneway } else { &batch };
            tick(p, seq, &cpp_payload(seq, size), None).await.unwrap();
            if seq % 2 == 1 {
                // A batched tick is flushed before the next oneway one, so they stay in order.
                batch.ice_flush_batch_requests().await.unwrap();
            }
        }
    });
    c.destroy_blocking();
    for (name, sub) in [("ordered", ordered), ("oneway", oneway)] {
        let text = sub.finish(Duration::from_secs(25));
        assert!(text.contains(&format!("received {count} in order")), "{:?}: floe → C++ {name}: {text}", service.kind);
    }
    eprintln!("{:?}: mixed C++, Python and floe peers done in {:?}", service.kind, started.elapsed());
}

#[test]
fn ice_cpp_peers_through_floe_storm() {
    let storm = floe_storm("cpp", &[]);
    cpp_peers(&storm);
}

#[test]
fn ice_cpp_peers_through_icestorm() {
    let storm = icestorm("cpp", &[]);
    cpp_peers(&storm);
}

#[test]
fn ice_cpp_python_and_floe_peers_through_floe_storm() {
    let storm = floe_storm("cpp-mixed", &[]);
    mixed_cpp_peers(&storm);
}

#[test]
fn ice_cpp_python_and_floe_peers_through_icestorm() {
    let storm = icestorm("cpp-mixed", &[]);
    mixed_cpp_peers(&storm);
}

// ---- floe's own peers

#[derive(Debug, Clone)]
struct Tick {
    seq: i32,
    len: usize,
    ctx: Context,
}

/// A floe subscriber servant that keeps the ticks it receives.
fn collector() -> (Arc<Mutex<Vec<Tick>>>, Arc<dyn Dispatcher>) {
    let ticks = Arc::new(Mutex::new(Vec::new()));
    let t = ticks.clone();
    let servant = move |request: IncomingRequest| -> DispatchFuture {
        if request.current.operation == "tick" {
            let mut d = request.plain_decoder();
            let seq = d.read_i32().unwrap_or(-1);
            let len = d.read_size().unwrap_or(0);
            t.lock().unwrap().push(Tick { seq, len, ctx: request.current.ctx.clone().into_context() });
        }
        let reply = request.current.ok(|_| {});
        Box::pin(async move { reply })
    };
    (ticks, Arc::new(servant))
}

/// Waits (up to `limit`) until `ticks` has `n` ticks, then a little longer for extra ones.
async fn wait_ticks(ticks: &Mutex<Vec<Tick>>, n: usize, limit: Duration) -> Vec<Tick> {
    let deadline = Instant::now() + limit;
    while ticks.lock().unwrap().len() < n && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    ticks.lock().unwrap().clone()
}

fn seqs(ticks: &[Tick]) -> Vec<i32> {
    ticks.iter().map(|t| t.seq).collect()
}

/// Checks that `ticks` are exactly 0..n in order, with a short message when not.
fn assert_all_in_order(ticks: &[Tick], n: i32, what: &str) {
    let got = seqs(ticks);
    if got != (0..n).collect::<Vec<_>>() {
        let first_wrong = got.iter().enumerate().find(|(i, s)| **s != *i as i32).map(|(i, _)| i);
        panic!(
            "{what}: {} ticks instead of {n}, first out of place at {first_wrong:?}, last {:?}",
            got.len(),
            got.last()
        );
    }
}

async fn tick(publisher: &ObjectPrx, seq: i32, payload: &[u8], ctx: Option<&Context>) -> floe::Result<()> {
    publisher
        .invoke("tick", OperationMode::Normal, ctx, |e| {
            e.write_i32(seq);
            e.write_size(payload.len());
            e.write_raw(payload);
        })
        .await
        .map(|_| ())
}

fn manager(c: &Communicator, service: &Service) -> TopicManagerPrx {
    TopicManagerPrx::from_object(c.string_to_proxy(&service.manager).unwrap())
}

async fn create(m: &TopicManagerPrx, name: &str) -> TopicPrx {
    m.create(name).await.unwrap().unwrap()
}

fn qos(pairs: &[(&str, &str)]) -> std::collections::HashMap<floe::CompactString, floe::CompactString> {
    pairs.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()
}

/// floe subscribers (oneway, twoway, ordered, batch) and a floe publisher (oneway, batched,
/// twoway), with the topic manager's and topics' answers and exceptions.
fn floe_peers(service: &Service) {
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let m = manager(&c, service);
        let topic = create(&m, "floe").await;
        assert!(matches!(m.create("floe").await, Err(CallError::User(TopicManagerCreateError::TopicExists(e))) if e.name == "floe"));
        assert!(matches!(m.retrieve("nope").await, Err(CallError::User(TopicManagerRetrieveError::NoSuchTopic(e))) if e.name == "nope"));
        assert_eq!(m.retrieve("floe").await.unwrap().unwrap().as_object().ice_get_identity(), topic.as_object().ice_get_identity());
        assert!(m.retrieve_all().await.unwrap().contains_key("floe"));
        assert_eq!(topic.get_name().await.unwrap(), "floe");
        assert_eq!(id_str(topic.as_object().ice_get_identity()), "IceStorm/topic.floe");

        let adapter = c.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let mut subscribers = Vec::new();
        for (mode, q) in [("oneway", vec![]), ("twoway", vec![]), ("ordered", vec![("reliability", "ordered")]), ("batch", vec![])] {
            let (ticks, servant) = collector();
            let proxy = adapter.add_with_uuid(servant);
            let proxy = match mode {
                "oneway" => proxy.ice_oneway(),
                "batch" => proxy.ice_batch_oneway(),
                _ => proxy,
            };
            let publisher = topic.subscribe_and_get_publisher(&qos(&q), Some(&proxy)).await.unwrap();
            assert!(publisher.is_some(), "{mode}: no per-subscriber publisher");
            subscribers.push((mode, proxy, ticks));
        }
        // The same identity again; a bad reliability; ordered over oneway; a null proxy.
        let again = topic.subscribe_and_get_publisher(&qos(&[]), Some(&subscribers[0].1)).await;
        assert!(matches!(again, Err(CallError::User(TopicSubscribeAndGetPublisherError::AlreadySubscribed(_)))), "{again:?}");
        let other = adapter.create_proxy(floe::Identity::new("other"));
        let bad = topic.subscribe_and_get_publisher(&qos(&[("reliability", "perfect")]), Some(&other)).await;
        assert!(matches!(bad, Err(CallError::User(TopicSubscribeAndGetPublisherError::BadQoS(_)))), "{bad:?}");
        let bad = topic.subscribe_and_get_publisher(&qos(&[("reliability", "ordered")]), Some(&other.ice_oneway())).await;
        assert!(matches!(bad, Err(CallError::User(TopicSubscribeAndGetPublisherError::BadQoS(_)))), "{bad:?}");
        let null = topic.subscribe_and_get_publisher(&qos(&[]), None).await;
        assert!(matches!(null, Err(CallError::User(TopicSubscribeAndGetPublisherError::InvalidSubscriber(_)))), "{null:?}");
        let mut ids: Vec<String> = topic.get_subscribers().await.unwrap().iter().map(id_str).collect();
        ids.sort();
        let mut expected: Vec<String> = subscribers.iter().map(|s| id_str(s.1.ice_get_identity())).collect();
        expected.sort();
        assert_eq!(ids, expected);

        // 900 ticks: 300 oneway, 300 batched, 300 twoway, 1 kB each.
        let publisher = topic.get_publisher().await.unwrap().unwrap();
        let (oneway, batch, twoway) = (publisher.ice_oneway(), publisher.ice_batch_oneway(), publisher.ice_twoway());
        let payload = vec![7u8; 1024];
        for seq in 0..900 {
            let p = match seq / 300 {
                0 => &oneway,
                1 => &batch,
                _ => &twoway,
            };
            tick(p, seq, &payload, None).await.unwrap();
            if seq % 50 == 49 || seq == 599 {
                batch.ice_flush_batch_requests().await.unwrap();
            }
        }
        for (mode, _, ticks) in &subscribers {
            let got = wait_ticks(ticks, 900, Duration::from_secs(20)).await;
            assert_all_in_order(&got, 900, &format!("{:?}: {mode} subscriber", service.kind));
            assert!(got.iter().all(|t| t.len == 1024));
        }

        // A per-subscriber publisher reaches its subscriber only.
        let (ticks, servant) = collector();
        let only = adapter.add_with_uuid(servant);
        let per = topic.subscribe_and_get_publisher(&qos(&[]), Some(&only)).await.unwrap().unwrap();
        tick(&per, 1000, b"x", None).await.unwrap();
        assert_eq!(seqs(&wait_ticks(&ticks, 1, Duration::from_secs(10)).await), vec![1000]);
        assert_eq!(seqs(&subscribers[1].2.lock().unwrap()).len(), 900, "{:?}: a per-subscriber event went to another", service.kind);

        // Unsubscribed: no more ticks.
        topic.unsubscribe(Some(&only)).await.unwrap();
        tick(&twoway, 1001, b"x", None).await.unwrap();
        let all = wait_ticks(&subscribers[1].2, 901, Duration::from_secs(10)).await;
        assert_eq!(all.len(), 901);
        assert_eq!(ticks.lock().unwrap().len(), 1, "{:?}: an unsubscribed subscriber got a tick", service.kind);

        topic.destroy().await.unwrap();
        assert!(matches!(m.retrieve("floe").await, Err(CallError::User(TopicManagerRetrieveError::NoSuchTopic(_)))));
        assert!(topic.get_name().await.is_err());
    });
    c.destroy_blocking();
}

#[test]
fn floe_peers_through_floe_storm() {
    floe_peers(&floe_storm("floe-peers", &[]));
}

#[test]
fn floe_peers_through_icestorm() {
    floe_peers(&icestorm("floe-peers", &[]));
}

/// Links: `a` → `b` with cost 5 and `a` → `c` with cost 0. An event with a `cost` context
/// above a link's cost does not cross it; events reach linked topics once (one hop).
fn links(service: &Service) {
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let m = manager(&c, service);
        let (a, b, d) = (create(&m, "a").await, create(&m, "b").await, create(&m, "c").await);
        a.link(Some(&b), 5).await.unwrap();
        a.link(Some(&d), 0).await.unwrap();
        assert!(
            matches!(a.link(Some(&b), 1).await, Err(CallError::User(TopicLinkError::LinkExists(e))) if e.name == "b")
        );
        let mut infos: Vec<(String, i32)> =
            a.get_link_info_seq().await.unwrap().into_iter().map(|l| (l.name.to_string(), l.cost)).collect();
        infos.sort();
        assert_eq!(infos, vec![("b".to_string(), 5), ("c".to_string(), 0)]);
        // b links back to a: events a forwards to b are not forwarded again.
        b.link(Some(&a), 0).await.unwrap();

        let adapter = c.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let mut collected = Vec::new();
        for t in [&a, &b, &d] {
            let (ticks, servant) = collector();
            let p = adapter.add_with_uuid(servant);
            t.subscribe_and_get_publisher(&qos(&[]), Some(&p)).await.unwrap();
            collected.push(ticks);
        }
        let publisher = a.get_publisher().await.unwrap().unwrap();
        let costly = |n: &str| Context::from([("cost".to_string(), n.to_string())]);
        tick(&publisher, 0, b"", None).await.unwrap();
        tick(&publisher, 1, b"", Some(&costly("3"))).await.unwrap();
        tick(&publisher, 2, b"", Some(&costly("9"))).await.unwrap();
        tick(&publisher, 3, b"", Some(&costly("5"))).await.unwrap();
        let got_a = wait_ticks(&collected[0], 4, Duration::from_secs(10)).await;
        let got_b = wait_ticks(&collected[1], 3, Duration::from_secs(10)).await;
        let got_c = wait_ticks(&collected[2], 4, Duration::from_secs(10)).await;
        assert_eq!(seqs(&got_a), vec![0, 1, 2, 3], "{:?}: a", service.kind);
        assert_eq!(seqs(&got_b), vec![0, 1, 3], "{:?}: b (cost 5)", service.kind);
        assert_eq!(seqs(&got_c), vec![0, 1, 2, 3], "{:?}: c (cost 0)", service.kind);
        assert_eq!(got_b[1].ctx.get("cost").map(String::as_str), Some("3"), "the context travels with the event");

        a.unlink(Some(&b)).await.unwrap();
        assert!(
            matches!(a.unlink(Some(&b)).await, Err(CallError::User(TopicUnlinkError::NoSuchLink(e))) if e.name == "b")
        );
        tick(&publisher, 4, b"", None).await.unwrap();
        let got_c = wait_ticks(&collected[2], 5, Duration::from_secs(10)).await;
        assert_eq!(seqs(&got_c), vec![0, 1, 2, 3, 4]);
        assert_eq!(
            seqs(&collected[1].lock().unwrap()),
            vec![0, 1, 3],
            "{:?}: an unlinked topic got an event",
            service.kind
        );
    });
    c.destroy_blocking();
}

#[test]
fn links_and_costs_through_floe_storm() {
    links(&floe_storm("links", &[]));
}

#[test]
fn links_and_costs_through_icestorm() {
    links(&icestorm("links", &[]));
}

#[test]
fn icestormadmin_manages_floe_storm() {
    let storm = floe_storm("admin", &["--IceStorm.InstanceName=Weather"]);
    let manager =
        format!("--IceStormAdmin.TopicManager.Default=Weather/TopicManager:tcp -h 127.0.0.1 -p {}", storm.topic_port);
    let admin = |commands: &str| {
        let out = Command::new("icestormadmin").arg(&manager).args(["-e", commands]).output().unwrap();
        (out.status.success(), String::from_utf8_lossy(&out.stdout).to_string() + &String::from_utf8_lossy(&out.stderr))
    };
    let (ok, out) =
        admin("create north south east; link north south 7; link north east; links; topics; subscribers north");
    assert!(ok, "{out}");
    for line in ["north to south with cost 7", "north to east with cost 0", "Weather/topic.south", "Weather/topic.east"]
    {
        assert!(out.contains(line), "missing {line:?} in {out}");
    }
    let (ok, out) = admin("unlink north east; destroy east; links; topics");
    assert!(ok, "{out}");
    assert!(out.contains("north to south with cost 7") && !out.contains("east"), "{out}");
    let (ok, out) = admin("create north");
    assert!(!ok && out.contains("topic `north' exists"), "{out}");
    let (ok, out) = admin("destroy nowhere");
    assert!(!ok && out.contains("nowhere"), "{out}");
}

// ---- slow, hung and dead subscribers

/// A listener that accepts connections, says ValidateConnection, and then never reads.
fn hung_listener() -> (u16, Arc<Mutex<Vec<TcpStream>>>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let kept = Arc::new(Mutex::new(Vec::new()));
    let k = kept.clone();
    std::thread::spawn(move || {
        for s in l.incoming() {
            let Ok(mut s) = s else { return };
            let _ = s.write_all(&[b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0]);
            k.lock().unwrap().push(s);
        }
    });
    (port, kept)
}

#[test]
fn hung_and_dead_subscribers_never_hold_back_the_others() {
    let storm = floe_storm(
        "slow",
        &[
            "--IceStorm.Send.Timeout=5000",
            "--Floe.Storm.QueueBytesMax=1000000",
            "--IceStorm.Discard.Interval=1",
            "--IceStorm.Trace.Subscriber=1",
        ],
    );
    let (hung_port, _kept) = hung_listener();
    let dead_port = free_port();
    // The good subscribers have a communicator (and runtime thread) of their own, so that
    // the publishing loop below never delays their replies.
    let subscribers = Communicator::new().unwrap();
    let adapter = subscribers.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
    subscribers.block_on(adapter.activate()).unwrap();
    let (ticks, servant) = collector();
    let good = adapter.add_with_uuid(servant);
    let (ticks_oneway, servant) = collector();
    let good_oneway = adapter.add_with_uuid(servant).ice_oneway();
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let m = manager(&c, &storm);
        let topic = create(&m, "slow").await;
        let hung_oneway = c.string_to_proxy(&format!("hung1 -o:tcp -h 127.0.0.1 -p {hung_port}")).unwrap();
        let hung_twoway = c.string_to_proxy(&format!("hung2:tcp -h 127.0.0.1 -p {hung_port}")).unwrap();
        let dead = c.string_to_proxy(&format!("dead:tcp -h 127.0.0.1 -p {dead_port}")).unwrap();
        // Retried, but never reachable: removed after its retries.
        let dead_retried = c.string_to_proxy(&format!("dead2 -o:tcp -h 127.0.0.1 -p {dead_port}")).unwrap();
        for p in [&hung_oneway, &hung_twoway, &dead] {
            topic.subscribe_and_get_publisher(&qos(&[]), Some(p)).await.unwrap();
        }
        topic.subscribe_and_get_publisher(&qos(&[("retryCount", "1")]), Some(&dead_retried)).await.unwrap();
        let good = c.string_to_proxy(&good.to_string()).unwrap();
        let good_oneway = c.string_to_proxy(&good_oneway.to_string()).unwrap();
        topic.subscribe_and_get_publisher(&qos(&[]), Some(&good)).await.unwrap();
        topic.subscribe_and_get_publisher(&qos(&[]), Some(&good_oneway)).await.unwrap();
        let rss_before = rss_kb(storm.server.pid());

        // 10,000 events of 1 kB (10 MB) while two subscribers read nothing.
        let publisher = topic.get_publisher().await.unwrap().unwrap().ice_oneway();
        let payload = vec![1u8; 1024];
        let started = Instant::now();
        let n = 10_000;
        let pacing_deadline = started + Duration::from_secs(30);
        for seq in 0..n {
            tick(&publisher, seq, &payload, None).await.unwrap();
            // Publish at the good subscribers' pace (at most 500 events, 0.5 MB, ahead of
            // them), so that only the hung ones fill their 1 MB queues.
            let deadline = pacing_deadline;
            while seq % 100 == 99
                && seq - 500 > ticks.lock().unwrap().len().min(ticks_oneway.lock().unwrap().len()) as i32
                && Instant::now() < deadline
            {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
        let got = wait_ticks(&ticks, n as usize, Duration::from_secs(30)).await;
        let elapsed = started.elapsed();
        assert_all_in_order(&got, n, "the good twoway subscriber");
        assert_all_in_order(
            &wait_ticks(&ticks_oneway, n as usize, Duration::from_secs(10)).await,
            n,
            "the good oneway subscriber",
        );
        eprintln!("10,000 1 kB events to the good subscribers in {elapsed:?}");
        assert!(elapsed < Duration::from_secs(20), "the good subscribers were held back: {elapsed:?}");

        // A twoway subscriber that never answers, with an event: removed after the send
        // timeout (its queue never fills).
        let hung_late = c.string_to_proxy(&format!("hung3:tcp -h 127.0.0.1 -p {hung_port}")).unwrap();
        topic.subscribe_and_get_publisher(&qos(&[]), Some(&hung_late)).await.unwrap();
        tick(&publisher, n, &payload, None).await.unwrap();

        // The hung ones are removed (full queue, send timeout), the dead ones too.
        let deadline = Instant::now() + Duration::from_secs(15);
        let mut left: Vec<String>;
        loop {
            left = topic.get_subscribers().await.unwrap().iter().map(id_str).collect();
            left.sort();
            if left.len() == 2 || Instant::now() > deadline {
                break;
            }
            // Events after the discard interval show the retried one it is still dead.
            tick(&publisher, n, &payload, None).await.unwrap();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut expected = vec![id_str(good.ice_get_identity()), id_str(good_oneway.ice_get_identity())];
        expected.sort();
        assert_eq!(left, expected);
        let rss_after = rss_kb(storm.server.pid());
        eprintln!("floe-storm resident memory: {rss_before} kB before, {rss_after} kB after");
        assert!(rss_after < rss_before + 40_000, "memory grew from {rss_before} to {rss_after} kB");
    });
    c.destroy_blocking();
    subscribers.destroy_blocking();
}

// ---- persistence

#[test]
fn topics_links_and_subscribers_survive_a_restart() {
    let dir = data_dir("restart");
    let (topic_port, publish_port, subscriber_port) = (free_port(), free_port(), free_port());
    let mut storm = floe_storm_on(&dir, topic_port, publish_port, &[]);
    let c = Communicator::new().unwrap();
    let adapter = c
        .create_object_adapter_with_endpoints("Subscribers", &format!("tcp -h 127.0.0.1 -p {subscriber_port}"))
        .unwrap();
    let (ticks_x, servant_x) = collector();
    let (ticks_y, servant_y) = collector();
    let sub_x = adapter.add(servant_x, floe::Identity::new("sub-x")).ice_oneway();
    let sub_y = adapter.add(servant_y, floe::Identity::new("sub-y"));
    c.block_on(async {
        adapter.activate().await.unwrap();
        let m = manager(&c, &storm);
        let (x, y) = (create(&m, "x").await, create(&m, "y").await);
        create(&m, "empty").await;
        x.link(Some(&y), 4).await.unwrap();
        x.subscribe_and_get_publisher(&qos(&[("retryCount", "3")]), Some(&sub_x)).await.unwrap();
        y.subscribe_and_get_publisher(&qos(&[("reliability", "ordered")]), Some(&sub_y)).await.unwrap();
    });

    // SIGTERM: a clean exit.
    unsafe { libc_kill(storm.server.pid() as i32, 15) };
    let status = wait_exit(&mut storm.server, Duration::from_secs(10));
    assert_eq!(status, Some(0), "floe-storm did not exit cleanly on SIGTERM");
    let storm = floe_storm_on(&dir, topic_port, publish_port, &[]);
    c.block_on(async {
        let m = manager(&c, &storm);
        let mut names: Vec<String> = m.retrieve_all().await.unwrap().into_keys().map(String::from).collect();
        names.sort();
        assert_eq!(names, vec!["empty", "x", "y"]);
        let x = m.retrieve("x").await.unwrap().unwrap();
        let links: Vec<(String, i32)> =
            x.get_link_info_seq().await.unwrap().into_iter().map(|l| (l.name.to_string(), l.cost)).collect();
        assert_eq!(links, vec![("y".to_string(), 4)]);
        let mut subs: Vec<String> = x.get_subscribers().await.unwrap().iter().map(id_str).collect();
        subs.sort();
        assert_eq!(subs, vec!["IceStorm/topic.y", "sub-x"]);
        // The restored subscriber is still oneway, and the ordered one is still ordered: a
        // second subscription is refused, as it is already there.
        let y = m.retrieve("y").await.unwrap().unwrap();
        let again = y.subscribe_and_get_publisher(&qos(&[]), Some(&sub_y)).await;
        assert!(matches!(again, Err(CallError::User(TopicSubscribeAndGetPublisherError::AlreadySubscribed(_)))));
        let publisher = x.get_publisher().await.unwrap().unwrap();
        for seq in 0..100 {
            tick(&publisher, seq, b"after", None).await.unwrap();
        }
        assert_all_in_order(&wait_ticks(&ticks_x, 100, Duration::from_secs(10)).await, 100, "x's restored subscriber");
        assert_all_in_order(
            &wait_ticks(&ticks_y, 100, Duration::from_secs(10)).await,
            100,
            "y's subscriber, through the restored link",
        );
    });
    c.destroy_blocking();
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

fn wait_exit(server: &mut Server, limit: Duration) -> Option<i32> {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if let Some(status) = server.0.try_wait().unwrap() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

// ---- garbage

/// Sends `bytes` on a new connection to `port` and reads until the peer closes (or 2 s).
fn send_garbage(port: u16, bytes: &[u8]) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let _ = s.write_all(bytes);
    let _ = common::closed_within(&mut s, Duration::from_secs(2));
}

/// A request message: `id`, operation `op`, mode byte `mode`, and a parameter encapsulation
/// whose header says `encaps_size` over `params`.
fn request(id: &str, op: &str, mode: u8, encaps_size: i32, params: &[u8]) -> Vec<u8> {
    let (category, name) = id.split_once('/').unwrap_or(("", id));
    let mut body = vec![];
    body.extend_from_slice(&1i32.to_le_bytes());
    for s in [name, category] {
        body.push(s.len() as u8);
        body.extend_from_slice(s.as_bytes());
    }
    body.push(0); // facet
    body.push(op.len() as u8);
    body.extend_from_slice(op.as_bytes());
    body.push(mode);
    body.push(0); // context
    body.extend_from_slice(&encaps_size.to_le_bytes());
    body.extend_from_slice(&[1, 1]);
    body.extend_from_slice(params);
    let mut msg = vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 0, 0];
    msg.extend_from_slice(&((14 + body.len()) as i32).to_le_bytes());
    msg.extend_from_slice(&body);
    msg
}

#[test]
fn garbage_on_both_endpoints_never_stops_delivery() {
    let storm = floe_storm("garbage", &[]);
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let m = manager(&c, &storm);
        let topic = create(&m, "g").await;
        let adapter = c.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let (ticks, servant) = collector();
        let sub = adapter.add_with_uuid(servant);
        topic.subscribe_and_get_publisher(&qos(&[]), Some(&sub)).await.unwrap();
        let publisher = topic.get_publisher().await.unwrap().unwrap();
        tick(&publisher, 0, b"before", None).await.unwrap();

        let (tp, pp) = (storm.topic_port, storm.publish_port);
        let garbage: Vec<Vec<u8>> = vec![
            b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec(),
            (0..4096u32).map(|i| (i.wrapping_mul(2654435761) >> 13) as u8).collect(),
            vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f],
            vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 0, 0, 3, 0, 0, 0],
            // create with a truncated string, retrieve with a negative size.
            request("IceStorm/TopicManager", "create", 0, 12, &[200, b'a']),
            request("IceStorm/TopicManager", "retrieve", 2, -5, &[]),
            // subscribeAndGetPublisher with a QoS of a huge count.
            request("IceStorm/topic.g", "subscribeAndGetPublisher", 0, 11, &[0xff, 0xff, 0xff, 0xff, 0x7f]),
            // A link forward with an event whose encapsulation lies about its size.
            request("IceStorm/g.link", "forward", 0, 6 + 9, &[1, 1, b't', 0, 3, 0x40, 0, 0, 0]),
            // An event with an invalid mode byte and a lying encapsulation.
            request("IceStorm/g.publish", "tick", 9, 100, &[1, 2, 3]),
        ];
        for g in &garbage {
            send_garbage(tp, g);
            send_garbage(pp, g);
        }
        // A batch announcing a million requests.
        let mut batch = vec![b'I', b'c', b'e', b'P', 1, 0, 1, 0, 1, 0, 18, 0, 0, 0];
        batch.extend_from_slice(&1_000_000i32.to_le_bytes());
        send_garbage(pp, &batch);

        tick(&publisher, 1, b"after", None).await.unwrap();
        let got = wait_ticks(&ticks, 2, Duration::from_secs(10)).await;
        assert_eq!(seqs(&got), vec![0, 1], "delivery stopped after garbage");
        assert_eq!(m.retrieve_all().await.unwrap().len(), 1);
    });
    c.destroy_blocking();
}

/// Links between the two services, both ways: a floe-storm topic linked to an IceStorm topic
/// (IceStorm's link object receives floe-storm's `forward`), and an IceStorm topic linked to
/// a floe-storm topic (floe-storm answers IceStorm's `getLinkProxy` and `forward`).
#[test]
fn links_between_floe_storm_and_icestorm() {
    let floe = floe_storm("cross", &[]);
    let ice = icestorm("cross", &[]);
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let (mf, mi) = (manager(&c, &floe), manager(&c, &ice));
        let (fa, ib) = (create(&mf, "fa").await, create(&mi, "ib").await);
        let (ia, fb) = (create(&mi, "ia").await, create(&mf, "fb").await);
        fa.link(Some(&ib), 3).await.unwrap();
        ia.link(Some(&fb), 0).await.unwrap();
        let infos: Vec<(String, i32)> =
            fa.get_link_info_seq().await.unwrap().into_iter().map(|l| (l.name.to_string(), l.cost)).collect();
        assert_eq!(infos, vec![("ib".to_string(), 3)]);
        let adapter = c.create_object_adapter_with_endpoints("Subscribers", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let (on_ice, servant) = collector();
        ib.subscribe_and_get_publisher(&qos(&[]), Some(&adapter.add_with_uuid(servant))).await.unwrap();
        let (on_floe, servant) = collector();
        fb.subscribe_and_get_publisher(&qos(&[]), Some(&adapter.add_with_uuid(servant).ice_oneway())).await.unwrap();
        let (to_fa, to_ia) = (fa.get_publisher().await.unwrap().unwrap(), ia.get_publisher().await.unwrap().unwrap());
        let expensive = Context::from([("cost".to_string(), "7".to_string())]);
        for seq in 0..200 {
            tick(&to_fa, seq, b"floe to ice", None).await.unwrap();
            tick(&to_ia, seq, b"ice to floe", None).await.unwrap();
        }
        // Above the floe-storm link's cost: not forwarded to IceStorm.
        tick(&to_fa, 999, b"", Some(&expensive)).await.unwrap();
        tick(&to_fa, 200, b"", None).await.unwrap();
        tick(&to_ia, 200, b"", None).await.unwrap();
        assert_all_in_order(&wait_ticks(&on_ice, 201, Duration::from_secs(15)).await, 201, "floe-storm → IceStorm");
        assert_all_in_order(&wait_ticks(&on_floe, 201, Duration::from_secs(15)).await, 201, "IceStorm → floe-storm");
    });
    c.destroy_blocking();
}

/// `createOrRetrieve(name)` as an Ice 3.8 client sends it (IceStorm 3.8's topic manager
/// operation, absent from 3.7's Slice): the topic of that name, created when there is none.
async fn create_or_retrieve(m: &TopicManagerPrx, name: &str) -> floe::Result<Option<TopicPrx>> {
    m.as_object()
        .invoke("createOrRetrieve", OperationMode::Normal, None, |e| e.write_str(name))
        .await?
        .expect("a twoway call has an outcome")
        .decode(floe::encoding::Decode::decode)
}

#[test]
fn floe_storm_answers_create_or_retrieve_as_ice_38_does() {
    let service = floe_storm("create-or-retrieve", &[]);
    let c = Communicator::new().unwrap();
    c.block_on(async {
        let m = manager(&c, &service);
        let made = create_or_retrieve(&m, "fresh").await.unwrap().expect("a topic");
        assert_eq!(made.get_name().await.unwrap(), "fresh");
        let again = create_or_retrieve(&m, "fresh").await.unwrap().expect("a topic");
        assert_eq!(again.as_object().reference().wire.identity, made.as_object().reference().wire.identity);
        let existing = create(&m, "existing").await;
        let found = create_or_retrieve(&m, "existing").await.unwrap().expect("a topic");
        assert_eq!(found.as_object().reference().wire.identity, existing.as_object().reference().wire.identity);
        assert_eq!(m.retrieve("fresh").await.unwrap().unwrap().get_name().await.unwrap(), "fresh");
        // Bad parameters get a typed error, and the manager goes on.
        let garbage = m.as_object().invoke("createOrRetrieve", OperationMode::Normal, None, |e| e.write_size(9)).await;
        assert!(garbage.is_err(), "truncated string: {garbage:?}");
        let mut names: Vec<String> = m.retrieve_all().await.unwrap().into_keys().map(String::from).collect();
        names.sort();
        assert_eq!(names, ["existing", "fresh"]);
    });
    drop(service);
}
