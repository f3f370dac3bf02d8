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

/// Every session's observers, by session.
#[derive(Default)]
pub(crate) struct Observers {
    sets: Mutex<HashMap<String, ObserverSet>>,
}

impl Observers {
    /// The sets, by the string form of their session's identity.
    pub(crate) fn lock(&self) -> MutexGuard<'_, HashMap<String, ObserverSet>> {
        self.sets.lock().unwrap_or_else(|e| e.into_inner())
    }
}
