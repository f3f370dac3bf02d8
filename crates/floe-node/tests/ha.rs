//! A floe grid on a three-member etcd cluster: two floe-registry replicas share their state
//! in etcd, floe-node keeps a session with each, and on-demand servers keep being activated
//! and reached while a replica is SIGKILLed in the middle of an activation.

mod support;

#[allow(clippy::duplicate_mod)]
#[path = "../../../tests/support/etcd_cluster.rs"]
mod etcd_cluster;

use std::path::Path;
use std::time::{Duration, Instant};

use floe::{Communicator, Properties};
use support::*;

fn nodes_of(port: u16) -> Vec<String> {
    icegridadmin(port, "node list").1.lines().map(|l| l.trim().to_string()).collect()
}

/// floe-registry replica `name` on `port`, its state in `cluster`, its log in `dir`.
fn replica(cluster: &etcd_cluster::EtcdCluster, dir: &TempDir, port: u16, name: &str) -> Proc {
    floe_registry_with(
        port,
        &dir.0,
        &[
            format!("--Floe.Registry.Etcd.Endpoints={}", cluster.endpoints()),
            format!("--IceGrid.Registry.ReplicaName={name}"),
            // The cluster may still be electing its first leader.
            "--Floe.Registry.Etcd.Timeout=20".to_string(),
        ],
    )
}

#[test]
fn servers_are_activated_through_the_surviving_replica_when_one_is_killed() {
    let cluster = etcd_cluster::EtcdCluster::start("node-ha", Path::new(env!("CARGO_TARGET_TMPDIR")))
        .expect("etcd-server is installed (scripts/install-deps)");
    let dir = TempDir::new("ha");
    let (a, b) = (free_port(), free_port());
    let replica = |port: u16, name: &str| replica(&cluster, &dir, port, name);
    let replica_a = replica(a, "registry-a");
    let _replica_b = replica(b, "registry-b");
    let both = format!("{INSTANCE}/Locator:tcp -h 127.0.0.1 -p {a}:tcp -h 127.0.0.1 -p {b}");
    let _node = floe_node_with("node1", &dir, &[format!("--Ice.Default.Locator={both}")]);
    eventually(Duration::from_secs(30), "both replicas list node1", || {
        nodes_of(a).contains(&"node1".to_string()) && nodes_of(b).contains(&"node1".to_string())
    });
    admin_ok(a, &format!("application add '{}'", descriptor(&dir, "activation.xml").display()));

    let props = Properties::new();
    props.set("Ice.Default.Locator", &both);
    props.set("Ice.Warn.Connections", "0");
    props.set("Ice.RetryIntervals", "0 100 500 1000 2000");
    let c = Communicator::with_properties(props).unwrap();
    let ping = |object: &str| {
        let p = c.string_to_proxy(object).unwrap().ice_invocation_timeout(Some(Duration::from_secs(30)));
        c.block_on(async move { p.ice_ping().await }).map_err(|e| e.to_string())
    };
    ping("ondemand").unwrap();

    // Stop the server through replica b, kill replica a while a request activates it again:
    // the request (retried through b) and the ones after it are answered.
    admin_ok(b, "server stop OnDemand");
    let pinger = std::thread::scope(|s| {
        let h = s.spawn(|| ping("ondemand"));
        std::thread::sleep(Duration::from_millis(20));
        replica_a.kill_now();
        h.join().unwrap()
    });
    pinger.unwrap();
    let started = Instant::now();
    let mut answered = 0;
    while answered < 200 && started.elapsed() < Duration::from_secs(10) {
        ping("ondemand").unwrap();
        answered += 1;
    }
    assert!(admin_ok(b, "server state OnDemand").starts_with("active"));
    // A manual server, started through the survivor.
    admin_ok(b, "server start Manual");
    ping("manual").unwrap();
    c.destroy_blocking();
}

/// ZeroC's icegridnode registers with one floe-registry replica (`Master`, the only one in
/// its `Ice.Default.Locator`); applications added and removed through the other replica reach it
/// all the same: the servers are loaded on it, then destroyed, without a client asking.
#[test]
fn icegridnode_hears_of_changes_made_through_another_replica() {
    let cluster = etcd_cluster::EtcdCluster::start("node-follow", Path::new(env!("CARGO_TARGET_TMPDIR")))
        .expect("etcd-server is installed (scripts/install-deps)");
    let dir = TempDir::new("follow");
    let (a, b) = (free_port(), free_port());
    let replica = |port: u16, name: &str| replica(&cluster, &dir, port, name);
    // icegridnode looks for the registry named `Master` at its locator's endpoints.
    let _replica_a = replica(a, "registry-a");
    let _replica_b = replica(b, "Master");
    let _node = icegridnode("node1", b, &dir, &[]);
    wait_for_node(b, "node1");
    admin_ok(a, &format!("application add '{}'", descriptor(&dir, "shown.xml").display()));
    let config = dir.0.join("node1-data/servers/Shown/config/config");
    eventually(Duration::from_secs(20), "icegridnode wrote the server's configuration", || config.exists());
    admin_ok(a, "application remove Shown");
    eventually(Duration::from_secs(20), "icegridnode removed the server's directory", || {
        !dir.0.join("node1-data/servers/Shown").exists()
    });
}
