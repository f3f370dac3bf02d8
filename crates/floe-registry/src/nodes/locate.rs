//! Locating the adapters of servers that nodes run, as IceGrid does: the node's
//! `IceGrid::Adapter` object knows the adapter's endpoints (`getDirectProxy`); an inactive
//! adapter of an on-demand server is activated (`activate`, which the node answers once the
//! server has registered its endpoints, within the server's activation timeout). A server's
//! own registrations (`setAdapterDirectProxy`, `setServerProcessProxy`) go to its node.
//!
//! Adapters of servers whose node has no session keep the behaviour of dynamically
//! registered ones (their registration in the database).

use floe::{CallError, Error, Identity, ObjectPrx};

use super::servers::{ensure, Loaded};
use super::{timed, NODE_CALL_TIMEOUT};
use crate::shared::Shared;
use crate::slice::ice::{AdapterAlreadyActiveException, AdapterNotFoundException, ProcessPrx, ServerNotFoundException};
use crate::slice::ice_grid::{AdapterGetDirectProxyError, AdapterPrx, AdapterSetDirectProxyError};

/// The server of adapter `id` when a node with a session runs it.
fn node_server(shared: &Shared, id: &str) -> Option<String> {
    let d = shared.deployment();
    let server = &d.adapters.get(id)?.server;
    let node = &d.servers.get(server)?.node;
    shared.nodes.live(node).map(|_| server.clone())
}

/// What a node's adapter answered.
enum Direct {
    Active(ObjectPrx),
    Inactive { activatable: bool },
    Failed,
}

async fn direct(adapter: &AdapterPrx) -> Direct {
    match timed(adapter, NODE_CALL_TIMEOUT).get_direct_proxy().await {
        Ok(Some(p)) => Direct::Active(p),
        Ok(None) => Direct::Inactive { activatable: false },
        Err(CallError::User(AdapterGetDirectProxyError::AdapterNotActiveException(e))) => {
            Direct::Inactive { activatable: e.activatable }
        }
        Err(CallError::Local(e)) => {
            tracing::debug!(target: "floe_registry::locator", "getDirectProxy failed: {e}");
            Direct::Failed
        }
    }
}

/// Activates an adapter on its node; its endpoints once the server registered them.
async fn activate(l: &Loaded, id: &str, adapter: &AdapterPrx) -> Option<ObjectPrx> {
    let timeout = l.activation_timeout + l.deactivation_timeout;
    tracing::debug!(target: "floe_registry::locator", adapter = id, node = l.node, "activating");
    match timed(adapter, timeout).activate().await {
        Ok(p) => p,
        Err(e) => {
            tracing::info!(target: "floe_registry::locator", adapter = id, node = l.node, "activation failed: {e}");
            None
        }
    }
}

/// A member of a resolution: its adapter on the node (when a node runs it) and what it
/// answered.
struct Member {
    id: String,
    node: Option<(Loaded, AdapterPrx)>,
    state: Direct,
}

async fn member(shared: &Shared, id: &str) -> Member {
    if let Some(server) = node_server(shared, id) {
        if let Ok(l) = ensure(shared, &server).await {
            if let Some(a) = l.adapters.get(id).cloned() {
                let state = direct(&a).await;
                return Member { id: id.to_string(), node: Some((l, a)), state };
            }
        }
        return Member { id: id.to_string(), node: None, state: Direct::Failed };
    }
    let state = match shared.db.adapter(id) {
        Some(e) => Direct::Active(e.proxy),
        None => Direct::Inactive { activatable: false },
    };
    Member { id: id.to_string(), node: None, state }
}

/// `findAdapterById` for an adapter or replica group that involves servers run by nodes
/// with a session; None when none is involved (the caller resolves it as a registration).
pub(crate) async fn find_adapter(shared: &Shared, id: &str) -> Option<Option<ObjectPrx>> {
    if node_server(shared, id).is_some() {
        let m = member(shared, id).await;
        return Some(match m.state {
            Direct::Active(p) => Some(p),
            Direct::Inactive { activatable: true } => match &m.node {
                Some((l, a)) => activate(l, id, a).await,
                None => None,
            },
            _ => None,
        });
    }
    let d = shared.deployment();
    let group = d.groups.get(id)?.config.clone();
    let mut ids: Vec<String> =
        d.adapters.iter().filter(|(_, a)| a.replica_group == id).map(|(k, _)| k.clone()).collect();
    if !ids.iter().any(|a| node_server(shared, a).is_some()) {
        return None;
    }
    for (a, _) in shared.db.group_members(id) {
        if !ids.contains(&a) {
            ids.push(a);
        }
    }
    shared.order_members(id, &group, &mut ids, |a| a.as_str(), |a| shared.member_load(&group, a));
    let wanted = if group.n_replicas > 0 { group.n_replicas } else { ids.len() };
    let mut members = Vec::with_capacity(ids.len());
    for a in &ids {
        members.push(member(shared, a).await);
    }
    // As IceGrid does: members are taken in order; an inactive on-demand member met before
    // enough active ones are found is activated (without waiting for it when enough others
    // are active); when too few are active, the answer waits for the activations.
    let mut proxies: Vec<ObjectPrx> = Vec::new();
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let mut activating = 0;
    for m in members {
        if proxies.len() >= wanted {
            break;
        }
        match m.state {
            Direct::Active(p) => proxies.push(p),
            Direct::Inactive { activatable: true } => {
                if let Some((l, a)) = m.node {
                    activating += 1;
                    let tx = tx.clone();
                    tokio::spawn(async move {
                        let _ = tx.send(activate(&l, &m.id, &a).await);
                    });
                }
            }
            _ => {}
        }
    }
    drop(tx);
    while proxies.len() < wanted && activating > 0 {
        match rx.recv().await {
            Some(answer) => {
                activating -= 1;
                proxies.extend(answer);
            }
            None => break,
        }
    }
    let first = proxies.first()?.clone();
    let endpoints = proxies.iter().flat_map(|p| p.reference().wire.endpoints.clone()).collect();
    Some(Some(first.ice_identity(Identity::new("dummy")).ice_facet("").ice_endpoints(endpoints)))
}

/// The endpoints of adapter `id` as its node knows them, without activating it (what
/// `adapter endpoints` shows); None when no node with a session runs its server.
pub(crate) async fn current_proxy(shared: &Shared, id: &str) -> Option<Option<ObjectPrx>> {
    node_server(shared, id)?;
    Some(match member(shared, id).await.state {
        Direct::Active(p) => Some(p),
        _ => None,
    })
}

/// The loaded server `server`, without waiting for a load in progress when it was loaded
/// before.
async fn loaded(shared: &Shared, server: &str) -> Option<Loaded> {
    if let Some(l) = shared.nodes.servers.peek(server) {
        if shared.nodes.live(&l.node).is_some() {
            return Some(l);
        }
    }
    ensure(shared, server).await.ok()
}

/// `setAdapterDirectProxy` from a server that a node with a session runs: given to the
/// node's adapter (which is how the node learns the server is active). None when no node
/// runs the adapter's server.
pub(crate) async fn set_direct_proxy(shared: &Shared, id: &str, proxy: Option<&ObjectPrx>) -> Option<floe::Result<()>> {
    let server = node_server(shared, id)?;
    let not_found = || Error::user(AdapterNotFoundException {});
    let Some(l) = loaded(shared, &server).await else { return Some(Err(not_found())) };
    let Some(adapter) = l.adapters.get(id) else { return Some(Err(not_found())) };
    Some(match timed(adapter, NODE_CALL_TIMEOUT).set_direct_proxy(proxy).await {
        Ok(()) => Ok(()),
        Err(CallError::User(AdapterSetDirectProxyError::AdapterActiveException(_))) => {
            Err(Error::user(AdapterAlreadyActiveException {}))
        }
        Err(CallError::Local(e)) => {
            tracing::info!(target: "floe_registry::locator", adapter = id, node = l.node, "setDirectProxy failed: {e}");
            Err(not_found())
        }
    })
}

/// `setServerProcessProxy` from a server that a node with a session runs: given to the
/// node's server object. None when no node runs it.
pub(crate) async fn set_process(shared: &Shared, id: &str, proxy: Option<&ProcessPrx>) -> Option<floe::Result<()>> {
    let node = shared.deployment().servers.get(id)?.node.clone();
    shared.nodes.live(&node)?;
    let Some(l) = loaded(shared, id).await else { return Some(Err(Error::user(ServerNotFoundException {}))) };
    Some(match timed(&l.server, NODE_CALL_TIMEOUT).set_process(proxy).await {
        Ok(()) => Ok(()),
        Err(e) => {
            tracing::info!(target: "floe_registry::locator", server = id, node = l.node, "setProcess failed: {e}");
            Err(Error::user(ServerNotFoundException {}))
        }
    })
}
