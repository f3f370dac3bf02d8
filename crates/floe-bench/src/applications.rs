//! The `application add` figure of the locate test: an admin session adds an IceGrid
//! application of `SERVERS` servers (instances of one template, each with an adapter in a
//! declared replica group and a well-known object), as `icegridadmin application add` does,
//! and removes it again; only the adds are timed.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use floe::{Class, Communicator, Identity, Proxy};
use floe_registry::slice::ice_grid::{
    AdapterDescriptor, AdminPrx, ApplicationDescriptor, CommunicatorDescriptor, LoadBalancingPolicy, NodeDescriptor,
    ObjectDescriptor, PropertyDescriptor, PropertySetDescriptor, RegistryPrx, ReplicaGroupDescriptor,
    RoundRobinLoadBalancingPolicy, ServerDescriptor, ServerInstanceDescriptor, TemplateDescriptor,
};

use crate::locate::Sample;

/// Servers in the application.
pub(crate) const SERVERS: usize = 100;
const APPLICATION: &str = "BenchApplication";

/// The application: `SERVERS` instances of a template on one node.
fn descriptor() -> ApplicationDescriptor {
    let server = ServerDescriptor {
        base: CommunicatorDescriptor {
            adapters: vec![AdapterDescriptor {
                name: "Adapter".into(),
                id: "${server}.Adapter".into(),
                replica_group_id: "BenchDeployed".into(),
                server_lifetime: true,
                objects: vec![ObjectDescriptor {
                    id: Identity::new("deployed-${index}"),
                    r#type: "::Bench::Object".into(),
                    proxy_options: String::new(),
                }],
                ..Default::default()
            }],
            property_set: PropertySetDescriptor {
                references: Vec::new(),
                properties: vec![PropertyDescriptor {
                    name: "Adapter.Endpoints".into(),
                    value: "tcp -h 127.0.0.1".into(),
                }],
            },
            ..Default::default()
        },
        id: "BenchServer-${index}".into(),
        exe: "/bin/true".into(),
        activation: "manual".into(),
        ..Default::default()
    };
    let template = TemplateDescriptor {
        descriptor: Some(Class::new(server).to_any().downcast().expect("a server is a communicator")),
        parameters: vec!["index".into()],
        parameter_defaults: HashMap::new(),
    };
    let node = NodeDescriptor {
        server_instances: (0..SERVERS)
            .map(|i| ServerInstanceDescriptor {
                template: "BenchTemplate".into(),
                parameter_values: [("index".to_string(), i.to_string())].into(),
                ..Default::default()
            })
            .collect(),
        ..Default::default()
    };
    // Every member's endpoints (IceGrid requires the count to be given).
    let policy = Class::new(RoundRobinLoadBalancingPolicy { base: LoadBalancingPolicy { n_replicas: "0".into() } });
    ApplicationDescriptor {
        name: APPLICATION.into(),
        replica_groups: vec![ReplicaGroupDescriptor {
            id: "BenchDeployed".into(),
            load_balancing: Some(policy.to_any().downcast().expect("a policy")),
            ..Default::default()
        }],
        server_templates: [("BenchTemplate".to_string(), template)].into(),
        nodes: [("node1".to_string(), node)].into(),
        ..Default::default()
    }
}

/// An admin session's `Admin` object on the registry of `instance` at `port`.
pub(crate) async fn admin(c: &Communicator, instance: &str, port: u16) -> Result<AdminPrx, String> {
    let registry = RegistryPrx::from_object(
        c.string_to_proxy(&format!("{instance}/Registry:tcp -h 127.0.0.1 -p {port}")).map_err(|e| e.to_string())?,
    );
    let session = registry
        .create_admin_session("bench", "bench")
        .await
        .map_err(|e| format!("createAdminSession: {e}"))?
        .ok_or("no admin session")?;
    session.get_admin().await.map_err(|e| format!("getAdmin: {e}"))?.ok_or_else(|| "no admin object".into())
}

/// Adds and removes the application until `duration` has passed (at least three times);
/// the figures are those of the adds.
pub(crate) async fn measure(c: &Communicator, instance: &str, port: u16, duration: Duration) -> Result<Sample, String> {
    let admin = admin(c, instance, port).await?.ice_invocation_timeout(Some(Duration::from_secs(60)));
    let app = descriptor();
    let started = Instant::now();
    let mut adds: Vec<Duration> = Vec::new();
    while adds.len() < 3 || started.elapsed() < duration {
        let begin = Instant::now();
        admin.add_application(&app).await.map_err(|e| format!("addApplication: {e}"))?;
        adds.push(begin.elapsed());
        admin.remove_application(APPLICATION).await.map_err(|e| format!("removeApplication: {e}"))?;
        if adds.len() >= 1000 {
            break;
        }
    }
    let total: f64 = adds.iter().map(Duration::as_secs_f64).sum();
    let mut us: Vec<f64> = adds.iter().map(|d| d.as_secs_f64() * 1e6).collect();
    us.sort_by(f64::total_cmp);
    let at = |q: f64| us[((us.len() - 1) as f64 * q).round() as usize];
    Ok(Sample { rate: adds.len() as f64 / total, p50_us: at(0.5), p99_us: at(0.99) })
}
