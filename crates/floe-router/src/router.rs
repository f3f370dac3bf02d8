//! The router put together: [`RouterCore::new`] makes the state and serves the
//! `Glacier2::Router` object and the forwarding servants on its adapters.

use std::sync::Arc;

use floe::{Communicator, Error};

use crate::config::RouterConfig;
use crate::forward::{ClientForwarder, ServerForwarder};
use crate::servant::RouterServant;
use crate::slice::glacier2;
use crate::state::RouterCore;

impl RouterCore {
    /// Creates the router's adapters (bound, not yet active) and its objects.
    pub fn new(communicator: Communicator, config: RouterConfig) -> Result<Arc<RouterCore>, Error> {
        let core = RouterCore::create(communicator, config)?;
        let router_id = floe::Identity::with_category(&core.config.instance_name, "router");
        core.client_adapter.add(glacier2::RouterServer::new(RouterServant(core.clone())), router_id);
        core.client_adapter.add_default_servant(Arc::new(ClientForwarder(core.clone())), "");
        if let Some(server) = &core.server_adapter {
            server.add_default_servant(Arc::new(ServerForwarder(core.clone())), "");
        }
        Ok(core)
    }
}
