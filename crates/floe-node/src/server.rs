//! A loaded server: its descriptor, its process and its state, as IceGrid's node keeps them.
//!
//! A server is *inactive* until something starts it: a client's locate request through one
//! of its adapters (activation `on-demand`), `server start` (any mode but a disabled server),
//! or the node itself (activation `always`, when loaded and after it exits). Starting spawns
//! the process ([`crate::activator`]) and waits, up to the activation timeout, for every
//! adapter whose descriptor says `server-lifetime` to register its endpoints and, when the
//! descriptor says so, for the server's `Ice::Process` object: then it is *active*. A stop
//! asks the `Process` object to shut down (or sends SIGTERM when there is none) and sends
//! SIGKILL when the deactivation timeout passes. The process's exit, expected or not, makes
//! the server inactive again and clears its adapters, so the next locate starts it again.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use floe::{Current, Error, ObjectPrx};
use floe_icegrid::ice::ProcessPrx;
use floe_icegrid::ice_grid::{
    AdapterDynamicInfo, AdapterPrx, InternalServerDescriptor, ServerDynamicInfo, ServerStartException, ServerState,
    ServerStopException,
};
use tokio::sync::watch;

use crate::activator::{self, Account, Launch};
use crate::context::NodeContext;

/// How a start was asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Activation {
    /// By a locate request through an adapter.
    OnDemand,
    /// By `server start` (or `always` at load).
    Manual,
}

/// A loaded server.
pub struct ServerEntry {
    /// The server id.
    pub id: String,
    /// The node's configuration and observers.
    pub context: Arc<NodeContext>,
    inner: Mutex<Inner>,
    state: watch::Sender<ServerState>,
    /// The generation of the last process that exited: a stop waits for its own process
    /// (the state may be `Inactive` only for an instant before a request starts another).
    exited: watch::Sender<u64>,
}

struct Inner {
    desc: InternalServerDescriptor,
    account: Option<Account>,
    enabled: bool,
    pid: Option<u32>,
    process: Option<ProcessPrx>,
    adapters: BTreeMap<String, Arc<AdapterEntry>>,
    /// Adapters that registered since the last start.
    activated: BTreeSet<String>,
    /// Between spawning and active (or timed out, or exited).
    activating: bool,
    /// A stop was asked for: an `always` server is not started again when it exits.
    stopping: bool,
    /// Bumped on every start: timers of an earlier start do nothing.
    generation: u64,
    destroyed: bool,
}

impl ServerEntry {
    /// A server loaded with `desc`, inactive.
    pub fn new(
        context: Arc<NodeContext>,
        desc: InternalServerDescriptor,
        account: Option<Account>,
    ) -> Arc<ServerEntry> {
        let enabled = true;
        Arc::new(ServerEntry {
            id: desc.id.clone(),
            context,
            inner: Mutex::new(Inner {
                desc,
                account,
                enabled,
                pid: None,
                process: None,
                adapters: BTreeMap::new(),
                activated: BTreeSet::new(),
                activating: false,
                stopping: false,
                generation: 0,
                destroyed: false,
            }),
            state: watch::channel(ServerState::Inactive).0,
            exited: watch::channel(0).0,
        })
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The descriptor it was last loaded with.
    pub fn descriptor(&self) -> InternalServerDescriptor {
        self.lock().desc.clone()
    }

    /// Replaces the descriptor, account and adapters (the process, if any, keeps running).
    pub fn update(
        &self,
        desc: InternalServerDescriptor,
        account: Option<Account>,
        adapters: BTreeMap<String, Arc<AdapterEntry>>,
    ) {
        let mut inner = self.lock();
        inner.desc = desc;
        inner.account = account;
        inner.adapters = adapters;
    }

    /// Its adapters, by id.
    pub fn adapters(&self) -> BTreeMap<String, Arc<AdapterEntry>> {
        self.lock().adapters.clone()
    }

    /// Its state.
    pub fn state(&self) -> ServerState {
        *self.state.borrow()
    }

    /// A receiver of its state changes.
    pub fn watch_state(&self) -> watch::Receiver<ServerState> {
        self.state.subscribe()
    }

    /// Between spawning and the end of the activation.
    pub fn is_activating(&self) -> bool {
        self.lock().activating
    }

    /// The process id while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.lock().pid
    }

    /// The server's `Process` object, once it registered it.
    pub fn process(&self) -> Option<ProcessPrx> {
        self.lock().process.clone()
    }

    /// Whether it may be started.
    pub fn is_enabled(&self) -> bool {
        self.lock().enabled
    }

    /// The activation mode of its descriptor.
    pub fn activation_mode(&self) -> String {
        self.lock().desc.activation.clone()
    }

    /// The descriptor's activation timeout, or `IceGrid.Node.WaitTime`.
    pub fn activation_timeout(&self) -> Duration {
        Duration::from_secs(seconds(&self.lock().desc.activation_timeout, self.context.config.wait_time))
    }

    /// The descriptor's deactivation timeout, or `IceGrid.Node.WaitTime`.
    pub fn deactivation_timeout(&self) -> Duration {
        Duration::from_secs(seconds(&self.lock().desc.deactivation_timeout, self.context.config.wait_time))
    }

    /// Whether a locate request through adapter `id` may start it, as IceGrid decides.
    pub fn is_adapter_activatable(&self, id: &str) -> bool {
        let inner = self.lock();
        if !inner.enabled || inner.destroyed {
            return false;
        }
        let mode = inner.desc.activation.as_str();
        if mode == "manual" || (mode == "session" && inner.desc.session_id.is_empty()) {
            return false;
        }
        match self.state() {
            ServerState::Inactive => true,
            ServerState::Activating => !inner.activated.contains(id),
            ServerState::Deactivating => true,
            _ => false,
        }
    }

    fn set_state(&self, state: ServerState) {
        if self.state.send_replace(state) != state {
            self.observe();
        }
    }

    /// Tells the registries' node observers the server's state.
    fn observe(&self) {
        let observers = self.context.observers();
        if observers.is_empty() {
            return;
        }
        let (enabled, pid) = {
            let inner = self.lock();
            (inner.enabled, inner.pid)
        };
        let info =
            ServerDynamicInfo { id: self.id.clone(), state: self.state(), pid: pid.map_or(0, |p| p as i32), enabled };
        let node = self.context.config.name.clone();
        tokio::spawn(async move {
            for observer in observers {
                let _ = observer.update_server(&node, &info).await;
            }
        });
    }

    /// Tells the registries' node observers what an adapter registered.
    pub fn observe_adapter(&self, adapter: &AdapterEntry) {
        let observers = self.context.observers();
        if observers.is_empty() {
            return;
        }
        let info = AdapterDynamicInfo { id: adapter.id.clone(), proxy: adapter.direct_proxy() };
        let node = self.context.config.name.clone();
        tokio::spawn(async move {
            for observer in observers {
                let _ = observer.update_adapter(&node, &info).await;
            }
        });
    }

    /// Enables or disables it.
    pub fn set_enabled(&self, enabled: bool) {
        self.lock().enabled = enabled;
        self.observe();
    }

    /// Starts it for a locate request; returns at once (the adapter waits for its endpoints).
    pub fn start_on_demand(self: &Arc<Self>) -> Result<(), String> {
        self.spawn(Activation::OnDemand)
    }

    /// Starts it and waits until it is active (`server start`).
    pub async fn start(self: &Arc<Self>) -> Result<(), String> {
        let mut state = self.watch_state();
        self.spawn(Activation::Manual)?;
        loop {
            let s = *state.borrow_and_update();
            if !self.is_activating() {
                return match s {
                    ServerState::Active => Ok(()),
                    ServerState::ActivationTimedOut => Err("The server activation timed out.".into()),
                    _ => Err("The server terminated during its activation.".into()),
                };
            }
            if state.changed().await.is_err() {
                return Err("The server was destroyed.".into());
            }
        }
    }

    fn spawn(self: &Arc<Self>, how: Activation) -> Result<(), String> {
        let mut inner = self.lock();
        if inner.destroyed {
            return Err("The server is being destroyed.".into());
        }
        if !inner.enabled {
            return Err("The server is disabled.".into());
        }
        if inner.desc.activation == "session" && inner.desc.session_id.is_empty() {
            return Err("The server is not owned by a session.".into());
        }
        match self.state() {
            ServerState::Inactive => {}
            ServerState::Activating => return Ok(()),
            ServerState::Active if how == Activation::OnDemand => return Ok(()),
            ServerState::Active => return Err("The server is already active.".into()),
            ServerState::Deactivating => return Err("The server is being deactivated.".into()),
            _ => return Err("The server is being deactivated or destroyed.".into()),
        }
        let config_file = self.context.config.server_dir(&self.id).join("config").join("config");
        let launch = Launch {
            id: &self.id,
            exe: &inner.desc.exe,
            pwd: &inner.desc.pwd,
            options: &inner.desc.options,
            envs: &inner.desc.envs,
            config_file: &config_file,
            account: inner.account,
        };
        for a in inner.adapters.values() {
            a.clear();
        }
        let mut child = activator::spawn(&launch, &self.context.config).inspect_err(|reason| {
            tracing::warn!(target: "floe_node::server", server = %self.id, %reason, "activation failed");
        })?;
        inner.generation += 1;
        let generation = inner.generation;
        inner.pid = child.id();
        inner.process = None;
        inner.activated.clear();
        inner.activating = true;
        inner.stopping = false;
        tracing::info!(target: "floe_node::server", server = %self.id, pid = ?inner.pid, ?how, "started");
        drop(inner);
        self.set_state(ServerState::Activating);
        self.check_activation();

        let me = self.clone();
        tokio::spawn(async move {
            let status = child.wait().await;
            me.terminated(generation, status.map(|s| s.to_string()).unwrap_or_else(|e| e.to_string()));
        });
        let me = self.clone();
        let timeout = self.activation_timeout();
        tokio::spawn(async move {
            tokio::time::sleep(timeout).await;
            me.activation_timed_out(generation);
        });
        Ok(())
    }

    /// Active once every server-lifetime adapter registered and, if the descriptor says
    /// so, the `Process` object too.
    fn check_activation(&self) {
        let mut inner = self.lock();
        if !inner.activating {
            return;
        }
        let lifetime_ready = inner
            .desc
            .adapters
            .iter()
            .flatten()
            .filter(|a| a.read().server_lifetime)
            .all(|a| inner.activated.contains(&a.read().id));
        let process_ready = !inner.desc.process_registered || inner.process.is_some();
        if lifetime_ready && process_ready {
            inner.activating = false;
            drop(inner);
            tracing::info!(target: "floe_node::server", server = %self.id, "active");
            self.set_state(ServerState::Active);
        }
    }

    fn activation_timed_out(&self, generation: u64) {
        let mut inner = self.lock();
        if inner.generation != generation || !inner.activating {
            return;
        }
        inner.activating = false;
        drop(inner);
        tracing::warn!(target: "floe_node::server", server = %self.id, "activation timed out");
        self.set_state(ServerState::ActivationTimedOut);
    }

    /// Adapter `id` registered its endpoints.
    pub fn adapter_activated(&self, id: &str) {
        self.lock().activated.insert(id.to_string());
        self.check_activation();
    }

    /// The server registered its `Process` object.
    pub fn set_process(&self, process: Option<ProcessPrx>) {
        self.lock().process = process;
        self.check_activation();
    }

    fn terminated(self: &Arc<Self>, generation: u64, status: String) {
        let mut inner = self.lock();
        if inner.generation != generation {
            return;
        }
        let unexpected = !inner.stopping;
        let restart = unexpected && inner.enabled && !inner.destroyed && inner.desc.activation == "always";
        inner.pid = None;
        inner.process = None;
        inner.activating = false;
        inner.activated.clear();
        let adapters: Vec<_> = inner.adapters.values().cloned().collect();
        let destroyed = inner.destroyed;
        drop(inner);
        for a in &adapters {
            a.clear();
        }
        if unexpected {
            tracing::warn!(target: "floe_node::server", server = %self.id, %status, "terminated unexpectedly");
        } else {
            tracing::info!(target: "floe_node::server", server = %self.id, %status, "stopped");
        }
        self.set_state(if destroyed { ServerState::Destroyed } else { ServerState::Inactive });
        self.exited.send_replace(generation);
        if restart {
            let me = self.clone();
            tokio::spawn(async move {
                tokio::time::sleep(Duration::from_secs(1)).await;
                if me.state() == ServerState::Inactive {
                    let _ = me.spawn(Activation::Manual);
                }
            });
        }
    }

    /// Stops it: its `Process` object's `shutdown` (else SIGTERM), then SIGKILL after the
    /// deactivation timeout. Returns once the process exited.
    pub async fn stop(self: &Arc<Self>) -> Result<(), String> {
        let (pid, process, generation) = {
            let mut inner = self.lock();
            match self.state() {
                ServerState::Inactive => return Err("The server is already inactive.".into()),
                ServerState::Destroying | ServerState::Destroyed => return Err("The server is being destroyed.".into()),
                _ => {}
            }
            inner.stopping = true;
            inner.activating = false;
            (inner.pid, inner.process.clone(), inner.generation)
        };
        let Some(pid) = pid else { return Ok(()) };
        let mut exited = self.exited.subscribe();
        self.set_state(ServerState::Deactivating);
        let asked = match process {
            Some(p) => tokio::time::timeout(Duration::from_secs(5), p.shutdown()).await.is_ok_and(|r| r.is_ok()),
            None => false,
        };
        if !asked {
            let _ = activator::send(pid, libc::SIGTERM);
        }
        let deadline = self.deactivation_timeout();
        if tokio::time::timeout(deadline, exited.wait_for(|g| *g >= generation)).await.is_err() {
            let killed = activator::send(pid, libc::SIGKILL);
            tracing::warn!(target: "floe_node::server", server = %self.id, pid, ?killed, "deactivation timed out: killing it");
            let _ = tokio::time::timeout(Duration::from_secs(10), exited.wait_for(|g| *g >= generation)).await;
        }
        Ok(())
    }

    /// Stops it if it runs and marks it destroyed.
    pub async fn destroy(self: &Arc<Self>) {
        let _ = self.stop().await;
        self.lock().destroyed = true;
        self.set_state(ServerState::Destroyed);
    }

    /// Sends signal `name` to the process.
    pub fn signal(&self, name: &str) -> Result<(), String> {
        let number = activator::signal_number(name).ok_or_else(|| format!("unknown signal `{name}'"))?;
        match self.pid() {
            Some(pid) => activator::send(pid, number),
            None => Err("The server is not active.".into()),
        }
    }
}

/// One adapter of a loaded server.
pub struct AdapterEntry {
    /// The adapter id.
    pub id: String,
    /// Its proxy on the node's adapter.
    pub proxy: AdapterPrx,
    /// The server it belongs to.
    pub server: Weak<ServerEntry>,
    /// What the server registered (None: not active); watched by `activate` calls.
    direct: watch::Sender<Option<ObjectPrx>>,
}

impl AdapterEntry {
    /// A new, inactive adapter.
    pub fn new(id: String, proxy: AdapterPrx, server: Weak<ServerEntry>) -> Arc<AdapterEntry> {
        Arc::new(AdapterEntry { id, proxy, server, direct: watch::channel(None).0 })
    }

    /// The endpoints the server registered, if any.
    pub fn direct_proxy(&self) -> Option<ObjectPrx> {
        self.direct.borrow().clone()
    }

    /// Forgets the registered endpoints (the server stopped or is started again).
    pub fn clear(&self) {
        self.direct.send_replace(None);
    }

    /// The server, or `ObjectNotExistException` for the target of `current` once it is gone.
    pub fn server(&self, current: &Current) -> floe::Result<Arc<ServerEntry>> {
        self.server.upgrade().ok_or_else(|| gone(current))
    }

    /// A receiver of what the server registers.
    pub fn subscribe(&self) -> watch::Receiver<Option<ObjectPrx>> {
        self.direct.subscribe()
    }

    /// Records what the server registered (None: it deactivated the adapter).
    pub fn set_direct_proxy(&self, proxy: Option<ObjectPrx>) {
        self.direct.send_replace(proxy);
    }
}

/// A descriptor's timeout in seconds; "" or 0 or not a number: `default`.
fn seconds(value: &str, default: u64) -> u64 {
    value.trim().parse::<u64>().ok().filter(|s| *s > 0).unwrap_or(default)
}

/// `ServerStartException` for server `id`.
pub fn start_error(id: &str, reason: String) -> Error {
    Error::user(ServerStartException { id: id.to_string(), reason })
}

/// `ServerStopException` for server `id`.
pub fn stop_error(id: &str, reason: String) -> Error {
    Error::user(ServerStopException { id: id.to_string(), reason })
}

/// `ObjectNotExistException` for the target of `current`.
pub fn gone(current: &Current) -> Error {
    Error::ObjectNotExist {
        identity: current.id.clone(),
        facet: current.facet.to_string(),
        operation: current.operation.to_string(),
    }
}
