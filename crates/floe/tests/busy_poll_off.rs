//! `Floe.Runtime.BusyPoll=0` turns busy polling off: in this process (a test binary of its
//! own, so that no other test spins) calls between two single-thread runtimes work and no
//! thread ever spins.

use std::sync::Arc;

use floe::protocol::OperationMode;
use floe::transport::busy_poll;
use floe::{Communicator, DispatchFuture, Dispatcher, Identity, IncomingRequest, Properties};

/// Answers every request with an empty reply.
struct Nothing;

impl Dispatcher for Nothing {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move { request.current.ok(|_| {}) })
    }
}

fn communicator(busy_poll: Option<&str>) -> Communicator {
    let props = Properties::new();
    props.set("Floe.Runtime.Threads", "1");
    if let Some(budget) = busy_poll {
        props.set("Floe.Runtime.BusyPoll", budget);
    }
    Communicator::with_properties(props).unwrap()
}

#[test]
fn a_zero_budget_never_spins_and_the_default_does() {
    let mut spins_seen = Vec::new();
    for budget in [Some("0"), None] {
        let before = busy_poll::stats();
        let server = communicator(budget);
        let client = communicator(budget);
        let adapter = server.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        adapter.add(Arc::new(Nothing), Identity::new("n"));
        server.block_on(adapter.activate()).unwrap();
        let proxy = client.string_to_proxy(&adapter.create_proxy(Identity::new("n")).to_string()).unwrap();
        for _ in 0..200 {
            client.block_on(proxy.invoke("op", OperationMode::Normal, None, |_| {})).unwrap().expect("a reply");
        }
        client.destroy_blocking();
        server.destroy_blocking();
        let after = busy_poll::stats();
        // A spin made, skipped after misses, or declined on a machine without a spare CPU.
        let tried = |s: busy_poll::Stats| s.spins + s.skipped + s.machine_busy;
        spins_seen.push(tried(after) - tried(before));
    }
    assert_eq!(spins_seen[0], 0, "Floe.Runtime.BusyPoll=0 spins never");
    assert!(spins_seen[1] > 0, "by default the single-thread runtimes spin");
}
