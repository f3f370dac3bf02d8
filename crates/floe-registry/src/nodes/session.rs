//! The objects nodes talk to: `<InstanceName>/InternalRegistry-<ReplicaName>`
//! (`IceGrid::InternalRegistry`), the `IceGrid::NodeSession` each node gets from
//! `registerNode`, and the registry's node observer (`getObserver`), which nodes tell of
//! their servers' and adapters' states.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::{Current, Error, Identity, Proxy};

use super::{end_session, lock, timed, NodeSession, NODE_CALL_TIMEOUT};
use crate::shared::Shared;
use crate::slice::ice::StringSeq;
use crate::slice::ice_grid::{
    AdapterDynamicInfo, AdapterInfo, AdapterInfoSeq, ApplicationInfoSeq, FileNotAvailableException, FileReader,
    InternalNodeInfo, InternalRegistry, InternalRegistryPrx, InternalRegistryPrxSeq, InternalReplicaInfo, LoadInfo,
    NodeActiveException, NodeDynamicInfo, NodeDynamicInfoSeq, NodeObserver, NodeObserverPrx, NodePrx, NodePrxSeq,
    NodeSession as NodeSessionOps, NodeSessionPrx, NodeSessionServer, ObjectInfo, ObjectInfoSeq,
    PermissionDeniedException, ReplicaObserverPrx, ReplicaSessionPrx, ServerDynamicInfo,
};

/// The identity of the registry's internal registry object, which nodes look up as a
/// well-known object.
pub(crate) fn internal_registry_identity_for(config: &crate::Config) -> Identity {
    Identity::with_category(&config.instance_name, format!("InternalRegistry-{}", config.replica_name))
}

/// The identity of the node observer that node sessions hand out.
pub(crate) fn node_observer_identity_for(config: &crate::Config) -> Identity {
    Identity::with_category(&config.instance_name, format!("NodeObserver-{}", config.replica_name))
}

/// `<InstanceName>/InternalRegistry-<ReplicaName>`.
pub(crate) struct InternalRegistryI(pub(crate) Arc<Shared>);

/// The registry's own `stdout` or `stderr` (its `Ice.StdOut` or `Ice.StdErr`), for
/// `registry show`.
pub(crate) fn file_path(shared: &Shared, filename: &str) -> floe::Result<String> {
    let property = match filename {
        "stderr" => "Ice.StdErr",
        "stdout" => "Ice.StdOut",
        _ => return Err(Error::user(FileNotAvailableException { reason: "unknown file".into() })),
    };
    let value = shared.communicator.properties().get(property).unwrap_or_default();
    if value.is_empty() {
        return Err(Error::user(FileNotAvailableException {
            reason: format!("{property} configuration property is not set"),
        }));
    }
    Ok(value)
}

impl FileReader for InternalRegistryI {
    async fn get_offset_from_end(&self, filename: String, lines: i32, _: &Current) -> floe::Result<i64> {
        let path = file_path(&self.0, &filename)?;
        floe_service::files::offset_from_end(path.into(), lines).await.map_err(unavailable)
    }

    async fn read(&self, filename: String, pos: i64, size: i32, _: &Current) -> floe::Result<(bool, i64, StringSeq)> {
        let path = file_path(&self.0, &filename)?;
        floe_service::files::read(path.into(), pos, size).await.map_err(unavailable)
    }
}

fn unavailable(reason: String) -> Error {
    Error::user(FileNotAvailableException { reason })
}

impl InternalRegistry for InternalRegistryI {
    async fn register_node(
        &self,
        info: Option<floe::Class<InternalNodeInfo>>,
        prx: Option<NodePrx>,
        load: LoadInfo,
        _: &Current,
    ) -> floe::Result<Option<NodeSessionPrx>> {
        let (Some(info), Some(node)) = (info, prx) else { return Ok(None) };
        let info = info.read().clone();
        let shared = &self.0;
        // A node of that name with a live session: refused if it still answers, else replaced.
        if let Some(old) = shared.nodes.live(&info.name) {
            if timed(&old.node, Duration::from_secs(5)).ice_ping().await.is_ok() {
                tracing::warn!(target: "floe_registry::node", node = info.name, "a node of that name is active");
                return Err(Error::user(NodeActiveException {}));
            }
            end_session(shared, &old);
        }
        let identity = Identity::with_category(&shared.config.instance_name, uuid::Uuid::new_v4().to_string());
        let session = Arc::new(NodeSession {
            serial: shared.nodes.next_serial(),
            identity: identity.clone(),
            info,
            node,
            load: Mutex::new(load),
            last: Mutex::new(Instant::now()),
            destroyed: Default::default(),
            replica_observer: Mutex::new(None),
        });
        {
            let mut sessions = lock(&shared.nodes.sessions);
            if sessions.get(session.name()).is_some_and(|s| !s.destroyed.load(Ordering::SeqCst)) {
                return Err(Error::user(NodeActiveException {}));
            }
            sessions.insert(session.name().to_string(), session.clone());
        }
        let servant = NodeSessionI { shared: shared.clone(), session: session.clone() };
        let proxy = shared.internal.add(NodeSessionServer::new(servant), identity);
        tracing::info!(target: "floe_registry::node", node = session.name(), hostname = session.info.hostname, "node up");
        Ok(Some(NodeSessionPrx::from_object(proxy)))
    }

    async fn register_replica(
        &self,
        _: Option<floe::Class<InternalReplicaInfo>>,
        _: Option<InternalRegistryPrx>,
        _: &Current,
    ) -> floe::Result<Option<ReplicaSessionPrx>> {
        Err(Error::user(PermissionDeniedException {
            reason: "floe-registry does not take IceGrid registry replicas (its replicas share etcd)".into(),
        }))
    }

    async fn register_with_replica(&self, _: Option<InternalRegistryPrx>, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn get_nodes(&self, _: &Current) -> floe::Result<NodePrxSeq> {
        Ok(self.0.nodes.all().iter().map(|s| Some(s.node.clone())).collect())
    }

    async fn get_replicas(&self, _: &Current) -> floe::Result<InternalRegistryPrxSeq> {
        Ok(vec![Some(InternalRegistryPrx::from_object(self.0.internal_registry.clone()))])
    }

    async fn get_applications(&self, _: &Current) -> floe::Result<(ApplicationInfoSeq, i64)> {
        let apps = self.0.deployment().applications.values().cloned().collect();
        Ok((apps, i64::from(self.0.serial.load(Ordering::SeqCst))))
    }

    async fn get_adapters(&self, _: &Current) -> floe::Result<(AdapterInfoSeq, i64)> {
        let adapters = self
            .0
            .db
            .adapters()
            .into_iter()
            .map(|(id, e)| AdapterInfo { id, proxy: Some(e.proxy), replica_group_id: e.replica_group })
            .collect();
        Ok((adapters, i64::from(self.0.serial.load(Ordering::SeqCst))))
    }

    async fn get_objects(&self, _: &Current) -> floe::Result<(ObjectInfoSeq, i64)> {
        let objects = self
            .0
            .db
            .objects_matching("")
            .into_iter()
            .map(|e| ObjectInfo { proxy: Some(e.proxy), r#type: e.type_id })
            .collect();
        Ok((objects, i64::from(self.0.serial.load(Ordering::SeqCst))))
    }

    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        tracing::info!(target: "floe_registry", "shut down through the internal registry");
        self.0.communicator.shutdown();
        Ok(())
    }
}

/// One node's `IceGrid::NodeSession`.
struct NodeSessionI {
    shared: Arc<Shared>,
    session: Arc<NodeSession>,
}

impl NodeSessionI {
    fn check(&self, current: &Current) -> floe::Result<()> {
        if self.session.destroyed.load(Ordering::SeqCst) {
            return Err(Error::ObjectNotExist {
                identity: current.id.clone(),
                facet: current.facet.to_string(),
                operation: current.operation.to_string(),
            });
        }
        Ok(())
    }
}

impl NodeSessionOps for NodeSessionI {
    async fn keep_alive(&self, load: LoadInfo, current: &Current) -> floe::Result<()> {
        self.check(current)?;
        *lock(&self.session.last) = Instant::now();
        *lock(&self.session.load) = load;
        Ok(())
    }

    async fn set_replica_observer(&self, observer: Option<ReplicaObserverPrx>, _: &Current) -> floe::Result<()> {
        let Some(observer) = observer else { return Ok(()) };
        if self.session.destroyed.load(Ordering::SeqCst) {
            return Ok(());
        }
        let mut current = lock(&self.session.replica_observer);
        if current.is_some() {
            return Ok(());
        }
        *current = Some(observer.clone());
        // This registry has no IceGrid replicas to tell the node of.
        tokio::spawn(async move {
            if let Err(e) = timed(&observer, NODE_CALL_TIMEOUT).replica_init(&[]).await {
                tracing::debug!(target: "floe_registry::node", "replicaInit failed: {e}");
            }
        });
        Ok(())
    }

    async fn get_timeout(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.shared.config.node_session_timeout)
    }

    async fn get_observer(&self, _: &Current) -> floe::Result<Option<NodeObserverPrx>> {
        Ok(Some(NodeObserverPrx::from_object(self.shared.node_observer.clone())))
    }

    async fn load_servers(&self, current: &Current) -> floe::Result<()> {
        self.check(current)?;
        let shared = self.shared.clone();
        let node = self.session.name().to_string();
        tokio::spawn(async move { super::servers::load_node(&shared, &node).await });
        Ok(())
    }

    async fn get_servers(&self, _: &Current) -> floe::Result<StringSeq> {
        let d = self.shared.deployment();
        Ok(d.servers.iter().filter(|(_, s)| s.node == self.session.name()).map(|(id, _)| id.clone()).collect())
    }

    async fn wait_for_application_update(&self, _: String, _: i32, _: &Current) -> floe::Result<()> {
        // Updates are complete once stored: there are no IceGrid replicas to wait for.
        Ok(())
    }

    async fn destroy(&self, current: &Current) -> floe::Result<()> {
        self.check(current)?;
        end_session(&self.shared, &self.session);
        Ok(())
    }
}

/// The node observer that nodes report to; what they report goes to the admin sessions'
/// node observers.
pub(crate) struct NodeObserverI(pub(crate) Arc<Shared>);

impl NodeObserver for NodeObserverI {
    async fn node_init(&self, _: NodeDynamicInfoSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }

    async fn node_up(&self, node: NodeDynamicInfo, _: &Current) -> floe::Result<()> {
        if self.0.nodes.live(&node.info.name).is_some() {
            self.0.nodes.set_dynamic(node.clone());
            crate::observers::node_up(&self.0, node);
        }
        Ok(())
    }

    async fn node_down(&self, _: String, _: &Current) -> floe::Result<()> {
        // The registry tells observers itself when a node's session ends.
        Ok(())
    }

    async fn update_server(&self, node: String, info: ServerDynamicInfo, _: &Current) -> floe::Result<()> {
        self.0.nodes.update_server(&node, &info);
        crate::observers::update_server(&self.0, node, info);
        Ok(())
    }

    async fn update_adapter(&self, node: String, info: AdapterDynamicInfo, _: &Current) -> floe::Result<()> {
        self.0.nodes.update_adapter(&node, &info);
        crate::observers::update_adapter(&self.0, node, info);
        Ok(())
    }
}
