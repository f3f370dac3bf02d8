//! floe's client-side indirection against ZeroC's own services, each started here on
//! loopback: indirect and well-known proxies resolved through a real `icegridregistry`
//! (servers of both kinds registering with it), and every call of the interop client made
//! through a real `glacier2router`, with a callback to a routed object adapter.
//! The services come from Debian's zeroc-icegrid, zeroc-glacier2 and zeroc-ice-utils
//! packages, installed by scripts/install-deps.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{free_port, run_client, start, start_until, Server};
use floe::{Communicator, Error, Identity, Properties, Proxy};
use floe_interop::interop::TesterPrx;

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

/// A temporary directory removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// icegridregistry with dynamic registration and null permission verifiers, on `port`.
fn icegrid_registry(port: u16, data: &Path) -> Server {
    let mut cmd = Command::new("icegridregistry");
    cmd.args([
        "--IceGrid.InstanceName=TestGrid",
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.LMDB.Path={}", data.display()),
        "--IceGrid.Registry.DynamicRegistration=1",
        "--IceGrid.Registry.PermissionsVerifier=TestGrid/NullPermissionsVerifier",
        "--IceGrid.Registry.AdminPermissionsVerifier=TestGrid/NullPermissionsVerifier",
        "--IceGrid.Registry.Discovery.Enabled=0",
        "--Ice.PrintAdapterReady=1",
    ])
    .stderr(Stdio::null());
    start_until(cmd, "IceGrid.Registry.Client ready")
}

fn locator_property(port: u16) -> String {
    format!("--Ice.Default.Locator=TestGrid/Locator:tcp -h 127.0.0.1 -p {port}")
}

/// Ice's Python interop server, registering its adapter as `adapter_id` with the locator.
fn python_server_registered(locator: &str, adapter_id: &str) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/server.py"))
        .args(["--endpoints", "tcp -h 127.0.0.1"])
        .arg(format!("--TestAdapter.AdapterId={adapter_id}"))
        .arg(locator)
        .stderr(Stdio::null());
    start(cmd)
}

fn icegridadmin(locator: &str, command: &str) {
    let out = Command::new("icegridadmin")
        .args([locator, "-u", "admin", "-p", "admin", "-e", command])
        .output()
        .expect("icegridadmin runs");
    assert!(out.status.success(), "icegridadmin {command}: {}", String::from_utf8_lossy(&out.stderr));
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

#[test]
fn floe_resolves_through_a_real_icegrid_registry() {
    let data = TempDir::new("icegrid");
    let port = free_port();
    let _registry = icegrid_registry(port, &data.0);
    let locator = locator_property(port);

    // An Ice server registers its adapter; the floe client runs every check through
    // `tester @ TesterAdapter`, resolved by IceGrid (proxies it receives resolve too).
    let python = python_server_registered(&locator, "TesterAdapter");
    let mut client = Command::new(env!("CARGO_BIN_EXE_floe-interop-client"));
    client.args(["--proxy", "tester @ TesterAdapter", &locator, "--no-shutdown"]);
    eprintln!("floe client via IceGrid: {}", run_client(client, 160));

    // A floe server registers with IceGrid; Ice's Python client reaches it through the
    // registry.
    let mut floe_server = Command::new(env!("CARGO_BIN_EXE_floe-interop-server"));
    floe_server
        .args(["--endpoints", "tcp -h 127.0.0.1", "--TestAdapter.AdapterId=FloeAdapter", &locator])
        .stderr(Stdio::null());
    let _floe_server = start(floe_server);
    let mut ice_client = Command::new("/usr/bin/python3");
    ice_client.arg(root().join("python/client.py")).args(["--proxy", "tester @ FloeAdapter", &locator]);
    eprintln!("Ice Python client via IceGrid to floe: {}", run_client(ice_client, 140));

    // Well-known objects, unknown ids, and a server that moves.
    icegridadmin(&locator, "object add 'tester @ TesterAdapter' ::Interop::Tester");
    let props = Properties::new();
    props.set("Ice.Default.Locator", &format!("TestGrid/Locator:tcp -h 127.0.0.1 -p {port}"));
    let communicator = Communicator::with_properties(props).unwrap();
    let mut python = python;
    runtime().block_on(async {
        let well_known = TesterPrx::from_object(communicator.string_to_proxy("tester").unwrap());
        well_known.ping().await.expect("well-known tester through IceGrid");
        assert_eq!(well_known.op_string("via the ", "registry").await.unwrap().0, "via the registry");
        let nobody = communicator.string_to_proxy("nobody").unwrap();
        let err = nobody.ice_ping().await.unwrap_err();
        assert!(matches!(&err, Error::NotRegistered { kind, id } if kind == "object" && id == "nobody"), "{err}");
        let err = communicator.string_to_proxy("x @ NoSuchAdapter").unwrap().ice_ping().await.unwrap_err();
        assert!(matches!(&err, Error::NotRegistered { kind, .. } if kind == "object adapter"), "{err}");

        // The Ice server moves to another port: the cached endpoints fail, and floe asks
        // IceGrid again.
        let indirect = communicator.string_to_proxy("tester @ TesterAdapter").unwrap();
        indirect.ice_ping().await.unwrap();
        let before = indirect.ice_get_connection().await.unwrap().remote_address();
        drop(std::mem::replace(&mut python, python_server_registered(&locator, "TesterAdapter")));
        let moved = communicator.string_to_proxy("tester @ TesterAdapter").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match moved.ice_ping().await {
                Ok(()) => break,
                Err(e) => assert!(Instant::now() < deadline, "never reached the moved server: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let after = moved.ice_get_connection().await.unwrap().remote_address();
        assert_ne!(before, after, "a new connection, to the new port");
        let echo = communicator.string_to_proxy("echo @ TesterAdapter").unwrap();
        assert_eq!(echo.ice_get_identity(), &Identity::new("echo"));
        echo.ice_ping().await.unwrap();
        communicator.destroy().await;
    });
    drop(python);
}

/// Ice's Python interop server in a replica group.
fn python_replica(locator: &str, adapter_id: &str, group: &str) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(root().join("python/server.py"))
        .args(["--endpoints", "tcp -h 127.0.0.1"])
        .arg(format!("--TestAdapter.AdapterId={adapter_id}"))
        .arg(format!("--TestAdapter.ReplicaGroupId={group}"))
        .arg(locator)
        .stderr(Stdio::null());
    start(cmd)
}

#[test]
fn floe_uses_an_icegrid_replica_group() {
    let data = TempDir::new("icegrid-replicas");
    let port = free_port();
    let _registry = icegrid_registry(port, &data.0);
    let locator = locator_property(port);
    // Adapters with a ReplicaGroupId form the group as they register.
    let first = python_replica(&locator, "Tester-1", "TesterGroup");
    let _second = python_replica(&locator, "Tester-2", "TesterGroup");
    let props = Properties::new();
    props.set("Ice.Default.Locator", &format!("TestGrid/Locator:tcp -h 127.0.0.1 -p {port}"));
    let communicator = Communicator::with_properties(props).unwrap();
    runtime().block_on(async {
        // Each member, and the group, which IceGrid resolves to both members' endpoints.
        for proxy in ["tester @ Tester-1", "tester @ Tester-2", "tester @ TesterGroup"] {
            let p = communicator.string_to_proxy(proxy).unwrap();
            p.ice_ping().await.unwrap_or_else(|e| panic!("{proxy}: {e}"));
        }
        // One replica dies: a new proxy of the group still reaches the other.
        drop(first);
        let survivor = communicator.string_to_proxy("tester @ TesterGroup").unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            match survivor.ice_ping().await {
                Ok(()) => break,
                Err(e) => assert!(Instant::now() < deadline, "the surviving replica was not reached: {e}"),
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        communicator.destroy().await;
    });
}

/// glacier2router with a null permissions verifier, forwarding contexts, on `port`.
fn glacier2_router(port: u16) -> Server {
    let mut cmd = Command::new("glacier2router");
    cmd.args([
        &format!("--Glacier2.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--Glacier2.Server.Endpoints=tcp -h 127.0.0.1",
        "--Glacier2.PermissionsVerifier=Glacier2/NullPermissionsVerifier",
        "--Glacier2.SessionTimeout=30",
        "--Glacier2.Client.ForwardContext=1",
        "--Ice.PrintAdapterReady=1",
    ])
    .stderr(Stdio::null());
    start_until(cmd, "Glacier2.Client ready")
}

#[test]
fn floe_calls_through_a_real_glacier2_router() {
    let router_port = free_port();
    let _router = glacier2_router(router_port);
    let server_port = free_port();
    let mut python = Command::new("/usr/bin/python3");
    python
        .arg(root().join("python/server.py"))
        .args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {server_port}")])
        .stderr(Stdio::null());
    let _python = start(python);
    // Every check of the interop client goes through the router, after a session and a
    // callback to an adapter routed through it.
    let mut client = Command::new(env!("CARGO_BIN_EXE_floe-interop-client"));
    client.args([
        "--proxy",
        &format!("tester:tcp -h 127.0.0.1 -p {server_port}"),
        &format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
        "--no-shutdown",
        // glacier2router queues the requests of a batch on its own thread when buffered (its
        // default) and was seen to forward a batch's resetCounter after its incCounters (2 runs
        // in 8); unbuffered, it keeps the last request of a batch until the next one. These
        // two checks of batch order run through floe-router instead (tests/router.rs).
        "--skip",
        "batch writer",
        "--skip",
        "batches of several messages",
    ]);
    let summary = run_client(client, 176);
    eprintln!("floe client through glacier2router: {summary}");
    // The checks Ice's own Python client makes through floe-router (tests/router.rs) pass
    // through glacier2router too.
    let mut ice_client = Command::new("/usr/bin/python3");
    ice_client.arg(root().join("python/glacier2_client.py")).args([
        "--proxy",
        &format!("tester:tcp -h 127.0.0.1 -p {server_port}"),
        &format!("--Ice.Default.Router=Glacier2/router:tcp -h 127.0.0.1 -p {router_port}"),
    ]);
    eprintln!("Ice Python client through glacier2router: {}", run_client(ice_client, 9));
}
