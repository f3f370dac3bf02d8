//! What a communicator remembers about its locators and routers: the locator cache (adapter
//! ids and well-known objects resolved to endpoints or proxies, with the time they were
//! resolved, for `Ice.Default.LocatorCacheTimeout`) and, per router, its client endpoints and
//! the identities already added to its routing table. Plain tables: the proxies that ask the
//! locators and routers fill them. No lock is held across I/O.

use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use crate::encoding::{EndpointData, Identity, ProxyData};

/// A cached resolution and when it was made.
struct Entry<T> {
    value: T,
    at: Instant,
}

impl<T: Clone> Entry<T> {
    /// The value, unless it is older than `timeout_secs` (−1: never too old; 0: not cached).
    fn fresh(&self, timeout_secs: i32) -> Option<T> {
        match timeout_secs {
            t if t < 0 => Some(self.value.clone()),
            0 => None,
            t => (self.at.elapsed() <= Duration::from_secs(t as u64)).then(|| self.value.clone()),
        }
    }
}

/// Cached adapter endpoints, by (locator, adapter id).
type AdapterEntries = HashMap<(String, String), Entry<Vec<EndpointData>>>;
/// Cached well-known objects, by (locator, identity).
type ObjectEntries = HashMap<(String, Identity), Entry<ProxyData>>;

/// The locator cache of a communicator, for all its locators (keyed by the locator proxy's
/// string).
#[derive(Default)]
pub(crate) struct LocatorTable {
    adapters: Mutex<AdapterEntries>,
    objects: Mutex<ObjectEntries>,
}

impl LocatorTable {
    /// The endpoints of `adapter_id` as `locator` resolved them, if cached and fresh.
    pub(crate) fn adapter(&self, locator: &str, adapter_id: &str, timeout_secs: i32) -> Option<Vec<EndpointData>> {
        let table = self.adapters.lock().expect("locator table");
        table.get(&(locator.to_string(), adapter_id.to_string()))?.fresh(timeout_secs)
    }

    /// Records what `locator` resolved `adapter_id` to.
    pub(crate) fn set_adapter(&self, locator: &str, adapter_id: &str, endpoints: Vec<EndpointData>) {
        let mut table = self.adapters.lock().expect("locator table");
        table.insert((locator.to_string(), adapter_id.to_string()), Entry { value: endpoints, at: Instant::now() });
    }

    /// Forgets `adapter_id`'s endpoints (they failed).
    pub(crate) fn remove_adapter(&self, locator: &str, adapter_id: &str) {
        self.adapters.lock().expect("locator table").remove(&(locator.to_string(), adapter_id.to_string()));
    }

    /// The proxy of the well-known object `identity` as `locator` resolved it, if cached and
    /// fresh.
    pub(crate) fn object(&self, locator: &str, identity: &Identity, timeout_secs: i32) -> Option<ProxyData> {
        let table = self.objects.lock().expect("locator table");
        table.get(&(locator.to_string(), identity.clone()))?.fresh(timeout_secs)
    }

    /// Records what `locator` resolved the well-known object `identity` to.
    pub(crate) fn set_object(&self, locator: &str, identity: &Identity, proxy: ProxyData) {
        let mut table = self.objects.lock().expect("locator table");
        table.insert((locator.to_string(), identity.clone()), Entry { value: proxy, at: Instant::now() });
    }

    /// Forgets the well-known object `identity`.
    pub(crate) fn remove_object(&self, locator: &str, identity: &Identity) {
        self.objects.lock().expect("locator table").remove(&(locator.to_string(), identity.clone()));
    }
}

/// What a communicator knows of one router.
#[derive(Default, Clone)]
struct RouterEntry {
    /// The endpoints requests through the router go to (`getClientProxy`), once asked.
    client_endpoints: Option<Vec<EndpointData>>,
    /// Whether the router keeps a routing table (`getClientProxy`'s `hasRoutingTable`;
    /// unknown routers are assumed to).
    has_routing_table: bool,
    /// Identities already given to `addProxies`.
    added: HashSet<Identity>,
}

/// The routers of a communicator, keyed by the router proxy's string.
#[derive(Default)]
pub(crate) struct RouterTable {
    routers: Mutex<HashMap<String, RouterEntry>>,
}

impl RouterTable {
    /// The router's client endpoints, once known.
    pub(crate) fn client_endpoints(&self, router: &str) -> Option<Vec<EndpointData>> {
        self.routers.lock().expect("router table").get(router)?.client_endpoints.clone()
    }

    /// Records the router's client endpoints and whether it keeps a routing table.
    pub(crate) fn set_client_endpoints(&self, router: &str, endpoints: Vec<EndpointData>, has_routing_table: bool) {
        let mut table = self.routers.lock().expect("router table");
        let entry = table.entry(router.to_string()).or_default();
        entry.client_endpoints = Some(endpoints);
        entry.has_routing_table = has_routing_table;
    }

    /// True when `identity` must still be added to the router's routing table.
    pub(crate) fn needs_adding(&self, router: &str, identity: &Identity) -> bool {
        let table = self.routers.lock().expect("router table");
        match table.get(router) {
            Some(e) => e.has_routing_table && !e.added.contains(identity),
            None => true,
        }
    }

    /// Forgets that `identity` was added to the router's routing table, after the router said
    /// it no longer has it.
    pub(crate) fn forget(&self, router: &str, identity: &Identity) {
        if let Some(entry) = self.routers.lock().expect("router table").get_mut(router) {
            entry.added.remove(identity);
        }
    }

    /// Records identities added to the router's routing table, and forgets those it evicted.
    pub(crate) fn added(&self, router: &str, added: &Identity, evicted: &[Identity]) {
        let mut table = self.routers.lock().expect("router table");
        let entry = table.entry(router.to_string()).or_default();
        entry.added.insert(added.clone());
        for id in evicted {
            entry.added.remove(id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::encoding::IpEndpointData;

    fn tcp(port: i32) -> EndpointData {
        EndpointData::Tcp(IpEndpointData { host: "127.0.0.1".into(), port, timeout: -1, compress: false })
    }

    #[test]
    fn cache_timeouts_follow_ice() {
        let t = LocatorTable::default();
        t.set_adapter("L", "A", vec![tcp(1)]);
        assert_eq!(t.adapter("L", "A", -1), Some(vec![tcp(1)]));
        assert_eq!(t.adapter("L", "A", 0), None, "0 means: always ask the locator");
        assert_eq!(t.adapter("L", "A", 60), Some(vec![tcp(1)]));
        assert_eq!(t.adapter("other locator", "A", -1), None);
        t.remove_adapter("L", "A");
        assert_eq!(t.adapter("L", "A", -1), None);
    }

    #[test]
    fn routing_table_remembers_added_identities() {
        let t = RouterTable::default();
        let id = Identity::new("x");
        assert!(t.needs_adding("R", &id));
        t.set_client_endpoints("R", vec![tcp(2)], true);
        t.added("R", &id, &[]);
        assert!(!t.needs_adding("R", &id));
        t.added("R", &Identity::new("y"), std::slice::from_ref(&id));
        assert!(t.needs_adding("R", &id), "an evicted identity is added again");
        t.set_client_endpoints("R", vec![tcp(2)], false);
        assert!(!t.needs_adding("R", &Identity::new("z")), "no routing table: nothing to add");
    }
}
