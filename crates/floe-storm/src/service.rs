//! The service: its two object adapters, the topic manager (`<InstanceName>/TopicManager`),
//! the finder (`IceStorm/Finder`) and the topics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use floe::{Communicator, Current, Error, Identity, ObjectAdapter, ObjectPrx, Proxy};
use tracing::info;

use crate::config::StormConfig;
use crate::slice::ice;
use crate::slice::ice_storm::{self, NoSuchTopic, TopicDict, TopicExists, TopicManagerPrx, TopicPrx};
use crate::store::{Change, Contents, Store};
use crate::topic::TopicCore;

/// What the topics share: configuration, adapters and the store.
pub struct Shared {
    /// The communicator.
    pub communicator: Communicator,
    /// The configuration.
    pub config: Arc<StormConfig>,
    /// `IceStorm.TopicManager`: the topic manager, the finder and the topics.
    pub topic_adapter: ObjectAdapter,
    /// `IceStorm.Publish`: publishers and link objects.
    pub publish_adapter: ObjectAdapter,
    store: Mutex<Option<Store>>,
    topics: Mutex<HashMap<String, Arc<TopicCore>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("instance", &self.config.instance_name).finish_non_exhaustive()
    }
}

impl Shared {
    /// Queues changes for the store; the receiver completes once they are committed (at once
    /// without a data directory).
    pub fn write(&self, changes: Vec<Change>) -> tokio::sync::oneshot::Receiver<()> {
        match &*self.store.lock().expect("store") {
            Some(store) => store.write(changes),
            None => {
                let (tx, rx) = tokio::sync::oneshot::channel();
                let _ = tx.send(());
                rx
            }
        }
    }

    /// True while `topic` is a topic of the service (not destroyed).
    pub fn has_topic(&self, topic: &Arc<TopicCore>) -> bool {
        self.topics.lock().expect("topics").get(&topic.name).is_some_and(|t| Arc::ptr_eq(t, topic))
    }

    /// Destroys a topic; `None` when it was destroyed already.
    pub fn destroy_topic(&self, topic: &Arc<TopicCore>) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let mut topics = self.topics.lock().expect("topics");
        if !topics.get(&topic.name).is_some_and(|t| Arc::ptr_eq(t, topic)) {
            return None;
        }
        topics.remove(&topic.name);
        let written = self.write(vec![Change::RemoveTopic(topic.name.clone())]);
        drop(topics);
        topic.shut();
        Some(written)
    }

    /// The topic called `name`.
    pub fn topic(&self, name: &str) -> Option<Arc<TopicCore>> {
        self.topics.lock().expect("topics").get(name).cloned()
    }
}

/// The running service.
#[derive(Debug)]
pub struct Storm {
    shared: Arc<Shared>,
    /// What the store held, restored by `activate`.
    restored: Mutex<Contents>,
}

impl Storm {
    /// Creates the adapters (bound, not yet active), opens the store and restores the topics.
    pub fn new(communicator: Communicator, config: StormConfig) -> Result<Storm, Error> {
        let topic_adapter = communicator
            .create_object_adapter_with_endpoints("IceStorm.TopicManager", &config.topic_manager_endpoints)?;
        let publish_adapter =
            communicator.create_object_adapter_with_endpoints("IceStorm.Publish", &config.publish_endpoints)?;
        let (store, contents) = match &config.data_dir {
            Some(dir) => {
                let (store, contents) = Store::open(dir)
                    .map_err(|e| Error::Property { name: "IceStorm.LMDB.Path".into(), reason: e.to_string() })?;
                (Some(store), contents)
            }
            None => (None, Vec::new()),
        };
        let shared = Arc::new(Shared {
            communicator,
            config: Arc::new(config),
            topic_adapter,
            publish_adapter,
            store: Mutex::new(store),
            topics: Mutex::new(HashMap::new()),
        });
        let instance = shared.config.instance_name.clone();
        let manager = Arc::new(Manager(shared.clone()));
        shared.topic_adapter.add(
            ice_storm::TopicManagerServer::new(ManagerServant(manager.clone())),
            Identity::with_category(&instance, "TopicManager"),
        );
        shared
            .topic_adapter
            .add(ice_storm::FinderServer::new(FinderServant(manager)), Identity::with_category("IceStorm", "Finder"));
        Ok(Storm { shared, restored: Mutex::new(contents) })
    }

    /// Restores the stored topics, their subscribers and links, and starts listening; runs in
    /// the communicator's runtime (each subscriber gets a delivery task).
    pub async fn activate(&self) -> Result<(), Error> {
        let contents = std::mem::take(&mut *self.restored.lock().expect("restored"));
        for (name, subscribers) in contents {
            let topic = TopicCore::new(self.shared.clone(), &name);
            self.shared.topics.lock().expect("topics").insert(name.clone(), topic.clone());
            for (id, record) in subscribers {
                if let Err(e) = topic.restore(&id, record) {
                    tracing::warn!(target: "floe::storm", "topic {name}: subscriber {id} not restored: {e}");
                }
            }
        }
        self.shared.publish_adapter.activate().await?;
        self.shared.topic_adapter.activate().await?;
        Ok(())
    }

    /// The shared state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the subscribers and closes the store (after writing what is queued).
    pub fn shutdown(&self) {
        let topics: Vec<Arc<TopicCore>> = self.shared.topics.lock().expect("topics").values().cloned().collect();
        for t in topics {
            t.shut();
        }
        if let Some(mut s) = self.shared.store.lock().expect("store").take() {
            s.close();
        }
    }
}

/// The topic manager's operations.
struct Manager(Arc<Shared>);

impl Manager {
    fn trace(&self, what: impl FnOnce() -> String) {
        if self.0.config.trace_topic_manager > 0 {
            info!(target: "floe::storm", "topic manager: {}", what());
        }
    }
}

/// `<InstanceName>/TopicManager`.
struct ManagerServant(Arc<Manager>);

impl ice_storm::TopicManager for ManagerServant {
    async fn create(&self, name: floe::CompactString, _: &Current) -> floe::Result<Option<TopicPrx>> {
        let shared = &self.0 .0;
        let written = {
            let mut topics = shared.topics.lock().expect("topics");
            if topics.contains_key(name.as_str()) {
                return Err(Error::user(TopicExists { name: name.clone() }));
            }
            let topic = TopicCore::new(shared.clone(), &name);
            topics.insert(name.to_string(), topic.clone());
            (topic, shared.write(vec![Change::AddTopic(name.to_string())]))
        };
        self.0.trace(|| format!("create {name}"));
        let _ = written.1.await;
        Ok(Some(written.0.proxy()))
    }

    async fn retrieve(&self, name: floe::CompactString, _: &Current) -> floe::Result<Option<TopicPrx>> {
        match self.0 .0.topic(&name) {
            Some(t) => Ok(Some(t.proxy())),
            None => Err(Error::user(NoSuchTopic { name: name.clone() })),
        }
    }

    async fn retrieve_all(&self, _: &Current) -> floe::Result<TopicDict> {
        let topics = self.0 .0.topics.lock().expect("topics");
        Ok(topics.iter().map(|(n, t)| (n.as_str().into(), Some(t.proxy()))).collect())
    }

    async fn get_slice_checksums(&self, _: &Current) -> floe::Result<ice::SliceChecksumDict> {
        Ok(Default::default())
    }
}

/// `IceStorm/Finder`.
struct FinderServant(Arc<Manager>);

impl ice_storm::Finder for FinderServant {
    async fn get_topic_manager(&self, _: &Current) -> floe::Result<Option<TopicManagerPrx>> {
        let shared = &self.0 .0;
        let id = Identity::with_category(&shared.config.instance_name, "TopicManager");
        let p: ObjectPrx = shared.topic_adapter.create_proxy(id);
        Ok(Some(TopicManagerPrx::from_object(p)))
    }
}
