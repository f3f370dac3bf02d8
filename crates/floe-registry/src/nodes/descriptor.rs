//! The `InternalServerDescriptor` a node is given for a deployed server (`Node::loadServer`),
//! made as IceGrid's registry makes it:
//!
//! - the node-dependent variables left by instantiation (`${node.os}`, `${node.data}`,
//!   `${server.data}`, …) are substituted with what the node told when it registered;
//! - `properties` maps each configuration file the node writes to its properties: `config`
//!   for the server (and `config_<service>` for each IceBox service), starting with a
//!   `# Server configuration` comment, `Ice.Admin.ServerId`, `Ice.Admin.Endpoints` (unless
//!   the descriptor sets `Ice.Admin.Enabled` or `Ice.Admin.Endpoints`), `Ice.ProgramName`,
//!   then per adapter `# Object adapter <name>`, `<name>.Endpoints`, `<name>.AdapterId`,
//!   `<name>.ReplicaGroupId`, then database environments and the descriptor's own
//!   properties; names and values are escaped as Ice's property files need.

use floe::encoding::Encoder;
use floe::Class;

use crate::deploy::DeployedServer;
use crate::record::ENCODING;
use crate::slice::ice_grid::{
    CommunicatorDescriptor, IceBoxDescriptor, InternalAdapterDescriptor, InternalDbEnvDescriptor,
    InternalDistributionDescriptor, InternalNodeInfo, InternalServerDescriptor, PropertyDescriptor,
};

/// `value` with the node-dependent variables of server `server` (and service `service`)
/// on `node` substituted; other text, `${…}` included, is kept.
fn node_subst(value: &str, node: &InternalNodeInfo, server: &Names<'_>, service: &str) -> String {
    let Names { server, application, session } = *server;
    if !value.contains("${") {
        return value.to_string();
    }
    let data = node.data_dir.as_str();
    let lookup = |name: &str| -> Option<String> {
        Some(match name {
            "node.os" => node.os.clone(),
            "node.hostname" => node.hostname.clone(),
            "node.release" => node.release.clone(),
            "node.version" => node.version.clone(),
            "node.machine" => node.machine.clone(),
            "node.datadir" | "node.data" => data.to_string(),
            "server.data" => format!("{data}/servers/{server}/data"),
            "server.distrib" => format!("{data}/servers/{server}/distrib"),
            "application.distrib" => format!("{data}/distrib/{application}"),
            "service.data" if !service.is_empty() => format!("{data}/servers/{server}/data_{service}"),
            "session.id" => session.to_string(),
            _ => return None,
        })
    };
    let mut out = String::with_capacity(value.len());
    let mut rest = value;
    while let Some(at) = rest.find("${") {
        out.push_str(&rest[..at]);
        let after = &rest[at + 2..];
        match after.find('}').and_then(|end| lookup(&after[..end]).map(|v| (end, v))) {
            Some((end, v)) => {
                out.push_str(&v);
                rest = &after[end + 1..];
            }
            None => {
                out.push_str("${");
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Escapes a property name (`equal`) or value for an Ice configuration file, as IceGrid
/// does: `#`, `=` (in names) and backslashes before them, and leading or trailing spaces.
pub(crate) fn escape_property(s: &str, equal: bool) -> String {
    let first = s.find(|c| c != ' ');
    let last = s.rfind(|c| c != ' ');
    let mut out = String::with_capacity(s.len() + 4);
    let mut pending_backslash = false;
    for (i, c) in s.char_indices() {
        match c {
            ' ' => {
                let outside = first.is_none_or(|f| i < f) || last.is_none_or(|l| i > l);
                if outside {
                    if pending_backslash {
                        out.push('\\');
                    }
                    out.push('\\');
                }
                out.push(c);
                pending_backslash = false;
            }
            '=' if !equal => {
                out.push(c);
                pending_backslash = false;
            }
            '\\' | '#' | '=' => {
                if pending_backslash {
                    out.push('\\');
                }
                if c == '\\' {
                    pending_backslash = true;
                } else {
                    out.push('\\');
                    pending_backslash = false;
                }
                out.push(c);
            }
            _ => {
                out.push(c);
                pending_backslash = false;
            }
        }
    }
    out
}

fn property(name: impl Into<String>, value: impl Into<String>) -> PropertyDescriptor {
    PropertyDescriptor { name: name.into(), value: value.into() }
}

fn comment(text: impl Into<String>) -> PropertyDescriptor {
    property(text, "")
}

/// The last value of `name` in `props` (IceGrid reads properties that way), if any.
fn last_value<'a>(props: &'a [PropertyDescriptor], name: &str) -> Option<&'a str> {
    props.iter().rev().find(|p| p.name == name).map(|p| p.value.as_str())
}

/// IceGrid's `major * 10000 + minor * 100` of an `ice-version` attribute; 0 when unset.
fn ice_version(v: &str) -> i32 {
    let v = v.trim();
    if v.is_empty() {
        return 0;
    }
    let mut parts = v.split('.');
    let major: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    let minor: i32 = parts.next().and_then(|p| p.parse().ok()).unwrap_or(0);
    major * 10000 + minor * 100
}

/// One communicator (the server, or an IceBox service) of the descriptor being built.
struct Communicator<'a> {
    desc: &'a CommunicatorDescriptor,
    /// The service's name, "" for the server.
    service: String,
}

/// What a server's node-dependent variables are resolved with besides the node.
#[derive(Clone, Copy)]
struct Names<'a> {
    server: &'a str,
    application: &'a str,
    /// The id of the session that allocated the server (`${session.id}`), "" if none.
    session: &'a str,
}

/// The descriptor node `node` is given for server `s`; `session` is the id of the session
/// that allocated it ("" if none), which a server with the `session` activation mode runs
/// for (and which `${session.id}` stands for).
pub(crate) fn build(s: &DeployedServer, node: &InternalNodeInfo, session: &str) -> Class<InternalServerDescriptor> {
    let d = s.descriptor.read();
    let id = d.id.clone();
    let names = Names { server: &id, application: &s.application, session };
    let subst = |v: &str, service: &str| node_subst(v, node, &names, service);
    let version = ice_version(&d.ice_version);
    let modern = version == 0 || version >= 30300;
    let own_props: Vec<PropertyDescriptor> =
        d.property_set.properties.iter().map(|p| property(subst(&p.name, ""), subst(&p.value, ""))).collect();

    let mut out = InternalServerDescriptor {
        id: id.clone(),
        application: s.application.clone(),
        uuid: s.uuid.clone(),
        revision: s.revision,
        session_id: session.to_string(),
        exe: subst(&d.exe, ""),
        pwd: subst(&d.pwd, ""),
        user: subst(&d.user, ""),
        activation: d.activation.clone(),
        activation_timeout: d.activation_timeout.clone(),
        deactivation_timeout: d.deactivation_timeout.clone(),
        application_distrib: d.application_distrib,
        distrib: (!d.distrib.icepatch.is_empty()).then(|| {
            Class::new(InternalDistributionDescriptor {
                icepatch: subst(&d.distrib.icepatch, ""),
                directories: d.distrib.directories.iter().map(|x| subst(x, "")).collect(),
            })
        }),
        process_registered: false,
        options: d.options.iter().map(|o| subst(o, "")).collect(),
        envs: d.envs.iter().map(|e| subst(e, "")).collect(),
        logs: Vec::new(),
        adapters: Vec::new(),
        db_envs: Vec::new(),
        properties: Default::default(),
        services: Some(Vec::new()),
    };

    let mut config = vec![comment("# Server configuration")];
    if modern {
        config.push(property("Ice.Admin.ServerId", &id));
        if let Some(v) = last_value(&own_props, "Ice.Admin.Enabled") {
            out.process_registered = v.trim().parse::<i64>().unwrap_or(0) > 0;
        } else if let Some(v) = last_value(&own_props, "Ice.Admin.Endpoints") {
            out.process_registered = !v.is_empty();
        } else {
            config.push(property("Ice.Admin.Endpoints", "tcp -h localhost"));
            out.process_registered = true;
        }
    } else {
        config.push(property("Ice.ServerId", &id));
    }
    config.push(property("Ice.ProgramName", &id));

    let mut communicators = vec![Communicator { desc: &d.base, service: String::new() }];
    let icebox = s.descriptor.downcast::<IceBoxDescriptor>();
    let icebox_guard = icebox.as_ref().map(|b| b.read());
    let services: Vec<_> = icebox_guard
        .as_ref()
        .map(|b| b.services.iter().filter_map(|svc| svc.descriptor.as_ref().map(|d| d.read())).collect())
        .unwrap_or_default();
    if icebox_guard.is_some() {
        let mut order = Vec::new();
        for svc in &services {
            let path = format!("{}/servers/{id}/config/config_{}", node.data_dir, svc.name);
            let entry = subst(&svc.entry, &svc.name);
            config.push(property(
                format!("IceBox.Service.{}", svc.name),
                format!("{entry} --Ice.Config='{}'", escape_property(&path, false)),
            ));
            order.push(svc.name.clone());
        }
        config.push(property("IceBox.LoadOrder", order.join(" ")));
        if !modern {
            if let Some(v) = last_value(&own_props, "IceBox.ServiceManager.RegisterProcess") {
                out.process_registered |= v != "0";
            } else {
                config.push(property("IceBox.ServiceManager.RegisterProcess", "1"));
                out.process_registered = true;
            }
            if last_value(&own_props, "IceBox.ServiceManager.Endpoints").is_none() {
                config.push(property("IceBox.ServiceManager.Endpoints", "tcp -h 127.0.0.1"));
            }
        }
        if last_value(&own_props, "IceBox.InstanceName").is_none()
            && last_value(&own_props, "IceBox.ServiceManager.Endpoints").is_some()
        {
            config.push(property("IceBox.InstanceName", &id));
        }
        communicators.extend(services.iter().map(|svc| Communicator { desc: &svc.base, service: svc.name.clone() }));
    }
    out.properties.insert("config".to_string(), config);

    for c in &communicators {
        add_communicator(&mut out, c, node, modern, &|v: &str| subst(v, &c.service));
    }
    Class::new(out)
}

/// Adds a communicator's adapters, logs, database environments and properties to `out`
/// (IceGrid's `config` or `config_<service>` file).
fn add_communicator(
    out: &mut InternalServerDescriptor,
    c: &Communicator<'_>,
    node: &InternalNodeInfo,
    modern: bool,
    subst: &dyn Fn(&str) -> String,
) {
    let file = if c.service.is_empty() { "config".to_string() } else { format!("config_{}", c.service) };
    if !c.service.is_empty() {
        out.services.get_or_insert_with(Vec::new).push(c.service.clone());
    }
    let config = out.properties.get("config").cloned().unwrap_or_default();
    let ignore_server_lifetime = !c.service.is_empty()
        && modern
        && (last_value(&config, "Ice.Admin.Enabled").and_then(|v| v.trim().parse::<i64>().ok()).unwrap_or(0) > 0
            || last_value(&config, "Ice.Admin.Endpoints").is_some_and(|v| !v.is_empty()));
    let mut own: Vec<PropertyDescriptor> =
        c.desc.property_set.properties.iter().map(|p| property(subst(&p.name), subst(&p.value))).collect();
    let mut props = out.properties.remove(&file).unwrap_or_default();
    for a in &c.desc.adapters {
        out.adapters.push(Some(Class::new(InternalAdapterDescriptor {
            id: a.id.clone(),
            server_lifetime: !ignore_server_lifetime && a.server_lifetime,
        })));
        props.push(comment(format!("# Object adapter {}", a.name)));
        let key = format!("{}.Endpoints", a.name);
        let endpoints = last_value(&own, &key).unwrap_or("").to_string();
        own.retain(|p| p.name != key);
        props.push(property(key, endpoints));
        props.push(property(format!("{}.AdapterId", a.name), &a.id));
        if !a.replica_group_id.is_empty() {
            props.push(property(format!("{}.ReplicaGroupId", a.name), &a.replica_group_id));
        }
        if !modern && a.register_process {
            props.push(property(format!("{}.RegisterProcess", a.name), "1"));
            out.process_registered = true;
        }
    }
    out.logs.extend(c.desc.logs.iter().map(|l| subst(l)));
    let dbs = format!("{}/servers/{}/dbs/", node.data_dir, out.id);
    for db in &c.desc.db_envs {
        props.push(comment(format!("# Database environment {}", db.name)));
        let home = if db.db_home.is_empty() {
            out.db_envs.push(Some(Class::new(InternalDbEnvDescriptor {
                name: db.name.clone(),
                properties: db.properties.iter().map(|p| property(subst(&p.name), subst(&p.value))).collect(),
            })));
            format!("{dbs}{}", db.name)
        } else {
            subst(&db.db_home)
        };
        props.push(property(format!("Freeze.DbEnv.{}.DbHome", db.name), home));
    }
    if !own.is_empty() {
        let what = if c.service.is_empty() { "Server" } else { "Service" };
        props.push(comment(format!("# {what} descriptor properties")));
        props.extend(own);
    }
    if modern {
        for p in &mut props {
            if !p.name.starts_with('#') || !p.value.is_empty() {
                p.name = escape_property(&p.name, true);
                p.value = escape_property(&p.value, false);
            }
        }
    }
    out.properties.insert(file, props);
}

/// The descriptor's encoding (its configuration files in name order): a server is loaded
/// again when it changes. As in IceGrid, a new revision alone loads it again, and the node
/// does not restart a server whose descriptor is otherwise the same.
pub(crate) fn digest(desc: &Class<InternalServerDescriptor>) -> Vec<u8> {
    let mut copy = desc.read().clone();
    let mut props: Vec<_> = copy.properties.into_iter().collect();
    props.sort_by(|a, b| a.0.cmp(&b.0));
    copy.properties = Default::default();
    let mut enc = Encoder::new(ENCODING);
    enc.write_class(Some(&Class::new(copy)));
    enc.write_pending_values();
    let mut bytes = enc.into_bytes().to_vec();
    for (file, p) in props {
        bytes.extend_from_slice(file.as_bytes());
        for p in p {
            bytes.extend_from_slice(format!("\0{}\0{}", p.name, p.value).as_bytes());
        }
        bytes.push(1);
    }
    bytes
}

#[cfg(test)]
mod tests {
    use floe::Class;

    use super::{build, escape_property};
    use crate::deploy::DeployedServer;
    use crate::slice::ice_grid::{
        AdapterDescriptor, CommunicatorDescriptor, IceBoxDescriptor, InternalNodeInfo, PropertyDescriptor,
        PropertySetDescriptor, ServerDescriptor, ServiceDescriptor, ServiceInstanceDescriptor,
    };

    fn props(list: &[(&str, &str)]) -> Vec<PropertyDescriptor> {
        list.iter().map(|(n, v)| PropertyDescriptor { name: n.to_string(), value: v.to_string() }).collect()
    }

    fn communicator(adapter: &str, id: &str, properties: &[(&str, &str)]) -> CommunicatorDescriptor {
        CommunicatorDescriptor {
            adapters: vec![AdapterDescriptor {
                name: adapter.into(),
                id: id.into(),
                server_lifetime: true,
                ..Default::default()
            }],
            property_set: PropertySetDescriptor { properties: props(properties), ..Default::default() },
            ..Default::default()
        }
    }

    fn node() -> InternalNodeInfo {
        InternalNodeInfo { name: "node1".into(), os: "Linux".into(), data_dir: "/data".into(), ..Default::default() }
    }

    fn deployed(descriptor: Class<ServerDescriptor>) -> DeployedServer {
        DeployedServer { application: "App".into(), uuid: "U".into(), revision: 3, node: "node1".into(), descriptor }
    }

    fn server(id: &str, base: CommunicatorDescriptor) -> ServerDescriptor {
        ServerDescriptor {
            base,
            id: id.into(),
            exe: "${node.data}/bin/server".into(),
            options: vec!["--data=${server.data}".into()],
            activation: "on-demand".into(),
            ..Default::default()
        }
    }

    #[test]
    fn a_server_gets_the_config_file_icegrid_writes() {
        let base = communicator("Hello", "S.Hello", &[("Hello.Endpoints", "tcp -h 127.0.0.1"), ("Greeting", "a #1")]);
        let d = build(&deployed(Class::new(server("S", base))), &node(), "");
        let d = d.read();
        assert_eq!(d.exe, "/data/bin/server");
        assert_eq!(d.options, ["--data=/data/servers/S/data"]);
        assert_eq!((d.application.as_str(), d.uuid.as_str(), d.revision), ("App", "U", 3));
        assert!(d.process_registered);
        assert_eq!(d.services, Some(Vec::new()));
        let adapter = d.adapters[0].as_ref().unwrap().read().clone();
        assert_eq!((adapter.id.as_str(), adapter.server_lifetime), ("S.Hello", true));
        assert_eq!(
            d.properties["config"],
            props(&[
                ("# Server configuration", ""),
                ("Ice.Admin.ServerId", "S"),
                ("Ice.Admin.Endpoints", "tcp -h localhost"),
                ("Ice.ProgramName", "S"),
                ("# Object adapter Hello", ""),
                ("Hello.Endpoints", "tcp -h 127.0.0.1"),
                ("Hello.AdapterId", "S.Hello"),
                ("# Server descriptor properties", ""),
                ("Greeting", "a \\#1"),
            ])
        );
        assert_eq!(d.properties.len(), 1);
    }

    #[test]
    fn icebox_services_get_a_file_each() {
        let base = communicator("IceBox.ServiceManager", "B.IceBox.ServiceManager", &[("Ice.Admin.Enabled", "1")]);
        let service = ServiceDescriptor {
            base: communicator("Svc", "B.Svc", &[("Svc.Endpoints", "tcp")]),
            name: "Svc".into(),
            entry: "svc:create".into(),
        };
        let icebox = Class::new(IceBoxDescriptor {
            base: server("B", base),
            services: vec![ServiceInstanceDescriptor { descriptor: Some(Class::new(service)), ..Default::default() }],
        });
        let icebox = icebox.to_any().downcast::<ServerDescriptor>().unwrap();
        let d = build(&deployed(icebox), &node(), "");
        let d = d.read();
        assert_eq!(d.services, Some(vec!["Svc".to_string()]));
        let config = &d.properties["config"];
        assert!(config.contains(
            &props(&[("IceBox.Service.Svc", "svc:create --Ice.Config='/data/servers/B/config/config_Svc'")])[0]
        ));
        assert!(config.contains(&props(&[("IceBox.LoadOrder", "Svc")])[0]));
        assert!(!config.iter().any(|p| p.name == "Ice.Admin.Endpoints"), "Ice.Admin.Enabled is set");
        assert_eq!(
            d.properties["config_Svc"],
            props(&[("# Object adapter Svc", ""), ("Svc.Endpoints", "tcp"), ("Svc.AdapterId", "B.Svc")])
        );
        // With the admin enabled, the services' adapters do not follow the server's lifetime.
        let lifetimes: Vec<bool> = d.adapters.iter().map(|a| a.as_ref().unwrap().read().server_lifetime).collect();
        assert_eq!(lifetimes, [true, false]);
    }

    #[test]
    fn escapes_as_ice_property_files_need() {
        assert_eq!(escape_property("plain value", false), "plain value");
        assert_eq!(escape_property(" padded ", false), "\\ padded\\ ");
        assert_eq!(escape_property("a#b", false), "a\\#b");
        assert_eq!(escape_property("a=b", true), "a\\=b");
        assert_eq!(escape_property("a=b", false), "a=b");
        assert_eq!(escape_property("\\server", false), "\\server");
        assert_eq!(escape_property("\\#", false), "\\\\\\#");
    }
}
