//! Client-side indirection inside one process: datagram proxies over udp, indirect proxies
//! resolved through a locator (with its cache, stale entries and endpoint selection), and
//! proxies routed through a router, with an object adapter that takes callbacks over the
//! router connection. The locator and the router here are small servants speaking
//! `Ice::Locator` and `Ice::Router`; tests/interop runs the same client code against
//! ZeroC's icegridregistry and glacier2router.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::encoding::{Decode, Encode, EndpointData, ProxyData};
use floe::protocol::OperationMode;
use floe::reference::EndpointSelection;
use floe::{Communicator, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, ObjectPrx, Properties};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

/// Counts `tick` requests and answers `who` with its name.
struct Ticker {
    name: &'static str,
    ticks: Arc<AtomicUsize>,
}

impl Dispatcher for Ticker {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let (name, ticks) = (self.name, self.ticks.clone());
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "tick" => {
                    ticks.fetch_add(1, Ordering::SeqCst);
                    c.ok_empty()
                }
                "who" => c.ok(|e| e.write_str(name)),
                "ice_ping" => c.ok_empty(),
                _ => c.operation_not_exist(),
            }
        })
    }
}

fn ticker(name: &'static str) -> (Arc<Ticker>, Arc<AtomicUsize>) {
    let ticks = Arc::new(AtomicUsize::new(0));
    (Arc::new(Ticker { name, ticks: ticks.clone() }), ticks)
}

async fn who(p: &ObjectPrx) -> floe::Result<String> {
    p.invoke("who", OperationMode::Normal, None, |_| {}).await?.unwrap().decode(String::decode)
}

async fn wait_for(count: &AtomicUsize, n: usize) -> usize {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while count.load(Ordering::SeqCst) < n && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    count.load(Ordering::SeqCst)
}

#[test]
fn datagram_proxies_send_oneways_and_batches_over_udp() {
    runtime().block_on(async {
        let server = Communicator::new().unwrap();
        let a =
            server.create_object_adapter_with_endpoints("U", "udp -h 127.0.0.1 -p 0:tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, ticks) = ticker("udp");
        let prx = a.add(servant, Identity::new("t"));
        a.activate().await.unwrap();

        let client = Communicator::new().unwrap();
        let prx = client.string_to_proxy(&prx.to_string()).unwrap();
        let datagram = prx.ice_datagram();
        assert!(datagram.ice_is_datagram());
        for _ in 0..3 {
            datagram.invoke("tick", OperationMode::Normal, None, |_| {}).await.unwrap();
        }
        assert_eq!(wait_for(&ticks, 3).await, 3, "three datagrams");

        let batch = prx.ice_batch_datagram();
        for _ in 0..5 {
            batch.invoke("tick", OperationMode::Normal, None, |_| {}).await.unwrap();
        }
        assert_eq!(ticks.load(Ordering::SeqCst), 3, "queued, not sent");
        batch.ice_flush_batch_requests().await.unwrap();
        assert_eq!(wait_for(&ticks, 8).await, 8, "five requests in one datagram");

        // Twoway-only operations and oversized requests fail with typed errors.
        assert!(matches!(datagram.ice_id().await, Err(Error::TwowayOnly(_))));
        let big = vec![0u8; 70_000];
        let err = datagram.invoke("tick", OperationMode::Normal, None, |e| big.encode(e)).await.unwrap_err();
        assert!(matches!(err, Error::DatagramLimit { max: 65_507, .. }), "{err}");
        // The twoway proxy uses the tcp endpoint, not the udp one.
        assert_eq!(who(&prx).await.unwrap(), "udp");
        // A datagram proxy without a udp endpoint has no usable endpoint.
        let tcp_only = prx.ice_endpoints(vec![prx.reference().wire.endpoints[1].clone()]).ice_datagram();
        assert!(matches!(
            tcp_only.invoke("tick", OperationMode::Normal, None, |_| {}).await,
            Err(Error::NoEndpoint(_))
        ));
        client.destroy().await;
        server.destroy().await;
    });
}

/// An `Ice::Locator` over maps that the test changes, counting the lookups.
#[derive(Default)]
struct TableLocator {
    adapters: Mutex<HashMap<String, ProxyData>>,
    objects: Mutex<HashMap<Identity, ProxyData>>,
    adapter_lookups: AtomicUsize,
    object_lookups: AtomicUsize,
}

impl Dispatcher for TableLocator {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let mut d = request.decoder();
        let c = &request.current;
        let found = match c.operation.as_str() {
            "findAdapterById" => {
                self.adapter_lookups.fetch_add(1, Ordering::SeqCst);
                let id = String::decode(&mut d).unwrap();
                self.adapters.lock().unwrap().get(&id).cloned()
            }
            "findObjectById" => {
                self.object_lookups.fetch_add(1, Ordering::SeqCst);
                let id = Identity::decode(&mut d).unwrap();
                self.objects.lock().unwrap().get(&id).cloned()
            }
            "getRegistry" => None,
            _ => {
                let r = c.operation_not_exist();
                return Box::pin(async move { r });
            }
        };
        let r = c.ok(|e| ProxyData::encode_nullable(found.as_ref(), e));
        Box::pin(async move { r })
    }
}

fn wire(p: &ObjectPrx) -> ProxyData {
    p.reference().wire.clone()
}

#[test]
fn indirect_proxies_resolve_through_the_locator_and_its_cache() {
    runtime().block_on(async {
        let server = Communicator::new().unwrap();
        let registry = server.create_object_adapter_with_endpoints("Registry", "tcp -h 127.0.0.1 -p 0").unwrap();
        let locator = Arc::new(TableLocator::default());
        let locator_prx = registry.add(locator.clone(), Identity::with_category("Test", "Locator"));
        registry.activate().await.unwrap();
        let first = server.create_object_adapter_with_endpoints("First", "tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, _) = ticker("first");
        let direct = first.add(servant, Identity::new("obj"));
        first.activate().await.unwrap();
        locator.adapters.lock().unwrap().insert("A".into(), wire(&direct));
        let mut as_indirect = wire(&direct);
        as_indirect.endpoints.clear();
        as_indirect.adapter_id = "A".into();
        locator.objects.lock().unwrap().insert(Identity::new("obj"), as_indirect);

        let props = Properties::new();
        props.set("Ice.Default.Locator", &locator_prx.to_string());
        let client = Communicator::with_properties(props).unwrap();
        let by_adapter = client.string_to_proxy("obj @ A").unwrap();
        assert!(by_adapter.ice_get_locator().is_some(), "Ice.Default.Locator is every new proxy's locator");
        assert_eq!(who(&by_adapter).await.unwrap(), "first");
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 1);
        // Another proxy for the same adapter uses the cache.
        assert_eq!(who(&client.string_to_proxy("obj @ A").unwrap()).await.unwrap(), "first");
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 1, "answered from the cache");
        // A well-known object: findObjectById, then its adapter (cached).
        let well_known = client.string_to_proxy("obj").unwrap();
        assert_eq!(who(&well_known).await.unwrap(), "first");
        assert_eq!(locator.object_lookups.load(Ordering::SeqCst), 1);
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 1);
        // With a cache timeout of 0 every resolution asks the locator.
        let uncached = client.string_to_proxy("obj @ A").unwrap().ice_locator_cache_timeout(0);
        assert_eq!(uncached.ice_get_locator_cache_timeout(), 0);
        who(&uncached).await.unwrap();
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 2);
        // Unknown ids are NotRegistered; a proxy without a locator has no endpoint.
        let err = who(&client.string_to_proxy("obj @ Nowhere").unwrap()).await.unwrap_err();
        assert!(
            matches!(&err, Error::NotRegistered { kind, id } if kind == "object adapter" && id == "Nowhere"),
            "{err}"
        );
        let err = who(&client.string_to_proxy("ghost").unwrap()).await.unwrap_err();
        assert!(matches!(&err, Error::NotRegistered { kind, .. } if kind == "object"), "{err}");
        let err = who(&by_adapter.ice_locator(None)).await.unwrap_err();
        assert!(matches!(err, Error::NoEndpoint(_)), "{err}");

        // The adapter moves: the cached endpoints no longer connect, and the next proxy asks
        // the locator again and reaches the new place.
        first.deactivate().await;
        let second = server.create_object_adapter_with_endpoints("Second", "tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, _) = ticker("second");
        let moved = second.add(servant, Identity::new("obj"));
        second.activate().await.unwrap();
        locator.adapters.lock().unwrap().insert("A".into(), wire(&moved));
        let lookups = locator.adapter_lookups.load(Ordering::SeqCst);
        assert_eq!(who(&client.string_to_proxy("obj @ A").unwrap()).await.unwrap(), "second");
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), lookups + 1, "one fresh lookup");

        // A replica group: the locator answers with several endpoints; `Ordered` takes the
        // first, `Random` spreads new connections over them.
        let third = server.create_object_adapter_with_endpoints("Third", "tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, _) = ticker("third");
        let replica = third.add(servant, Identity::new("obj"));
        third.activate().await.unwrap();
        let mut group = wire(&moved);
        group.endpoints.extend(wire(&replica).endpoints);
        locator.adapters.lock().unwrap().insert("G".into(), group);
        for _ in 0..5 {
            // A fresh communicator each time: no connection to reuse.
            let props = Properties::new();
            props.set("Ice.Default.Locator", &locator_prx.to_string());
            props.set("Ice.Default.EndpointSelection", "Ordered");
            let c = Communicator::with_properties(props).unwrap();
            let p = c.string_to_proxy("obj @ G").unwrap();
            assert_eq!(p.ice_get_endpoint_selection(), EndpointSelection::Ordered);
            assert_eq!(who(&p).await.unwrap(), "second");
            c.destroy().await;
        }
        let mut seen = std::collections::HashSet::new();
        for _ in 0..40 {
            let props = Properties::new();
            props.set("Ice.Default.Locator", &locator_prx.to_string());
            let c = Communicator::with_properties(props).unwrap();
            seen.insert(who(&c.string_to_proxy("obj @ G").unwrap()).await.unwrap());
            c.destroy().await;
            if seen.len() == 2 {
                break;
            }
        }
        assert_eq!(seen.len(), 2, "random selection reaches both replicas: {seen:?}");
        client.destroy().await;
        server.destroy().await;
    });
}

/// `ice_timeout` on an indirect proxy is kept and applied to the endpoints the locator
/// resolves, as Ice does: the proxy differs from one without it, and its requests go to the
/// resolved endpoint with that timeout (so over a connection of their own, since connections
/// are per endpoint), whether resolved by adapter id or as a well-known object.
#[test]
fn ice_timeout_applies_to_the_endpoints_a_locator_resolves() {
    runtime().block_on(async {
        let server = Communicator::new().unwrap();
        let registry = server.create_object_adapter_with_endpoints("Registry", "tcp -h 127.0.0.1 -p 0").unwrap();
        let locator = Arc::new(TableLocator::default());
        let locator_prx = registry.add(locator.clone(), Identity::with_category("Test", "Locator"));
        registry.activate().await.unwrap();
        let adapter = server.create_object_adapter_with_endpoints("First", "tcp -h 127.0.0.1 -p 0 -t 60000").unwrap();
        let (servant, _) = ticker("first");
        let direct = adapter.add(servant, Identity::new("obj"));
        adapter.activate().await.unwrap();
        locator.adapters.lock().unwrap().insert("A".into(), wire(&direct));
        let mut as_indirect = wire(&direct);
        as_indirect.endpoints.clear();
        as_indirect.adapter_id = "A".into();
        locator.objects.lock().unwrap().insert(Identity::new("obj"), as_indirect);

        let props = Properties::new();
        props.set("Ice.Default.Locator", &locator_prx.to_string());
        let client = Communicator::with_properties(props).unwrap();
        let plain = client.string_to_proxy("obj @ A").unwrap();
        let timed = plain.ice_timeout(1234);
        assert_eq!(plain.ice_get_timeout(), None);
        assert_eq!(timed.ice_get_timeout(), Some(1234));
        assert_ne!(plain, timed, "the timeout of an endpoint-less proxy is part of it");
        assert_ne!(plain.ice_timeout(10), plain.ice_timeout(20));
        assert_eq!(plain.ice_timeout(20), plain.ice_timeout(20));

        assert_eq!(who(&plain).await.unwrap(), "first");
        assert_eq!(who(&timed).await.unwrap(), "first");
        let plain_conn = plain.ice_get_connection().await.unwrap();
        let timed_conn = timed.ice_get_connection().await.unwrap();
        assert_ne!(
            plain_conn.local_address(),
            timed_conn.local_address(),
            "the resolved endpoint carries the proxy's timeout, so it has a connection of its own"
        );
        // The same object found as a well-known one, with the same timeout: the same endpoint.
        let well_known = client.string_to_proxy("obj").unwrap().ice_timeout(1234);
        assert_eq!(who(&well_known).await.unwrap(), "first");
        assert_eq!(well_known.ice_get_connection().await.unwrap().local_address(), timed_conn.local_address());
        // A direct proxy with the resolved endpoint and that timeout shares it too.
        let direct_timed = client.string_to_proxy(&direct.to_string()).unwrap().ice_timeout(1234);
        assert_eq!(direct_timed.ice_get_connection().await.unwrap().local_address(), timed_conn.local_address());
        // Endpoints given after the timeout take it.
        let moved = plain.ice_timeout(1234).ice_endpoints(wire(&direct).endpoints);
        assert_eq!(moved.ice_get_connection().await.unwrap().local_address(), timed_conn.local_address());
        client.destroy().await;
        server.destroy().await;
    });
}

/// The locator cache as Ice keeps it: an answer is recorded even when the proxy that asked
/// reads no cache (timeout 0), a well-known object whose adapter does not resolve is
/// forgotten (so the next lookup finds where it is now), and a well-known object the
/// locator knows without endpoints or adapter id has no endpoint.
#[test]
fn locator_answers_are_cached_and_forgotten_as_ice_does() {
    runtime().block_on(async {
        let server = Communicator::new().unwrap();
        let registry = server.create_object_adapter_with_endpoints("Registry", "tcp -h 127.0.0.1 -p 0").unwrap();
        let locator = Arc::new(TableLocator::default());
        let locator_prx = registry.add(locator.clone(), Identity::with_category("Test", "Locator"));
        registry.activate().await.unwrap();
        let adapter = server.create_object_adapter_with_endpoints("First", "tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, _) = ticker("first");
        let direct = adapter.add(servant, Identity::new("obj"));
        adapter.activate().await.unwrap();
        locator.adapters.lock().unwrap().insert("A".into(), wire(&direct));
        let indirect = |adapter_id: &str| {
            let mut w = wire(&direct);
            w.endpoints.clear();
            w.adapter_id = adapter_id.into();
            w
        };
        locator.objects.lock().unwrap().insert(Identity::new("obj"), indirect("Gone"));
        let mut bare = wire(&direct);
        bare.identity = Identity::new("bare");
        bare.endpoints.clear();
        locator.objects.lock().unwrap().insert(Identity::new("bare"), bare);

        let props = Properties::new();
        props.set("Ice.Default.Locator", &locator_prx.to_string());
        let client = Communicator::with_properties(props).unwrap();
        // A lookup with timeout 0 is recorded; a proxy that reads the cache uses it.
        who(&client.string_to_proxy("obj @ A").unwrap().ice_locator_cache_timeout(0)).await.unwrap();
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 1);
        who(&client.string_to_proxy("obj @ A").unwrap()).await.unwrap();
        assert_eq!(locator.adapter_lookups.load(Ordering::SeqCst), 1, "the timeout-0 answer was cached");

        // The well-known object's adapter is unknown; once the object moves, it is found.
        let err = who(&client.string_to_proxy("obj").unwrap()).await.unwrap_err();
        assert!(matches!(&err, Error::NotRegistered { kind, id } if kind == "object adapter" && id == "Gone"), "{err}");
        locator.objects.lock().unwrap().insert(Identity::new("obj"), indirect("A"));
        assert_eq!(who(&client.string_to_proxy("obj").unwrap()).await.unwrap(), "first");

        // Known, but neither endpoints nor adapter id.
        let err = who(&client.string_to_proxy("bare").unwrap()).await.unwrap_err();
        assert!(matches!(err, Error::NoEndpoint(_)), "{err}");
        client.destroy().await;
        server.destroy().await;
    });
}

#[test]
fn adapters_bind_at_creation_so_early_proxies_carry_the_bound_port() {
    runtime().block_on(async {
        let props = Properties::new();
        props.set("Early.AdapterId", "early");
        let c = Communicator::with_properties(props).unwrap();
        let a = c.create_object_adapter_with_endpoints("Early", "tcp -h 127.0.0.1 -p 0").unwrap();
        let (servant, _) = ticker("early");
        let indirect = a.add(servant, Identity::new("e"));
        assert_eq!(indirect.reference().wire.adapter_id, "early");
        let direct = a.create_direct_proxy(Identity::new("e"));
        let Some(EndpointData::Tcp(ip)) = direct.reference().wire.endpoints.first() else { panic!("{direct}") };
        assert_ne!(ip.port, 0, "the port bound at creation, before activation");
        // A second adapter on the same port fails at creation, as with Ice.
        let taken = format!("tcp -h 127.0.0.1 -p {}", ip.port);
        assert!(matches!(c.create_object_adapter_with_endpoints("Clash", &taken), Err(Error::Adapter(_))));
        a.activate().await.unwrap();
        assert_eq!(who(&direct).await.unwrap(), "early");
        c.destroy().await;
    });
}

#[test]
fn bad_endpoint_selection_property_is_a_typed_error() {
    let props = Properties::new();
    props.set("Ice.Default.EndpointSelection", "Sideways");
    assert!(matches!(Communicator::with_properties(props), Err(Error::Property { .. })));
}

/// An `Ice::Router` whose client endpoints are an adapter that serves every routed identity
/// itself (standing in for forwarding), recording `addProxies`; `callback` calls the proxy it
/// is given back over the connection the request came on.
struct TestRouter {
    client: ProxyData,
    server: ProxyData,
    added: Mutex<Vec<Identity>>,
    client_proxy_calls: AtomicUsize,
}

impl Dispatcher for TestRouter {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let c = request.current.clone();
        let r = match c.operation.as_str() {
            "getClientProxy" => {
                self.client_proxy_calls.fetch_add(1, Ordering::SeqCst);
                let client = self.client.clone();
                c.ok(|e| {
                    ProxyData::encode_nullable(Some(&client), e);
                    e.write_optional_tag(1, floe::encoding::OptionalFormat::F1);
                    true.encode(e);
                })
            }
            "getServerProxy" => c.ok(|e| ProxyData::encode_nullable(Some(&self.server), e)),
            "addProxies" => {
                let mut d = request.decoder();
                let n = d.read_size().unwrap();
                for _ in 0..n {
                    let p = ProxyData::decode_nullable(&mut d).unwrap().unwrap();
                    self.added.lock().unwrap().push(p.identity);
                }
                c.ok(|e| e.write_size(0))
            }
            _ => c.operation_not_exist(),
        };
        Box::pin(async move { r })
    }
}

/// Served at the router's client endpoints: `who` for routed calls, and `callback`, which
/// calls `who` on the given proxy over the caller's own connection.
struct RoutedTarget;

impl Dispatcher for RoutedTarget {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "who" => c.ok(|e| e.write_str("routed")),
                "callback" => {
                    let mut d = request.decoder();
                    let data = ProxyData::decode_nullable(&mut d).unwrap().unwrap();
                    let communicator = c.adapter().unwrap().communicator();
                    let back = ObjectPrx::from_proxy_data(communicator, Some(data)).unwrap();
                    let back = back.ice_fixed(c.connection().unwrap().clone());
                    let answer = who(&back).await.unwrap_or_else(|e| format!("failed: {e}"));
                    c.ok(|e| e.write_str(&answer))
                }
                _ => c.operation_not_exist(),
            }
        })
    }
}

#[test]
fn routed_proxies_and_adapters_use_the_router_connection() {
    runtime().block_on(async {
        let server = Communicator::new().unwrap();
        let client_side = server.create_object_adapter_with_endpoints("RouterClient", "tcp -h 127.0.0.1 -p 0").unwrap();
        client_side.add_default_servant(Arc::new(RoutedTarget), "");
        client_side.add_default_servant(Arc::new(RoutedTarget), "targets");
        client_side.activate().await.unwrap();
        let control = server.create_object_adapter_with_endpoints("RouterControl", "tcp -h 127.0.0.1 -p 0").unwrap();
        let client_endpoints = client_side.endpoints();
        let mut client = wire(&client_side.create_direct_proxy(Identity::new("x")));
        client.endpoints = client_endpoints.clone();
        let mut server_proxy = client.clone();
        server_proxy.endpoints =
            vec![floe::reference::parse_endpoint("tcp -h 127.0.0.1 -p 4", &Default::default()).unwrap()];
        let router = Arc::new(TestRouter {
            client,
            server: server_proxy.clone(),
            added: Mutex::new(Vec::new()),
            client_proxy_calls: AtomicUsize::new(0),
        });
        let router_prx = control.add(router.clone(), Identity::with_category("Glacier2", "router"));
        control.activate().await.unwrap();

        let props = Properties::new();
        props.set("Ice.Default.Router", &router_prx.to_string());
        let caller = Communicator::with_properties(props).unwrap();
        let target = caller.string_to_proxy("targets/one:tcp -h 127.0.0.1 -p 1").unwrap();
        assert!(target.ice_get_router().is_some());
        // Endpoint 127.0.0.1:1 is never used: the call goes to the router's client endpoints.
        assert_eq!(who(&target).await.unwrap(), "routed");
        assert_eq!(who(&target).await.unwrap(), "routed");
        assert_eq!(who(&caller.string_to_proxy("targets/two").unwrap()).await.unwrap(), "routed");
        assert_eq!(router.client_proxy_calls.load(Ordering::SeqCst), 1, "getClientProxy is asked once");
        assert_eq!(
            *router.added.lock().unwrap(),
            vec![Identity::with_category("targets", "one"), Identity::with_category("targets", "two")],
            "each identity is added to the routing table once"
        );
        let connection = target.ice_get_connection().await.unwrap();
        assert_eq!(connection.remote_address(), client_side.endpoints().first().and_then(addr));

        // A routed adapter: its proxies carry the router's server endpoints, and callbacks
        // arrive over the connection to the router.
        let router_for_caller = caller.string_to_proxy(&router_prx.to_string()).unwrap();
        let callbacks = caller.create_object_adapter_with_router("Callbacks", &router_for_caller).await.unwrap();
        assert_eq!(callbacks.endpoints(), server_proxy.endpoints);
        let (servant, _) = ticker("callback-servant");
        let cb = callbacks.add(servant, Identity::with_category("cb", "me"));
        assert_eq!(cb.reference().wire.endpoints, server_proxy.endpoints);
        callbacks.activate().await.unwrap();
        let answer = target
            .invoke("callback", OperationMode::Normal, None, |e| ObjectPrx::encode_nullable(Some(&cb), e))
            .await
            .unwrap()
            .unwrap()
            .decode(String::decode)
            .unwrap();
        assert_eq!(answer, "callback-servant");
        caller.destroy().await;
        server.destroy().await;
    });
}

fn addr(e: &EndpointData) -> Option<std::net::SocketAddr> {
    match e {
        EndpointData::Tcp(ip) => format!("{}:{}", ip.host, ip.port).parse().ok(),
        _ => None,
    }
}
