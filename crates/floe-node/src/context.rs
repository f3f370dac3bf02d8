//! What a node's servers need of the node: its configuration and the registries' node
//! observers, to which they report their state.

use std::collections::BTreeMap;
use std::sync::Mutex;

use floe_icegrid::ice_grid::NodeObserverPrx;

use crate::config::NodeConfig;

/// The node's configuration and observers.
pub struct NodeContext {
    /// What the node was configured with.
    pub config: NodeConfig,
    /// The node observers of the registries the node has sessions with, by session.
    observers: Mutex<BTreeMap<usize, NodeObserverPrx>>,
}

impl NodeContext {
    /// A context with no observers yet.
    pub fn new(config: NodeConfig) -> NodeContext {
        NodeContext { config, observers: Mutex::new(BTreeMap::new()) }
    }

    /// The node observers of the registries, as their sessions gave them.
    pub fn observers(&self) -> Vec<NodeObserverPrx> {
        self.observers.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    /// Sets (or, with None, forgets) the node observer of session `session`.
    pub fn set_observer(&self, session: usize, observer: Option<NodeObserverPrx>) {
        let mut observers = self.observers.lock().unwrap_or_else(|p| p.into_inner());
        match observer {
            Some(o) => observers.insert(session, o),
            None => observers.remove(&session),
        };
    }
}
