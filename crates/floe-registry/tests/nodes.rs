//! ZeroC's `icegridnode` 3.7 (Debian zeroc-icegrid) registered with floe-registry through
//! IceGrid's internal protocol, running the servers of an application deployed with
//! `icegridadmin`: an on-demand Ice for Python server activated by a client's first call,
//! `server state/pid/stop/start/disable/enable`, `node list/ping/describe/load`, a crash
//! followed by reactivation on the next call, node sessions that expire and nodes that
//! register again, a second node of the same name refused, and nodes that send garbage or
//! never answer. The main scenario runs on ZeroC's `icegridregistry` as well, and both
//! transcripts must match.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

fn file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/node-apps").join(name)
}

fn have(program: &str) -> bool {
    Command::new("sh").args(["-c", &format!("command -v {program}")]).output().is_ok_and(|o| o.status.success())
}

/// Whether ZeroC's node, admin tool and Ice for Python are installed; the tests are skipped
/// with a message where they are not.
fn tools_present() -> bool {
    let ok = have("icegridnode")
        && have("icegridadmin")
        && Command::new("/usr/bin/python3").args(["-c", "import Ice"]).output().is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("skipped: icegridnode, icegridadmin or Ice for Python (/usr/bin/python3) is missing");
    }
    ok
}

/// `icegridnode` under a guard: SIGTERM on drop (the node then stops its servers), SIGKILL
/// if it has not exited within 10 s. Its stderr goes to a file.
struct Node {
    child: Option<Child>,
    stderr: PathBuf,
}

impl Node {
    fn start(port: u16, name: &str, data: &Path, extra: &[&str]) -> Node {
        std::fs::create_dir_all(data).unwrap();
        let stderr = data.with_extension("stderr");
        let mut cmd = Command::new("icegridnode");
        cmd.args([
            &format!("--IceGrid.Node.Name={name}"),
            "--IceGrid.Node.Endpoints=tcp -h 127.0.0.1",
            &format!("--IceGrid.Node.Data={}", data.display()),
            &locator_property(port),
            "--IceGrid.Node.Trace.Replica=1",
            "--Ice.Default.Host=127.0.0.1",
        ])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&stderr).unwrap());
        let child = cmd.spawn().expect("icegridnode starts");
        Node { child: Some(child), stderr }
    }

    fn stderr(&self) -> String {
        std::fs::read_to_string(&self.stderr).unwrap_or_default()
    }

    /// Kills the node at once (its servers keep running).
    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let Some(mut c) = self.child.take() else { return };
        let _ = Command::new("kill").args(["-TERM", &c.id().to_string()]).status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if c.try_wait().ok().flatten().is_some() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = c.kill();
        let _ = c.wait();
    }
}

/// The server processes a test saw, killed on drop (if a node left one behind).
#[derive(Default)]
struct Pids(Vec<u32>);

impl Drop for Pids {
    fn drop(&mut self) {
        for pid in &self.0 {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).stderr(Stdio::null()).status();
        }
    }
}

/// icegridadmin's answer to `command`: its stdout, or the first line of its stderr (which
/// starts with `error: `).
fn admin(port: u16, command: &str) -> String {
    let (ok, out, err) = icegridadmin(port, command);
    if ok {
        out.trim().to_string()
    } else {
        err.lines().next().unwrap_or("").trim().to_string()
    }
}

/// Polls `command` (every 200 ms, for up to `secs`) until its answer satisfies `done`;
/// returns the last answer.
fn wait_for(port: u16, command: &str, secs: u64, done: impl Fn(&str) -> bool) -> String {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        let answer = admin(port, command);
        if done(&answer) || Instant::now() > deadline {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Ice for Python's `ice_ping` on `proxy` through the registry's locator: `ok` or the name of
/// the exception.
fn ping(port: u16, proxy: &str) -> String {
    let out = Command::new("timeout")
        .args(["60", "/usr/bin/python3"])
        .arg(file("ping.py"))
        .arg(locator_property(port))
        .arg(proxy)
        .output()
        .expect("python3 runs");
    let s = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if s.is_empty() {
        format!("failed: {}", String::from_utf8_lossy(&out.stderr).trim())
    } else {
        s
    }
}

/// `server state` with the pid left out.
fn state(port: u16, server: &str) -> String {
    let s = admin(port, &format!("server state {server}"));
    match (s.find("(pid = "), s.find(", ")) {
        (Some(a), Some(b)) if b > a => format!("{}(pid, {}", &s[..a], &s[b + 2..]),
        _ => s,
    }
}

fn pid(port: u16, server: &str, pids: &mut Pids) -> u32 {
    let answer = admin(port, &format!("server pid {server}"));
    let pid = answer.parse().unwrap_or_else(|_| panic!("server pid: {answer}"));
    pids.0.push(pid);
    pid
}

/// ZeroC's registry on `port`, with its data in `data`.
fn icegridregistry(port: u16, data: &Path) -> Server {
    let mut cmd = Command::new("icegridregistry");
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.LMDB.Path={}", data.display()),
        "--IceGrid.Registry.LMDB.MapSize=64",
        "--IceGrid.Registry.AdminPermissionsVerifier=TestGrid/NullPermissionsVerifier",
        "--IceGrid.Registry.Discovery.Enabled=0",
        "--Ice.PrintAdapterReady=1",
    ])
    .stderr(Stdio::null());
    start_until(cmd, "IceGrid.Registry.Client ready")
}

/// The deployment scenario against whichever registry listens on `port`; returns what
/// each step answered.
fn scenario(port: u16, dir: &Path) -> Vec<(String, String)> {
    let mut pids = Pids::default();
    let node = Node::start(port, "node1", &dir.join("node1"), &[]);
    let mut t: Vec<(String, String)> = Vec::new();
    let mut step = |what: &str, answer: String| {
        t.push((what.to_string(), answer));
    };
    let up = wait_for(port, "node ping node1", 20, |a| a == "node is up");
    assert_eq!(up, "node is up", "the node did not register:\n{}", node.stderr());
    step("node list", admin(port, "node list"));
    step("node ping", up);
    let add = format!("application add '{}' script='{}'", file("app.xml").display(), file("hello.py").display());
    step("application add", admin(port, &add));
    step("state after add", state(port, "Hello-1"));
    step("enabled after add", admin(port, "server enable Hello-1"));

    // Activation on demand: the client's first call starts the server.
    step("ping hello", ping(port, "hello"));
    step("state after ping", state(port, "Hello-1"));
    step("ping by adapter", ping(port, "hello @ Hello-1.Hello"));
    let first = pid(port, "Hello-1", &mut pids);
    step("adapter endpoints", admin(port, "adapter list"));

    step("server stop", admin(port, "server stop Hello-1"));
    step("state after stop", state(port, "Hello-1"));
    step("server start", admin(port, "server start Hello-1"));
    step("state after start", state(port, "Hello-1"));
    let second = pid(port, "Hello-1", &mut pids);
    assert_ne!(first, second, "server start did not start a new process");

    // A crash: the node notices, and the next call activates the server again.
    let _ = Command::new("kill").args(["-KILL", &second.to_string()]).status();
    let after_crash = wait_for(port, "server state Hello-1", 15, |a| a.starts_with("inactive"));
    step("state after crash", after_crash);
    step("endpoints after crash", admin(port, "adapter endpoints Hello-1.Hello"));
    step("ping after crash", ping(port, "hello"));
    step("state after reactivation", state(port, "Hello-1"));
    let third = pid(port, "Hello-1", &mut pids);
    assert_ne!(second, third);

    // A disabled server is not activated on demand.
    step("server stop", admin(port, "server stop Hello-1"));
    step("server disable", admin(port, "server disable Hello-1"));
    step("state disabled", state(port, "Hello-1"));
    step("ping disabled", ping(port, "hello"));
    step("server enable", admin(port, "server enable Hello-1"));
    step("ping enabled", ping(port, "hello"));
    pid(port, "Hello-1", &mut pids);
    step("server signal", admin(port, "server signal Hello-1 SIGTERM"));
    step("state after SIGTERM", wait_for(port, "server state Hello-1", 15, |a| a.starts_with("inactive")));

    // Updates: a new revision alone leaves the running server alone; a changed descriptor
    // makes the node stop it and rewrite its configuration.
    step("ping before updates", ping(port, "hello"));
    let before = pid(port, "Hello-1", &mut pids);
    let update =
        |xml: &str| format!("application update '{}' script='{}'", file(xml).display(), file("hello.py").display());
    step("update unchanged", admin(port, &update("app.xml")));
    step("state after unchanged update", state(port, "Hello-1"));
    assert_eq!(pid(port, "Hello-1", &mut pids), before, "an unchanged server was restarted");
    step("update changed", admin(port, &update("app-updated.xml")));
    step("state after changed update", state(port, "Hello-1"));
    let config = std::fs::read_to_string(dir.join("node1/servers/Hello-1/config/config")).unwrap_or_default();
    step("updated config", config.lines().filter(|l| l.starts_with("Greeting=")).collect::<Vec<_>>().join(","));
    step("ping after update", ping(port, "hello"));
    let running = pid(port, "Hello-1", &mut pids);
    // Without restart: a change of properties reaches the running server; any other change
    // is refused.
    let update_no_restart = |xml: &str| {
        format!("application update --no-restart '{}' script='{}'", file(xml).display(), file("hello.py").display())
    };
    step("update properties without restart", admin(port, &update_no_restart("app.xml")));
    step("state after update without restart", state(port, "Hello-1"));
    let (ok, _, refusal) = icegridadmin(port, &update_no_restart("app-pwd.xml"));
    step("update pwd without restart", format!("{ok} {}", refusal.trim()));
    step("state after refused update", state(port, "Hello-1"));
    assert_eq!(pid(port, "Hello-1", &mut pids), running, "an update without restart restarted the server");

    let described = admin(port, "node describe node1");
    step("node describe has os", described.contains("operating system = `Linux'").to_string());
    step("node load", admin(port, "node load node1").starts_with("load average (1/5/15): ").to_string());
    step("unknown node", admin(port, "node ping nosuchnode"));

    step("application remove", admin(port, "application remove Nodes"));
    step("server list after remove", admin(port, "server list"));
    step("state after remove", state(port, "Hello-1"));
    drop(node);
    t
}

#[test]
fn icegridnode_runs_the_servers_of_floe_registry_as_of_icegridregistry() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("nodes-scenario");
    let floe_port = free_port();
    let floe = registry(floe_port, &dir.0.join("floe-db"), &[]);
    let floe_transcript = scenario(floe_port, &dir.0.join("floe"));
    drop(floe);

    let ice_port = free_port();
    std::fs::create_dir_all(dir.0.join("ice-db")).unwrap();
    let ice = icegridregistry(ice_port, &dir.0.join("ice-db"));
    let ice_transcript = scenario(ice_port, &dir.0.join("ice"));
    drop(ice);

    for (f, i) in floe_transcript.iter().zip(&ice_transcript) {
        assert_eq!(
            f, i,
            "floe-registry and icegridregistry differ\nfloe: {floe_transcript:#?}\nice: {ice_transcript:#?}"
        );
    }
    assert_eq!(floe_transcript.len(), ice_transcript.len());
    // The things that must hold whichever registry ran them.
    let get = |k: &str| floe_transcript.iter().find(|(w, _)| w == k).map(|(_, a)| a.as_str()).unwrap();
    assert_eq!(get("ping hello"), "ok");
    assert!(get("state after ping").starts_with("active"), "{}", get("state after ping"));
    assert_eq!(get("ping after crash"), "ok");
    assert_eq!(get("state after stop"), "inactive (enabled)");
    assert_eq!(get("updated config"), "Greeting=updated");
    assert_eq!(get("state after changed update"), "inactive (enabled)");
    assert!(get("update pwd without restart").contains("would need to be stopped"));
}

#[test]
fn node_sessions_expire_and_nodes_register_again() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("nodes-sessions");
    let port = free_port();
    let _registry = registry(port, &dir.0.join("db"), &["--IceGrid.Registry.NodeSessionTimeout=3"]);
    let mut pids = Pids::default();
    let mut node = Node::start(port, "node1", &dir.0.join("node1"), &[]);
    assert_eq!(wait_for(port, "node ping node1", 20, |a| a == "node is up"), "node is up", "{}", node.stderr());
    let add = format!("application add '{}' script='{}'", file("app.xml").display(), file("hello.py").display());
    assert_eq!(admin(port, &add), "");
    assert_eq!(ping(port, "hello"), "ok");
    pid(port, "Hello-1", &mut pids);

    // A second node of the same name is refused while the first one answers.
    {
        let twin = Node::start(port, "node1", &dir.0.join("twin"), &[]);
        let deadline = Instant::now() + Duration::from_secs(15);
        while !twin.stderr().contains("a node with the same name is already active") {
            assert!(Instant::now() < deadline, "the twin was not refused:\n{}", twin.stderr());
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    assert_eq!(admin(port, "node ping node1"), "node is up");
    assert!(state(port, "Hello-1").starts_with("active"));

    // Killed without a word: its session expires after the node session timeout.
    assert_eq!(admin(port, "server stop Hello-1"), "");
    node.kill();
    let started = Instant::now();
    assert_eq!(admin(port, "node ping node1"), "node is down");
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, _, err) = icegridadmin(port, "server state Hello-1");
        if err.contains("the node is not active") {
            break;
        }
        assert!(err.contains("couldn't be reached"), "{err}");
        assert!(Instant::now() < deadline, "the node's session did not expire");
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(started.elapsed() >= Duration::from_secs(2), "the session ended before its timeout");
    assert_eq!(ping(port, "hello"), "NoEndpointException");

    // The node comes back: its servers are loaded again and activated on demand.
    let node = Node::start(port, "node1", &dir.0.join("node1"), &[]);
    assert_eq!(wait_for(port, "node ping node1", 20, |a| a == "node is up"), "node is up", "{}", node.stderr());
    assert_eq!(ping(port, "hello"), "ok");
    assert!(state(port, "Hello-1").starts_with("active"));
    pid(port, "Hello-1", &mut pids);
    drop(node);
}

/// A TCP listener on loopback that accepts connections and then does `behaviour` with each
/// (never answer, or send garbage); the thread ends with the test program.
fn fake_node(behaviour: fn(std::net::TcpStream)) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for s in listener.incoming().flatten() {
            std::thread::spawn(move || behaviour(s));
        }
    });
    port
}

#[test]
fn nodes_that_never_answer_or_send_garbage_get_typed_errors() {
    use floe::{Class, Communicator, Identity, Properties, Proxy};
    use floe_registry::slice::ice_grid::{
        InternalNodeInfo, InternalRegistryPrx, LoadInfo, NodePrx, NodeSessionPrx, QueryPrx,
    };
    use std::io::{Read, Write};

    let dir = TempDir::new("nodes-bad");
    let port = free_port();
    let _registry = registry(port, &dir.0.join("db"), &["--IceGrid.Registry.NodeSessionTimeout=2"]);
    let silent = fake_node(|mut s| {
        let mut buf = [0u8; 1024];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let garbage = fake_node(|mut s| {
        let _ = s.write_all(b"IceP\x01\x00\x01\x00\x03\x00\x0e\x00\x00\x00garbage garbage garbage");
        let mut buf = [0u8; 1024];
        while s.read(&mut buf).is_ok_and(|n| n > 0) {}
    });
    let rt = runtime();
    rt.block_on(async {
        let props = Properties::new();
        props.set("Ice.Default.Locator", &locator(port));
        let c = Communicator::with_properties(props).unwrap();
        let query = QueryPrx::from_object(c.string_to_proxy(&format!("{INSTANCE}/Query")).unwrap());
        // What icegridnode does: the internal registry is a well-known object.
        let found = query
            .find_object_by_id(&Identity::with_category(INSTANCE, "InternalRegistry-Master"))
            .await
            .unwrap()
            .expect("InternalRegistry-Master is a well-known object");
        let registry = InternalRegistryPrx::from_object(found);
        let load = LoadInfo { avg1: 0.5, avg5: 0.5, avg15: 0.5 };
        assert!(registry.register_node(None, None, &load).await.unwrap().is_none());

        let info = |name: &str| {
            Class::new(InternalNodeInfo {
                name: name.into(),
                os: "Linux".into(),
                hostname: "fake".into(),
                n_processors: 1,
                data_dir: "/nonexistent".into(),
                ..Default::default()
            })
        };
        let node = |p: u16| NodePrx::from_object(c.string_to_proxy(&format!("node:tcp -h 127.0.0.1 -p {p}")).unwrap());
        let session: NodeSessionPrx =
            registry.register_node(Some(&info("node1")), Some(&node(silent)), &load).await.unwrap().unwrap();
        assert_eq!(session.get_timeout().await.unwrap(), 2);
        session.keep_alive(&load).await.unwrap();
        // Kept alive as a node would, until the node is replaced.
        let keeper = {
            let session = session.clone();
            tokio::spawn(async move {
                while session.keep_alive(&load).await.is_ok() {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                }
            })
        };
        assert!(registry.get_nodes().await.unwrap().len() == 1);
        let replicas = registry.get_replicas().await.unwrap();
        assert_eq!(replicas.len(), 1);

        // Servers deployed on a node that never answers: every call ends, with a typed error.
        let add = format!("application add '{}' script='{}'", file("app.xml").display(), file("hello.py").display());
        let started = Instant::now();
        let answer = tokio::task::spawn_blocking(move || admin(port, &add)).await.unwrap();
        assert_eq!(answer, "");
        assert!(started.elapsed() < Duration::from_secs(30));
        let answer = tokio::task::spawn_blocking(move || state(port, "Hello-1")).await.unwrap();
        assert!(answer.contains("couldn't be reached") || answer.contains("being updated"), "{answer}");
        let proxy = c.string_to_proxy("hello").unwrap().ice_invocation_timeout(Some(Duration::from_secs(60)));
        assert!(proxy.ice_ping().await.is_err());
        assert_eq!(session.get_servers().await.unwrap(), vec!["Hello-1".to_string()]);

        // The same name again: the old node does not answer its ping, so it is replaced.
        let replaced =
            registry.register_node(Some(&info("node1")), Some(&node(garbage)), &load).await.unwrap().unwrap();
        assert!(session.keep_alive(&load).await.is_err(), "the replaced session is still alive");
        keeper.abort();
        let answer = tokio::task::spawn_blocking(move || state(port, "Hello-1")).await.unwrap();
        assert!(answer.contains("couldn't be reached"), "{answer}");
        assert!(c.string_to_proxy("hello").unwrap().ice_ping().await.is_err());

        // Not kept alive: the session expires.
        tokio::time::sleep(Duration::from_secs(4)).await;
        assert!(replaced.keep_alive(&load).await.is_err(), "the session did not expire");
        assert!(registry.get_nodes().await.unwrap().is_empty());
        let answer = tokio::task::spawn_blocking(move || admin(port, "node ping node1")).await.unwrap();
        assert_eq!(answer, "node is down");
        c.destroy().await;
    });
}

#[test]
fn nodes_register_again_when_the_registry_restarts() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("nodes-restart");
    let port = free_port();
    let registry1 = registry(port, &dir.0.join("db"), &[]);
    let mut pids = Pids::default();
    let node = Node::start(port, "node1", &dir.0.join("node1"), &[]);
    assert_eq!(wait_for(port, "node ping node1", 20, |a| a == "node is up"), "node is up", "{}", node.stderr());
    let add = format!("application add '{}' script='{}'", file("app.xml").display(), file("hello.py").display());
    assert_eq!(admin(port, &add), "");
    assert_eq!(ping(port, "hello"), "ok");
    let running = pid(port, "Hello-1", &mut pids);

    assert!(registry1.terminate().success());
    let _registry2 = registry(port, &dir.0.join("db"), &[]);
    // The node notices on its next keepAlive and registers again; its server, loaded again
    // with the same descriptor, keeps running.
    assert_eq!(wait_for(port, "node ping node1", 40, |a| a == "node is up"), "node is up", "{}", node.stderr());
    assert_eq!(ping(port, "hello"), "ok");
    assert_eq!(pid(port, "Hello-1", &mut pids), running);
    drop(node);
}

/// `server state` once the server is no longer activating.
fn settled_state(port: u16, server: &str) -> String {
    wait_for(port, &format!("server state {server}"), 20, |a| !a.starts_with("activating"));
    state(port, server)
}

/// The replica group scenario against whichever registry listens on `port`.
fn group_scenario(port: u16, dir: &Path) -> Vec<(String, String)> {
    let mut pids = Pids::default();
    let node = Node::start(port, "node1", &dir.join("node1"), &[]);
    let mut t: Vec<(String, String)> = Vec::new();
    let mut step = |what: &str, answer: String| t.push((what.to_string(), answer));
    let up = wait_for(port, "node ping node1", 20, |a| a == "node is up");
    assert_eq!(up, "node is up", "the node did not register:\n{}", node.stderr());
    let add = format!("application add '{}' script='{}'", file("group.xml").display(), file("hello.py").display());
    step("application add", admin(port, &add));
    // Nothing is active: resolving the group activates its members.
    step("ping greeter", ping(port, "greeter"));
    step("Hello-1", settled_state(port, "Hello-1"));
    pid(port, "Hello-1", &mut pids);
    step("Hello-2", settled_state(port, "Hello-2"));
    let _ = admin(port, "server pid Hello-2").parse().map(|p| pids.0.push(p));
    step("ping group adapter", ping(port, "greeter @ HelloGroup"));
    // The first member disabled and stopped: the second serves.
    step("stop Hello-1", admin(port, "server stop Hello-1"));
    step("stop Hello-2", admin(port, "server stop Hello-2"));
    step("group endpoints when stopped", admin(port, "adapter endpoints HelloGroup"));
    step("disable Hello-1", admin(port, "server disable Hello-1"));
    step("ping with Hello-1 disabled", ping(port, "greeter"));
    step("Hello-1 disabled", settled_state(port, "Hello-1"));
    step("Hello-2 serving", settled_state(port, "Hello-2"));
    let _ = admin(port, "server pid Hello-2").parse().map(|p| pids.0.push(p));
    step("adapters", admin(port, "adapter list"));
    drop(node);
    t
}

#[test]
fn replica_groups_of_node_servers_resolve_as_on_icegridregistry() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("nodes-group");
    let floe_port = free_port();
    let floe = registry(floe_port, &dir.0.join("floe-db"), &[]);
    let floe_transcript = group_scenario(floe_port, &dir.0.join("floe"));
    drop(floe);
    let ice_port = free_port();
    std::fs::create_dir_all(dir.0.join("ice-db")).unwrap();
    let ice = icegridregistry(ice_port, &dir.0.join("ice-db"));
    let ice_transcript = group_scenario(ice_port, &dir.0.join("ice"));
    drop(ice);
    assert_eq!(floe_transcript, ice_transcript, "floe-registry and icegridregistry differ");
    assert_eq!(floe_transcript[1].1, "ok");
}

/// Runs the node observer client (`node-apps/node_observer.py`) against the registry on
/// `port` while a node comes up, runs a server and is shut down; returns what it was told.
fn node_events(port: u16, dir: &Path) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    let mut pids = Pids::default();
    let mut child = Command::new("timeout")
        .args(["90", "/usr/bin/python3"])
        .arg(file("node_observer.py"))
        .args([&port.to_string(), INSTANCE, "node1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = lines.next().and_then(|l| l.ok());
    assert_eq!(first.as_deref(), Some("ready"), "the observer client did not start");
    let node = Node::start(port, "node1", &dir.join("node1"), &[]);
    assert_eq!(wait_for(port, "node ping node1", 20, |a| a == "node is up"), "node is up", "{}", node.stderr());
    let add = format!("application add '{}' script='{}'", file("app.xml").display(), file("hello.py").display());
    assert_eq!(admin(port, &add), "");
    assert_eq!(ping(port, "hello"), "ok");
    pid(port, "Hello-1", &mut pids);
    assert_eq!(admin(port, "server stop Hello-1"), "");
    assert_eq!(admin(port, "node shutdown node1"), "");
    let rest: Vec<String> = lines.map_while(Result::ok).collect();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "the observer client failed: {rest:?}\n{err}");
    drop(node);
    rest
}

#[test]
fn node_observers_follow_nodes_and_servers_as_on_icegridregistry() {
    if !tools_present() {
        return;
    }
    let dir = TempDir::new("nodes-observers");
    let floe_port = free_port();
    let floe = registry(floe_port, &dir.0.join("floe-db"), &[]);
    let floe_events = node_events(floe_port, &dir.0.join("floe"));
    drop(floe);
    let ice_port = free_port();
    std::fs::create_dir_all(dir.0.join("ice-db")).unwrap();
    let ice = icegridregistry(ice_port, &dir.0.join("ice-db"));
    let ice_events = node_events(ice_port, &dir.0.join("ice"));
    drop(ice);
    assert_eq!(floe_events, ice_events, "floe-registry's node observer events differ from icegridregistry's");
    assert!(floe_events.contains(&"up node1".to_string()) && floe_events.last().unwrap() == "down node1");
}
