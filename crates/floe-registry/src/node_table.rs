//! The registry's tables of nodes: the nodes' sessions, what they reported to the node
//! observer, and the servers loaded on them. Module `nodes` runs the protocol over them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use floe::{Identity, Proxy};

use crate::slice::ice_grid::{
    AdapterPrx, InternalNodeInfo, LoadInfo, NodeDynamicInfo, NodeInfo, NodePrx, ReplicaObserverPrx, ServerDynamicInfo,
    ServerPrx,
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
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
    pub(crate) sessions: Mutex<HashMap<String, Arc<NodeSession>>>,
    serial: AtomicU64,
    /// What each live node last reported (`nodeUp`, `updateServer`, `updateAdapter`).
    pub(crate) dynamic: Mutex<HashMap<String, NodeDynamicInfo>>,
    /// The servers loaded on nodes.
    pub(crate) servers: Loads,
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

    pub(crate) fn next_serial(&self) -> u64 {
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

/// A server as loaded on its node.
#[derive(Clone, Debug)]
pub(crate) struct Loaded {
    /// The serial of the node session it was loaded through.
    pub(crate) session: u64,
    pub(crate) node: String,
    pub(crate) uuid: String,
    pub(crate) revision: i32,
    /// The descriptor it was loaded with, encoded.
    pub(crate) digest: Vec<u8>,
    pub(crate) server: ServerPrx,
    /// The server's adapters on the node, by adapter id.
    pub(crate) adapters: HashMap<String, AdapterPrx>,
    /// What the node answered, plus the node session timeout, as IceGrid counts them.
    pub(crate) activation_timeout: Duration,
    pub(crate) deactivation_timeout: Duration,
}

pub(crate) type Slot = Arc<tokio::sync::Mutex<Option<Loaded>>>;

/// The servers loaded on nodes, one slot per server: the operations on one server (load,
/// destroy) happen one at a time.
#[derive(Default)]
pub(crate) struct Loads {
    slots: Mutex<HashMap<String, Slot>>,
    /// The last successful load of each server, readable while another is in progress.
    latest: Mutex<HashMap<String, Loaded>>,
}

impl Loads {
    pub(crate) fn slot(&self, id: &str) -> Slot {
        lock(&self.slots).entry(id.to_string()).or_default().clone()
    }

    /// The server as last loaded, without waiting for a load in progress (whose node may be
    /// stopping the server, which then unregisters through the registry).
    pub(crate) fn peek(&self, id: &str) -> Option<Loaded> {
        lock(&self.latest).get(id).cloned()
    }

    pub(crate) fn set_latest(&self, id: &str, l: Option<&Loaded>) {
        let mut latest = lock(&self.latest);
        match l {
            Some(l) => latest.insert(id.to_string(), l.clone()),
            None => latest.remove(id),
        };
    }
}
