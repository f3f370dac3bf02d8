//! Servers on nodes: each deployed server whose node has a session is loaded on it
//! (`Node::loadServer` with its `InternalServerDescriptor`), which gives the registry the
//! server's `IceGrid::Server` proxy and its adapters' `IceGrid::Adapter` proxies. A server is
//! loaded again when its descriptor changes or its node registers anew, destroyed
//! (`Node::destroyServer`) when its application no longer deploys it, and the admin calls on
//! servers go through the recorded proxies.

use std::time::Duration;

use floe::{CallError, Error};

use super::{descriptor, timed, unreachable, NodeSession, NODE_CALL_TIMEOUT};
use crate::deploy::DeployedServer;
use crate::shared::Shared;
use crate::slice::ice_grid::{
    DeploymentException, NodeLoadServerError, NodeLoadServerWithoutRestartError, ServerNotExistException, ServerPrx,
};

pub(crate) use crate::node_table::Loaded;

fn not_exist(id: &str) -> Error {
    Error::user(ServerNotExistException { id: id.to_string() })
}

/// How long `loadServer` may take: the node may first have to stop the server's previous
/// instance (within its deactivation timeout).
fn load_timeout(previous: Option<&Loaded>) -> Duration {
    previous.map(|l| l.deactivation_timeout).unwrap_or(NODE_CALL_TIMEOUT)
}

/// How long an admin call waits for its server to be loaded.
const LOAD_WAIT: Duration = Duration::from_secs(15);

/// The server `id` loaded on its node (loading it first if needed): its `Server` proxy and
/// adapters. `ServerNotExistException` if no application deploys it, `NodeUnreachableException`
/// if its node has no session or does not answer, `DeploymentException` if the node refuses it.
pub(crate) async fn ensure(shared: &Shared, id: &str) -> floe::Result<Loaded> {
    load(shared, id, false).await
}

/// The id of the session a `session` server runs for: the session that holds it, if any
/// ("" for other servers).
pub(crate) fn session_id(shared: &Shared, s: &DeployedServer) -> String {
    let d = s.descriptor.read();
    match d.activation.as_str() {
        "session" => shared.allocations.server_holder(&d.id).map(|h| h.user).unwrap_or_default(),
        _ => String::new(),
    }
}

/// [`ensure`]; with `no_restart`, a server loaded before is given its new descriptor with
/// `loadServerWithoutRestart` (the node refuses it if the server would have to restart).
pub(crate) async fn load(shared: &Shared, id: &str, no_restart: bool) -> floe::Result<Loaded> {
    let slot = shared.nodes.servers.slot(id);
    let mut guard = slot.lock().await;
    // Read under the server's lock, so that the last load to run is the one made from the
    // latest deployment and allocation.
    let d = shared.deployment();
    let s = d.servers.get(id).ok_or_else(|| not_exist(id))?;
    let session = shared.nodes.live(&s.node).ok_or_else(|| unreachable(&s.node, "the node is not active"))?;
    let desc = descriptor::build(s, &session.info, &session_id(shared, s));
    let digest = descriptor::digest(&desc);
    if let Some(l) = &*guard {
        if l.session == session.serial && l.digest == digest {
            return Ok(l.clone());
        }
    }
    let previous = guard.take();
    if let Some(old) = &previous {
        if old.node != s.node {
            shared.nodes.servers.set_latest(id, None);
            destroy_loaded(shared, id, old, false).await;
        }
    }
    let timeout = load_timeout(previous.as_ref());
    tracing::debug!(target: "floe_registry::node", server = id, node = s.node, "loading server");
    let node = timed(&session.node, timeout);
    let replica = &shared.config.replica_name;
    let answer = if no_restart && previous.as_ref().is_some_and(|p| p.node == s.node) {
        node.load_server_without_restart(Some(&desc), replica).await.map_err(|e| match e {
            CallError::User(NodeLoadServerWithoutRestartError::DeploymentException(e)) => Ok(e.reason),
            CallError::Local(e) => Err(e),
        })
    } else {
        node.load_server(Some(&desc), replica).await.map_err(|e| match e {
            CallError::User(NodeLoadServerError::DeploymentException(e)) => Ok(e.reason),
            CallError::Local(e) => Err(e),
        })
    };
    let loaded = match loaded(shared, id, &session, answer) {
        Ok(l) => l,
        Err(e) => {
            // Still what the node runs, as far as the registry knows.
            *guard = previous.filter(|p| p.node == s.node);
            return Err(e);
        }
    };
    let loaded = Loaded { uuid: s.uuid.clone(), revision: s.revision, digest, ..loaded };
    tracing::info!(target: "floe_registry::node", server = id, node = s.node, "server loaded");
    shared.nodes.servers.set_latest(id, Some(&loaded));
    *guard = Some(loaded.clone());
    Ok(loaded)
}

/// What the node answered to a load: the server, or the reason of its `DeploymentException`,
/// or the local error.
type LoadAnswer = Result<(Option<ServerPrx>, crate::slice::ice_grid::AdapterPrxDict, i32, i32), Result<String, Error>>;

fn loaded(shared: &Shared, id: &str, session: &NodeSession, answer: LoadAnswer) -> floe::Result<Loaded> {
    let node = session.name();
    match answer {
        Ok((Some(server), adapters, at, dt)) => {
            let extra = i64::from(shared.config.node_session_timeout.max(1));
            let secs = |t: i32| Duration::from_secs((i64::from(t).max(0) + extra) as u64);
            Ok(Loaded {
                session: session.serial,
                node: node.to_string(),
                uuid: String::new(),
                revision: 0,
                digest: Vec::new(),
                server,
                adapters: adapters.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect(),
                activation_timeout: secs(at),
                deactivation_timeout: secs(dt),
            })
        }
        Ok((None, ..)) => Err(unreachable(node, format!("the node gave no proxy for server `{id}'"))),
        Err(Ok(reason)) => {
            tracing::warn!(target: "floe_registry::node", server = id, node, "couldn't load: {reason}");
            Err(Error::user(DeploymentException {
                reason: format!("couldn't load `{id}' on node `{node}':\n{reason}"),
            }))
        }
        Err(Err(e)) => {
            tracing::warn!(target: "floe_registry::node", server = id, node, "couldn't load: {e}");
            Err(unreachable(node, e.to_string()))
        }
    }
}

/// Destroys a loaded server on its node (if the node is up); failures are logged.
async fn destroy_loaded(shared: &Shared, id: &str, l: &Loaded, no_restart: bool) {
    let Some(session) = shared.nodes.live(&l.node) else { return };
    let timeout = l.deactivation_timeout + Duration::from_secs(5);
    let replica = &shared.config.replica_name;
    let node = timed(&session.node, timeout);
    let result = if no_restart {
        node.destroy_server_without_restart(id, &l.uuid, l.revision, replica).await.map_err(|e| format!("{e:?}"))
    } else {
        node.destroy_server(id, &l.uuid, l.revision, replica).await.map_err(|e| format!("{e:?}"))
    };
    match result {
        Ok(()) => tracing::info!(target: "floe_registry::node", server = id, node = l.node, "server destroyed"),
        Err(e) => tracing::warn!(target: "floe_registry::node", server = id, node = l.node, "couldn't destroy: {e}"),
    }
}

/// Brings the nodes in line with a change of applications: `changed` are the servers whose
/// descriptors changed, appeared or disappeared. Each is loaded again on its node (if it
/// is up) or destroyed there; failures are logged.
pub(crate) async fn sync(shared: &Shared, changed: &[String], no_restart: bool) {
    let d = shared.deployment();
    for id in changed {
        if d.servers.get(id).is_some_and(|s| shared.nodes.live(&s.node).is_some()) {
            if let Err(e) = load(shared, id, no_restart).await {
                tracing::warn!(target: "floe_registry::node", server = id, "couldn't update: {e}");
            }
        } else if !d.servers.contains_key(id) {
            let slot = shared.nodes.servers.slot(id);
            let taken = slot.lock().await.take();
            shared.nodes.servers.set_latest(id, None);
            if let Some(l) = taken {
                destroy_loaded(shared, id, &l, no_restart).await;
            }
        }
    }
}

/// Loads every server deployed on node `node` (after `NodeSession::loadServers`).
pub(crate) async fn load_node(shared: &Shared, node: &str) {
    let d = shared.deployment();
    for (id, _) in d.servers.iter().filter(|(_, s)| s.node == node) {
        if let Err(e) = ensure(shared, id).await {
            tracing::warn!(target: "floe_registry::node", server = id, node, "couldn't load: {e}");
        }
    }
}

/// What a failed call on a server answers, as IceGrid's admin does: its user exceptions as
/// they are, `ServerNotExistException` if the node no longer has it, else
/// `NodeUnreachableException`.
fn server_error(id: &str, l: &Loaded, e: Error) -> Error {
    match e {
        Error::UserException(_) => e,
        Error::ObjectNotExist { .. } => not_exist(id),
        e => unreachable(&l.node, e.to_string()),
    }
}

/// Runs `call` on server `id`'s proxy (with `timeout`, or the short default), mapping errors.
pub(crate) async fn call<T, F, Fut>(shared: &Shared, id: &str, timeout: Option<Timeout>, call: F) -> floe::Result<T>
where
    F: FnOnce(ServerPrx) -> Fut,
    Fut: std::future::Future<Output = floe::Result<T>>,
{
    let l = match tokio::time::timeout(LOAD_WAIT, ensure(shared, id)).await {
        Ok(l) => l?,
        Err(_) => return Err(Error::user(DeploymentException { reason: "server is being updated".into() })),
    };
    let t = match timeout {
        None => NODE_CALL_TIMEOUT,
        Some(Timeout::Activation) => l.activation_timeout,
        Some(Timeout::Deactivation) => l.deactivation_timeout,
    };
    call(timed(&l.server, t)).await.map_err(|e| server_error(id, &l, e))
}

/// Which of a loaded server's timeouts a call uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Timeout {
    Activation,
    Deactivation,
}
