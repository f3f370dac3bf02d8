//! Replica groups of servers that floe-node runs, one per load-balancing policy, resolved by
//! ZeroC's icegridregistry 3.7 and by floe-registry (each test runs on both): two Ice for
//! Python servers on two floe-nodes, members of every group; the locator's answers for each
//! group over many requests follow the group's policy.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use floe::{Communicator, Properties, Proxy};
use floe_icegrid::ice::LocatorPrx;
use support::*;

const GROUPS: [&str; 5] = ["Ordered", "RoundRobin", "Random", "Adaptive", "Both"];

/// The endpoints of a proxy the locator returned (the part after the first `:`), sorted.
fn endpoints(proxy: &floe::ObjectPrx) -> BTreeSet<String> {
    let text = proxy.to_string();
    text.split_once(':').map(|(_, e)| e.split(':').map(|s| s.trim().to_string()).collect()).unwrap_or_default()
}

/// What the locator answers for `adapter`: the members whose endpoints it holds (1 and/or 2).
fn members(c: &Communicator, locator: &LocatorPrx, adapter: &str, of: &[BTreeSet<String>; 2]) -> Vec<u8> {
    let locator = locator.clone();
    let adapter = adapter.to_string();
    let proxy = c
        .block_on(async move { locator.find_adapter_by_id(&adapter).await })
        .unwrap_or_else(|e| panic!("findAdapterById: {e:?}"))
        .expect("a proxy");
    let got = endpoints(&proxy);
    let found: Vec<u8> = (0..2u8).filter(|k| of[*k as usize].is_subset(&got)).map(|k| k + 1).collect();
    assert!(!found.is_empty(), "{proxy} is neither member ({of:?})");
    found
}

fn groups_follow_their_policies(kind: Registry) {
    let dir = TempDir::new("groups");
    let port = free_port();
    let _registry = registry(kind, port, &dir.sub("registry"));
    let _node1 = floe_node("node1", port, &dir, &[]);
    let _node2 = floe_node("node2", port, &dir, &[]);
    wait_for_node(port, "node1");
    wait_for_node(port, "node2");
    admin_ok(port, &format!("application add '{}'", descriptor(&dir, "groups.xml").display()));
    admin_ok(port, "server start Member-1");
    admin_ok(port, "server start Member-2");

    let props = Properties::new();
    props.set("Ice.Warn.Connections", "0");
    let c = Communicator::with_properties(props).unwrap();
    let locator = LocatorPrx::from_object(
        c.string_to_proxy(&locator(port)).unwrap().ice_invocation_timeout(Some(Duration::from_secs(20))),
    );
    let mut seen = std::collections::BTreeMap::new();
    for group in GROUPS {
        let of = [1, 2].map(|k| {
            let locator = locator.clone();
            let id = format!("Member-{k}.{group}");
            let p =
                c.block_on(async move { locator.find_adapter_by_id(&id).await }).unwrap().expect("member endpoints");
            endpoints(&p)
        });
        let answers: Vec<Vec<u8>> = (0..20).map(|_| members(&c, &locator, group, &of)).collect();
        seen.insert(group, answers);
    }
    // `ordered`: always the member of lowest priority (Member-2's adapter has priority 1).
    assert!(seen["Ordered"].iter().all(|m| m == &[2]), "{:?}", seen["Ordered"]);
    // `round-robin`: each member in turn.
    let rr = &seen["RoundRobin"];
    assert!(rr.iter().all(|m| m.len() == 1), "{rr:?}");
    assert!(rr.windows(2).all(|w| w[0] != w[1]), "{rr:?}");
    // `random`: one member each time, both over 20 requests (all the same: a chance of 2^-19).
    let random = &seen["Random"];
    assert!(random.iter().all(|m| m.len() == 1), "{random:?}");
    assert_eq!(random.iter().flatten().collect::<BTreeSet<_>>().len(), 2, "{random:?}");
    // `adaptive`: one member each time, from the nodes' load samples.
    assert!(seen["Adaptive"].iter().all(|m| m.len() == 1), "{:?}", seen["Adaptive"]);
    // `n-replicas="2"`: the endpoints of both members in each answer.
    assert!(seen["Both"].iter().all(|m| m == &[1, 2]), "{:?}", seen["Both"]);

    // A member's server stopped and disabled: every group resolves to the other member.
    admin_ok(port, "server disable Member-2");
    admin_ok(port, "server stop Member-2");
    for group in GROUPS {
        let of = [1, 2].map(|k| {
            let locator = locator.clone();
            let id = format!("Member-{k}.{group}");
            match c.block_on(async move { locator.find_adapter_by_id(&id).await }) {
                Ok(Some(p)) => endpoints(&p),
                _ => BTreeSet::from(["none".to_string()]),
            }
        });
        for _ in 0..4 {
            assert_eq!(members(&c, &locator, group, &of), vec![1], "{group} with Member-2 disabled");
        }
    }
    c.destroy_blocking();
}

mod on_icegridregistry {
    #[test]
    fn replica_groups_follow_their_policies() {
        super::groups_follow_their_policies(super::Registry::Zeroc);
    }
}

mod on_floe_registry {
    #[test]
    fn replica_groups_follow_their_policies() {
        super::groups_follow_their_policies(super::Registry::Floe);
    }
}
