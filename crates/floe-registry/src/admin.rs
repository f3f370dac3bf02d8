//! The administrative interface: `IceGrid::AdminSession` and `IceGrid::Admin` (what
//! `icegridadmin` and the IceGrid GUI call; its application part is in
//! [`crate::applications`]). Client sessions are in [`crate::client_session`], the sessions'
//! records in [`crate::sessions`].

use std::sync::Arc;
use std::time::Duration;

use floe::{Current, Error, Identity, ObjectPrx, Proxy};

use crate::applications;
use crate::database::{identity_string, written};
use crate::files;
use crate::nodes::admin as nodes;
use crate::sessions;
use crate::shared::{SessionRecord, Shared};
use crate::slice::glacier2::Session as Glacier2Session;
use crate::slice::ice::{SliceChecksumDict, StringSeq};
use crate::slice::ice_grid::{
    AdapterInfo, AdapterInfoSeq, AdapterNotExistException, AdapterObserverPrx, Admin, AdminPrx, AdminSession,
    ApplicationDescriptor, ApplicationInfo, ApplicationObserverPrx, ApplicationUpdateDescriptor, DeploymentException,
    FileIteratorPrx, LoadInfo, NodeInfo, NodeObserverPrx, ObjectExistsException, ObjectInfo, ObjectInfoSeq,
    ObjectNotRegisteredException, ObjectObserverPrx, PatchException, RegistryInfo, RegistryNotExistException,
    RegistryObserverPrx, ServerInfo, ServerInstanceDescriptor, ServerState,
};
use crate::watchers::ObserverSet;

fn deployment(reason: impl Into<String>) -> Error {
    Error::user(DeploymentException { reason: reason.into() })
}

/// Creates an admin session (with its admin object) for `user`; returns its proxy.
pub(crate) fn create_admin_session(shared: &Arc<Shared>, user: String, current: &Current) -> ObjectPrx {
    let session_id = sessions::new_identity(shared);
    let admin_id = sessions::new_identity(shared);
    let record = sessions::register(shared, vec![session_id.clone(), admin_id.clone()], current);
    let admin = shared.add_client_object(
        crate::slice::ice_grid::AdminServer::new(AdminI {
            shared: shared.clone(),
            record: record.clone(),
            user: user.clone(),
        }),
        admin_id,
    );
    let session = AdminSessionI { shared: shared.clone(), record, admin: AdminPrx::from_object(admin), user };
    shared.add_client_object(crate::slice::ice_grid::AdminSessionServer::new(session), session_id)
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
        sessions::destroy(&self.shared, &self.record);
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
        registry: Option<RegistryObserverPrx>,
        node: Option<NodeObserverPrx>,
        application: Option<ApplicationObserverPrx>,
        adapter: Option<AdapterObserverPrx>,
        object: Option<ObjectObserverPrx>,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        let set = ObserverSet { registry, node, application, adapter, object };
        crate::observers::register(&self.shared, &identity_string(&self.record.identities[0]), set).await;
        Ok(())
    }

    async fn set_observers_by_identity(
        &self,
        registry: Identity,
        node: Identity,
        application: Identity,
        adapter: Identity,
        object: Identity,
        current: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        let ids = [registry, node, application, adapter, object];
        let set = crate::observers::by_identity(&self.shared, current.connection(), ids);
        crate::observers::register(&self.shared, &identity_string(&self.record.identities[0]), set).await;
        Ok(())
    }

    async fn start_update(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.shared.serial.load(std::sync::atomic::Ordering::SeqCst))
    }

    async fn finish_update(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn get_replica_name(&self, _: &Current) -> floe::Result<String> {
        Ok(self.shared.config.replica_name.clone())
    }

    async fn open_server_log(
        &self,
        id: String,
        path: String,
        lines: i32,
        _: &Current,
    ) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_server_file(&self.shared, &self.record, &id, format!("#{path}"), lines).await
    }

    async fn open_server_std_err(&self, id: String, lines: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_server_file(&self.shared, &self.record, &id, "stderr".into(), lines).await
    }

    async fn open_server_std_out(&self, id: String, lines: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_server_file(&self.shared, &self.record, &id, "stdout".into(), lines).await
    }

    async fn open_node_std_err(&self, name: String, lines: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_node_file(&self.shared, &self.record, &name, "stderr", lines).await
    }

    async fn open_node_std_out(&self, name: String, lines: i32, _: &Current) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_node_file(&self.shared, &self.record, &name, "stdout", lines).await
    }

    async fn open_registry_std_err(
        &self,
        name: String,
        lines: i32,
        _: &Current,
    ) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_registry_file(&self.shared, &self.record, &name, "stderr", lines).await
    }

    async fn open_registry_std_out(
        &self,
        name: String,
        lines: i32,
        _: &Current,
    ) -> floe::Result<Option<FileIteratorPrx>> {
        files::open_registry_file(&self.shared, &self.record, &name, "stdout", lines).await
    }
}

/// The `IceGrid::Admin` object of one admin session.
struct AdminI {
    shared: Arc<Shared>,
    record: Arc<SessionRecord>,
    /// The session's user: who created or updated an application.
    user: String,
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
        if self.shared.deployment().object(&id).is_some() {
            return Err(Error::user(ObjectExistsException { id }));
        }
        match self.shared.db.add_object(proxy, &type_id, false) {
            Some(w) => written(w).await,
            None => Err(Error::user(ObjectExistsException { id })),
        }
    }
}

impl Admin for AdminI {
    async fn add_application(&self, descriptor: ApplicationDescriptor, _: &Current) -> floe::Result<()> {
        self.record.touch();
        applications::add(&self.shared, &self.user, descriptor).await
    }

    async fn sync_application(&self, descriptor: ApplicationDescriptor, _: &Current) -> floe::Result<()> {
        self.record.touch();
        applications::sync(&self.shared, &self.user, descriptor, false).await
    }

    async fn update_application(&self, update: ApplicationUpdateDescriptor, _: &Current) -> floe::Result<()> {
        self.record.touch();
        applications::update(&self.shared, &self.user, update, false).await
    }

    async fn sync_application_without_restart(
        &self,
        descriptor: ApplicationDescriptor,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        applications::sync(&self.shared, &self.user, descriptor, true).await
    }

    async fn update_application_without_restart(
        &self,
        update: ApplicationUpdateDescriptor,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        applications::update(&self.shared, &self.user, update, true).await
    }

    async fn remove_application(&self, name: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        applications::remove(&self.shared, &name).await
    }

    async fn instantiate_server(
        &self,
        application: String,
        node: String,
        instance: ServerInstanceDescriptor,
        _: &Current,
    ) -> floe::Result<()> {
        self.record.touch();
        applications::instantiate(&self.shared, &self.user, application, node, instance).await
    }

    async fn patch_application(&self, name: String, _: bool, _: &Current) -> floe::Result<()> {
        // Nothing to patch without a distribution (icegridadmin patches after every add).
        let info = applications::info(&self.shared, &name)?;
        if info.descriptor.distrib.icepatch.is_empty() {
            return Ok(());
        }
        Err(Error::user(PatchException {
            reasons: vec![format!("application `{name}': floe-registry does not distribute files (IcePatch2)")],
        }))
    }

    async fn get_application_info(&self, name: String, _: &Current) -> floe::Result<ApplicationInfo> {
        self.record.touch();
        applications::info(&self.shared, &name)
    }

    async fn get_default_application_descriptor(&self, _: &Current) -> floe::Result<ApplicationDescriptor> {
        Err(deployment(
            "no default templates configured, you need to set IceGrid.Registry.DefaultTemplates in the \
             IceGrid registry configuration.",
        ))
    }

    async fn get_all_application_names(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(applications::names(&self.shared))
    }

    async fn get_server_info(&self, id: String, _: &Current) -> floe::Result<ServerInfo> {
        self.record.touch();
        applications::server_info(&self.shared, &id)
    }

    async fn get_server_state(&self, id: String, _: &Current) -> floe::Result<ServerState> {
        self.record.touch();
        nodes::server_state(&self.shared, &id).await
    }

    async fn get_server_pid(&self, id: String, _: &Current) -> floe::Result<i32> {
        self.record.touch();
        nodes::server_pid(&self.shared, &id).await
    }

    async fn get_server_admin_category(&self, _: &Current) -> floe::Result<String> {
        Ok(files::server_admin_category(&self.shared))
    }

    async fn get_server_admin(&self, id: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.record.touch();
        // The server must be deployed and loaded on its node; requests then go through the
        // registry's server admin router to the node, and on to the server.
        crate::nodes::servers::ensure(&self.shared, &id).await?;
        let identity = Identity::with_category(files::server_admin_category(&self.shared), id);
        Ok(Some(self.shared.client_proxy(identity)))
    }

    async fn enable_server(&self, id: String, enabled: bool, _: &Current) -> floe::Result<()> {
        self.record.touch();
        nodes::enable_server(&self.shared, &id, enabled).await
    }

    async fn is_server_enabled(&self, id: String, _: &Current) -> floe::Result<bool> {
        self.record.touch();
        nodes::is_server_enabled(&self.shared, &id).await
    }

    async fn start_server(&self, id: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        nodes::start_server(&self.shared, &id).await
    }

    async fn stop_server(&self, id: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        nodes::stop_server(&self.shared, &id).await
    }

    async fn patch_server(&self, id: String, _: bool, _: &Current) -> floe::Result<()> {
        Err(applications::server_node_unreachable(&self.shared, &id))
    }

    async fn send_signal(&self, id: String, signal: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        nodes::send_signal(&self.shared, &id, &signal).await
    }

    async fn get_all_server_ids(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(applications::server_ids(&self.shared))
    }

    async fn get_adapter_info(&self, id: String, _: &Current) -> floe::Result<AdapterInfoSeq> {
        self.record.touch();
        let info = |id: String, e: crate::database::AdapterEntry| AdapterInfo {
            id,
            proxy: Some(e.proxy),
            replica_group_id: e.replica_group,
        };
        let deployed = self.shared.deployment();
        // Adapters of servers that nodes run: as their node knows them.
        let on_node = |member: String| async move {
            let proxy = crate::nodes::locate::current_proxy(&self.shared, &member).await?;
            let group = self.shared.deployment().adapters.get(&member).map(|a| a.replica_group.clone());
            Some(AdapterInfo { id: member, proxy, replica_group_id: group.unwrap_or_default() })
        };
        if let Some(i) = on_node(id.clone()).await {
            return Ok(vec![i]);
        }
        if let Some(e) = self.shared.db.adapter(&id) {
            return Ok(vec![info(id, e)]);
        }
        if let Some(a) = deployed.adapters.get(&id) {
            // Deployed, not active: no endpoints yet.
            return Ok(vec![AdapterInfo { id, proxy: None, replica_group_id: a.replica_group.clone() }]);
        }
        let members = self.shared.db.group_members(&id);
        let mut infos: Vec<AdapterInfo> = Vec::new();
        for (member, e) in members {
            match on_node(member.clone()).await {
                Some(i) => infos.push(i),
                None => infos.push(info(member, e)),
            }
        }
        for (member, a) in deployed.adapters.iter().filter(|(_, a)| a.replica_group == id) {
            if infos.iter().any(|i| &i.id == member) {
                continue;
            }
            if let Some(i) = on_node(member.clone()).await {
                infos.push(i);
            } else {
                infos.push(AdapterInfo { id: member.clone(), proxy: None, replica_group_id: a.replica_group.clone() });
            }
        }
        if infos.is_empty() && !deployed.groups.contains_key(&id) {
            return Err(Error::user(AdapterNotExistException { id }));
        }
        Ok(infos)
    }

    async fn remove_adapter(&self, id: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        let deployed = self.shared.deployment();
        if let Some(a) = deployed.adapters.get(&id) {
            return Err(deployment(format!(
                "removing adapter `{id}' is not allowed:\nthe adapter was added with the application descriptor `{}' \
                 (server `{}')",
                a.application, a.server
            )));
        }
        if let Some(g) = deployed.groups.get(&id) {
            return Err(deployment(format!(
                "removing replica group `{id}' is not allowed:\nthe replica group was added with the application \
                 descriptor `{}'",
                g.application
            )));
        }
        match self.shared.db.remove_adapter(&id) {
            Some(w) => written(w).await,
            None => Err(Error::user(AdapterNotExistException { id })),
        }
    }

    async fn get_all_adapter_ids(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        let mut ids = self.shared.db.all_adapter_ids();
        let deployed = self.shared.deployment();
        ids.extend(deployed.adapters.keys().cloned());
        ids.extend(deployed.groups.keys().cloned());
        ids.sort();
        ids.dedup();
        Ok(ids)
    }

    async fn add_object(&self, obj: Option<ObjectPrx>, _: &Current) -> floe::Result<()> {
        self.add(obj, None).await
    }

    async fn update_object(&self, obj: Option<ObjectPrx>, _: &Current) -> floe::Result<()> {
        self.record.touch();
        let Some(proxy) = obj else { return Err(deployment("the proxy is null")) };
        let id = proxy.ice_get_identity().clone();
        if self.shared.deployment().object(&id).is_some() {
            return Err(deployment(format!(
                "updating object `{}' is not allowed: objects added with an application descriptor can only be \
                 updated with an application update",
                identity_string(&id)
            )));
        }
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
        if self.shared.deployment().object(&id).is_some() {
            let key = identity_string(&id);
            let app = self.shared.deployment().object_applications.get(&key).cloned().unwrap_or_default();
            return Err(deployment(format!(
                "removing object `{key}' is not allowed:\nthe object was added with the application descriptor `{app}'"
            )));
        }
        match self.shared.db.remove_object(&id) {
            Some(w) => written(w).await,
            None => Err(Error::user(ObjectNotRegisteredException { id })),
        }
    }

    async fn get_object_info(&self, id: Identity, _: &Current) -> floe::Result<ObjectInfo> {
        self.record.touch();
        match self.shared.object(&id) {
            Some(e) => Ok(ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id }),
            None => Err(Error::user(ObjectNotRegisteredException { id })),
        }
    }

    async fn get_object_infos_by_type(&self, r#type: String, _: &Current) -> floe::Result<ObjectInfoSeq> {
        self.record.touch();
        Ok(self
            .shared
            .objects_of_type(&r#type)
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect())
    }

    async fn get_all_object_infos(&self, expr: String, _: &Current) -> floe::Result<ObjectInfoSeq> {
        self.record.touch();
        Ok(self
            .shared
            .objects_matching(&expr)
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect())
    }

    async fn ping_node(&self, name: String, _: &Current) -> floe::Result<bool> {
        self.record.touch();
        nodes::ping_node(&self.shared, &name).await
    }

    async fn get_node_load(&self, name: String, _: &Current) -> floe::Result<LoadInfo> {
        self.record.touch();
        nodes::node_load(&self.shared, &name).await
    }

    async fn get_node_info(&self, name: String, _: &Current) -> floe::Result<NodeInfo> {
        self.record.touch();
        nodes::node_info(&self.shared, &name)
    }

    async fn get_node_admin(&self, name: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        // The nodes' Ice admin objects are not routed through floe-registry.
        Err(applications::node_unreachable(&self.shared, &name))
    }

    async fn get_node_processor_socket_count(&self, name: String, _: &Current) -> floe::Result<i32> {
        self.record.touch();
        nodes::node_socket_count(&self.shared, &name).await
    }

    async fn shutdown_node(&self, name: String, _: &Current) -> floe::Result<()> {
        self.record.touch();
        nodes::shutdown_node(&self.shared, &name).await
    }

    async fn get_node_hostname(&self, name: String, _: &Current) -> floe::Result<String> {
        self.record.touch();
        nodes::node_hostname(&self.shared, &name)
    }

    async fn get_all_node_names(&self, _: &Current) -> floe::Result<StringSeq> {
        self.record.touch();
        Ok(nodes::node_names(&self.shared))
    }

    async fn ping_registry(&self, name: String, _: &Current) -> floe::Result<bool> {
        self.registry_name(&name)?;
        Ok(true)
    }

    async fn get_registry_info(&self, name: String, _: &Current) -> floe::Result<RegistryInfo> {
        self.registry_name(&name)?;
        Ok(RegistryInfo { name, hostname: crate::shared::hostname() })
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
