//! floe-registry with real ZeroC programs, all on loopback: it answers Ice's calls exactly as
//! `icegridregistry` does (Debian zeroc-icegrid), Ice's Python interop server registers with
//! it and floe's interop client resolves through it (and the other way round), adapters with
//! a ReplicaGroupId form a group, an Ice C++ server registers, and the `icegridadmin` CLI
//! (Debian zeroc-ice-utils) manages well-known objects and adapters unchanged.

mod common;

use std::process::{Command, Stdio};

use common::*;

/// Ice's Python interop server, registering its adapter as `adapter_id` (in `group` if given).
fn python_server(port: u16, adapter_id: &str, group: Option<&str>) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(repo_root().join("tests/interop/python/server.py"))
        .args(["--endpoints", "tcp -h 127.0.0.1"])
        .arg(format!("--TestAdapter.AdapterId={adapter_id}"))
        .arg(locator_property(port))
        .stderr(Stdio::null());
    if let Some(g) = group {
        cmd.arg(format!("--TestAdapter.ReplicaGroupId={g}"));
    }
    start_until(cmd, "TestAdapter ready")
}

#[test]
fn ice_and_floe_programs_resolve_through_floe_registry() {
    let data = TempDir::new("interop");
    let port = free_port();
    let _registry = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);
    let locator = locator_property(port);

    // An Ice server registers its adapter; floe's client runs every check through
    // `tester @ TesterAdapter`.
    let _python = python_server(port, "TesterAdapter", None);
    let mut client = Command::new(interop_binary("floe-interop-client"));
    client.args(["--proxy", "tester @ TesterAdapter", &locator, "--no-shutdown"]);
    eprintln!("floe client via floe-registry: {}", run_client(client, 180));

    // A floe server registers; Ice's Python client reaches it through floe-registry.
    let mut floe_server = Command::new(interop_binary("floe-interop-server"));
    floe_server
        .args(["--endpoints", "tcp -h 127.0.0.1", "--TestAdapter.AdapterId=FloeAdapter", &locator])
        .stderr(Stdio::null());
    let _floe_server = start_until(floe_server, "TestAdapter ready");
    let mut ice_client = Command::new("/usr/bin/python3");
    ice_client.arg(repo_root().join("tests/interop/python/client.py")).args([
        "--proxy",
        "tester @ FloeAdapter",
        &locator,
    ]);
    eprintln!("Ice Python client via floe-registry to floe: {}", run_client(ice_client, 140));

    // Two Ice servers with a ReplicaGroupId form a group that Ice's client resolves.
    let _r1 = python_server(port, "Tester-1", Some("TesterGroup"));
    let _r2 = python_server(port, "Tester-2", Some("TesterGroup"));
    let (ok, out, err) = icegridadmin(port, "adapter endpoints TesterGroup");
    assert!(ok, "{err}");
    assert_eq!(out.lines().filter(|l| l.contains("Tester-")).count(), 2, "{out}");
    let mut ice_client = Command::new("/usr/bin/python3");
    ice_client.arg(repo_root().join("tests/interop/python/client.py")).args([
        "--proxy",
        "tester @ TesterGroup",
        &locator,
    ]);
    eprintln!("Ice Python client via a replica group: {}", run_client(ice_client, 140));
}

#[test]
fn icegridadmin_manages_objects_and_adapters() {
    let data = TempDir::new("admin");
    let port = free_port();
    let _registry = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);
    let _python = python_server(port, "TesterAdapter", None);

    let run = |command: &str| {
        let (ok, out, err) = icegridadmin(port, command);
        assert!(ok, "icegridadmin -e {command:?} failed: {err}");
        out
    };
    let fails = |command: &str| {
        let (ok, _, err) = icegridadmin(port, command);
        assert!(!ok, "icegridadmin -e {command:?} should fail");
        err
    };

    // The registry's own objects, as IceGrid lists them.
    let list = run("object list");
    for id in ["TestGrid/Locator", "TestGrid/Query", "TestGrid/Registry", "TestGrid/LocatorRegistry"] {
        assert!(list.lines().any(|l| l == id), "{id} missing from {list:?}");
    }
    // Add with an explicit type, and without one (the registry asks the object).
    run("object add 'tester @ TesterAdapter' ::Interop::Tester");
    run("object add 'echo @ TesterAdapter'");
    assert!(fails("object add 'tester @ TesterAdapter' ::Interop::Tester").contains("already exists"));
    let described = run("object describe echo");
    assert!(described.contains("type = `::Interop::Echo'"), "{described}");
    assert!(run("object find ::Interop::Tester").contains("tester"));
    assert!(run("object list tes*").lines().any(|l| l == "tester"));
    assert!(!run("object list tes*").contains("TestGrid/Query"));
    run("object remove echo");
    assert!(fails("object remove echo").contains("couldn't find"));
    assert!(fails("object describe echo").contains("couldn't find"));

    // The well-known object resolves, for floe's client too.
    let props = floe::Properties::new();
    props.set("Ice.Default.Locator", &locator(port));
    let communicator = floe::Communicator::with_properties(props).unwrap();
    runtime().block_on(async {
        let tester = communicator.string_to_proxy("tester").unwrap();
        assert_eq!(tester.ice_id().await.unwrap(), "::Interop::Tester");
        communicator.destroy().await;
    });

    // Adapters.
    assert!(run("adapter list").lines().any(|l| l == "TesterAdapter"));
    assert!(run("adapter endpoints TesterAdapter").contains("tcp -h 127.0.0.1"));
    assert!(fails("adapter endpoints NoSuchAdapter").contains("couldn't find"));
    run("adapter remove TesterAdapter");
    assert!(!run("adapter list").lines().any(|l| l == "TesterAdapter"));
    assert!(fails("adapter remove TesterAdapter").contains("couldn't find"));

    // Registries.
    assert_eq!(run("registry list").trim(), "Master");
    assert!(run("registry describe Master").contains("registry `Master'"));
    assert!(run("registry ping Master").contains("up"));
}

/// Runs tests/python/probe.py (which calls the locator, locator registry, query and admin
/// objects and prints every answer) against the registry on `port`.
fn probe(port: u16) -> String {
    let out = Command::new("timeout")
        .args(["60", "/usr/bin/python3"])
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/python/probe.py"))
        .args([INSTANCE, &port.to_string()])
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "probe.py failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).to_string()
}

#[test]
fn answers_match_icegridregistry() {
    let ice_data = TempDir::new("icegridregistry");
    let ice_port = free_port();
    let mut cmd = Command::new("icegridregistry");
    cmd.args([
        &format!("--IceGrid.InstanceName={INSTANCE}"),
        &format!("--IceGrid.Registry.Client.Endpoints=tcp -h 127.0.0.1 -p {ice_port}"),
        "--IceGrid.Registry.Server.Endpoints=tcp -h 127.0.0.1",
        "--IceGrid.Registry.Internal.Endpoints=tcp -h 127.0.0.1",
        &format!("--IceGrid.Registry.LMDB.Path={}", ice_data.0.display()),
        "--IceGrid.Registry.DynamicRegistration=1",
        "--IceGrid.Registry.AdminPermissionsVerifier=TestGrid/NullPermissionsVerifier",
        "--IceGrid.Registry.Discovery.Enabled=0",
        "--Ice.PrintAdapterReady=1",
    ])
    .stderr(Stdio::null());
    let _icegrid = start_until(cmd, "IceGrid.Registry.Client ready");
    let data = TempDir::new("probe");
    let port = free_port();
    let _floe = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);

    let expected = probe(ice_port);
    let got = probe(port);
    assert!(expected.lines().count() > 80, "{expected}");
    for (e, g) in expected.lines().zip(got.lines()) {
        assert_eq!(g, e, "floe-registry answers differently from icegridregistry");
    }
    assert_eq!(got.lines().count(), expected.lines().count());
}

#[test]
fn an_ice_cpp_server_registers() {
    // floe-bench's Ice C++ peer for tests/interop/Test.ice, built against libzeroc-ice-dev
    // where tests/interop builds it too (target/tmp/cpp-server), so it is built once.
    let out = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("cpp-server");
    let status = Command::new("make")
        .args(["-s", "-C"])
        .arg(repo_root().join("crates/floe-bench/peers/ice-tester"))
        .arg(format!("OUT={}", out.display()))
        .arg(out.join("ice-tester-server"))
        .status()
        .expect("make runs");
    assert!(status.success(), "building the C++ server failed");

    let data = TempDir::new("cpp");
    let port = free_port();
    let _registry = registry(port, &data.0, &["--IceGrid.Registry.DynamicRegistration=1"]);
    // The server takes only Ice.* arguments: its adapter id comes from a configuration file.
    let config = data.0.join("server.conf");
    std::fs::write(&config, format!("Tester.AdapterId=CppAdapter\nIce.Default.Locator={}\n", locator(port))).unwrap();
    let mut cmd = Command::new(out.join("ice-tester-server"));
    cmd.arg("0").arg(format!("--Ice.Config={}", config.display())).stderr(Stdio::null());
    let _server = start_until(cmd, "ready");
    let mut client = Command::new(interop_binary("floe-interop-client"));
    client.args(["--proxy", "tester @ CppAdapter", &locator_property(port), "--no-shutdown"]);
    eprintln!("floe client via floe-registry to Ice C++: {}", run_client(client, 180));
}
