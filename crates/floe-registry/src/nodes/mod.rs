//! IceGrid nodes: the registry side of IceGrid's internal protocol (`Internal.ice`), through
//! which ZeroC's `icegridnode` (or any node speaking it) registers and runs the servers that
//! applications deploy on it.
//!
//! - [`session`]: `<InstanceName>/InternalRegistry-<ReplicaName>` (`registerNode`, …), the
//!   node sessions it hands out, and the node observer that nodes report server and adapter
//!   states to.
//! - [`descriptor`]: the `InternalServerDescriptor` of a deployed server on a node (its
//!   command line and the configuration files the node writes).
//! - [`servers`]: loading servers on their nodes (`Node::loadServer`), destroying them, and
//!   the per-server calls that admin sessions make (`Server::start`, `getState`, …).
//! - [`locate`]: resolving the adapters of node-managed servers (asking the node, activating
//!   on demand) and forwarding their registrations to the node.
//!
//! The state kept here is in memory only: a node registers again when the registry restarts.

pub(crate) mod admin;
pub(crate) mod descriptor;
pub(crate) mod locate;
pub(crate) mod servers;
pub(crate) mod session;
pub(crate) mod update;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use floe::{Error, Identity, Proxy};

use crate::shared::Shared;
use crate::slice::ice_grid::{
    InternalNodeInfo, LoadInfo, NodeDynamicInfo, NodeInfo, NodeNotExistException, NodePrx, NodeUnreachableException,
    ReplicaObserverPrx, ServerDynamicInfo,
};

/// How long a short call on a node (a state, a ping, a signal) may take.
pub(crate) const NODE_CALL_TIMEOUT: Duration = Duration::from_secs(10);

/// `proxy` with an invocation timeout of `timeout`.
pub(crate) fn timed<P: Proxy>(proxy: &P, timeout: Duration) -> P {
    P::from_object(proxy.as_object().ice_invocation_timeout(Some(timeout)))
}

/// One node's session with this registry.
pub(crate) struct NodeSession {
    /// Distinguishes sessions of the same node: servers loaded through an earlier session are
    /// loaded again.
    pub(crate) serial: u64,
    /// The identity of the session object on the internal adapter.
    pub(crate) identity: Identity,
    /// What the node told about itself when it registered.
    pub(crate) info: InternalNodeInfo,
    /// The node's proxy, as it gave it.
    pub(crate) node: NodePrx,
    /// The last load the node reported.
    pub(crate) load: Mutex<LoadInfo>,
    /// When the node last kept the session alive.
    pub(crate) last: Mutex<Instant>,
    pub(crate) destroyed: AtomicBool,
    /// The node's replica observer (`setReplicaObserver`).
    pub(crate) replica_observer: Mutex<Option<ReplicaObserverPrx>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl NodeSession {
    /// The node's name.
    pub(crate) fn name(&self) -> &str {
        &self.info.name
    }

    /// The node's proxy with a short invocation timeout.
    pub(crate) fn node(&self) -> NodePrx {
        timed(&self.node, NODE_CALL_TIMEOUT)
    }

    /// The node's last reported load.
    pub(crate) fn load(&self) -> LoadInfo {
        *lock(&self.load)
    }

    /// `NodeInfo`, as admin sessions see it.
    pub(crate) fn node_info(&self) -> NodeInfo {
        let i = &self.info;
        NodeInfo {
            name: i.name.clone(),
            os: i.os.clone(),
            hostname: i.hostname.clone(),
            release: i.release.clone(),
            version: i.version.clone(),
            machine: i.machine.clone(),
            n_processors: i.n_processors,
            data_dir: i.data_dir.clone(),
        }
    }
}

/// The nodes with a session, and what they told the node observer.
#[derive(Default)]
pub(crate) struct Nodes {
    sessions: Mutex<HashMap<String, Arc<NodeSession>>>,
    serial: AtomicU64,
    /// What each live node last reported (`nodeUp`, `updateServer`, `updateAdapter`).
    dynamic: Mutex<HashMap<String, NodeDynamicInfo>>,
    /// The servers loaded on nodes.
    pub(crate) servers: servers::Loads,
}

impl Nodes {
    /// The live session of node `name`.
    pub(crate) fn live(&self, name: &str) -> Option<Arc<NodeSession>> {
        lock(&self.sessions).get(name).filter(|s| !s.destroyed.load(Ordering::SeqCst)).cloned()
    }

    /// Every live session, by node name.
    pub(crate) fn all(&self) -> Vec<Arc<NodeSession>> {
        let mut v: Vec<Arc<NodeSession>> =
            lock(&self.sessions).values().filter(|s| !s.destroyed.load(Ordering::SeqCst)).cloned().collect();
        v.sort_by(|a, b| a.info.name.cmp(&b.info.name));
        v
    }

    fn next_serial(&self) -> u64 {
        self.serial.fetch_add(1, Ordering::SeqCst) + 1
    }

    /// The dynamic information of every live node, for `nodeInit`.
    pub(crate) fn dynamic_infos(&self) -> Vec<NodeDynamicInfo> {
        let live: Vec<String> = self.all().iter().map(|s| s.info.name.clone()).collect();
        let dynamic = lock(&self.dynamic);
        live.iter()
            .map(|n| {
                dynamic.get(n).cloned().unwrap_or_else(|| NodeDynamicInfo {
                    info: self.live(n).map(|s| s.node_info()).unwrap_or_default(),
                    servers: Vec::new(),
                    adapters: Vec::new(),
                })
            })
            .collect()
    }

    /// Records what a node reported with `nodeUp`.
    pub(crate) fn set_dynamic(&self, info: NodeDynamicInfo) {
        lock(&self.dynamic).insert(info.info.name.clone(), info);
    }

    /// Records a server's new state, as a node reported it.
    pub(crate) fn update_server(&self, node: &str, info: &ServerDynamicInfo) {
        let mut dynamic = lock(&self.dynamic);
        let Some(d) = dynamic.get_mut(node) else { return };
        d.servers.retain(|s| s.id != info.id);
        d.servers.push(info.clone());
    }

    /// Records an adapter's new proxy, as a node reported it.
    pub(crate) fn update_adapter(&self, node: &str, info: &crate::slice::ice_grid::AdapterDynamicInfo) {
        let mut dynamic = lock(&self.dynamic);
        let Some(d) = dynamic.get_mut(node) else { return };
        d.adapters.retain(|a| a.id != info.id);
        if info.proxy.is_some() {
            d.adapters.push(info.clone());
        }
    }

    /// The names of the nodes with a session.
    pub(crate) fn names(&self) -> Vec<String> {
        self.all().iter().map(|s| s.info.name.clone()).collect()
    }
}

/// Ends a node's session: its servers are no longer loaded through it, observers are told
/// the node is down, and the session object is removed.
pub(crate) fn end_session(shared: &Shared, session: &Arc<NodeSession>) {
    if session.destroyed.swap(true, Ordering::SeqCst) {
        return;
    }
    let name = session.info.name.clone();
    {
        let mut sessions = lock(&shared.nodes.sessions);
        if sessions.get(&name).is_some_and(|s| Arc::ptr_eq(s, session)) {
            sessions.remove(&name);
            lock(&shared.nodes.dynamic).remove(&name);
        }
    }
    shared.internal.remove(&session.identity);
    tracing::info!(target: "floe_registry::node", node = name, "node down");
    crate::observers::node_down(shared, &name);
}

/// Ends the sessions of nodes that did not keep them alive within the node session timeout.
pub(crate) fn reap(shared: &Shared) {
    let timeout = Duration::from_secs(shared.config.node_session_timeout.max(1) as u64);
    let expired: Vec<Arc<NodeSession>> =
        shared.nodes.all().into_iter().filter(|s| lock(&s.last).elapsed() > timeout).collect();
    for s in expired {
        tracing::info!(target: "floe_registry::node", node = s.info.name, "node session expired");
        end_session(shared, &s);
    }
}

/// `NodeUnreachableException` for node `name`.
pub(crate) fn unreachable(name: &str, reason: impl Into<String>) -> Error {
    Error::user(NodeUnreachableException { name: name.to_string(), reason: reason.into() })
}

/// The live session of node `name`; or what a command on it answers: the node is known
/// (declared or once registered) but down, or does not exist.
pub(crate) fn require(shared: &Shared, name: &str) -> floe::Result<Arc<NodeSession>> {
    if let Some(s) = shared.nodes.live(name) {
        return Ok(s);
    }
    if shared.deployment().node_names().iter().any(|n| n == name) {
        Err(unreachable(name, "the node is not active"))
    } else {
        Err(Error::user(NodeNotExistException { name: name.to_string() }))
    }
}
