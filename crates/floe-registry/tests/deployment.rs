//! Applications deployed from XML descriptors with ZeroC's `icegridadmin` (Debian
//! zeroc-ice-utils), unchanged: `application add/describe/update/remove`, templates with
//! parameters and defaults, property sets, variables, the servers, adapters, well-known
//! objects and replica groups they declare, typed errors for descriptors that do not
//! instantiate (with nothing half-deployed), and applications surviving a restart. The same
//! checks run against ZeroC's `icegridregistry`, so floe-registry is held to its answers.
//! Servers are not activated here (that is a node's work): the Ice servers of the replica
//! group test are started by the test with the properties a node would give them.

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};

use common::*;

fn descriptor(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/deploy").join(name)
}

/// Runs icegridadmin; panics with its output if it does not succeed.
fn admin_ok(port: u16, command: &str) -> String {
    let (ok, out, err) = icegridadmin(port, command);
    assert!(ok, "`{command}' failed:\n{out}\n{err}");
    out
}

/// Runs icegridadmin; panics if it succeeds; returns what it printed on stderr.
fn admin_fails(port: u16, command: &str) -> String {
    let (ok, out, err) = icegridadmin(port, command);
    assert!(!ok, "`{command}' succeeded:\n{out}");
    err
}

fn lines(s: &str) -> Vec<String> {
    let mut l: Vec<String> = s.lines().map(str::trim).filter(|l| !l.is_empty()).map(String::from).collect();
    l.sort();
    l
}

/// ZeroC's registry on `port`, with its data in `data`.
fn icegridregistry(port: u16, data: &std::path::Path) -> Server {
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

/// The deployment checks, against whichever registry listens on `port`.
fn deploy_and_inspect(port: u16) {
    let app = descriptor("app.xml");
    admin_ok(port, &format!("application add '{}'", app.display()));
    assert_eq!(lines(&admin_ok(port, "application list")), ["Demo"]);

    let described = admin_ok(port, "application describe Demo");
    for expected in ["revision = `1'", "greeting = `hello'", "id = `TesterGroup'", "TesterTemplate", "node `node1'"] {
        assert!(described.contains(expected), "no {expected} in:\n{described}");
    }
    assert_eq!(lines(&admin_ok(port, "server list")), ["Tester-1", "Tester-2"]);
    // The template's parameters, defaults, variables and property set, instantiated.
    let server = admin_ok(port, "server describe Tester-1");
    for expected in [
        "id = `Tester-1.TestAdapter'",
        "replica group id = `TesterGroup'",
        "priority = `2'",
        "Greeting = `hello from Tester-1'",
        "Ice.Trace.Network = `0'",
        "identity = `tester-1'",
        "proxy options = `-e 1.1'",
        "activation = `manual'",
    ] {
        assert!(server.contains(expected), "no {expected} in:\n{server}");
    }
    let objects = lines(&admin_ok(port, "object list"));
    for o in ["tester", "tester-1", "tester-2"] {
        assert!(objects.iter().any(|x| x == o), "{objects:?}");
    }
    let tester = admin_ok(port, "object describe tester");
    assert!(tester.contains("@ TesterGroup") && tester.contains("::Interop::Tester"), "{tester}");
    let adapters = lines(&admin_ok(port, "adapter list"));
    for a in ["Tester-1.TestAdapter", "Tester-2.TestAdapter", "TesterGroup"] {
        assert!(adapters.iter().any(|x| x == a), "{adapters:?}");
    }
    assert_eq!(lines(&admin_ok(port, "node list")), ["node1"]);
    assert_eq!(admin_ok(port, "node ping node1").trim(), "node is down");
    let template = admin_ok(port, "server template describe Demo TesterTemplate");
    assert!(template.contains("parameters = `index priority'"), "{template}");
    assert!(template.contains("server `Tester-${index}'"), "the template itself, not instantiated: {template}");
    // No node is running: server commands say so, as IceGrid does.
    let err = admin_fails(port, "server state Tester-1");
    assert!(err.contains("node `node1' couldn't be reached") && err.contains("the node is not active"), "{err}");
    assert!(admin_fails(port, "server state Nobody").contains("couldn't find server `Nobody'"));
    // What an application declares is its own.
    assert!(admin_fails(port, "object remove tester").contains("removing object `tester' is not allowed"));
    assert!(admin_fails(port, "adapter remove Tester-1.TestAdapter").contains("is not allowed"));

    // Descriptors that do not instantiate: a typed error, nothing of them deployed.
    let err = admin_fails(port, &format!("application add '{}'", descriptor("unknown-template.xml").display()));
    assert!(err.contains("DeploymentException") && err.contains("unknown server template `NoSuchTemplate'"), "{err}");
    let err = admin_fails(port, &format!("application add '{}'", descriptor("clash.xml").display()));
    assert!(err.contains("DeploymentException") && err.contains("server `Tester-1' is already registered"), "{err}");
    let err = admin_fails(port, &format!("application add '{}'", app.display()));
    assert!(err.contains("already exists"), "{err}");
    assert_eq!(lines(&admin_ok(port, "application list")), ["Demo"]);
    assert!(!lines(&admin_ok(port, "object list")).iter().any(|x| x == "broken"));
    assert!(!lines(&admin_ok(port, "server list")).iter().any(|x| x == "Fine"));

    // An update: a changed variable and a new server.
    admin_ok(port, &format!("application update '{}'", descriptor("app-updated.xml").display()));
    assert!(admin_ok(port, "application describe Demo").contains("revision = `2'"));
    assert_eq!(lines(&admin_ok(port, "server list")), ["Extra", "Tester-1", "Tester-2"]);
    assert!(admin_ok(port, "server describe Tester-2").contains("Greeting = `bonjour from Tester-2'"));
    // A template instantiated on its own.
    admin_ok(port, "server template instantiate Demo node1 TesterTemplate index=3");
    assert!(admin_ok(port, "server describe Tester-3").contains("priority = `0'"), "the parameter's default");
    let err = admin_fails(port, "server template instantiate Demo node1 TesterTemplate colour=red");
    assert!(err.contains("DeploymentException"), "{err}");

    admin_ok(port, "application remove Demo");
    assert!(lines(&admin_ok(port, "application list")).is_empty());
    assert!(lines(&admin_ok(port, "server list")).is_empty());
    assert!(!lines(&admin_ok(port, "object list")).iter().any(|x| x == "tester"));
    assert!(admin_fails(port, "application remove Demo").contains("couldn't find application `Demo'"));
}

#[test]
fn icegridadmin_deploys_an_application_on_floe_registry() {
    let data = TempDir::new("deploy");
    let port = free_port();
    let _registry = registry(port, &data.0, &[]);
    deploy_and_inspect(port);
}

#[test]
fn the_same_deployment_checks_pass_on_icegridregistry() {
    let data = TempDir::new("deploy-zeroc");
    let port = free_port();
    let _registry = icegridregistry(port, &data.0);
    deploy_and_inspect(port);
}

#[test]
fn a_cyclic_descriptor_is_refused() {
    let data = TempDir::new("deploy-cycle");
    let port = free_port();
    let _registry = registry(port, &data.0, &[]);
    let err = admin_fails(port, &format!("application add '{}'", descriptor("cycle.xml").display()));
    assert!(err.contains("DeploymentException"), "{err}");
    assert!(lines(&admin_ok(port, "application list")).is_empty());
}

/// Ice's Python interop server, started as a node would start a deployed server: with its
/// adapter id and replica group from the descriptor.
fn deployed_python_server(port: u16, server: &str) -> Server {
    let mut cmd = Command::new("/usr/bin/python3");
    cmd.arg(repo_root().join("tests/interop/python/server.py"))
        .args(["--endpoints", "tcp -h 127.0.0.1"])
        .arg(format!("--TestAdapter.AdapterId={server}.TestAdapter"))
        .arg("--TestAdapter.ReplicaGroupId=TesterGroup")
        .arg(locator_property(port))
        .stderr(Stdio::null());
    start_until(cmd, "TestAdapter ready")
}

#[test]
fn a_deployed_replica_group_serves_its_well_known_object_by_priority() {
    let data = TempDir::new("deploy-group");
    let port = free_port();
    // Without dynamic registration: only the deployed adapters may register.
    let _registry = registry(port, &data.0, &[]);
    admin_ok(port, &format!("application add '{}'", descriptor("app.xml").display()));
    let _s1 = deployed_python_server(port, "Tester-1");
    let _s2 = deployed_python_server(port, "Tester-2");
    let endpoints = admin_ok(port, "adapter endpoints TesterGroup");
    assert_eq!(endpoints.lines().filter(|l| l.contains("Tester-")).count(), 2, "{endpoints}");

    // `ordered` with IceGrid's default of one replica: the locator gives the endpoints of the
    // member with the best priority (Tester-2, priority 1) only.
    let group = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            "import sys, Ice\n\
             with Ice.initialize(sys.argv) as c:\n\
             \x20   loc = Ice.LocatorPrx.uncheckedCast(c.getDefaultLocator())\n\
             \x20   g = loc.findAdapterById('TesterGroup')\n\
             \x20   one = loc.findAdapterById('Tester-2.TestAdapter')\n\
             \x20   print(len(g.ice_getEndpoints()), g.ice_getEndpoints()[0].toString() == one.ice_getEndpoints()[0].toString())\n",
        )
        .arg(locator_property(port))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&group.stdout).trim(), "1 True", "{}", String::from_utf8_lossy(&group.stderr));

    // floe's interop client runs every check through the group.
    let mut client = Command::new(interop_binary("floe-interop-client"));
    client.args(["--proxy", "tester @ TesterGroup", &locator_property(port), "--no-shutdown"]);
    eprintln!("floe client via a deployed replica group: {}", run_client(client, 180));
    // The declared well-known object resolves through the group, for an Ice client.
    let ping = Command::new("/usr/bin/python3")
        .arg("-c")
        .arg(
            "import sys, Ice\n\
             with Ice.initialize(sys.argv) as c:\n\
             \x20   p = c.stringToProxy('tester')\n\
             \x20   p.ice_ping()\n\
             \x20   print(p.ice_isA('::Interop::Tester'))\n",
        )
        .arg(locator_property(port))
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&ping.stdout).trim(), "True", "{}", String::from_utf8_lossy(&ping.stderr));

    // An adapter that is not deployed may not register.
    // Its activation must fail with Ice's error for it, not merely time out.
    let stray = Command::new("timeout")
        .args(["20", "/usr/bin/python3"])
        .arg(repo_root().join("tests/interop/python/server.py"))
        .args(["--endpoints", "tcp -h 127.0.0.1", "--TestAdapter.AdapterId=Stray", &locator_property(port)])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&stray.stderr);
    assert_ne!(stray.status.code(), Some(124), "the undeployed adapter's server kept running: it registered");
    assert!(!stray.status.success() && err.contains("NotRegisteredException"), "{:?}: {err}", stray.status);
}

#[test]
fn applications_survive_a_registry_restart() {
    let data = TempDir::new("deploy-restart");
    let port = free_port();
    let registry1 = registry(port, &data.0, &[]);
    admin_ok(port, &format!("application add '{}'", descriptor("app.xml").display()));
    admin_ok(port, &format!("application update '{}'", descriptor("app-updated.xml").display()));
    let before = admin_ok(port, "application describe Demo");
    assert!(registry1.terminate().success());

    let _registry2 = registry(port, &data.0, &[]);
    assert_eq!(admin_ok(port, "application describe Demo"), before);
    assert_eq!(lines(&admin_ok(port, "server list")), ["Extra", "Tester-1", "Tester-2"]);
    assert!(admin_ok(port, "object describe tester").contains("@ TesterGroup"));
}

/// Runs the observer client (`python/observers.py`) against the registry on `port` while an
/// application is added, updated and removed; returns what its observers were told.
fn observed_events(port: u16) -> Vec<String> {
    use std::io::{BufRead, BufReader};
    let mut child = Command::new("timeout")
        .args(["60", "/usr/bin/python3"])
        .arg(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/observers.py"))
        .args([&port.to_string(), INSTANCE])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    for line in lines.by_ref() {
        let line = line.unwrap();
        let ready = line == "ready";
        seen.push(line);
        if ready {
            break;
        }
    }
    assert_eq!(seen.last().map(String::as_str), Some("ready"), "the observer client did not start: {seen:?}");
    assert_eq!(seen[0], format!("locator {INSTANCE}/Locator"), "Ice/LocatorFinder gives the locator");
    admin_ok(port, &format!("application add '{}'", descriptor("app.xml").display()));
    admin_ok(port, &format!("application update '{}'", descriptor("app-updated.xml").display()));
    admin_ok(port, "application remove Demo");
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    let status = child.wait().unwrap();
    let mut err = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
    assert!(status.success(), "the observer client failed: {rest:?}\n{err}");
    rest
}

#[test]
fn admin_observers_follow_application_changes_as_on_icegridregistry() {
    let expected = {
        let data = TempDir::new("observers-zeroc");
        let port = free_port();
        let _registry = icegridregistry(port, &data.0);
        observed_events(port)
    };
    let data = TempDir::new("observers");
    let port = free_port();
    let _registry = registry(port, &data.0, &[]);
    let got = observed_events(port);
    assert_eq!(
        expected,
        ["init ", "registries Master", "added Demo revision 1", "updated Demo revision 2", "removed Demo"],
        "icegridregistry's observers"
    );
    assert_eq!(got, expected);
}
