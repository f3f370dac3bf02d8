//! The communicator's internals that proxies and object adapters share, one layer below them:
//! configuration read from the properties, the async runtime, the cache of outgoing
//! connections, the implicit context and what decoders need (value factories, the class-cycle
//! setting). Proxies and adapters hold an [`Instance`]; [`Communicator`](crate::Communicator)
//! (communicator.rs) is the public face over it and the only part that knows adapters and
//! proxies by type. Adapters register here through [`ManagedAdapter`], a trait this module
//! defines, so that shutting down reaches them without this module depending on them.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;

use crate::connection::{Connection, ConnectionConfig, RequestHandler};
use crate::encoding::{Context, DecoderContext, EncodingVersion, EndpointData, ValueFactories};
use crate::error::{Error, Result};
use crate::properties::Properties;
use crate::reference::{endpoint_to_string, EndpointSelection, ParseDefaults, Reference};
use crate::routing::{LocatorTable, RouterTable};
pub(crate) use crate::runtime::RuntimeLease;
pub(crate) use crate::runtime::ThreadHooks;
use crate::runtime::{ConnectionRuntimes, OwnedRuntime, SingleThreadConfig};
use crate::settings::client_connect_timeout;
pub(crate) use crate::settings::connection_config;
use crate::transport::ssl::SslContext;
use crate::transport::{tcp, Layers};

/// What an object adapter offers the instance that created it: shutting down reaches every
/// adapter through it.
pub(crate) trait ManagedAdapter: Send + Sync + 'static {
    /// Stops accepting connections and stops the open ones from taking new requests, at once.
    fn stop_accepting(&self);
    /// Deactivates the adapter: waits for its dispatches and closes its connections.
    fn deactivate(&self) -> Pin<Box<dyn Future<Output = ()> + Send + '_>>;
}

/// The communicator's shared state. Cheap to clone; all clones are the same instance.
#[derive(Clone)]
pub(crate) struct Instance(Arc<Inner>);

struct Inner {
    properties: Properties,
    /// The IceMX metrics views.
    metrics: Arc<crate::metrics::Metrics>,
    /// The Prometheus endpoint (`Floe.Metrics.Prometheus.Endpoints`), until destroyed.
    prometheus: Mutex<Option<crate::prometheus::Endpoint>>,
    /// The runtime this instance started (none when it was made inside one).
    runtime: Mutex<Option<OwnedRuntime>>,
    /// The runtimes that serve accepted connections beside the instance's own one-thread
    /// runtime (none beside a multi-thread runtime or one the program gave).
    connection_runtimes: Option<Arc<ConnectionRuntimes>>,
    /// The thread hooks it was made with: when set, destroying stops the runtime above and
    /// waits for its threads.
    hooks: Option<ThreadHooks>,
    handle: tokio::runtime::Handle,
    defaults: ParseDefaults,
    client_config: Arc<ConnectionConfig>,
    connections: ConnectionCache,
    adapters: Mutex<Vec<Arc<dyn ManagedAdapter>>>,
    /// `true` once shut down.
    shutdown: watch::Sender<bool>,
    destroyed: AtomicBool,
    implicit_context: Mutex<Context>,
    implicit_context_set: AtomicBool,
    decoder_context: std::sync::OnceLock<DecoderContext>,
    connect_timeout: Option<Duration>,
    tcp_buffers: tcp::BufferSizes,
    /// `Ice.TCP.Backlog`.
    tcp_backlog: u32,
    accept_class_cycles: bool,
    /// `Ice.ClassGraphDepthMax`.
    class_graph_depth_max: usize,
    /// Classes and exceptions of operations without format metadata use the sliced format
    /// (`Ice.Default.SlicedFormat`).
    sliced_format: bool,
    value_factories: Arc<ValueFactories>,
    has_value_factories: AtomicBool,
    retries: usize,
    batch_auto_flush: usize,
    override_compress: Option<bool>,
    /// The locator cache.
    locators: LocatorTable,
    /// What is known of the routers.
    routers: RouterTable,
    /// Sockets of datagram (udp) proxies, by endpoint.
    datagram_sockets: Mutex<HashMap<String, Arc<tokio::net::UdpSocket>>>,
    /// The object adapters routed through a router (by the router proxy's string): they serve
    /// the requests that come back over connections to that router.
    routed_handlers: Mutex<HashMap<String, Arc<dyn RequestHandler>>>,
    /// The TLS configuration, built from the `IceSSL.*` properties the first time an ssl or
    /// wss endpoint is used.
    ssl: std::sync::OnceLock<Result<Arc<SslContext>>>,
    /// The state of the `Ice.Admin` object, set once when the communicator is made; held as
    /// `Any` because the admin module sits above this one.
    admin: std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A single-thread runtime stops when its `stop` sender is dropped with the rest: its
        // thread leaves `block_on` and drops the runtime itself (this may run on that very
        // thread, so it is not joined).
        if let Some(rt) = self.runtime.get_mut().ok().and_then(|r| r.take()) {
            rt.release();
        }
    }
}

/// What decoders carry to find their instance (weakly: no reference cycle).
struct InstanceRef(std::sync::Weak<Inner>);

/// An [`Instance`] held weakly, by what the instance itself holds (servants of its adapters).
#[derive(Clone)]
pub(crate) struct WeakInstance(std::sync::Weak<Inner>);

impl WeakInstance {
    /// The instance, if it is still alive.
    pub(crate) fn upgrade(&self) -> Option<Instance> {
        self.0.upgrade().map(Instance)
    }
}

/// The defaults of new proxies, from `Ice.Default.*`: the default router's proxy has no
/// router or locator, and the default locator's proxy has the default router (as in Ice).
fn parse_defaults(properties: &Properties) -> Result<ParseDefaults> {
    let selection = match properties.get("Ice.Default.EndpointSelection") {
        None => EndpointSelection::Random,
        Some(v) => EndpointSelection::parse(&v).ok_or_else(|| Error::Property {
            name: "Ice.Default.EndpointSelection".into(),
            reason: format!("{v:?} is neither Random nor Ordered"),
        })?,
    };
    let mut defaults = ParseDefaults {
        host: properties.get_or("Ice.Default.Host", ""),
        protocol: properties.get_or("Ice.Default.Protocol", "tcp"),
        timeout: properties.get_int("Ice.Default.Timeout", 60_000)? as i32,
        encoding: default_encoding(properties)?,
        locator_cache_timeout: properties.get_int("Ice.Default.LocatorCacheTimeout", -1)?.clamp(-1, i32::MAX as i64)
            as i32,
        endpoint_selection: selection,
        prefer_secure: properties.get_int("Ice.Default.PreferSecure", 0)? > 0,
        ..ParseDefaults::default()
    };
    let proxy = |name: &str, defaults: &ParseDefaults| -> Result<Option<Box<Reference>>> {
        match properties.get(name).filter(|s| !s.trim().is_empty()) {
            Some(s) => Ok(Some(Box::new(Reference::parse(&s, defaults)?))),
            None => Ok(None),
        }
    };
    defaults.router = proxy("Ice.Default.Router", &defaults)?;
    defaults.locator = proxy("Ice.Default.Locator", &defaults)?;
    Ok(defaults)
}

/// `Ice.TCP.RcvSize` and `Ice.TCP.SndSize` (bytes; unset or ≤ 0 keeps the system default).
pub(crate) fn tcp_buffer_sizes(props: &Properties) -> Result<tcp::BufferSizes> {
    let size = |name: &str| -> Result<Option<u32>> {
        Ok(match props.get_int(name, 0)? {
            n if n <= 0 => None,
            n => Some(u32::try_from(n).unwrap_or(u32::MAX)),
        })
    };
    Ok(tcp::BufferSizes { receive: size("Ice.TCP.RcvSize")?, send: size("Ice.TCP.SndSize")? })
}

/// `Ice.Default.EncodingVersion` (1.1 when unset).
fn default_encoding(properties: &Properties) -> Result<EncodingVersion> {
    let Some(v) = properties.get("Ice.Default.EncodingVersion") else { return Ok(EncodingVersion::V1_1) };
    let bad =
        || Error::Property { name: "Ice.Default.EncodingVersion".into(), reason: format!("{v:?} is not a version") };
    let (a, b) = v.split_once('.').ok_or_else(bad)?;
    Ok(EncodingVersion { major: a.parse().map_err(|_| bad())?, minor: b.parse().map_err(|_| bad())? })
}

impl Instance {
    /// An instance configured by `properties`. Inside a tokio runtime it uses that runtime;
    /// otherwise it starts its own (`Floe.Runtime.Threads` workers, default: the size of Ice's
    /// thread pools when they are given, else one: a current-thread runtime on a thread of
    /// its own).
    pub(crate) fn new(properties: Properties, hooks: Option<ThreadHooks>) -> Result<Instance> {
        let (runtime, handle) = match tokio::runtime::Handle::try_current() {
            Ok(h) => (None, h),
            Err(_) => {
                // Ice's thread pool sizes, when given, size the runtime (Floe.Runtime.Threads
                // wins). Without either, one thread, as Ice's pools have by default: a
                // current-thread runtime that busy-polls answers a lone request sooner and at
                // less CPU than a multi-thread one whose idle workers are woken for it
                // (docs/connection-scale.md has the measurements).
                let server = properties
                    .get_int("Ice.ThreadPool.Server.SizeMax", properties.get_int("Ice.ThreadPool.Server.Size", 0)?)?;
                let client = properties.get_int("Ice.ThreadPool.Client.Size", 0)?;
                let from_ice = server.max(client);
                let default = if from_ice > 0 { from_ice } else { 1 };
                let threads = properties.get_int("Floe.Runtime.Threads", default)?.clamp(1, 1024) as usize;
                let default_spin = crate::transport::busy_poll::DEFAULT_BUDGET.as_micros() as i64;
                let spin = properties.get_int("Floe.Runtime.BusyPoll", default_spin)?.clamp(0, 1_000_000) as u64;
                let sharing = if properties.get_bool("Floe.Runtime.BusyPoll.SpareCpuOnly", true)? {
                    crate::transport::busy_poll::Sharing::SpareCpuOnly
                } else {
                    crate::transport::busy_poll::Sharing::Always
                };
                let connection_threads = properties
                    // A size given for Ice's thread pools is the program asking for that many
                    // threads, as in Ice (one of them serialising every dispatch): no
                    // connection runtimes unless asked for too.
                    .get_int(
                        "Floe.Runtime.ConnectionThreads",
                        if from_ice > 0 { 0 } else { crate::runtime::default_connection_threads() as i64 },
                    )?
                    .clamp(0, 1024) as usize;
                let config =
                    SingleThreadConfig { busy_poll: Duration::from_micros(spin), sharing, hooks: hooks.clone() };
                let connection_threads_connections = properties
                    .get_int(
                        "Floe.Runtime.ConnectionThreads.MaxConnections",
                        (connection_threads * crate::runtime::DEFAULT_CONNECTIONS_PER_THREAD) as i64,
                    )?
                    .max(0) as usize;
                let (rt, h) = OwnedRuntime::start(threads, config, connection_threads, connection_threads_connections)?;
                (Some(rt), h)
            }
        };
        let defaults = parse_defaults(&properties)?;
        let client_config = connection_config(&properties, "", "Client", 3)?;
        if properties.get_bool("Floe.Malloc.Tune", true)? {
            crate::malloc::tune(client_config.max_message_size);
        }
        let connect_timeout = client_connect_timeout(&properties)?;
        let metrics = crate::metrics::Metrics::new(&properties);
        let prometheus = match (crate::prometheus::configured_address(&properties), metrics.prometheus()) {
            (Err(reason), _) => {
                return Err(Error::Property { name: crate::prometheus::ENDPOINTS_PROPERTY.into(), reason })
            }
            (Ok(Some(address)), Some(series)) => {
                let endpoint = crate::prometheus::serve(&handle, address, series.clone()).map_err(|e| {
                    Error::Initialization(format!(
                        "{}: cannot listen on {address}: {e}",
                        crate::prometheus::ENDPOINTS_PROPERTY
                    ))
                })?;
                tracing::debug!(target: "floe::communicator", "Prometheus endpoint on http://{}/metrics", endpoint.address());
                Some(endpoint)
            }
            _ => None,
        };
        let inner = Inner {
            accept_class_cycles: properties.get_int("Ice.AcceptClassCycles", 0)? > 0,
            // As in Ice, a value below 1 sets no limit.
            class_graph_depth_max: match properties
                .get_int("Ice.ClassGraphDepthMax", crate::encoding::class::CLASS_GRAPH_DEPTH_MAX as i64)?
            {
                n if n < 1 => usize::MAX,
                n => n as usize,
            },
            sliced_format: properties.get_int("Ice.Default.SlicedFormat", 0)? > 0,
            value_factories: Arc::default(),
            has_value_factories: AtomicBool::new(false),
            tcp_buffers: tcp_buffer_sizes(&properties)?,
            tcp_backlog: properties
                .get_int("Ice.TCP.Backlog", i64::from(tcp::DEFAULT_BACKLOG))?
                .clamp(1, i64::from(i32::MAX)) as u32,
            retries: properties.get("Ice.RetryIntervals").map(|v| v.split_whitespace().count()).unwrap_or(1),
            batch_auto_flush: (properties.get_int("Ice.BatchAutoFlushSize", 1024)?.max(1) as usize) * 1024,
            override_compress: properties.get("Ice.Override.Compress").map(|v| v.trim() != "0"),
            metrics,
            prometheus: Mutex::new(prometheus),
            properties,
            connection_runtimes: runtime.as_ref().and_then(OwnedRuntime::connection_runtimes),
            runtime: Mutex::new(runtime),
            hooks,
            handle,
            defaults,
            client_config: Arc::new(client_config),
            connections: ConnectionCache::default(),
            adapters: Mutex::new(Vec::new()),
            shutdown: watch::Sender::new(false),
            destroyed: AtomicBool::new(false),
            implicit_context: Mutex::new(Context::new()),
            implicit_context_set: AtomicBool::new(false),
            decoder_context: std::sync::OnceLock::new(),
            connect_timeout,
            locators: LocatorTable::default(),
            routers: RouterTable::default(),
            datagram_sockets: Mutex::new(HashMap::new()),
            routed_handlers: Mutex::new(HashMap::new()),
            ssl: std::sync::OnceLock::new(),
            admin: std::sync::OnceLock::new(),
        };
        Ok(Instance(Arc::new(inner)))
    }

    /// The slot of the `Ice.Admin` object's state (see the admin module).
    pub(crate) fn admin_slot(&self) -> &std::sync::OnceLock<Arc<dyn std::any::Any + Send + Sync>> {
        &self.0.admin
    }

    /// A handle that does not keep the instance alive.
    pub(crate) fn downgrade(&self) -> WeakInstance {
        WeakInstance(Arc::downgrade(&self.0))
    }

    /// The properties.
    pub(crate) fn properties(&self) -> &Properties {
        &self.0.properties
    }

    /// The IceMX metrics views.
    pub(crate) fn metrics(&self) -> &Arc<crate::metrics::Metrics> {
        &self.0.metrics
    }

    /// Defaults used when parsing proxy strings.
    pub(crate) fn parse_defaults(&self) -> &ParseDefaults {
        &self.0.defaults
    }

    /// The locator cache.
    pub(crate) fn locator_table(&self) -> &LocatorTable {
        &self.0.locators
    }

    /// What is known of the routers.
    pub(crate) fn router_table(&self) -> &RouterTable {
        &self.0.routers
    }

    /// The handler of the object adapter routed through `router` (the router proxy's string).
    pub(crate) fn routed_handler(&self, router: &str) -> Option<Arc<dyn RequestHandler>> {
        self.0.routed_handlers.lock().expect("routed handlers").get(router).cloned()
    }

    /// Makes `handler` serve the requests that come back over connections to `router`.
    pub(crate) fn set_routed_handler(&self, router: &str, handler: Option<Arc<dyn RequestHandler>>) {
        let mut handlers = self.0.routed_handlers.lock().expect("routed handlers");
        match handler {
            Some(h) => handlers.insert(router.to_string(), h),
            None => handlers.remove(router),
        };
    }

    /// A socket that sends datagrams to `endpoint` (connected to it), made once and shared by
    /// every datagram proxy of the communicator.
    pub(crate) async fn datagram_socket(&self, endpoint: &EndpointData) -> Result<Arc<tokio::net::UdpSocket>> {
        if self.is_destroyed() {
            return Err(Error::CommunicatorDestroyed);
        }
        let EndpointData::Udp { host, port, .. } = endpoint else {
            return Err(Error::NoEndpoint(format!("{} is not a udp endpoint", endpoint_to_string(endpoint))));
        };
        let key = endpoint_to_string(endpoint);
        if let Some(s) = self.0.datagram_sockets.lock().expect("datagram sockets").get(&key) {
            return Ok(s.clone());
        }
        let port = u16::try_from(*port).map_err(|_| Error::NoEndpoint(format!("bad port in {key}")))?;
        let socket = crate::transport::udp::connect(host, port).await?;
        let socket = Arc::new(socket);
        let mut sockets = self.0.datagram_sockets.lock().expect("datagram sockets");
        Ok(sockets.entry(key).or_insert(socket).clone())
    }

    /// The runtime that runs this instance's connections.
    pub(crate) fn runtime_handle(&self) -> &tokio::runtime::Handle {
        &self.0.handle
    }

    /// The connection runtime a newly accepted connection is to be served on
    /// (`Floe.Runtime.ConnectionThreads`), or `None` to serve it where it was accepted.
    pub(crate) fn connection_runtime(&self) -> Option<RuntimeLease> {
        self.0.connection_runtimes.as_ref()?.lease()
    }

    /// Runs a future to completion from synchronous code: outside any runtime, on the workers
    /// of a multi-thread runtime (through `block_in_place`) and on its `spawn_blocking`
    /// threads; [`Error::BlockingInAsync`] on the threads of a current-thread runtime, whose
    /// one driving thread waiting could deadlock (tokio does not tell its `spawn_blocking`
    /// threads apart from it).
    pub(crate) fn try_block_on<F: Future>(&self, fut: F) -> Result<F::Output> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let Ok(current) = Handle::try_current() else {
            return Ok(self.0.handle.block_on(fut));
        };
        match current.runtime_flavor() {
            RuntimeFlavor::CurrentThread => Err(Error::BlockingInAsync(
                "await the async form, call it from a thread of your own, or use a multi-thread runtime".into(),
            )),
            // A worker thread hands its other tasks to the other workers while it waits.
            _ => Ok(tokio::task::block_in_place(|| self.0.handle.block_on(fut))),
        }
    }

    /// True when both are the same instance.
    pub(crate) fn same_as(&self, other: &Instance) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The context attached to decoders so that proxies in parameters and results can be
    /// built: made once, and holding the instance weakly.
    pub(crate) fn decoder_context(&self) -> DecoderContext {
        self.0.decoder_context.get_or_init(|| Arc::new(InstanceRef(Arc::downgrade(&self.0)))).clone()
    }

    /// The instance a decoder context refers to, if it is still alive.
    pub(crate) fn from_decoder_context(ctx: &DecoderContext) -> Option<Instance> {
        ctx.downcast_ref::<InstanceRef>().and_then(|r| r.0.upgrade()).map(Instance)
    }

    /// Registers a value factory (see `Communicator::add_value_factory`).
    pub(crate) fn add_value_factory(
        &self,
        type_id: &str,
        factory: impl Fn() -> Box<dyn crate::encoding::ClassValue> + Send + Sync + 'static,
    ) {
        self.0.value_factories.add(type_id, factory);
        self.0.has_value_factories.store(true, Ordering::Release);
    }

    /// The registered value factories, for the decoders this instance makes (`None` while there
    /// are none, so that class-free messages pay nothing).
    pub(crate) fn value_factories(&self) -> Option<Arc<ValueFactories>> {
        self.0.has_value_factories.load(Ordering::Acquire).then(|| self.0.value_factories.clone())
    }

    /// Whether decoded class graphs may contain cycles (`Ice.AcceptClassCycles`).
    pub(crate) fn accept_class_cycles(&self) -> bool {
        self.0.accept_class_cycles
    }

    /// The format of the classes and exceptions of operations without format metadata:
    /// sliced when `Ice.Default.SlicedFormat` is set, as in Ice.
    pub(crate) fn default_format(&self) -> crate::encoding::FormatType {
        if self.0.sliced_format {
            crate::encoding::FormatType::Sliced
        } else {
            crate::encoding::FormatType::Compact
        }
    }

    /// A decoder over `payload` with this instance's settings (proxies, value factories,
    /// class cycles).
    pub(crate) fn decoder(&self, payload: bytes::Bytes, encoding: EncodingVersion) -> crate::encoding::Decoder {
        let mut d = crate::encoding::Decoder::new(payload, encoding).with_context(Some(self.decoder_context()));
        d.set_accept_class_cycles(self.accept_class_cycles());
        d.set_class_graph_depth_max(self.0.class_graph_depth_max);
        d.set_value_factories(self.value_factories());
        d
    }

    /// The socket buffer sizes for TCP connections (`Ice.TCP.RcvSize` / `Ice.TCP.SndSize`).
    pub(crate) fn tcp_buffers(&self) -> tcp::BufferSizes {
        self.0.tcp_buffers
    }

    /// The communicator's TLS configuration (`IceSSL.*`), built on first use; the same
    /// error every time when the properties are wrong.
    pub(crate) fn ssl_context(&self) -> Result<Arc<SslContext>> {
        self.0.ssl.get_or_init(|| SslContext::from_properties(&self.0.properties).map(Arc::new)).clone()
    }

    /// What runs over TCP for `endpoint` (`None`: not a TCP-based endpoint).
    pub(crate) fn layers(&self, endpoint: &EndpointData) -> Result<Option<Layers>> {
        Ok(Some(match endpoint {
            EndpointData::Tcp(_) => Layers::Tcp,
            EndpointData::Ssl(_) => Layers::Ssl(self.ssl_context()?),
            EndpointData::Ws(_, resource) => Layers::Ws(resource.clone()),
            EndpointData::Wss(_, resource) => Layers::Wss(self.ssl_context()?, resource.clone()),
            _ => return Ok(None),
        }))
    }

    /// The listen backlog of TCP endpoints (`Ice.TCP.Backlog`, default `SOMAXCONN` as with
    /// Ice).
    pub(crate) fn tcp_backlog(&self) -> u32 {
        self.0.tcp_backlog
    }

    /// The implicit context, sent with every request.
    pub(crate) fn implicit_context(&self) -> Context {
        self.0.implicit_context.lock().expect("implicit context").clone()
    }

    /// Sets an entry of the implicit context.
    pub(crate) fn set_implicit_context(&self, key: &str, value: &str) {
        let mut ctx = self.0.implicit_context.lock().expect("implicit context");
        ctx.insert(key.to_string(), value.to_string());
        self.0.implicit_context_set.store(true, Ordering::Release);
    }

    /// Removes an entry of the implicit context.
    pub(crate) fn remove_implicit_context(&self, key: &str) {
        let mut ctx = self.0.implicit_context.lock().expect("implicit context");
        ctx.remove(key);
        self.0.implicit_context_set.store(!ctx.is_empty(), Ordering::Release);
    }

    /// True while the implicit context has entries.
    #[inline]
    pub(crate) fn has_implicit_context(&self) -> bool {
        self.0.implicit_context_set.load(Ordering::Acquire)
    }

    /// How many times a failed request may be retried (`Ice.RetryIntervals`).
    pub(crate) fn retries(&self) -> usize {
        self.0.retries
    }

    /// `Ice.BatchAutoFlushSize` in bytes.
    pub(crate) fn batch_auto_flush_size(&self) -> usize {
        self.0.batch_auto_flush
    }

    /// `Ice.Override.Compress`, when set.
    pub(crate) fn override_compress(&self) -> Option<bool> {
        self.0.override_compress
    }

    /// Keeps an adapter, so that shutting down reaches it.
    pub(crate) fn register_adapter(&self, adapter: Arc<dyn ManagedAdapter>) -> Result<()> {
        if self.is_destroyed() {
            return Err(Error::CommunicatorDestroyed);
        }
        self.0.adapters.lock().expect("adapters").push(adapter);
        Ok(())
    }

    fn adapters(&self) -> Vec<Arc<dyn ManagedAdapter>> {
        self.0.adapters.lock().expect("adapters").clone()
    }

    /// True once destroyed.
    pub(crate) fn is_destroyed(&self) -> bool {
        self.0.destroyed.load(Ordering::Acquire)
    }

    /// Shuts down: adapters stop accepting connections at once and are deactivated (their
    /// connections closed gracefully once their dispatches finish) without anyone waiting, as
    /// with Ice; [`wait_for_shutdown`](Self::wait_for_shutdown) returns.
    pub(crate) fn shutdown(&self) {
        if !self.0.shutdown.send_replace(true) {
            let adapters = self.adapters();
            for a in &adapters {
                a.stop_accepting();
            }
            self.0.handle.spawn(async move {
                for a in adapters {
                    a.deactivate().await;
                }
            });
        }
    }

    /// True once shut down.
    pub(crate) fn is_shutdown(&self) -> bool {
        *self.0.shutdown.borrow()
    }

    /// Waits until shut down, then for every adapter's deactivation.
    pub(crate) async fn wait_for_shutdown(&self) {
        let mut shut = self.0.shutdown.subscribe();
        // The sender lives as long as `self`: waiting cannot fail.
        let _ = shut.wait_for(|down| *down).await;
        tracing::debug!(target: "floe::communicator", "shutting down: deactivating adapters");
        for a in self.adapters() {
            a.deactivate().await;
        }
        tracing::debug!(target: "floe::communicator", "adapters deactivated");
    }

    /// Shuts down, deactivates the adapters and closes every outgoing connection gracefully.
    pub(crate) async fn destroy(&self) {
        if self.0.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shutdown();
        drop(self.0.prometheus.lock().unwrap_or_else(|e| e.into_inner()).take());
        let adapters: Vec<_> = self.0.adapters.lock().expect("adapters").drain(..).collect();
        for a in adapters {
            a.deactivate().await;
        }
        let open = self.0.connections.take_all();
        futures_util::future::join_all(open.iter().map(|c| c.close())).await;
    }

    /// With thread hooks, after [`destroy`](Self::destroy): stops the instance's own runtime
    /// (if any) and waits for its threads to end, so that each thread's stop hook has run
    /// when this returns; it cannot wait when called on one of those threads (their stop
    /// hooks run when they end, soon after). Without thread hooks the runtime stops when the
    /// last handle on the instance is dropped, as before.
    pub(crate) async fn stop_runtime(&self) {
        if self.0.hooks.is_none() {
            return;
        }
        let Some(rt) = self.0.runtime.lock().expect("runtime").take() else {
            return;
        };
        let (done, stopped) = tokio::sync::oneshot::channel::<()>();
        if !rt.stop(move || {
            let _ = done.send(());
        }) {
            let _ = stopped.await;
        }
    }

    /// A connection to `endpoint`, reusing an open one. Callers that ask for the same
    /// endpoint while it is being connected share that attempt; no lock is held while
    /// connecting, so an unreachable endpoint delays only its own callers.
    pub(crate) async fn connect(&self, endpoint: &EndpointData) -> Result<Connection> {
        if self.is_destroyed() {
            return Err(Error::CommunicatorDestroyed);
        }
        let key = endpoint_to_string(endpoint);
        let cache = &self.0.connections;
        loop {
            let attempt = match cache.find_or_start(&key) {
                Lookup::Open(c) => return Ok(c),
                Lookup::Wait(mut outcome) => {
                    match outcome.wait_for(Option::is_some).await {
                        Ok(result) => return result.clone().expect("waited for an outcome"),
                        // The caller connecting gave up (its future was dropped): try again.
                        Err(_) => continue,
                    }
                }
                Lookup::Connect(attempt) => attempt,
            };
            let attempt = AttemptGuard { cache, key: &key, outcome: Some(attempt) };
            let result = self.open(endpoint, &key).await;
            let result = match result {
                // Destroyed meanwhile: the new connection is not kept.
                Ok(c) if self.is_destroyed() => {
                    c.close_forcefully(Error::CommunicatorDestroyed);
                    Err(Error::CommunicatorDestroyed)
                }
                Ok(c) => {
                    if let Some(gauge) = self.0.metrics.connection_opened("outgoing") {
                        c.on_closed_also(move || drop(gauge));
                    }
                    Ok(c)
                }
                other => other,
            };
            attempt.finish(&result);
            return result;
        }
    }

    /// An open connection to one of `endpoints` (the first in their order that has one).
    pub(crate) fn find_open_connection(&self, endpoints: &[EndpointData]) -> Option<Connection> {
        if self.is_destroyed() {
            return None;
        }
        endpoints.iter().find_map(|ep| self.0.connections.find_open(&endpoint_to_string(ep)))
    }

    /// Opens and validates a new connection to `endpoint`.
    async fn open(&self, endpoint: &EndpointData, key: &str) -> Result<Connection> {
        let ip = match endpoint {
            EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _) => ip,
            _ => return Err(Error::NoEndpoint(format!("endpoint type of {key} is not supported yet"))),
        };
        let layers = self.layers(endpoint)?.unwrap_or(Layers::Tcp);
        let port = u16::try_from(ip.port).map_err(|_| Error::NoEndpoint(format!("bad port in {key}")))?;
        let timeout = self.0.connect_timeout.or(if ip.timeout > 0 {
            Some(Duration::from_millis(ip.timeout as u64))
        } else {
            None
        });
        if let Layers::Tcp = layers {
            let stream = tcp::connect(&ip.host, port, timeout, self.0.tcp_buffers).await?;
            return Connection::establish_outgoing(stream, self.0.client_config.clone(), timeout).await;
        }
        let stream = tcp::connect_stream(&ip.host, port, timeout, self.0.tcp_buffers).await?;
        // The TLS handshake and the WebSocket upgrade are bounded too, by the connect timeout
        // or else by 30 s.
        let limit = timeout.unwrap_or(Duration::from_secs(30));
        let upgraded = tokio::time::timeout(limit, crate::transport::connect_layers(stream, &layers, &ip.host, port))
            .await
            .map_err(|_| Error::ConnectFailed {
                endpoint: key.to_string(),
                reason: format!("handshake timed out after {limit:?}"),
            })??;
        let (stream, security) = upgraded;
        match Connection::establish_outgoing(stream, self.0.client_config.clone(), timeout).await {
            // The server refused this side's certificate once the TLS handshake was done.
            Err(e) => Err(security.and_then(|s| s.get().cloned()).map(Error::Security).unwrap_or(e)),
            ok => ok,
        }
    }
}

/// The outcome of a connection attempt, published to the callers that share it.
type Outcome = Option<Result<Connection>>;

/// Outgoing connections by endpoint, and the attempts under way. Its lock is only ever held
/// to look up or change an entry, never across I/O.
#[derive(Default)]
struct ConnectionCache {
    entries: Mutex<HashMap<String, CacheEntry>>,
}

enum CacheEntry {
    /// An established connection (it may have closed since; it is replaced when found so).
    Open(Connection),
    /// A connection being established: callers for the same endpoint wait for its outcome.
    Connecting(watch::Receiver<Outcome>),
}

/// What [`ConnectionCache::find_or_start`] found.
enum Lookup {
    /// An open connection.
    Open(Connection),
    /// Another caller is connecting: wait for its outcome.
    Wait(watch::Receiver<Outcome>),
    /// Nothing usable: the caller connects, and publishes the outcome through this sender.
    Connect(watch::Sender<Outcome>),
}

impl ConnectionCache {
    fn find_or_start(&self, key: &str) -> Lookup {
        let mut entries = self.entries.lock().expect("connection cache");
        match entries.get(key) {
            Some(CacheEntry::Open(c)) if !c.is_closed() => return Lookup::Open(c.clone()),
            Some(CacheEntry::Connecting(outcome)) => return Lookup::Wait(outcome.clone()),
            _ => {}
        }
        let (attempt, outcome) = watch::channel(None);
        entries.insert(key.to_string(), CacheEntry::Connecting(outcome));
        Lookup::Connect(attempt)
    }

    /// The open connection to `key`, if there is one.
    fn find_open(&self, key: &str) -> Option<Connection> {
        match self.entries.lock().expect("connection cache").get(key) {
            Some(CacheEntry::Open(c)) if !c.is_closed() => Some(c.clone()),
            _ => None,
        }
    }

    /// Every open connection, leaving the cache empty.
    fn take_all(&self) -> Vec<Connection> {
        let mut entries = self.entries.lock().expect("connection cache");
        entries
            .drain()
            .filter_map(|(_, e)| match e {
                CacheEntry::Open(c) => Some(c),
                CacheEntry::Connecting(_) => None,
            })
            .collect()
    }
}

/// The caller's side of a connection attempt: [`finish`](Self::finish) records and publishes
/// the outcome; dropped unfinished (the caller gave up), it removes the attempt so that the
/// callers waiting for it start their own.
struct AttemptGuard<'a> {
    cache: &'a ConnectionCache,
    key: &'a str,
    outcome: Option<watch::Sender<Outcome>>,
}

impl AttemptGuard<'_> {
    fn finish(mut self, result: &Result<Connection>) {
        let Some(outcome) = self.outcome.take() else { return };
        {
            let mut entries = self.cache.entries.lock().expect("connection cache");
            match result {
                Ok(c) => {
                    entries.insert(self.key.to_string(), CacheEntry::Open(c.clone()));
                }
                // A failed attempt leaves nothing behind: the next caller tries again.
                Err(_) => {
                    entries.remove(self.key);
                }
            }
        }
        outcome.send_replace(Some(result.clone()));
    }
}

impl Drop for AttemptGuard<'_> {
    fn drop(&mut self) {
        if self.outcome.take().is_some() {
            let mut entries = self.cache.entries.lock().expect("connection cache");
            if matches!(entries.get(self.key), Some(CacheEntry::Connecting(_))) {
                entries.remove(self.key);
            }
        }
    }
}
