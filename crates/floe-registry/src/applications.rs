//! The application part of `IceGrid::Admin`: adding, synchronizing, updating, removing and
//! describing applications, and the queries on what they deploy (servers, their adapters).
//! Each change is checked by instantiating every application with it: a change that does not
//! instantiate, or clashes with what is deployed or registered, is refused with a
//! `DeploymentException` and nothing of it is stored.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use floe::Error;

use crate::database::written;
use crate::deploy::{apply_update, decode_info, encode_info, Deployment};
use crate::observers::{application_changed, full_update, Change};
use crate::shared::Shared;
use crate::slice::ice_grid::{
    ApplicationDescriptor, ApplicationInfo, ApplicationNotExistException, ApplicationUpdateDescriptor,
    ApplicationUpdateInfo, DeploymentException, NodeUnreachableException, NodeUpdateDescriptor, ServerInfo,
    ServerInstanceDescriptor, ServerNotExistException,
};

/// How long an application change waits for the nodes to load its servers.
const SYNC_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);

fn deployment(reason: impl Into<String>) -> Error {
    Error::user(DeploymentException { reason: reason.into() })
}

fn not_exist(name: &str) -> Error {
    Error::user(ApplicationNotExistException { name: name.to_string() })
}

fn now_ms() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or(0)
}

/// The stored applications, decoded, with their generation.
type Stored = (u64, BTreeMap<String, ApplicationInfo>, BTreeMap<String, Vec<u8>>);

/// The stored applications: their generation, decoded, and as stored.
fn stored(shared: &Shared) -> floe::Result<Stored> {
    let (generation, raw) = shared.db.applications();
    let mut out = BTreeMap::new();
    for (name, bytes) in &raw {
        let info = decode_info(bytes)
            .map_err(|e| Error::UnknownLocalException(format!("the stored application `{name}' is unreadable: {e}")))?;
        out.insert(name.clone(), info);
    }
    Ok((generation, out, raw))
}

/// Stores `info` as application `name` (None: removes it) once every application, with the
/// change, instantiates without clashes; retried if another change came in meanwhile.
async fn change(
    shared: &Shared,
    name: &str,
    make: impl Fn(Option<&ApplicationInfo>) -> floe::Result<Option<ApplicationInfo>>,
    update: Option<&ApplicationUpdateDescriptor>,
    no_restart: bool,
) -> floe::Result<()> {
    loop {
        let (generation, mut apps, mut raw) = stored(shared)?;
        let before = shared.deployment();
        let previous = apps.get(name).cloned();
        let next = make(previous.as_ref())?;
        match &next {
            Some(info) => apps.insert(name.to_string(), info.clone()),
            None => apps.remove(name),
        };
        let deployed = Deployment::build(&shared.communicator, apps).map_err(deployment)?;
        // A declared object may not take the identity of one registered dynamically.
        for key in deployed.objects.keys().chain(deployed.allocatables.keys()) {
            if !before.objects.contains_key(key) && !before.allocatables.contains_key(key) {
                let id = floe::reference::string_to_identity(key).unwrap_or_else(|_| floe::Identity::new(key));
                if shared.db.object(&id).is_some() {
                    return Err(deployment(format!("duplicate object `{key}': it is registered already")));
                }
            }
        }
        if no_restart {
            crate::nodes::update::check_no_restart(shared, name, &before, &deployed).await?;
        }
        let bytes = next.as_ref().map(encode_info);
        if let Some(w) = shared.db.set_application(name, bytes.clone(), generation) {
            // What was just built is what the registry serves once the store holds these
            // applications (at once with the embedded store, when the watch brings the write
            // back with etcd): no second instantiation.
            let deployed = Arc::new(deployed);
            match &bytes {
                Some(b) => raw.insert(name.to_string(), b.clone()),
                None => raw.remove(name),
            };
            shared.offer_deployment(raw, deployed.clone());
            written(w).await?;
            let changed = before.changed_servers(&deployed);
            tracing::info!(target: "floe_registry::deploy", application = name, servers = ?changed, "application changed");
            let notice = match (previous, next) {
                (None, Some(info)) => Change::Added(info),
                (Some(_), None) => Change::Removed(name.to_string()),
                (Some(old), Some(info)) => Change::Updated(ApplicationUpdateInfo {
                    update_time: info.update_time,
                    update_user: info.update_user.clone(),
                    revision: info.revision,
                    descriptor: match update {
                        Some(u) => u.clone(),
                        None => full_update(&old.descriptor, &info.descriptor),
                    },
                }),
                (None, None) => return Ok(()),
            };
            application_changed(shared, notice);
            // Nodes load the changed servers again, or destroy those that are gone; a node
            // that does not answer delays the change by a bounded time (its servers are loaded
            // again when next needed).
            // As IceGrid does, the application's unchanged servers are loaded again too, with
            // the new revision (the node does not restart them).
            let mut affected = changed.clone();
            for d in [&before, &deployed] {
                affected.extend(d.servers.iter().filter(|(_, s)| s.application == name).map(|(id, _)| id.clone()));
            }
            affected.sort();
            affected.dedup();
            let sync = crate::nodes::servers::sync(shared, &affected, no_restart);
            if tokio::time::timeout(SYNC_TIMEOUT, sync).await.is_err() {
                tracing::warn!(target: "floe_registry::node", application = name, "nodes did not load the servers in time");
            }
            crate::client_session::deployment_changed(shared).await;
            return Ok(());
        }
    }
}

/// `addApplication`.
pub(crate) async fn add(shared: &Shared, user: &str, descriptor: ApplicationDescriptor) -> floe::Result<()> {
    let name = descriptor.name.clone();
    if name.is_empty() {
        return Err(deployment("invalid application: empty name"));
    }
    change(
        shared,
        &name,
        |old| {
            if old.is_some() {
                return Err(deployment(format!("application `{name}' already exists")));
            }
            let now = now_ms();
            Ok(Some(ApplicationInfo {
                uuid: uuid::Uuid::new_v4().to_string().to_uppercase(),
                create_time: now,
                create_user: user.to_string(),
                update_time: now,
                update_user: user.to_string(),
                revision: 1,
                descriptor: descriptor.clone(),
            }))
        },
        None,
        false,
    )
    .await
}

/// The next revision of `old` with `descriptor`.
fn revised(old: &ApplicationInfo, user: &str, descriptor: ApplicationDescriptor) -> ApplicationInfo {
    ApplicationInfo {
        update_time: now_ms(),
        update_user: user.to_string(),
        revision: old.revision + 1,
        descriptor,
        ..old.clone()
    }
}

/// `syncApplication`: replaces the application's descriptor (without restarting servers,
/// or refused, with `no_restart`).
pub(crate) async fn sync(
    shared: &Shared,
    user: &str,
    descriptor: ApplicationDescriptor,
    no_restart: bool,
) -> floe::Result<()> {
    let name = descriptor.name.clone();
    change(
        shared,
        &name,
        |old| {
            let old = old.ok_or_else(|| not_exist(&name))?;
            Ok(Some(revised(old, user, descriptor.clone())))
        },
        None,
        no_restart,
    )
    .await
}

/// `updateApplication`: applies an update descriptor (without restarting servers, or
/// refused, with `no_restart`).
pub(crate) async fn update(
    shared: &Shared,
    user: &str,
    update: ApplicationUpdateDescriptor,
    no_restart: bool,
) -> floe::Result<()> {
    let name = update.name.clone();
    change(
        shared,
        &name,
        |old| {
            let old = old.ok_or_else(|| not_exist(&name))?;
            let descriptor = apply_update(&old.descriptor, &update).map_err(deployment)?;
            Ok(Some(revised(old, user, descriptor)))
        },
        Some(&update),
        no_restart,
    )
    .await
}

/// `instantiateServer`: adds a server instance to a node of an application.
pub(crate) async fn instantiate(
    shared: &Shared,
    user: &str,
    application: String,
    node: String,
    instance: ServerInstanceDescriptor,
) -> floe::Result<()> {
    let update = ApplicationUpdateDescriptor {
        name: application,
        nodes: vec![NodeUpdateDescriptor { name: node, server_instances: vec![instance], ..Default::default() }],
        ..Default::default()
    };
    self::update(shared, user, update, false).await
}

/// `removeApplication`.
pub(crate) async fn remove(shared: &Shared, name: &str) -> floe::Result<()> {
    change(
        shared,
        name,
        |old| match old {
            Some(_) => Ok(None),
            None => Err(not_exist(name)),
        },
        None,
        false,
    )
    .await
}

/// `getApplicationInfo`.
pub(crate) fn info(shared: &Shared, name: &str) -> floe::Result<ApplicationInfo> {
    shared.deployment().applications.get(name).cloned().ok_or_else(|| not_exist(name))
}

/// `getAllApplicationNames`.
pub(crate) fn names(shared: &Shared) -> Vec<String> {
    shared.deployment().applications.keys().cloned().collect()
}

/// `getServerInfo`.
pub(crate) fn server_info(shared: &Shared, id: &str) -> floe::Result<ServerInfo> {
    let d = shared.deployment();
    let s = d.servers.get(id).ok_or_else(|| Error::user(ServerNotExistException { id: id.to_string() }))?;
    Ok(ServerInfo {
        application: s.application.clone(),
        uuid: s.uuid.clone(),
        revision: s.revision,
        node: s.node.clone(),
        descriptor: Some(s.descriptor.clone()),
        session_id: String::new(),
    })
}

/// What a command on a server (its state, pid, start, stop, …) answers: the server's node is
/// not active (no node has registered with it), or the server does not exist.
pub(crate) fn server_node_unreachable(shared: &Shared, id: &str) -> Error {
    match shared.deployment().servers.get(id) {
        Some(s) => {
            Error::user(NodeUnreachableException { name: s.node.clone(), reason: "the node is not active".to_string() })
        }
        None => Error::user(ServerNotExistException { id: id.to_string() }),
    }
}

/// What a command on a node answers: the node is declared but not active, or does not exist.
pub(crate) fn node_unreachable(shared: &Shared, name: &str) -> Error {
    if shared.deployment().node_names().iter().any(|n| n == name) {
        Error::user(NodeUnreachableException { name: name.to_string(), reason: "the node is not active".to_string() })
    } else {
        Error::user(crate::slice::ice_grid::NodeNotExistException { name: name.to_string() })
    }
}

/// `getAllServerIds`.
pub(crate) fn server_ids(shared: &Shared) -> Vec<String> {
    shared.deployment().servers.keys().cloned().collect()
}

/// With replicas sharing etcd: brings this replica's nodes in line with the application
/// changes other replicas make (the nodes that registered only here, such as ZeroC's
/// icegridnode, hear of them from no one else). Polls the stored applications every
/// half-second; for each change, the servers whose descriptors changed, and every server of
/// an application whose revision changed, are loaded again or destroyed on the nodes with a
/// session here. Servers this replica loaded itself are already up to date, and loading them
/// again costs nothing (the descriptor is the one the node has).
pub(crate) async fn follow(weak: std::sync::Weak<Shared>) {
    use std::time::Duration;
    let Some(mut last) = weak.upgrade().map(|s| s.deployment()) else { return };
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let Some(shared) = weak.upgrade() else { return };
        let now = shared.deployment();
        if Arc::ptr_eq(&now, &last) {
            continue;
        }
        let mut affected = last.changed_servers(&now);
        for (name, info) in &now.applications {
            if last.applications.get(name).is_none_or(|old| old.revision != info.revision || old.uuid != info.uuid) {
                affected.extend(now.servers.iter().filter(|(_, s)| &s.application == name).map(|(id, _)| id.clone()));
            }
        }
        affected.sort();
        affected.dedup();
        if !affected.is_empty() {
            tracing::debug!(target: "floe_registry::node", servers = ?affected, "applications changed in etcd");
            if tokio::time::timeout(SYNC_TIMEOUT, crate::nodes::servers::sync(&shared, &affected, false)).await.is_err()
            {
                tracing::warn!(target: "floe_registry::node", "nodes did not load the changed servers in time");
            }
        }
        crate::client_session::deployment_changed(&shared).await;
        last = now;
    }
}
