//! `IceGrid::Adapter` objects (`<instance>-ServerAdapter/<server>-<adapter id>`): one per
//! object adapter of a loaded server. The registry asks them for the adapter's endpoints
//! (`getDirectProxy`), asks them to start the server when a client needs it (`activate`), and
//! tells them what the server registered (`setDirectProxy`).

use std::sync::Arc;
use std::time::Duration;

use floe::{Current, Error, ObjectPrx};
use floe_icegrid::ice_grid::{Adapter, AdapterActiveException, AdapterNotActiveException, ServerState};

use crate::server::AdapterEntry;

/// The servant of an [`AdapterEntry`].
pub struct AdapterServant(pub Arc<AdapterEntry>);

impl Adapter for AdapterServant {
    async fn activate(&self, current: &Current) -> floe::Result<Option<ObjectPrx>> {
        let adapter = &self.0;
        let server = adapter.server(current)?;
        if let Some(p) = adapter.direct_proxy().filter(|_| server.is_enabled()) {
            return Ok(Some(p));
        }
        if server.state() == ServerState::Deactivating {
            // A request that comes while the server stops starts it again once it stopped.
            let mut state = server.watch_state();
            let limit = server.deactivation_timeout() + Duration::from_secs(5);
            let _ = tokio::time::timeout(limit, state.wait_for(|s| *s != ServerState::Deactivating)).await;
        }
        if !server.is_adapter_activatable(&adapter.id) {
            return Ok(None);
        }
        let mut direct = adapter.subscribe();
        let mut state = server.watch_state();
        tracing::debug!(target: "floe_node::adapter", server = %server.id, adapter = %adapter.id, "activating on demand");
        if let Err(reason) = server.start_on_demand() {
            tracing::warn!(target: "floe_node::adapter", server = %server.id, %reason, "activation failed");
            return Ok(None);
        }
        // Until the adapter registers, the activation ends (the server is active without
        // it, or it stopped), or the activation timeout passes (with a second's margin for
        // the server's own timer to fire first).
        let limit = server.activation_timeout() + Duration::from_secs(1);
        let wait = async {
            loop {
                if let Some(p) = direct.borrow_and_update().clone() {
                    return Some(p);
                }
                let s = *state.borrow_and_update();
                if matches!(s, ServerState::Active | ServerState::ActivationTimedOut | ServerState::Inactive)
                    && !server.is_activating()
                {
                    return adapter.direct_proxy();
                }
                tokio::select! {
                    r = direct.changed() => if r.is_err() { return None },
                    r = state.changed() => if r.is_err() { return None },
                }
            }
        };
        Ok(tokio::time::timeout(limit, wait).await.unwrap_or(None))
    }

    async fn get_direct_proxy(&self, current: &Current) -> floe::Result<Option<ObjectPrx>> {
        let server = self.0.server(current)?;
        match self.0.direct_proxy() {
            Some(p) if server.is_enabled() => Ok(Some(p)),
            _ => Err(Error::user(AdapterNotActiveException {
                activatable: server.is_enabled() && server.is_adapter_activatable(&self.0.id),
            })),
        }
    }

    async fn set_direct_proxy(&self, proxy: Option<ObjectPrx>, current: &Current) -> floe::Result<()> {
        let server = self.0.server(current)?;
        if proxy.is_some()
            && self.0.direct_proxy().is_some()
            && !server.context.config.allow_endpoints_override
            && server.state() == ServerState::Active
        {
            return Err(Error::user(AdapterActiveException {}));
        }
        let registered = proxy.is_some();
        self.0.set_direct_proxy(proxy);
        tracing::debug!(target: "floe_node::adapter", server = %server.id, adapter = %self.0.id, registered, "setDirectProxy");
        if registered {
            server.adapter_activated(&self.0.id);
        }
        server.observe_adapter(&self.0);
        Ok(())
    }
}
