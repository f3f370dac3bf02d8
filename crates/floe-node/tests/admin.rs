//! What icegridadmin reads of a running grid through the registry: a server's run-time
//! properties (`server properties`, `server property`: the registry routes the request to
//! the server's node, which routes it to the server's admin object) and the files of
//! servers, nodes and registries (`server show`, `node show`, `registry show`). The same
//! commands run on four grids, every pairing of ZeroC's icegridregistry and icegridnode 3.7
//! with floe-registry and floe-node, and each grid must print what ZeroC's own grid prints.

mod support;

use support::*;

/// One icegridadmin command's outcome: whether it succeeded, and what it printed (its
/// output, or for a failure its error message), with the grid's directory, port and the
/// server's pid replaced by placeholders.
type Outcome = (String, bool, String);

fn outcomes(registry_kind: Registry, node_kind: Node) -> Vec<Outcome> {
    let dir = TempDir::new("admin");
    let port = free_port();
    let registry_err = dir.0.join("registry.stderr");
    let registry_args = [format!("--Ice.StdErr={}", registry_err.display())];
    let data = dir.sub("registry");
    let _registry = match registry_kind {
        Registry::Zeroc => icegridregistry_with(port, &data, &registry_args),
        Registry::Floe => {
            let mut args = registry_args.to_vec();
            args.push(format!("--IceGrid.Registry.LMDB.Path={}", data.display()));
            floe_registry_with(port, &data, &args)
        }
    };
    let node_err = dir.0.join("node1.stderr");
    let node_args = [format!("--Ice.StdErr={}", node_err.display())];
    let _node = node(node_kind, "node1", port, &dir, &node_args);
    wait_for_node(port, "node1");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "shown.xml").display()));
    admin_ok(port, "server start Shown");
    let pid = admin_ok(port, "server pid Shown").trim().to_string();
    // The server prints its lines as it starts; wait for them to be in its output file.
    let out_file = dir.0.join("node1-out/Shown.out");
    eventually(std::time::Duration::from_secs(10), "the server printed its lines", || {
        std::fs::read_to_string(&out_file).unwrap_or_default().contains("PINGED_SERVER=Shown")
    });

    let normalise = |text: &str| {
        text.replace(&dir.0.display().to_string(), "<dir>").replace(&port.to_string(), "<port>").replace(&pid, "<pid>")
    };
    let mut got = Vec::new();
    let mut run = |command: &str| {
        let (ok, out, err) = icegridadmin(port, command);
        // A failure's message is the first line icegridadmin writes to stderr.
        let text = if ok { out } else { err.lines().next().unwrap_or_default().to_string() };
        got.push((command.to_string(), ok, normalise(&text)));
    };
    run("server properties Shown");
    run("server property Shown Shown.Colour");
    run("server property Shown Ice.Admin.ServerId");
    run("server show Shown stdout");
    run("server show -t 1 Shown stdout");
    run("server show -h 1 Shown stdout");
    run("server show Shown stderr");
    let log = servers_dir().join("shown.log");
    run(&format!("server show Shown {}", log.display()));
    run(&format!("server show -t 2 Shown {}", log.display()));
    run("server show Shown /etc/passwd");
    run("server show Nothing stdout");
    run("server properties Nothing");
    run("node show node1 stdout");
    run("node show nothing stderr");
    run("registry show Nothing stderr");
    run("registry show Master stdout");

    // The node's and the registry's own stderr: what they log differs from one program to
    // the other (ZeroC's registry logs nothing); what icegridadmin shows must be what the
    // file holds (which may have grown since).
    for (command, file) in [("node show node1 stderr", &node_err), ("registry show Master stderr", &registry_err)] {
        let before = std::fs::read_to_string(file).unwrap();
        let out = admin_ok(port, command);
        let after = std::fs::read_to_string(file).unwrap();
        // After icegridadmin's header line (`node `node1' stderr: `).
        let shown: Vec<&str> = out.lines().skip(1).filter(|l| !l.is_empty()).collect();
        let held: Vec<&str> = after.lines().filter(|l| !l.is_empty()).collect();
        assert!(shown.len() >= before.lines().filter(|l| !l.is_empty()).count(), "`{command}': {out}\nvs\n{before}");
        assert_eq!(shown, held[..shown.len().min(held.len())], "`{command}'");
    }
    got
}

fn compare(registry_kind: Registry, node_kind: Node) {
    let reference = outcomes(Registry::Zeroc, Node::Zeroc);
    let got = outcomes(registry_kind, node_kind);
    eprintln!("on ZeroC's grid: {reference:#?}");
    // What the commands are meant to show, on ZeroC's own grid.
    let find = |c: &str| reference.iter().find(|o| o.0 == c).unwrap().clone();
    assert!(find("server properties Shown").2.contains("Shown.Colour=blue"), "{reference:#?}");
    assert_eq!(find("server property Shown Shown.Colour").2.trim(), "blue");
    assert!(find("server show Shown stdout").2.contains("cwd "), "{reference:#?}");
    assert!(!find("server show Shown /etc/passwd").1);
    let log = format!("server show -t 2 Shown {}", servers_dir().join("shown.log").display());
    assert!(find(&log).2.ends_with("second line\nthird and last line\n"), "{reference:#?}");
    for (want, have) in reference.iter().zip(&got) {
        assert_eq!(want, have, "{registry_kind:?} registry, {node_kind:?} node");
    }
}

#[test]
fn admin_reads_through_floe_registry_and_floe_node() {
    compare(Registry::Floe, Node::Floe);
}

#[test]
fn admin_reads_through_icegridregistry_and_floe_node() {
    compare(Registry::Zeroc, Node::Floe);
}

#[test]
fn admin_reads_through_floe_registry_and_icegridnode() {
    compare(Registry::Floe, Node::Zeroc);
}
