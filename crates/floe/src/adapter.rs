//! Object adapters: a servant map (identity and facet), default servants per category,
//! servant locators, the endpoints it listens on, and dispatch of incoming requests.
//!
//! An adapter is the [`RequestHandler`] of the connections it accepts (and of those a client
//! lends it with `Connection::set_adapter`): bound to a connection, it keeps what every request
//! of that connection shares (its [`Origin`]) and the servant a batch's previous request went
//! to. Its [`HoldGate`] is what `hold` closes. It also gives requests back their adapter
//! (`Current::adapter`), an accessor that points up the layers and so lives here.

mod observe;

use std::collections::HashMap;

use rustc_hash::FxHashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

use compact_str::CompactString;
use std::sync::{Arc, Mutex, RwLock};

use tokio::sync::Notify;
use tracing::{debug, warn};

use crate::connection::{BoundHandler, Connection, ConnectionConfig, HoldGate, RequestHandler};
use crate::dispatch::{Current, DispatchFuture, Dispatcher, IncomingRequest, Origin, ServantLocator};
use crate::encoding::{EndpointData, Identity, IpEndpointData};
use crate::error::{Error, Result};
use crate::instance::{Instance, ManagedAdapter, RuntimeLease};
use crate::protocol::request::same_bytes;
use crate::protocol::OperationMode;
use crate::proxy::ObjectPrx;
use crate::reference::{parse_endpoint, Reference};
use crate::transport::{accept_layers, tcp, Layers};

/// A socket an adapter bound at creation.
enum Listener {
    /// A stream endpoint: TCP, with the layers above it (TLS, WebSocket) for ssl, ws and wss.
    Tcp(tokio::net::TcpListener, Layers),
    Udp(tokio::net::UdpSocket),
}

/// Binds the adapter's endpoints, as Ice does when it creates an adapter: proxies made
/// before activation then carry the ports actually bound. Returns the endpoints as proxies
/// show them (a wildcard host shown as 127.0.0.1) and the bound sockets.
fn bind_endpoints(
    instance: &Instance,
    name: &str,
    configured: &[EndpointData],
) -> Result<(Vec<EndpointData>, Vec<Listener>)> {
    // tokio's sockets register with the runtime's reactor as they are made.
    let _runtime = instance.runtime_handle().enter();
    let shown = |host: &str| {
        if host.is_empty() || host == "*" || host == "0.0.0.0" {
            "127.0.0.1".to_string()
        } else {
            host.to_string()
        }
    };
    let mut bound = Vec::new();
    let mut listeners = Vec::new();
    for ep in configured {
        match ep {
            EndpointData::Udp { host, port, compress } => {
                let port = u16::try_from(*port).map_err(|_| Error::Adapter(format!("{name}: bad port {port}")))?;
                let socket = crate::transport::udp::bind(host, port)?;
                let local = socket.local_addr().map_err(|e| Error::Adapter(e.to_string()))?;
                bound.push(EndpointData::Udp { host: shown(host), port: local.port() as i32, compress: *compress });
                debug!(target: "floe::network", "{name} bound udp {local}");
                listeners.push(Listener::Udp(socket));
            }
            EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _) => {
                let layers = instance.layers(ep)?.unwrap_or(Layers::Tcp);
                if let Layers::Ssl(ctx) | Layers::Wss(ctx, _) = &layers {
                    // An ssl server needs its certificate: say so now rather than to each client.
                    ctx.check_server()?;
                }
                let port =
                    u16::try_from(ip.port).map_err(|_| Error::Adapter(format!("{name}: bad port {}", ip.port)))?;
                let listener = tcp::bind(&ip.host, port, instance.tcp_buffers(), instance.tcp_backlog())?;
                let local = listener.local_addr().map_err(|e| Error::Adapter(e.to_string()))?;
                let bound_ip = IpEndpointData { host: shown(&ip.host), port: local.port() as i32, ..ip.clone() };
                bound.push(match ep {
                    EndpointData::Ssl(_) => EndpointData::Ssl(bound_ip),
                    EndpointData::Ws(_, r) => EndpointData::Ws(bound_ip, r.clone()),
                    EndpointData::Wss(_, r) => EndpointData::Wss(bound_ip, r.clone()),
                    _ => EndpointData::Tcp(bound_ip),
                });
                debug!(target: "floe::network", "{name} listening on {local}");
                listeners.push(Listener::Tcp(listener, layers));
            }
            other => {
                return Err(Error::Adapter(format!(
                    "{name}: endpoint type {} is not supported yet",
                    other.type_number()
                )))
            }
        }
    }
    Ok((bound, listeners))
}

/// Servant maps hash with FxHash: their keys are chosen by the server, so requests cannot
/// degrade them, and the lookup is on every request's path.
type FacetMap = FxHashMap<String, Arc<dyn Dispatcher>>;

struct AdapterInner {
    name: String,
    instance: Instance,
    servants: RwLock<FxHashMap<Identity, FacetMap>>,
    default_servants: RwLock<FxHashMap<String, Arc<dyn Dispatcher>>>,
    locators: RwLock<HashMap<String, Arc<dyn ServantLocator>>>,
    endpoints: RwLock<Vec<EndpointData>>,
    configured_endpoints: Vec<EndpointData>,
    /// The endpoints its proxies carry when they are not those it listens on: a routed
    /// adapter's are its router's server endpoints.
    published_endpoints: RwLock<Option<Vec<EndpointData>>>,
    /// The router it is routed through (the router proxy's string), if any.
    router: Mutex<Option<String>>,
    /// Sockets bound at creation, waiting for activation to accept on them.
    listeners: Mutex<Vec<Listener>>,
    /// Shared by every connection the adapter accepts.
    config: Arc<ConnectionConfig>,
    max_connections: usize,
    /// `<Adapter>.AdapterId` ("" for none).
    adapter_id: String,
    /// `<Adapter>.ReplicaGroupId` ("" for none).
    replica_group_id: String,
    /// The locator it registers its endpoints with (`<Adapter>.Locator`, `Ice.Default.Locator`).
    locator: RwLock<Option<ObjectPrx>>,
    connection_count: Arc<AtomicUsize>,
    /// The open incoming connections, by a number given at accept: added and removed in
    /// constant time (a connection removes itself as it closes).
    live: Mutex<FxHashMap<u64, Connection>>,
    next_connection: AtomicU64,
    accept_tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
    activated: AtomicBool,
    /// Closed by `hold`: the adapter's connections stop reading, and it stops accepting.
    gate: HoldGate,
    /// No new connection is taken any more (shutdown or deactivation).
    stopped: AtomicBool,
    deactivated: AtomicBool,
    /// The deactivation finished: its connections are closed.
    deactivation_done: AtomicBool,
    deactivated_notify: Notify,
    /// Bumped whenever a servant or default servant is added or removed, so that the servant
    /// a batch's previous request went to (a [`ServantCache`]) is looked up again.
    servants_version: AtomicU64,
}

/// The servant the previous request went to (of a connection, or of a batch), with the
/// servant-map version it was found in: the next request for the same identity and facet goes
/// to it without a lookup while no servant was added or removed. Besides the lookup, this
/// spares each request the servant map's lock and a reference count taken on the servant, both
/// shared by every thread that dispatches (where connections are served by several threads,
/// those shared cache lines would move between CPUs on every request). A servant removed from
/// the adapter is released by the cache at the connection's next request, or when it closes.
#[derive(Default)]
pub(crate) struct ServantCache {
    /// The previous request's target and servant, if it had one.
    entry: Option<(u64, Identity, CompactString, Arc<dyn Dispatcher>)>,
    /// Set by the caller when the next request's target is, as its bytes say, the previous
    /// request's: the cached target is then not compared with it.
    pub(crate) repeats: bool,
}

/// An object adapter. Cheap to clone; all clones are the same adapter.
#[derive(Clone)]
pub struct ObjectAdapter {
    inner: Arc<AdapterInner>,
}

impl std::fmt::Debug for ObjectAdapter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectAdapter").field("name", &self.inner.name).finish()
    }
}

impl ObjectAdapter {
    /// Creates an adapter named `name` listening on `endpoints`, configured by the
    /// `<name>.*` properties, and registers it with the instance (which deactivates it on
    /// shutdown).
    pub(crate) fn create(instance: &Instance, name: &str, endpoints: &str) -> Result<ObjectAdapter> {
        if instance.is_destroyed() {
            return Err(Error::CommunicatorDestroyed);
        }
        let props = instance.properties();
        let config = crate::instance::connection_config(props, name, "Server", 2)?;
        // A safe default that still allows the 100,000 connections floe is built to hold.
        let max_connections = props.get_int(&format!("{name}.MaxConnections"), 100_000)?.max(0) as usize;
        let a = ObjectAdapter::new(instance.clone(), name, endpoints, config, max_connections)?;
        instance.register_adapter(Arc::new(a.clone()))?;
        Ok(a)
    }

    pub(crate) fn new(
        instance: Instance,
        name: &str,
        endpoints: &str,
        config: ConnectionConfig,
        max_connections: usize,
    ) -> Result<Self> {
        let defaults = instance.parse_defaults().clone();
        let adapter_id = instance.properties().get_or(&format!("{name}.AdapterId"), "");
        let replica_group_id = instance.properties().get_or(&format!("{name}.ReplicaGroupId"), "");
        let locator = {
            let props = instance.properties();
            let s = props.get(&format!("{name}.Locator")).or_else(|| props.get("Ice.Default.Locator"));
            match s.filter(|s| !s.trim().is_empty()) {
                Some(s) => Some(ObjectPrx::new(instance.clone(), Reference::parse(&s, &defaults)?)),
                None => None,
            }
        };
        let mut configured = Vec::new();
        if !endpoints.trim().is_empty() {
            let list = crate::reference::split_endpoints(endpoints)
                .map_err(|reason| Error::Adapter(format!("{name}: invalid endpoints {endpoints:?}: {reason}")))?;
            for ep in list.into_iter().map(str::trim).filter(|e| !e.is_empty()) {
                let ep = parse_endpoint(ep, &defaults)
                    .map_err(|reason| Error::Adapter(format!("{name}: invalid endpoint {ep:?}: {reason}")))?;
                configured.push(ep);
            }
        }
        let (bound, listeners) = bind_endpoints(&instance, name, &configured)?;
        Ok(ObjectAdapter {
            inner: Arc::new(AdapterInner {
                name: name.to_string(),
                instance,
                servants: RwLock::new(FxHashMap::default()),
                default_servants: RwLock::new(FxHashMap::default()),
                locators: RwLock::new(HashMap::new()),
                endpoints: RwLock::new(bound),
                configured_endpoints: configured,
                published_endpoints: RwLock::new(None),
                router: Mutex::new(None),
                listeners: Mutex::new(listeners),
                config: Arc::new(config),
                max_connections,
                adapter_id,
                replica_group_id,
                locator: RwLock::new(locator),
                connection_count: Arc::new(AtomicUsize::new(0)),
                live: Mutex::new(FxHashMap::default()),
                next_connection: AtomicU64::new(0),
                accept_tasks: Mutex::new(Vec::new()),
                activated: AtomicBool::new(false),
                gate: HoldGate::new(),
                stopped: AtomicBool::new(false),
                deactivated: AtomicBool::new(false),
                deactivation_done: AtomicBool::new(false),
                deactivated_notify: Notify::new(),
                servants_version: AtomicU64::new(0),
            }),
        })
    }

    /// The adapter's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The instance of the communicator that created it.
    pub(crate) fn instance(&self) -> &Instance {
        &self.inner.instance
    }

    /// Registers a servant for an identity (default facet). Replaces any previous one.
    pub fn add(&self, servant: Arc<dyn Dispatcher>, identity: Identity) -> ObjectPrx {
        self.add_facet(servant, identity.clone(), "");
        self.create_proxy(identity)
    }

    /// Adds a servant under a fresh identity whose name is a random UUID (Ice's
    /// `addWithUUID`), and returns a proxy for it.
    pub fn add_with_uuid(&self, servant: Arc<dyn Dispatcher>) -> ObjectPrx {
        self.add(servant, Identity::new(uuid::Uuid::new_v4().to_string()))
    }

    /// Registers a servant for an identity and facet.
    pub fn add_facet(&self, servant: Arc<dyn Dispatcher>, identity: Identity, facet: &str) {
        let mut map = self.inner.servants.write().expect("servants");
        map.entry(identity).or_default().insert(facet.to_string(), servant);
        self.inner.servants_version.fetch_add(1, Ordering::Release);
    }

    /// Removes the servant of an identity's default facet; returns it.
    pub fn remove(&self, identity: &Identity) -> Option<Arc<dyn Dispatcher>> {
        self.remove_facet(identity, "")
    }

    /// Removes the servant of an identity and facet; returns it.
    pub fn remove_facet(&self, identity: &Identity, facet: &str) -> Option<Arc<dyn Dispatcher>> {
        let mut map = self.inner.servants.write().expect("servants");
        let facets = map.get_mut(identity)?;
        let s = facets.remove(facet);
        if facets.is_empty() {
            map.remove(identity);
        }
        self.inner.servants_version.fetch_add(1, Ordering::Release);
        s
    }

    /// Registers a default servant: it receives requests for any identity of `category`
    /// ("" for every category) that has no servant of its own.
    pub fn add_default_servant(&self, servant: Arc<dyn Dispatcher>, category: &str) {
        let mut map = self.inner.default_servants.write().expect("default servants");
        map.insert(category.to_string(), servant);
        self.inner.servants_version.fetch_add(1, Ordering::Release);
    }

    /// Removes the default servant of `category` (Ice's `removeDefaultServant`); returns it.
    pub fn remove_default_servant(&self, category: &str) -> Option<Arc<dyn Dispatcher>> {
        let removed = self.inner.default_servants.write().expect("default servants").remove(category);
        self.inner.servants_version.fetch_add(1, Ordering::Release);
        removed
    }

    /// Registers a servant locator for `category` ("" for every category).
    pub fn add_servant_locator(&self, locator: Arc<dyn ServantLocator>, category: &str) {
        self.inner.locators.write().expect("locators").insert(category.to_string(), locator);
    }

    /// Removes the servant locator of `category` (Ice's `removeServantLocator`; the caller
    /// deactivates it if it wants to).
    pub fn remove_servant_locator(&self, category: &str) -> Option<Arc<dyn ServantLocator>> {
        self.inner.locators.write().expect("locators").remove(category)
    }

    /// True when a servant is registered for the identity (under any facet).
    pub fn has_servant(&self, identity: &Identity) -> bool {
        self.inner.servants.read().expect("servants").contains_key(identity)
    }

    fn find(&self, request: &IncomingRequest) -> Option<Arc<dyn Dispatcher>> {
        let c = &request.current;
        if let Some(s) = self.inner.servants.read().expect("servants").get(&c.id).and_then(|f| f.get(c.facet.as_str()))
        {
            return Some(s.clone());
        }
        {
            let defaults = self.inner.default_servants.read().expect("default servants");
            if let Some(s) = defaults.get(c.id.category.as_str()).or_else(|| defaults.get("")) {
                return Some(s.clone());
            }
        }
        None
    }

    fn locator_for(&self, category: &str) -> Option<Arc<dyn ServantLocator>> {
        let locators = self.inner.locators.read().expect("locators");
        locators.get(category).or_else(|| locators.get("")).cloned()
    }

    /// Dispatches a request to its servant (a registered one, a default servant, or one a
    /// servant locator finds), or answers ObjectNotExist / FacetNotExist.
    pub fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        match self.find(&request) {
            Some(servant) => servant.dispatch(request),
            None => self.dispatch_without_servant(request),
        }
    }

    /// [`dispatch`](Self::dispatch) for the requests of a connection (`batched` for those of
    /// a batch): a request for the same identity and facet as the previous one goes to the same
    /// servant without a lookup, as long as no servant was added or removed in between.
    #[inline]
    pub(crate) fn dispatch_cached(
        &self,
        origin: &Arc<Origin>,
        request: crate::protocol::Request,
        cache: &mut ServantCache,
        batched: bool,
    ) -> DispatchFuture {
        // Read before the lookup: a change after it makes the next request look up again.
        let version = self.inner.servants_version.load(Ordering::Acquire);
        if let Some((cached_version, id, facet, servant)) = &cache.entry {
            if *cached_version == version
                && (cache.repeats
                    || (same_bytes(id.name.as_bytes(), request.identity.name.as_bytes())
                        && same_bytes(id.category.as_bytes(), request.identity.category.as_bytes())
                        && same_bytes(facet.as_bytes(), request.facet.as_bytes())))
            {
                let mut request = IncomingRequest::from_request(origin.clone(), request);
                if batched {
                    request.current.mark_batched();
                }
                return servant.dispatch(request);
            }
        }
        let mut request = IncomingRequest::from_request(origin.clone(), request);
        if batched {
            request.current.mark_batched();
        }
        match self.find(&request) {
            Some(servant) => {
                let c = &request.current;
                cache.entry = Some((version, c.id.clone(), c.facet.clone(), servant.clone()));
                servant.dispatch(request)
            }
            None => {
                cache.entry = None;
                self.dispatch_without_servant(request)
            }
        }
    }

    /// Dispatches a request that has no registered or default servant: to a servant locator,
    /// or answers ObjectNotExist / FacetNotExist.
    fn dispatch_without_servant(&self, request: IncomingRequest) -> DispatchFuture {
        let not_found = |c: &crate::dispatch::Current| {
            if self.has_servant(&c.id) {
                c.facet_not_exist()
            } else {
                c.object_not_exist()
            }
        };
        let Some(locator) = self.locator_for(&request.current.id.category) else {
            let r = not_found(&request.current);
            return Box::pin(async move { r });
        };
        match locator.try_locate(&request.current) {
            Ok(None) => {
                let r = not_found(&request.current);
                Box::pin(async move { r })
            }
            Err(e) => {
                let r = request.current.servant_error(&e, request.current.default_format());
                Box::pin(async move { r })
            }
            Ok(Some((servant, cookie))) => {
                let current = request.current.clone();
                let dispatched = servant.dispatch(request);
                Box::pin(async move {
                    let response = dispatched.await;
                    match locator.finished(&current, cookie) {
                        Ok(()) => response,
                        Err(e) => current.servant_error(&e, current.default_format()),
                    }
                })
            }
        }
    }

    /// What the requests arriving through `connection` (or datagrams, for `None`) share.
    fn origin(&self, connection: Option<&Connection>) -> Origin {
        Origin {
            connection: connection.cloned(),
            instance: Some(self.inner.instance.clone()),
            adapter: Some(Box::new(self.clone())),
        }
    }

    /// A proxy for `identity`, as Ice makes it: indirect (`identity @ replica group or adapter
    /// id`) when the adapter has an `AdapterId`, else direct.
    pub fn create_proxy(&self, identity: Identity) -> ObjectPrx {
        if self.inner.adapter_id.is_empty() {
            return self.create_direct_proxy(identity);
        }
        let id =
            if self.inner.replica_group_id.is_empty() { &self.inner.adapter_id } else { &self.inner.replica_group_id };
        self.indirect_proxy(identity, id)
    }

    /// An indirect proxy `identity @ AdapterId` (a well-known one without an adapter id).
    pub fn create_indirect_proxy(&self, identity: Identity) -> ObjectPrx {
        let id = self.inner.adapter_id.clone();
        self.indirect_proxy(identity, &id)
    }

    fn indirect_proxy(&self, identity: Identity, adapter_id: &str) -> ObjectPrx {
        let mut r = self.new_reference(identity);
        r.wire.adapter_id = adapter_id.to_string();
        ObjectPrx::new(self.inner.instance.clone(), r)
    }

    /// A reference for one of its objects, with the communicator's defaults and the
    /// adapter's locator.
    fn new_reference(&self, identity: Identity) -> Reference {
        let mut r = Reference::new(identity);
        let defaults = self.inner.instance.parse_defaults();
        r.wire.encoding = defaults.encoding;
        r.apply_local_defaults(defaults);
        r.locator = self.inner.locator.read().expect("locator").as_ref().map(|l| Box::new(l.reference().clone()));
        r
    }

    /// The adapter id (`<Adapter>.AdapterId`, "" for none).
    pub fn adapter_id(&self) -> &str {
        &self.inner.adapter_id
    }

    /// Routes the adapter through `router` (Ice's `createObjectAdapterWithRouter`): its
    /// proxies carry the router's server endpoints (`getServerProxy`), and it serves the
    /// requests that come back over the connection to the router's client endpoints, which
    /// is opened now so that callbacks can arrive before any call is made.
    pub(crate) async fn route_through(&self, router: &ObjectPrx) -> Result<()> {
        let router = &router.ice_router(None);
        let outcome = router
            .invoke("getServerProxy", OperationMode::Idempotent, None, |_| {})
            .await?
            .ok_or_else(|| Error::TwowayOnly("getServerProxy".into()))?;
        let instance = self.inner.instance.clone();
        let server = outcome.decode(|d| ObjectPrx::decode_for(&instance, d))?;
        let endpoints = server.map(|p| p.reference().wire.endpoints.clone()).unwrap_or_default();
        if endpoints.is_empty() {
            return Err(Error::Adapter(format!("{}: the router has no server endpoints", self.inner.name)));
        }
        *self.inner.published_endpoints.write().expect("published endpoints") = Some(endpoints);
        let key = router.reference().to_string();
        self.inner.instance.set_routed_handler(&key, Some(self.request_handler()));
        *self.inner.router.lock().expect("router") = Some(key);
        let connection = router.connect_to_router_clients().await?;
        connection.set_handler(Some(self.request_handler()));
        Ok(())
    }

    /// The locator whose registry the adapter registers its endpoints with, if any.
    pub fn locator(&self) -> Option<ObjectPrx> {
        self.inner.locator.read().expect("locator").clone()
    }

    /// Sets the locator whose registry the adapter registers its endpoints with on activation.
    pub fn set_locator(&self, locator: Option<ObjectPrx>) {
        *self.inner.locator.write().expect("locator") = locator;
    }

    /// A proxy for `identity` with this adapter's endpoints.
    pub fn create_direct_proxy(&self, identity: Identity) -> ObjectPrx {
        let mut r = self.new_reference(identity);
        r.wire.endpoints = self.endpoints();
        ObjectPrx::new(self.inner.instance.clone(), r)
    }

    /// The endpoints its proxies carry: those it listens on (with the ports actually bound
    /// once activated), or its router's server endpoints when it is routed.
    pub fn endpoints(&self) -> Vec<EndpointData> {
        if let Some(published) = self.inner.published_endpoints.read().expect("published endpoints").as_ref() {
            return published.clone();
        }
        let eps = self.inner.endpoints.read().expect("endpoints");
        if eps.is_empty() {
            self.inner.configured_endpoints.clone()
        } else {
            eps.clone()
        }
    }

    /// Starts accepting connections (and datagrams) on the endpoints bound at creation; on a
    /// held adapter, resumes accepting, reading and dispatching.
    pub async fn activate(&self) -> Result<()> {
        self.inner.gate.release();
        if self.inner.activated.swap(true, Ordering::AcqRel) {
            return Ok(());
        }
        let listeners: Vec<Listener> = self.inner.listeners.lock().expect("listeners").drain(..).collect();
        for listener in listeners {
            let me = self.clone();
            let task = match listener {
                Listener::Tcp(l, layers) => tokio::spawn(async move { me.accept_loop(l, layers).await }),
                Listener::Udp(socket) => tokio::spawn(async move { me.datagram_loop(socket).await }),
            };
            // A deactivation that ran meanwhile (say, the communicator destroyed while its
            // admin adapter was being activated) has already stopped accepting: this loop
            // must not outlive it.
            let mut tasks = self.inner.accept_tasks.lock().expect("accept tasks");
            if self.inner.stopped.load(Ordering::Acquire) {
                task.abort();
            }
            tasks.push(task);
        }
        self.register_with_locator(true).await?;
        if self.inner.instance.properties().get_int("Ice.PrintAdapterReady", 0).unwrap_or(0) > 0 {
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{} ready", self.inner.name);
            let _ = out.flush();
        }
        Ok(())
    }

    /// Tells the locator's registry where the adapter listens (or, with `active` false, that it
    /// stopped): `setAdapterDirectProxy`, or `setReplicatedAdapterDirectProxy` with a replica
    /// group. Nothing to do without a locator or an adapter id.
    async fn register_with_locator(&self, active: bool) -> Result<()> {
        let locator = self.inner.locator.read().expect("locator").clone();
        let (Some(locator), false) = (locator, self.inner.adapter_id.is_empty()) else { return Ok(()) };
        let outcome = locator.invoke("getRegistry", OperationMode::Idempotent, None, |_| {}).await?;
        let instance = self.inner.instance.clone();
        let registry = match outcome {
            Some(o) => o.decode(|d| ObjectPrx::decode_for(&instance, d))?,
            None => None,
        };
        let Some(registry) = registry else { return Ok(()) };
        let direct = active.then(|| self.create_direct_proxy(Identity::new("dummy")));
        let (id, group) = (self.inner.adapter_id.clone(), self.inner.replica_group_id.clone());
        let outcome = if group.is_empty() {
            registry
                .invoke("setAdapterDirectProxy", OperationMode::Idempotent, None, |e| {
                    e.write_str(&id);
                    ObjectPrx::encode_nullable(direct.as_ref(), e);
                })
                .await?
        } else {
            registry
                .invoke("setReplicatedAdapterDirectProxy", OperationMode::Idempotent, None, |e| {
                    e.write_str(&id);
                    e.write_str(&group);
                    ObjectPrx::encode_nullable(direct.as_ref(), e);
                })
                .await?
        };
        match outcome {
            Some(o) => o
                .decode(|_| Ok(()))
                .map_err(|e| Error::Adapter(format!("{}: the locator registry refused it: {e}", self.inner.name))),
            None => Ok(()),
        }
    }

    /// Holds the adapter, as Ice's `hold()` does: it stops accepting connections and its
    /// connections stop reading (so requests are neither read nor dispatched, and peers' sends
    /// eventually block) until [`activate`](Self::activate) is called again. Dispatches in
    /// progress finish.
    pub fn hold(&self) {
        self.inner.gate.hold();
    }

    /// True while the adapter is held.
    pub fn is_held(&self) -> bool {
        self.inner.gate.is_held()
    }

    /// Waits until the adapter is not held (returns at once when it is not, or once it is
    /// deactivated).
    async fn wait_until_not_held(&self) {
        self.inner.gate.until_released().await;
    }

    /// The handler of incoming requests this adapter is, for `Connection::set_handler`.
    pub fn request_handler(&self) -> Arc<dyn RequestHandler> {
        self.inner.clone()
    }

    /// Receives datagrams on a `udp` endpoint and dispatches the oneway requests they carry.
    async fn datagram_loop(self, socket: tokio::net::UdpSocket) {
        let frames = crate::protocol::FrameReader::new(self.inner.config.max_message_size);
        let mut buf = vec![0u8; crate::transport::udp::MAX_DATAGRAM];
        // Dropped with the loop, which ends with the adapter's task.
        let origin = Arc::new(self.origin(None));
        loop {
            self.wait_until_not_held().await;
            let received = match crate::transport::udp::receive(&socket, &frames, &mut buf).await {
                Ok(Some(r)) => r,
                Ok(None) => continue,
                Err(e) => {
                    warn!(target: "floe::network", "{}: udp receive failed: {e}", self.inner.name);
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            for mut request in received.1 {
                request.request_id = 0;
                let incoming = IncomingRequest::from_request(origin.clone(), request);
                // One datagram at a time, as Ice does: a flood of datagrams waits in (and
                // overflows) the socket's buffer instead of piling up tasks here. Nothing is
                // answered; a panicking servant only loses its own request.
                let _ = futures_util::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(async {
                    self.dispatch(incoming).await
                }))
                .await;
            }
        }
    }

    async fn accept_loop(self, listener: tokio::net::TcpListener, layers: Layers) {
        loop {
            self.wait_until_not_held().await;
            let (stream, addr) = match tcp::accept_stream(&listener).await {
                // A connection accepted as the adapter stops is not served.
                Ok(_) if self.inner.stopped.load(Ordering::Acquire) => return,
                Ok(s) => s,
                Err(e) => {
                    // Out of file descriptors and similar: back off instead of spinning.
                    warn!(target: "floe::network", "{}: accept failed: {e}", self.inner.name);
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            };
            let count = self.inner.connection_count.clone();
            let count_on_failure = count.clone();
            if self.inner.max_connections > 0 && count.load(Ordering::Acquire) >= self.inner.max_connections {
                warn!(target: "floe::network", "{}: refusing connection from {addr}: limit of {} reached", self.inner.name, self.inner.max_connections);
                drop(stream);
                continue;
            }
            count.fetch_add(1, Ordering::AcqRel);
            let me = self.clone();
            let layers = layers.clone();
            // The task ends once the connection is established: an open connection costs no
            // task here (it leaves the count and the live connections as it closes).
            let serve = move |stream: tokio::net::TcpStream, lease: Option<RuntimeLease>| async move {
                // A connection accepted while the adapter is held is validated only once it
                // is activated again (its peer sees a connect timeout meanwhile), as with Ice.
                me.wait_until_not_held().await;
                // The TLS handshake and the WebSocket upgrade happen here, in the
                // connection's own task, bounded in time: a silent or hostile peer holds
                // nothing but its own connection, and not for long.
                let stream = match tokio::time::timeout(me.inner.config.accept_timeout, accept_layers(stream, &layers))
                    .await
                {
                    Ok(Ok(s)) => s,
                    Ok(Err(e)) => {
                        match &e {
                            Error::Security(_) => {
                                warn!(target: "floe::network", "{}: connection from {addr} refused: {e}", me.inner.name)
                            }
                            _ => {
                                debug!(target: "floe::network", "{}: connection from {addr} failed: {e}", me.inner.name)
                            }
                        }
                        count.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                    Err(_) => {
                        debug!(target: "floe::network", "{}: handshake with {addr} timed out", me.inner.name);
                        count.fetch_sub(1, Ordering::AcqRel);
                        return;
                    }
                };
                let admit = |conn: &Connection| me.track(conn, lease);
                let config = me.inner.config.clone();
                if let Err(e) = Connection::establish_incoming(stream, config, me.request_handler(), admit).await {
                    debug!(target: "floe::network", "connection from {addr} failed: {e}");
                    count.fetch_sub(1, Ordering::AcqRel);
                }
            };
            // Served on a connection runtime of its own when the communicator has them
            // (Floe.Runtime.ConnectionThreads): the socket moves to that runtime's reactor.
            match self.inner.instance.connection_runtime() {
                Some(lease) if lease.handle().is_some() => match stream.into_std() {
                    Ok(socket) => {
                        let handle = lease.handle().cloned().expect("a connection runtime");
                        handle.spawn(async move {
                            match tokio::net::TcpStream::from_std(socket) {
                                Ok(stream) => serve(stream, Some(lease)).await,
                                Err(e) => {
                                    debug!(target: "floe::network", "connection from {addr} failed: {e}");
                                    count_on_failure.fetch_sub(1, Ordering::AcqRel);
                                }
                            }
                        });
                    }
                    Err(e) => {
                        debug!(target: "floe::network", "connection from {addr} failed: {e}");
                        self.inner.connection_count.fetch_sub(1, Ordering::AcqRel);
                    }
                },
                here => {
                    tokio::spawn(serve(stream, here));
                }
            }
        }
    }

    /// Adds a newly accepted connection to the adapter's live connections; false (and not
    /// added) once the adapter has stopped. Checked under the same lock that
    /// [`stop_accepting`](Self::stop_accepting) takes, so a connection is either stopped and
    /// closed by the deactivation or refused here, never missed.
    ///
    /// Either way, the connection leaves the connection count (and the live connections) as it
    /// closes.
    pub(crate) fn track(&self, conn: &Connection, lease: Option<RuntimeLease>) -> bool {
        let id = self.inner.next_connection.fetch_add(1, Ordering::Relaxed);
        let admitted = {
            let mut live = self.inner.live.lock().expect("live");
            let admitted = !self.inner.stopped.load(Ordering::Acquire);
            if admitted {
                live.insert(id, conn.clone());
            }
            admitted
        };
        let adapter = Arc::downgrade(&self.inner);
        let gauge = self.inner.instance.metrics().connection_opened("incoming");
        conn.on_closed(move || {
            // The connection's runtime serves one connection fewer.
            drop(lease);
            drop(gauge);
            if let Some(inner) = adapter.upgrade() {
                inner.connection_count.fetch_sub(1, Ordering::AcqRel);
                inner.live.lock().expect("live").remove(&id);
            }
        });
        admitted
    }

    /// Number of incoming connections currently open.
    pub fn connection_count(&self) -> usize {
        self.inner.connection_count.load(Ordering::Acquire)
    }

    /// Stops accepting connections (the listening sockets close as their aborted tasks are
    /// dropped; [`deactivate`](Self::deactivate) waits for that) and stops the open connections
    /// from taking new requests.
    pub(crate) fn stop_accepting(&self) {
        {
            let live = self.inner.live.lock().expect("live");
            self.inner.stopped.store(true, Ordering::Release);
            // Connections stop taking requests now; they close once their dispatches finish.
            for c in live.values() {
                c.stop_dispatching();
            }
        }
        for t in self.inner.accept_tasks.lock().expect("accept tasks").iter() {
            t.abort();
        }
    }

    /// Stops accepting connections and closes the open ones gracefully.
    ///
    /// A second caller (a shutdown already deactivating it, say) waits for the first to finish.
    pub async fn deactivate(&self) {
        if self.inner.deactivated.swap(true, Ordering::AcqRel) {
            self.wait_for_deactivate().await;
            return;
        }
        // Held connections and accept loops wake up and see the deactivation.
        self.inner.gate.open_for_good();
        self.inner.listeners.lock().expect("listeners").clear();
        if let Some(router) = self.inner.router.lock().expect("router").take() {
            self.inner.instance.set_routed_handler(&router, None);
        }
        if let Err(e) = self.register_with_locator(false).await {
            debug!(target: "floe::adapter", "{}: could not unregister from the locator: {e}", self.inner.name);
        }
        let locators: Vec<(String, Arc<dyn ServantLocator>)> =
            self.inner.locators.write().expect("locators").drain().collect();
        self.stop_accepting();
        // The listening sockets are closed once their (aborted) tasks are dropped: wait for
        // that, so that a connection attempt after `deactivate` returns is refused.
        let accept_tasks: Vec<_> = self.inner.accept_tasks.lock().expect("accept tasks").drain(..).collect();
        for task in accept_tasks {
            // Aborted again: one an activation added after `stop_accepting` would never end.
            task.abort();
            let _ = task.await;
        }
        let live: Vec<Connection> = self.inner.live.lock().expect("live").drain().map(|(_, c)| c).collect();
        debug!(target: "floe::adapter", "{}: deactivating, closing {} connections", self.inner.name, live.len());
        let closes = live.iter().map(|c| c.close());
        futures_util::future::join_all(closes).await;
        for (category, locator) in locators {
            locator.deactivate(&category);
        }
        self.inner.deactivation_done.store(true, Ordering::Release);
        self.inner.deactivated_notify.notify_waiters();
    }

    /// True once deactivated.
    pub fn is_deactivated(&self) -> bool {
        self.inner.deactivated.load(Ordering::Acquire)
    }

    /// Waits until the adapter's deactivation has finished (its dispatches done and its
    /// connections closed).
    pub async fn wait_for_deactivate(&self) {
        loop {
            let n = self.inner.deactivated_notify.notified();
            if self.inner.deactivation_done.load(Ordering::Acquire) {
                return;
            }
            n.await;
        }
    }
}

impl ManagedAdapter for ObjectAdapter {
    fn stop_accepting(&self) {
        ObjectAdapter::stop_accepting(self);
    }

    fn deactivate(&self) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send + '_>> {
        Box::pin(ObjectAdapter::deactivate(self))
    }
}

impl RequestHandler for AdapterInner {
    fn bind(self: Arc<Self>, connection: &Connection) -> Box<dyn BoundHandler> {
        let adapter = ObjectAdapter { inner: self };
        let origin = Arc::new(adapter.origin(Some(connection)));
        let metrics = adapter.inner.instance.metrics().clone();
        Box::new(AdapterOnConnection {
            adapter,
            origin,
            metrics,
            servants: ServantCache::default(),
            last_servant: ServantCache::default(),
        })
    }

    fn gate(&self) -> Option<&HoldGate> {
        Some(&self.gate)
    }
}

/// An adapter bound to one connection (see [`RequestHandler::bind`]), owned by the
/// connection's reader.
struct AdapterOnConnection {
    adapter: ObjectAdapter,
    /// Shared by the connection's requests.
    origin: Arc<Origin>,
    /// The servant the previous request of the current batch went to.
    servants: ServantCache,
    /// The servant the previous request outside a batch went to.
    last_servant: ServantCache,
    /// The metrics views: requests are counted only while one is enabled.
    metrics: Arc<crate::metrics::Metrics>,
}

impl AdapterOnConnection {
    /// Dispatches a request while counting it in the metrics views.
    #[cold]
    fn dispatch_observed(&mut self, request: crate::protocol::Request, batched: Option<bool>) -> DispatchFuture {
        let observed = {
            let connection = self.origin.connection.as_ref();
            let attributes =
                observe::DispatchAttributes { request: &request, adapter: self.adapter.name(), connection };
            observe::begin(&self.metrics, &attributes)
        };
        let future = match batched {
            None => self.adapter.dispatch_cached(&self.origin, request, &mut self.last_servant, false),
            Some(same_target) => {
                self.servants.repeats = same_target;
                self.adapter.dispatch_cached(&self.origin, request, &mut self.servants, true)
            }
        };
        observe::finish(self.metrics.clone(), observed, future)
    }
}

impl BoundHandler for AdapterOnConnection {
    #[inline]
    fn dispatch(&mut self, request: crate::protocol::Request) -> DispatchFuture {
        if self.metrics.active() {
            return self.dispatch_observed(request, None);
        }
        // `repeats` stays false: outside a batch, each request's target is compared.
        self.adapter.dispatch_cached(&self.origin, request, &mut self.last_servant, false)
    }

    #[inline]
    fn dispatch_batched(&mut self, request: crate::protocol::Request, same_target: bool) -> DispatchFuture {
        if self.metrics.active() {
            return self.dispatch_observed(request, Some(same_target));
        }
        self.servants.repeats = same_target;
        self.adapter.dispatch_cached(&self.origin, request, &mut self.servants, true)
    }

    fn start_batch(&mut self) {
        self.servants = ServantCache::default();
    }
}

impl Current {
    /// The adapter that dispatches the request (none outside an adapter).
    #[inline]
    pub fn adapter(&self) -> Option<&ObjectAdapter> {
        self.origin()?.adapter.as_ref()?.downcast_ref::<ObjectAdapter>()
    }
}

impl Connection {
    /// Lets the peer call back over this connection: requests that arrive on it are
    /// dispatched to `adapter` (bidirectional connections, Ice's `Connection::setAdapter`);
    /// `None` stops that.
    pub fn set_adapter(&self, adapter: Option<ObjectAdapter>) {
        self.set_handler(adapter.map(|a| a.request_handler()));
    }

    /// The adapter that dispatches requests arriving on this connection, if its handler is
    /// one.
    pub fn adapter(&self) -> Option<ObjectAdapter> {
        let handler: Arc<dyn std::any::Any + Send + Sync> = self.handler()?;
        handler.downcast::<AdapterInner>().ok().map(|inner| ObjectAdapter { inner })
    }
}
