//! Allocation by client sessions (`IceGrid::Session`): allocatable objects by identity and by
//! type, the allocation timeout, an allocatable server whose objects go to one session at a
//! time, and a server with the `session` activation mode, which its node runs only for the
//! session that holds it (`${session.id}` in its properties). An Ice for Python client runs
//! the steps (tests/servers/allocate.py) on grids that pair floe's registry and node with
//! ZeroC's, and each must answer every step as ZeroC's own grid does.

mod support;

use std::process::Command;

use support::*;

/// The client's transcript on a grid of `registry_kind` and `node_kind`.
fn transcript(registry_kind: Registry, node_kind: Node) -> Vec<String> {
    let dir = TempDir::new("allocation");
    let port = free_port();
    let data = dir.sub("registry");
    let _registry = match registry_kind {
        Registry::Zeroc => icegridregistry_with(
            port,
            &data,
            &[format!("--IceGrid.Registry.PermissionsVerifier={INSTANCE}/NullPermissionsVerifier")],
        ),
        Registry::Floe => floe_registry(port, &data),
    };
    let _node = node(node_kind, "node1", port, &dir, &[]);
    wait_for_node(port, "node1");
    // Run as root, the nodes run `Sessioned` as its session's user (nobody, then daemon),
    // each appending to the same output files.
    for file in ["Sessioned.out", "Sessioned.err"] {
        let path = dir.sub("node1-out").join(file);
        std::fs::write(&path, "").unwrap();
        std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o666)).unwrap();
    }
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "allocation.xml").display()));
    let out = Command::new("/usr/bin/python3")
        .arg(servers_dir().join("allocate.py"))
        .arg(format!("--Ice.Default.Locator={}", locator(port)))
        .args(["--Ice.Warn.Connections=0", "nobody", "daemon"])
        .output()
        .unwrap();
    let printed = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{registry_kind:?} registry, {node_kind:?} node: the client failed:\n{printed}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    printed.lines().map(str::to_string).collect()
}

fn compare(registry_kind: Registry, node_kind: Node) {
    let reference = transcript(Registry::Zeroc, Node::Zeroc);
    eprintln!("on ZeroC's grid:\n{}", reference.join("\n"));
    // What the steps are meant to show, on ZeroC's own grid.
    for expected in [
        "first allocates sessioned: ok sessioned @ Sessioned.Pinged",
        "session server owner: ok nobody",
        "second got sessioned: ok sessioned @ Sessioned.Pinged",
        "session server owner now: ok daemon",
        "second allocates sessioned (300 ms): ::IceGrid::AllocationTimeoutException",
        "session server after the sessions: ok Inactive",
    ] {
        assert!(reference.iter().any(|l| l == expected), "no `{expected}' on ZeroC's grid");
    }
    // A node run as root runs a `session` server as its session's user.
    // SAFETY: geteuid has no preconditions.
    if unsafe { geteuid() } == 0 {
        for expected in ["session server runs as: ok nobody", "session server runs as now: ok daemon"] {
            assert!(reference.iter().any(|l| l == expected), "no `{expected}' on ZeroC's grid");
        }
    }
    let got = transcript(registry_kind, node_kind);
    assert_eq!(reference.len(), got.len(), "{}", got.join("\n"));
    for (want, have) in reference.iter().zip(&got) {
        assert_eq!(want, have, "{registry_kind:?} registry, {node_kind:?} node");
    }
}

extern "C" {
    fn geteuid() -> u32;
}

#[test]
fn sessions_allocate_on_floe_registry_and_floe_node() {
    compare(Registry::Floe, Node::Floe);
}

#[test]
fn sessions_allocate_on_icegridregistry_and_floe_node() {
    compare(Registry::Zeroc, Node::Floe);
}

#[test]
fn sessions_allocate_on_floe_registry_and_icegridnode() {
    compare(Registry::Floe, Node::Zeroc);
}
