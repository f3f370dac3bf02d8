//! The check IceGrid makes before an application update that must not restart servers
//! (`syncApplicationWithoutRestart`, `updateApplicationWithoutRestart`, what
//! `icegridadmin application update --no-restart` calls): a server whose descriptor changes
//! beyond its properties would have to be stopped, and each node is asked
//! (`Server::checkUpdate`) whether it can take the new descriptor of the servers it runs;
//! any refusal, or a node that is down, refuses the update before anything is stored.

use std::collections::BTreeSet;

use floe::{CallError, Error};

use super::{descriptor, timed, NODE_CALL_TIMEOUT};
use crate::deploy::Deployment;
use crate::shared::Shared;
use crate::slice::ice_grid::{DeploymentException, InternalServerDescriptor, ServerCheckUpdateError};

/// `desc` without its configuration files: what must not change for an update without
/// restart.
fn without_properties(desc: &floe::Class<InternalServerDescriptor>) -> Vec<u8> {
    let mut copy = desc.read().clone();
    copy.properties = Default::default();
    copy.revision = 0;
    descriptor::digest(&floe::Class::new(copy))
}

/// `a, b` or `a`, as IceGrid lists names.
fn listed(names: &[String]) -> String {
    names.join(", ")
}

/// Refuses (with IceGrid's `DeploymentException`) an update of `application` from `before`
/// to `after` that would restart one of its servers.
pub(crate) async fn check_no_restart(
    shared: &Shared,
    application: &str,
    before: &Deployment,
    after: &Deployment,
) -> floe::Result<()> {
    let mut stopped: Vec<String> = Vec::new();
    let mut down: BTreeSet<String> = BTreeSet::new();
    for (id, old) in before.servers.iter().filter(|(_, s)| s.application == application) {
        let new = after.servers.get(id);
        let Some(session) = shared.nodes.live(&old.node) else {
            down.insert(old.node.clone());
            continue;
        };
        let old_desc = descriptor::build(old, &session.info, &super::servers::session_id(shared, old));
        let new_desc = new
            .filter(|n| n.node == old.node)
            .map(|n| descriptor::build(n, &session.info, &super::servers::session_id(shared, n)));
        match (&new, &new_desc) {
            (Some(_), Some(d)) if descriptor::digest(d) == descriptor::digest(&old_desc) => continue,
            (Some(_), Some(d)) if without_properties(d) != without_properties(&old_desc) => {
                stopped.push(id.clone());
                continue;
            }
            _ => {}
        }
        // Changed properties, a removal or a move: the node decides.
        let loaded = match super::servers::ensure(shared, id).await {
            Ok(l) => l,
            Err(_) => {
                down.insert(old.node.clone());
                continue;
            }
        };
        match timed(&loaded.server, NODE_CALL_TIMEOUT).check_update(new_desc.as_ref(), true).await {
            Ok(_) => {}
            Err(CallError::User(ServerCheckUpdateError::DeploymentException(e))) => {
                tracing::info!(target: "floe_registry::node", server = id, "check for update failed: {}", e.reason);
                stopped.push(id.clone());
            }
            Err(CallError::Local(Error::OperationNotExist { .. })) => stopped.push(id.clone()),
            Err(CallError::Local(_)) => {
                down.insert(old.node.clone());
            }
        }
    }
    if stopped.is_empty() && down.is_empty() {
        return Ok(());
    }
    let mut reason = format!("check for application `{application}' update failed:");
    match stopped.len() {
        0 => {}
        1 => reason.push_str(&format!("\nthe server `{}' would need to be stopped", stopped[0])),
        _ => reason.push_str(&format!("\nthe servers `{}' would need to be stopped", listed(&stopped))),
    }
    let down: Vec<String> = down.into_iter().collect();
    match down.len() {
        0 => {}
        1 => reason.push_str(&format!("\nthe node `{}' is down", down[0])),
        _ => reason.push_str(&format!("\nthe nodes `{}' are down", listed(&down))),
    }
    Err(Error::user(DeploymentException { reason }))
}
