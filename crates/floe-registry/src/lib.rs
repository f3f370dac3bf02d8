#![doc = include_str!("../README.md")]

pub mod config;
pub mod database;
pub mod record;
pub mod store;

mod admin;
mod allocation;
mod applications;
mod check;
mod client_session;
mod deploy;
mod etcd;
mod files;
mod node_table;
mod nodes;
mod observers;
mod servants;
mod sessions;
mod shared;
mod watchers;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use floe::encoding::EndpointData;
use floe::{Communicator, Error, Identity, ObjectAdapter, ObjectPrx};
use floe_service::crypt::CryptPasswords;

pub use config::{Config, ConfigError, LoadBalancing, ReplicaGroupConfig};
use database::Database;
use shared::Shared;

/// The Rust mapping of the Slice definitions of Ice 3.7 that the registry serves
/// (`Ice::Locator`, `IceGrid::Query`, `IceGrid::Admin`, …) and of IceGrid's internal
/// protocol, generated at build time (crate floe-icegrid).
pub use floe_icegrid as slice;

/// Why the registry could not start.
#[derive(Debug)]
pub struct StartError(pub String);

impl std::fmt::Display for StartError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StartError {}

impl From<Error> for StartError {
    fn from(e: Error) -> Self {
        StartError(e.to_string())
    }
}

/// A running registry.
pub struct RegistryService {
    shared: Arc<Shared>,
    adapters: Vec<ObjectAdapter>,
    reaper: tokio::task::JoinHandle<()>,
    checker: Option<tokio::task::JoinHandle<()>>,
    /// With etcd: what passes other replicas' application changes on to this one's nodes.
    follower: Option<tokio::task::JoinHandle<()>>,
}

impl std::fmt::Debug for RegistryService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegistryService").field("instance", &self.shared.config.instance_name).finish_non_exhaustive()
    }
}

impl RegistryService {
    /// Opens the database (or connects to etcd), creates and activates the registry's adapters
    /// (client, server and internal endpoints) and serves its objects. Must be called inside a
    /// tokio runtime.
    pub async fn start(communicator: Communicator, config: Config) -> Result<RegistryService, StartError> {
        let db = if !config.etcd.endpoints.is_empty() {
            if let Some(dir) = &config.data_dir {
                tracing::warn!(target: "floe_registry", "the state is in etcd: the data directory {} is not used", dir.display());
            }
            Database::with_etcd(|tables| etcd::connect(&config, &communicator, tables)).await.map_err(StartError)?
        } else {
            let store = match &config.data_dir {
                Some(dir) => Some(store::Store::open(dir).map_err(|e| StartError(e.to_string()))?),
                None => None,
            };
            Database::new(&communicator, store)
        };
        let client =
            communicator.create_object_adapter_with_endpoints("IceGrid.Registry.Client", &config.client_endpoints)?;
        let server =
            communicator.create_object_adapter_with_endpoints("IceGrid.Registry.Server", &config.server_endpoints)?;
        let internal = communicator
            .create_object_adapter_with_endpoints("IceGrid.Registry.Internal", &config.internal_endpoints)?;
        let published = |name: &str, endpoints: &Option<String>| -> Result<Option<Vec<EndpointData>>, StartError> {
            let Some(e) = endpoints else { return Ok(None) };
            let p = communicator
                .string_to_proxy(&format!("x:{e}"))
                .map_err(|err| StartError(format!("IceGrid.Registry.{name}.PublishedEndpoints: {err}")))?;
            Ok(Some(p.reference().wire.endpoints.clone()))
        };
        let client_published = published("Client", &config.client_published_endpoints)?;
        let server_published = published("Server", &config.server_published_endpoints)?;
        let direct = |adapter: &ObjectAdapter, eps: &Option<Vec<EndpointData>>, id: Identity| {
            let p = adapter.create_direct_proxy(id);
            match eps {
                Some(eps) => p.ice_endpoints(eps.clone()),
                None => p,
            }
        };
        let instance = config.instance_name.clone();
        let id = |name: &str| Identity::with_category(&instance, name);
        let load = |path: &Option<std::path::PathBuf>, property: &str| -> Result<Option<CryptPasswords>, StartError> {
            path.as_deref().map(|p| CryptPasswords::load(p, property)).transpose().map_err(StartError::from)
        };
        let crypt_passwords = load(&config.crypt_passwords, "IceGrid.Registry.CryptPasswords")?;
        let admin_crypt_passwords = load(&config.admin_crypt_passwords, "IceGrid.Registry.AdminCryptPasswords")?;
        let internal_registry = internal.create_direct_proxy(nodes::session::internal_registry_identity_for(&config));
        let node_observer = internal.create_direct_proxy(nodes::session::node_observer_identity_for(&config));
        let shared = Arc::new(Shared {
            crypt_passwords,
            admin_crypt_passwords,
            locator: direct(&client, &client_published, id("Locator")),
            locator_registry: direct(&server, &server_published, id("LocatorRegistry")),
            query: direct(&client, &client_published, id("Query")),
            registry: direct(&client, &client_published, id("Registry")),
            client_published,
            config,
            db,
            communicator: communicator.clone(),
            client: client.clone(),
            round_robin: Mutex::new(HashMap::new()),
            deployed: Mutex::new((u64::MAX, Arc::default())),
            observers: Default::default(),
            serial: Default::default(),
            sessions: Mutex::new(HashMap::new()),
            internal: internal.clone(),
            internal_registry,
            node_observer,
            nodes: Default::default(),
            allocations: Default::default(),
            offered: Mutex::new(None),
        });
        use slice::glacier2::PermissionsVerifierServer;
        use slice::ice::{LocatorFinderServer, LocatorRegistryServer};
        use slice::ice_grid::{LocatorServer, QueryServer, RegistryServer};
        client.add(LocatorServer::new(servants::LocatorI(shared.clone())), id("Locator"));
        client.add(QueryServer::new(servants::QueryI(shared.clone())), id("Query"));
        client.add(RegistryServer::new(servants::RegistryI(shared.clone())), id("Registry"));
        client.add(PermissionsVerifierServer::new(servants::NullPermissionsVerifier), id("NullPermissionsVerifier"));
        // `Ice/LocatorFinder`, which clients that know only the registry's address (the
        // IceGrid GUI, Ice's `--Ice.Default.Locator`-less tools) ask for the locator.
        client.add(
            LocatorFinderServer::new(servants::LocatorFinderI(shared.clone())),
            floe::Identity::with_category("Ice", "LocatorFinder"),
        );
        // What `Admin::getServerAdmin` hands out: routed to the server through its node.
        client.add_default_servant(
            Arc::new(files::ServerAdminRouter(shared.clone())),
            &files::server_admin_category(&shared),
        );
        server.add(LocatorRegistryServer::new(servants::LocatorRegistryI(shared.clone())), id("LocatorRegistry"));
        // What nodes talk to.
        internal.add(
            slice::ice_grid::InternalRegistryServer::new(nodes::session::InternalRegistryI(shared.clone())),
            shared.internal_registry.ice_get_identity().clone(),
        );
        internal.add(
            slice::ice_grid::NodeObserverServer::new(nodes::session::NodeObserverI(shared.clone())),
            shared.node_observer.ice_get_identity().clone(),
        );

        // The registry's own well-known objects, as IceGrid lists them.
        for (proxy, type_id) in [
            (&shared.query, "::IceGrid::Query"),
            (&shared.locator, "::Ice::Locator"),
            (&shared.registry, "::IceGrid::Registry"),
            (&shared.locator_registry, "::Ice::LocatorRegistry"),
            (&shared.internal_registry, "::IceGrid::InternalRegistry"),
        ] {
            database::durable(shared.db.add_local_object(proxy.clone(), type_id)).await;
        }

        internal.activate().await?;
        server.activate().await?;
        client.activate().await?;

        let weak = Arc::downgrade(&shared);
        let reaper = tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                match weak.upgrade() {
                    Some(s) => {
                        for key in sessions::reap(&s) {
                            let s = s.clone();
                            tokio::spawn(async move { client_session::release_all(&s, &key).await });
                        }
                        nodes::reap(&s);
                    }
                    None => return,
                }
            }
        });
        let checker = shared.config.adapter_check_interval.map(|interval| {
            tokio::spawn(check::run(Arc::downgrade(&shared), interval, shared.config.adapter_check_failures))
        });
        let follower = (!shared.config.etcd.endpoints.is_empty())
            .then(|| tokio::spawn(applications::follow(Arc::downgrade(&shared))));
        Ok(RegistryService { shared, adapters: vec![client, server, internal], reaper, checker, follower })
    }

    /// The proxy of `<InstanceName>/Locator`, for `Ice.Default.Locator`.
    pub fn locator(&self) -> &ObjectPrx {
        &self.shared.locator
    }

    /// How many adapters are registered.
    pub fn adapter_count(&self) -> usize {
        self.shared.db.adapter_count()
    }

    /// Waits until the communicator is shut down (by a signal or `Admin::shutdown`), then
    /// stops serving and writes what is left to the database.
    pub async fn wait(self) {
        self.shared.communicator.wait_for_shutdown().await;
        for a in &self.adapters {
            a.deactivate().await;
        }
        self.reaper.abort();
        for task in self.checker.iter().chain(&self.follower) {
            task.abort();
        }
        self.shared.db.close();
    }
}
