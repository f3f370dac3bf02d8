//! floe-node against ZeroC's icegridregistry 3.7: it registers, the registry loads the
//! servers of an application deployed with icegridadmin on it, and floe-node activates them
//! as icegridnode does (on demand, manually, always), writes their configuration, notices
//! crashes, stops them through their `Process` object, and obeys enable/disable.

mod support;

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

#[test]
fn servers_deployed_on_icegridregistry_are_activated_by_floe_node() {
    let dir = TempDir::new("activation");
    let port = free_port();
    let _registry = icegridregistry(port, &dir.sub("registry"));
    let node = floe_node("node1", port, &dir, &[]);
    eventually(Duration::from_secs(20), "node1 is listed", || {
        icegridadmin(port, "node list").1.lines().any(|l| l.trim() == "node1")
    });
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
