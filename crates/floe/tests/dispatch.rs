//! Servant resolution inside one process: servants by identity and facet, default servants by
//! category, servant locators, and the ObjectNotExist / FacetNotExist distinction.

use std::sync::Arc;

use floe::encoding::Decode;
use floe::protocol::OperationMode;
use floe::{Communicator, Current, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, ServantLocator};

/// Answers `who` with a label and the identity it was called on.
struct Labelled(&'static str);

impl Dispatcher for Labelled {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let label = self.0;
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "who" => {
                    let s = format!("{label}:{}/{}#{}", c.id.category, c.id.name, c.facet);
                    c.ok(|e| e.write_str(&s))
                }
                _ => c.operation_not_exist(),
            }
        })
    }
}

struct Locator;

impl ServantLocator for Locator {
    fn locate(&self, current: &Current) -> Option<Arc<dyn Dispatcher>> {
        // Only names starting with "ok" exist.
        current.id.name.starts_with("ok").then(|| Arc::new(Labelled("located")) as Arc<dyn Dispatcher>)
    }
}

#[test]
fn servants_default_servants_and_locators() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.add(Arc::new(Labelled("plain")), Identity::new("obj"));
        a.add_facet(Arc::new(Labelled("facet")), Identity::new("obj"), "f");
        a.add_default_servant(Arc::new(Labelled("default")), "cat");
        a.add_servant_locator(Arc::new(Locator), "loc");
        a.activate().await.unwrap();
        let base = a.create_proxy(Identity::new("obj"));
        let who = |p: floe::ObjectPrx| async move {
            let o = p.invoke("who", OperationMode::Normal, None, |_| {}).await?.unwrap();
            o.decode(String::decode)
        };
        assert_eq!(who(base.clone()).await.unwrap(), "plain:/obj#");
        assert_eq!(who(base.ice_facet("f")).await.unwrap(), "facet:/obj#f");
        assert_eq!(who(base.ice_identity(Identity::with_category("cat", "any"))).await.unwrap(), "default:cat/any#");
        assert_eq!(who(base.ice_identity(Identity::with_category("loc", "ok-1"))).await.unwrap(), "located:loc/ok-1#");
        assert!(matches!(
            who(base.ice_identity(Identity::with_category("loc", "missing"))).await,
            Err(Error::ObjectNotExist { .. })
        ));
        assert!(matches!(who(base.ice_facet("nope")).await, Err(Error::FacetNotExist { .. })));
        assert!(matches!(who(base.ice_identity(Identity::new("nobody"))).await, Err(Error::ObjectNotExist { .. })));
        assert!(matches!(base.ice_ping().await, Err(Error::OperationNotExist { .. })));
        // Removing the servant makes the identity unknown.
        a.remove(&Identity::new("obj"));
        a.remove_facet(&Identity::new("obj"), "f");
        assert!(matches!(who(base.clone()).await, Err(Error::ObjectNotExist { .. })));
        c.destroy().await;
    });
}

/// Panics where its operation's name says: in `dispatch` itself, in the future before it
/// waits, or after it has waited once.
struct Panicking;

impl Dispatcher for Panicking {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        if request.current.operation == "now" {
            panic!("in dispatch");
        }
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "first" => panic!("before waiting"),
                "later" => {
                    tokio::task::yield_now().await;
                    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
                    panic!("after waiting")
                }
                _ => c.ok(|_| {}),
            }
        })
    }
}

#[test]
fn a_panicking_servant_gets_unknown_exception_and_the_connection_keeps_serving() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.add(Arc::new(Panicking), Identity::new("p"));
        a.activate().await.unwrap();
        let p = a.create_proxy(Identity::new("p"));
        for (op, what) in [("now", "in dispatch"), ("first", "before waiting"), ("later", "after waiting")] {
            match p.invoke(op, OperationMode::Normal, None, |_| {}).await {
                Err(Error::UnknownException(m)) => {
                    assert!(m.contains("servant panicked") && m.contains(what), "{op}: {m}")
                }
                other => panic!("{op}: {other:?}"),
            }
            // The same connection still answers.
            let reply = p.invoke("fine", OperationMode::Normal, None, |_| {}).await.unwrap().expect("a twoway reply");
            reply.decode(|_| Ok(())).unwrap_or_else(|e| panic!("after {op}: {e}"));
        }
        c.destroy().await;
    });
}

/// Closes the connection it is called on, forcefully, before answering.
struct CloseForcefully;

impl Dispatcher for CloseForcefully {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            if let Some(conn) = c.connection() {
                conn.close_forcefully(Error::ConnectionLost("closed by the servant".into()));
            }
            c.ok(|e| e.write_i32(1))
        })
    }
}

#[test]
fn held_adapters_neither_read_nor_dispatch_until_activated_again() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let props = floe::Properties::new();
        props.set("Ice.TCP.RcvSize", "50000");
        props.set("Ice.TCP.SndSize", "50000");
        let c = Communicator::with_properties(props).unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.add(Arc::new(Labelled("plain")), Identity::new("obj"));
        a.activate().await.unwrap();
        let p = a.create_proxy(Identity::new("obj"));
        p.invoke("who", OperationMode::Normal, None, |_| {}).await.unwrap();
        a.hold();
        assert!(a.is_held());
        let call = tokio::spawn({
            let p = p.clone();
            async move { p.invoke("who", OperationMode::Normal, None, |_| {}).await }
        });
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        assert!(!call.is_finished(), "a held adapter must not dispatch");
        a.activate().await.unwrap();
        assert!(!a.is_held());
        let reply = tokio::time::timeout(std::time::Duration::from_secs(5), call).await.unwrap().unwrap();
        assert_eq!(reply.unwrap().unwrap().decode(String::decode).unwrap(), "plain:/obj#");
        c.destroy().await;
    });
}

#[test]
fn a_servant_that_closes_its_connection_forcefully_sends_no_reply() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.add(Arc::new(CloseForcefully), Identity::new("closer"));
        a.activate().await.unwrap();
        let p = a.create_proxy(Identity::new("closer"));
        for _ in 0..20 {
            let r = p.invoke("close", OperationMode::Normal, None, |_| {}).await;
            assert!(matches!(r, Err(Error::ConnectionLost(_))), "{r:?}");
        }
        c.destroy().await;
    });
}

/// Ice's full servant-locator protocol: `try_locate` may answer with an error or hand a cookie
/// to `finished`, whose error replaces the servant's reply; removal and deactivation reach it.
struct CookieLocator {
    deactivated: std::sync::atomic::AtomicBool,
}

impl ServantLocator for CookieLocator {
    fn locate(&self, _: &Current) -> Option<Arc<dyn Dispatcher>> {
        None
    }
    fn try_locate(&self, current: &Current) -> Result<Option<floe::Located>, Error> {
        match current.id.name.as_str() {
            "refused" => Err(Error::UnknownException("refused by the locator".into())),
            "none" => Ok(None),
            _ => Ok(Some((
                Arc::new(Labelled("located")),
                Some(Box::new(current.id.name.to_string()) as floe::LocatorCookie),
            ))),
        }
    }
    fn finished(&self, _: &Current, cookie: Option<floe::LocatorCookie>) -> Result<(), Error> {
        let name = cookie.and_then(|c| c.downcast::<String>().ok()).map(|b| *b).unwrap_or_default();
        if name == "spoiled" {
            Err(Error::UnknownLocalException("finished replaced the reply".into()))
        } else {
            Ok(())
        }
    }
    fn deactivate(&self, _: &str) {
        self.deactivated.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

#[test]
fn servant_locators_refuse_hand_cookies_to_finished_and_are_deactivated() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        let locator = Arc::new(CookieLocator { deactivated: Default::default() });
        a.add_servant_locator(locator.clone(), "loc");
        a.activate().await.unwrap();
        let who = |name: &str| {
            let p = a.create_proxy(Identity::with_category("loc", name));
            async move {
                let o = p.invoke("who", OperationMode::Normal, None, |_| {}).await?.unwrap();
                o.decode(String::decode)
            }
        };
        assert_eq!(who("fine").await.unwrap(), "located:loc/fine#");
        assert!(matches!(who("refused").await, Err(Error::UnknownException(s)) if s.contains("refused")));
        assert!(matches!(who("none").await, Err(Error::ObjectNotExist { .. })));
        assert!(matches!(who("spoiled").await, Err(Error::UnknownLocalException(s)) if s.contains("finished")));
        assert!(a.remove_servant_locator("loc").is_some());
        assert!(matches!(who("fine").await, Err(Error::ObjectNotExist { .. })));
        a.add_servant_locator(locator.clone(), "loc");
        a.deactivate().await;
        assert!(
            locator.deactivated.load(std::sync::atomic::Ordering::SeqCst),
            "deactivating the adapter deactivates its locators"
        );
        c.destroy().await;
    });
}

/// Counts the oneway requests it gets.
struct Counter(Arc<std::sync::atomic::AtomicUsize>);

impl Dispatcher for Counter {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let r = request.current.ok_empty();
        Box::pin(async move { r })
    }
}

#[test]
fn adapters_on_udp_endpoints_dispatch_oneway_datagrams_and_drop_garbage() {
    use floe::encoding::{EncodingVersion, EndpointData};
    use floe::protocol::request::{encode_request, RequestPrefix};
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("U", "udp -h 127.0.0.1 -p 0").unwrap();
        let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        a.add(Arc::new(Counter(count.clone())), Identity::new("counter"));
        a.add(Arc::new(Panicking), Identity::new("panicking"));
        a.activate().await.unwrap();
        let EndpointData::Udp { port, .. } = a.endpoints()[0].clone() else { panic!("{:?}", a.endpoints()) };
        let socket = tokio::net::UdpSocket::bind("127.0.0.1:0").await.unwrap();
        let target = ("127.0.0.1", port as u16);
        let prefix = RequestPrefix::new(&Identity::new("counter"), "", "tick", OperationMode::Normal);
        let oneway = encode_request(0, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {});
        let twoway = encode_request(7, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {});
        socket.send_to(b"not an ice message at all", target).await.unwrap();
        socket.send_to(&oneway[..oneway.len() - 1], target).await.unwrap(); // truncated
        socket.send_to(&twoway, target).await.unwrap(); // cannot be answered
                                                        // Servants that panic (in `dispatch` itself, or in its future) lose only their request.
        for op in ["now", "first", "later"] {
            let prefix = RequestPrefix::new(&Identity::new("panicking"), "", op, OperationMode::Normal);
            let panics = encode_request(0, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {});
            socket.send_to(&panics, target).await.unwrap();
        }
        for _ in 0..3 {
            socket.send_to(&oneway, target).await.unwrap();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while count.load(std::sync::atomic::Ordering::SeqCst) < 3 && std::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        assert_eq!(count.load(std::sync::atomic::Ordering::SeqCst), 3, "the three oneways and nothing else");
        c.destroy().await;
    });
}

/// Sleeps, then records that it finished.
struct Slow(Arc<std::sync::atomic::AtomicBool>);

impl Dispatcher for Slow {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let done = self.0.clone();
        Box::pin(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            done.store(true, std::sync::atomic::Ordering::SeqCst);
            request.current.ok_empty()
        })
    }
}

#[test]
fn wait_for_shutdown_returns_once_dispatches_in_progress_are_done() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let server = Communicator::new().unwrap();
        let a = server.create_object_adapter_with_endpoints("S", "tcp -h 127.0.0.1 -p 0").unwrap();
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        a.add(Arc::new(Slow(done.clone())), Identity::new("slow"));
        a.activate().await.unwrap();
        let client = Communicator::new().unwrap();
        let p = client.string_to_proxy(&a.create_proxy(Identity::new("slow")).to_string()).unwrap();
        let call = tokio::spawn(async move { p.invoke("slow", OperationMode::Normal, None, |_| {}).await });
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        server.shutdown();
        server.wait_for_shutdown().await;
        assert!(done.load(std::sync::atomic::Ordering::SeqCst), "returned before the dispatch in progress finished");
        assert!(call.await.unwrap().is_ok(), "the dispatch in progress is answered");
        client.destroy().await;
        server.destroy().await;
    });
}

/// Logs `note` calls under its label; `swap` replaces the servant of its identity with one
/// labelled `B`, `remove` removes it.
struct Recording {
    label: &'static str,
    log: Log,
}

impl Dispatcher for Recording {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let c = &request.current;
        let adapter = c.adapter().cloned().expect("dispatched by an adapter");
        let entry = match c.operation.as_str() {
            "note" => self.label.to_string(),
            "swap" => {
                adapter.add(Arc::new(Recording { label: "B", log: self.log.clone() }), c.id.clone());
                format!("{} swapped", self.label)
            }
            "remove" => {
                adapter.remove(&c.id);
                format!("{} removed", self.label)
            }
            _ => return Box::pin(std::future::ready(c.operation_not_exist())),
        };
        self.log.lock().unwrap().push(entry);
        Box::pin(std::future::ready(c.ok(|_| {})))
    }
}

/// Sends `requests` (identity, facet, operation) to `adapter` as one batch message over a
/// plain socket, then a twoway request for the last of them, and waits for its reply: the
/// connection dispatches in order, so every batched request has run by then.
async fn send_batch_then_twoway(adapter: &floe::ObjectAdapter, requests: &[(Identity, &str, &str)]) {
    use floe::encoding::{EncodingVersion, EndpointData};
    use floe::protocol::request::encode_request;
    use floe::protocol::{BatchBuilder, RequestPrefix};
    use std::io::{Read, Write};

    let EndpointData::Tcp(tcp) = adapter.endpoints()[0].clone() else { panic!("{:?}", adapter.endpoints()) };
    let port = tcp.port as u16;
    let mut batch = BatchBuilder::new();
    for (id, facet, op) in requests {
        let prefix = RequestPrefix::new(id, facet, op, OperationMode::Normal);
        batch.start_request(&prefix, &Default::default(), EncodingVersion::V1_1);
        batch.finish_request();
    }
    let batch = batch.take().unwrap();
    let (id, facet, op) = requests.last().expect("a request");
    let prefix = RequestPrefix::new(id, facet, op, OperationMode::Normal);
    let twoway = encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, |_| {});
    tokio::task::spawn_blocking(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        let mut validate = [0u8; 14];
        s.read_exact(&mut validate).unwrap();
        s.write_all(&batch).unwrap();
        s.write_all(&twoway).unwrap();
        let mut reply = [0u8; 25];
        s.read_exact(&mut reply).unwrap();
        assert_eq!(reply[8], 2, "a reply");
    })
    .await
    .unwrap();
}

/// What the servants of a batch test write down, in order.
type Log = Arc<std::sync::Mutex<Vec<String>>>;

/// Sends `requests` as one batch, then a twoway request for the last of them (see
/// [`send_batch_then_twoway`]), to a new adapter with the servants `add_servants` registers,
/// given the log they share; returns that log.
fn log_of_batch(
    add_servants: impl FnOnce(&floe::ObjectAdapter, &Log),
    requests: &[(Identity, &str, &str)],
) -> Vec<String> {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        let log = Log::default();
        add_servants(&a, &log);
        a.activate().await.unwrap();
        send_batch_then_twoway(&a, requests).await;
        let entries = log.lock().unwrap().clone();
        c.destroy().await;
        entries
    })
}

#[test]
fn servants_added_or_removed_by_a_batched_request_serve_the_rest_of_the_batch() {
    // One batch message, alternating facets: each request must reach the servant that is
    // registered when it is dispatched, whatever the previous request went to.
    let x = Identity::new("x");
    let requests = [
        (x.clone(), "", "note"),
        (x.clone(), "f", "note"),
        (x.clone(), "", "swap"),
        (x.clone(), "", "note"),
        (x.clone(), "f", "note"),
        (x.clone(), "", "remove"),
        (x.clone(), "", "note"),
        (x.clone(), "f", "note"),
    ];
    let log = log_of_batch(
        |a, log| {
            a.add(Arc::new(Recording { label: "A", log: log.clone() }), Identity::new("x"));
            a.add_facet(Arc::new(Recording { label: "F", log: log.clone() }), Identity::new("x"), "f");
        },
        &requests,
    );
    // The note after the removal finds no servant; the last entry is the twoway request's.
    assert_eq!(log, ["A", "F", "A swapped", "B", "F", "B removed", "F", "F"]);
}

#[test]
fn a_run_of_batched_requests_to_one_target_follows_its_servant_being_swapped_and_removed() {
    // A request of a run of one operation repeats its predecessor's target byte for byte, so
    // the servant cache is not compared with it: only the servant map's version tells that
    // the servant changed (the second `swap` and `remove`).
    let x = Identity::new("x");
    let ops = ["note", "note", "swap", "swap", "note", "remove", "remove", "note"];
    let mut requests: Vec<(Identity, &str, &str)> = ops.iter().map(|op| (x.clone(), "", *op)).collect();
    requests.push((Identity::new("y"), "", "note"));
    let log = log_of_batch(
        |a, log| {
            a.add(Arc::new(Recording { label: "A", log: log.clone() }), Identity::new("x"));
            a.add(Arc::new(Recording { label: "Y", log: log.clone() }), Identity::new("y"));
        },
        &requests,
    );
    // The second swap goes to the servant the first put in; after the first removal, `x`
    // has no servant. The last two entries are `y`'s, batched then twoway.
    assert_eq!(log, ["A", "A", "A swapped", "B swapped", "B", "B removed", "Y", "Y"]);
}

#[test]
fn twoway_requests_on_one_connection_follow_servants_being_swapped_removed_and_added() {
    // A connection remembers the servant its previous request went to: every change to the
    // servant map must still reach the next request on it.
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        let log = Log::default();
        let x = Identity::new("x");
        a.add(Arc::new(Recording { label: "A", log: log.clone() }), x.clone());
        a.add_facet(Arc::new(Recording { label: "F", log: log.clone() }), x.clone(), "f");
        a.add_default_servant(Arc::new(Recording { label: "D", log: log.clone() }), "");
        a.activate().await.unwrap();
        let client = Communicator::new().unwrap();
        let base = client.string_to_proxy(&a.create_proxy(x.clone()).to_string()).unwrap();
        let facet = base.ice_facet("f");
        let other = base.ice_identity(Identity::new("other"));
        let call = |p: &floe::ObjectPrx, op: &'static str| {
            let p = p.clone();
            async move { p.invoke(op, OperationMode::Normal, None, |_| {}).await.map(|_| ()) }
        };
        call(&base, "note").await.unwrap();
        call(&base, "note").await.unwrap();
        call(&facet, "note").await.unwrap();
        call(&base, "swap").await.unwrap();
        call(&base, "note").await.unwrap();
        call(&base, "remove").await.unwrap();
        // No servant for `x` any more: the default servant takes it.
        call(&base, "note").await.unwrap();
        call(&facet, "note").await.unwrap();
        a.remove_default_servant("");
        assert!(matches!(call(&base, "note").await, Err(Error::FacetNotExist { .. })));
        assert!(matches!(call(&other, "note").await, Err(Error::ObjectNotExist { .. })));
        a.add(Arc::new(Recording { label: "C", log: log.clone() }), x.clone());
        call(&base, "note").await.unwrap();
        assert_eq!(
            *log.lock().unwrap(),
            ["A", "A", "F", "A swapped", "B", "B removed", "D", "F", "C"],
            "every request reached the servant registered when it was dispatched"
        );
        client.destroy().await;
        c.destroy().await;
    });
}

#[test]
fn servants_panicking_in_a_batch_leave_the_rest_of_it_and_the_connection_serving() {
    let (p, r) = (Identity::new("p"), Identity::new("r"));
    let requests = [
        (p.clone(), "", "now"),
        (r.clone(), "", "note"),
        (p.clone(), "", "first"),
        (p.clone(), "", "first"),
        (r.clone(), "", "note"),
        (p.clone(), "", "later"),
        (p.clone(), "", "fine"),
        (r.clone(), "", "note"),
    ];
    // The twoway request after the batch is answered on the same connection.
    let log = log_of_batch(
        |a, log| {
            a.add(Arc::new(Panicking), Identity::new("p"));
            a.add(Arc::new(Recording { label: "R", log: log.clone() }), Identity::new("r"));
        },
        &requests,
    );
    assert_eq!(log, ["R", "R", "R", "R"]);
}

#[test]
fn batched_requests_for_names_of_equal_length_reach_their_own_servants() {
    // Pairs that differ in one byte only, for every way the servant cache compares:
    // one-byte names, categories, 8-byte names and longer names.
    let targets = [
        ("X", Identity::new("x")),
        ("Y", Identity::new("y")),
        ("C1", Identity::with_category("c1", "n")),
        ("C2", Identity::with_category("c2", "n")),
        ("H", Identity::new("abcdefgh")),
        ("I", Identity::new("abcdefgi")),
        ("J", Identity::new("abcdefghij")),
        ("K", Identity::new("abcdefghik")),
    ];
    let order = [0, 1, 0, 2, 3, 2, 4, 5, 4, 6, 7, 6, 1];
    let requests: Vec<(Identity, &str, &str)> = order.iter().map(|&i| (targets[i].1.clone(), "", "note")).collect();
    let log = log_of_batch(
        |a, log| {
            for (label, id) in &targets {
                a.add(Arc::new(Recording { label, log: log.clone() }), id.clone());
            }
        },
        &requests,
    );
    // The batch, then the twoway request for the last target.
    let expected: Vec<&str> = order.iter().chain([&1]).map(|&i| targets[i].0).collect();
    assert_eq!(log, expected);
}

/// Answers `where` with the name of the adapter that dispatched it, after checking that the
/// request knows the connection it arrived on.
struct AdapterName;

impl Dispatcher for AdapterName {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            assert!(c.connection().is_some(), "a request over a connection knows it");
            let name = c.adapter().map(|a| a.name().to_string()).unwrap_or_default();
            c.ok(|e| e.write_str(&name))
        })
    }
}

/// Calls `where` back on the caller's connection, as many times as asked, and returns the
/// answers (the adapter is changed between calls by the test).
struct CallsBack(Communicator);

impl Dispatcher for CallsBack {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let communicator = self.0.clone();
        Box::pin(async move {
            let c = &request.current;
            let Some(conn) = c.connection().cloned() else { return c.object_not_exist() };
            let reference = floe::proxy::reference::Reference::new(Identity::new("named"));
            let back = floe::ObjectPrx::from_reference(communicator, reference).ice_fixed(conn);
            let answer = match back.invoke("where", OperationMode::Normal, None, |_| {}).await {
                Ok(Some(o)) => o.decode(String::decode).unwrap_or_else(|e| format!("error: {}", e.ice_type_id())),
                Ok(None) => "no reply".to_string(),
                Err(e) => format!("error: {}", e.ice_type_id()),
            };
            c.ok(|e| e.write_str(&answer))
        })
    }
}

#[test]
fn requests_over_a_connection_follow_its_adapter_as_it_changes() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let server = Communicator::new().unwrap();
        let s = server.create_object_adapter_with_endpoints("S", "tcp -h 127.0.0.1 -p 0").unwrap();
        s.add(Arc::new(CallsBack(server.clone())), Identity::new("relay"));
        s.activate().await.unwrap();
        let relay = s.create_proxy(Identity::new("relay"));

        let client = Communicator::new().unwrap();
        let relay = client.string_to_proxy(&relay.to_string()).unwrap();
        let (first, second) =
            (client.create_object_adapter("First").unwrap(), client.create_object_adapter("Second").unwrap());
        for a in [&first, &second] {
            a.add(Arc::new(AdapterName), Identity::new("named"));
            a.activate().await.unwrap();
        }
        let conn = relay.ice_get_connection().await.unwrap();
        let ask = || async {
            let o = relay.invoke("call", OperationMode::Normal, None, |_| {}).await.unwrap().unwrap();
            o.decode(String::decode).unwrap()
        };
        // No adapter yet: the callback finds no object.
        assert_eq!(ask().await, "error: ::Ice::ObjectNotExistException");
        conn.set_adapter(Some(first.clone()));
        assert_eq!(ask().await, "First");
        assert_eq!(ask().await, "First");
        conn.set_adapter(Some(second.clone()));
        assert_eq!(ask().await, "Second");
        conn.set_adapter(None);
        assert_eq!(ask().await, "error: ::Ice::ObjectNotExistException");
        conn.set_adapter(Some(first));
        assert_eq!(ask().await, "First");
        client.destroy().await;
        server.destroy().await;
    });
}

/// Fails every request with a reply status of Ice 3.8 (`Error::Dispatch`).
struct Refusing;

impl Dispatcher for Refusing {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            c.error(&Error::Dispatch { status: 9, message: format!("{} is not for you", c.operation) })
        })
    }
}

#[test]
fn a_servant_sends_the_reply_statuses_of_ice_38_and_the_caller_reads_them() {
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    rt.block_on(async {
        let c = Communicator::new().unwrap();
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.add(Arc::new(Refusing), Identity::new("guarded"));
        a.activate().await.unwrap();
        let p = a.create_proxy(Identity::new("guarded"));
        // Unauthorized (9) with its message, as an Ice 3.8 server sends it.
        match p.invoke("peek", OperationMode::Normal, None, |_| {}).await {
            Err(Error::Dispatch { status: 9, message }) => assert_eq!(message, "peek is not for you"),
            other => panic!("expected Error::Dispatch, got {other:?}"),
        }
        // The connection goes on serving.
        assert!(matches!(p.ice_ping().await, Err(Error::Dispatch { status: 9, .. })));
        c.destroy().await;
    });
}
