//! IceGrid nodes: the registry side of IceGrid's internal protocol (`Internal.ice`), through
//! which ZeroC's `icegridnode` (or any node speaking it) registers and runs the servers that
//! applications deploy on it.
//!
//! - [`session`]: `<InstanceName>/InternalRegistry-<ReplicaName>` (`registerNode`, …), the
//!   node sessions it hands out, and the node observer that nodes report server and adapter
//!   states to.
//! - [`descriptor`]: the `InternalServerDescriptor` of a deployed server on a node (its
//!   command line and the configuration files the node writes).
//! - [`servers`]: loading servers on their nodes (`Node::loadServer`), destroying them, and
//!   the per-server calls that admin sessions make (`Server::start`, `getState`, …).
//! - [`locate`]: resolving the adapters of node-managed servers (asking the node, activating
//!   on demand) and forwarding their registrations to the node.
//!
//! The state kept here is in memory only: a node registers again when the registry restarts.

pub(crate) mod admin;
pub(crate) mod descriptor;
pub(crate) mod locate;
pub(crate) mod servers;
pub(crate) mod session;
pub(crate) mod update;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use floe::Error;

pub(crate) use crate::node_table::{lock, timed, NodeSession, NODE_CALL_TIMEOUT};
use crate::shared::Shared;
use crate::slice::ice_grid::{NodeNotExistException, NodeUnreachableException};

/// Ends a node's session: its servers are no longer loaded through it, observers are told
/// the node is down, and the session object is removed.
pub(crate) fn end_session(shared: &Shared, session: &Arc<NodeSession>) {
    if session.destroyed.swap(true, Ordering::SeqCst) {
        return;
    }
    let name = session.info.name.clone();
    {
        let mut sessions = lock(&shared.nodes.sessions);
        if sessions.get(&name).is_some_and(|s| Arc::ptr_eq(s, session)) {
            sessions.remove(&name);
            lock(&shared.nodes.dynamic).remove(&name);
        }
    }
    shared.internal.remove(&session.identity);
    tracing::info!(target: "floe_registry::node", node = name, "node down");
    crate::observers::node_down(shared, &name);
}

/// Ends the sessions of nodes that did not keep them alive within the node session timeout.
pub(crate) fn reap(shared: &Shared) {
    let timeout = Duration::from_secs(shared.config.node_session_timeout.max(1) as u64);
    let expired: Vec<Arc<NodeSession>> =
        shared.nodes.all().into_iter().filter(|s| lock(&s.last).elapsed() > timeout).collect();
    for s in expired {
        tracing::info!(target: "floe_registry::node", node = s.info.name, "node session expired");
        end_session(shared, &s);
    }
}

/// `NodeUnreachableException` for node `name`.
pub(crate) fn unreachable(name: &str, reason: impl Into<String>) -> Error {
    Error::user(NodeUnreachableException { name: name.to_string(), reason: reason.into() })
}

/// The live session of node `name`; or what a command on it answers: the node is known
/// (declared or once registered) but down, or does not exist.
pub(crate) fn require(shared: &Shared, name: &str) -> floe::Result<Arc<NodeSession>> {
    if let Some(s) = shared.nodes.live(name) {
        return Ok(s);
    }
    if shared.deployment().node_names().iter().any(|n| n == name) {
        Err(unreachable(name, "the node is not active"))
    } else {
        Err(Error::user(NodeNotExistException { name: name.to_string() }))
    }
}
