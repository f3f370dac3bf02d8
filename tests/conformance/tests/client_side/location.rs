//! Ice/location: the client checks of `AllTests.py`, and those of Ice's C++ `AllTests.cpp`
//! that the Python server supports, against Ice's Python server, which runs the test locator
//! and registry and starts and stops the object server on request (`ServerManager`). The
//! client's default locator is the server's `locator`.
//!
//! Ported: 70 checks (assertions in the source, several in loops) — the default locator and
//! router of proxies (and none without `Ice.Default.Locator`/`Ice.Default.Router`, from a
//! communicator configured so), indirect proxies (adapter ids, a replica group, well-known
//! objects, spacing around `@`) resolved through the locator across server restarts,
//! NotRegisteredException for an unknown object and adapter, the locator cache timeout
//! (counted with the test locator's `getRequestCount`), the adapter and well-known object
//! caches when the registry changes under them (stale endpoints, unknown adapters, an
//! object without endpoints), proxies from the server (their adapter ids, before and after
//! a restart), object migration, and that the server is gone after its shutdown.
//!
//! Not ported, as floe has no equivalent:
//! - `Communicator.setDefaultLocator`/`setDefaultRouter`: floe's defaults come from properties,
//!   so the same checks run on communicators made with and without those properties;
//! - the C++ "locator request queuing" (it needs `ice_connectionCached(false)`, which floe
//!   does not have, to count one lookup per request);
//! - the C++ "locator cache background updates" (`Ice.BackgroundLocatorCacheUpdates`);
//! - the C++ "locator encoding resolution": it resolves `TestAdapter10`, which only the C++
//!   server registers;
//! - "indirect references to collocated objects": floe has no collocation optimization, so
//!   `ice_getConnection` on a proxy to the client's own adapter returns a connection.

use floe::{Error, Proxy};
use floe_conformance::generated::location::test::*;

use super::Helper;

fn same_identity(a: Option<floe::ObjectPrx>, b: &floe::ObjectPrx) -> bool {
    a.is_some_and(|a| a.ice_get_identity() == b.ice_get_identity())
}

async fn count(locator: &TestLocatorPrx) -> i32 {
    locator.get_request_count().await.expect("getRequestCount")
}

fn ms(n: u64) -> std::time::Duration {
    std::time::Duration::from_millis(n)
}

async fn ping(p: &floe::ObjectPrx) {
    let t = TestIntfPrx::checked_cast(p).await.unwrap_or_else(|e| panic!("checkedCast {p}: {e}"));
    t.expect("a TestIntf").ice_ping().await.expect("ice_ping");
}

pub(crate) async fn all_tests(h: Helper) {
    let c = &h.communicator;
    let manager =
        ServerManagerPrx::checked_cast(&h.proxy("ServerManager")).await.expect("checkedCast").expect("a ServerManager");
    let locator = c.default_locator().expect("Ice.Default.Locator");
    let locator = floe_conformance::generated::location::ice::LocatorPrx::from_object(locator);
    let registry = locator.get_registry().await.expect("getRegistry").expect("a registry");
    assert!(TestLocatorRegistryPrx::checked_cast(&registry).await.expect("checkedCast").is_some());

    let parse = |s: &str| c.string_to_proxy(s).unwrap_or_else(|e| panic!("{s}: {e}"));
    let base = parse("test @ TestAdapter");
    let base2 = parse("test @ TestAdapter");
    let base3 = parse("test");
    let base4 = parse("ServerManager");
    let base5 = parse("test2");

    assert!(same_identity(base.ice_get_locator(), locator.as_object()));
    let another = parse("anotherLocator");
    let b = base.ice_locator(Some(&another));
    assert!(same_identity(b.ice_get_locator(), &another));
    let b = parse("test @ TestAdapter");
    assert!(same_identity(b.ice_get_locator(), locator.as_object()));
    assert!(b.ice_get_router().is_none());
    let another_router = parse("anotherRouter");
    let b = b.ice_router(Some(&another_router));
    assert!(same_identity(b.ice_get_router(), &another_router));
    // Without a default locator (Ice: `setDefaultLocator(None)`), and with a default router.
    let (bare, _) = floe::Communicator::from_args(h.args.clone()).expect("communicator");
    let b = bare.string_to_proxy("test @ TestAdapter").expect("proxy");
    assert!(b.ice_get_locator().is_none());
    assert!(same_identity(b.ice_locator(Some(&another)).ice_get_locator(), &another));
    bare.destroy().await;
    let mut args = h.args.clone();
    args.push("--Ice.Default.Router=dummyrouter".into());
    let (routed, _) = floe::Communicator::from_args(args).expect("communicator");
    let b = routed.string_to_proxy("test @ TestAdapter").expect("proxy");
    let dummy = routed.string_to_proxy("dummyrouter").expect("dummyrouter");
    assert!(same_identity(b.ice_get_router(), &dummy));
    routed.destroy().await;
    assert!(parse("test @ TestAdapter").ice_get_router().is_none());

    manager.start_server().await.expect("startServer");
    let obj = TestIntfPrx::checked_cast(&base).await.expect("checkedCast").expect("a TestIntf");
    for s in ["test@TestAdapter", "test   @TestAdapter", "test@   TestAdapter"] {
        assert!(TestIntfPrx::checked_cast(&parse(s)).await.expect(s).is_some(), "{s}");
    }
    assert!(TestIntfPrx::checked_cast(&base2).await.expect("checkedCast").is_some());
    assert!(TestIntfPrx::checked_cast(&base3).await.expect("checkedCast").is_some());
    assert!(ServerManagerPrx::checked_cast(&base4).await.expect("checkedCast").is_some());
    assert!(TestIntfPrx::checked_cast(&base5).await.expect("checkedCast").is_some());
    let base6 = parse("test @ ReplicatedAdapter");
    assert!(TestIntfPrx::checked_cast(&base6).await.expect("checkedCast").is_some());

    // A replica group, after a restart.
    obj.shutdown().await.expect("shutdown");
    manager.start_server().await.expect("startServer");
    base6.ice_ping().await.expect("ping of test @ ReplicatedAdapter");

    // Restarts: the proxies find the object server again through the locator.
    for targets in [
        vec![&base2],
        vec![&base3, &base2],
        vec![&base2, &base3],
        vec![&base2],
        vec![&base3],
        vec![&base2],
        vec![&base5],
    ] {
        obj.shutdown().await.expect("shutdown");
        manager.start_server().await.expect("startServer");
        for p in targets {
            ping(p).await;
        }
    }

    // Unknown identity and adapter.
    match parse("unknown/unknown").ice_ping().await {
        Err(Error::NotRegistered { kind, id }) => {
            assert_eq!(kind, "object");
            assert_eq!(id, "unknown/unknown");
        }
        other => panic!("expected NotRegisteredException, got {other:?}"),
    }
    match parse("test @ TestAdapterUnknown").ice_ping().await {
        Err(Error::NotRegistered { kind, id }) => {
            assert_eq!(kind, "object adapter");
            assert_eq!(id, "TestAdapterUnknown");
        }
        other => panic!("expected NotRegisteredException, got {other:?}"),
    }

    // The locator cache timeout: 0 asks the locator every time, N seconds keeps answers
    // that long, −1 (the default here) forever. A well-known object costs two lookups (the
    // object, then its adapter).
    let test = TestLocatorPrx::from_object(locator.as_object().clone());
    let mut n = count(&test).await;
    let by_adapter = || parse("test@TestAdapter");
    by_adapter().ice_locator_cache_timeout(0).ice_ping().await.expect("ping");
    n += 1;
    assert_eq!(count(&test).await, n);
    by_adapter().ice_locator_cache_timeout(0).ice_ping().await.expect("ping");
    n += 1;
    assert_eq!(count(&test).await, n);
    by_adapter().ice_locator_cache_timeout(2).ice_ping().await.expect("ping");
    assert_eq!(count(&test).await, n);
    tokio::time::sleep(ms(1300)).await;
    by_adapter().ice_locator_cache_timeout(1).ice_ping().await.expect("ping");
    n += 1;
    assert_eq!(count(&test).await, n);
    parse("test").ice_locator_cache_timeout(0).ice_ping().await.expect("ping");
    n += 2;
    assert_eq!(count(&test).await, n);
    parse("test").ice_locator_cache_timeout(2).ice_ping().await.expect("ping");
    assert_eq!(count(&test).await, n);
    tokio::time::sleep(ms(1300)).await;
    parse("test").ice_locator_cache_timeout(1).ice_ping().await.expect("ping");
    n += 2;
    assert_eq!(count(&test).await, n);
    by_adapter().ice_locator_cache_timeout(-1).ice_ping().await.expect("ping");
    parse("test").ice_locator_cache_timeout(-1).ice_ping().await.expect("ping");
    by_adapter().ice_ping().await.expect("ping");
    parse("test").ice_ping().await.expect("ping");
    assert_eq!(count(&test).await, n);
    assert_eq!(parse("test").ice_locator_cache_timeout(99).ice_get_locator_cache_timeout(), 99);

    // Proxies from the server: indirect through the adapter id, or the replica group.
    let obj = TestIntfPrx::checked_cast(&by_adapter()).await.expect("checkedCast").expect("a TestIntf");
    let hello = obj.get_hello().await.expect("getHello").expect("a Hello");
    assert_eq!(hello.as_object().reference().wire.adapter_id, "TestAdapter");
    hello.say_hello().await.expect("sayHello");
    let replicated = obj.get_replicated_hello().await.expect("getReplicatedHello").expect("a Hello");
    assert_eq!(replicated.as_object().reference().wire.adapter_id, "ReplicatedAdapter");
    replicated.say_hello().await.expect("sayHello");

    // The adapter cache: an unknown adapter, then one the registry points at the object
    // server, then at nothing listening (the cached endpoints still answer until the cache
    // is bypassed or the stale entry fails), then back.
    let dead = c.string_to_proxy(&format!("dummy:{}", h.endpoint(99))).expect("dummy");
    let a3 = || parse("test@TestAdapter3");
    match a3().ice_ping().await {
        Err(Error::NotRegistered { kind, id }) => {
            assert_eq!(kind, "object adapter");
            assert_eq!(id, "TestAdapter3");
        }
        other => panic!("expected NotRegisteredException, got {other:?}"),
    }
    let at_server = test.find_adapter_by_id("TestAdapter").await.expect("findAdapterById");
    registry.set_adapter_direct_proxy("TestAdapter3", at_server.as_ref()).await.expect("setAdapterDirectProxy");
    a3().ice_ping().await.expect("ping of test@TestAdapter3");
    registry.set_adapter_direct_proxy("TestAdapter3", Some(&dead)).await.expect("setAdapterDirectProxy");
    a3().ice_ping().await.expect("ping of test@TestAdapter3 from the cache");
    assert!(a3().ice_locator_cache_timeout(0).ice_ping().await.is_err(), "fresh lookup: nothing listens");
    assert!(a3().ice_ping().await.is_err(), "the cache now holds the dead endpoint");
    registry.set_adapter_direct_proxy("TestAdapter3", at_server.as_ref()).await.expect("setAdapterDirectProxy");
    a3().ice_ping().await.expect("ping of test@TestAdapter3 after the stale entry failed");

    // The well-known object cache.
    let test_registry = TestLocatorRegistryPrx::from_object(registry.as_object().clone());
    test_registry.add_object(Some(&parse("test3@TestUnknown"))).await.expect("addObject");
    match parse("test3").ice_ping().await {
        Err(Error::NotRegistered { kind, id }) => {
            assert_eq!(kind, "object adapter");
            assert_eq!(id, "TestUnknown");
        }
        other => panic!("expected NotRegisteredException, got {other:?}"),
    }
    test_registry.add_object(Some(&parse("test3@TestAdapter4"))).await.expect("addObject");
    registry.set_adapter_direct_proxy("TestAdapter4", Some(&dead)).await.expect("setAdapterDirectProxy");
    assert!(parse("test3").ice_ping().await.is_err(), "TestAdapter4 points at nothing");
    registry.set_adapter_direct_proxy("TestAdapter4", at_server.as_ref()).await.expect("setAdapterDirectProxy");
    parse("test3").ice_ping().await.expect("ping of test3");
    registry.set_adapter_direct_proxy("TestAdapter4", Some(&dead)).await.expect("setAdapterDirectProxy");
    parse("test3").ice_ping().await.expect("ping of test3 from the cache");
    assert!(parse("test@TestAdapter4").ice_locator_cache_timeout(0).ice_ping().await.is_err());
    assert!(parse("test@TestAdapter4").ice_ping().await.is_err());
    assert!(parse("test3").ice_ping().await.is_err());
    test_registry.add_object(Some(&parse("test3@TestAdapter"))).await.expect("addObject");
    parse("test3").ice_ping().await.expect("ping of test3 through TestAdapter");
    test_registry.add_object(Some(&parse("test4"))).await.expect("addObject");
    match parse("test4").ice_ping().await {
        Err(Error::NoEndpoint(_)) => {}
        other => panic!("expected NoEndpointException, got {other:?}"),
    }

    // Proxies from the server after a restart.
    let hello = obj.get_hello().await.expect("getHello").expect("a Hello");
    hello.say_hello().await.expect("sayHello");
    let replicated = obj.get_replicated_hello().await.expect("getReplicatedHello").expect("a Hello");
    obj.shutdown().await.expect("shutdown");
    manager.start_server().await.expect("startServer");
    hello.say_hello().await.expect("sayHello after a restart");
    replicated.say_hello().await.expect("sayHello (replica group) after a restart");

    // Object migration.
    let hello = HelloPrx::checked_cast(&parse("hello")).await.expect("checkedCast").expect("a Hello");
    obj.migrate_hello().await.expect("migrateHello");
    hello.ice_get_connection().await.expect("connection").close().await;
    hello.say_hello().await.expect("sayHello");
    obj.migrate_hello().await.expect("migrateHello");
    hello.say_hello().await.expect("sayHello");
    obj.migrate_hello().await.expect("migrateHello");
    hello.say_hello().await.expect("sayHello");

    obj.shutdown().await.expect("shutdown");
    for p in [&base2, &base3, &base5] {
        assert!(p.ice_ping().await.is_err(), "{p} still answers after the server's shutdown");
    }

    manager.shutdown().await.expect("shutdown");
}
