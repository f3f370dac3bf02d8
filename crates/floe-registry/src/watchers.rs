//! Where the admin sessions' observers are kept (see [`crate::observers`] for what they are
//! told): one set of observer proxies per session.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::slice::ice_grid::{
    AdapterObserverPrx, ApplicationObserverPrx, NodeObserverPrx, ObjectObserverPrx, RegistryObserverPrx,
};

/// The observers of one admin session.
#[derive(Default, Clone)]
pub(crate) struct ObserverSet {
    pub(crate) registry: Option<RegistryObserverPrx>,
    pub(crate) node: Option<NodeObserverPrx>,
    pub(crate) application: Option<ApplicationObserverPrx>,
    pub(crate) adapter: Option<AdapterObserverPrx>,
    pub(crate) object: Option<ObjectObserverPrx>,
}

/// A batch of calls on observers, made one after the other.
pub(crate) type Calls = Vec<std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>>;

/// Every session's observers, by session.
#[derive(Default)]
pub(crate) struct Observers {
    sets: Mutex<HashMap<String, ObserverSet>>,
    /// Where node events wait for their turn: observers get them in the order nodes sent them.
    ordered: std::sync::OnceLock<tokio::sync::mpsc::UnboundedSender<Calls>>,
}

impl Observers {
    /// The sets, by the string form of their session's identity.
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, ObserverSet>> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues `calls` behind those queued before (each call is bounded by its proxy's
    /// invocation timeout). Must be called inside the runtime.
    pub(crate) fn in_order(&self, calls: Calls) {
        let queue = self.ordered.get_or_init(|| {
            let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<Calls>();
            tokio::spawn(async move {
                while let Some(calls) = rx.recv().await {
                    for call in calls {
                        call.await;
                    }
                }
            });
            tx
        });
        let _ = queue.send(calls);
    }
}
