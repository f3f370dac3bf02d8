//! The communicator, the root object of a floe program (Ice's `Ice::Communicator`): the public
//! face over the [`Instance`] that proxies and adapters share. It is the top of the runtime's
//! layers, the one module that knows object adapters and proxies by type: it makes them, and
//! it gives them back their communicator (`ObjectPrx::communicator`,
//! `ObjectAdapter::communicator`), accessors that point up the layers and so are implemented
//! here rather than beside the types.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;

use crate::adapter::ObjectAdapter;
use crate::admin::{LogSink, Logger, PropertiesAdminHandle};
use crate::connection::Connection;
use crate::dispatch::Dispatcher;
use crate::encoding::{Context, Decoder, EndpointData, Identity, ProxyData};
use crate::error::{Error, Result};
use crate::instance::{connection_config, Instance, ThreadHooks};
use crate::properties::Properties;
use crate::proxy::ObjectPrx;
use crate::reference::{ParseDefaults, Reference};

/// The root object of a floe program, like `Ice::Communicator`. Cheap to clone; all clones
/// are the same communicator.
#[derive(Clone)]
pub struct Communicator {
    instance: Instance,
}

impl std::fmt::Debug for Communicator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Communicator").finish_non_exhaustive()
    }
}

impl PartialEq for Communicator {
    fn eq(&self, other: &Self) -> bool {
        self.instance.same_as(&other.instance)
    }
}

impl Communicator {
    /// A [`CommunicatorBuilder`], for what the constructors below do not set: thread hooks.
    pub fn builder() -> CommunicatorBuilder {
        CommunicatorBuilder::default()
    }

    /// A communicator configured from command-line arguments (`--Ice.X=Y`, `--Ice.Config=F`);
    /// returns it with the arguments it did not use.
    pub fn from_args<I, S>(args: I) -> Result<(Communicator, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Communicator::from_args_with_defaults(args, &[])
    }

    /// [`from_args`](Self::from_args), with `defaults` (name, value) for the properties
    /// neither the arguments nor the files of `--Ice.Config` set: a program's own defaults,
    /// which its users can still override.
    pub fn from_args_with_defaults<I, S>(args: I, defaults: &[(&str, &str)]) -> Result<(Communicator, Vec<String>)>
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
        for (name, value) in defaults {
            if props.get(name).is_none() {
                props.set(name, value);
            }
        }
        Ok((Communicator::with_properties(props)?, rest))
    }

    /// A communicator with default properties.
    pub fn new() -> Result<Communicator> {
        Communicator::with_properties(Properties::new())
    }

    /// A communicator with the given properties. Inside a tokio runtime it uses that runtime;
    /// otherwise it starts its own (`Floe.Runtime.Threads` workers, default: the size of Ice's
    /// thread pools when they are given, else one, as in Ice; one worker is a current-thread
    /// runtime on a thread of its own, on which servants cannot use
    /// `tokio::task::block_in_place` and generated `_blocking` calls return
    /// [`Error::BlockingInAsync`](crate::Error::BlockingInAsync)).
    ///
    /// With `Ice.Admin.Endpoints` set (and `Ice.Admin.DelayCreation` unset), the `Ice.Admin`
    /// object is created too: see [`admin`](Self::admin).
    pub fn with_properties(properties: Properties) -> Result<Communicator> {
        Communicator::make(properties, None)
    }

    /// A communicator with the given properties whose [`Logger`] writes to `sink` (Ice's
    /// `InitializationData.logger`) rather than to `tracing`.
    pub fn with_logger(properties: Properties, sink: Arc<dyn LogSink>) -> Result<Communicator> {
        Communicator::make(properties, Some(sink))
    }

    fn make(properties: Properties, sink: Option<Arc<dyn LogSink>>) -> Result<Communicator> {
        Communicator::make_with(properties, sink, None, &[])
    }

    fn make_with(
        properties: Properties,
        sink: Option<Arc<dyn LogSink>>,
        hooks: Option<ThreadHooks>,
        known: &[String],
    ) -> Result<Communicator> {
        crate::stdio::redirect(&properties)?;
        let instance = Instance::new(properties, hooks)?;
        crate::admin::init(&instance, sink)?;
        let communicator = Communicator { instance };
        communicator.warn_unknown_properties(known)?;
        Ok(communicator)
    }

    /// With `Ice.Warn.UnknownProperties` > 0 (the default), a warning through the logger for
    /// each unknown property ([`Properties::unknown`]), worded as Ice words it.
    fn warn_unknown_properties(&self, known: &[String]) -> Result<()> {
        let properties = self.properties();
        if properties.get_int("Ice.Warn.UnknownProperties", 1)? > 0 {
            let known: Vec<&str> = known.iter().map(String::as_str).collect();
            let logger = self.logger();
            for name in properties.unknown(&known) {
                match crate::properties::suggestion(&name) {
                    Some(known) => logger.warning(&format!("unknown property: `{name}'; did you mean `{known}'")),
                    None => logger.warning(&format!("unknown property: `{name}'")),
                }
            }
        }
        Ok(())
    }

    pub(crate) fn from_instance(instance: Instance) -> Communicator {
        Communicator { instance }
    }

    /// Registers a value factory (Ice's `ValueFactoryManager::add`): instances of `type_id`
    /// in what this communicator decodes are made by `factory`, before the generated factories
    /// are asked (to decode into a type of the program's own, or a type of another Slice file).
    pub fn add_value_factory(
        &self,
        type_id: &str,
        factory: impl Fn() -> Box<dyn crate::encoding::ClassValue> + Send + Sync + 'static,
    ) {
        self.instance.add_value_factory(type_id, factory);
    }

    /// Whether decoded class graphs may contain cycles (`Ice.AcceptClassCycles`, default 0).
    pub fn accept_class_cycles(&self) -> bool {
        self.instance.accept_class_cycles()
    }

    /// The properties.
    pub fn properties(&self) -> &Properties {
        self.instance.properties()
    }

    /// Defaults used when parsing proxy strings.
    pub fn parse_defaults(&self) -> ParseDefaults {
        self.instance.parse_defaults().clone()
    }

    /// The runtime handle that runs this communicator's connections.
    pub fn runtime_handle(&self) -> &tokio::runtime::Handle {
        self.instance.runtime_handle()
    }

    /// Runs a future to completion from synchronous code.
    ///
    /// Works outside any async runtime, on the threads of a multi-thread runtime (such as
    /// `#[tokio::main]`'s: the thread is handed over with `tokio::task::block_in_place` while
    /// it waits) and on that runtime's `spawn_blocking` threads. A current-thread runtime's
    /// threads, its `spawn_blocking` threads included (tokio does not tell them apart), get
    /// [`Error::BlockingInAsync`].
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
        self.instance.try_block_on(fut)
    }

    /// Parses a proxy string.
    pub fn string_to_proxy(&self, s: &str) -> Result<ObjectPrx> {
        let r = Reference::parse(s, self.instance.parse_defaults())?;
        Ok(ObjectPrx::new(self.instance.clone(), r))
    }

    /// The communicator's implicit context, sent with every request (merged under the
    /// per-proxy and per-call contexts).
    pub fn implicit_context(&self) -> Context {
        self.instance.implicit_context()
    }

    /// Sets an entry of the implicit context.
    pub fn set_implicit_context(&self, key: &str, value: &str) {
        self.instance.set_implicit_context(key, value);
    }

    /// Removes an entry of the implicit context.
    pub fn remove_implicit_context(&self, key: &str) {
        self.instance.remove_implicit_context(key);
    }

    /// Creates an object adapter named `name` listening on `<name>.Endpoints`.
    pub fn create_object_adapter(&self, name: &str) -> Result<ObjectAdapter> {
        let endpoints = self.instance.properties().get_or(&format!("{name}.Endpoints"), "");
        self.create_object_adapter_with_endpoints(name, &endpoints)
    }

    /// Creates an object adapter listening on `endpoints` (e.g. `tcp -h 127.0.0.1 -p 10000`).
    pub fn create_object_adapter_with_endpoints(&self, name: &str, endpoints: &str) -> Result<ObjectAdapter> {
        ObjectAdapter::create(&self.instance, name, endpoints)
    }

    /// The default locator (`Ice.Default.Locator`), if any.
    pub fn default_locator(&self) -> Option<ObjectPrx> {
        let r = self.instance.parse_defaults().locator.as_deref()?;
        Some(ObjectPrx::new(self.instance.clone(), r.clone()))
    }

    /// The default router (`Ice.Default.Router`), if any.
    pub fn default_router(&self) -> Option<ObjectPrx> {
        let r = self.instance.parse_defaults().router.as_deref()?;
        Some(ObjectPrx::new(self.instance.clone(), r.clone()))
    }

    /// Creates an object adapter routed through `router` (Ice's
    /// `createObjectAdapterWithRouter`): it listens on nothing; its proxies carry the router's
    /// server endpoints, and the requests that come back over the connection to the router
    /// (callbacks through a Glacier2 router) are dispatched to it.
    pub async fn create_object_adapter_with_router(&self, name: &str, router: &ObjectPrx) -> Result<ObjectAdapter> {
        if self.instance.is_destroyed() {
            return Err(Error::CommunicatorDestroyed);
        }
        let props = self.instance.properties();
        let config = connection_config(props, name, "Server", 2)?;
        let max_connections = props.get_int(&format!("{name}.MaxConnections"), 100_000)?.max(0) as usize;
        let a = ObjectAdapter::new(self.instance.clone(), name, "", config, max_connections)?;
        a.route_through(router).await?;
        self.instance.register_adapter(Arc::new(a.clone()))?;
        Ok(a)
    }

    /// Returns a connection to `endpoint`, reusing an open one.
    pub async fn connect(&self, endpoint: &EndpointData) -> Result<Connection> {
        self.instance.connect(endpoint).await
    }

    /// Asks the communicator to shut down: `wait_for_shutdown` returns.
    pub fn shutdown(&self) {
        self.instance.shutdown();
    }

    /// True once `shutdown` was called.
    pub fn is_shutdown(&self) -> bool {
        self.instance.is_shutdown()
    }

    /// Waits until `shutdown` is called, then deactivates every adapter (waiting for their
    /// dispatches to complete).
    pub async fn wait_for_shutdown(&self) {
        self.instance.wait_for_shutdown().await;
    }

    /// Shuts down, deactivates the adapters and closes every client connection gracefully.
    ///
    /// A communicator built with [`thread_hooks`](CommunicatorBuilder::thread_hooks) that
    /// runs its own runtime also stops that runtime and waits (up to ten seconds for blocking
    /// work still running) for its threads to end, so that every thread's stop hook has run
    /// when this returns, as with Ice's thread pools. Called on one of that runtime's own
    /// threads (from a servant of this communicator), it cannot wait for them: it returns
    /// and the task that called it ends at its next `await`, the runtime being shut down.
    pub async fn destroy(&self) {
        self.instance.destroy().await;
        crate::admin::destroyed(&self.instance);
        self.instance.stop_runtime().await;
    }

    /// The proxy of the `Ice.Admin` object (Ice's `getAdmin`), created now if it is enabled
    /// and `Ice.Admin.Endpoints` is set but it was not created yet (`Ice.Admin.DelayCreation`);
    /// `None` when it does not exist and cannot be created that way. Its identity is
    /// `<Ice.Admin.InstanceName>/admin`; its facets are the admin facets `Ice.Admin.Facets`
    /// lets through (all by default). See [`crate::admin`].
    pub async fn admin(&self) -> Result<Option<ObjectPrx>> {
        crate::admin::get_admin(&self.instance).await
    }

    /// Creates the `Ice.Admin` object as `identity` on `adapter` (which the caller activates),
    /// or on its own `Ice.Admin` adapter when `adapter` is `None` (Ice's `createAdmin`).
    /// Fails with [`Error::Initialization`] when it is disabled (`Ice.Admin.Enabled`),
    /// already created, or `adapter` is `None` and `Ice.Admin.Endpoints` is not set.
    pub async fn create_admin(&self, adapter: Option<&ObjectAdapter>, identity: Identity) -> Result<ObjectPrx> {
        crate::admin::create_admin(&self.instance, adapter, identity).await
    }

    /// Adds an admin facet (Ice's `addAdminFacet`), served at once when the admin object
    /// exists and `Ice.Admin.Facets` lets it through. [`Error::AlreadyRegistered`] if a
    /// facet of that name exists.
    pub fn add_admin_facet(&self, servant: Arc<dyn Dispatcher>, facet: &str) -> Result<()> {
        crate::admin::add_facet(&self.instance, servant, facet)
    }

    /// Removes an admin facet and returns it (Ice's `removeAdminFacet`);
    /// [`Error::NotRegistered`] if there is none of that name.
    pub fn remove_admin_facet(&self, facet: &str) -> Result<Arc<dyn Dispatcher>> {
        crate::admin::remove_facet(&self.instance, facet)
    }

    /// The admin facet named `facet`, if any (Ice's `findAdminFacet`), whether or not
    /// `Ice.Admin.Facets` lets it be served.
    pub fn find_admin_facet(&self, facet: &str) -> Option<Arc<dyn Dispatcher>> {
        crate::admin::find_facet(&self.instance, facet)
    }

    /// Every admin facet by name (Ice's `findAllAdminFacets`).
    pub fn find_all_admin_facets(&self) -> BTreeMap<String, Arc<dyn Dispatcher>> {
        crate::admin::all_facets(&self.instance)
    }

    /// The program's handle on the `Properties` admin facet, to register property-update
    /// callbacks (Ice's `NativePropertiesAdmin`); `None` when the communicator has no such
    /// facet (admin disabled, or filtered out by `Ice.Admin.Facets`).
    pub fn properties_admin(&self) -> Option<PropertiesAdminHandle> {
        crate::admin::properties_admin(&self.instance)
    }

    /// The communicator's logger (Ice's `getLogger`): its messages feed the `Logger` admin
    /// facet when there is one.
    pub fn logger(&self) -> Logger {
        crate::admin::logger(&self.instance)
    }

    /// `destroy` from synchronous code.
    pub fn destroy_blocking(&self) {
        self.block_on(self.destroy());
    }
}

/// Builds a [`Communicator`] (Ice's `InitializationData`): properties, a log sink and
/// thread hooks.
///
/// ```no_run
/// use std::sync::atomic::{AtomicUsize, Ordering};
/// use std::sync::Arc;
///
/// let started = Arc::new(AtomicUsize::new(0));
/// let stopped = Arc::new(AtomicUsize::new(0));
/// let (s, t) = (started.clone(), stopped.clone());
/// let communicator = floe::Communicator::builder()
///     .properties(floe::Properties::new())
///     .thread_hooks(
///         move || {
///             s.fetch_add(1, Ordering::SeqCst);
///         },
///         move || {
///             t.fetch_add(1, Ordering::SeqCst);
///         },
///     )
///     .build()?;
/// communicator.destroy_blocking();
/// assert_eq!(started.load(Ordering::SeqCst), stopped.load(Ordering::SeqCst));
/// # Ok::<(), floe::Error>(())
/// ```
#[derive(Default)]
pub struct CommunicatorBuilder {
    properties: Properties,
    sink: Option<Arc<dyn LogSink>>,
    hooks: Option<ThreadHooks>,
    known: Vec<String>,
}

impl std::fmt::Debug for CommunicatorBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CommunicatorBuilder").finish_non_exhaustive()
    }
}

impl CommunicatorBuilder {
    /// The properties (default: none set).
    pub fn properties(mut self, properties: Properties) -> Self {
        self.properties = properties;
        self
    }

    /// The sink the communicator's [`Logger`] writes to (Ice's `InitializationData.logger`),
    /// rather than `tracing`.
    pub fn logger(mut self, sink: Arc<dyn LogSink>) -> Self {
        self.sink = Some(sink);
        self
    }

    /// Property names the program reads itself under the prefixes that floe checks (`Ice.`,
    /// `IceGrid.`, `Floe.`…, see [`Properties::unknown`]), so that the communicator does not
    /// warn about them: patterns where `*` stands for one or more characters.
    pub fn known_properties(mut self, names: &[&str]) -> Self {
        self.known.extend(names.iter().map(|n| n.to_string()));
        self
    }

    /// Thread hooks (Ice's `InitializationData` thread notification): `start` runs first
    /// thing on every thread the communicator's own runtime starts, `stop` last thing on it.
    /// Those threads are the runtime's workers (or the one thread of a one-thread runtime)
    /// and the threads of its blocking pool (`tokio::task::spawn_blocking`), started on
    /// demand. [`Communicator::destroy`] then stops the runtime and waits for its threads, so
    /// that each start has had its stop when it returns.
    ///
    /// A communicator made inside a tokio runtime uses that runtime and has no threads of its
    /// own: its hooks never run.
    pub fn thread_hooks(
        mut self,
        start: impl Fn() + Send + Sync + 'static,
        stop: impl Fn() + Send + Sync + 'static,
    ) -> Self {
        self.hooks = Some(ThreadHooks { start: Arc::new(start), stop: Arc::new(stop) });
        self
    }

    /// The communicator, as [`Communicator::with_properties`] makes it.
    pub fn build(self) -> Result<Communicator> {
        Communicator::make_with(self.properties, self.sink, self.hooks, &self.known)
    }
}

impl ObjectPrx {
    /// A proxy for a reference.
    pub fn from_reference(communicator: Communicator, reference: Reference) -> Self {
        ObjectPrx::new(communicator.instance, reference)
    }

    /// A proxy read from the wire (`None` for the null proxy). Proxies received on a
    /// connection without endpoints use that connection (bidirectional callbacks).
    pub fn from_proxy_data(communicator: Communicator, data: Option<ProxyData>) -> Option<Self> {
        data.map(|d| {
            let r = Reference::from_wire(d, communicator.instance.parse_defaults());
            ObjectPrx::new(communicator.instance, r)
        })
    }

    /// Reads a proxy (or the null proxy) from a decoder.
    pub fn decode(communicator: &Communicator, dec: &mut Decoder) -> crate::encoding::Result<Option<Self>> {
        Ok(Self::from_proxy_data(communicator.clone(), ProxyData::decode_nullable(dec)?))
    }

    /// The communicator that made the proxy.
    pub fn communicator(&self) -> Communicator {
        Communicator::from_instance(self.instance().clone())
    }
}

impl ObjectAdapter {
    /// The communicator that created the adapter.
    pub fn communicator(&self) -> Communicator {
        Communicator::from_instance(self.instance().clone())
    }
}
