//! floe-node against ZeroC's icegridregistry 3.7 and against floe-registry (each test runs
//! on both): it registers, the registry loads the servers of an application deployed with
//! icegridadmin on it, and floe-node activates them
//! as icegridnode does (on demand, manually, always), writes their configuration, notices
//! crashes, stops them through their `Process` object, and obeys enable/disable.

mod support;

use std::process::Command;
use std::time::Duration;

use floe::{Communicator, Properties};
use support::*;

fn client(port: u16) -> Communicator {
    let props = Properties::new();
    props.set("Ice.Default.Locator", &locator(port));
    props.set("Ice.Warn.Connections", "0");
    Communicator::with_properties(props).unwrap()
}

fn ping(c: &Communicator, object: &str) -> Result<(), String> {
    let p = c.string_to_proxy(object).unwrap().ice_invocation_timeout(Some(Duration::from_secs(30)));
    c.block_on(async move { p.ice_ping().await }).map_err(|e| e.to_string())
}

fn state(port: u16, server: &str) -> String {
    admin_ok(port, &format!("server state {server}")).trim().to_string()
}

fn pid(port: u16, server: &str) -> u32 {
    admin_ok(port, &format!("server pid {server}")).trim().parse().unwrap()
}

fn servers_are_activated_by_floe_node(kind: Registry) {
    let dir = TempDir::new("activation");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, "node ping node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));
    let c = client(port);

    // `always`: started as soon as it is loaded.
    eventually(Duration::from_secs(20), "Always is active", || state(port, "Always").starts_with("active"));

    // `on-demand`: the first request starts it.
    assert!(state(port, "OnDemand").starts_with("inactive"), "{}", state(port, "OnDemand"));
    ping(&c, "ondemand").unwrap();
    assert!(state(port, "OnDemand").starts_with("active"));
    let first = pid(port, "OnDemand");

    // What the node wrote and ran.
    let data = dir.0.join("node1-data/servers/OnDemand");
    let config = std::fs::read_to_string(data.join("config/config")).unwrap();
    for expected in [
        "Pinged.Endpoints=tcp -h 127.0.0.1",
        "Pinged.AdapterId=OnDemand.Pinged",
        "Ice.Admin.ServerId=OnDemand",
        "Ice.ProgramName=OnDemand",
        "Pinged.Identity=ondemand",
        &format!("Ice.Default.Locator={}", locator(port)),
        "Ice.StdOut=",
    ] {
        assert!(config.contains(expected), "no `{expected}' in:\n{config}");
    }
    let out_file = dir.0.join("node1-out/OnDemand.out");
    let out = std::fs::read_to_string(&out_file).unwrap();
    assert!(out.contains(&format!("pinged server {first} started")), "{out}");
    // Its working directory and environment, from the descriptor.
    let cwd = servers_dir().canonicalize().unwrap();
    assert!(out.contains(&format!("cwd {}, PINGED_SERVER=OnDemand", cwd.display())), "{out}");
    assert!(out.contains(&format!("--Ice.Config={}", data.join("config/config").display())), "{out}");

    // A crash: the next request starts it again.
    kill(first, "KILL");
    eventually(Duration::from_secs(10), "OnDemand is inactive after the crash", || {
        state(port, "OnDemand").starts_with("inactive")
    });
    ping(&c, "ondemand").unwrap();
    let second = pid(port, "OnDemand");
    assert_ne!(first, second);

    // `server stop`: through the server's Process object (it shuts down cleanly).
    admin_ok(port, "server stop OnDemand");
    assert!(state(port, "OnDemand").starts_with("inactive"));
    eventually(Duration::from_secs(5), "the server logged its shutdown", || {
        std::fs::read_to_string(&out_file).unwrap().contains(&format!("pinged server {second} shutting down"))
    });

    // `manual`: requests do not start it; `server start` does.
    assert!(ping(&c, "manual").is_err());
    assert!(state(port, "Manual").starts_with("inactive"));
    admin_ok(port, "server start Manual");
    assert!(state(port, "Manual").starts_with("active"));
    ping(&c, "manual").unwrap();

    // A disabled server is not started by requests.
    admin_ok(port, "server disable OnDemand");
    assert!(ping(&c, "ondemand").is_err());
    admin_ok(port, "server enable OnDemand");
    ping(&c, "ondemand").unwrap();

    // Removing the application stops its servers and removes their directories.
    let pids = [pid(port, "OnDemand"), pid(port, "Manual"), pid(port, "Always")];
    admin_ok(port, "application remove Activation");
    eventually(Duration::from_secs(20), "the servers' processes exited", || {
        pids.iter().all(|p| !std::path::Path::new(&format!("/proc/{p}")).exists())
    });
    assert!(!data.exists(), "{} is still there", data.display());
    c.destroy_blocking();
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

fn an_update_restarts_only_the_servers_whose_descriptors_changed(kind: Registry) {
    let dir = TempDir::new("update");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let _node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));
    let c = client(port);
    ping(&c, "ondemand").unwrap();
    admin_ok(port, "server start Manual");
    eventually(Duration::from_secs(20), "Always is active", || state(port, "Always").starts_with("active"));
    let before = [pid(port, "OnDemand"), pid(port, "Manual"), pid(port, "Always")];

    admin_ok(port, &format!("application update '{}'", descriptor(&dir, "activation-updated.xml").display()));
    let config = std::fs::read_to_string(dir.0.join("node1-data/servers/OnDemand/config/config")).unwrap();
    assert!(config.contains("Pinged.Revision=2"), "{config}");
    // OnDemand was stopped for its new descriptor and starts again on demand; the others
    // kept running.
    assert!(!std::path::Path::new(&format!("/proc/{}", before[0])).exists(), "OnDemand was not restarted");
    assert_eq!(pid(port, "Manual"), before[1]);
    assert_eq!(pid(port, "Always"), before[2]);
    ping(&c, "ondemand").unwrap();
    assert_ne!(pid(port, "OnDemand"), before[0]);
    c.destroy_blocking();
}

fn the_node_registers_again_after_the_registry_restarts(kind: Registry) {
    let dir = TempDir::new("restart");
    let port = free_port();
    let first = registry(kind, port, &dir.sub("registry"));
    let _node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));
    first.kill_now();
    let _registry = registry(kind, port, &dir.sub("registry"));
    // The node notices the lost session at its next keep-alive and registers again.
    eventually(Duration::from_secs(40), "node1 answers pings again", || icegridadmin(port, "node ping node1").0);
    // Then the registry loads its servers on it again, and requests start them.
    let c = client(port);
    // (It notices the loss at its next keep-alive: up to half the session timeout, 15 s.)
    eventually(Duration::from_secs(45), "OnDemand answers", || ping(&c, "ondemand").is_ok());
    assert!(state(port, "OnDemand").starts_with("active"));
    c.destroy_blocking();
}

fn bad_input_gets_typed_errors_and_the_node_keeps_working(kind: Registry) {
    let dir = TempDir::new("bad-input");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "broken.xml").display()));
    let c = client(port);

    // A server that cannot start: the request fails, the server stays inactive.
    assert!(ping(&c, "missing").is_err());
    assert!(state(port, "Missing").starts_with("inactive"), "{}", state(port, "Missing"));
    let (ok, _, err) = icegridadmin(port, "server start Missing");
    assert!(!ok && err.contains("cannot start"), "{err}");
    let (ok, _, err) = icegridadmin(port, "server signal Fine SIGNOPE");
    assert!(!ok, "{err}");

    // A server that never registers its adapter: its activation times out (2 s), the
    // request fails, and a stop ends the process (it has no Process object: SIGTERM).
    let asked = std::time::Instant::now();
    assert!(ping(&c, "silent").is_err());
    assert!(asked.elapsed() < Duration::from_secs(15), "{:?}", asked.elapsed());
    let silent = state(port, "Silent");
    assert!(silent.starts_with("activation timed out"), "{silent}");
    let silent_pid = pid(port, "Silent");
    admin_ok(port, "server stop Silent");
    assert!(state(port, "Silent").starts_with("inactive"));
    assert!(!std::path::Path::new(&format!("/proc/{silent_pid}")).exists());

    // Garbage on the node's endpoint: the node drops that connection and serves on.
    let endpoint = node_endpoint(&node);
    for garbage in
        [&b"GET / HTTP/1.0\r\n\r\n"[..], &[0x49, 0x63, 0x65, 0x50, 1, 0, 1, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f][..]]
    {
        use std::io::Write;
        let mut s = std::net::TcpStream::connect(endpoint).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let _ = s.write_all(garbage);
        let mut buf = [0u8; 64];
        let _ = std::io::Read::read(&mut s, &mut buf);
    }
    admin_ok(port, "node ping node1");
    ping(&c, "fine").unwrap();
    c.destroy_blocking();
}

/// The host and port of the node's endpoint, from its "ready" line.
fn node_endpoint(node: &Proc) -> std::net::SocketAddr {
    let printed = node.printed();
    let line = printed.lines().find(|l| l.contains("floe-node ready")).unwrap().to_string();
    let port = line.split(" -p ").nth(1).and_then(|r| r.split_whitespace().next()).and_then(|p| p.parse::<u16>().ok());
    std::net::SocketAddr::from(([127, 0, 0, 1], port.unwrap_or_else(|| panic!("no port in {line}"))))
}

fn a_cpp_server_stopped_under_load_loses_no_reply(kind: Registry) {
    cpp_server();
    let dir = TempDir::new("cpp");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let _node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "cpp.xml").display()));
    let props = Properties::new();
    props.set("Ice.Default.Locator", &locator(port));
    props.set("Ice.Warn.Connections", "0");
    // A client that retries, as clients of restartable servers are configured.
    props.set("Ice.RetryIntervals", "0 100 500 1000");
    let c = Communicator::with_properties(props).unwrap();
    ping(&c, "cpp").unwrap();

    // Pings without a pause (bounded: 10 s or 20,000 calls) while the server is stopped
    // twice: each stop closes its connections gracefully and the next request starts it
    // again; every ping gets its reply.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let (c2, stop2) = (c.clone(), stop.clone());
    let load = std::thread::spawn(move || {
        let started = std::time::Instant::now();
        let (mut ok, mut failed) = (0u32, Vec::new());
        while !stop2.load(std::sync::atomic::Ordering::Relaxed)
            && ok < 20_000
            && started.elapsed() < Duration::from_secs(10)
        {
            match ping(&c2, "cpp") {
                Ok(()) => ok += 1,
                Err(e) => failed.push(e),
            }
        }
        (ok, failed)
    });
    let mut pids = vec![pid(port, "CppServer")];
    for _ in 0..2 {
        std::thread::sleep(Duration::from_millis(300));
        admin_ok(port, "server stop CppServer");
        eventually(Duration::from_secs(10), "the server is started again", || {
            icegridadmin(port, "server pid CppServer").1.trim().parse::<u32>().is_ok_and(|p| !pids.contains(&p))
        });
        pids.push(pid(port, "CppServer"));
    }
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (ok, failed) = load.join().unwrap();
    assert!(
        failed.is_empty(),
        "{} of {} pings failed: {:?}",
        failed.len(),
        ok as usize + failed.len(),
        &failed[..failed.len().min(3)]
    );
    assert!(ok > 100, "only {ok} pings");
    let out = std::fs::read_to_string(dir.0.join("node1-out/CppServer.out")).unwrap();
    for p in &pids[..2] {
        assert!(out.contains(&format!("pinged server {p} shutting down")), "{out}");
    }
    c.destroy_blocking();
}

fn servers_run_as_their_user(kind: Registry) {
    cpp_server();
    let dir = TempDir::new("user");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let _node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "cpp.xml").display()));
    // SAFETY: geteuid has no preconditions.
    let root = unsafe { libc_geteuid() } == 0;
    let (ok, _, err) = icegridadmin(port, "server start AsNobody");
    if root {
        assert!(ok, "{err}");
        let status = std::fs::read_to_string(format!("/proc/{}/status", pid(port, "AsNobody"))).unwrap();
        let uid =
            status.lines().find(|l| l.starts_with("Uid:")).unwrap().split_whitespace().nth(1).unwrap().to_string();
        let nobody = Command::new("id").args(["-u", "nobody"]).output().unwrap();
        let nobody = String::from_utf8_lossy(&nobody.stdout).trim().to_string();
        assert_eq!(uid, nobody, "{status}");
        // A server without a `user` runs as `nobody` too, as IceGrid's nodes run them.
        ping(&client(port), "cpp").unwrap();
        let status = std::fs::read_to_string(format!("/proc/{}/status", pid(port, "CppServer"))).unwrap();
        assert!(
            status.lines().any(|l| l.starts_with("Uid:") && l.split_whitespace().nth(1) == Some(&nobody)),
            "{status}"
        );
    } else {
        // A node that is not root cannot run servers as another user: a typed error.
        assert!(!ok && err.contains("insufficient privileges"), "{err}");
    }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
}

/// Ice's own clients in C++, Java and Python reach the grid's servers unchanged: each starts
/// an on-demand server with its first call.
fn ice_clients_in_cpp_java_and_python_reach_the_servers(kind: Registry) {
    let cpp = cpp_server();
    let java = java_client();
    let dir = TempDir::new("clients");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let _node = floe_node("node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));
    let locator = format!("--Ice.Default.Locator={}", locator(port));
    let clients: [(&str, Command); 3] = [
        ("C++", {
            let mut c = Command::new(&cpp);
            c.arg(&locator).arg("--ping");
            c
        }),
        ("Java", {
            let mut c = Command::new("java");
            c.args(["-cp", &java, "Ping"]).arg(&locator);
            c
        }),
        ("Python", {
            let mut c = Command::new("/usr/bin/python3");
            c.arg(servers_dir().join("ping.py")).arg(&locator);
            c
        }),
    ];
    for (language, mut client) in clients {
        // The server is stopped first: each client's call activates it.
        let _ = icegridadmin(port, "server stop OnDemand");
        let out = client.args(["ondemand", "manual@Manual.Pinged"]).output().unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        // `manual` is not started by requests: the client fails on it, after `ondemand`.
        assert!(printed.contains("pinged ondemand"), "{language}: {printed}\n{}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.status.success() && !printed.contains("pinged manual"), "{language}: {printed}");
        admin_ok(port, "server start Manual");
        let out = client.output().unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && printed.contains("pinged manual@Manual.Pinged"), "{language}: {printed}");
        admin_ok(port, "server stop Manual");
    }
}

/// floe-node with ZeroC's registry: a shop that replaces its nodes first.
mod on_icegridregistry {
    use super::*;

    #[test]
    fn ice_clients_in_cpp_java_and_python_reach_the_servers() {
        super::ice_clients_in_cpp_java_and_python_reach_the_servers(Registry::Zeroc);
    }

    #[test]
    fn servers_are_activated_by_floe_node() {
        super::servers_are_activated_by_floe_node(Registry::Zeroc);
    }

    #[test]
    fn an_update_restarts_only_the_servers_whose_descriptors_changed() {
        super::an_update_restarts_only_the_servers_whose_descriptors_changed(Registry::Zeroc);
    }

    #[test]
    fn the_node_registers_again_after_the_registry_restarts() {
        super::the_node_registers_again_after_the_registry_restarts(Registry::Zeroc);
    }

    #[test]
    fn bad_input_gets_typed_errors_and_the_node_keeps_working() {
        super::bad_input_gets_typed_errors_and_the_node_keeps_working(Registry::Zeroc);
    }

    #[test]
    fn a_cpp_server_stopped_under_load_loses_no_reply() {
        super::a_cpp_server_stopped_under_load_loses_no_reply(Registry::Zeroc);
    }

    #[test]
    fn servers_run_as_their_user() {
        super::servers_run_as_their_user(Registry::Zeroc);
    }
}

/// A floe grid: floe-registry and floe-node.
mod on_floe_registry {
    use super::*;

    #[test]
    fn ice_clients_in_cpp_java_and_python_reach_the_servers() {
        super::ice_clients_in_cpp_java_and_python_reach_the_servers(Registry::Floe);
    }

    #[test]
    fn servers_are_activated_by_floe_node() {
        super::servers_are_activated_by_floe_node(Registry::Floe);
    }

    #[test]
    fn an_update_restarts_only_the_servers_whose_descriptors_changed() {
        super::an_update_restarts_only_the_servers_whose_descriptors_changed(Registry::Floe);
    }

    #[test]
    fn the_node_registers_again_after_the_registry_restarts() {
        super::the_node_registers_again_after_the_registry_restarts(Registry::Floe);
    }

    #[test]
    fn bad_input_gets_typed_errors_and_the_node_keeps_working() {
        super::bad_input_gets_typed_errors_and_the_node_keeps_working(Registry::Floe);
    }

    #[test]
    fn a_cpp_server_stopped_under_load_loses_no_reply() {
        super::a_cpp_server_stopped_under_load_loses_no_reply(Registry::Floe);
    }

    #[test]
    fn servers_run_as_their_user() {
        super::servers_run_as_their_user(Registry::Floe);
    }
}

/// `IceGrid.Node.CollocateRegistry=1`: one floe-node process is the whole grid.
#[test]
fn a_node_with_a_collocated_registry_is_a_grid_of_its_own() {
    let dir = TempDir::new("collocated");
    let port = free_port();
    let registry_data = dir.sub("registry");
    let node = floe_node_with(
        "node1",
        &dir,
        &[
            "--IceGrid.Node.CollocateRegistry=1".to_string(),
            format!("--IceGrid.InstanceName={INSTANCE}"),
            format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
            "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1".to_string(),
            "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1".to_string(),
            format!("--IceGrid.Registry.LMDB.Path={}", registry_data.display()),
            format!("--IceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier"),
        ],
    );
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));
    let c = client(port);
    ping(&c, "ondemand").unwrap();
    assert!(state(port, "OnDemand").starts_with("active"));
    let config = std::fs::read_to_string(dir.0.join("node1-data/servers/OnDemand/config/config")).unwrap();
    assert!(config.contains(&format!("Ice.Default.Locator={}", locator(port))), "{config}");
    c.destroy_blocking();
    let status = node.terminate();
    assert!(status.success(), "{status}");
}

/// The walkthrough of docs/guide/08-grids.md: the same two configuration files run a floe
/// grid and ZeroC's; examples/grid/hello.xml deploys floe's Hello server on it, and the Hello
/// client reaches it through the grid.
#[test]
fn the_guides_grid_runs_on_floe_and_on_zerocs_programs() {
    let bin = example_binaries();
    for zeroc in [false, true] {
        let dir = TempDir::new(if zeroc { "guide-zeroc" } else { "guide-floe" });
        let port = free_port();
        let (registry_data, node_data) = (dir.sub("registry"), dir.sub("node"));
        let registry_cfg = dir.0.join("registry.cfg");
        std::fs::write(
            &registry_cfg,
            format!(
                "IceGrid.InstanceName={INSTANCE}\nIceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}\n\
                 IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1\nIceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1\n\
                 IceGrid.Registry.LMDB.Path={}\nIceGrid.Registry.AdminPermissionsVerifier={INSTANCE}/NullPermissionsVerifier\n",
                registry_data.display()
            ),
        )
        .unwrap();
        let node_cfg = dir.0.join("node.cfg");
        std::fs::write(
            &node_cfg,
            format!(
                "Ice.Default.Locator={}\nIceGrid.Node.Name=node1\nIceGrid.Node.Endpoints=tcp -h 127.0.0.1\n\
                 IceGrid.Node.Data={}\nIceGrid.Node.Output={}\n",
                locator(port),
                node_data.display(),
                node_data.display()
            ),
        )
        .unwrap();
        let config = format!("--Ice.Config={}", registry_cfg.display());
        let node_config = format!("--Ice.Config={}", node_cfg.display());
        // Both nodes print their servers-ready line on stderr.
        let node_program = if zeroc { "icegridnode" } else { env!("CARGO_BIN_EXE_floe-node") };
        let mut node_cmd = Command::new("sh");
        node_cmd.args(["-c", "exec \"$0\" \"$@\" 2>&1", node_program]);
        let mut registry_cmd =
            if zeroc { Command::new("icegridregistry") } else { Command::new(floe_registry_binary()) };
        registry_cmd.arg(&config).arg("--Ice.PrintAdapterReady=1").stderr(std::process::Stdio::null());
        let _registry =
            start_until(registry_cmd, if zeroc { "IceGrid.Registry.Client ready" } else { "floe-registry ready" });
        // Run as root, both nodes run the server as `nobody`: the test's directories let it.
        node_cmd.arg(&node_config).arg("--IceGrid.Node.PrintServersReady=grid");
        let node = start_until(node_cmd, "grid ready");
        let app = repo_root().join("examples/grid/hello.xml");
        admin_ok(port, &format!("application add '{}' bin={}", app.display(), bin.display()));
        let out = Command::new(bin.join("hello-client"))
            .arg(format!("--Ice.Default.Locator={}", locator(port)))
            .args(["--proxy", "hello"])
            .output()
            .unwrap();
        let printed = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && printed.contains("the server said hello 5 times"),
            "zeroc={zeroc}: {printed}\n{}\nthe node printed: {}",
            String::from_utf8_lossy(&out.stderr),
            node.printed()
        );
        assert!(state(port, "HelloServer").starts_with("active"));
        let greetings = std::fs::read_to_string(node_data.join("HelloServer.out")).unwrap();
        assert_eq!(greetings.matches("Hello World!").count(), 5, "{greetings}");
    }
}

/// The examples' hello-server and hello-client of this build (brought up to date by cargo,
/// which does nothing when `cargo test --workspace` built them).
fn example_binaries() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    let dir = exe.parent().and_then(std::path::Path::parent).unwrap().to_path_buf();
    let status = Command::new(env!("CARGO"))
        .args(["build", "-p", "floe-examples", "--bin", "hello-server", "--bin", "hello-client"])
        .status()
        .unwrap();
    assert!(status.success());
    dir
}
