//! Network faults, in a network namespace this test creates (a veth pair whose two addresses
//! exist only inside it): a delay with `tc netem` (when the kernel has it) and a complete cut. Invocation timeouts fire,
//! nothing hangs, a non-idempotent request is never executed twice, and calls work again once
//! the network is back. Needs root (as the test command runs) and iproute2.

mod common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{start, Server};
use floe::{Communicator, Error, Proxy};
use floe_interop::interop::TesterPrx;

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap_or_else(|e| panic!("{args:?}: {e}"));
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
}

/// The namespace, veth pair and server; removed on drop.
struct Net {
    ns: String,
    host_if: String,
    ns_ip: String,
    server: Option<Server>,
}

impl Net {
    /// Cuts the network: a blackhole route drops every packet for the namespace on this
    /// machine (taking the link down instead would let the default route carry them away).
    fn cut(&self) {
        sh(&["ip", "route", "add", "blackhole", &format!("{}/32", self.ns_ip)]);
    }

    fn restore(&self) {
        sh(&["ip", "route", "del", "blackhole", &format!("{}/32", self.ns_ip)]);
    }
}

impl Drop for Net {
    fn drop(&mut self) {
        drop(self.server.take());
        let _ = Command::new("ip").args(["route", "del", "blackhole", &format!("{}/32", self.ns_ip)]).output();
        let _ = Command::new("ip").args(["link", "del", &self.host_if]).output();
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).output();
    }
}

fn setup() -> (Net, String) {
    let id = std::process::id() % 50_000;
    let ns = format!("floe-fault-{id}");
    let (a, b) = (format!("ffa{id}"), format!("ffb{id}"));
    let octet = 1 + (id % 250);
    let (host_ip, ns_ip) = (format!("10.251.{octet}.1"), format!("10.251.{octet}.2"));
    sh(&["ip", "netns", "add", &ns]);
    let mut net = Net { ns: ns.clone(), host_if: a.clone(), ns_ip: ns_ip.clone(), server: None };
    sh(&["ip", "link", "add", &a, "type", "veth", "peer", "name", &b]);
    sh(&["ip", "link", "set", &b, "netns", &ns]);
    sh(&["ip", "addr", "add", &format!("{host_ip}/30"), "dev", &a]);
    sh(&["ip", "link", "set", &a, "up"]);
    sh(&["ip", "netns", "exec", &ns, "ip", "addr", "add", &format!("{ns_ip}/30"), "dev", &b]);
    sh(&["ip", "netns", "exec", &ns, "ip", "link", "set", &b, "up"]);
    sh(&["ip", "netns", "exec", &ns, "ip", "link", "set", "lo", "up"]);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", &ns, env!("CARGO_BIN_EXE_floe-interop-server"), "--endpoints"])
        .arg(format!("tcp -h {ns_ip} -p 12010"))
        .stderr(Stdio::null());
    net.server = Some(start(cmd));
    (net, format!("tester:tcp -h {ns_ip} -p 12010 -t 2000"))
}

#[test]
fn delays_and_cuts_inside_a_network_namespace() {
    let (net, proxy) = setup();
    let c = Communicator::new().unwrap();
    let t = TesterPrx::from_object(c.string_to_proxy(&proxy).unwrap());
    c.block_on(t.reset_counter()).unwrap();
    c.block_on(t.inc_counter(1)).unwrap();

    // 200 ms of delay on the way out: a call takes at least 200 ms; a 100 ms invocation
    // timeout fires. This needs the kernel's netem qdisc, which not every kernel has.
    let netem = Command::new("tc")
        .args(["qdisc", "add", "dev", &net.host_if, "root", "netem", "delay", "200ms"])
        .output()
        .map(|o| o.status.success())
        .unwrap_or(false);
    if netem {
        let start = Instant::now();
        c.block_on(t.ping()).unwrap();
        assert!(start.elapsed() >= Duration::from_millis(190), "{:?}", start.elapsed());
        let quick = t.ice_invocation_timeout(Some(Duration::from_millis(100)));
        assert!(matches!(c.block_on(quick.ping()), Err(Error::InvocationTimeout(_))));
        sh(&["tc", "qdisc", "del", "dev", &net.host_if, "root"]);
    } else {
        eprintln!(
            "skipping the delay case only: this kernel has no netem qdisc (tc: \"Specified qdisc kind is unknown\")"
        );
    }

    // A complete cut: timeouts fire promptly, nothing hangs.
    net.cut();
    let cut = t.ice_invocation_timeout(Some(Duration::from_millis(500)));
    let start = Instant::now();
    for _ in 0..3 {
        match c.block_on(cut.inc_counter(1)) {
            Err(Error::InvocationTimeout(_)) => {}
            other => panic!("during the cut: {other:?}"),
        }
    }
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());
    // A new connection to the cut-off host fails promptly with a typed error (the blackhole
    // route makes connect() fail at once; a silent network would hit the 500 ms timeout).
    let fresh = Communicator::new().unwrap();
    let unreachable = fresh.string_to_proxy(&proxy.replace("-t 2000", "-t 500")).unwrap();
    let start = Instant::now();
    match fresh.block_on(unreachable.ice_ping()) {
        Err(Error::ConnectFailed { .. }) => {}
        other => panic!("connecting during the cut: {other:?}"),
    }
    assert!(start.elapsed() < Duration::from_secs(3), "{:?}", start.elapsed());

    // Back: calls work again, and the three timed-out increments were sent once each at most
    // (TCP may still deliver them after the cut; floe never resends a non-idempotent request).
    net.restore();
    let deadline = Instant::now() + Duration::from_secs(20);
    let count = loop {
        match c.block_on(t.get_counter()) {
            Ok(n) => break n,
            Err(e) if Instant::now() < deadline => {
                eprintln!("waiting for the network: {e}");
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("the network did not come back: {e}"),
        }
    };
    assert!((1..=4).contains(&count), "counter {count}: a request ran twice");
    std::thread::sleep(Duration::from_millis(500));
    let settled = c.block_on(t.get_counter()).unwrap();
    assert!(settled <= 4, "counter {settled}: a request ran twice");
    c.block_on(t.ping()).unwrap();
    c.block_on(t.shutdown()).unwrap();
}
