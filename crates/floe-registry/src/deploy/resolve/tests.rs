//! Tests of instantiation: substitution, templates, property sets and the errors IceGrid gives.

use std::collections::HashMap;

use floe::Class;

use super::*;
use crate::slice::ice_grid::{NodeDescriptor, TemplateDescriptor};

fn props(pairs: &[(&str, &str)]) -> PropertySetDescriptor {
    PropertySetDescriptor {
        references: Vec::new(),
        properties: pairs
            .iter()
            .map(|(n, v)| PropertyDescriptor { name: n.to_string(), value: v.to_string() })
            .collect(),
    }
}

fn adapter(name: &str, id: &str, group: &str) -> AdapterDescriptor {
    AdapterDescriptor { name: name.into(), id: id.into(), replica_group_id: group.into(), ..Default::default() }
}

/// A server whose adapters have endpoints (`<name>.Endpoints` after `set`'s properties).
fn server(id: &str, exe: &str, adapters: Vec<AdapterDescriptor>, mut set: PropertySetDescriptor) -> ServerDescriptor {
    for a in &adapters {
        set.properties.push(PropertyDescriptor { name: format!("{}.Endpoints", a.name), value: "tcp".into() });
    }
    ServerDescriptor {
        base: CommunicatorDescriptor { adapters, property_set: set, ..Default::default() },
        id: id.into(),
        exe: exe.into(),
        activation: "on-demand".into(),
        ..Default::default()
    }
}

fn template_app() -> ApplicationDescriptor {
    let template = server(
        "${name}-${index}",
        "${exe}",
        vec![adapter("Hello", "${server}.Hello", "HelloGroup")],
        PropertySetDescriptor {
            references: vec!["common".into()],
            properties: vec![PropertyDescriptor {
                name: "Greeting".into(),
                value: "hi from ${server} on ${node}".into(),
            }],
        },
    );
    let mut server_templates = HashMap::new();
    server_templates.insert(
        "HelloTemplate".to_string(),
        TemplateDescriptor {
            descriptor: Some(Class::new(template).to_any().downcast().unwrap()),
            parameters: vec!["index".into(), "name".into()],
            parameter_defaults: [("name".to_string(), "hello".to_string())].into(),
        },
    );
    let instance = |i: &str| ServerInstanceDescriptor {
        template: "HelloTemplate".into(),
        parameter_values: [("index".to_string(), i.to_string())].into(),
        property_set: props(&[("Instance", i)]),
        ..Default::default()
    };
    let node = NodeDescriptor {
        variables: [("exe".to_string(), "/usr/bin/${tool}".to_string())].into(),
        server_instances: vec![instance("1"), instance("2")],
        servers: vec![Some(Class::new(server("plain", "$${literal}", vec![adapter("A", "", "")], props(&[]))))],
        ..Default::default()
    };
    ApplicationDescriptor {
        name: "Demo".into(),
        variables: [("tool".to_string(), "python3".to_string())].into(),
        server_templates,
        nodes: [("node1".to_string(), node)].into(),
        property_sets: [("common".to_string(), props(&[("Ice.Trace.Network", "1"), ("App", "${application}")]))].into(),
        ..Default::default()
    }
}

#[test]
fn templates_variables_and_property_sets_instantiate() {
    let servers = servers(&template_app()).unwrap();
    let ids: Vec<String> = servers.iter().map(|s| s.descriptor.read().id.clone()).collect();
    assert_eq!(ids, ["hello-1", "hello-2", "plain"]);
    let s = servers[0].descriptor.read();
    assert_eq!(s.exe, "/usr/bin/python3");
    assert_eq!(s.adapters[0].id, "hello-1.Hello");
    assert_eq!(s.adapters[0].replica_group_id, "HelloGroup");
    let p: Vec<(String, String)> =
        s.property_set.properties.iter().map(|p| (p.name.clone(), p.value.clone())).collect();
    assert_eq!(
        p,
        [
            ("Ice.Trace.Network".to_string(), "1".to_string()),
            ("App".into(), "Demo".into()),
            ("Greeting".into(), "hi from hello-1 on node1".into()),
            ("Hello.Endpoints".into(), "tcp".into()),
            ("Instance".into(), "1".into()),
        ]
    );
    assert!(s.property_set.references.is_empty());
    let plain = servers[2].descriptor.read();
    assert_eq!(plain.exe, "${literal}", "a doubled dollar escapes a reference");
    assert_eq!(plain.adapters[0].id, "plain.A", "the default adapter id is ${{server}}.${{adapter}}");
}

fn error_of(app: &ApplicationDescriptor) -> String {
    servers(app).expect_err("the application must not instantiate")
}

#[test]
fn unknown_template_undefined_and_unknown_parameters_are_refused() {
    let mut app = template_app();
    app.nodes.get_mut("node1").unwrap().server_instances[0].template = "Nope".into();
    assert!(error_of(&app).contains("unknown server template `Nope'"), "{}", error_of(&app));

    let mut app = template_app();
    app.nodes.get_mut("node1").unwrap().server_instances[0].parameter_values.clear();
    assert!(error_of(&app).contains("undefined parameters in server template `HelloTemplate': index"));

    let mut app = template_app();
    app.nodes.get_mut("node1").unwrap().server_instances[0].parameter_values.insert("colour".into(), "red".into());
    assert!(error_of(&app).contains("unknown parameters in server template `HelloTemplate': colour"));
}

#[test]
fn cycles_undefined_and_reserved_variables_are_refused() {
    let mut app = template_app();
    app.variables.insert("a".into(), "${b}".into());
    app.variables.insert("b".into(), "${a}".into());
    app.variables.insert("tool".into(), "${a}".into());
    assert!(error_of(&app).contains("circular definition"), "{}", error_of(&app));

    let mut app = template_app();
    app.variables.remove("tool");
    assert!(error_of(&app).contains("undefined variable `tool'"), "{}", error_of(&app));

    let mut app = template_app();
    app.variables.insert("server".into(), "x".into());
    assert!(error_of(&app).contains("reserved variable name"));

    let mut app = template_app();
    app.property_sets.get_mut("common").unwrap().references.push("common".into());
    assert!(error_of(&app).contains("circular dependency with property reference `common'"), "{}", error_of(&app));

    let mut app = template_app();
    app.property_sets.clear();
    assert!(error_of(&app).contains("property set `common' doesn't exist"));
}

#[test]
fn duplicate_servers_and_bad_activation_are_refused() {
    let mut app = template_app();
    let node = app.nodes.get_mut("node1").unwrap();
    node.server_instances[1].parameter_values.insert("index".into(), "1".into());
    assert!(error_of(&app).contains("duplicate server `hello-1' in node `node1'"));

    let mut app = template_app();
    let node = app.nodes.get_mut("node1").unwrap();
    node.servers[0].as_ref().unwrap().write().activation = "sometimes".into();
    assert!(error_of(&app).contains("unknown activation `sometimes'"));
}

#[test]
fn an_adapter_without_endpoints_is_refused() {
    let mut app = template_app();
    let node = app.nodes.get_mut("node1").unwrap();
    node.servers[0].as_ref().unwrap().write().base.property_set.properties.clear();
    assert!(error_of(&app).contains("invalid endpoints for adapter `A': empty string"), "{}", error_of(&app));
}

#[test]
fn node_variables_are_left_to_the_node() {
    let mut app = template_app();
    app.nodes.get_mut("node1").unwrap().servers[0].as_ref().unwrap().write().pwd = "${node.data}/x".into();
    let servers = servers(&app).unwrap();
    assert_eq!(servers[2].descriptor.read().pwd, "${node.data}/x");
}
