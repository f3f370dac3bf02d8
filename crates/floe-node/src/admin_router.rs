//! The node's server admin router (`<instance>-NodeServerAdminRouter/<server id>`): the
//! registry sends there the requests for a server's admin object (what `icegridadmin server
//! properties` calls through `Admin::getServerAdmin`), and the node forwards each one to the
//! admin object the server registered (its `Process` proxy, with the request's facet).

use std::sync::Arc;

use floe::{DispatchFuture, DispatchSlot, Dispatcher, IncomingRequest, Proxy};

use crate::node::NodeShared;

/// The category of the router's identities.
pub fn category(instance_name: &str) -> String {
    format!("{instance_name}-NodeServerAdminRouter")
}

/// The default servant of [`category`] on the node's adapter.
pub struct ServerAdminRouter(pub Arc<NodeShared>);

impl Dispatcher for ServerAdminRouter {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let node = self.0.clone();
        DispatchSlot::new().put(async move {
            let c = &request.current;
            let Some(process) = node.server(&c.id.name).and_then(|s| s.process()) else {
                tracing::debug!(target: "floe_node::admin", server = %c.id.name, "no admin object to route to");
                return c.object_not_exist();
            };
            let mut target = process.as_object().clone();
            // A request for the `Process` facet goes to the proxy as registered.
            if c.facet.as_str() != "Process" {
                target = target.ice_facet(&c.facet);
            }
            floe_service::forward::forward(&request, target).await
        })
    }
}
