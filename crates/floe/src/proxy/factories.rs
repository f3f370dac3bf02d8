//! The `ice_*` factory methods of [`ObjectPrx`]: copies of a proxy that differ in one
//! setting (mode, locator, router, endpoints, timeouts, context, facet, identity, encoding,
//! fixed connection).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::{locate, BatchQueue, ObjectPrx};
use crate::connection::Connection;
use crate::encoding::{Context, EncodingVersion, Identity, InvocationMode};

impl ObjectPrx {
    /// A twoway copy.
    pub fn ice_twoway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Twoway)
    }

    /// A oneway copy.
    pub fn ice_oneway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Oneway)
    }

    /// A batch-oneway copy (requests queue until [`ObjectPrx::ice_flush_batch_requests`]).
    pub fn ice_batch_oneway(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::BatchOneway)
    }

    /// A datagram copy: requests go as UDP datagrams to the proxy's `udp` endpoints, and
    /// nothing is answered.
    pub fn ice_datagram(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::Datagram)
    }

    /// A batch-datagram copy: requests queue until [`ObjectPrx::ice_flush_batch_requests`]
    /// sends them together in one datagram.
    pub fn ice_batch_datagram(&self) -> Self {
        self.derive(|r| r.wire.mode = InvocationMode::BatchDatagram)
    }

    /// True for a datagram or batch-datagram proxy.
    pub fn ice_is_datagram(&self) -> bool {
        matches!(self.inner.reference.wire.mode, InvocationMode::Datagram | InvocationMode::BatchDatagram)
    }

    /// A copy that resolves through `locator` when it is indirect (`None`: no locator).
    pub fn ice_locator(&self, locator: Option<&ObjectPrx>) -> Self {
        let locator = locator.map(|l| Box::new(l.reference().clone()));
        self.derive(|r| r.locator = locator)
    }

    /// The locator that resolves this proxy, if any.
    pub fn ice_get_locator(&self) -> Option<ObjectPrx> {
        let r = self.inner.reference.locator.as_deref()?;
        Some(ObjectPrx::new(self.inner.instance.clone(), r.clone()))
    }

    /// A copy whose invocations all go through `router` (`None`: directly).
    pub fn ice_router(&self, router: Option<&ObjectPrx>) -> Self {
        let router = router.map(|l| Box::new(l.reference().clone()));
        self.derive(|r| r.router = router)
    }

    /// The router this proxy's invocations go through, if any.
    pub fn ice_get_router(&self) -> Option<ObjectPrx> {
        let r = self.inner.reference.router.as_deref()?;
        Some(ObjectPrx::new(self.inner.instance.clone(), r.clone()))
    }

    /// A copy whose locator answers stay cached `seconds` (−1: forever, 0: never cached).
    pub fn ice_locator_cache_timeout(&self, seconds: i32) -> Self {
        self.derive(|r| r.locator_cache_timeout = seconds.max(-1))
    }

    /// How long this proxy's locator answers stay cached, in seconds (−1: forever).
    pub fn ice_get_locator_cache_timeout(&self) -> i32 {
        self.inner.reference.locator_cache_timeout
    }

    /// A copy that tries its endpoints in this order.
    pub fn ice_endpoint_selection(&self, selection: crate::reference::EndpointSelection) -> Self {
        self.derive(|r| r.endpoint_selection = selection)
    }

    /// The order in which the proxy tries its endpoints.
    pub fn ice_get_endpoint_selection(&self) -> crate::reference::EndpointSelection {
        self.inner.reference.endpoint_selection
    }

    /// A copy that uses only secure endpoints (ssl, wss), or any.
    pub fn ice_secure(&self, secure: bool) -> Self {
        self.derive(|r| r.wire.secure = secure)
    }

    /// A copy that tries secure endpoints first (or last).
    pub fn ice_prefer_secure(&self, prefer: bool) -> Self {
        self.derive(|r| r.prefer_secure = prefer)
    }

    /// A copy with these endpoints (none: an indirect proxy); an `ice_timeout` given before
    /// applies to them.
    pub fn ice_endpoints(&self, mut endpoints: Vec<crate::encoding::EndpointData>) -> Self {
        self.derive(|r| {
            if let Some(t) = r.timeout {
                for ep in &mut endpoints {
                    locate::set_ip_timeout(ep, t);
                }
            }
            r.wire.endpoints = endpoints;
        })
    }

    /// A copy that is indirect through this adapter id (its endpoints are dropped).
    pub fn ice_adapter_id(&self, adapter_id: &str) -> Self {
        self.derive(|r| {
            r.wire.adapter_id = adapter_id.to_string();
            r.wire.endpoints.clear();
        })
    }

    /// A copy that compresses its requests (or not).
    pub fn ice_compress(&self, compress: bool) -> Self {
        self.derive(|r| r.compress = Some(compress))
    }

    /// A copy whose endpoints have this timeout (milliseconds; −1: infinite): its own
    /// endpoints, and, as for Ice, the endpoints a locator resolves for it when it is indirect.
    pub fn ice_timeout(&self, timeout_ms: i32) -> Self {
        self.derive(|r| {
            r.timeout = Some(timeout_ms);
            for ep in &mut r.wire.endpoints {
                locate::set_ip_timeout(ep, timeout_ms);
            }
        })
    }

    /// The timeout `ice_timeout` gave this proxy (milliseconds), or `None` if it was not
    /// called (Ice's `ice_getTimeout`).
    pub fn ice_get_timeout(&self) -> Option<i32> {
        self.inner.reference.timeout
    }

    /// A copy whose twoway invocations fail with [`Error::InvocationTimeout`] after `timeout`.
    pub fn ice_invocation_timeout(&self, timeout: Option<Duration>) -> Self {
        self.derive(|r| r.invocation_timeout = timeout)
    }

    /// A copy that sends `context` with every request.
    pub fn ice_context(&self, context: Context) -> Self {
        self.derive(|r| r.context = context)
    }

    /// A copy for another facet.
    pub fn ice_facet(&self, facet: &str) -> Self {
        self.derive(|r| r.wire.facet = facet.to_string())
    }

    /// A copy for another identity.
    pub fn ice_identity(&self, identity: Identity) -> Self {
        self.derive(|r| r.wire.identity = identity)
    }

    /// A copy that uses another encoding for parameters.
    pub fn ice_encoding_version(&self, encoding: EncodingVersion) -> Self {
        self.derive(|r| r.wire.encoding = encoding)
    }

    /// A copy bound to one connection (for callbacks over a bidirectional connection).
    pub fn ice_fixed(&self, connection: Connection) -> Self {
        Self::build(
            self.inner.instance.clone(),
            self.inner.reference.clone(),
            Some(connection),
            Arc::new(Mutex::new(BatchQueue::default())),
        )
    }
}
