//! Instantiation of an application descriptor: variables and template parameters substituted,
//! templates expanded into servers and services, property sets flattened. What comes out is
//! what the registry serves and what a node is given to activate.
//!
//! The rules are IceGrid's: `${name}` refers to a variable or a parameter, `$${name}` is a
//! literal `${name}`; variables are looked up from the innermost scope (template parameters,
//! then the node's variables, then the application's); the names IceGrid reserves
//! (`application`, `node`, `server`, `service` and those that start with them) cannot be
//! defined; the node-dependent ones (`node.os`, `node.data`, `server.data`, …) are left for the
//! node to resolve when it activates the server.

use std::collections::{BTreeMap, HashMap, HashSet};

use floe::{Class, Identity};

use crate::slice::ice_grid::{
    AdapterDescriptor, ApplicationDescriptor, CommunicatorDescriptor, IceBoxDescriptor, ObjectDescriptor,
    PropertyDescriptor, PropertySetDescriptor, PropertySetDescriptorDict, ServerDescriptor, ServerInstanceDescriptor,
    ServiceDescriptor, ServiceInstanceDescriptor, TemplateDescriptor,
};

/// Variables the node resolves (IceGrid's node-dependent reserved names): kept as written.
const NODE_VARIABLES: &[&str] = &[
    "node.os",
    "node.hostname",
    "node.release",
    "node.version",
    "node.machine",
    "node.datadir",
    "node.data",
    "node.ice.soversion",
    "session.id",
    "server.data",
    "service.data",
    "application.distrib",
    "server.distrib",
];

/// Whether `name` is reserved by IceGrid and so cannot be defined by a descriptor.
fn reserved(name: &str) -> bool {
    ["application", "node", "server", "service", "session"]
        .iter()
        .any(|r| name == *r || name.strip_prefix(r).is_some_and(|rest| rest.starts_with('.')))
}

/// One server of an application, instantiated.
#[derive(Debug, Clone)]
pub(crate) struct ServerInstance {
    /// The node it runs on.
    pub(crate) node: String,
    /// The instantiated descriptor (an `IceBoxDescriptor` for IceBox servers).
    pub(crate) descriptor: Class<ServerDescriptor>,
}

/// A substitution scope: variable values, which of them are template parameters (whose values
/// are not substituted again), and what the scope is, for error messages.
#[derive(Clone, Default)]
struct Scope {
    values: HashMap<String, String>,
    params: HashSet<String>,
    context: String,
}

impl Scope {
    fn error(&self, reason: impl std::fmt::Display) -> String {
        if self.context.is_empty() {
            reason.to_string()
        } else {
            format!("{}:\n{reason}", self.context)
        }
    }

    fn with(&self, name: &str, value: &str) -> Scope {
        let mut s = self.clone();
        s.values.insert(name.to_string(), value.to_string());
        s.params.remove(name);
        s
    }

    /// Adds user-defined variables (refusing reserved names).
    fn define(&mut self, vars: &HashMap<String, String>, what: &str) -> Result<(), String> {
        for (k, v) in vars {
            if k.is_empty() {
                return Err(self.error(format!("empty {what} name")));
            }
            if reserved(k) {
                return Err(self.error(format!("invalid {what} `{k}': reserved variable name")));
            }
            self.values.insert(k.clone(), v.clone());
            self.params.remove(k);
        }
        Ok(())
    }

    /// `value` with every variable reference replaced.
    fn subst(&self, value: &str) -> Result<String, String> {
        let mut seen = Vec::new();
        self.subst_in(value, &mut seen).map_err(|e| self.error(format!("invalid value `{value}': {e}")))
    }

    fn subst_in(&self, value: &str, seen: &mut Vec<String>) -> Result<String, String> {
        let mut out = String::with_capacity(value.len());
        let mut rest = value;
        while let Some(at) = rest.find("${") {
            // The run of `$` that ends at the `${`: an odd count escapes the reference.
            let before = &rest[..at];
            let dollars = before.len() - before.trim_end_matches('$').len() + 1;
            out.push_str(&before[..before.len() - (dollars - 1)]);
            out.extend(std::iter::repeat_n('$', dollars / 2));
            let after = &rest[at + 2..];
            let Some(end) = after.find('}') else {
                return Err(format!("malformed variable name in `{value}'"));
            };
            let name = &after[..end];
            if dollars.is_multiple_of(2) {
                // Escaped: the halved run of `$` already ends with the `$` of a literal
                // `${name}`.
                out.push('{');
                out.push_str(name);
                out.push('}');
            } else {
                match self.values.get(name) {
                    Some(v) if self.params.contains(name) => out.push_str(v),
                    Some(v) => {
                        if seen.iter().any(|s| s == name) {
                            return Err(format!("detected a circular definition of variable `{name}'"));
                        }
                        seen.push(name.to_string());
                        let v = self.subst_in(v, seen)?;
                        seen.pop();
                        out.push_str(&v);
                    }
                    None if NODE_VARIABLES.contains(&name) => {
                        out.push_str("${");
                        out.push_str(name);
                        out.push('}');
                    }
                    None => return Err(format!("undefined variable `{name}'")),
                }
            }
            rest = &after[end + 1..];
        }
        out.push_str(rest);
        Ok(out)
    }

    fn strings(&self, values: &[String]) -> Result<Vec<String>, String> {
        values.iter().map(|v| self.subst(v)).collect()
    }
}

/// The named property sets visible from a node: the node's, then the application's.
struct PropertySets<'a> {
    node: &'a PropertySetDescriptorDict,
    application: &'a PropertySetDescriptorDict,
}

impl PropertySets<'_> {
    /// The properties of `set` with its references expanded (in order, before its own).
    fn flatten(&self, set: &PropertySetDescriptor, scope: &Scope) -> Result<Vec<PropertyDescriptor>, String> {
        let mut out = Vec::new();
        self.flatten_into(set, scope, &mut Vec::new(), &mut out)?;
        Ok(out)
    }

    fn flatten_into(
        &self,
        set: &PropertySetDescriptor,
        scope: &Scope,
        seen: &mut Vec<String>,
        out: &mut Vec<PropertyDescriptor>,
    ) -> Result<(), String> {
        for reference in &set.references {
            let id = scope.subst(reference)?;
            if seen.contains(&id) {
                return Err(scope.error(format!("detected circular dependency with property reference `{id}'")));
            }
            let Some(named) = self.node.get(&id).or_else(|| self.application.get(&id)) else {
                return Err(
                    scope.error(format!("invalid reference to property set, property set `{id}' doesn't exist"))
                );
            };
            seen.push(id);
            self.flatten_into(named, scope, seen, out)?;
            seen.pop();
        }
        for p in &set.properties {
            out.push(PropertyDescriptor { name: scope.subst(&p.name)?, value: scope.subst(&p.value)? });
        }
        Ok(())
    }
}

fn resolve_object(o: &ObjectDescriptor, scope: &Scope) -> Result<ObjectDescriptor, String> {
    let id = Identity::with_category(&scope.subst(&o.id.category)?, scope.subst(&o.id.name)?);
    if id.name.is_empty() {
        return Err(
            scope.error(format!("invalid object identity `{}': name empty", crate::database::identity_string(&id)))
        );
    }
    Ok(ObjectDescriptor { id, r#type: scope.subst(&o.r#type)?, proxy_options: scope.subst(&o.proxy_options)? })
}

fn resolve_adapter(a: &AdapterDescriptor, scope: &Scope, default_id: &str) -> Result<AdapterDescriptor, String> {
    let name = scope.subst(&a.name)?;
    if name.is_empty() {
        return Err(scope.error("invalid adapter: empty name"));
    }
    let id = if a.id.is_empty() { default_id.replace("${adapter}", &name) } else { a.id.clone() };
    let id = scope.subst(&id)?;
    if id.is_empty() {
        return Err(scope.error(format!("empty id for adapter `{name}'")));
    }
    let priority = scope.subst(&a.priority)?;
    if !priority.is_empty() && priority.parse::<i64>().is_err() {
        return Err(scope.error(format!("invalid priority `{priority}' for adapter `{name}': not an integer")));
    }
    Ok(AdapterDescriptor {
        name,
        description: scope.subst(&a.description)?,
        id,
        replica_group_id: scope.subst(&a.replica_group_id)?,
        priority,
        register_process: a.register_process,
        server_lifetime: a.server_lifetime,
        objects: a.objects.iter().map(|o| resolve_object(o, scope)).collect::<Result<_, _>>()?,
        allocatables: a.allocatables.iter().map(|o| resolve_object(o, scope)).collect::<Result<_, _>>()?,
    })
}

/// The communicator part (adapters, properties, logs) of a server or service.
fn resolve_communicator(
    c: &CommunicatorDescriptor,
    scope: &Scope,
    sets: &PropertySets<'_>,
    default_adapter_id: &str,
    extra: &[&PropertySetDescriptor],
) -> Result<CommunicatorDescriptor, String> {
    let mut properties = sets.flatten(&c.property_set, scope)?;
    for set in extra {
        properties.extend(sets.flatten(set, scope)?);
    }
    let property = |name: &str| properties.iter().rev().find(|p| p.name == name).map(|p| p.value.clone());
    let mut adapters: Vec<AdapterDescriptor> =
        c.adapters.iter().map(|a| resolve_adapter(a, scope, default_adapter_id)).collect::<Result<_, _>>()?;
    // Objects without proxy options get their adapter's (`<name>.ProxyOptions`), else the
    // encoding the server uses, as IceGrid gives them.
    for a in &mut adapters {
        // Each adapter needs its endpoints (`<name>.Endpoints`, which the XML parsers write).
        if property(&format!("{}.Endpoints", a.name)).is_none_or(|e| e.is_empty()) {
            return Err(scope.error(format!("invalid endpoints for adapter `{}': empty string", a.name)));
        }
        let default = property(&format!("{}.ProxyOptions", a.name)).filter(|o| !o.is_empty()).unwrap_or_else(|| {
            format!("-e {}", property("Ice.Default.EncodingVersion").unwrap_or_else(|| "1.1".to_string()))
        });
        for o in a.objects.iter_mut().chain(a.allocatables.iter_mut()) {
            if o.proxy_options.is_empty() {
                o.proxy_options = default.clone();
            }
        }
    }
    Ok(CommunicatorDescriptor {
        adapters,
        property_set: PropertySetDescriptor { references: Vec::new(), properties },
        db_envs: Vec::new(),
        logs: scope.strings(&c.logs)?,
        description: scope.subst(&c.description)?,
    })
}

/// The values of a template's parameters for one instance, in the enclosing scope.
fn parameters(
    template: &TemplateDescriptor,
    kind: &str,
    name: &str,
    values: &HashMap<String, String>,
    scope: &Scope,
) -> Result<Scope, String> {
    let mut unknown: Vec<&String> = values.keys().filter(|k| !template.parameters.contains(k)).collect();
    if !unknown.is_empty() {
        unknown.sort();
        let list: Vec<&str> = unknown.iter().map(|s| s.as_str()).collect();
        return Err(scope.error(format!("unknown parameters in {kind} template `{name}': {}", list.join(" "))));
    }
    let mut inner = scope.clone();
    let mut missing = Vec::new();
    for p in &template.parameters {
        if reserved(p) {
            return Err(
                scope.error(format!("invalid parameter `{p}' of {kind} template `{name}': reserved variable name"))
            );
        }
        let value = match values.get(p).or_else(|| template.parameter_defaults.get(p)) {
            Some(v) => scope.subst(v)?,
            None => {
                missing.push(p.as_str());
                continue;
            }
        };
        inner.values.insert(p.clone(), value);
        inner.params.insert(p.clone());
    }
    if !missing.is_empty() {
        return Err(scope.error(format!("undefined parameters in {kind} template `{name}': {}", missing.join(" "))));
    }
    Ok(inner)
}

const ACTIVATIONS: &[&str] = &["", "manual", "on-demand", "always", "session"];

/// Instantiates the fields proper to a server (not its communicator part).
fn resolve_server(
    s: &ServerDescriptor,
    scope: &Scope,
    sets: &PropertySets<'_>,
    extra: &[&PropertySetDescriptor],
) -> Result<(ServerDescriptor, Scope), String> {
    let id = scope.subst(&s.id)?;
    if id.is_empty() {
        return Err(scope.error("invalid server: empty id"));
    }
    let mut scope = scope.with("server", &id);
    scope.context = format!("server `{id}'");
    let activation = scope.subst(&s.activation)?;
    if !ACTIVATIONS.contains(&activation.as_str()) {
        return Err(scope.error(format!("unknown activation `{activation}'")));
    }
    for (what, value) in
        [("activation timeout", &s.activation_timeout), ("deactivation timeout", &s.deactivation_timeout)]
    {
        let v = scope.subst(value)?;
        if !v.is_empty() && v.parse::<u32>().is_err() {
            return Err(scope.error(format!("invalid {what} `{v}': not an integer")));
        }
    }
    let base = resolve_communicator(&s.base, &scope, sets, "${server}.${adapter}", extra)?;
    let resolved = ServerDescriptor {
        base,
        id,
        exe: scope.subst(&s.exe)?,
        ice_version: scope.subst(&s.ice_version)?,
        pwd: scope.subst(&s.pwd)?,
        options: scope.strings(&s.options)?,
        envs: scope.strings(&s.envs)?,
        activation,
        activation_timeout: scope.subst(&s.activation_timeout)?,
        deactivation_timeout: scope.subst(&s.deactivation_timeout)?,
        application_distrib: s.application_distrib,
        distrib: s.distrib.clone(),
        allocatable: s.allocatable,
        user: scope.subst(&s.user)?,
    };
    Ok((resolved, scope))
}

/// An application's templates, by kind.
struct Templates<'a> {
    app: &'a ApplicationDescriptor,
}

impl Templates<'_> {
    fn server(&self, name: &str) -> Result<&TemplateDescriptor, String> {
        self.app.server_templates.get(name).ok_or_else(|| format!("unknown server template `{name}'"))
    }

    fn service(&self, name: &str) -> Result<&TemplateDescriptor, String> {
        self.app.service_templates.get(name).ok_or_else(|| format!("unknown service template `{name}'"))
    }
}

/// A server (or IceBox server) given directly or by a template, instantiated.
fn instantiate_server(
    descriptor: &Class<CommunicatorDescriptor>,
    scope: &Scope,
    sets: &PropertySets<'_>,
    templates: &Templates<'_>,
    instance: Option<&ServerInstanceDescriptor>,
) -> Result<Class<ServerDescriptor>, String> {
    let extra: Vec<&PropertySetDescriptor> = instance.map(|i| &i.property_set).into_iter().collect();
    if let Some(icebox) = descriptor.downcast::<IceBoxDescriptor>() {
        let icebox = icebox.read().clone();
        let (server, scope) = resolve_server(&icebox.base, scope, sets, &extra)?;
        let mut services = Vec::with_capacity(icebox.services.len());
        let mut names = HashSet::new();
        for svc in &icebox.services {
            let resolved = instantiate_service(svc, &scope, sets, templates, instance)?;
            if !names.insert(resolved.name.clone()) {
                return Err(scope.error(format!("duplicate service `{}'", resolved.name)));
            }
            services.push(ServiceInstanceDescriptor {
                template: String::new(),
                parameter_values: HashMap::new(),
                descriptor: Some(Class::new(resolved)),
                property_set: PropertySetDescriptor::default(),
            });
        }
        if let Some(instance) = instance {
            if let Some(name) = instance.service_property_sets.keys().find(|n| !names.contains(*n)) {
                return Err(scope.error(format!("invalid service property set: service `{name}' doesn't exist")));
            }
        }
        let boxed = Class::new(IceBoxDescriptor { base: server, services });
        return Ok(boxed.to_any().downcast::<ServerDescriptor>().expect("an IceBox descriptor is a server descriptor"));
    }
    let Some(server) = descriptor.downcast::<ServerDescriptor>() else {
        return Err(scope.error("invalid server: the descriptor is not a server descriptor"));
    };
    if instance.is_some_and(|i| !i.service_property_sets.is_empty()) {
        return Err(scope.error("service property sets are only allowed in IceBox server instances"));
    }
    let server = server.read().clone();
    let (resolved, _) = resolve_server(&server, scope, sets, &extra)?;
    Ok(Class::new(resolved))
}

fn instantiate_service(
    svc: &ServiceInstanceDescriptor,
    scope: &Scope,
    sets: &PropertySets<'_>,
    templates: &Templates<'_>,
    instance: Option<&ServerInstanceDescriptor>,
) -> Result<ServiceDescriptor, String> {
    let (descriptor, scope) = if svc.template.is_empty() {
        let Some(d) = &svc.descriptor else { return Err(scope.error("invalid service instance: no template defined")) };
        (d.read().clone(), scope.clone())
    } else {
        let name = scope.subst(&svc.template)?;
        let template = templates.service(&name).map_err(|e| scope.error(e))?;
        let inner = parameters(template, "service", &name, &svc.parameter_values, scope)?;
        let Some(d) = template.descriptor.as_ref().and_then(|d| d.downcast::<ServiceDescriptor>()) else {
            return Err(scope.error(format!("invalid service template `{name}': service definition is empty")));
        };
        let d = d.read().clone();
        (d, inner)
    };
    let name = scope.subst(&descriptor.name)?;
    if name.is_empty() {
        return Err(scope.error("invalid service: empty name"));
    }
    let mut scope = scope.with("service", &name);
    scope.context =
        format!("service `{name}' from server `{}'", scope.values.get("server").cloned().unwrap_or_default());
    let mut extra = vec![&svc.property_set];
    if let Some(set) = instance.and_then(|i| i.service_property_sets.get(&name)) {
        extra.push(set);
    }
    let base = resolve_communicator(&descriptor.base, &scope, sets, "${server}.${service}.${adapter}", &extra)?;
    Ok(ServiceDescriptor { base, name, entry: scope.subst(&descriptor.entry)? })
}

/// Checks the templates themselves: ids, definitions, duplicate parameters.
fn check_templates(app: &ApplicationDescriptor) -> Result<(), String> {
    for (kind, templates) in [("server", &app.server_templates), ("service", &app.service_templates)] {
        for (id, t) in templates {
            if id.is_empty() {
                return Err(format!("empty {kind} template id"));
            }
            if t.descriptor.is_none() {
                return Err(format!("invalid {kind} template `{id}': {kind} definition is empty"));
            }
            let mut seen = HashSet::new();
            let dups: Vec<&str> = t.parameters.iter().filter(|p| !seen.insert(*p)).map(|p| p.as_str()).collect();
            if !dups.is_empty() {
                return Err(format!("invalid {kind} template `{id}': duplicate parameters {}", dups.join(" ")));
            }
        }
    }
    Ok(())
}

/// The application's scope: its variables and its name.
fn application_scope(app: &ApplicationDescriptor) -> Result<Scope, String> {
    if app.name.is_empty() {
        return Err("invalid application: empty name".into());
    }
    let mut scope = Scope { context: format!("application `{}'", app.name), ..Scope::default() };
    scope.define(&app.variables, "variable")?;
    scope.values.insert("application".into(), app.name.clone());
    Ok(scope)
}

/// Where a server comes from in its node's descriptor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Entry {
    /// `servers[i]`.
    Server(usize),
    /// `server_instances[i]`.
    Instance(usize),
}

/// The servers of node `name` of `app`, instantiated, with where each comes from.
pub(crate) fn node_servers(
    app: &ApplicationDescriptor,
    name: &str,
) -> Result<Vec<(Entry, Class<ServerDescriptor>)>, String> {
    let app_scope = application_scope(app)?;
    let Some(node) = app.nodes.get(name) else { return Ok(Vec::new()) };
    if name.is_empty() {
        return Err(app_scope.error("invalid node: empty name"));
    }
    let templates = Templates { app };
    let mut scope = app_scope.with("node", name);
    scope.context = format!("node `{name}'");
    scope.define(&node.variables, "variable")?;
    let sets = PropertySets { node: &node.property_sets, application: &app.property_sets };
    let mut out = Vec::new();
    for (i, server) in node.servers.iter().enumerate() {
        let Some(server) = server else { return Err(scope.error("invalid server: null descriptor")) };
        let communicator = server.to_any().downcast::<CommunicatorDescriptor>().expect("a server is a communicator");
        out.push((Entry::Server(i), instantiate_server(&communicator, &scope, &sets, &templates, None)?));
    }
    for (i, instance) in node.server_instances.iter().enumerate() {
        let template_name = scope.subst(&instance.template)?;
        if template_name.is_empty() {
            return Err(scope.error("invalid server instance: template is not defined"));
        }
        let template = templates.server(&template_name).map_err(|e| scope.error(e))?;
        let inner = parameters(template, "server", &template_name, &instance.parameter_values, &scope)?;
        let Some(descriptor) = &template.descriptor else {
            return Err(scope.error(format!("invalid server template `{template_name}': server definition is empty")));
        };
        out.push((Entry::Instance(i), instantiate_server(descriptor, &inner, &sets, &templates, Some(instance))?));
    }
    let mut ids = HashSet::new();
    for (_, d) in &out {
        let id = d.read().id.clone();
        if !ids.insert(id.clone()) {
            return Err(scope.error(format!("duplicate server `{id}' in node `{name}'")));
        }
    }
    Ok(out)
}

/// Every server of `app`, instantiated, sorted by node then server id.
pub(crate) fn servers(app: &ApplicationDescriptor) -> Result<Vec<ServerInstance>, String> {
    check_templates(app)?;
    application_scope(app)?;
    let nodes: BTreeMap<&String, _> = app.nodes.iter().collect();
    let mut out = Vec::new();
    for name in nodes.keys() {
        for (_, descriptor) in node_servers(app, name)? {
            out.push(ServerInstance { node: (*name).clone(), descriptor });
        }
    }
    out.sort_by_cached_key(|s| (s.node.clone(), s.descriptor.read().id.clone()));
    Ok(out)
}

/// A replica group of `app`, with its objects' identities, types and options substituted.
pub(crate) fn replica_group_objects(
    app: &ApplicationDescriptor,
    objects: &[ObjectDescriptor],
) -> Result<Vec<ObjectDescriptor>, String> {
    let scope = application_scope(app)?;
    objects.iter().map(|o| resolve_object(o, &scope)).collect()
}

/// The adapters of a server, with those of its IceBox services, each with the service's name
/// ("" for the server's own).
pub(crate) fn adapters_of(descriptor: &Class<ServerDescriptor>) -> Vec<(String, AdapterDescriptor)> {
    let mut out: Vec<(String, AdapterDescriptor)> =
        descriptor.read().adapters.iter().map(|a| (String::new(), a.clone())).collect();
    if let Some(icebox) = descriptor.downcast::<IceBoxDescriptor>() {
        for svc in &icebox.read().services {
            if let Some(d) = &svc.descriptor {
                let d = d.read();
                out.extend(d.adapters.iter().map(|a| (d.name.clone(), a.clone())));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests;
