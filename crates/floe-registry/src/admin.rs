//! Sessions and the administrative interface: `IceGrid::AdminSession`, the object and adapter
//! parts of `IceGrid::Admin` (what `icegridadmin` needs for `object …`, `adapter …` and
//! `registry …`), and client sessions (`IceGrid::Session`).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::{Current, Error, Identity, ObjectPrx, Proxy};

use crate::database::{identity_string, written};
use crate::shared::{SessionRecord, Shared};
use crate::slice::glacier2::Session as Glacier2Session;
use crate::slice::ice::{SliceChecksumDict, StringSeq};
use crate::slice::ice_grid::{
    AdapterInfo, AdapterInfoSeq, AdapterNotExistException, AdapterObserverPrx, Admin, AdminPrx, AdminSession,
    AllocationException, ApplicationDescriptor, ApplicationInfo, ApplicationNotExistException, ApplicationObserverPrx,
    ApplicationUpdateDescriptor, DeploymentException, FileIteratorPrx, FileNotAvailableException, LoadInfo, NodeInfo,
    NodeNotExistException, NodeObserverPrx, ObjectExistsException, ObjectInfo, ObjectInfoSeq,
    ObjectNotRegisteredException, ObjectObserverPrx, RegistryInfo, RegistryNotExistException, RegistryObserverPrx,
    ServerInfo, ServerInstanceDescriptor, ServerNotExistException, ServerState, Session,
};

fn deployment(reason: impl Into<String>) -> Error {
    Error::user(DeploymentException { reason: reason.into() })
}

const NO_DEPLOYMENT: &str = "floe-registry does not deploy applications: servers register their adapters \
                             dynamically (IceGrid.Registry.DynamicRegistration)";

fn new_identity(shared: &Shared) -> Identity {
    Identity::with_category(&shared.config.instance_name, uuid::Uuid::new_v4().to_string().to_uppercase())
}

fn register(shared: &Arc<Shared>, identities: Vec<Identity>, current: &Current) -> Arc<SessionRecord> {
    let record = Arc::new(SessionRecord {
        identities,
        connection: current.connection().cloned(),
        last: Mutex::new(Instant::now()),
    });
    let key = identity_string(&record.identities[0]);
    let mut sessions = shared.sessions.lock().unwrap_or_else(|e| e.into_inner());
    sessions.insert(key, record.clone());
    record
}

/// Removes a session and its objects.
fn destroy(shared: &Shared, record: &SessionRecord) {
    let key = identity_string(&record.identities[0]);
    shared.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    for id in &record.identities {
        shared.client.remove(id);
    }
}

/// Destroys the sessions whose client has gone: idle for longer than the session timeout
/// and without an open connection.
pub(crate) fn reap(shared: &Shared) {
    let timeout = Duration::from_secs(shared.config.session_timeout.max(1) as u64);
    let expired: Vec<Arc<SessionRecord>> = shared
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .filter(|r| {
            let idle = r.last.lock().unwrap_or_else(|e| e.into_inner()).elapsed() > timeout;
            idle && r.connection.as_ref().is_none_or(|c| c.is_closed())
        })
        .cloned()
        .collect();
    for r in expired {
        destroy(shared, &r);
    }
}

/// Creates an admin session (with its admin object) for `user`; returns its proxy.
pub(crate) fn create_admin_session(shared: &Arc<Shared>, user: String, current: &Current) -> ObjectPrx {
    let session_id = new_identity(shared);
    let admin_id = new_identity(shared);
    let record = register(shared, vec![session_id.clone(), admin_id.clone()], current);
    let admin = shared.add_client_object(
        crate::slice::ice_grid::AdminServer::new(AdminI { shared: shared.clone(), record: record.clone() }),
        admin_id,
    );
    let session = AdminSessionI { shared: shared.clone(), record, admin: AdminPrx::from_object(admin), user };
    shared.add_client_object(crate::slice::ice_grid::AdminSessionServer::new(session), session_id)
}

/// Creates a client session for `user`; returns its proxy.
pub(crate) fn create_client_session(shared: &Arc<Shared>, user: String, current: &Current) -> ObjectPrx {
    let session_id = new_identity(shared);
    let record = register(shared, vec![session_id.clone()], current);
    let session = ClientSessionI { shared: shared.clone(), record, user };
    shared.add_client_object(crate::slice::ice_grid::SessionServer::new(session), session_id)
}

/// An `IceGrid::AdminSession`.
struct AdminSessionI {
    shared: Arc<Shared>,
    record: Arc<SessionRecord>,
    admin: AdminPrx,
    user: String,
}

impl Glacier2Session for AdminSessionI {
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        tracing::debug!(target: "floe_registry::session", user = self.user, "admin session destroyed");
        destroy(&self.shared, &self.record);
        Ok(())
    }
}

impl AdminSession for AdminSessionI {
    async fn keep_alive(&self, _: &Current) -> floe::Result<()> {
        self.record.touch();
        Ok(())
    }

    async fn get_admin(&self, _: &Current) -> floe::Result<Option<AdminPrx>> {
        self.record.touch();
        Ok(Some(self.admin.clone()))
    }

    async fn get_admin_callback_template(&self, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        // Observers are not supported, so no callback endpoints are offered.
        Ok(None)
    }

    async fn set_observers(
        &self,
        _registry: Option<RegistryObserverPrx>,
        _node: Option<NodeObserverPrx>,
        _app: Option<ApplicationObserverPrx>,
        _adapter: Option<AdapterObserverPrx>,
        _object: Option<ObjectObserverPrx>,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        Ok(())
    }

    async fn set_observers_by_identity(
        &self,
        _registry: Identity,
        _node: Identity,
        _app: Identity,
        _adapter: Identity,
        _object: Identity,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        Ok(())
    }

    async fn start_update(&self, _: &Current) -> floe::Result<i32> {
        Ok(0)
    }

    async fn finish_update(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn get_replica_name(&self, _: &Current) -> floe::Result<String> {
        Ok(self.shared.config.replica_name.clone())
    }

    async fn open_server_log(
        &self,
        _: String,
        _: String,
        _: i32,
        _: &Current,
    ) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_server_std_err(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_server_std_out(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_node_std_err(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_node_std_out(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_registry_std_err(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }

    async fn open_registry_std_out(&self, _: String, _: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        Err(not_available())
    }
}

fn not_available() -> Error {
    Error::user(FileNotAvailableException { reason: "floe-registry does not serve log files".into() })
}

/// An `IceGrid::Session` (client sessions; nothing is allocatable).
struct ClientSessionI {
    shared: Arc<Shared>,
    record: Arc<SessionRecord>,
    user: String,
}

impl Glacier2Session for ClientSessionI {
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        tracing::debug!(target: "floe_registry::session", user = self.user, "session destroyed");
        destroy(&self.shared, &self.record);
        Ok(())
    }
}

impl Session for ClientSessionI {
    async fn keep_alive(&self, _: &Current) -> floe::Result<()> {
        self.record.touch();
        Ok(())
    }

    async fn allocate_object_by_id(&self, id: Identity, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.record.touch();
        Err(Error::user(ObjectNotRegisteredException { id }))
    }

    async fn allocate_object_by_type(&self, r#type: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.record.touch();
        Err(Error::user(AllocationException { reason: format!("no allocatable object of type `{type}'") }))
    }

    async fn release_object(&self, id: Identity, _: &Current) -> floe::Result<()> {
        Err(Error::user(ObjectNotRegisteredException { id }))
    }

    async fn set_allocation_timeout(&self, _: i32, _: &Current) -> floe::Result<()> {
        Ok(())
    }
}

/// The `IceGrid::Admin` object of one admin session.
struct AdminI {
    shared: Arc<Shared>,
    record: Arc<SessionRecord>,
}

fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

impl AdminI {
    fn registry_name(&self, name: &str) -> floe::Result<()> {
        self.record.touch();
        if name == self.shared.config.replica_name {
            Ok(())
        } else {
            Err(Error::user(RegistryNotExistException { name: name.to_string() }))
        }
    }

    async fn add(&self, proxy: Option<ObjectPrx>, type_id: Option<String>) -> floe::Result<()> {
        self.record.touch();
        let Some(proxy) = proxy else { return Err(deployment("the proxy is null")) };
        let type_id = match type_id {
            Some(t) => t,
            None => {
                // As IceGrid does: ask the object for its type.
                let target =
                    proxy.ice_locator(Some(&self.shared.locator)).ice_invocation_timeout(Some(Duration::from_secs(10)));
                target.ice_id().await.map_err(|e| {
                    deployment(format!(
                        "cannot get the type of `{}' by calling ice_id on it ({e}): give the type explicitly",
                        identity_string(proxy.ice_get_identity())
                    ))
                })?
            }
        };
        let id = proxy.ice_get_identity().clone();
        match self.shared.db.add_object(proxy, &type_id, false) {
            Some(w) => written(w).await,
            None => Err(Error::user(ObjectExistsException { id })),
        }
    }
}

impl Admin for AdminI {
    async fn add_application(&self, _: ApplicationDescriptor, _: &Current) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn sync_application(&self, _: ApplicationDescriptor, _: &Current) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn update_application(&self, _: ApplicationUpdateDescriptor, _: &Current) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn sync_application_without_restart(&self, _: ApplicationDescriptor, _: &Current) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn update_application_without_restart(
        &self,
        _: ApplicationUpdateDescriptor,
        _: &Current,
    ) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn remove_application(&self, name: String, _: &Current) -> floe::Result<()> {
        Err(Error::user(ApplicationNotExistException { name }))
    }

    async fn instantiate_server(
        &self,
        _: String,
        _: String,
        _: ServerInstanceDescriptor,
        _: &Current,
    ) -> floe::Result<()> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn patch_application(&self, name: String, _: bool, _: &Current) -> floe::Result<()> {
        Err(Error::user(ApplicationNotExistException { name }))
    }

    async fn get_application_info(&self, name: String, _: &Current) -> floe::Result<ApplicationInfo> {
        Err(Error::user(ApplicationNotExistException { name }))
    }

    async fn get_default_application_descriptor(&self, _: &Current) -> floe::Result<ApplicationDescriptor> {
        Err(deployment(NO_DEPLOYMENT))
    }

    async fn get_all_application_names(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(Vec::new())
    }

    async fn get_server_info(&self, id: String, _: &Current) -> floe::Result<ServerInfo> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn get_server_state(&self, id: String, _: &Current) -> floe::Result<ServerState> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn get_server_pid(&self, id: String, _: &Current) -> floe::Result<i32> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn get_server_admin_category(&self, _: &Current) -> floe::Result<String> {
        Ok(format!("{}-Server", self.shared.config.instance_name))
    }

    async fn get_server_admin(&self, id: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn enable_server(&self, id: String, _: bool, _: &Current) -> floe::Result<()> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn is_server_enabled(&self, id: String, _: &Current) -> floe::Result<bool> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn start_server(&self, id: String, _: &Current) -> floe::Result<()> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn stop_server(&self, id: String, _: &Current) -> floe::Result<()> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn patch_server(&self, id: String, _: bool, _: &Current) -> floe::Result<()> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn send_signal(&self, id: String, _: String, _: &Current) -> floe::Result<()> {
        Err(Error::user(ServerNotExistException { id }))
    }

    async fn get_all_server_ids(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(Vec::new())
    }

    async fn get_adapter_info(&self, id: String, _: &Current) -> floe::Result<AdapterInfoSeq> {
        self.record.touch();
        let info = |id: String, e: crate::database::AdapterEntry| AdapterInfo {
            id,
            proxy: Some(e.proxy),
            replica_group_id: e.replica_group,
        };
        if let Some(e) = self.shared.db.adapter(&id) {
            return Ok(vec![info(id, e)]);
        }
        let members = self.shared.db.group_members(&id);
        if members.is_empty() {
            return Err(Error::user(AdapterNotExistException { id }));
        }
        Ok(members.into_iter().map(|(id, e)| info(id, e)).collect())
    }

    async fn remove_adapter(&self, id: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        match self.shared.db.remove_adapter(&id) {
            Some(w) => written(w).await,
            None => Err(Error::user(AdapterNotExistException { id })),
        }
    }

    async fn get_all_adapter_ids(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(self.shared.db.all_adapter_ids())
    }

    async fn add_object(&self, obj: Option<ObjectPrx>, _: &Current) -> floe::Result<()> {
        self.add(obj, None).await
    }

    async fn update_object(&self, obj: Option<ObjectPrx>, _: &Current) -> floe::Result<()> {
        self.record.touch();
        let Some(proxy) = obj else { return Err(deployment("the proxy is null")) };
        let id = proxy.ice_get_identity().clone();
        match self.shared.db.update_object(proxy) {
            Some(w) => written(w).await,
            None => Err(Error::user(ObjectNotRegisteredException { id })),
        }
    }

    async fn add_object_with_type(&self, obj: Option<ObjectPrx>, r#type: String, _: &Current) -> floe::Result<()> {
        self.add(obj, Some(r#type)).await
    }

    async fn remove_object(&self, id: Identity, _: &Current) -> floe::Result<()> {
        self.record.touch();
        match self.shared.db.remove_object(&id) {
            Some(w) => written(w).await,
            None => Err(Error::user(ObjectNotRegisteredException { id })),
        }
    }

    async fn get_object_info(&self, id: Identity, _: &Current) -> floe::Result<ObjectInfo> {
        self.record.touch();
        match self.shared.db.object(&id) {
            Some(e) => Ok(ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id }),
            None => Err(Error::user(ObjectNotRegisteredException { id })),
        }
    }

    async fn get_object_infos_by_type(&self, r#type: String, _: &Current) -> floe::Result<ObjectInfoSeq> {
        self.record.touch();
        Ok(self
            .shared
            .db
            .objects_of_type(&r#type)
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect())
    }

    async fn get_all_object_infos(&self, expr: String, _: &Current) -> floe::Result<ObjectInfoSeq> {
        self.record.touch();
        Ok(self
            .shared
            .db
            .objects_matching(&expr)
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect())
    }

    async fn ping_node(&self, name: String, _: &Current) -> floe::Result<bool> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_node_load(&self, name: String, _: &Current) -> floe::Result<LoadInfo> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_node_info(&self, name: String, _: &Current) -> floe::Result<NodeInfo> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_node_admin(&self, name: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_node_processor_socket_count(&self, name: String, _: &Current) -> floe::Result<i32> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn shutdown_node(&self, name: String, _: &Current) -> floe::Result<()> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_node_hostname(&self, name: String, _: &Current) -> floe::Result<String> {
        Err(Error::user(NodeNotExistException { name }))
    }

    async fn get_all_node_names(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(Vec::new())
    }

    async fn ping_registry(&self, name: String, _: &Current) -> floe::Result<bool> {
        self.registry_name(&name)?;
        Ok(true)
    }

    async fn get_registry_info(&self, name: String, _: &Current) -> floe::Result<RegistryInfo> {
        self.registry_name(&name)?;
        Ok(RegistryInfo { name, hostname: hostname() })
    }

    async fn get_registry_admin(&self, name: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.registry_name(&name)?;
        // floe-registry has no Ice admin facets.
        Ok(None)
    }

    async fn shutdown_registry(&self, name: String, _: &Current) -> floe::Result<()> {
        self.registry_name(&name)?;
        self.shared.communicator.shutdown();
        Ok(())
    }

    async fn get_all_registry_names(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(vec![self.shared.config.replica_name.clone()])
    }

    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        tracing::info!(target: "floe_registry", "shut down by an administrator");
        self.shared.communicator.shutdown();
        Ok(())
    }

    async fn get_slice_checksums(&self, _: &Current) -> floe::Result<SliceChecksumDict> {
        Ok(SliceChecksumDict::new())
    }
}
