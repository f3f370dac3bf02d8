//! Ice/location: the first part of the client checks of `AllTests.py` against Ice's Python
//! server, which runs the test locator and registry and starts and stops the object server
//! on request (`ServerManager`). The client's default locator is the server's `locator`.
//!
//! Ported: 20 checks (assertions in the source, several in loops) — the default locator and
//! router of proxies, indirect proxies (adapter ids, well-known objects, spacing around `@`)
//! resolved through the locator across server restarts, NotRegisteredException for an unknown
//! object and adapter, proxies from the server, and object migration.
//!
//! Not ported yet: the rest of `AllTests.py` (locator cache timeouts, request counts,
//! replicated adapters, `ice_locator` with the registry's own locator, collocated indirect
//! references). Not applicable: `Communicator.setDefaultLocator`/`setDefaultRouter` (floe's
//! defaults come from properties only).

use floe::{Error, Proxy};
use floe_conformance::generated::location::test::*;

use super::Helper;

fn same_identity(a: Option<floe::ObjectPrx>, b: &floe::ObjectPrx) -> bool {
    a.is_some_and(|a| a.ice_get_identity() == b.ice_get_identity())
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

    manager.start_server().await.expect("startServer");
    let obj = TestIntfPrx::checked_cast(&base).await.expect("checkedCast").expect("a TestIntf");
    for s in ["test@TestAdapter", "test   @TestAdapter", "test@   TestAdapter"] {
        assert!(TestIntfPrx::checked_cast(&parse(s)).await.expect(s).is_some(), "{s}");
    }
    assert!(TestIntfPrx::checked_cast(&base2).await.expect("checkedCast").is_some());
    assert!(TestIntfPrx::checked_cast(&base3).await.expect("checkedCast").is_some());
    assert!(ServerManagerPrx::checked_cast(&base4).await.expect("checkedCast").is_some());
    assert!(TestIntfPrx::checked_cast(&base5).await.expect("checkedCast").is_some());

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

    // A proxy from the server, before and after a restart.
    let hello = obj.get_hello().await.expect("getHello").expect("a Hello");
    hello.say_hello().await.expect("sayHello");
    obj.shutdown().await.expect("shutdown");
    manager.start_server().await.expect("startServer");
    hello.say_hello().await.expect("sayHello after a restart");

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
