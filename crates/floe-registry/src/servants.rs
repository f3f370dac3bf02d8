//! The objects that Ice programs use: the locator (and `Ice/LocatorFinder`), the locator
//! registry, the query object,
//! the registry object and the null permissions verifier.

use std::sync::Arc;

use floe::{Current, Error, Identity, ObjectPrx, Proxy};

use crate::database::written;
use crate::shared::Shared;
use crate::slice::glacier2::PermissionsVerifier;
use crate::slice::ice::{
    AdapterNotFoundException, Locator as IceLocator, LocatorRegistry, LocatorRegistryPrx, ObjectNotFoundException,
    ObjectProxySeq, ProcessPrx, ServerNotFoundException,
};
use crate::slice::ice_grid::{
    AdminSessionPrx, LoadSample, Locator, Query, QueryPrx, Registry, RegistryPrx, SessionPrx,
};

/// `<InstanceName>/Locator`: an `::IceGrid::Locator`.
pub(crate) struct LocatorI(pub(crate) Arc<Shared>);

impl IceLocator for LocatorI {
    async fn find_object_by_id(&self, id: Identity, _current: &Current) -> floe::Result<Option<ObjectPrx>> {
        match self.0.object(&id) {
            Some(entry) => Ok(Some(entry.proxy)),
            None => Err(Error::user(ObjectNotFoundException {})),
        }
    }

    async fn find_adapter_by_id(&self, id: String, _current: &Current) -> floe::Result<Option<ObjectPrx>> {
        if let Some(found) = crate::nodes::locate::find_adapter(&self.0, &id).await {
            return Ok(found);
        }
        match self.0.adapter_proxy(&id) {
            Some(p) => Ok(Some(p)),
            None => {
                // Deployed but not active (its node is down): a null proxy, as IceGrid answers.
                let d = self.0.deployment();
                if d.adapters.contains_key(&id) || d.groups.contains_key(&id) {
                    Ok(None)
                } else {
                    Err(Error::user(AdapterNotFoundException {}))
                }
            }
        }
    }

    async fn get_registry(&self, _current: &Current) -> floe::Result<Option<LocatorRegistryPrx>> {
        Ok(Some(LocatorRegistryPrx::from_object(self.0.locator_registry.clone())))
    }
}

impl Locator for LocatorI {
    async fn get_local_registry(&self, _current: &Current) -> floe::Result<Option<RegistryPrx>> {
        Ok(Some(RegistryPrx::from_object(self.0.registry.clone())))
    }

    async fn get_local_query(&self, _current: &Current) -> floe::Result<Option<QueryPrx>> {
        Ok(Some(QueryPrx::from_object(self.0.query.clone())))
    }
}

/// `Ice/LocatorFinder`: gives the locator to clients that know only the registry's endpoints.
pub(crate) struct LocatorFinderI(pub(crate) Arc<Shared>);

impl crate::slice::ice::LocatorFinder for LocatorFinderI {
    async fn get_locator(&self, _current: &Current) -> floe::Result<Option<crate::slice::ice::LocatorPrx>> {
        Ok(Some(crate::slice::ice::LocatorPrx::from_object(self.0.locator.clone())))
    }
}

/// `<InstanceName>/LocatorRegistry`: where servers register their adapters' endpoints.
pub(crate) struct LocatorRegistryI(pub(crate) Arc<Shared>);

impl LocatorRegistryI {
    async fn set(&self, id: &str, group: &str, proxy: Option<ObjectPrx>) -> floe::Result<()> {
        // A deployed adapter joins the replica group its descriptor names; others may
        // register only with dynamic registration.
        let deployed = self.0.deployment().adapters.get(id).map(|a| a.replica_group.clone());
        let group = match &deployed {
            Some(g) => g.as_str(),
            None if self.0.config.dynamic_registration => group,
            None => return Err(Error::user(AdapterNotFoundException {})),
        };
        tracing::debug!(target: "floe_registry::locator", adapter = id, group, registered = proxy.is_some(), "setAdapterDirectProxy");
        // The node that runs the server learns of it first (and may refuse it).
        if let Some(forwarded) = crate::nodes::locate::set_direct_proxy(&self.0, id, proxy.as_ref()).await {
            forwarded?;
        }
        written(self.0.db.set_adapter(id, group, proxy)).await
    }
}

impl LocatorRegistry for LocatorRegistryI {
    async fn set_adapter_direct_proxy(&self, id: String, proxy: Option<ObjectPrx>, _: &Current) -> floe::Result<()> {
        self.set(&id, "", proxy).await
    }

    async fn set_replicated_adapter_direct_proxy(
        &self,
        adapter_id: String,
        replica_group_id: String,
        p: Option<ObjectPrx>,
        _: &Current,
    ) -> floe::Result<()> {
        self.set(&adapter_id, &replica_group_id, p).await
    }

    async fn set_server_process_proxy(&self, id: String, proxy: Option<ProcessPrx>, _: &Current) -> floe::Result<()> {
        // Given to the node that runs the server, which stops it through it.
        if let Some(forwarded) = crate::nodes::locate::set_process(&self.0, &id, proxy.as_ref()).await {
            return forwarded;
        }
        // Known for deployed servers (a node stops them through it); others are unknown.
        if self.0.deployment().servers.contains_key(&id) {
            Ok(())
        } else {
            Err(Error::user(ServerNotFoundException {}))
        }
    }
}

/// `<InstanceName>/Query`.
pub(crate) struct QueryI(pub(crate) Arc<Shared>);

impl Query for QueryI {
    async fn find_object_by_id(&self, id: Identity, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        Ok(self.0.object(&id).map(|e| e.proxy))
    }

    async fn find_object_by_type(&self, r#type: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        let all = self.0.objects_of_type(&r#type);
        if all.is_empty() {
            return Ok(None);
        }
        Ok(Some(all[fastrand::usize(..all.len())].proxy.clone()))
    }

    async fn find_object_by_type_on_least_loaded_node(
        &self,
        r#type: String,
        sample: LoadSample,
        _: &Current,
    ) -> floe::Result<Option<ObjectPrx>> {
        // The object whose adapter's node reports the lowest load (random among equals, and
        // among objects that no node with a session serves).
        let mut all = self.0.objects_of_type(&r#type);
        fastrand::shuffle(&mut all);
        let group = crate::config::ReplicaGroupConfig {
            load_sample: match sample {
                LoadSample::LoadSample1 => 1,
                LoadSample::LoadSample5 => 5,
                LoadSample::LoadSample15 => 15,
            },
            ..Default::default()
        };
        let load = |e: &crate::database::ObjectEntry| self.0.member_load(&group, &e.proxy.reference().wire.adapter_id);
        all.sort_by(|a, b| load(a).total_cmp(&load(b)));
        Ok(all.into_iter().next().map(|e| e.proxy))
    }

    async fn find_all_objects_by_type(&self, r#type: String, _: &Current) -> floe::Result<ObjectProxySeq> {
        Ok(self.0.objects_of_type(&r#type).into_iter().map(|e| Some(e.proxy)).collect())
    }

    async fn find_all_replicas(&self, proxy: Option<ObjectPrx>, _: &Current) -> floe::Result<ObjectProxySeq> {
        let Some(proxy) = proxy else { return Ok(Vec::new()) };
        let mut adapter_id = proxy.reference().wire.adapter_id.clone();
        if adapter_id.is_empty() {
            // A well-known object: the replica group of its registered proxy.
            match self.0.object(proxy.ice_get_identity()) {
                Some(e) => adapter_id = e.proxy.reference().wire.adapter_id.clone(),
                None => return Ok(Vec::new()),
            }
        }
        Ok(self.0.db.group_members(&adapter_id).into_iter().map(|(id, _)| Some(proxy.ice_adapter_id(&id))).collect())
    }
}

/// `<InstanceName>/Registry`: sessions.
pub(crate) struct RegistryI(pub(crate) Arc<Shared>);

impl Registry for RegistryI {
    async fn create_session(
        &self,
        user_id: String,
        password: String,
        current: &Current,
    ) -> floe::Result<Option<SessionPrx>> {
        self.0.verify(false, &user_id, &password).await?;
        Ok(Some(SessionPrx::from_object(crate::client_session::create_client_session(&self.0, user_id, current))))
    }

    async fn create_admin_session(
        &self,
        user_id: String,
        password: String,
        current: &Current,
    ) -> floe::Result<Option<AdminSessionPrx>> {
        self.0.verify(true, &user_id, &password).await?;
        Ok(Some(AdminSessionPrx::from_object(crate::admin::create_admin_session(&self.0, user_id, current))))
    }

    async fn create_session_from_secure_connection(&self, _: &Current) -> floe::Result<Option<SessionPrx>> {
        Err(crate::shared::permission_denied("floe-registry has no secure (ssl) endpoints"))
    }

    async fn create_admin_session_from_secure_connection(&self, _: &Current) -> floe::Result<Option<AdminSessionPrx>> {
        Err(crate::shared::permission_denied("floe-registry has no secure (ssl) endpoints"))
    }

    async fn get_session_timeout(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.0.config.session_timeout)
    }

    async fn get_acm_timeout(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.0.config.session_timeout)
    }
}

/// `<InstanceName>/NullPermissionsVerifier`: accepts everyone.
pub(crate) struct NullPermissionsVerifier;

impl PermissionsVerifier for NullPermissionsVerifier {
    async fn check_permissions(&self, _user: String, _password: String, _: &Current) -> floe::Result<(bool, String)> {
        Ok((true, String::new()))
    }
}
