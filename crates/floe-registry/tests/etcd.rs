//! floe-registry replicas sharing one etcd cluster (`Floe.Registry.Etcd.Endpoints`): a real
//! three-member etcd cluster on loopback, started here and killed at the end. Registrations
//! made through one replica are seen by the others; clients whose locator proxy lists every
//! replica keep resolving, without one failed call, while a replica and then an etcd member
//! (the leader) are killed; deployed applications are served by every replica and outlive the
//! one that deployed them; registrations outlive a dead replica but expire once no replica renews their
//! lease, and those of servers that died expire when adapter checks are on. Skipped, with the reason printed, where `/usr/bin/etcd` is missing
//! (`scripts/install-deps` installs Debian's etcd-server).

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::*;
use floe::{Communicator, Identity, Properties, Proxy};
use floe_registry::slice::ice::{LocatorFindAdapterByIdError, LocatorPrx, LocatorRegistryPrx};
use floe_registry::slice::ice_grid;

#[path = "../../../tests/support/etcd_cluster.rs"]
mod etcd_cluster;
use etcd_cluster::EtcdCluster;

/// Starts the cluster (None, with the reason printed, where etcd is missing).
fn start_cluster(name: &str) -> Option<EtcdCluster> {
    EtcdCluster::start(name, Path::new(env!("CARGO_TARGET_TMPDIR")))
}

fn endpoints_property(cluster: &EtcdCluster) -> String {
    format!("--Floe.Registry.Etcd.Endpoints={}", cluster.endpoints())
}

/// A floe-registry replica on `port` using the cluster, with `extra` arguments.
fn replica(cluster: &EtcdCluster, port: u16, name: &str, extra: &[&str]) -> Server {
    replica_of(&endpoints_property(cluster), port, name, extra)
}

/// A floe-registry replica on `port` using the etcd members of `endpoints` (the property).
fn replica_of(endpoints: &str, port: u16, name: &str, extra: &[&str]) -> Server {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_floe-registry"));
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.DynamicRegistration=1",
        "--IceGrid.Registry.AdminPermissionsVerifier=TestGrid/NullPermissionsVerifier",
        &format!("--IceGrid.Registry.ReplicaName={name}"),
        endpoints,
        // The cluster may still be electing its first leader.
        "--Floe.Registry.Etcd.Timeout=20",
    ])
    .args(extra)
    // Each replica's log (its etcd traffic included) stays beside the test's data, for a
    // failure to be read.
    .env("RUST_LOG", "warn,floe_registry::etcd=debug,floe_service::etcd=debug")
    .env("NO_COLOR", "1")
    .stderr(replica_log(name, port));
    start_until(cmd, "ready")
}

thread_local! {
    /// The logs of the replicas that this test started.
    static REPLICA_LOGS: std::cell::RefCell<Vec<PathBuf>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// The file that a replica's standard error goes to:
/// `<CARGO_TARGET_TMPDIR>/etcd-replica-logs/<name>-<port>.log`. When the test fails, the
/// end of each of its replicas' logs is printed with the failure.
fn replica_log(name: &str, port: u16) -> Stdio {
    static HOOK: std::sync::Once = std::sync::Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            previous(info);
            let _ = REPLICA_LOGS.try_with(|logs| {
                for path in logs.borrow().iter() {
                    let text = std::fs::read_to_string(path).unwrap_or_default();
                    let lines: Vec<&str> = text.lines().collect();
                    let tail = lines[lines.len().saturating_sub(40)..].join("\n");
                    eprintln!("---- {} (last {} lines)\n{tail}", path.display(), lines.len().min(40));
                }
            });
        }));
    });
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("etcd-replica-logs");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!("{name}-{port}.log"));
    let file = std::fs::File::create(&path).unwrap();
    REPLICA_LOGS.with(|logs| logs.borrow_mut().push(path));
    Stdio::from(file)
}

/// A locator proxy listing the replicas on `ports`.
fn locator_of(ports: &[u16]) -> String {
    let endpoints: Vec<String> = ports.iter().map(|p| format!("tcp -h 127.0.0.1 -p {p}")).collect();
    format!("{INSTANCE}/Locator:{}", endpoints.join(":"))
}

fn communicator() -> Communicator {
    let props = Properties::new();
    props.set("Ice.Default.InvocationTimeout", "5000");
    Communicator::with_properties(props).unwrap()
}

fn locator_prx(c: &Communicator, ports: &[u16]) -> LocatorPrx {
    LocatorPrx::from_object(c.string_to_proxy(&locator_of(ports)).unwrap())
}

/// Registers adapter `id` (in `group` when not empty) through the replica on `port`, with
/// endpoints on `server_port`.
async fn register(c: &Communicator, port: u16, id: &str, group: &str, server_port: u16) {
    let registry: LocatorRegistryPrx = locator_prx(c, &[port]).get_registry().await.unwrap().unwrap();
    let proxy = c.string_to_proxy(&format!("dummy:tcp -h 127.0.0.1 -p {server_port}")).unwrap();
    if group.is_empty() {
        registry.set_adapter_direct_proxy(id, Some(&proxy)).await.unwrap();
    } else {
        registry.set_replicated_adapter_direct_proxy(id, group, Some(&proxy)).await.unwrap();
    }
}

/// Waits (up to 5 s) until the replica on `port` finds the well-known object `name`.
async fn found_object(c: &Communicator, port: u16, name: &str) -> Option<floe::ObjectPrx> {
    let locator = locator_prx(c, &[port]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match locator.find_object_by_id(&Identity::new(name)).await {
            Ok(Some(p)) => return Some(p),
            _ if Instant::now() > deadline => return None,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

/// Waits (up to 5 s) until the replica on `port` resolves adapter `id`; returns its port.
async fn resolved_port(c: &Communicator, port: u16, id: &str) -> Option<i32> {
    let locator = locator_prx(c, &[port]);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        match locator.find_adapter_by_id(id).await {
            Ok(Some(p)) => {
                return p.reference().wire.endpoints.iter().find_map(|e| match e {
                    floe::encoding::EndpointData::Tcp(ip) => Some(ip.port),
                    _ => None,
                })
            }
            _ if Instant::now() > deadline => return None,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
}

async fn is_adapter_not_found(c: &Communicator, port: u16, id: &str) -> bool {
    matches!(
        locator_prx(c, &[port]).find_adapter_by_id(id).await.map_err(|e| e.user()),
        Err(Some(LocatorFindAdapterByIdError::AdapterNotFoundException(_)))
    )
}

/// Adds a well-known object through an admin session on the replica at `port`.
async fn add_object(c: &Communicator, port: u16, proxy: &str, type_id: &str) {
    let locator = ice_grid::LocatorPrx::from_object(c.string_to_proxy(&locator_of(&[port])).unwrap());
    let registry = locator.get_local_registry().await.unwrap().unwrap();
    let session = registry.create_admin_session("admin", "x").await.unwrap().unwrap();
    let admin = session.get_admin().await.unwrap().unwrap();
    admin.add_object_with_type(Some(&c.string_to_proxy(proxy).unwrap()), type_id).await.unwrap();
    session.destroy().await.unwrap();
}

/// Ice for Python's client resolving in a loop through `locator`, until `stop` exists.
fn python_loop(locator: &str, adapter: &str, object: &str, stop: &Path) -> Option<Server> {
    if !Path::new("/usr/bin/python3").exists() {
        return None;
    }
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/resolve_loop.py"))
        .args([locator, adapter, object])
        .arg(stop);
    Some(start_until(cmd, "started"))
}

#[test]
fn replicas_share_one_etcd_cluster_and_clients_resolve_through_failures() {
    let Some(mut cluster) = start_cluster("etcd-failover") else { return };
    let (p1, p2) = (free_port(), free_port());
    // Each replica publishes the locator registry endpoints of both, so that the locator
    // registry proxy a server gets (and Ice caches) reaches either.
    let (s1, s2) = (free_port(), free_port());
    let published =
        format!("--IceGrid.Registry.Server.PublishedEndpoints=tcp -h 127.0.0.1 -p {s1}:tcp -h 127.0.0.1 -p {s2}");
    let server = |port: u16| format!("--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1 -p {port}");
    let ttl = "--Floe.Registry.Etcd.LeaseTTL=2";
    let mut r1 = Some(replica(&cluster, p1, "Replica1", &[ttl, &server(s1), &published]));
    let _r2 = replica(&cluster, p2, "Replica2", &[ttl, &server(s2), &published]);
    let c = communicator();
    let stop_file = TempDir::new("etcd-failover-stop");
    let stop_path: PathBuf = stop_file.0.join("stop");
    runtime().block_on(async {
        // The locator registry proxy of replica 1, as a server would keep it.
        let cached_registry: LocatorRegistryPrx = locator_prx(&c, &[p1]).get_registry().await.unwrap().unwrap();
        assert_eq!(cached_registry.as_object().reference().wire.endpoints.len(), 2);
        cached_registry.ice_ping().await.unwrap();
        // What one replica registers, the other resolves.
        register(&c, p1, "Hello-1", "Hello", 10001).await;
        register(&c, p1, "Hello-2", "Hello", 10002).await;
        register(&c, p2, "Solo", "", 10003).await;
        assert_eq!(resolved_port(&c, p2, "Hello-1").await, Some(10001));
        assert_eq!(resolved_port(&c, p1, "Solo").await, Some(10003));
        let group = locator_prx(&c, &[p2]).find_adapter_by_id("Hello").await.unwrap().unwrap();
        assert_eq!(group.reference().wire.endpoints.len(), 2);
        add_object(&c, p2, "hello @ Hello", "::Demo::Hello").await;
        // Replica 1 learns of it through its etcd watch, a moment later.
        let found = found_object(&c, p1, "hello").await.expect("replica 1 sees the object added through replica 2");
        assert_eq!(found.reference().wire.adapter_id, "Hello");
        // Each replica lists its own objects, not the other's.
        let own = locator_prx(&c, &[p1]).find_object_by_id(&Identity::with_category(INSTANCE, "Locator")).await;
        assert!(own.unwrap().unwrap().to_string().contains(&format!("-p {p1}")));

        // Clients whose locator lists both replicas, resolving in a loop: floe's (two
        // tasks) and Ice for Python's.
        let python = python_loop(&locator_of(&[p1, p2]), "Hello", "hello", &stop_path);
        let stop = Arc::new(AtomicBool::new(false));
        let (ok, failed) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let first_error = Arc::new(std::sync::Mutex::new(None::<String>));
        let mut loops = Vec::new();
        for _ in 0..2 {
            let locator = locator_prx(&c, &[p1, p2]);
            let (stop, ok, failed, first_error) = (stop.clone(), ok.clone(), failed.clone(), first_error.clone());
            loops.push(tokio::spawn(async move {
                let hello = Identity::new("hello");
                let deadline = Instant::now() + Duration::from_secs(40);
                while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                    let a = locator.find_adapter_by_id("Hello").await;
                    let o = locator.find_object_by_id(&hello).await;
                    match (a, o) {
                        (Ok(Some(_)), Ok(Some(_))) => ok.fetch_add(1, Ordering::Relaxed),
                        (a, o) => {
                            first_error.lock().unwrap().get_or_insert(format!("{a:?} {o:?}"));
                            failed.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                }
            }));
        }
        let pause = || tokio::time::sleep(Duration::from_millis(1500));
        pause().await;
        let before_kill = ok.load(Ordering::Relaxed);
        // Kill replica 1 (SIGKILL): clients move to replica 2.
        drop(r1.take());
        pause().await;
        let after_replica = ok.load(Ordering::Relaxed);
        // Kill the etcd leader: the replicas go on with the other two members.
        let leader = cluster.leader().await;
        cluster.kill(leader);
        // Writes go on too: register through the surviving replica.
        register(&c, p2, "Late", "", 10004).await;
        assert_eq!(resolved_port(&c, p2, "Late").await, Some(10004));
        // And through the locator registry proxy obtained from the replica that died.
        let proxy = c.string_to_proxy("dummy:tcp -h 127.0.0.1 -p 10005").unwrap();
        cached_registry.set_adapter_direct_proxy("Later", Some(&proxy)).await.unwrap();
        assert_eq!(resolved_port(&c, p2, "Later").await, Some(10005));
        // Longer than the lease's TTL: what replica 1 registered stays, as replica 2 keeps
        // the registrations' lease alive.
        tokio::time::sleep(Duration::from_secs(3)).await;
        stop.store(true, Ordering::Relaxed);
        for l in loops {
            l.await.unwrap();
        }
        let (ok, failed) = (ok.load(Ordering::Relaxed), failed.load(Ordering::Relaxed));
        println!("floe: {ok} resolutions, {failed} failed; {before_kill} before the replica was killed, {after_replica} before the etcd member was");
        assert_eq!(failed, 0, "failed resolutions, the first: {:?}", first_error.lock().unwrap());
        assert!(after_replica > before_kill && ok > after_replica, "resolutions stopped: {before_kill} {after_replica} {ok}");
        assert_eq!(resolved_port(&c, p2, "Hello-1").await, Some(10001));
        assert_eq!(resolved_port(&c, p2, "Solo").await, Some(10003));

        if let Some(mut python) = python {
            std::fs::write(&stop_path, b"").unwrap();
            let deadline = Instant::now() + Duration::from_secs(10);
            while python.is_running() && Instant::now() < deadline {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            let out = python.output.lock().unwrap().clone();
            println!("Ice for Python: {}", out.trim());
            let line = out.lines().find(|l| l.starts_with("ok ")).expect("the Python client's summary");
            let n: Vec<usize> = line.split(' ').filter_map(|w| w.parse().ok()).collect();
            assert!(n.len() >= 2 && n[0] > 0 && n[1] == 0, "Ice for Python: {line}");
        }
    });
}

#[test]
fn adapters_of_servers_that_died_expire_on_every_replica() {
    let Some(cluster) = start_cluster("etcd-checks") else { return };
    let (p1, p2) = (free_port(), free_port());
    let checks = ["--Floe.Registry.AdapterCheck.Interval=1", "--Floe.Registry.AdapterCheck.Failures=2"];
    let _r1 = replica(&cluster, p1, "Replica1", &checks);
    let _r2 = replica(&cluster, p2, "Replica2", &checks);
    let c = communicator();
    runtime().block_on(async {
        let server = Communicator::with_properties(Properties::new()).unwrap();
        let adapter = server.create_object_adapter_with_endpoints("Live", "tcp -h 127.0.0.1").unwrap();
        adapter.activate().await.unwrap();
        let live = adapter.create_direct_proxy(Identity::new("dummy"));
        let registry: LocatorRegistryPrx = locator_prx(&c, &[p1]).get_registry().await.unwrap().unwrap();
        registry.set_adapter_direct_proxy("Live", Some(&live)).await.unwrap();
        // Nothing listens there: a server that died without unregistering.
        register(&c, p1, "Dead", "", free_port()).await;
        assert!(resolved_port(&c, p2, "Dead").await.is_some());
        let deadline = Instant::now() + Duration::from_secs(8);
        while !(is_adapter_not_found(&c, p1, "Dead").await && is_adapter_not_found(&c, p2, "Dead").await) {
            assert!(Instant::now() < deadline, "Dead is still registered");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        assert!(resolved_port(&c, p2, "Live").await.is_some());
        assert!(resolved_port(&c, p1, "Live").await.is_some());
        server.destroy().await;
    });
}

#[test]
fn registrations_outlive_a_replica_and_expire_with_the_last_one() {
    let Some(cluster) = start_cluster("etcd-lease") else { return };
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let ttl = "--Floe.Registry.Etcd.LeaseTTL=2";
    let r1 = replica(&cluster, p1, "Replica1", &[ttl]);
    let r2 = replica(&cluster, p2, "Replica2", &[ttl]);
    let c = communicator();
    runtime().block_on(async {
        // Registrations that arrive together (written to etcd in a few transactions).
        let mut together = tokio::task::JoinSet::new();
        for i in 0..300u16 {
            let c = c.clone();
            together.spawn(async move { register(&c, p1, &format!("Many-{i}"), "Many", 20000 + i).await });
        }
        while let Some(r) = together.join_next().await {
            r.unwrap();
        }
        // All through replica 1 at once (it has read its own writes), through replica 2 soon.
        let many = locator_prx(&c, &[p1]).find_adapter_by_id("Many").await.unwrap().unwrap();
        assert_eq!(many.reference().wire.endpoints.len(), 300);
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let many = locator_prx(&c, &[p2]).find_adapter_by_id("Many").await.unwrap().unwrap();
            if many.reference().wire.endpoints.len() == 300 {
                break;
            }
            assert!(Instant::now() < deadline, "replica 2 has {} of 300", many.reference().wire.endpoints.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        register(&c, p1, "Through1", "", 10001).await;
        add_object(&c, p1, "kept @ Through1", "::Demo::Kept").await;
        assert_eq!(resolved_port(&c, p2, "Through1").await, Some(10001));
        // A replica that stops (here on SIGTERM) leaves its registrations to the others.
        assert!(r1.terminate().success());
        tokio::time::sleep(Duration::from_secs(3)).await;
        assert_eq!(resolved_port(&c, p2, "Through1").await, Some(10001));
        // Unregistering through another replica than the one registered with works.
        register(&c, p2, "Gone", "", 10002).await;
        let registry: LocatorRegistryPrx = locator_prx(&c, &[p2]).get_registry().await.unwrap().unwrap();
        registry.set_adapter_direct_proxy("Gone", None).await.unwrap();
        assert!(is_adapter_not_found(&c, p2, "Gone").await);
    });
    // With no replica left to renew it, the lease expires with the registrations; the
    // well-known objects (added by an administrator) stay.
    drop(r2);
    std::thread::sleep(Duration::from_secs(4));
    let _r3 = replica(&cluster, p3, "Replica3", &[ttl]);
    runtime().block_on(async {
        assert!(is_adapter_not_found(&c, p3, "Through1").await);
        let kept = locator_prx(&c, &[p3]).find_object_by_id(&Identity::new("kept")).await.unwrap();
        assert!(kept.is_some());
        // And the new replica registers again under a new lease.
        register(&c, p3, "Through3", "", 10003).await;
        assert_eq!(resolved_port(&c, p3, "Through3").await, Some(10003));
    });
}

#[test]
fn a_replica_cut_off_while_etcd_compacted_reads_everything_again() {
    let Some(mut cluster) = start_cluster("etcd-compact") else { return };
    let (p1, p2) = (free_port(), free_port());
    // Replica 1 knows only member 0; replica 2 the two others.
    let only_first = format!("--Floe.Registry.Etcd.Endpoints={}", cluster.client_urls[0]);
    let others = format!("--Floe.Registry.Etcd.Endpoints={},{}", cluster.client_urls[1], cluster.client_urls[2]);
    let _r1 = replica_of(&only_first, p1, "Replica1", &[]);
    let _r2 = replica_of(&others, p2, "Replica2", &[]);
    let c = communicator();
    runtime().block_on(async {
        register(&c, p2, "Stays", "", 10001).await;
        register(&c, p2, "Leaves", "", 10002).await;
        register(&c, p2, "Moves", "", 10003).await;
        assert_eq!(resolved_port(&c, p1, "Leaves").await, Some(10002));
        // Replica 1 loses its member; meanwhile the state changes and etcd compacts its
        // history, so that its watch cannot resume where it stopped.
        cluster.kill(0);
        let registry: LocatorRegistryPrx = locator_prx(&c, &[p2]).get_registry().await.unwrap().unwrap();
        registry.set_adapter_direct_proxy("Leaves", None).await.unwrap();
        register(&c, p2, "Moves", "", 10004).await;
        register(&c, p2, "Arrives", "", 10005).await;
        let mut etcd = etcd_client::Client::connect([&cluster.client_urls[1]], None).await.unwrap();
        let revision = etcd.get("/", None).await.unwrap().header().unwrap().revision();
        etcd.compact(revision, None).await.unwrap();
        // Still the old state, from replica 1's cache.
        assert_eq!(resolved_port(&c, p1, "Moves").await, Some(10003));
        cluster.restart(0);
        let deadline = Instant::now() + Duration::from_secs(15);
        while resolved_port(&c, p1, "Arrives").await.is_none() {
            assert!(Instant::now() < deadline, "replica 1 did not catch up");
        }
        assert_eq!(resolved_port(&c, p1, "Moves").await, Some(10004));
        assert_eq!(resolved_port(&c, p1, "Stays").await, Some(10001));
        assert!(is_adapter_not_found(&c, p1, "Leaves").await);
    });
}

#[test]
fn deployed_applications_are_shared_by_every_replica_and_outlive_them() {
    let Some(cluster) = start_cluster("etcd-apps") else { return };
    let (p1, p2, p3) = (free_port(), free_port(), free_port());
    let r1 = replica(&cluster, p1, "Replica1", &[]);
    let _r2 = replica(&cluster, p2, "Replica2", &[]);
    let app = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/deploy/app.xml");
    let admin = |port: u16, command: &str| {
        let (ok, out, err) = icegridadmin(port, command);
        assert!(ok, "`{command}' on {port}: {out}\n{err}");
        out
    };
    admin(p1, &format!("application add '{}'", app.display()));
    let described = admin(p1, "application describe Demo");
    assert!(described.contains("revision = `1'"), "{described}");
    assert_eq!(admin(p2, "application describe Demo"), described, "the second replica serves the same application");
    assert!(admin(p2, "object describe tester").contains("@ TesterGroup"));
    // The replica that deployed it dies; a new one starts and finds it.
    drop(r1); // SIGKILL
    let _r3 = replica(&cluster, p3, "Replica3", &[]);
    assert_eq!(admin(p3, "application describe Demo"), described);
    admin(p2, "application remove Demo");
    assert_eq!(admin(p3, "application list").trim(), "");
}
