//! The `Ice.Admin` object: admin facets added, found and removed, `Ice.Admin.Facets` filtering
//! (locally and on the wire), `Ice.Admin.Enabled` / `DelayCreation` / `createAdmin`, the
//! Process facet's shutdown, property-update callbacks through the Properties facet, the
//! Logger facet's buffer and a remote logger, the empty Metrics facet, typed errors for
//! bad requests, and `Ice.Admin.ServerId` registration with a locator. Everything runs on
//! loopback.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::admin::slice::ice::{
    LogMessage, LogMessageType, LoggerAdminAttachRemoteLoggerError, LoggerAdminPrx, ProcessPrx, PropertiesAdminPrx,
    PropertyDict, RemoteLogger, RemoteLoggerPrx, RemoteLoggerServer,
};
use floe::admin::slice::ice_mx::{MetricsAdminGetMetricsViewError, MetricsAdminPrx};
use floe::admin::LogSink;
use floe::protocol::OperationMode;
use floe::{CallError, Communicator, Current, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest};
use floe::{CompactString, ObjectPrx, Properties, Proxy};

/// A facet that answers `ice_ping` and nothing else.
struct Plain;

impl Dispatcher for Plain {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        Box::pin(async move {
            let c = &request.current;
            match c.operation.as_str() {
                "ice_ping" => c.ok(|_| {}),
                _ => c.operation_not_exist(),
            }
        })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn communicator(props: &[(&str, &str)]) -> Communicator {
    let p = Properties::new();
    for (k, v) in props {
        p.set(k, v);
    }
    Communicator::with_properties(p).unwrap()
}

const ENDPOINTS: (&str, &str) = ("Ice.Admin.Endpoints", "tcp -h 127.0.0.1 -p 0");
const NAME: (&str, &str) = ("Ice.Admin.InstanceName", "Test");

/// Adds, finds and removes three facets, as Ice's admin suite does; `built_in` says whether
/// the four built-in facets must be there.
fn exercise_facets(c: &Communicator, built_in: bool) {
    if built_in {
        for f in ["Process", "Properties", "Logger", "Metrics"] {
            assert!(c.find_admin_facet(f).is_some(), "{f}");
        }
    }
    let f1: Arc<dyn Dispatcher> = Arc::new(Plain);
    let f2: Arc<dyn Dispatcher> = Arc::new(Plain);
    c.add_admin_facet(f1.clone(), "Facet1").unwrap();
    c.add_admin_facet(f2.clone(), "Facet2").unwrap();
    assert!(Arc::ptr_eq(&c.find_admin_facet("Facet1").unwrap(), &f1));
    assert!(Arc::ptr_eq(&c.find_admin_facet("Facet2").unwrap(), &f2));
    assert!(c.find_admin_facet("Bogus").is_none());
    let all = c.find_all_admin_facets();
    assert_eq!(all.len(), if built_in { 6 } else { 2 }, "{:?}", all.keys().collect::<Vec<_>>());
    assert!(matches!(
        c.add_admin_facet(f1.clone(), "Facet1"),
        Err(Error::AlreadyRegistered { ref kind, ref id }) if kind == "facet" && id == "Facet1"
    ));
    assert!(matches!(c.remove_admin_facet("Bogus"), Err(Error::NotRegistered { .. })));
    assert!(Arc::ptr_eq(&c.remove_admin_facet("Facet1").unwrap(), &f1));
    c.remove_admin_facet("Facet2").unwrap();
    assert!(matches!(c.remove_admin_facet("Facet1"), Err(Error::NotRegistered { .. })));
}

#[test]
fn facets_are_added_found_and_removed() {
    runtime().block_on(async {
        let c = communicator(&[ENDPOINTS, NAME, ("Ice.ProgramName", "MyTestProgram")]);
        exercise_facets(&c, true);
        assert_eq!(c.logger().prefix(), "MyTestProgram");
        let admin = c.admin().await.unwrap().expect("admin proxy");
        assert_eq!(admin.ice_get_identity(), &Identity::with_category("Test", "admin"));
        c.destroy().await;
        assert!(matches!(c.add_admin_facet(Arc::new(Plain), "Late"), Err(Error::CommunicatorDestroyed)));

        // Filtered: only Properties is a built-in facet; the program's facets still register.
        let c = communicator(&[ENDPOINTS, NAME, ("Ice.Admin.Facets", "Properties")]);
        assert!(c.find_admin_facet("Properties").is_some());
        assert!(c.find_admin_facet("Process").is_none());
        assert!(c.find_admin_facet("Logger").is_none());
        assert!(c.find_admin_facet("Metrics").is_none());
        c.add_admin_facet(Arc::new(Plain), "Mine").unwrap();
        assert_eq!(c.find_all_admin_facets().len(), 2);
        c.destroy().await;

        // Disabled: no built-in facets, no admin object, but facets can be registered.
        let c = communicator(&[]);
        exercise_facets(&c, false);
        assert!(c.admin().await.unwrap().is_none());
        assert!(c.properties_admin().is_none());
        assert!(matches!(c.create_admin(None, Identity::new("x")).await, Err(Error::Initialization(_))));
        c.destroy().await;
    });
}

#[test]
fn enabled_without_endpoints_needs_create_admin() {
    runtime().block_on(async {
        let c = communicator(&[("Ice.Admin.Enabled", "1")]);
        assert!(c.admin().await.unwrap().is_none());
        let id = Identity::new("test-admin");
        assert!(matches!(c.create_admin(None, id.clone()).await, Err(Error::Initialization(_))));
        assert!(matches!(c.create_admin(None, Identity::new("")).await, Err(Error::Initialization(_))));
        let a = c.create_object_adapter_with_endpoints("A", "tcp -h 127.0.0.1 -p 0").unwrap();
        let admin = c.create_admin(Some(&a), id.clone()).await.unwrap();
        a.activate().await.unwrap();
        assert_eq!(admin.ice_get_identity(), &id);
        assert_eq!(c.admin().await.unwrap().unwrap().ice_get_identity(), &id);
        assert!(matches!(c.create_admin(Some(&a), id).await, Err(Error::Initialization(_))));
        exercise_facets(&c, true);
        // The facets are served on the given adapter.
        let props = PropertiesAdminPrx::from_object(admin.ice_facet("Properties"));
        assert_eq!(props.get_property("Ice.Admin.Enabled").await.unwrap(), "1");
        c.destroy().await;
    });
}

#[test]
fn delayed_creation_waits_for_admin() {
    runtime().block_on(async {
        let c = communicator(&[ENDPOINTS, NAME, ("Ice.Admin.DelayCreation", "1")]);
        exercise_facets(&c, true);
        let admin = c.admin().await.unwrap().expect("created on demand");
        exercise_facets(&c, true);
        admin.ice_facet("Process").ice_ping().await.unwrap();
        c.destroy().await;
    });
}

/// Made outside any async runtime, the communicator starts its own; the admin object's
/// adapter is activated there, and blocking calls reach it.
#[test]
fn admin_on_the_communicators_own_runtime() {
    let c = communicator(&[ENDPOINTS]);
    let admin = c.block_on(c.admin()).unwrap().expect("admin proxy");
    assert_eq!(admin.ice_get_identity().name, "admin");
    assert_eq!(admin.ice_get_identity().category.len(), 36, "a UUID by default");
    let process = ProcessPrx::from_object(admin.ice_facet("Process"));
    process.write_message_blocking("not written: fd 3 is neither stdout nor stderr", 3).unwrap();
    c.block_on(process.shutdown()).unwrap();
    assert!(c.is_shutdown());
    c.destroy_blocking();
}

#[test]
fn facet_filtering_on_the_wire() {
    runtime().block_on(async {
        let client = communicator(&[]);
        for (filter, served) in [
            ("Properties", &["Properties"][..]),
            ("Process", &["Process"][..]),
            ("Mine", &["Mine"][..]),
            ("Properties Mine", &["Properties", "Mine"][..]),
            ("Mine, Process", &["Mine", "Process"][..]),
            ("", &["Properties", "Process", "Logger", "Metrics", "Mine"][..]),
        ] {
            let c = communicator(&[ENDPOINTS, NAME, ("Ice.Admin.Facets", filter)]);
            c.add_admin_facet(Arc::new(Plain), "Mine").unwrap();
            let admin = c.admin().await.unwrap().unwrap();
            let admin = client.string_to_proxy(&admin.to_string()).unwrap();
            for facet in ["Properties", "Process", "Logger", "Metrics", "Mine"] {
                let r = admin.ice_facet(facet).ice_ping().await;
                if served.contains(&facet) {
                    assert!(r.is_ok(), "{filter:?}: {facet}: {r:?}");
                } else {
                    assert!(matches!(r, Err(Error::FacetNotExist { .. })), "{filter:?}: {facet}: {r:?}");
                }
            }
            // A facet removed stops being served (with no facet left, the object is gone).
            c.remove_admin_facet("Mine").unwrap();
            let r = admin.ice_facet("Mine").ice_ping().await;
            let gone = if filter == "Mine" {
                matches!(r, Err(Error::ObjectNotExist { .. }))
            } else {
                matches!(r, Err(Error::FacetNotExist { .. }))
            };
            assert!(gone, "{filter:?}: removed: {r:?}");
            c.destroy().await;
        }
        client.destroy().await;
    });
}

#[test]
fn process_shutdown_and_properties_update_callbacks() {
    runtime().block_on(async {
        let client = communicator(&[]);
        let c = communicator(&[ENDPOINTS, NAME, ("Prop1", "1"), ("Prop2", "2"), ("Prop3", "3")]);
        let seen: Arc<Mutex<Vec<PropertyDict>>> = Arc::default();
        let handle = c.properties_admin().expect("Properties facet");
        let s = seen.clone();
        let id = handle.add_update_callback(move |changes| s.lock().unwrap().push(changes.clone()));
        let admin = client.string_to_proxy(&c.admin().await.unwrap().unwrap().to_string()).unwrap();
        let pa = PropertiesAdminPrx::from_object(admin.ice_facet("Properties"));
        assert_eq!(pa.get_property("Prop2").await.unwrap(), "2");
        assert_eq!(pa.get_property("Bogus").await.unwrap(), "");
        let all = pa.get_properties_for_prefix("").await.unwrap();
        assert_eq!(all.len(), 5, "{all:?}");
        assert_eq!(pa.get_properties_for_prefix("Prop").await.unwrap().len(), 3);

        let set: PropertyDict = [("Prop1", "10"), ("Prop2", "20"), ("Prop3", ""), ("Prop4", "4"), ("Bogus", "")]
            .into_iter()
            .map(|(k, v)| (CompactString::from(k), CompactString::from(v)))
            .collect();
        pa.set_properties(&set).await.unwrap();
        assert_eq!(c.properties().get("Prop1").as_deref(), Some("10"));
        assert_eq!(c.properties().get("Prop3"), None);
        assert_eq!(c.properties().get("Prop4").as_deref(), Some("4"));
        {
            let seen = seen.lock().unwrap();
            assert_eq!(seen.len(), 1, "the callback ran before the reply");
            let expected: HashMap<&str, &str> =
                [("Prop1", "10"), ("Prop2", "20"), ("Prop3", ""), ("Prop4", "4")].into();
            let got: HashMap<&str, &str> = seen[0].iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(got, expected);
        }
        // The same again changes nothing: the callback is told so.
        pa.set_properties(&set).await.unwrap();
        assert!(seen.lock().unwrap()[1].is_empty());
        // Removed callbacks are not called.
        assert!(handle.remove_update_callback(id));
        assert!(!handle.remove_update_callback(id));
        pa.set_properties(&[("Prop5".into(), "5".into())].into_iter().collect()).await.unwrap();
        assert_eq!(seen.lock().unwrap().len(), 2);
        assert_eq!(c.properties().get("Prop5").as_deref(), Some("5"));
        // A property with an empty name is refused with an error, not applied.
        let bad = pa.set_properties(&[("".into(), "x".into())].into_iter().collect()).await;
        assert!(matches!(bad, Err(Error::UnknownLocalException(_))), "{bad:?}");

        // Process: writeMessage, then shutdown ends wait_for_shutdown.
        let process = ProcessPrx::from_object(admin.ice_facet("Process"));
        process.write_message("written by the admin test", 1).await.unwrap();
        process.shutdown().await.unwrap();
        tokio::time::timeout(Duration::from_secs(10), c.wait_for_shutdown()).await.expect("shut down");
        assert!(c.is_shutdown());
        c.destroy().await;
        client.destroy().await;
    });
}

/// What a remote logger's `init` got: the prefix and the recent messages.
type Init = (CompactString, Vec<LogMessage>);

/// A remote logger that records what it is sent.
#[derive(Default, Clone)]
struct Recorder {
    init: Arc<Mutex<Option<Init>>>,
    logs: Arc<Mutex<Vec<LogMessage>>>,
}

impl RemoteLogger for Recorder {
    async fn init(&self, prefix: CompactString, log_messages: Vec<LogMessage>, _: &Current) -> floe::Result<()> {
        *self.init.lock().unwrap() = Some((prefix, log_messages));
        Ok(())
    }

    async fn log(&self, message: LogMessage, _: &Current) -> floe::Result<()> {
        self.logs.lock().unwrap().push(message);
        Ok(())
    }
}

/// Waits (bounded) until `f` holds.
async fn until(what: &str, f: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(tokio::time::Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A sink that writes nothing, with its own prefix.
struct Quiet;

impl LogSink for Quiet {
    fn print(&self, _: &str) {}
    fn trace(&self, _: &str, _: &str) {}
    fn warning(&self, _: &str) {}
    fn error(&self, _: &str) {}
    fn prefix(&self) -> &str {
        "Quiet"
    }
}

#[test]
fn logger_facet_and_remote_logger() {
    use LogMessageType::*;
    runtime().block_on(async {
        let client = communicator(&[]);
        let props = Properties::new();
        for (k, v) in [ENDPOINTS, NAME, ("Ice.Admin.Logger.KeepLogs", "3"), ("Ice.Admin.Logger.KeepTraces", "2")] {
            props.set(k, v);
        }
        let c = Communicator::with_logger(props, Arc::new(Quiet)).unwrap();
        let log = c.logger();
        assert_eq!(log.prefix(), "Quiet");
        log.trace("cat", "t1");
        log.warning("w1");
        log.error("e1");
        log.print("p1");
        log.trace("other", "t2");
        log.trace("cat", "t3");
        log.warning("w2");
        let admin = client.string_to_proxy(&c.admin().await.unwrap().unwrap().to_string()).unwrap();
        let logger = LoggerAdminPrx::from_object(admin.ice_facet("Logger"));

        // Three logs and two traces are kept; filters by type and trace category; most recent.
        let (all, prefix) = logger.get_log(&[], &[], -1).await.unwrap();
        assert_eq!(prefix, "Quiet");
        let texts = |m: &[LogMessage]| m.iter().map(|m| m.message.to_string()).collect::<Vec<_>>();
        assert_eq!(texts(&all), ["e1", "p1", "t2", "t3", "w2"]);
        assert!(all.windows(2).all(|w| w[0].timestamp <= w[1].timestamp));
        let (m, _) = logger.get_log(&[TraceMessage, ErrorMessage], &["cat".into()], -1).await.unwrap();
        assert_eq!(texts(&m), ["e1", "t3"]);
        assert_eq!(m[1].trace_category, "cat");
        let (m, _) = logger.get_log(&[], &[], 2).await.unwrap();
        assert_eq!(texts(&m), ["t3", "w2"]);
        assert!(logger.get_log(&[], &[], 0).await.unwrap().0.is_empty());

        // A remote logger gets init with what it asked for, then each new message it accepts.
        let a = client.create_object_adapter_with_endpoints("RemoteLoggerAdapter", "tcp -h 127.0.0.1 -p 0").unwrap();
        a.activate().await.unwrap();
        let recorder = Recorder::default();
        let me = RemoteLoggerPrx::from_object(a.add_with_uuid(RemoteLoggerServer::new(recorder.clone())));
        logger.attach_remote_logger(Some(&me), &[WarningMessage, TraceMessage], &["cat".into()], 1).await.unwrap();
        until("init", || recorder.init.lock().unwrap().is_some()).await;
        let (p, initial) = recorder.init.lock().unwrap().clone().unwrap();
        assert_eq!((p.as_str(), texts(&initial)), ("Quiet", vec!["w2".to_string()]));
        log.print("p2");
        log.trace("other", "t4");
        log.warning("w3");
        log.trace("cat", "t5");
        until("two log calls", || recorder.logs.lock().unwrap().len() == 2).await;
        let logs = recorder.logs.lock().unwrap().clone();
        assert_eq!(texts(&logs), ["w3", "t5"]);
        assert_eq!((logs[0].r#type, logs[1].r#type), (WarningMessage, TraceMessage));

        // Attached twice: the user exception; detached: no more calls; detached twice: false.
        match logger.attach_remote_logger(Some(&me), &[], &[], -1).await {
            Err(CallError::User(LoggerAdminAttachRemoteLoggerError::RemoteLoggerAlreadyAttachedException(_))) => {}
            other => panic!("expected RemoteLoggerAlreadyAttachedException, got {other:?}"),
        }
        assert!(logger.detach_remote_logger(Some(&me)).await.unwrap());
        assert!(!logger.detach_remote_logger(Some(&me)).await.unwrap());
        assert!(!logger.detach_remote_logger(None).await.unwrap());
        log.warning("w4");
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(recorder.logs.lock().unwrap().len(), 2);

        // A remote logger that is gone is detached when a call to it fails.
        a.remove(me.as_object().ice_get_identity()).expect("servant");
        logger.attach_remote_logger(Some(&me), &[], &[], 0).await.unwrap();
        // Its init fails (no such object): it is detached, so attaching it again is accepted.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            match logger.attach_remote_logger(Some(&me), &[], &[], 0).await {
                Ok(()) => break,
                Err(CallError::User(_)) => {
                    assert!(tokio::time::Instant::now() < deadline, "the dead remote logger stayed attached");
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                Err(e) => panic!("{e}"),
            }
        }

        c.destroy().await;
        client.destroy().await;
    });
}

#[test]
fn bad_requests_get_typed_errors() {
    runtime().block_on(async {
        let client = communicator(&[]);
        let c = communicator(&[ENDPOINTS, NAME]);
        let admin: ObjectPrx = client.string_to_proxy(&c.admin().await.unwrap().unwrap().to_string()).unwrap();

        // getLog with an enumerator LogMessageType does not have.
        let r = admin
            .ice_facet("Logger")
            .invoke("getLog", OperationMode::Normal, None, |e| {
                e.write_size(1);
                e.write_enum(7, 3);
                e.write_size(0);
                e.write_i32(-1);
            })
            .await;
        assert!(matches!(r, Err(Error::UnknownLocalException(ref m)) if m.contains("Marshal")), "{r:?}");
        // A truncated getProperty.
        let r =
            admin.ice_facet("Properties").invoke("getProperty", OperationMode::Normal, None, |e| e.write_size(9)).await;
        assert!(matches!(r, Err(Error::UnknownLocalException(_))), "{r:?}");
        // An operation the facet does not have.
        let r = admin.ice_facet("Process").invoke("explode", OperationMode::Normal, None, |_| {}).await;
        assert!(matches!(r, Err(Error::OperationNotExist { .. })), "{r:?}");
        // The Metrics facet has no views.
        let metrics = MetricsAdminPrx::from_object(admin.ice_facet("Metrics"));
        let (enabled, disabled) = metrics.get_metrics_view_names().await.unwrap();
        assert!(enabled.is_empty() && disabled.is_empty());
        assert!(matches!(
            metrics.get_metrics_view("View").await,
            Err(CallError::User(MetricsAdminGetMetricsViewError::UnknownMetricsView(_)))
        ));
        // The communicator still serves.
        assert!(admin.ice_facet("Process").ice_ping().await.is_ok());
        c.destroy().await;
        client.destroy().await;
    });
}

/// A locator whose registry records `setServerProcessProxy` calls.
struct ProcessRegistry {
    registry: Mutex<Option<floe::encoding::ProxyData>>,
    registered: Mutex<Vec<(String, Option<floe::encoding::ProxyData>)>>,
}

impl Dispatcher for ProcessRegistry {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        use floe::encoding::{Decode, ProxyData};
        let mut d = request.decoder();
        let c = &request.current;
        let r = match c.operation.as_str() {
            "getRegistry" => {
                let registry = self.registry.lock().unwrap().clone();
                c.ok(|e| ProxyData::encode_nullable(registry.as_ref(), e))
            }
            "setServerProcessProxy" => {
                let id = String::decode(&mut d).unwrap();
                let proxy = ProxyData::decode_nullable(&mut d).unwrap();
                self.registered.lock().unwrap().push((id, proxy));
                c.ok(|_| {})
            }
            _ => c.operation_not_exist(),
        };
        Box::pin(async move { r })
    }
}

#[test]
fn server_id_registers_the_process_facet_with_the_locator() {
    runtime().block_on(async {
        let host = communicator(&[]);
        let a = host.create_object_adapter_with_endpoints("Locator", "tcp -h 127.0.0.1 -p 0").unwrap();
        let servant = Arc::new(ProcessRegistry { registry: Mutex::default(), registered: Mutex::default() });
        let locator = a.add(servant.clone(), Identity::new("locator"));
        let registry = a.add(servant.clone(), Identity::new("registry"));
        *servant.registry.lock().unwrap() = Some(registry.reference().wire.clone());
        a.activate().await.unwrap();

        let locator = locator.to_string();
        let c = communicator(&[ENDPOINTS, NAME, ("Ice.Admin.ServerId", "server-1"), ("Ice.Default.Locator", &locator)]);
        let admin = c.admin().await.unwrap().unwrap();
        until("setServerProcessProxy", || !servant.registered.lock().unwrap().is_empty()).await;
        let (id, proxy) = servant.registered.lock().unwrap()[0].clone();
        assert_eq!(id, "server-1");
        let proxy = proxy.expect("a process proxy");
        assert_eq!(proxy.identity, *admin.ice_get_identity());
        assert_eq!(proxy.facet, "Process");
        c.destroy().await;

        // Without the Process facet there is nothing to register.
        let c = communicator(&[
            ENDPOINTS,
            NAME,
            ("Ice.Admin.ServerId", "server-2"),
            ("Ice.Default.Locator", &locator),
            ("Ice.Admin.Facets", "Properties"),
        ]);
        c.admin().await.unwrap().unwrap().ice_facet("Properties").ice_ping().await.unwrap();
        assert_eq!(servant.registered.lock().unwrap().len(), 1);
        c.destroy().await;
        host.destroy().await;
    });
}
