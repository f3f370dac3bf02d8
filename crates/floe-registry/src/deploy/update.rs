//! `updateApplication`: an `ApplicationUpdateDescriptor` applied to the application's current
//! descriptor, as IceGrid merges it (additions replace what has the same name or id, removals
//! name what goes, servers are matched by their instantiated ids).

use std::collections::HashSet;

use super::resolve::{node_servers, Entry};
use crate::slice::ice_grid::{
    ApplicationDescriptor, ApplicationUpdateDescriptor, NodeDescriptor, NodeUpdateDescriptor,
};

/// `app` with `update` applied; an error (a deployment failure's reason) if the update names
/// something that does not exist.
pub(crate) fn apply(
    app: &ApplicationDescriptor,
    update: &ApplicationUpdateDescriptor,
) -> Result<ApplicationDescriptor, String> {
    let mut out = app.clone();
    if let Some(d) = &update.description {
        out.description = d.read().value.clone();
    }
    if let Some(d) = &update.distrib {
        out.distrib = d.read().value.clone();
    }
    out.variables.extend(update.variables.clone());
    for v in &update.remove_variables {
        out.variables.remove(v);
    }
    out.property_sets.extend(update.property_sets.clone());
    for p in &update.remove_property_sets {
        out.property_sets.remove(p);
    }
    for group in &update.replica_groups {
        match out.replica_groups.iter_mut().find(|g| g.id == group.id) {
            Some(g) => *g = group.clone(),
            None => out.replica_groups.push(group.clone()),
        }
    }
    out.replica_groups.retain(|g| !update.remove_replica_groups.contains(&g.id));
    out.server_templates.extend(update.server_templates.clone());
    for t in &update.remove_server_templates {
        out.server_templates.remove(t);
    }
    out.service_templates.extend(update.service_templates.clone());
    for t in &update.remove_service_templates {
        out.service_templates.remove(t);
    }
    for n in &update.remove_nodes {
        out.nodes.remove(n);
    }
    for node in &update.nodes {
        let merged = match out.nodes.get(&node.name) {
            Some(_) => merge_node(&out, node)?,
            None => new_node(node)?,
        };
        out.nodes.insert(node.name.clone(), merged);
    }
    Ok(out)
}

fn new_node(update: &NodeUpdateDescriptor) -> Result<NodeDescriptor, String> {
    let name = &update.name;
    if !update.remove_variables.is_empty() {
        return Err(format!("can't remove variables for node `{name}': node doesn't exist"));
    }
    if !update.remove_property_sets.is_empty() {
        return Err(format!("can't remove property sets for node `{name}': node doesn't exist"));
    }
    if !update.remove_servers.is_empty() {
        return Err(format!("can't remove servers for node `{name}': node doesn't exist"));
    }
    Ok(NodeDescriptor {
        variables: update.variables.clone(),
        server_instances: update.server_instances.clone(),
        servers: update.servers.clone(),
        load_factor: update.load_factor.as_ref().map(|b| b.read().value.clone()).unwrap_or_default(),
        description: update.description.as_ref().map(|b| b.read().value.clone()).unwrap_or_default(),
        property_sets: update.property_sets.clone(),
    })
}

/// The ids its servers have once instantiated in `app`, by where they come from.
fn ids_by_entry(app: &ApplicationDescriptor, node: &str) -> Result<Vec<(Entry, String)>, String> {
    Ok(node_servers(app, node)?.into_iter().map(|(e, d)| (e, d.read().id.clone())).collect())
}

fn merge_node(app: &ApplicationDescriptor, update: &NodeUpdateDescriptor) -> Result<NodeDescriptor, String> {
    let name = &update.name;
    let mut node = app.nodes[name].clone();
    if let Some(d) = &update.description {
        node.description = d.read().value.clone();
    }
    if let Some(l) = &update.load_factor {
        node.load_factor = l.read().value.clone();
    }
    node.variables.extend(update.variables.clone());
    for v in &update.remove_variables {
        node.variables.remove(v);
    }
    node.property_sets.extend(update.property_sets.clone());
    for p in &update.remove_property_sets {
        node.property_sets.remove(p);
    }
    // Servers are known by their instantiated ids: those of the update's servers (computed in
    // a scratch application holding them alone on this node) replace the current ones.
    let mut scratch = app.clone();
    scratch.nodes.insert(
        name.clone(),
        NodeDescriptor {
            servers: update.servers.clone(),
            server_instances: update.server_instances.clone(),
            ..node.clone()
        },
    );
    let replaced: HashSet<String> = ids_by_entry(&scratch, name)?.into_iter().map(|(_, id)| id).collect();
    let remove: HashSet<&String> = update.remove_servers.iter().collect();
    let current = ids_by_entry(app, name)?;
    let goes = |id: &String| replaced.contains(id) || remove.contains(id);
    let mut servers = Vec::new();
    let mut instances = Vec::new();
    for (entry, id) in &current {
        match entry {
            Entry::Server(i) if !goes(id) => servers.push(node.servers[*i].clone()),
            Entry::Instance(i) if !goes(id) => instances.push(node.server_instances[*i].clone()),
            _ => {}
        }
    }
    servers.extend(update.servers.iter().cloned());
    instances.extend(update.server_instances.iter().cloned());
    node.servers = servers;
    node.server_instances = instances;
    Ok(node)
}
