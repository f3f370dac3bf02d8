//! The registry's configuration, read from the same properties as IceGrid's registry.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use floe::Properties;
use floe_service::etcd::EtcdConfig;
use floe_service::props::non_empty;

/// What `floe-registry` was configured with.
#[derive(Debug, Clone)]
pub struct Config {
    /// `IceGrid.InstanceName` (default `IceGrid`): the category of the registry's objects.
    pub instance_name: String,
    /// `IceGrid.Registry.ReplicaName` (default `Master`).
    pub replica_name: String,
    /// `IceGrid.Registry.Client.Endpoints`: the locator, query, registry and sessions.
    pub client_endpoints: String,
    /// `IceGrid.Registry.Client.PublishedEndpoints`: the endpoints the client-side objects'
    /// proxies carry, when they differ from where the registry listens (default: those).
    pub client_published_endpoints: Option<String>,
    /// `IceGrid.Registry.Server.Endpoints`: the locator registry (default `tcp`).
    pub server_endpoints: String,
    /// `IceGrid.Registry.Server.PublishedEndpoints`: the endpoints of the locator registry's
    /// proxy, as servers are told by `getRegistry` (default: where it listens).
    pub server_published_endpoints: Option<String>,
    /// `IceGrid.Registry.Internal.Endpoints` (default `tcp`): where nodes reach the
    /// internal registry and their sessions.
    pub internal_endpoints: String,
    /// `IceGrid.Registry.LMDB.Path` (or 3.6's `IceGrid.Registry.Data`): the data directory.
    pub data_dir: Option<PathBuf>,
    /// `IceGrid.Registry.DynamicRegistration`: whether servers may register adapters that
    /// were not deployed (always the case with floe-registry's dynamic model).
    pub dynamic_registration: bool,
    /// `IceGrid.Registry.PermissionsVerifier`: a `Glacier2::PermissionsVerifier` proxy.
    pub permissions_verifier: Option<String>,
    /// `IceGrid.Registry.AdminPermissionsVerifier`.
    pub admin_permissions_verifier: Option<String>,
    /// `IceGrid.Registry.CryptPasswords`: a file of `user crypt-hash` lines.
    pub crypt_passwords: Option<PathBuf>,
    /// `IceGrid.Registry.AdminCryptPasswords`.
    pub admin_crypt_passwords: Option<PathBuf>,
    /// `IceGrid.Registry.SessionTimeout` in seconds (default 30).
    pub session_timeout: i32,
    /// `IceGrid.Registry.NodeSessionTimeout` in seconds (default 30): a node's session ends
    /// when it has not been kept alive for that long.
    pub node_session_timeout: i32,
    /// Replica groups declared with `Floe.Registry.ReplicaGroup.<id>.*`, by id.
    pub replica_groups: BTreeMap<String, ReplicaGroupConfig>,
    /// `Floe.Registry.AdapterCheck.Interval` in seconds (default 0: no checks): how often the
    /// registry pings every registered adapter, so that the registrations of servers that
    /// died without unregistering expire.
    pub adapter_check_interval: Option<Duration>,
    /// `Floe.Registry.AdapterCheck.Failures` (default 3): how many checks in a row an
    /// adapter must fail before its registration is removed.
    pub adapter_check_failures: u32,
    /// `Floe.Registry.Etcd.*`: with `Endpoints` (comma-separated `http://host:port` URLs),
    /// keep the state in this etcd cluster, shared with other replicas, instead of the data
    /// directory. `Prefix`: where under etcd's key space the state is (default
    /// `/floe-registry/<InstanceName>/`); `LeaseTTL` (s, default 30): how long the adapters'
    /// registrations outlive the last replica that kept their lease alive; `Timeout` (s,
    /// default 10): how long a change may take to reach etcd (retries included) before the
    /// request that made it fails, and how long the registry waits for etcd when it starts.
    pub etcd: EtcdConfig,
}

/// How `findAdapterById` orders (and trims) the members of a replica group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LoadBalancing {
    /// Members in the order of their adapter ids (IceGrid's order for groups formed
    /// dynamically and not declared).
    #[default]
    Undeclared,
    /// A random order on every resolution.
    Random,
    /// Each resolution starts with the next member.
    RoundRobin,
    /// By priority (lowest first), then adapter id.
    Ordered,
    /// By the load of the members' nodes (as they report it in their node sessions), lowest
    /// first; members whose node has no session come last.
    Adaptive,
}

/// A replica group declared in the configuration.
#[derive(Debug, Clone, Default)]
pub struct ReplicaGroupConfig {
    /// `Floe.Registry.ReplicaGroup.<id>.LoadBalancing`: `random` (default), `round-robin`,
    /// `ordered` or `adaptive`.
    pub load_balancing: LoadBalancing,
    /// `Floe.Registry.ReplicaGroup.<id>.NReplicas`: how many members a resolution returns
    /// (0, the default: all).
    pub n_replicas: usize,
    /// `Floe.Registry.ReplicaGroup.<id>.Priority.<AdapterId>`: priorities for `ordered`
    /// (default 0; lower comes first).
    pub priorities: BTreeMap<String, i64>,
    /// For `adaptive`: which load average orders the members, 1, 5 or 15 minutes (0: 1).
    pub load_sample: u8,
}

const GROUP_PREFIX: &str = "Floe.Registry.ReplicaGroup.";

fn replica_groups(props: &Properties) -> Result<BTreeMap<String, ReplicaGroupConfig>, ConfigError> {
    let mut groups: BTreeMap<String, ReplicaGroupConfig> = BTreeMap::new();
    for (name, value) in props.with_prefix(GROUP_PREFIX) {
        let rest = &name[GROUP_PREFIX.len()..];
        let value = value.trim();
        let bad = || ConfigError(format!("{name}: unexpected value {value:?}"));
        if let Some((id, adapter)) = rest.split_once(".Priority.") {
            let priority = value.parse().map_err(|_| bad())?;
            groups.entry(id.to_string()).or_default().priorities.insert(adapter.to_string(), priority);
            continue;
        }
        let Some((id, field)) = rest.rsplit_once('.') else {
            return Err(ConfigError(format!("{name}: expected {GROUP_PREFIX}<id>.LoadBalancing or .NReplicas")));
        };
        let group = groups.entry(id.to_string()).or_default();
        match field {
            "LoadBalancing" => {
                group.load_balancing = match value {
                    "random" => LoadBalancing::Random,
                    "round-robin" => LoadBalancing::RoundRobin,
                    "ordered" => LoadBalancing::Ordered,
                    "adaptive" => LoadBalancing::Adaptive,
                    _ => return Err(bad()),
                }
            }
            "NReplicas" => group.n_replicas = value.parse().map_err(|_| bad())?,
            _ => return Err(ConfigError(format!("{name}: unknown replica group property"))),
        }
    }
    for g in groups.values_mut() {
        if g.load_balancing == LoadBalancing::Undeclared {
            g.load_balancing = LoadBalancing::Random;
        }
    }
    Ok(groups)
}

/// Why the configuration is unusable.
#[derive(Debug)]
pub struct ConfigError(pub String);

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// The configuration a registry program runs with: as [`Config::from_properties`], and
    /// a data directory (`IceGrid.Registry.LMDB.Path`) or an etcd cluster is required.
    pub fn for_service(props: &Properties) -> Result<Config, String> {
        match Config::from_properties(props) {
            Ok(c) if c.data_dir.is_none() && c.etcd.endpoints.is_empty() => {
                Err("property `IceGrid.Registry.LMDB.Path' is not set".to_string())
            }
            Ok(c) => Ok(c),
            Err(e) => Err(e.to_string()),
        }
    }

    /// Reads the configuration; fails on a missing `IceGrid.Registry.Client.Endpoints`, as
    /// IceGrid's registry does (the program also requires a data directory, unless the state
    /// is in etcd).
    pub fn from_properties(props: &Properties) -> Result<Config, ConfigError> {
        let client_endpoints = non_empty(props, "IceGrid.Registry.Client.Endpoints")
            .ok_or_else(|| ConfigError("property `IceGrid.Registry.Client.Endpoints' is not set".into()))?;
        let data_dir = non_empty(props, "IceGrid.Registry.LMDB.Path")
            .or_else(|| non_empty(props, "IceGrid.Registry.Data"))
            .map(PathBuf::from);
        let bad = |e: floe::Error| ConfigError(e.to_string());
        let instance_name = non_empty(props, "IceGrid.InstanceName").unwrap_or_else(|| "IceGrid".into());
        let etcd = EtcdConfig::from_properties(props, "Floe.Registry", format!("/floe-registry/{instance_name}/"), 30)
            .map_err(bad)?;
        let check = props.get_int("Floe.Registry.AdapterCheck.Interval", 0).map_err(bad)?.clamp(0, 86_400);
        Ok(Config {
            adapter_check_interval: (check > 0).then(|| Duration::from_secs(check as u64)),
            adapter_check_failures: props.get_int("Floe.Registry.AdapterCheck.Failures", 3).map_err(bad)?.clamp(1, 1000)
                as u32,
            etcd,
            instance_name,
            replica_name: non_empty(props, "IceGrid.Registry.ReplicaName").unwrap_or_else(|| "Master".into()),
            client_endpoints,
            client_published_endpoints: non_empty(props, "IceGrid.Registry.Client.PublishedEndpoints"),
            server_published_endpoints: non_empty(props, "IceGrid.Registry.Server.PublishedEndpoints"),
            server_endpoints: non_empty(props, "IceGrid.Registry.Server.Endpoints").unwrap_or_else(|| "tcp".into()),
            internal_endpoints: non_empty(props, "IceGrid.Registry.Internal.Endpoints").unwrap_or_else(|| "tcp".into()),
            data_dir,
            dynamic_registration: props.get_bool("IceGrid.Registry.DynamicRegistration", false).map_err(bad)?,
            permissions_verifier: non_empty(props, "IceGrid.Registry.PermissionsVerifier"),
            admin_permissions_verifier: non_empty(props, "IceGrid.Registry.AdminPermissionsVerifier"),
            crypt_passwords: non_empty(props, "IceGrid.Registry.CryptPasswords").map(PathBuf::from),
            admin_crypt_passwords: non_empty(props, "IceGrid.Registry.AdminCryptPasswords").map(PathBuf::from),
            session_timeout: props
                .get_int("IceGrid.Registry.SessionTimeout", 30)
                .map_err(bad)?
                .clamp(1, i64::from(i32::MAX)) as i32,
            node_session_timeout: props
                .get_int("IceGrid.Registry.NodeSessionTimeout", 30)
                .map_err(bad)?
                .clamp(1, i64::from(i32::MAX)) as i32,
            replica_groups: replica_groups(props)?,
        })
    }
}
