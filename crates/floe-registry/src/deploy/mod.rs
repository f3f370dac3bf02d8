//! Deployed applications: what `icegridadmin application add` and the IceGrid GUI give the
//! registry (`IceGrid::ApplicationDescriptor`s), kept as stored `ApplicationInfo` records, and
//! what they declare once instantiated ([`Deployment`]): servers on nodes, their adapters,
//! well-known objects and replica groups with their load-balancing policies.
//!
//! The stored records are the source of truth (on redb or etcd, like the registry's other
//! tables); a [`Deployment`] is derived from all of them and rebuilt when they change, so
//! every replica sharing an etcd cluster serves the same deployment.

mod resolve;
mod update;

use std::collections::{BTreeMap, HashMap};

use floe::encoding::{Decode, Decoder, Encode, Encoder};
use floe::{Class, Communicator, Identity, ObjectPrx};

use crate::config::{LoadBalancing, ReplicaGroupConfig};
use crate::database::identity_string;
use crate::record::{ObjectEntry, ENCODING};
use crate::slice::ice_grid::{
    AdaptiveLoadBalancingPolicy, ApplicationDescriptor, ApplicationInfo, ApplicationUpdateDescriptor,
    LoadBalancingPolicy, ObjectDescriptor, OrderedLoadBalancingPolicy, RoundRobinLoadBalancingPolicy, ServerDescriptor,
};

pub(crate) use resolve::adapters_of;

/// The stored form of an application.
pub(crate) fn encode_info(info: &ApplicationInfo) -> Vec<u8> {
    let mut enc = Encoder::new(ENCODING);
    info.encode(&mut enc);
    enc.write_pending_values();
    enc.into_bytes().to_vec()
}

/// Reads what [`encode_info`] wrote.
pub(crate) fn decode_info(bytes: &[u8]) -> Result<ApplicationInfo, String> {
    let mut dec = Decoder::from_slice(bytes, ENCODING);
    let info = ApplicationInfo::decode(&mut dec).map_err(|e| e.to_string())?;
    dec.read_pending_values().map_err(|e| e.to_string())?;
    Ok(info)
}

/// `app` with `update` applied.
pub(crate) fn apply_update(
    app: &ApplicationDescriptor,
    update: &ApplicationUpdateDescriptor,
) -> Result<ApplicationDescriptor, String> {
    update::apply(app, update)
}

/// A deployed server.
#[derive(Debug, Clone)]
pub(crate) struct DeployedServer {
    pub(crate) application: String,
    pub(crate) uuid: String,
    pub(crate) revision: i32,
    pub(crate) node: String,
    /// The instantiated descriptor.
    pub(crate) descriptor: Class<ServerDescriptor>,
}

/// An adapter of a deployed server.
#[derive(Debug, Clone)]
pub(crate) struct DeployedAdapter {
    pub(crate) application: String,
    pub(crate) server: String,
    pub(crate) replica_group: String,
}

/// A replica group declared by an application.
#[derive(Debug, Clone)]
pub(crate) struct DeployedGroup {
    pub(crate) application: String,
    /// Its policy, with the priorities of its members' adapters.
    pub(crate) config: ReplicaGroupConfig,
}

/// What the applications declare, instantiated.
#[derive(Debug, Default)]
pub(crate) struct Deployment {
    pub(crate) applications: BTreeMap<String, ApplicationInfo>,
    pub(crate) servers: BTreeMap<String, DeployedServer>,
    pub(crate) adapters: BTreeMap<String, DeployedAdapter>,
    /// Keyed by the identity's string form.
    pub(crate) objects: BTreeMap<String, ObjectEntry>,
    /// The application that declares each object (well-known or allocatable).
    pub(crate) object_applications: HashMap<String, String>,
    pub(crate) groups: HashMap<String, DeployedGroup>,
    /// The allocatable objects (`<allocatable>`), keyed by the identity's string form: not
    /// well-known objects, sessions allocate them.
    pub(crate) allocatables: BTreeMap<String, DeployedAllocatable>,
}

/// An allocatable object of a deployed server.
#[derive(Debug, Clone)]
pub(crate) struct DeployedAllocatable {
    /// Its proxy (indirect, through its adapter) and type.
    pub(crate) entry: ObjectEntry,
    /// The server whose adapter serves it.
    pub(crate) server: String,
}

fn policy(lb: &Option<Class<LoadBalancingPolicy>>, group: &str) -> Result<ReplicaGroupConfig, String> {
    let context = format!("replica group `{group}'");
    let Some(lb) = lb else { return Err(format!("{context}:\nreplica group load balancing is not set")) };
    let n = lb.read().n_replicas.clone();
    if n.is_empty() {
        return Err(format!("{context}:\ninvalid replica group load balancing number of replicas value: empty value"));
    }
    let n_replicas = n.parse::<i64>().map_err(|_| {
        format!("{context}:\ninvalid replica group load balancing number of replicas value: `{n}' is not an integer")
    })?;
    if n_replicas < 0 {
        return Err(format!(
            "{context}:\ninvalid replica group load balancing number of replicas value: inferior to 0"
        ));
    }
    let mut load_sample = 1;
    let load_balancing = if let Some(a) = lb.downcast::<AdaptiveLoadBalancingPolicy>() {
        let sample = a.read().load_sample.clone();
        if !["", "1", "5", "15"].contains(&sample.as_str()) {
            return Err(format!("{context}:\ninvalid load sample value (allowed values are 1, 5 or 15)"));
        }
        load_sample = sample.parse().unwrap_or(1);
        LoadBalancing::Adaptive
    } else if lb.downcast::<OrderedLoadBalancingPolicy>().is_some() {
        LoadBalancing::Ordered
    } else if lb.downcast::<RoundRobinLoadBalancingPolicy>().is_some() {
        LoadBalancing::RoundRobin
    } else {
        LoadBalancing::Random
    };
    Ok(ReplicaGroupConfig { load_balancing, n_replicas: n_replicas as usize, priorities: BTreeMap::new(), load_sample })
}

impl Deployment {
    /// The deployment of `applications`; an error (a `DeploymentException`'s reason) if one
    /// of them does not instantiate or they clash (a server, adapter, object or replica group
    /// declared twice).
    pub(crate) fn build(
        communicator: &Communicator,
        applications: BTreeMap<String, ApplicationInfo>,
    ) -> Result<Deployment, String> {
        let mut d = Deployment::default();
        for (name, info) in &applications {
            d.add(communicator, name, info)?;
        }
        d.applications = applications;
        Ok(d)
    }

    /// The deployment of those of `applications` that instantiate together, in name order: one
    /// that does not (stored by an earlier version, say) is left out, with an error logged.
    pub(crate) fn build_skipping(
        communicator: &Communicator,
        applications: BTreeMap<String, ApplicationInfo>,
    ) -> Deployment {
        match Deployment::build(communicator, applications.clone()) {
            Ok(d) => d,
            Err(_) => {
                let mut kept = BTreeMap::new();
                for (name, info) in applications {
                    let mut with = kept.clone();
                    with.insert(name.clone(), info.clone());
                    match Deployment::build(communicator, with) {
                        Ok(_) => {
                            kept.insert(name, info);
                        }
                        Err(e) => {
                            tracing::error!(target: "floe_registry::deploy", "application `{name}' is not deployed: {e}")
                        }
                    }
                }
                Deployment::build(communicator, kept).unwrap_or_default()
            }
        }
    }

    fn add_object(
        &mut self,
        communicator: &Communicator,
        application: &str,
        context: &str,
        o: &ObjectDescriptor,
        adapter_id: &str,
        default_options: &str,
    ) -> Result<(String, ObjectEntry), String> {
        let key = identity_string(&o.id);
        if let Some(other) = self.object_applications.get(&key) {
            return Err(format!("{context}:\n{}", clash(application, other, "object", &key)));
        }
        let options = if o.proxy_options.is_empty() { default_options } else { &o.proxy_options };
        let text = format!("\"{}\" {options}", key.replace('"', "\\\""));
        let proxy: ObjectPrx = communicator
            .string_to_proxy(&text)
            .map_err(|e| format!("{context}:\ninvalid proxy options `{options}' for object `{key}': {e}"))?;
        let type_id = if o.r#type.is_empty() { "::Ice::Object".to_string() } else { o.r#type.clone() };
        self.object_applications.insert(key.clone(), application.to_string());
        Ok((key, ObjectEntry { proxy: proxy.ice_adapter_id(adapter_id), type_id }))
    }

    fn add(&mut self, communicator: &Communicator, name: &str, info: &ApplicationInfo) -> Result<(), String> {
        let app = &info.descriptor;
        if app.name != name {
            return Err(format!("invalid application `{name}': its descriptor is named `{}'", app.name));
        }
        for group in &app.replica_groups {
            if group.id.is_empty() {
                return Err(format!("application `{name}':\nreplica group id is empty"));
            }
            if self.groups.contains_key(&group.id) {
                return Err(format!("application `{name}':\nduplicate replica group `{}'", group.id));
            }
            let config = policy(&group.load_balancing, &group.id)?;
            self.groups.insert(group.id.clone(), DeployedGroup { application: name.to_string(), config });
            let context = format!("replica group `{}'", group.id);
            for o in resolve::replica_group_objects(app, &group.objects)? {
                let (key, entry) =
                    self.add_object(communicator, name, &context, &o, &group.id, &group.proxy_options)?;
                self.objects.insert(key, entry);
            }
        }
        for server in resolve::servers(app)? {
            let id = server.descriptor.read().id.clone();
            if let Some(other) = self.servers.get(&id) {
                return Err(clash(name, &other.application, "server", &id));
            }
            let context = format!("server `{id}'");
            for (_, adapter) in adapters_of(&server.descriptor) {
                if let Some(other) = self.adapters.get(&adapter.id) {
                    return Err(clash(name, &other.application, "adapter", &adapter.id));
                }
                for o in &adapter.objects {
                    let (key, entry) = self.add_object(communicator, name, &context, o, &adapter.id, "")?;
                    self.objects.insert(key, entry);
                }
                for o in &adapter.allocatables {
                    let (key, entry) = self.add_object(communicator, name, &context, o, &adapter.id, "")?;
                    self.allocatables.insert(key, DeployedAllocatable { entry, server: id.clone() });
                }
                if !adapter.replica_group_id.is_empty() {
                    if let Some(g) = self.groups.get_mut(&adapter.replica_group_id) {
                        let priority = adapter.priority.parse().unwrap_or(0);
                        g.config.priorities.insert(adapter.id.clone(), priority);
                    }
                }
                self.adapters.insert(
                    adapter.id.clone(),
                    DeployedAdapter {
                        application: name.to_string(),
                        server: id.clone(),
                        replica_group: adapter.replica_group_id.clone(),
                    },
                );
            }
            self.servers.insert(
                id,
                DeployedServer {
                    application: name.to_string(),
                    uuid: info.uuid.clone(),
                    revision: info.revision,
                    node: server.node,
                    descriptor: server.descriptor,
                },
            );
        }
        Ok(())
    }

    /// The well-known object `id` declared by an application.
    pub(crate) fn object(&self, id: &Identity) -> Option<&ObjectEntry> {
        self.objects.get(&identity_string(id))
    }

    /// The nodes the applications name, sorted.
    pub(crate) fn node_names(&self) -> Vec<String> {
        let mut names: Vec<String> =
            self.applications.values().flat_map(|a| a.descriptor.nodes.keys().cloned()).collect();
        names.sort();
        names.dedup();
        names
    }

    /// The servers whose instantiated descriptors differ between `self` and `next`, or that
    /// only one of them has: those an update restarts.
    pub(crate) fn changed_servers(&self, next: &Deployment) -> Vec<String> {
        let mut out = Vec::new();
        for (id, s) in &self.servers {
            match next.servers.get(id) {
                Some(n) if n.node == s.node && same_descriptor(&n.descriptor, &s.descriptor) => {}
                _ => out.push(id.clone()),
            }
        }
        out.extend(next.servers.keys().filter(|id| !self.servers.contains_key(*id)).cloned());
        out
    }
}

/// The reason a declaration is refused because `other` (an application) declares it too.
fn clash(application: &str, other: &str, kind: &str, id: &str) -> String {
    if application == other {
        format!("application `{application}':\nduplicate {kind} `{id}'")
    } else {
        format!("{kind} `{id}' is already registered (by application `{other}')")
    }
}

/// Whether two instantiated server descriptors are the same (encoded alike).
fn same_descriptor(a: &Class<ServerDescriptor>, b: &Class<ServerDescriptor>) -> bool {
    let bytes = |c: &Class<ServerDescriptor>| {
        let mut enc = Encoder::new(ENCODING);
        enc.write_class(Some(c));
        enc.write_pending_values();
        enc.into_bytes().to_vec()
    };
    bytes(a) == bytes(b)
}
