//! The node's session with the registry, kept as IceGrid's node keeps it: find
//! `<instance>/InternalRegistry-Master` through the `Query` object at `Ice.Default.Locator`'s
//! endpoints, `registerNode` with the node's description, proxy and load, then keep the
//! session alive with load samples at half its timeout. The registry loads the node's
//! servers (`loadServers`); at the first session, servers the node still has from an earlier
//! run but the registry no longer lists are destroyed. A lost session is registered again,
//! every second or two, until the node shuts down.

use std::sync::Arc;
use std::time::Duration;

use floe::{Class, Identity, Proxy};
use floe_icegrid::ice_grid::{
    InternalRegistryPrx, InternalRegistryRegisterNodeError, NodeSessionPrx, QueryPrx, ReplicaObserverPrx,
};
use tokio::sync::watch;

use crate::node::NodeShared;
use crate::platform;

/// How often a node without a session tries to get one.
const RETRY: Duration = Duration::from_millis(1500);

/// Keeps the session until the communicator shuts down; `connected` turns true once the
/// first session has loaded the node's servers.
pub async fn run(node: Arc<NodeShared>, connected: watch::Sender<bool>) {
    let mut first = true;
    let mut last_error = String::new();
    loop {
        if node.communicator.is_shutdown() {
            return;
        }
        match establish(&node, first).await {
            Ok((session, period)) => {
                first = false;
                last_error.clear();
                connected.send_replace(true);
                tracing::info!(target: "floe_node::session", "established session with the registry");
                tokio::select! {
                    reason = keep_alive(&session, period) => {
                        tracing::warn!(target: "floe_node::session", %reason, "lost the session with the registry");
                        node.set_observer(None);
                    }
                    () = node.communicator.wait_for_shutdown() => {
                        let _ = tokio::time::timeout(Duration::from_secs(2), session.destroy()).await;
                        return;
                    }
                }
            }
            Err(e) => {
                if e != last_error {
                    tracing::warn!(target: "floe_node::session", error = %e, "cannot establish a session with the registry");
                    last_error = e;
                }
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = node.communicator.wait_for_shutdown() => return,
        }
    }
}

/// The registry's `InternalRegistry` object, found through its `Query` object.
async fn find_registry(node: &NodeShared) -> Result<InternalRegistryPrx, String> {
    let locator = node.communicator.default_locator().ok_or("property `Ice.Default.Locator' is not set")?;
    let instance = &node.config.instance_name;
    let query = QueryPrx::from_object(locator.ice_identity(Identity::with_category(instance, "Query")));
    let id = Identity::with_category(instance, "InternalRegistry-Master");
    match query.find_object_by_id(&id).await {
        Ok(Some(p)) => Ok(InternalRegistryPrx::from_object(p)),
        Ok(None) => Err(format!("the registry has no object `{instance}/InternalRegistry-Master'")),
        Err(e) => Err(format!("cannot reach the registry: {e}")),
    }
}

async fn establish(node: &Arc<NodeShared>, first: bool) -> Result<(NodeSessionPrx, Duration), String> {
    let registry = find_registry(node).await?;
    let info = platform::node_info(&node.config.name, &node.config.data_dir.to_string_lossy());
    let session = match registry.register_node(Some(&Class::new(info)), Some(&node.proxy), &platform::load()).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err("the registry gave no session".into()),
        Err(e) => {
            return Err(match e.user() {
                Some(InternalRegistryRegisterNodeError::NodeActiveException(_)) => {
                    format!("a node named `{}' is already active with the registry", node.config.name)
                }
                Some(InternalRegistryRegisterNodeError::PermissionDeniedException(p)) => {
                    format!("the registry denied the node's session: {}", p.reason)
                }
                None => "registerNode failed".to_string(),
            })
        }
    };
    let timeout = session.get_timeout().await.map_err(|e| e.to_string())?;
    let period = Duration::from_secs(u64::try_from(timeout / 2).unwrap_or(0).max(1));
    node.set_observer(session.get_observer().await.map_err(|e| e.to_string())?);
    let observer = ReplicaObserverPrx::from_object(node.proxy.as_object().clone());
    session.set_replica_observer(Some(&observer)).await.map_err(|e| e.to_string())?;
    if first {
        // Servers left from an earlier run that the registry does not list are removed.
        let listed = session.get_servers().await.map_err(|e| e.to_string())?;
        for server in node.servers() {
            if !listed.contains(&server.id) {
                node.destroy_server(&server.id).await;
            }
        }
        let servers_dir = node.config.data_dir.join("servers");
        for entry in std::fs::read_dir(&servers_dir).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !listed.contains(&name) && node.server(&name).is_none() {
                tracing::info!(target: "floe_node::session", server = %name, "removing the directory of a server the registry no longer lists");
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    session.load_servers().await.map_err(|e| e.to_string())?;
    Ok((session, period))
}

/// Sends keep-alives until one fails; returns why.
async fn keep_alive(session: &NodeSessionPrx, period: Duration) -> String {
    loop {
        tokio::time::sleep(period).await;
        if let Err(e) = session.keep_alive(&platform::load()).await {
            return e.to_string();
        }
    }
}
