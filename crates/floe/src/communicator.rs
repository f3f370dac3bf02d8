//! The communicator: properties, the async runtime, the client connection cache, and the
//! object adapters of one Ice "process".

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::Notify;

use crate::adapter::ObjectAdapter;
use crate::connection::{AcmConfig, Connection, ConnectionConfig};
use crate::encoding::{Context, EncodingVersion, EndpointData};
use crate::error::{Error, Result};
use crate::properties::Properties;
use crate::proxy::reference::{endpoint_to_string, ParseDefaults, Reference};
use crate::proxy::ObjectPrx;
use crate::transport::tcp;

struct Inner {
    properties: Properties,
    runtime: Mutex<Option<OwnedRuntime>>,
    handle: tokio::runtime::Handle,
    defaults: ParseDefaults,
    client_config: ConnectionConfig,
    connections: tokio::sync::Mutex<HashMap<String, Connection>>,
    adapters: Mutex<Vec<ObjectAdapter>>,
    shutdown: AtomicBool,
    shutdown_notify: Notify,
    destroyed: AtomicBool,
    implicit_context: Mutex<Context>,
    implicit_context_set: AtomicBool,
    decoder_context: std::sync::OnceLock<crate::encoding::DecoderContext>,
    connect_timeout: Option<Duration>,
    tcp_buffers: crate::transport::tcp::BufferSizes,
    accept_class_cycles: bool,
    value_factories: Arc<crate::encoding::ValueFactories>,
    has_value_factories: AtomicBool,
    retries: usize,
    batch_auto_flush: usize,
    override_compress: Option<bool>,
}

impl Drop for Inner {
    fn drop(&mut self) {
        // A single-thread runtime stops when its `stop` sender is dropped with the rest: its
        // thread leaves `block_on` and drops the runtime itself (this may run on that very
        // thread, so it is not joined).
        if let Some(OwnedRuntime::Workers(rt)) = self.runtime.get_mut().ok().and_then(|r| r.take()) {
            rt.shutdown_background();
        }
    }
}

/// A runtime the communicator started itself (none when it was made inside a runtime).
enum OwnedRuntime {
    /// tokio's multi-thread scheduler, for two worker threads or more.
    Workers(tokio::runtime::Runtime),
    /// tokio's current-thread scheduler driven by a thread of its own, for
    /// `Floe.Runtime.Threads=1`: the same work as a one-worker multi-thread runtime with less
    /// bookkeeping per wake-up (see docs/adr/0003-hot-paths.md). Dropping `_stop` ends the
    /// thread's `block_on`, after which the thread drops the runtime.
    Single { _stop: tokio::sync::oneshot::Sender<()> },
}

impl OwnedRuntime {
    /// Starts a runtime with `threads` worker threads, and returns it with its handle. A
    /// single-thread runtime busy-polls for up to `busy_poll` before it sleeps
    /// ([`crate::transport::busy_poll`]; zero: never).
    fn start(threads: usize, busy_poll: Duration) -> Result<(OwnedRuntime, tokio::runtime::Handle)> {
        let cannot = |e: std::io::Error| Error::Io(format!("cannot start runtime: {e}"));
        if threads > 1 {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(threads)
                .thread_name("floe")
                .enable_all()
                .build()
                .map_err(cannot)?;
            let handle = rt.handle().clone();
            return Ok((OwnedRuntime::Workers(rt), handle));
        }
        let mut builder = tokio::runtime::Builder::new_current_thread();
        if !busy_poll.is_zero() {
            crate::transport::busy_poll::install(&mut builder, busy_poll);
        }
        let rt = builder.enable_all().build().map_err(cannot)?;
        let handle = rt.handle().clone();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        std::thread::Builder::new()
            .name("floe".into())
            .spawn(move || {
                // Nothing is ever sent: the sender's drop ends the wait.
                rt.block_on(async move {
                    let _ = stopped.await;
                });
                rt.shutdown_background();
            })
            .map_err(cannot)?;
        Ok((OwnedRuntime::Single { _stop: stop }, handle))
    }
}

/// What decoders carry to find their communicator.
struct CommunicatorRef(std::sync::Weak<Inner>);

/// The root object of a floe program, like `Ice::Communicator`. Cheap to clone.
#[derive(Clone)]
pub struct Communicator {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator").finish_non_exhaustive()
    }
}

fn ms(props: &Properties, name: &str, default: i64) -> Result<Option<Duration>> {
    let v = props.get_int(name, default)?;
    Ok(if v < 0 { None } else { Some(Duration::from_millis(v as u64)) })
}

fn acm(props: &Properties, prefix: &str, side: &str, default_close: i64) -> Result<AcmConfig> {
    // `<Adapter>.ACM.X` overrides `Ice.ACM.<Side>.X`, which overrides `Ice.ACM.X`.
    let get = |key: &str, default: i64| -> Result<i64> {
        let general = props.get_int(&format!("Ice.ACM.{key}"), default)?;
        let side = props.get_int(&format!("Ice.ACM.{side}.{key}"), general)?;
        if prefix.is_empty() {
            Ok(side)
        } else {
            props.get_int(&format!("{prefix}.ACM.{key}"), side)
        }
    };
    let mut a = AcmConfig::from_ints(get("Timeout", 60)?, get("Heartbeat", 1)?, get("Close", default_close)?);
    // Ice 3.8: an idle timeout means a heartbeat whenever nothing was written for a while,
    // and, with the idle check on, aborting a connection that heard nothing for the timeout.
    if let Some(idle) = props.get("Ice.Connection.IdleTimeout") {
        let secs: u64 = idle.parse().map_err(|_| Error::Property {
            name: "Ice.Connection.IdleTimeout".into(),
            reason: format!("{idle:?} is not an integer"),
        })?;
        a.timeout = Duration::from_secs(secs);
        a.heartbeat = crate::connection::AcmHeartbeat::OnIdle;
        a.close = if props.get_bool("Ice.Connection.EnableIdleCheck", true)? {
            crate::connection::AcmClose::OnIdleForceful
        } else {
            crate::connection::AcmClose::Off
        };
    }
    Ok(a)
}

/// `Ice.TCP.RcvSize` and `Ice.TCP.SndSize` (bytes; unset or ≤ 0 keeps the system default).
pub(crate) fn tcp_buffer_sizes(props: &Properties) -> Result<crate::transport::tcp::BufferSizes> {
    let size = |name: &str| -> Result<Option<u32>> {
        Ok(match props.get_int(name, 0)? {
            n if n <= 0 => None,
            n => Some(u32::try_from(n).unwrap_or(u32::MAX)),
        })
    };
    Ok(crate::transport::tcp::BufferSizes { receive: size("Ice.TCP.RcvSize")?, send: size("Ice.TCP.SndSize")? })
}

impl Communicator {
    /// Registers a value factory (Ice's `ValueFactoryManager::add`): instances of `type_id`
    /// in what this communicator decodes are made by `factory`, before the generated factories
    /// are asked (to decode into a type of the program's own, or a type of another Slice file).
    pub fn add_value_factory(
        &self,
        type_id: &str,
        factory: impl Fn() -> Box<dyn crate::encoding::ClassValue> + Send + Sync + 'static,
    ) {
        self.inner.value_factories.add(type_id, factory);
        self.inner.has_value_factories.store(true, Ordering::Release);
    }

    /// The registered value factories, for the decoders this communicator makes (`None` while
    /// there are none, so that class-free messages pay nothing).
    pub(crate) fn value_factories(&self) -> Option<Arc<crate::encoding::ValueFactories>> {
        self.inner.has_value_factories.load(Ordering::Acquire).then(|| self.inner.value_factories.clone())
    }

    /// Whether decoded class graphs may contain cycles (`Ice.AcceptClassCycles`, default 0).
    pub fn accept_class_cycles(&self) -> bool {
        self.inner.accept_class_cycles
    }

    /// The socket buffer sizes for TCP connections (`Ice.TCP.RcvSize` / `Ice.TCP.SndSize`).
    pub(crate) fn tcp_buffers(&self) -> crate::transport::tcp::BufferSizes {
        self.inner.tcp_buffers
    }
}

pub(crate) fn connection_config(
    props: &Properties,
    prefix: &str,
    side: &str,
    default_close: i64,
) -> Result<ConnectionConfig> {
    let kb = props.get_int("Ice.MessageSizeMax", 1024)?;
    let kb = props.get_int(&format!("{prefix}.MessageSizeMax"), kb)?;
    let max_message_size =
        if kb <= 0 { i32::MAX as usize } else { (kb as usize).saturating_mul(1024).min(i32::MAX as usize) };
    let acm = acm(props, prefix, side, default_close)?;
    Ok(ConnectionConfig {
        max_message_size,
        compression_level: props.get_int("Ice.Compression.Level", 1)?.clamp(1, 9) as u32,
        acm,
        max_dispatches: {
            // Ice.ThreadPool.Server.Serialize=1 serializes the dispatches of each connection.
            let serialize = side == "Server" && props.get_bool("Ice.ThreadPool.Server.Serialize", false)?;
            // A safe default: one connection cannot pile up more than 1000 waiting dispatches.
            let general = props.get_int("Floe.MaxDispatchesPerConnection", if serialize { 1 } else { 1000 })?;
            props.get_int(&format!("{prefix}.MaxDispatches"), general)?.max(0) as usize
        },
        close_timeout: ms(props, "Ice.Override.CloseTimeout", 10_000)?.unwrap_or(Duration::from_secs(10)),
        trace_protocol: props.get_int("Ice.Trace.Protocol", 0)? > 0,
        trace_network: props.get_int("Ice.Trace.Network", 0)? > 0,
        partial_message_timeout: match props.get_int("Floe.Connection.PartialMessageTimeout", 30)? {
            t if t <= 0 => None,
            t => Some(Duration::from_secs(t as u64)),
        },
    })
}

impl Communicator {
    /// A communicator configured from command-line arguments (`--Ice.X=Y`, `--Ice.Config=F`);
    /// returns it with the arguments it did not use.
    pub fn from_args<I, S>(args: I) -> Result<(Communicator, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let args: Vec<String> = args.into_iter().map(Into::into).collect();
        // Besides Ice's own prefixes, `--Name.Property=value` is taken as a property when `Name`
        // starts with an upper-case letter, as adapter names do (`--TestAdapter.Endpoints=…`).
        let prefixes: Vec<String> = args
            .iter()
            .filter_map(|a| a.strip_prefix("--"))
            .filter_map(|a| a.split_once('=').map(|(n, _)| n))
            .filter(|n| n.contains('.') && n.starts_with(|c: char| c.is_ascii_uppercase()))
            .filter_map(|n| n.split('.').next().map(str::to_string))
            .collect();
        let refs: Vec<&str> = prefixes.iter().map(String::as_str).collect();
        let (props, rest) = Properties::from_args(args, &refs)?;
        Ok((Communicator::with_properties(props)?, rest))
    }

    /// A communicator with default properties.
    pub fn new() -> Result<Communicator> {
        Communicator::with_properties(Properties::new())
    }

    /// A communicator with the given properties. Inside a tokio runtime it uses that runtime;
    /// otherwise it starts its own (`Floe.Runtime.Threads` workers, default: the number of
    /// CPUs; for one worker, a current-thread runtime on a thread of its own, on which
    /// servants cannot use `tokio::task::block_in_place`).
    pub fn with_properties(properties: Properties) -> Result<Communicator> {
        let (runtime, handle) = match tokio::runtime::Handle::try_current() {
            Ok(h) => (None, h),
            Err(_) => {
                // Ice's thread pool sizes, when given, size the runtime (Floe.Runtime.Threads wins).
                let cpus = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2) as i64;
                let server = properties
                    .get_int("Ice.ThreadPool.Server.SizeMax", properties.get_int("Ice.ThreadPool.Server.Size", 0)?)?;
                let client = properties.get_int("Ice.ThreadPool.Client.Size", 0)?;
                let from_ice = server.max(client);
                let default = if from_ice > 0 { from_ice } else { cpus };
                let threads = properties.get_int("Floe.Runtime.Threads", default)?.clamp(1, 1024) as usize;
                let default_spin = crate::transport::busy_poll::DEFAULT_BUDGET.as_micros() as i64;
                let spin = properties.get_int("Floe.Runtime.BusyPoll", default_spin)?.clamp(0, 1_000_000) as u64;
                let (rt, h) = OwnedRuntime::start(threads, Duration::from_micros(spin))?;
                (Some(rt), h)
            }
        };
        let encoding = match properties.get("Ice.Default.EncodingVersion") {
            Some(v) => {
                let (a, b) = v.split_once('.').ok_or_else(|| Error::Property {
                    name: "Ice.Default.EncodingVersion".into(),
                    reason: format!("{v:?} is not a version"),
                })?;
                EncodingVersion {
                    major: a.parse().map_err(|_| Error::Property {
                        name: "Ice.Default.EncodingVersion".into(),
                        reason: v.clone(),
                    })?,
                    minor: b.parse().map_err(|_| Error::Property {
                        name: "Ice.Default.EncodingVersion".into(),
                        reason: v.clone(),
                    })?,
                }
            }
            None => EncodingVersion::V1_1,
        };
        let defaults = ParseDefaults {
            host: properties.get_or("Ice.Default.Host", ""),
            protocol: properties.get_or("Ice.Default.Protocol", "tcp"),
            timeout: properties.get_int("Ice.Default.Timeout", 60_000)? as i32,
            encoding,
        };
        let client_config = connection_config(&properties, "", "Client", 3)?;
        if properties.get_bool("Floe.Malloc.Tune", true)? {
            crate::malloc::tune(client_config.max_message_size);
        }
        let override_timeout = ms(
            &properties,
            "Ice.Override.ConnectTimeout",
            ms(&properties, "Ice.Override.Timeout", -1)?.map(|d| d.as_millis() as i64).unwrap_or(-1),
        )?;
        let override_compress = properties.get("Ice.Override.Compress").map(|v| v.trim() != "0");
        let tcp_buffers = tcp_buffer_sizes(&properties)?;
        let accept_class_cycles = properties.get_int("Ice.AcceptClassCycles", 0)? > 0;
        let inner = Inner {
            accept_class_cycles,
            value_factories: Arc::default(),
            has_value_factories: AtomicBool::new(false),
            tcp_buffers,
            retries: properties.get("Ice.RetryIntervals").map(|v| v.split_whitespace().count()).unwrap_or(1),
            batch_auto_flush: (properties.get_int("Ice.BatchAutoFlushSize", 1024)?.max(1) as usize) * 1024,
            properties,
            runtime: Mutex::new(runtime),
            handle,
            defaults,
            client_config,
            connections: tokio::sync::Mutex::new(HashMap::new()),
            adapters: Mutex::new(Vec::new()),
            shutdown: AtomicBool::new(false),
            shutdown_notify: Notify::new(),
            destroyed: AtomicBool::new(false),
            implicit_context: Mutex::new(Context::new()),
            implicit_context_set: AtomicBool::new(false),
            decoder_context: std::sync::OnceLock::new(),
            connect_timeout: override_timeout,
            override_compress,
        };
        Ok(Communicator { inner: Arc::new(inner) })
    }

    /// The context attached to decoders so that proxies in parameters and results can be
    /// built: made once, and holding the communicator weakly (no reference cycle).
    pub(crate) fn decoder_context(&self) -> crate::encoding::DecoderContext {
        self.inner.decoder_context.get_or_init(|| Arc::new(CommunicatorRef(Arc::downgrade(&self.inner)))).clone()
    }

    /// The communicator a decoder context refers to, if it is still alive.
    pub(crate) fn from_decoder_context(ctx: &crate::encoding::DecoderContext) -> Option<Communicator> {
        ctx.downcast_ref::<CommunicatorRef>().and_then(|r| r.0.upgrade()).map(|inner| Communicator { inner })
    }

    /// The properties.
    pub fn properties(&self) -> &Properties {
        &self.inner.properties
    }

    /// Defaults used when parsing proxy strings.
    pub fn parse_defaults(&self) -> ParseDefaults {
        self.inner.defaults.clone()
    }

    /// The runtime handle that runs this communicator's connections.
    pub fn runtime_handle(&self) -> &tokio::runtime::Handle {
        &self.inner.handle
    }

    /// Runs a future to completion from synchronous code.
    ///
    /// Works outside any async runtime, on the threads of a multi-thread runtime (such as
    /// `#[tokio::main]`'s: the thread is handed over with `tokio::task::block_in_place` while
    /// it waits) and on `spawn_blocking` threads.
    ///
    /// # Panics
    ///
    /// On the thread of a current-thread runtime, which waiting would deadlock; use
    /// [`try_block_on`](Self::try_block_on) to get that as an error.
    pub fn block_on<F: Future>(&self, fut: F) -> F::Output {
        match self.try_block_on(fut) {
            Ok(out) => out,
            Err(e) => panic!("{e}"),
        }
    }

    /// [`block_on`](Self::block_on), failing with [`Error::BlockingInAsync`] instead of
    /// panicking on the thread of a current-thread runtime.
    pub fn try_block_on<F: Future>(&self, fut: F) -> Result<F::Output> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let Ok(current) = Handle::try_current() else {
            return Ok(self.inner.handle.block_on(fut));
        };
        match current.runtime_flavor() {
            RuntimeFlavor::CurrentThread => {
                Err(Error::BlockingInAsync("await the async form, or call it from tokio::task::spawn_blocking".into()))
            }
            // A worker thread hands its other tasks to the other workers while it waits.
            _ => Ok(tokio::task::block_in_place(|| self.inner.handle.block_on(fut))),
        }
    }

    /// Parses a proxy string.
    pub fn string_to_proxy(&self, s: &str) -> Result<ObjectPrx> {
        let r = Reference::parse(s, &self.inner.defaults)?;
        Ok(ObjectPrx::from_reference(self.clone(), r))
    }

    /// The communicator's implicit context, sent with every request (merged under the
    /// per-proxy and per-call contexts).
    pub fn implicit_context(&self) -> Context {
        self.inner.implicit_context.lock().expect("implicit context").clone()
    }

    /// Sets an entry of the implicit context.
    pub fn set_implicit_context(&self, key: &str, value: &str) {
        let mut ctx = self.inner.implicit_context.lock().expect("implicit context");
        ctx.insert(key.to_string(), value.to_string());
        self.inner.implicit_context_set.store(true, Ordering::Release);
    }

    /// Removes an entry of the implicit context.
    pub fn remove_implicit_context(&self, key: &str) {
        let mut ctx = self.inner.implicit_context.lock().expect("implicit context");
        ctx.remove(key);
        self.inner.implicit_context_set.store(!ctx.is_empty(), Ordering::Release);
    }

    #[inline]
    pub(crate) fn has_implicit_context(&self) -> bool {
        self.inner.implicit_context_set.load(Ordering::Acquire)
    }

    pub(crate) fn retries(&self) -> usize {
        self.inner.retries
    }

    pub(crate) fn batch_auto_flush_size(&self) -> usize {
        self.inner.batch_auto_flush
    }

    pub(crate) fn override_compress(&self) -> Option<bool> {
        self.inner.override_compress
    }

    /// Creates an object adapter named `name` listening on `<name>.Endpoints`.
    pub fn create_object_adapter(&self, name: &str) -> Result<ObjectAdapter> {
        let endpoints = self.inner.properties.get_or(&format!("{name}.Endpoints"), "");
        self.create_object_adapter_with_endpoints(name, &endpoints)
    }

    /// Creates an object adapter listening on `endpoints` (e.g. `tcp -h 127.0.0.1 -p 10000`).
    pub fn create_object_adapter_with_endpoints(&self, name: &str, endpoints: &str) -> Result<ObjectAdapter> {
        if self.inner.destroyed.load(Ordering::Acquire) {
            return Err(Error::CommunicatorDestroyed);
        }
        let props = &self.inner.properties;
        let config = connection_config(props, name, "Server", 2)?;
        // A safe default that still allows the 100,000 connections floe is built to hold.
        let max_connections = props.get_int(&format!("{name}.MaxConnections"), 100_000)?.max(0) as usize;
        let a = ObjectAdapter::new(self.clone(), name, endpoints, config, max_connections)?;
        self.inner.adapters.lock().expect("adapters").push(a.clone());
        Ok(a)
    }

    /// Returns a connection to `endpoint`, reusing an open one.
    pub async fn connect(&self, endpoint: &EndpointData) -> Result<Connection> {
        if self.inner.destroyed.load(Ordering::Acquire) {
            return Err(Error::CommunicatorDestroyed);
        }
        let key = endpoint_to_string(endpoint);
        let mut cache = self.inner.connections.lock().await;
        if let Some(c) = cache.get(&key) {
            if !c.is_closed() {
                return Ok(c.clone());
            }
            cache.remove(&key);
        }
        let EndpointData::Tcp(ip) = endpoint else {
            return Err(Error::NoEndpoint(format!("endpoint type of {key} is not supported yet")));
        };
        let port = u16::try_from(ip.port).map_err(|_| Error::NoEndpoint(format!("bad port in {key}")))?;
        let timeout = self.inner.connect_timeout.or(if ip.timeout > 0 {
            Some(Duration::from_millis(ip.timeout as u64))
        } else {
            None
        });
        let stream = tcp::connect(&ip.host, port, timeout, self.inner.tcp_buffers).await?;
        let conn = Connection::establish_outgoing(stream, self.inner.client_config.clone(), timeout).await?;
        cache.insert(key, conn.clone());
        Ok(conn)
    }

    /// Asks the communicator to shut down: `wait_for_shutdown` returns.
    pub fn shutdown(&self) {
        if self.inner.shutdown.swap(true, Ordering::AcqRel) {
            return;
        }
        // As with Ice, adapters stop accepting connections at once and are deactivated (their
        // connections closed gracefully once their dispatches finish) without anyone waiting.
        let adapters: Vec<ObjectAdapter> = self.inner.adapters.lock().expect("adapters").clone();
        for a in &adapters {
            a.stop_accepting();
        }
        self.inner.handle.spawn(async move {
            for a in adapters {
                a.deactivate().await;
            }
        });
        self.inner.shutdown_notify.notify_waiters();
    }

    /// True once `shutdown` was called.
    pub fn is_shutdown(&self) -> bool {
        self.inner.shutdown.load(Ordering::Acquire)
    }

    /// Waits until `shutdown` is called, then deactivates every adapter (waiting for their
    /// dispatches to complete).
    pub async fn wait_for_shutdown(&self) {
        loop {
            let n = self.inner.shutdown_notify.notified();
            if self.is_shutdown() {
                break;
            }
            n.await;
        }
        tracing::debug!(target: "floe::communicator", "shutting down: deactivating adapters");
        let adapters: Vec<ObjectAdapter> = self.inner.adapters.lock().expect("adapters").clone();
        for a in adapters {
            a.deactivate().await;
        }
        tracing::debug!(target: "floe::communicator", "adapters deactivated");
    }

    /// Shuts down, deactivates the adapters and closes every client connection gracefully.
    pub async fn destroy(&self) {
        if self.inner.destroyed.swap(true, Ordering::AcqRel) {
            return;
        }
        self.shutdown();
        let adapters: Vec<ObjectAdapter> = self.inner.adapters.lock().expect("adapters").drain(..).collect();
        for a in adapters {
            a.deactivate().await;
        }
        let conns: Vec<Connection> = self.inner.connections.lock().await.drain().map(|(_, c)| c).collect();
        futures_util::future::join_all(conns.iter().map(|c| c.close())).await;
    }

    /// `destroy` from synchronous code.
    pub fn destroy_blocking(&self) {
        self.block_on(self.destroy());
    }
}
