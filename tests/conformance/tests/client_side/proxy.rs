//! Ice/proxy: the client checks of `AllTests.py` against Ice's Python server.
//!
//! Ported: 154 checks (assertions in the source, each opaque-endpoint parse error counted) —
//! proxy strings (identities, facets, adapter ids, modes, quoting and escapes, the parse
//! errors), identity strings, the `ice_*` factory methods floe has and proxy equality, checked
//! casts (with a context, up and down, to a missing facet and a type the object is not),
//! `ice_fixed`, encoding versions against the server, and opaque endpoints (their parse errors,
//! their printed forms, and the server echoing them back).
//!
//! Not ported, as floe has no equivalent:
//! - `stringToProxy("")` and `propertyToProxy("bogus")` returning a null proxy (floe has no
//!   null `ObjectPrx`: the empty string is a parse error, a null proxy is `None`);
//! - `propertyToProxy` and `proxyToProperty` (floe builds proxies from strings only);
//! - the `ice_collocationOptimized`, `ice_connectionCached`, `ice_connectionId`,
//!   `ice_getCompress` (as `Unset`) methods, the ordering of proxies and
//!   endpoints (floe proxies are not ordered), and the `RuntimeError` of `ice_timeout(0)`
//!   and friends (floe's factory methods do not fail);
//! - the `ToStringMode.ASCII` and `Compat` identity printers (floe prints Ice's default,
//!   `Unicode`; the strings of the other modes are still parsed below);
//! - `ice_getCommunicator` equality and the communicator shutdown/destroy sequence (local
//!   communicator API).

use floe::encoding::{DecodeError, EncodingVersion, InvocationMode};
use floe::reference::{identity_to_string, string_to_identity};
use floe::{Context, Error, Identity, ObjectPrx, Proxy};
use floe_conformance::generated::proxy::test::*;

use super::Helper;

fn id(name: &str, category: &str) -> Identity {
    Identity { name: name.into(), category: category.into() }
}

/// The identity, facet and adapter id of a parsed proxy string.
#[track_caller]
fn parsed(h: &Helper, s: &str) -> (Identity, String, String) {
    let p = h.communicator.string_to_proxy(s).unwrap_or_else(|e| panic!("{s:?} does not parse: {e}"));
    let r = p.reference();
    (r.wire.identity.clone(), r.wire.facet.clone(), r.wire.adapter_id.clone())
}

#[track_caller]
fn parse_fails(h: &Helper, s: &str) {
    match h.communicator.string_to_proxy(s) {
        Err(Error::ProxyParse { .. }) => {}
        other => panic!("{s:?} should not parse, got {other:?}"),
    }
}

fn ctx(pairs: &[(&str, &str)]) -> Context {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub(crate) async fn all_tests(h: Helper) {
    checks(h, false).await;
}

/// The checks against a server that knows the `ssl` transport (Ice 3.8's C++ server, with
/// IceSSL in libIce): it decodes the opaque `ssl` endpoint it is echoed and sends it back
/// as an `ssl` endpoint of its own making.
#[allow(dead_code)] // used by the Ice 3.8 matrix (cpp38_servers), not by client_side.rs
pub(crate) async fn all_tests_ssl_server(h: Helper) {
    checks(h, true).await;
}

async fn checks(h: Helper, server_knows_ssl: bool) {
    let c = &h.communicator;
    let base = h.proxy("test");

    // stringToProxy
    let plain = |name: &str| (id(name, ""), String::new(), String::new());
    assert_eq!(parsed(&h, "test"), plain("test"));
    assert_eq!(parsed(&h, "test "), plain("test"));
    assert_eq!(parsed(&h, " test "), plain("test"));
    assert_eq!(parsed(&h, " test"), plain("test"));
    assert_eq!(parsed(&h, "'test -f facet'"), plain("test -f facet"));
    parse_fails(&h, "\"test -f facet'");
    assert_eq!(parsed(&h, "\"test -f facet\""), plain("test -f facet"));
    assert_eq!(parsed(&h, "\"test -f facet@test\""), plain("test -f facet@test"));
    assert_eq!(parsed(&h, "\"test -f facet@test @test\""), plain("test -f facet@test @test"));
    parse_fails(&h, "test test");
    assert_eq!(parsed(&h, "test\\040test"), plain("test test"));
    parse_fails(&h, "test\\777");
    assert_eq!(parsed(&h, "test\\40test").0.name, "test test");
    // Octal and hex corner cases.
    assert_eq!(parsed(&h, "test\\4test").0.name, "test\u{4}test");
    assert_eq!(parsed(&h, "test\\04test").0.name, "test\u{4}test");
    assert_eq!(parsed(&h, "test\\004test").0.name, "test\u{4}test");
    assert_eq!(parsed(&h, "test\\1114test").0.name, "test\u{49}4test");
    assert_eq!(parsed(&h, "test\\b\\f\\n\\r\\t\\'\\\"\\\\test"), plain("test\u{8}\u{c}\n\r\t'\"\\test"));
    assert_eq!(parsed(&h, "category/test"), (id("test", "category"), String::new(), String::new()));

    for s in ["test:tcp --sourceAddress \"::1\"", "test:udp --sourceAddress \"::1\" --interface \"0:0:0:0:0:0:0:1%lo\""]
    {
        let b1 = c.string_to_proxy(s).unwrap_or_else(|e| panic!("{s}: {e}"));
        let again = c.string_to_proxy(&b1.to_string()).unwrap_or_else(|e| panic!("{b1}: {e}"));
        assert_eq!(b1, again, "{s} does not read back from {b1}");
    }

    let at = |name: &str, category: &str, adapter: &str| (id(name, category), String::new(), adapter.to_string());
    assert_eq!(parsed(&h, "test@adapter"), at("test", "", "adapter"));
    parse_fails(&h, "id@adapter test");
    assert_eq!(parsed(&h, "category/test@adapter"), at("test", "category", "adapter"));
    assert_eq!(parsed(&h, "category/test@adapter:tcp"), at("test", "category", "adapter:tcp"));
    assert_eq!(parsed(&h, "'category 1/test'@adapter"), at("test", "category 1", "adapter"));
    assert_eq!(parsed(&h, "'category/test 1'@adapter"), at("test 1", "category", "adapter"));
    assert_eq!(parsed(&h, "'category/test'@'adapter 1'"), at("test", "category", "adapter 1"));
    assert_eq!(parsed(&h, "\"category \\/test@foo/test\"@adapter"), at("test", "category /test@foo", "adapter"));
    assert_eq!(
        parsed(&h, "\"category \\/test@foo/test\"@\"adapter:tcp\""),
        at("test", "category /test@foo", "adapter:tcp")
    );

    let facet = |name: &str, facet: &str, adapter: &str| (id(name, ""), facet.to_string(), adapter.to_string());
    assert_eq!(parsed(&h, "id -f facet"), facet("id", "facet", ""));
    assert_eq!(parsed(&h, "id -f 'facet x'"), facet("id", "facet x", ""));
    assert_eq!(parsed(&h, "id -f \"facet x\""), facet("id", "facet x", ""));
    parse_fails(&h, "id -f \"facet x");
    parse_fails(&h, "id -f 'facet x");
    assert_eq!(parsed(&h, "test -f facet:tcp"), facet("test", "facet", ""));
    assert_eq!(parsed(&h, "test -f \"facet:tcp\""), facet("test", "facet:tcp", ""));
    assert_eq!(parsed(&h, "test -f facet@test"), facet("test", "facet", "test"));
    assert_eq!(parsed(&h, "test -f 'facet@test'"), facet("test", "facet@test", ""));
    assert_eq!(parsed(&h, "test -f 'facet@test'@test"), facet("test", "facet@test", "test"));
    parse_fails(&h, "test -f facet@test @test");

    let mode = |s: &str| c.string_to_proxy(s).expect(s).mode();
    assert_eq!(mode("test"), InvocationMode::Twoway);
    assert_eq!(mode("test -t"), InvocationMode::Twoway);
    assert_eq!(mode("test -o"), InvocationMode::Oneway);
    assert_eq!(mode("test -O"), InvocationMode::BatchOneway);
    assert_eq!(mode("test -d"), InvocationMode::Datagram);
    assert_eq!(mode("test -D"), InvocationMode::BatchDatagram);
    assert!(!c.string_to_proxy("test").expect("test").reference().wire.secure);
    assert!(c.string_to_proxy("test -s").expect("test -s").reference().wire.secure);
    // Endpoint parse errors.
    parse_fails(&h, "test:tcp@adapterId");
    parse_fails(&h, "test::tcp");

    // Proxy methods.
    assert_eq!(
        identity_to_string(base.ice_identity(string_to_identity("other").expect("other")).ice_get_identity()),
        "other"
    );
    let ident = id("test", "\u{7f}\u{20ac}");
    let unicode = "\\u007f\u{20ac}/test";
    assert_eq!(identity_to_string(&ident), unicode);
    assert_eq!(string_to_identity(unicode).expect("unicode"), ident);
    assert_eq!(string_to_identity("\\u007f\\u20ac/test").expect("ascii"), ident);
    assert_eq!(string_to_identity("\\177\\342\\202\\254/test").expect("compat"), ident);
    assert_eq!(string_to_identity(&identity_to_string(&ident)).expect("default"), ident);

    assert_eq!(base.ice_facet("facet").ice_get_facet(), "facet");
    assert_eq!(base.ice_adapter_id("id").reference().wire.adapter_id, "id");
    assert_eq!(base.ice_twoway().mode(), InvocationMode::Twoway);
    assert_eq!(base.ice_oneway().mode(), InvocationMode::Oneway);
    assert_eq!(base.ice_batch_oneway().mode(), InvocationMode::BatchOneway);
    assert_eq!(base.ice_datagram().mode(), InvocationMode::Datagram);
    assert_eq!(base.ice_batch_datagram().mode(), InvocationMode::BatchDatagram);
    assert!(base.ice_secure(true).reference().wire.secure);
    assert!(!base.ice_secure(false).reference().wire.secure);
    assert!(base.ice_prefer_secure(true).reference().prefer_secure);
    assert!(!base.ice_prefer_secure(false).reference().prefer_secure);
    assert_eq!(base.ice_encoding_version(EncodingVersion::V1_0).ice_get_encoding_version(), EncodingVersion::V1_0);
    assert_eq!(base.ice_encoding_version(EncodingVersion::V1_1).ice_get_encoding_version(), EncodingVersion::V1_1);
    assert_ne!(base.ice_encoding_version(EncodingVersion::V1_0).ice_get_encoding_version(), EncodingVersion::V1_1);

    // Proxy comparison (equality: floe proxies are not ordered).
    let comp = c.string_to_proxy("foo").expect("foo");
    assert_eq!(comp, c.string_to_proxy("foo").expect("foo"));
    assert_ne!(comp, c.string_to_proxy("foo2").expect("foo2"));
    assert_eq!(comp.ice_facet("facet"), comp.ice_facet("facet"));
    assert_ne!(comp.ice_facet("facet"), comp.ice_facet("facet1"));
    assert_eq!(comp.ice_oneway(), comp.ice_oneway());
    assert_ne!(comp.ice_oneway(), comp.ice_twoway());
    assert_eq!(comp.ice_secure(true), comp.ice_secure(true));
    assert_ne!(comp.ice_secure(false), comp.ice_secure(true));
    use floe::reference::EndpointSelection;
    assert_eq!(
        comp.ice_endpoint_selection(EndpointSelection::Random),
        comp.ice_endpoint_selection(EndpointSelection::Random)
    );
    assert_ne!(
        comp.ice_endpoint_selection(EndpointSelection::Random),
        comp.ice_endpoint_selection(EndpointSelection::Ordered)
    );
    assert_eq!(comp.ice_compress(true), comp.ice_compress(true));
    assert_ne!(comp.ice_compress(false), comp.ice_compress(true));
    assert_eq!(comp.ice_timeout(20), comp.ice_timeout(20));
    // This proxy has no endpoints: the timeout is kept for those a locator would resolve.
    assert_ne!(comp.ice_timeout(10), comp.ice_timeout(20));
    assert_eq!(comp.ice_get_timeout(), None);
    assert_eq!(comp.ice_timeout(10).ice_get_timeout(), Some(10));
    assert_eq!(comp.ice_timeout(20).ice_get_timeout(), Some(20));

    let loc1 = c.string_to_proxy("loc1:default -p 10000").expect("loc1");
    let loc2 = c.string_to_proxy("loc2:default -p 10000").expect("loc2");
    assert_eq!(comp.ice_locator(None), comp.ice_locator(None));
    assert_eq!(comp.ice_locator(Some(&loc1)), comp.ice_locator(Some(&loc1)));
    assert_ne!(comp.ice_locator(Some(&loc1)), comp.ice_locator(None));
    assert_ne!(comp.ice_locator(None), comp.ice_locator(Some(&loc2)));
    assert_ne!(comp.ice_locator(Some(&loc1)), comp.ice_locator(Some(&loc2)));
    let rtr1 = c.string_to_proxy("rtr1:default -p 10000").expect("rtr1");
    let rtr2 = c.string_to_proxy("rtr2:default -p 10000").expect("rtr2");
    assert_eq!(comp.ice_router(None), comp.ice_router(None));
    assert_eq!(comp.ice_router(Some(&rtr1)), comp.ice_router(Some(&rtr1)));
    assert_ne!(comp.ice_router(Some(&rtr1)), comp.ice_router(None));
    assert_ne!(comp.ice_router(None), comp.ice_router(Some(&rtr2)));
    assert_ne!(comp.ice_router(Some(&rtr1)), comp.ice_router(Some(&rtr2)));

    let (ctx1, ctx2) = (ctx(&[("ctx1", "v1")]), ctx(&[("ctx2", "v2")]));
    assert_eq!(comp.ice_context(Context::new()), comp.ice_context(Context::new()));
    assert_eq!(comp.ice_context(ctx1.clone()), comp.ice_context(ctx1.clone()));
    assert_ne!(comp.ice_context(ctx1.clone()), comp.ice_context(Context::new()));
    assert_ne!(comp.ice_context(Context::new()), comp.ice_context(ctx2.clone()));
    assert_ne!(comp.ice_context(ctx1.clone()), comp.ice_context(ctx2.clone()));
    assert_eq!(comp.ice_prefer_secure(true), comp.ice_prefer_secure(true));
    assert_ne!(comp.ice_prefer_secure(true), comp.ice_prefer_secure(false));

    let p10000 = c.string_to_proxy("foo:tcp -h 127.0.0.1 -p 10000").expect("foo");
    let p10001 = c.string_to_proxy("foo:tcp -h 127.0.0.1 -p 10001").expect("foo");
    assert_ne!(p10000, p10001);
    let a1 = c.string_to_proxy("foo@MyAdapter1").expect("foo@MyAdapter1");
    let a2 = c.string_to_proxy("foo@MyAdapter2").expect("foo@MyAdapter2");
    assert_ne!(a1, a2);
    assert_eq!(a1.ice_locator_cache_timeout(20), a1.ice_locator_cache_timeout(20));
    assert_ne!(a1.ice_locator_cache_timeout(10), a1.ice_locator_cache_timeout(20));
    let ms = |n| Some(std::time::Duration::from_millis(n));
    assert_eq!(a1.ice_invocation_timeout(ms(20)), a1.ice_invocation_timeout(ms(20)));
    assert_ne!(a1.ice_invocation_timeout(ms(10)), a1.ice_invocation_timeout(ms(20)));
    let direct = c.string_to_proxy("foo:tcp -h 127.0.0.1 -p 1000").expect("foo");
    assert_ne!(direct, a1);
    let endpoints = |s: &str| c.string_to_proxy(s).expect(s).reference().wire.endpoints.clone();
    assert_ne!(endpoints("foo:tcp -h 127.0.0.1 -p 10000"), endpoints("foo:tcp -h 127.0.0.1 -p 10001"));
    assert_eq!(endpoints("foo:tcp -h 127.0.0.1 -p 10000"), p10000.reference().wire.endpoints);
    assert_eq!(direct.ice_encoding_version(EncodingVersion::V1_0), direct.ice_encoding_version(EncodingVersion::V1_0));
    assert_ne!(direct.ice_encoding_version(EncodingVersion::V1_0), direct.ice_encoding_version(EncodingVersion::V1_1));

    // Checked cast.
    let cl = MyClassPrx::checked_cast(&base).await.expect("checkedCast").expect("a MyClass");
    let derived = MyDerivedClassPrx::checked_cast(&cl).await.expect("checkedCast").expect("a MyDerivedClass");
    assert_eq!(*cl.as_object(), base);
    assert_eq!(*derived.as_object(), base);
    assert_eq!(cl.as_object(), derived.as_object());
    assert!(MyDerivedClassPrx::checked_cast(&cl.ice_facet("facet")).await.expect("checkedCast").is_none());
    assert!(base.checked_cast("::Ice::Locator").await.expect("checkedCast").is_none());
    let cl2 = MyClassPrx::checked_cast(&derived).await.expect("checkedCast").expect("upcast");
    let obj = <ObjectPrx as Proxy>::checked_cast(&derived).await.expect("checkedCast").expect("upcast");
    assert_eq!(*cl2.as_object(), obj);
    assert_eq!(cl2.as_object(), derived.as_object());

    // Checked cast with a context: the server saw it on ice_isA.
    let tccp = MyClassPrx::checked_cast(&base).await.expect("checkedCast").expect("a MyClass");
    assert!(tccp.get_context().await.expect("getContext").is_empty());
    let c1 = ctx(&[("one", "hello"), ("two", "world")]);
    let tccp = MyClassPrx::checked_cast(&base.ice_context(c1.clone())).await.expect("checkedCast").expect("a MyClass");
    assert_eq!(tccp.get_context().await.expect("getContext"), c1);

    // ice_fixed
    let connection = cl.ice_get_connection().await.expect("connection");
    let fixed = cl.ice_fixed(connection.clone());
    fixed.get_context().await.expect("getContext on a fixed proxy");
    assert!(cl.as_object().ice_secure(true).ice_fixed(connection.clone()).reference().wire.secure);
    assert_eq!(cl.ice_facet("facet").ice_fixed(connection.clone()).ice_get_facet(), "facet");
    assert_eq!(cl.ice_oneway().ice_fixed(connection.clone()).as_object().mode(), InvocationMode::Oneway);
    assert!(fixed.as_object().reference().context.is_empty());
    assert_eq!(cl.ice_context(c1.clone()).ice_fixed(connection.clone()).as_object().reference().context.len(), 2);
    assert_eq!(fixed.as_object().reference().invocation_timeout, None);
    assert_eq!(
        cl.ice_invocation_timeout(ms(10)).ice_fixed(connection.clone()).as_object().reference().invocation_timeout,
        ms(10)
    );
    assert!(fixed.ice_get_connection().await.expect("connection") == connection);
    assert!(fixed.ice_fixed(connection.clone()).ice_get_connection().await.expect("connection") == connection);

    // Encoding versions: 2.0 is refused, 1.0 works, 1.3 falls back to 1.1.
    let cl20 = MyClassPrx::from_object(c.string_to_proxy(&format!("test -e 2.0:{}", h.endpoint(0))).expect("ref20"));
    match cl20.ice_ping().await {
        Err(Error::Marshal(DecodeError::UnsupportedEncoding { major: 2, minor: 0 })) => {}
        other => panic!("expected UnsupportedEncodingException, got {other:?}"),
    }
    let cl10 = MyClassPrx::from_object(c.string_to_proxy(&format!("test -e 1.0:{}", h.endpoint(0))).expect("ref10"));
    cl10.ice_ping().await.expect("ping 1.0");
    cl10.ice_encoding_version(EncodingVersion::V1_0).ice_ping().await.expect("ping 1.0");
    cl.ice_encoding_version(EncodingVersion::V1_0).ice_ping().await.expect("ping 1.0");
    let cl13 = MyClassPrx::from_object(c.string_to_proxy(&format!("test -e 1.3:{}", h.endpoint(0))).expect("ref13"));
    cl13.ice_ping().await.expect("ping 1.3");

    // Opaque endpoints.
    for s in [
        "id:opaque -t 99 -v abc -x abc",
        "id:opaque",
        "id:opaque -t 1 -t 1 -v abc",
        "id:opaque -t 1 -v abc -v abc",
        "id:opaque -v abc",
        "id:opaque -t 1",
        "id:opaque -t -v abc",
        "id:opaque -t 1 -v",
        "id:opaque -t x -v abc",
        "id:opaque -t -1 -v abc",
        "id:opaque -t 99 -v x?c",
    ] {
        parse_fails(&h, s);
    }
    let p1 = c.string_to_proxy("test -e 1.1:opaque -t 1 -e 1.0 -v CTEyNy4wLjAuMeouAAAQJwAAAA==").expect("opaque");
    assert_eq!(p1.to_string(), "test -t -e 1.1:tcp -h 127.0.0.1 -p 12010 -t 10000");
    let p2 = c.string_to_proxy("test -e 1.1:opaque -e 1.1 -t 1 -v CTEyNy4wLjAuMeouAAAQJwAAAA==").expect("opaque");
    assert_eq!(p2.to_string(), "test -t -e 1.1:tcp -h 127.0.0.1 -p 12010 -t 10000");
    let p1 = c
        .string_to_proxy(
            "test -e 1.0:opaque -t 1 -e 1.0 -v CTEyNy4wLjAuMeouAAAQJwAAAA==:opaque -t 1 -e 1.0 -v CTEyNy4wLjAuMusuAAAQJwAAAA==",
        )
        .expect("opaque");
    assert_eq!(p1.to_string(), "test -t -e 1.0:tcp -h 127.0.0.1 -p 12010 -t 10000:tcp -h 127.0.0.2 -p 12011 -t 10000");
    // An ssl endpoint and a nonsense one stay opaque over tcp.
    let opaque = "test -t -e 1.0:opaque -t 2 -e 1.0 -v CTEyNy4wLjAuMREnAAD/////AA==:opaque -t 99 -e 1.0 -v abch";
    let p1 = c
        .string_to_proxy("test -e 1.0:opaque -t 2 -e 1.0 -v CTEyNy4wLjAuMREnAAD/////AA==:opaque -t 99 -e 1.0 -v abch")
        .expect("opaque");
    assert_eq!(p1.to_string(), opaque);
    match p1.ice_encoding_version(EncodingVersion::V1_0).ice_ping().await {
        Err(Error::NoEndpoint(_)) => {}
        other => panic!("expected NoEndpointException, got {other:?}"),
    }
    let p2 = derived.echo(Some(&p1)).await.expect("echo").expect("a proxy");
    if server_knows_ssl {
        // The server's own `ssl` endpoint (no timeout), which floe reads as one.
        assert_eq!(p2.to_string(), "test -t -e 1.0:ssl -h 127.0.0.1 -p 10001 -t infinite:opaque -t 99 -e 1.0 -v abch");
    } else {
        assert_eq!(p2.to_string(), opaque);
    }

    cl.shutdown().await.expect("shutdown");
}
