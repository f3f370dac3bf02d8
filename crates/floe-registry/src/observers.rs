//! The observers that admin sessions register (`AdminSession::setObservers` and
//! `setObserversByIdentity`, as the IceGrid GUI does): each is given the registry's state
//! when it registers (`registryInit`, `nodeInit`, `applicationInit`, `adapterInit`,
//! `objectInit`) and told of every application change afterwards, numbered by the serial
//! that `startUpdate` also reports.

use std::sync::atomic::Ordering;
use std::time::Duration;

use floe::{Connection, Identity, ObjectPrx, Proxy};

use crate::shared::Shared;
use crate::slice::ice_grid::{
    AdapterDynamicInfo, AdapterInfo, AdapterObserverPrx, ApplicationDescriptor, ApplicationInfo,
    ApplicationObserverPrx, ApplicationUpdateDescriptor, ApplicationUpdateInfo, BoxedDistributionDescriptor,
    BoxedString, NodeDynamicInfo, NodeObserverPrx, NodeUpdateDescriptor, ObjectInfo, ObjectObserverPrx, RegistryInfo,
    RegistryObserverPrx, ServerDynamicInfo,
};
pub(crate) use crate::watchers::ObserverSet;

/// How long a call on an observer may take.
const OBSERVER_TIMEOUT: Duration = Duration::from_secs(10);

/// The observers `setObserversByIdentity` names, reached over the session's connection.
pub(crate) fn by_identity(shared: &Shared, connection: Option<&Connection>, ids: [Identity; 5]) -> ObserverSet {
    let Some(connection) = connection else { return ObserverSet::default() };
    let proxy = |id: &Identity| -> Option<ObjectPrx> {
        if id.name.is_empty() {
            return None;
        }
        let base = shared.registry.ice_identity(id.clone()).ice_facet("");
        Some(base.ice_fixed(connection.clone()))
    };
    let [registry, node, application, adapter, object] = ids;
    ObserverSet {
        registry: proxy(&registry).map(RegistryObserverPrx::from_object),
        node: proxy(&node).map(NodeObserverPrx::from_object),
        application: proxy(&application).map(ApplicationObserverPrx::from_object),
        adapter: proxy(&adapter).map(AdapterObserverPrx::from_object),
        object: proxy(&object).map(ObjectObserverPrx::from_object),
    }
}

fn timed(set: ObserverSet) -> ObserverSet {
    let t = Some(OBSERVER_TIMEOUT);
    ObserverSet {
        registry: set.registry.map(|p| p.ice_invocation_timeout(t)),
        node: set.node.map(|p| p.ice_invocation_timeout(t)),
        application: set.application.map(|p| p.ice_invocation_timeout(t)),
        adapter: set.adapter.map(|p| p.ice_invocation_timeout(t)),
        object: set.object.map(|p| p.ice_invocation_timeout(t)),
    }
}

fn warn(what: &str, e: floe::Error) {
    tracing::warn!(target: "floe_registry::observers", "{what} failed: {e}");
}

/// Registers `set` for the session `session` and gives each observer the current state.
pub(crate) async fn register(shared: &Shared, session: &str, set: ObserverSet) {
    let set = timed(set);
    shared.observers.lock().insert(session.to_string(), set.clone());
    if let Some(o) = &set.registry {
        let info = RegistryInfo { name: shared.config.replica_name.clone(), hostname: crate::shared::hostname() };
        if let Err(e) = o.registry_init(&[info]).await {
            warn("registryInit", e);
        }
    }
    if let Some(o) = &set.node {
        if let Err(e) = o.node_init(&shared.nodes.dynamic_infos()).await {
            warn("nodeInit", e);
        }
    }
    if let Some(o) = &set.application {
        let apps: Vec<ApplicationInfo> = shared.deployment().applications.values().cloned().collect();
        if let Err(e) = o.application_init(shared.serial.load(Ordering::SeqCst), &apps).await {
            warn("applicationInit", e);
        }
    }
    if let Some(o) = &set.adapter {
        let adapters: Vec<AdapterInfo> = shared
            .db
            .adapters()
            .into_iter()
            .map(|(id, e)| AdapterInfo { id, proxy: Some(e.proxy), replica_group_id: e.replica_group })
            .collect();
        if let Err(e) = o.adapter_init(&adapters).await {
            warn("adapterInit", e);
        }
    }
    if let Some(o) = &set.object {
        let objects: Vec<ObjectInfo> = shared
            .db
            .objects_matching("")
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect();
        if let Err(e) = o.object_init(&objects).await {
            warn("objectInit", e);
        }
    }
}

/// Calls `event` on every admin session's node observer, after the node events before it.
fn node_event<F, Fut>(shared: &Shared, what: &'static str, event: F)
where
    F: Fn(NodeObserverPrx) -> Fut,
    Fut: std::future::Future<Output = floe::Result<()>> + Send + 'static,
{
    let observers: Vec<NodeObserverPrx> = shared.observers.lock().values().filter_map(|s| s.node.clone()).collect();
    if observers.is_empty() {
        return;
    }
    let calls: crate::watchers::Calls = observers
        .into_iter()
        .map(|o| {
            let call = event(o);
            Box::pin(async move {
                if let Err(e) = call.await {
                    warn(what, e);
                }
            }) as std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>
        })
        .collect();
    shared.observers.in_order(calls);
}

/// Tells node observers that a node came up (as the node reported it).
pub(crate) fn node_up(shared: &Shared, info: NodeDynamicInfo) {
    node_event(shared, "nodeUp", move |o| {
        let info = info.clone();
        async move { o.node_up(&info).await }
    });
}

/// Tells node observers that a node's session ended.
pub(crate) fn node_down(shared: &Shared, name: &str) {
    let name = name.to_string();
    node_event(shared, "nodeDown", move |o| {
        let name = name.clone();
        async move { o.node_down(&name).await }
    });
}

/// Tells node observers of a server's new state.
pub(crate) fn update_server(shared: &Shared, node: String, info: ServerDynamicInfo) {
    node_event(shared, "updateServer", move |o| {
        let (node, info) = (node.clone(), info.clone());
        async move { o.update_server(&node, &info).await }
    });
}

/// Tells node observers of an adapter's new endpoints.
pub(crate) fn update_adapter(shared: &Shared, node: String, info: AdapterDynamicInfo) {
    node_event(shared, "updateAdapter", move |o| {
        let (node, info) = (node.clone(), info.clone());
        async move { o.update_adapter(&node, &info).await }
    });
}

/// Forgets the observers of a session that ended.
pub(crate) fn unregister(shared: &Shared, session: &str) {
    shared.observers.lock().remove(session);
}

/// What happened to an application.
pub(crate) enum Change {
    Added(ApplicationInfo),
    Updated(ApplicationUpdateInfo),
    Removed(String),
}

/// Tells every application observer of `change`, with the next serial.
pub(crate) fn application_changed(shared: &Shared, change: Change) {
    let serial = shared.serial.fetch_add(1, Ordering::SeqCst) + 1;
    let observers: Vec<ApplicationObserverPrx> =
        shared.observers.lock().values().filter_map(|s| s.application.clone()).collect();
    if observers.is_empty() {
        return;
    }
    let change = std::sync::Arc::new(change);
    for o in observers {
        let change = change.clone();
        tokio::spawn(async move {
            let result = match &*change {
                Change::Added(info) => o.application_added(serial, info).await,
                Change::Updated(info) => o.application_updated(serial, info).await,
                Change::Removed(name) => o.application_removed(serial, name).await,
            };
            if let Err(e) = result {
                warn("an application observer", e);
            }
        });
    }
}

/// The update that turns `old` into `new` as a whole (what `syncApplication` did), for
/// observers that follow updates.
pub(crate) fn full_update(old: &ApplicationDescriptor, new: &ApplicationDescriptor) -> ApplicationUpdateDescriptor {
    let gone = |old_keys: Vec<&String>, new_has: &dyn Fn(&String) -> bool| -> Vec<String> {
        old_keys.into_iter().filter(|k| !new_has(k)).cloned().collect()
    };
    ApplicationUpdateDescriptor {
        name: new.name.clone(),
        description: Some(floe::Class::new(BoxedString { value: new.description.clone() })),
        distrib: Some(floe::Class::new(BoxedDistributionDescriptor { value: new.distrib.clone() })),
        variables: new.variables.clone(),
        remove_variables: gone(old.variables.keys().collect(), &|k| new.variables.contains_key(k)),
        property_sets: new.property_sets.clone(),
        remove_property_sets: gone(old.property_sets.keys().collect(), &|k| new.property_sets.contains_key(k)),
        replica_groups: new.replica_groups.clone(),
        remove_replica_groups: old
            .replica_groups
            .iter()
            .filter(|g| !new.replica_groups.iter().any(|n| n.id == g.id))
            .map(|g| g.id.clone())
            .collect(),
        server_templates: new.server_templates.clone(),
        remove_server_templates: gone(old.server_templates.keys().collect(), &|k| new.server_templates.contains_key(k)),
        service_templates: new.service_templates.clone(),
        remove_service_templates: gone(old.service_templates.keys().collect(), &|k| {
            new.service_templates.contains_key(k)
        }),
        nodes: new
            .nodes
            .iter()
            .map(|(name, n)| NodeUpdateDescriptor {
                name: name.clone(),
                description: Some(floe::Class::new(BoxedString { value: n.description.clone() })),
                variables: n.variables.clone(),
                property_sets: n.property_sets.clone(),
                server_instances: n.server_instances.clone(),
                servers: n.servers.clone(),
                load_factor: Some(floe::Class::new(BoxedString { value: n.load_factor.clone() })),
                ..Default::default()
            })
            .collect(),
        remove_nodes: gone(old.nodes.keys().collect(), &|k| new.nodes.contains_key(k)),
    }
}
