//! The service: its two object adapters, the topic manager (`<InstanceName>/TopicManager`),
//! the finder (`IceStorm/Finder`) and the topics.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use floe::encoding::Encode;
use floe::protocol::OperationMode;
use floe::{
    Communicator, Current, DispatchFuture, DispatchSlot, Dispatcher, Error, Identity, IncomingRequest, ObjectPrx, Proxy,
};
use floe_service::props::property_error;
use tracing::info;

use crate::config::StormConfig;
use crate::env::{Backend, Env};
use crate::etcd::Update;
use crate::slice::ice;
use crate::slice::ice_storm::{self, NoSuchTopic, TopicDict, TopicExists, TopicManagerPrx, TopicPrx};
use crate::store::{Change, Contents, Store};
use crate::topic::{TopicCore, Topics};

/// The service's topics, by name, in their environment.
pub struct Shared {
    /// What the topics run in.
    pub env: Arc<Env>,
    topics: Mutex<HashMap<String, Arc<TopicCore>>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared").field("env", &self.env).finish_non_exhaustive()
    }
}

impl Topics for Shared {
    fn has_topic(&self, topic: &Arc<TopicCore>) -> bool {
        self.topics.lock().expect("topics").get(&topic.name).is_some_and(|t| Arc::ptr_eq(t, topic))
    }

    fn destroy_topic(&self, topic: &Arc<TopicCore>) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let mut topics = self.topics.lock().expect("topics");
        if !topics.get(&topic.name).is_some_and(|t| Arc::ptr_eq(t, topic)) {
            return None;
        }
        topics.remove(&topic.name);
        let written = self.env.write(vec![Change::RemoveTopic(topic.name.clone())]);
        drop(topics);
        topic.shut();
        Some(written)
    }
}

impl Shared {
    /// Applies a change another replica (or this one) made in etcd; what is there already
    /// is left alone.
    fn apply(self: &Arc<Self>, update: Update) {
        match update {
            Update::Topic(name, true) => {
                self.ensure_topic(&name);
            }
            Update::Topic(name, false) => {
                let removed = self.topics.lock().expect("topics").remove(&name);
                if let Some(t) = removed {
                    t.shut();
                }
            }
            Update::Subscriber(topic, id, record) => {
                if let Some(t) = self.topic(&topic) {
                    t.apply_subscriber(&id, record);
                }
            }
            Update::Reset(contents) => {
                let names: std::collections::HashSet<&str> = contents.iter().map(|(n, _)| n.as_str()).collect();
                let gone: Vec<Arc<TopicCore>> = {
                    let mut topics = self.topics.lock().expect("topics");
                    let gone: Vec<String> = topics.keys().filter(|n| !names.contains(n.as_str())).cloned().collect();
                    gone.iter().filter_map(|n| topics.remove(n)).collect()
                };
                for t in gone {
                    t.shut();
                }
                for (name, subscribers) in contents {
                    let t = self.ensure_topic(&name);
                    let ids: std::collections::HashSet<&str> = subscribers.iter().map(|(id, _)| id.as_str()).collect();
                    for s in t.subscribers().iter() {
                        let id = floe::reference::identity_to_string(&s.id);
                        if !ids.contains(id.as_str()) {
                            t.apply_subscriber(&id, None);
                        }
                    }
                    for (id, record) in subscribers {
                        t.apply_subscriber(&id, Some(record));
                    }
                }
            }
        }
    }

    /// The topic called `name`, made (without writing it anywhere) if there is none.
    fn ensure_topic(self: &Arc<Self>, name: &str) -> Arc<TopicCore> {
        let mut topics = self.topics.lock().expect("topics");
        if let Some(t) = topics.get(name) {
            return t.clone();
        }
        let t = TopicCore::new(self.env.clone(), self.topics_handle(), name);
        topics.insert(name.to_string(), t.clone());
        t
    }

    /// The handle topics have on the list they are in.
    fn topics_handle(self: &Arc<Self>) -> Weak<dyn Topics> {
        let weak: Weak<Shared> = Arc::downgrade(self);
        weak
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
            // With etcd, the state is read by `activate`.
            Some(dir) if config.etcd.is_none() => {
                let (store, contents) = Store::open(dir).map_err(|e| property_error("IceStorm.LMDB.Path", e.0))?;
                (Backend::Redb(store), contents)
            }
            _ => (Backend::Memory, Vec::new()),
        };
        let env = Arc::new(Env {
            communicator,
            config: Arc::new(config),
            topic_adapter,
            publish_adapter,
            store: Mutex::new(store),
        });
        let shared = Arc::new(Shared { env, topics: Mutex::new(HashMap::new()) });
        let instance = shared.env.config.instance_name.clone();
        let manager = Arc::new(Manager(shared.clone()));
        shared.env.topic_adapter.add(
            Arc::new(ManagerDispatcher {
                generated: ice_storm::TopicManagerServer::new(ManagerServant(manager.clone())),
                manager: manager.clone(),
            }),
            Identity::with_category(&instance, "TopicManager"),
        );
        shared
            .env
            .topic_adapter
            .add(ice_storm::FinderServer::new(FinderServant(manager)), Identity::with_category("IceStorm", "Finder"));
        Ok(Storm { shared, restored: Mutex::new(contents) })
    }

    /// Restores the stored topics, their subscribers and links, and starts listening; runs in
    /// the communicator's runtime (each subscriber gets a delivery task).
    pub async fn activate(&self) -> Result<(), Error> {
        let mut contents = std::mem::take(&mut *self.restored.lock().expect("restored"));
        let mut updates = None;
        if let Some(config) = &self.shared.env.config.etcd {
            let (etcd, read, rx) = crate::etcd::connect(config, &self.shared.env.communicator).await?;
            *self.shared.env.store.lock().expect("store") = Backend::Etcd(Arc::new(etcd));
            contents = read;
            updates = Some(rx);
        }
        for (name, subscribers) in contents {
            let topic = TopicCore::new(self.shared.env.clone(), self.shared.topics_handle(), &name);
            self.shared.topics.lock().expect("topics").insert(name.clone(), topic.clone());
            for (id, record) in subscribers {
                if let Err(e) = topic.restore(&id, record) {
                    tracing::warn!(target: "floe::storm", "topic {name}: subscriber {id} not restored: {e}");
                }
            }
        }
        self.shared.env.publish_adapter.activate().await?;
        self.shared.env.topic_adapter.activate().await?;
        if let (Some(mut updates), Some(etcd)) = (updates, self.shared.env.etcd()) {
            // What changed in etcd since it was read, and from now on.
            let shared = Arc::downgrade(&self.shared);
            tokio::spawn(async move {
                while let Some(u) = updates.recv().await {
                    let Some(shared) = shared.upgrade() else { return };
                    shared.apply(u);
                }
            });
            etcd.register(&self.shared.env.topic_adapter.endpoints(), &self.shared.env.publish_adapter.endpoints())
                .await?;
        }
        Ok(())
    }

    /// The shared state.
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops the subscribers and closes the store (after writing what is queued); with
    /// etcd, this replica is no longer listed among the live ones.
    pub async fn shutdown(&self) {
        let topics: Vec<Arc<TopicCore>> = self.shared.topics.lock().expect("topics").values().cloned().collect();
        for t in topics {
            t.shut();
        }
        let backend = std::mem::replace(&mut *self.shared.env.store.lock().expect("store"), Backend::Memory);
        match backend {
            Backend::Redb(mut s) => s.close(),
            Backend::Etcd(etcd) => etcd.close().await,
            Backend::Memory => {}
        }
    }
}

/// The topic manager's operations.
struct Manager(Arc<Shared>);

impl Manager {
    fn trace(&self, what: impl FnOnce() -> String) {
        if self.0.env.config.trace_topic_manager > 0 {
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
            let topic = TopicCore::new(shared.env.clone(), shared.topics_handle(), &name);
            topics.insert(name.to_string(), topic.clone());
            (topic, shared.env.write(vec![Change::AddTopic(name.to_string())]))
        };
        self.0.trace(|| format!("create {name}"));
        if let Err(e) = crate::topic::written(written.1).await {
            // Not stored: taken back (unless it was destroyed or replaced meanwhile).
            let mut topics = shared.topics.lock().expect("topics");
            if topics.get(name.as_str()).is_some_and(|t| Arc::ptr_eq(t, &written.0)) {
                topics.remove(name.as_str());
                drop(topics);
                written.0.shut();
            }
            return Err(e);
        }
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

/// `<InstanceName>/TopicManager` as a dispatcher: IceStorm 3.7's operations (the generated
/// dispatcher of its Slice), and `createOrRetrieve`, which Ice 3.8's IceStorm added and 3.8
/// clients call (`Topic* createOrRetrieve(string name)`: the topic of that name, created when
/// there is none).
struct ManagerDispatcher {
    generated: Arc<dyn Dispatcher>,
    manager: Arc<Manager>,
}

impl Dispatcher for ManagerDispatcher {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        if request.current.operation != "createOrRetrieve" {
            return self.generated.dispatch(request);
        }
        let servant = ManagerServant(self.manager.clone());
        DispatchSlot::new().put(async move {
            let c = &request.current;
            if let Err(r) = c.check_mode(OperationMode::Normal) {
                return r;
            }
            let mut d = request.plain_decoder();
            let name = match d.read_string().and_then(|n| IncomingRequest::finish_params(&mut d).map(|()| n)) {
                Ok(n) => floe::CompactString::from(n),
                Err(e) => return c.error(&Error::Marshal(e)),
            };
            match servant.create_or_retrieve(name, c).await {
                Ok(topic) => c.ok(|e| topic.encode(e)),
                Err(e) => c.servant_error(&e, c.default_format()),
            }
        })
    }
}

impl ManagerServant {
    /// The topic `name`, created when there is none (Ice 3.8's `createOrRetrieve`).
    async fn create_or_retrieve(&self, name: floe::CompactString, c: &Current) -> floe::Result<Option<TopicPrx>> {
        use ice_storm::TopicManager;
        if let Some(t) = self.0 .0.topic(&name) {
            return Ok(Some(t.proxy()));
        }
        match self.create(name.clone(), c).await {
            // Created by another client meanwhile: that topic is the one retrieved.
            Err(e) => match self.0 .0.topic(&name) {
                Some(t) => Ok(Some(t.proxy())),
                None => Err(e),
            },
            created => created,
        }
    }
}

/// `IceStorm/Finder`.
struct FinderServant(Arc<Manager>);

impl ice_storm::Finder for FinderServant {
    async fn get_topic_manager(&self, _: &Current) -> floe::Result<Option<TopicManagerPrx>> {
        let shared = &self.0 .0;
        let id = Identity::with_category(&shared.env.config.instance_name, "TopicManager");
        let p: ObjectPrx = shared.env.topic_manager_proxy(id);
        Ok(Some(TopicManagerPrx::from_object(p)))
    }
}
