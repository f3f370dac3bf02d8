//! What the topics and their subscribers run in: the communicator, the configuration, the
//! two object adapters, where changes are stored (memory, redb or etcd), and the proxies of
//! the service's objects (with etcd, carrying every live replica's endpoints).

use std::sync::{Arc, Mutex};

use floe::{Communicator, Identity, ObjectAdapter, ObjectPrx};

use crate::config::StormConfig;
use crate::etcd::{EtcdStore, ReplicaEndpoints};
use crate::store::{Change, Store};

/// Where the state is kept.
#[derive(Debug)]
pub(crate) enum Backend {
    /// Nowhere: in memory only.
    Memory,
    /// In the redb database of the data directory.
    Redb(Store),
    /// In etcd, shared with other replicas.
    Etcd(Arc<EtcdStore>),
}

/// What the topics share: configuration, adapters and the store.
pub struct Env {
    /// The communicator.
    pub communicator: Communicator,
    /// The configuration.
    pub config: Arc<StormConfig>,
    /// `IceStorm.TopicManager`: the topic manager, the finder and the topics.
    pub topic_adapter: ObjectAdapter,
    /// `IceStorm.Publish`: publishers and link objects.
    pub publish_adapter: ObjectAdapter,
    pub(crate) store: Mutex<Backend>,
}

impl std::fmt::Debug for Env {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Env").field("instance", &self.config.instance_name).finish_non_exhaustive()
    }
}

impl Env {
    /// Queues changes for the store; the receiver completes once they are committed (at once
    /// without a data directory).
    pub fn write(&self, changes: Vec<Change>) -> tokio::sync::oneshot::Receiver<()> {
        match &*self.store.lock().expect("store") {
            Backend::Redb(store) => store.write(changes),
            Backend::Etcd(etcd) => etcd.write(changes),
            Backend::Memory => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(());
                rx
            }
        }
    }

    pub(crate) fn etcd(&self) -> Option<Arc<EtcdStore>> {
        match &*self.store.lock().expect("store") {
            Backend::Etcd(etcd) => Some(etcd.clone()),
            _ => None,
        }
    }

    /// `direct` with the endpoints `pick` chooses of every other live replica added after
    /// its own (unchanged without etcd, or for an indirect proxy).
    fn with_replicas(
        &self,
        direct: ObjectPrx,
        pick: impl Fn(&ReplicaEndpoints) -> &[floe::encoding::EndpointData],
    ) -> ObjectPrx {
        let Some(etcd) = self.etcd() else { return direct };
        if direct.reference().is_indirect() {
            return direct;
        }
        let mut endpoints = direct.reference().wire.endpoints.clone();
        for r in etcd.replicas() {
            for e in pick(&r) {
                if !endpoints.contains(e) {
                    endpoints.push(e.clone());
                }
            }
        }
        direct.ice_endpoints(endpoints)
    }

    /// A proxy for an object of the publish adapter: with etcd, it carries the publish
    /// endpoints of every live replica, so that a publisher fails over when one dies.
    pub fn publish_proxy(&self, id: Identity) -> ObjectPrx {
        self.with_replicas(self.publish_adapter.create_proxy(id), |r| &r.publish)
    }

    /// The proxy `getNonReplicatedPublisher` returns: this replica's endpoints, and with etcd
    /// those of every other live replica after them (each replica delivers what it
    /// receives to every subscriber, so any of them will do).
    pub fn publish_direct_proxy(&self, id: Identity) -> ObjectPrx {
        self.with_replicas(self.publish_adapter.create_direct_proxy(id), |r| &r.publish)
    }

    /// A proxy for an object of the topic manager's adapter (with etcd, reaching any live
    /// replica).
    pub fn topic_manager_proxy(&self, id: Identity) -> ObjectPrx {
        self.with_replicas(self.topic_adapter.create_proxy(id), |r| &r.topic_manager)
    }
}
