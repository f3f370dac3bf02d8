//! The node object (`<instance>/Node-<name>`, an `IceGrid::Node`), what the node shares
//! between its objects, and how it loads and destroys servers: the
//! server's directory under `<Data>/servers/<id>/` with its configuration files (each entry
//! of the descriptor's `properties`, `config` first, with what the node adds to it: the
//! output files, `Ice.Default.Locator`, `IceGrid.Node.PropertiesOverride`), its `Server`
//! object and one `Adapter` object per adapter.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::{Arc, Mutex};

use floe::{Communicator, Current, Error, Identity, ObjectAdapter, Proxy};
use floe_icegrid::ice::StringSeq;
use floe_icegrid::ice_grid::{
    AdapterPrx, AdapterPrxDict, AdapterServer, DeploymentException, FileReader, InternalDistributionDescriptor,
    InternalRegistryPrx, InternalRegistryPrxSeq, InternalServerDescriptor, LoadInfo, Node, NodePrx, PatcherFeedbackPrx,
    PropertyDescriptor, PropertyDescriptorSeq, ReplicaObserver, ServerPrx, ServerServer, ServerState,
};

use crate::activator;
use crate::adapter::AdapterServant;
use crate::config::NodeConfig;
use crate::context::NodeContext;
use crate::files;
use crate::platform;
use crate::servants::ServerServant;
use crate::server::{AdapterEntry, ServerEntry};

/// The node's state, shared by its objects and its registry session.
pub struct NodeShared {
    /// Its configuration and the registries' observers, shared with its servers.
    pub context: Arc<NodeContext>,
    /// Its communicator.
    pub communicator: Communicator,
    /// The `IceGrid.Node` adapter, which serves the node's, servers' and adapters' objects.
    pub adapter: ObjectAdapter,
    /// `<instance>/Node-<name>`.
    pub proxy: NodePrx,
    servers: Mutex<BTreeMap<String, Arc<ServerEntry>>>,
}

/// What `Node::loadServer` answers.
pub type Loaded = (ServerPrx, AdapterPrxDict, i32, i32);

impl NodeShared {
    /// The node's state; nothing is loaded yet.
    pub fn new(config: NodeConfig, communicator: Communicator, adapter: ObjectAdapter) -> Arc<NodeShared> {
        let id = Identity::with_category(&config.instance_name, format!("Node-{}", config.name));
        let proxy = NodePrx::from_object(adapter.create_proxy(id));
        Arc::new(NodeShared {
            context: Arc::new(NodeContext::new(config)),
            communicator,
            adapter,
            proxy,
            servers: Mutex::new(BTreeMap::new()),
        })
    }

    /// What the node was configured with.
    pub fn config(&self) -> &NodeConfig {
        &self.context.config
    }

    /// A loaded server.
    pub fn server(&self, id: &str) -> Option<Arc<ServerEntry>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned()
    }

    /// Every loaded server.
    pub fn servers(&self) -> Vec<Arc<ServerEntry>> {
        self.servers.lock().unwrap_or_else(|p| p.into_inner()).values().cloned().collect()
    }

    fn server_identity(&self, id: &str) -> Identity {
        Identity::with_category(format!("{}-Server", self.config().instance_name), id)
    }

    fn adapter_identity(&self, server: &str, adapter: &str) -> Identity {
        Identity::with_category(format!("{}-ServerAdapter", self.config().instance_name), format!("{server}-{adapter}"))
    }

    /// Loads (or updates) a server. With `restart`, a running server whose descriptor changed
    /// is stopped first (and started again if its activation is `always`).
    pub async fn load_server(
        self: &Arc<Self>,
        desc: InternalServerDescriptor,
        restart: bool,
    ) -> Result<Loaded, String> {
        check_name(&desc.id, "server id")?;
        // A `session` server runs as the session's user when the descriptor names none (on
        // a node run as root); while no session holds it, it does not run at all.
        let account = match (desc.activation.as_str(), desc.session_id.as_str(), desc.user.as_str()) {
            ("session", "", _) => None,
            ("session", session, "") => activator::account_for_session(session, self.config())?,
            (_, _, user) => activator::account(user, self.config())?,
        };
        let files = self.configuration_files(&desc)?;
        let dir = self.config().server_dir(&desc.id);
        write_server_dir(&dir, &desc, &files)
            .map_err(|e| format!("cannot write the server's files in {}: {e}", dir.display()))?;
        if let Some(a) = account {
            // The server owns its directory, as with IceGrid's node.
            chown_tree(&dir, a).map_err(|e| format!("cannot give {} to uid {}: {e}", dir.display(), a.uid))?;
        }

        let existing = self.server(&desc.id);
        let server = match existing {
            Some(s) => {
                // A new session (or none, on release) is a change even at the same revision:
                // the server then runs for another session.
                let old = s.descriptor();
                let changed = crate::descriptor::updated(&old, &desc, false) || old.session_id != desc.session_id;
                if changed && restart && s.state() != ServerState::Inactive {
                    tracing::info!(target: "floe_node::server", server = %s.id, "descriptor changed: stopping it");
                    let _ = s.stop().await;
                }
                s
            }
            None => {
                let s = ServerEntry::new(self.context.clone(), desc.clone(), account);
                self.adapter
                    .add(Arc::new(ServerServer(Arc::new(ServerServant(s.clone())))), self.server_identity(&desc.id));
                self.servers.lock().unwrap_or_else(|p| p.into_inner()).insert(desc.id.clone(), s.clone());
                s
            }
        };

        // Adapters: keep those still declared, add new ones, remove the others.
        let mut old = server.adapters();
        let mut adapters = BTreeMap::new();
        for a in desc.adapters.iter().flatten() {
            let id = a.read().id.clone();
            let entry = match old.remove(&id) {
                Some(e) => e,
                None => {
                    let identity = self.adapter_identity(&desc.id, &id);
                    let proxy = AdapterPrx::from_object(self.adapter.create_proxy(identity.clone()));
                    let e = AdapterEntry::new(id.clone(), proxy, Arc::downgrade(&server));
                    self.adapter.add(AdapterServer::new(AdapterServant(e.clone())), identity);
                    e
                }
            };
            adapters.insert(id, entry);
        }
        for (id, _) in old {
            self.adapter.remove(&self.adapter_identity(&desc.id, &id));
        }
        let dict: AdapterPrxDict = adapters.iter().map(|(id, e)| (id.clone(), Some(e.proxy.clone()))).collect();
        server.update(desc.clone(), account, adapters);

        if desc.activation == "always" && server.state() == ServerState::Inactive && server.is_enabled() {
            if let Err(reason) = server.start_on_demand() {
                tracing::warn!(target: "floe_node::server", server = %desc.id, %reason, "cannot start an `always' server");
            }
        }
        let proxy = ServerPrx::from_object(self.adapter.create_proxy(self.server_identity(&desc.id)));
        let secs = |d: std::time::Duration| i32::try_from(d.as_secs()).unwrap_or(i32::MAX);
        Ok((proxy, dict, secs(server.activation_timeout()), secs(server.deactivation_timeout())))
    }

    /// Stops and forgets a server, and removes its directory.
    pub async fn destroy_server(&self, id: &str) {
        let removed = self.servers.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
        let Some(server) = removed else { return };
        server.destroy().await;
        for a in server.adapters().keys() {
            self.adapter.remove(&self.adapter_identity(id, a));
        }
        self.adapter.remove(&self.server_identity(id));
        if check_name(id, "server id").is_ok() {
            let _ = std::fs::remove_dir_all(self.config().server_dir(id));
        }
        tracing::info!(target: "floe_node::server", server = %id, "destroyed");
    }

    /// Stops every running server (the node is shutting down).
    pub async fn stop_all(&self) {
        let stops: Vec<_> = self
            .servers()
            .into_iter()
            .filter(|s| s.state() != ServerState::Inactive)
            .map(|s| {
                tokio::spawn(async move {
                    let _ = s.stop().await;
                })
            })
            .collect();
        for stop in stops {
            let _ = stop.await;
        }
    }

    /// The configuration files of a server: the descriptor's, with what the node adds.
    fn configuration_files(
        &self,
        desc: &InternalServerDescriptor,
    ) -> Result<BTreeMap<String, PropertyDescriptorSeq>, String> {
        let mut files: HashMap<String, PropertyDescriptorSeq> = desc.properties.clone();
        let config = files.entry("config".to_string()).or_default();
        if let Some(dir) = &self.config().output_dir {
            let err = if self.config().redirect_err_to_out { "out" } else { "err" };
            for (name, suffix) in [("Ice.StdErr", err), ("Ice.StdOut", "out")] {
                if !config.iter().any(|p| p.name == name) {
                    config.push(property(name, &dir.join(format!("{}.{suffix}", desc.id)).to_string_lossy()));
                }
            }
        }
        let mut out = BTreeMap::new();
        for (file, mut props) in files {
            check_name(&file, "configuration file name")?;
            if let Some(locator) = &self.config().locator {
                if !props.iter().any(|p| p.name == "Ice.Default.Locator") {
                    props.push(property("Ice.Default.Locator", locator));
                }
            }
            if !self.config().properties_override.is_empty() {
                props.push(property("# Node properties override", ""));
                props.extend(self.config().properties_override.iter().map(|(n, v)| property(n, v)));
            }
            out.insert(file, props);
        }
        Ok(out)
    }
}

fn property(name: &str, value: &str) -> PropertyDescriptor {
    PropertyDescriptor { name: name.to_string(), value: value.to_string() }
}

/// Server ids and file names become paths: no separators, no `.` or `..`, not empty.
fn check_name(name: &str, what: &str) -> Result<(), String> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\0']) {
        Err(format!("invalid {what} `{name}'"))
    } else {
        Ok(())
    }
}

/// Writes `<dir>/{config,dbs,distrib,data}`, the configuration files (removing `config_*`
/// files no longer declared), the service data directories and the revision file.
fn write_server_dir(
    dir: &Path,
    desc: &InternalServerDescriptor,
    files: &BTreeMap<String, PropertyDescriptorSeq>,
) -> std::io::Result<()> {
    for sub in ["config", "dbs", "distrib", "data"] {
        std::fs::create_dir_all(dir.join(sub))?;
    }
    let stamp = timestamp();
    for (file, props) in files {
        let mut text = format!("# Configuration file ({stamp})\n\n");
        for p in props {
            if p.value.is_empty() && p.name.starts_with('#') {
                text.push_str(&p.name);
            } else {
                text.push_str(&p.name);
                text.push('=');
                text.push_str(&p.value);
            }
            text.push('\n');
        }
        let path = dir.join("config").join(file);
        let mut f = std::fs::File::create(&path)?;
        f.write_all(text.as_bytes())?;
    }
    let known: BTreeSet<&String> = files.keys().collect();
    for entry in std::fs::read_dir(dir.join("config"))?.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        if name.starts_with("config_") && !known.contains(&name) {
            let _ = std::fs::remove_file(entry.path());
        }
    }
    for service in desc.services.iter().flatten() {
        if check_name(service, "service name").is_ok() {
            std::fs::create_dir_all(dir.join(format!("data_{service}")))?;
        }
    }
    std::fs::write(
        dir.join("revision"),
        format!(
            "#\n# This server belongs to the application `{}'\n#\nuuid: {}\nrevision: {}\n",
            desc.application, desc.uuid, desc.revision
        ),
    )
}

/// Changes the owner of `dir` and everything in it.
fn chown_tree(dir: &Path, account: activator::Account) -> std::io::Result<()> {
    std::os::unix::fs::lchown(dir, Some(account.uid), Some(account.gid))?;
    if dir.is_dir() && !dir.is_symlink() {
        for entry in std::fs::read_dir(dir)? {
            chown_tree(&entry?.path(), account)?;
        }
    }
    Ok(())
}

/// The current UTC time as `YYYY-MM-DD HH:MM:SS`.
fn timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = ((secs / 86_400) as i64, secs % 86_400);
    // Days since 1970-01-01 to a civil date (proleptic Gregorian calendar).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {:02}:{:02}:{:02}", rest / 3600, rest / 60 % 60, rest % 60)
}

/// `<instance>/Node-<name>`.
pub struct NodeServant(pub Arc<NodeShared>);

impl NodeServant {
    async fn load(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        restart: bool,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        let desc = crate::descriptor::from_class(svr)?;
        tracing::debug!(target: "floe_node::server", server = %desc.id, revision = desc.revision, "loadServer");
        match self.0.load_server(desc, restart).await {
            Ok((proxy, adapters, at, dt)) => Ok((Some(proxy), adapters, at, dt)),
            Err(reason) => Err(Error::user(DeploymentException { reason })),
        }
    }
}

impl Node for NodeServant {
    async fn load_server(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        _replica_name: String,
        _current: &Current,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        self.load(svr, true).await
    }

    async fn load_server_without_restart(
        &self,
        svr: Option<floe::Class<InternalServerDescriptor>>,
        _replica_name: String,
        _current: &Current,
    ) -> floe::Result<(Option<ServerPrx>, AdapterPrxDict, i32, i32)> {
        self.load(svr, false).await
    }

    async fn destroy_server(&self, name: String, _: String, _: i32, _: String, _: &Current) -> floe::Result<()> {
        self.0.destroy_server(&name).await;
        Ok(())
    }

    async fn destroy_server_without_restart(
        &self,
        name: String,
        _: String,
        _: i32,
        _: String,
        _: &Current,
    ) -> floe::Result<()> {
        self.0.destroy_server(&name).await;
        Ok(())
    }

    async fn patch(
        &self,
        feedback: Option<PatcherFeedbackPrx>,
        _application: String,
        _server: String,
        _app_distrib: Option<floe::Class<InternalDistributionDescriptor>>,
        _shutdown: bool,
        _current: &Current,
    ) -> floe::Result<()> {
        // IcePatch2 distributions are not supported: say so to the caller's feedback object.
        if let Some(f) = feedback {
            let _ = f.failed("floe-node does not patch IcePatch2 distributions").await;
        }
        Ok(())
    }

    async fn register_with_replica(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        // One registry (the one of Ice.Default.Locator) holds the node's session.
        Ok(())
    }

    async fn get_name(&self, _: &Current) -> floe::Result<String> {
        Ok(self.0.config().name.clone())
    }

    async fn get_hostname(&self, _: &Current) -> floe::Result<String> {
        Ok(platform::node_info(&self.0.config().name, "").hostname)
    }

    async fn get_load(&self, _: &Current) -> floe::Result<LoadInfo> {
        Ok(platform::load())
    }

    async fn get_processor_socket_count(&self, _: &Current) -> floe::Result<i32> {
        Ok(platform::processor_sockets())
    }

    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        tracing::info!(target: "floe_node", "shutdown requested by the registry");
        self.0.communicator.shutdown();
        Ok(())
    }
}

impl FileReader for NodeServant {
    async fn get_offset_from_end(&self, filename: String, lines: i32, _: &Current) -> floe::Result<i64> {
        files::offset_from_end(files::node_file(&self.0.communicator, &filename)?, lines).await
    }

    async fn read(&self, filename: String, pos: i64, size: i32, _: &Current) -> floe::Result<(bool, i64, StringSeq)> {
        files::read(files::node_file(&self.0.communicator, &filename)?, pos, size).await
    }
}

impl ReplicaObserver for NodeServant {
    async fn replica_init(&self, _replicas: InternalRegistryPrxSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn replica_added(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn replica_removed(&self, _replica: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        Ok(())
    }
}
