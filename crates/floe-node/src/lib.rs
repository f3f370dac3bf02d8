#![doc = include_str!("../README.md")]

pub mod activator;
pub mod adapter;
pub mod admin_router;
pub mod config;
pub mod context;
pub mod descriptor;
pub mod files;
pub mod node;
pub mod platform;
pub mod servants;
pub mod server;
pub mod session;

use std::sync::Arc;
use std::time::Duration;

use floe::{Communicator, Error, Identity};
use floe_icegrid::ice_grid::{NodeServer, ServerState};
use tokio::sync::watch;

pub use config::NodeConfig;
use node::NodeShared;

/// A running node.
pub struct NodeService {
    shared: Arc<NodeShared>,
    connected: watch::Receiver<bool>,
    session: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for NodeService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeService").field("name", &self.shared.config().name).finish_non_exhaustive()
    }
}

impl NodeService {
    /// Creates the node's directories and its `IceGrid.Node` adapter, serves the node object
    /// and starts the session with the registry. Must be called inside a tokio runtime.
    pub async fn start(communicator: Communicator, config: NodeConfig) -> Result<NodeService, Error> {
        for sub in ["servers", "tmp", "distrib"] {
            let dir = config.data_dir.join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| {
                floe_service::props::property_error("IceGrid.Node.Data", format!("{}: {e}", dir.display()))
            })?;
        }
        if let Some(dir) = &config.output_dir {
            std::fs::create_dir_all(dir).map_err(|e| {
                floe_service::props::property_error("IceGrid.Node.Output", format!("{}: {e}", dir.display()))
            })?;
        }
        let adapter = communicator.create_object_adapter("IceGrid.Node")?;
        let shared = NodeShared::new(config, communicator.clone(), adapter.clone());
        let id: Identity = floe::Proxy::as_object(&shared.proxy).ice_get_identity().clone();
        adapter.add(NodeServer::new(node::NodeServant(shared.clone())), id);
        adapter.add_default_servant(
            Arc::new(admin_router::ServerAdminRouter(shared.clone())),
            &admin_router::category(&shared.config().instance_name),
        );
        adapter.activate().await?;
        let (tx, connected) = watch::channel(false);
        let session = tokio::spawn(session::run(shared.clone(), tx));
        Ok(NodeService { shared, connected, session })
    }

    /// The node's proxy (`<instance>/Node-<name>`).
    pub fn proxy(&self) -> String {
        use floe::Proxy;
        self.shared.proxy.as_object().to_string()
    }

    /// Waits (up to `limit`) until the first session with the registry loaded the servers
    /// and every `always` server is active; false if the limit passed first.
    pub async fn wait_for_servers_ready(&self, limit: Duration) -> bool {
        let mut connected = self.connected.clone();
        let wait = async {
            if connected.wait_for(|c| *c).await.is_err() {
                return false;
            }
            loop {
                let pending = self
                    .shared
                    .servers()
                    .into_iter()
                    .any(|s| s.activation_mode() == "always" && s.is_enabled() && s.state() != ServerState::Active);
                if !pending {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::time::timeout(limit, wait).await.unwrap_or(false)
    }

    /// Waits until the communicator is shut down (by a signal or `Node::shutdown`), then
    /// stops the servers and the node's adapter.
    pub async fn wait(self) {
        self.shared.communicator.wait_for_shutdown().await;
        let _ = tokio::time::timeout(Duration::from_secs(5), self.session).await;
        self.shared.stop_all().await;
        self.shared.adapter.deactivate().await;
    }
}
