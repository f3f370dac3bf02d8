//! Where a proxy's requests go: its own endpoints (filtered for its mode and security, in
//! the order its endpoint selection asks for), the endpoints a locator resolves an indirect
//! proxy to (through the communicator's locator cache), or a router's client endpoints.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::connection::Connection;
use crate::encoding::{Decode, EndpointData, Identity, InvocationMode, OptionalFormat, ProxyData};
use crate::error::{Error, Result};
use crate::protocol::OperationMode;
use crate::reference::{identity_to_string, EndpointSelection, Reference};

use super::ObjectPrx;

/// Where the endpoints came from: a cached locator answer can be stale, and is asked again
/// when none of its endpoints connects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Resolution {
    /// The proxy's own endpoints, a router's, or a fresh locator answer.
    Fresh,
    /// The locator cache.
    Cached,
}

impl ObjectPrx {
    /// The endpoints this proxy's requests go to, in the order to try them.
    pub(crate) async fn resolve_endpoints(&self) -> Result<(Vec<EndpointData>, Resolution)> {
        let r = self.reference();
        // A router's own proxy never goes through itself.
        if let Some(router) = r.router.as_deref().filter(|router| router.wire.identity != r.wire.identity) {
            let endpoints = self.router_client_endpoints(router).await?;
            self.add_to_routing_table(router).await?;
            return Ok((self.filter_endpoints(endpoints), Resolution::Fresh));
        }
        if !r.is_indirect() {
            let endpoints = self.filter_endpoints(r.wire.endpoints.clone());
            if endpoints.is_empty() {
                return Err(Error::NoEndpoint(format!("{r}: no endpoint suits a {:?} proxy", r.wire.mode)));
            }
            return Ok((endpoints, Resolution::Fresh));
        }
        let Some(locator) = &r.locator else {
            return Err(Error::NoEndpoint(format!("{r} is an indirect proxy and no locator is configured")));
        };
        let (endpoints, how) = if r.wire.adapter_id.is_empty() {
            self.locate_object(locator).await?
        } else {
            self.locate_adapter(locator, &r.wire.adapter_id).await?
        };
        let mut endpoints = self.filter_endpoints(endpoints);
        if endpoints.is_empty() {
            return Err(Error::NoEndpoint(format!("{r}: the locator returned no endpoint suited to the proxy")));
        }
        // The proxy's `ice_timeout` applies to the endpoints it resolves to (not to the cache).
        if let Some(t) = r.timeout {
            for e in &mut endpoints {
                set_ip_timeout(e, t);
            }
        }
        Ok((endpoints, how))
    }

    /// Forgets that this proxy was added to its router's routing table, so that the next
    /// connection adds it again; false for a proxy without a router.
    pub(crate) fn forget_routing(&self) -> bool {
        let r = self.reference();
        let Some(router) = &r.router else { return false };
        self.instance().router_table().forget(&router.to_string(), &r.wire.identity);
        true
    }

    /// Forgets what the locator cache says about this (indirect) proxy, after its endpoints
    /// failed or its object was not found there.
    pub(crate) fn forget_resolution(&self) {
        let r = self.reference();
        let Some(locator) = &r.locator else { return };
        if !r.is_indirect() {
            return;
        }
        let key = locator.to_string();
        let table = self.instance().locator_table();
        if r.wire.adapter_id.is_empty() {
            if let Some(found) = table.object(&key, &r.wire.identity, -1) {
                if !found.adapter_id.is_empty() {
                    table.remove_adapter(&key, &found.adapter_id);
                }
            }
            table.remove_object(&key, &r.wire.identity);
        } else {
            table.remove_adapter(&key, &r.wire.adapter_id);
        }
    }

    /// Keeps the endpoints that suit the proxy's mode (datagram endpoints for datagram
    /// proxies, stream endpoints for the others) and security, ordered by its endpoint
    /// selection, secure ones first with `prefer_secure`.
    fn filter_endpoints(&self, mut endpoints: Vec<EndpointData>) -> Vec<EndpointData> {
        let r = self.reference();
        let datagram = matches!(r.wire.mode, InvocationMode::Datagram | InvocationMode::BatchDatagram);
        endpoints.retain(|e| match e {
            EndpointData::Udp { .. } => datagram,
            EndpointData::Opaque { .. } => false,
            _ => !datagram,
        });
        if r.wire.secure {
            endpoints.retain(is_secure);
        }
        if r.endpoint_selection == EndpointSelection::Random && endpoints.len() > 1 {
            shuffle(&mut endpoints);
        }
        if r.prefer_secure {
            endpoints.sort_by_key(|e| !is_secure(e));
        } else {
            endpoints.sort_by_key(is_secure);
        }
        endpoints
    }

    /// Resolves an adapter id through `locator` (`findAdapterById`), or from the cache.
    async fn locate_adapter(&self, locator: &Reference, adapter_id: &str) -> Result<(Vec<EndpointData>, Resolution)> {
        let r = self.reference();
        let key = locator.to_string();
        let table = self.instance().locator_table();
        if let Some(endpoints) = table.adapter(&key, adapter_id, r.locator_cache_timeout) {
            return Ok((endpoints, Resolution::Cached));
        }
        let locator_prx = ObjectPrx::new(self.instance().clone(), locator.clone());
        let not_found = || Error::NotRegistered { kind: "object adapter".into(), id: adapter_id.to_string() };
        let outcome = locator_prx
            .invoke("findAdapterById", OperationMode::Idempotent, None, |e| e.write_str(adapter_id))
            .await?
            .ok_or_else(|| Error::TwowayOnly("findAdapterById".into()))?;
        let instance = self.instance().clone();
        let found = match outcome.decode(|d| ObjectPrx::decode_for(&instance, d)) {
            Ok(found) => found,
            Err(Error::UnknownUserException(id)) if id == "::Ice::AdapterNotFoundException" => return Err(not_found()),
            Err(e) => return Err(e),
        };
        let endpoints = found.map(|p| p.reference().wire.endpoints.clone()).unwrap_or_default();
        if endpoints.is_empty() {
            return Err(not_found());
        }
        // Recorded even for a proxy that never reads the cache (timeout 0), as Ice does: other
        // proxies then find the latest answer.
        table.set_adapter(&key, adapter_id, endpoints.clone());
        Ok((endpoints, Resolution::Fresh))
    }

    /// Resolves a well-known object through `locator` (`findObjectById`), or from the cache;
    /// an indirect answer is then resolved by its adapter id.
    async fn locate_object(&self, locator: &Reference) -> Result<(Vec<EndpointData>, Resolution)> {
        let r = self.reference();
        let key = locator.to_string();
        let identity = &r.wire.identity;
        let table = self.instance().locator_table();
        let (found, how) = match table.object(&key, identity, r.locator_cache_timeout) {
            Some(found) => (found, Resolution::Cached),
            None => (self.find_object(locator, identity).await?, Resolution::Fresh),
        };
        if !found.endpoints.is_empty() {
            return Ok((found.endpoints, how));
        }
        if found.adapter_id.is_empty() {
            // The locator knows the object but gave neither endpoints nor an adapter id: as in
            // Ice, there is no endpoint to use (and nothing to cache).
            table.remove_object(&key, identity);
            return Err(Error::NoEndpoint(format!(
                "the locator returned {} without endpoints or adapter id",
                identity_to_string(identity)
            )));
        }
        let (endpoints, adapter_how) = match self.locate_adapter(locator, &found.adapter_id).await {
            Ok(resolved) => resolved,
            Err(e) => {
                // As Ice does: a well-known object whose adapter does not resolve is forgotten,
                // so that the next lookup asks the locator where the object is now.
                table.remove_object(&key, identity);
                return Err(e);
            }
        };
        let how = if how == Resolution::Cached || adapter_how == Resolution::Cached {
            Resolution::Cached
        } else {
            Resolution::Fresh
        };
        Ok((endpoints, how))
    }

    /// Asks `locator` for the proxy of the well-known object `identity`, and caches it.
    async fn find_object(&self, locator: &Reference, identity: &Identity) -> Result<ProxyData> {
        let not_found = || Error::NotRegistered { kind: "object".into(), id: identity_to_string(identity) };
        let locator_prx = ObjectPrx::new(self.instance().clone(), locator.clone());
        let outcome = locator_prx
            .invoke("findObjectById", OperationMode::Idempotent, None, |e| crate::encoding::Encode::encode(identity, e))
            .await?
            .ok_or_else(|| Error::TwowayOnly("findObjectById".into()))?;
        let found = match outcome.decode(ProxyData::decode_nullable) {
            Ok(found) => found,
            Err(Error::UnknownUserException(id)) if id == "::Ice::ObjectNotFoundException" => return Err(not_found()),
            Err(e) => return Err(e),
        };
        let found = found.ok_or_else(not_found)?;
        // Recorded even for a proxy that never reads the cache (timeout 0), as for adapters.
        self.instance().locator_table().set_object(&locator.to_string(), identity, found.clone());
        Ok(found)
    }

    /// The router's client endpoints (`getClientProxy`, asked once per router), with the
    /// router proxy's timeout so that requests share the connection the router was asked on.
    async fn router_client_endpoints(&self, router: &Reference) -> Result<Vec<EndpointData>> {
        let key = router.to_string();
        let table = self.instance().router_table();
        if let Some(endpoints) = table.client_endpoints(&key) {
            return Ok(endpoints);
        }
        let router_prx = ObjectPrx::new(self.instance().clone(), router.clone()).ice_router(None);
        let outcome = router_prx
            .invoke("getClientProxy", OperationMode::Idempotent, None, |_| {})
            .await?
            .ok_or_else(|| Error::TwowayOnly("getClientProxy".into()))?;
        let instance = self.instance().clone();
        let (client, has_routing_table) = outcome.decode(|d| {
            let client = ObjectPrx::decode_for(&instance, d)?;
            // `hasRoutingTable`, optional with tag 1 (absent from 1.0 replies and old routers:
            // then assumed true).
            let has_table =
                if !d.encoding().is_1_0() && d.read_optional(1, OptionalFormat::F1)? { bool::decode(d)? } else { true };
            Ok((client, has_table))
        })?;
        let mut endpoints = match client {
            Some(c) if !c.reference().wire.endpoints.is_empty() => c.reference().wire.endpoints.clone(),
            _ => router.wire.endpoints.clone(),
        };
        let router_timeout = router.wire.endpoints.iter().find_map(ip_timeout);
        if let Some(t) = router_timeout {
            for e in &mut endpoints {
                set_ip_timeout(e, t);
            }
        }
        table.set_client_endpoints(&key, endpoints.clone(), has_routing_table);
        Ok(endpoints)
    }

    /// Adds this proxy to the router's routing table (`addProxies`) unless it is there.
    async fn add_to_routing_table(&self, router: &Reference) -> Result<()> {
        let key = router.to_string();
        let identity = &self.reference().wire.identity;
        let table = self.instance().router_table();
        if !table.needs_adding(&key, identity) {
            return Ok(());
        }
        let router_prx = ObjectPrx::new(self.instance().clone(), router.clone()).ice_router(None);
        let outcome = router_prx
            .invoke("addProxies", OperationMode::Idempotent, None, |e| {
                e.write_size(1);
                crate::encoding::Encode::encode(&self.reference().wire, e);
            })
            .await?
            .ok_or_else(|| Error::TwowayOnly("addProxies".into()))?;
        let evicted = outcome.decode(|d| {
            let n = d.read_size()?;
            let mut evicted = Vec::new();
            for _ in 0..n {
                if let Some(p) = ProxyData::decode_nullable(d)? {
                    evicted.push(p.identity);
                }
            }
            Ok(evicted)
        })?;
        table.added(&key, identity, &evicted);
        Ok(())
    }

    /// A connection to the client endpoints of the router this proxy is.
    pub(crate) async fn connect_to_router_clients(&self) -> Result<Connection> {
        let endpoints = self.router_client_endpoints(self.reference()).await?;
        let endpoints = self.filter_endpoints(endpoints);
        self.connect_first(&endpoints).await
    }

    /// After connecting through a router: the object adapter routed through it (if any)
    /// serves the requests that come back over this connection.
    pub(crate) fn attach_routed_adapter(&self, connection: &Connection) {
        if let Some(router) = &self.reference().router {
            if let Some(handler) = self.instance().routed_handler(&router.to_string()) {
                if connection.handler().is_none() {
                    connection.set_handler(Some(handler));
                }
            }
        }
    }
}

fn is_secure(e: &EndpointData) -> bool {
    matches!(e, EndpointData::Ssl(_) | EndpointData::Wss(..))
}

fn ip_timeout(e: &EndpointData) -> Option<i32> {
    match e {
        EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _) => {
            Some(ip.timeout)
        }
        _ => None,
    }
}

/// Sets the timeout of a tcp, ssl, ws or wss endpoint (the others have none).
pub(crate) fn set_ip_timeout(e: &mut EndpointData, timeout: i32) {
    if let EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _) = e {
        ip.timeout = timeout;
    }
}

/// Shuffles endpoints for `Random` selection (a xorshift generator seeded from the clock and
/// a counter: spreading load needs no cryptographic randomness).
fn shuffle<T>(items: &mut [T]) {
    static COUNTER: AtomicU64 = AtomicU64::new(0x9e37_79b9_7f4a_7c15);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
    let mut x = nanos ^ COUNTER.fetch_add(0x9e37_79b9_7f4a_7c15, Ordering::Relaxed);
    if x == 0 {
        x = 1;
    }
    for i in (1..items.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        items.swap(i, (x % (i as u64 + 1)) as usize);
    }
}
