//! The node's sessions with the registry's replicas, kept as IceGrid's node keeps them.
//!
//! Every endpoint of `Ice.Default.Locator` is taken as one replica: the node asks it for
//! its local registry (`IceGrid::Locator::getLocalRegistry`: `<instance>/Registry` names
//! the master, `<instance>/Registry-<name>` replica `<name>`), finds
//! `<instance>/InternalRegistry-<name>` through that replica's `Query` object, and calls
//! `registerNode` with the node's description, proxy and load. It then keeps the session
//! alive with load samples at half its timeout. Each registry loads the node's servers
//! (`loadServers`); loading the same descriptor twice changes nothing. At the first session
//! with the first replica listed, servers (and server directories) left from an earlier run
//! that the registry no longer lists are removed. A lost session is registered again every
//! 1.5 s until the node shuts down; sessions with the other replicas go on meanwhile.

use std::sync::Arc;
use std::time::Duration;

use floe::{Class, Identity, ObjectPrx, Proxy};
use floe_icegrid::ice_grid::{
    InternalRegistryPrx, InternalRegistryRegisterNodeError, LocatorPrx, NodeSessionPrx, QueryPrx, ReplicaObserverPrx,
};
use tokio::sync::watch;

use crate::node::NodeShared;
use crate::platform;

/// How often a node without a session tries to get one.
const RETRY: Duration = Duration::from_millis(1500);

/// Keeps a session with every replica until the communicator shuts down; `connected` turns
/// true once a first session has loaded the node's servers.
pub async fn run(node: Arc<NodeShared>, connected: watch::Sender<bool>) {
    let Some(locator) = node.communicator.default_locator() else {
        tracing::error!(target: "floe_node::session", "property `Ice.Default.Locator' is not set");
        return;
    };
    let endpoints = locator.reference().wire.endpoints.clone();
    let replicas: Vec<ObjectPrx> = if endpoints.len() <= 1 {
        vec![locator]
    } else {
        endpoints.into_iter().map(|e| locator.ice_endpoints(vec![e])).collect()
    };
    let connected = Arc::new(connected);
    let tasks: Vec<_> = replicas
        .into_iter()
        .enumerate()
        .map(|(index, replica)| tokio::spawn(keep_session(node.clone(), index, replica, connected.clone())))
        .collect();
    for t in tasks {
        let _ = t.await;
    }
}

/// The session with the replica at `locator` (session number `index`).
async fn keep_session(node: Arc<NodeShared>, index: usize, locator: ObjectPrx, connected: Arc<watch::Sender<bool>>) {
    let mut first = true;
    let mut last_error = String::new();
    loop {
        if node.communicator.is_shutdown() {
            return;
        }
        match establish(&node, index, &locator, first && index == 0).await {
            Ok((session, period, replica)) => {
                first = false;
                last_error.clear();
                connected.send_replace(true);
                tracing::info!(target: "floe_node::session", %replica, "established session with the registry");
                tokio::select! {
                    reason = keep_alive(&session, period) => {
                        tracing::warn!(target: "floe_node::session", %replica, %reason, "lost the session with the registry");
                        node.set_observer(index, None);
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

/// The replica's name: from the identity of its local registry object.
async fn replica_name(locator: &ObjectPrx) -> String {
    let locator = LocatorPrx::from_object(locator.clone());
    let local = tokio::time::timeout(Duration::from_secs(10), locator.get_local_registry());
    match local.await {
        Ok(Ok(Some(r))) => match r.as_object().ice_get_identity().name.strip_prefix("Registry-") {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => "Master".to_string(),
        },
        _ => "Master".to_string(),
    }
}

/// The replica's `InternalRegistry` object, found through its `Query` object.
async fn find_registry(node: &NodeShared, locator: &ObjectPrx) -> Result<(InternalRegistryPrx, String), String> {
    let instance = &node.config.instance_name;
    let replica = replica_name(locator).await;
    let query = QueryPrx::from_object(locator.ice_identity(Identity::with_category(instance, "Query")));
    let id = Identity::with_category(instance, format!("InternalRegistry-{replica}"));
    match query.find_object_by_id(&id).await {
        Ok(Some(p)) => Ok((InternalRegistryPrx::from_object(p), replica)),
        Ok(None) => Err(format!("the registry has no object `{instance}/InternalRegistry-{replica}'")),
        Err(e) => Err(format!("cannot reach the registry at {locator}: {e}")),
    }
}

async fn establish(
    node: &Arc<NodeShared>,
    index: usize,
    locator: &ObjectPrx,
    check_consistency: bool,
) -> Result<(NodeSessionPrx, Duration, String), String> {
    let (registry, replica) = find_registry(node, locator).await?;
    let info = platform::node_info(&node.config.name, &node.config.data_dir.to_string_lossy());
    let session = match registry.register_node(Some(&Class::new(info)), Some(&node.proxy), &platform::load()).await {
        Ok(Some(s)) => s,
        Ok(None) => return Err("the registry gave no session".into()),
        Err(e) => {
            return Err(match e.user() {
                Some(InternalRegistryRegisterNodeError::NodeActiveException(_)) => {
                    format!("a node named `{}' is already active with replica `{replica}'", node.config.name)
                }
                Some(InternalRegistryRegisterNodeError::PermissionDeniedException(p)) => {
                    format!("replica `{replica}' denied the node's session: {}", p.reason)
                }
                None => format!("registerNode with replica `{replica}' failed"),
            })
        }
    };
    let timeout = session.get_timeout().await.map_err(|e| e.to_string())?;
    let period = Duration::from_secs(u64::try_from(timeout / 2).unwrap_or(0).max(1));
    node.set_observer(index, session.get_observer().await.map_err(|e| e.to_string())?);
    let observer = ReplicaObserverPrx::from_object(node.proxy.as_object().clone());
    session.set_replica_observer(Some(&observer)).await.map_err(|e| e.to_string())?;
    if check_consistency {
        remove_unlisted(node, &session).await?;
    }
    session.load_servers().await.map_err(|e| e.to_string())?;
    Ok((session, period, replica))
}

/// Removes the servers, and the server directories, that the registry does not list.
async fn remove_unlisted(node: &Arc<NodeShared>, session: &NodeSessionPrx) -> Result<(), String> {
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
    Ok(())
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
