//! The node's sessions with the registry's replicas, kept as IceGrid's node keeps them.
//!
//! The node looks for replicas through the `Query` object at every endpoint of
//! `Ice.Default.Locator`: the replicas' `IceGrid::InternalRegistry` objects (well-known objects
//! of that type: `<instance>/InternalRegistry-<replica name>`), and, should a registry list
//! none, the one its local registry names (`Locator::getLocalRegistry`: `<instance>/Registry`
//! is the master's, `<instance>/Registry-<name>` replica `<name>`'s). With each replica found
//! it keeps a session: `registerNode` with the node's description, proxy and load, then
//! keep-alives with load samples at half the session's timeout. Each registry loads the
//! node's servers (`loadServers`); loading the same descriptor twice changes nothing. At the
//! node's first session, servers (and server directories) left from an earlier run that the
//! registry no longer lists are removed. A lost session is registered again every 1.5 s,
//! replicas are looked for again as often while one is missing, and sessions with the other
//! replicas go on meanwhile.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::{Class, Identity, ObjectPrx, Proxy};
use floe_icegrid::ice_grid::{
    InternalRegistryPrx, InternalRegistryRegisterNodeError, LocatorPrx, NodeSessionPrx, QueryPrx, ReplicaObserverPrx,
};
use tokio::sync::watch;

use crate::node::NodeShared;
use crate::platform;

/// How often a node without a session tries to get one, and looks for replicas.
const RETRY: Duration = Duration::from_millis(1500);
/// How long a lookup or a registration may take.
const CALL_LIMIT: Duration = Duration::from_secs(10);

struct Sessions {
    node: Arc<NodeShared>,
    connected: watch::Sender<bool>,
    /// Replicas (by identity name) whose session task runs.
    running: Mutex<BTreeSet<String>>,
    /// Whether a first session checked the node's servers against the registry's list.
    checked: AtomicBool,
}

/// Keeps a session with every replica until the communicator shuts down; `connected` turns
/// true once a first session has loaded the node's servers.
pub async fn run(node: Arc<NodeShared>, connected: watch::Sender<bool>) {
    let Some(locator) = node.communicator.default_locator() else {
        tracing::error!(target: "floe_node::session", "property `Ice.Default.Locator' is not set");
        return;
    };
    let endpoints = locator.reference().wire.endpoints.clone();
    let entries: Vec<ObjectPrx> = if endpoints.len() <= 1 {
        vec![locator]
    } else {
        endpoints.into_iter().map(|e| locator.ice_endpoints(vec![e])).collect()
    };
    let sessions = Arc::new(Sessions {
        node: node.clone(),
        connected,
        running: Mutex::new(BTreeSet::new()),
        checked: AtomicBool::new(false),
    });
    let mut index = 0;
    let mut last_error = String::new();
    loop {
        let mut found = Vec::new();
        let mut errors = Vec::new();
        for entry in &entries {
            match find_replicas(&node, entry).await {
                Ok(mut r) => found.append(&mut r),
                Err(e) => errors.push(e),
            }
        }
        if found.is_empty() {
            let e = errors.join("; ");
            if e != last_error {
                tracing::warn!(target: "floe_node::session", error = %e, "cannot find the registry");
                last_error = e;
            }
        }
        for registry in found {
            let name = registry.as_object().ice_get_identity().name.to_string();
            if sessions.running.lock().unwrap_or_else(|p| p.into_inner()).insert(name.clone()) {
                index += 1;
                tokio::spawn(keep_session(sessions.clone(), index, name, registry));
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = node.communicator.wait_for_shutdown() => return,
        }
    }
}

/// The `InternalRegistry` objects the registry at `locator` knows of.
async fn find_replicas(node: &NodeShared, locator: &ObjectPrx) -> Result<Vec<InternalRegistryPrx>, String> {
    let instance = &node.config().instance_name;
    let query = QueryPrx::from_object(locator.ice_identity(Identity::with_category(instance, "Query")));
    let all = tokio::time::timeout(CALL_LIMIT, query.find_all_objects_by_type("::IceGrid::InternalRegistry"))
        .await
        .map_err(|_| format!("{locator}: no answer"))?
        .map_err(|e| format!("cannot reach the registry at {locator}: {e}"))?;
    let found: Vec<InternalRegistryPrx> = all.into_iter().flatten().map(InternalRegistryPrx::from_object).collect();
    if !found.is_empty() {
        return Ok(found);
    }
    let id = Identity::with_category(instance, format!("InternalRegistry-{}", replica_name(locator).await));
    match tokio::time::timeout(CALL_LIMIT, query.find_object_by_id(&id)).await {
        Ok(Ok(Some(p))) => Ok(vec![InternalRegistryPrx::from_object(p)]),
        Ok(Ok(None)) => Err(format!("the registry at {locator} has no object `{instance}/{}'", id.name)),
        Ok(Err(e)) => Err(format!("cannot reach the registry at {locator}: {e}")),
        Err(_) => Err(format!("{locator}: no answer")),
    }
}

/// The replica's name: from the identity of its local registry object.
async fn replica_name(locator: &ObjectPrx) -> String {
    let locator = LocatorPrx::from_object(locator.clone());
    match tokio::time::timeout(CALL_LIMIT, locator.get_local_registry()).await {
        Ok(Ok(Some(r))) => match r.as_object().ice_get_identity().name.strip_prefix("Registry-") {
            Some(name) if !name.is_empty() => name.to_string(),
            _ => "Master".to_string(),
        },
        _ => "Master".to_string(),
    }
}

/// The session with one replica (number `index`), registered again when it is lost; the
/// task ends when a registration fails, so that the next lookup finds the replica afresh
/// (a restarted replica's internal endpoints may have changed).
async fn keep_session(sessions: Arc<Sessions>, index: usize, name: String, registry: InternalRegistryPrx) {
    let node = &sessions.node;
    let replica = name.strip_prefix("InternalRegistry-").unwrap_or(&name).to_string();
    while !node.communicator.is_shutdown() {
        match establish(&sessions, index, &registry, &replica).await {
            Ok((session, period)) => {
                sessions.connected.send_replace(true);
                tracing::info!(target: "floe_node::session", %replica, "established session with the registry");
                tokio::select! {
                    reason = keep_alive(&session, period) => {
                        tracing::warn!(target: "floe_node::session", %replica, %reason, "lost the session with the registry");
                        node.context.set_observer(index, None);
                    }
                    () = node.communicator.wait_for_shutdown() => {
                        let _ = tokio::time::timeout(Duration::from_secs(2), session.destroy()).await;
                        return;
                    }
                }
            }
            Err(e) => {
                tracing::debug!(target: "floe_node::session", %replica, error = %e, "cannot establish a session");
                break;
            }
        }
        tokio::select! {
            () = tokio::time::sleep(RETRY) => {}
            () = node.communicator.wait_for_shutdown() => return,
        }
    }
    sessions.running.lock().unwrap_or_else(|p| p.into_inner()).remove(&name);
}

async fn establish(
    sessions: &Sessions,
    index: usize,
    registry: &InternalRegistryPrx,
    replica: &str,
) -> Result<(NodeSessionPrx, Duration), String> {
    let node = &sessions.node;
    let info = platform::node_info(&node.config().name, &node.config().data_dir.to_string_lossy());
    let registered = tokio::time::timeout(
        CALL_LIMIT,
        registry.register_node(Some(&Class::new(info)), Some(&node.proxy), &platform::load()),
    )
    .await
    .map_err(|_| format!("replica `{replica}' did not answer"))?;
    let session = match registered {
        Ok(Some(s)) => s,
        Ok(None) => return Err("the registry gave no session".into()),
        Err(e) => {
            return Err(match e.user() {
                Some(InternalRegistryRegisterNodeError::NodeActiveException(_)) => {
                    format!("a node named `{}' is already active with replica `{replica}'", node.config().name)
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
    node.context.set_observer(index, session.get_observer().await.map_err(|e| e.to_string())?);
    let observer = ReplicaObserverPrx::from_object(node.proxy.as_object().clone());
    session.set_replica_observer(Some(&observer)).await.map_err(|e| e.to_string())?;
    if !sessions.checked.swap(true, Ordering::SeqCst) {
        remove_unlisted(node, &session).await?;
    }
    session.load_servers().await.map_err(|e| e.to_string())?;
    Ok((session, period))
}

/// Removes the servers, and the server directories, that the registry does not list.
async fn remove_unlisted(node: &Arc<NodeShared>, session: &NodeSessionPrx) -> Result<(), String> {
    let listed = session.get_servers().await.map_err(|e| e.to_string())?;
    for server in node.servers() {
        if !listed.contains(&server.id) {
            node.destroy_server(&server.id).await;
        }
    }
    let servers_dir = node.config().data_dir.join("servers");
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
