//! A topic: its servant (`<InstanceName>/topic.<name>`), its publisher
//! (`<InstanceName>/<name>.publish`), the object linked topics forward to
//! (`<InstanceName>/<name>.link`), and the per-subscriber publishers
//! (`<InstanceName>/topic.<name>.publish.<subscriber identity>`).

use std::sync::{Arc, Mutex, RwLock, Weak};

use floe::reference::identity_to_string;
use floe::{Current, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, ObjectPrx, Proxy};
use tracing::info;

use crate::env::Env;
use crate::slice::ice;
use crate::slice::ice_storm::{
    self, AlreadySubscribed, BadQoS, EventDataSeq, InvalidSubscriber, LinkExists, LinkInfo, LinkInfoSeq, NoSuchLink,
    QoS, TopicInternalPrx, TopicLinkPrx, TopicPrx,
};
use crate::store::{Change, Record};
use crate::subscriber::{parse_qos, Delivery, Event, Subscriber};

/// The state of one topic.
pub struct TopicCore {
    /// The topic's name.
    pub name: String,
    /// `<InstanceName>/topic.<name>`.
    pub id: Identity,
    env: Arc<Env>,
    /// The list the topic is in (weak: the list holds the topic).
    topics: Weak<dyn Topics>,
    publisher_id: Identity,
    link_id: Identity,
    /// Copied on change, so that publishing takes the read lock only to clone an `Arc`.
    subscribers: RwLock<Arc<Vec<Arc<Subscriber>>>>,
    /// Serializes changes to the subscriber list (with their store writes queued in order).
    changes: Mutex<()>,
}

impl std::fmt::Debug for TopicCore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TopicCore").field("name", &self.name).finish_non_exhaustive()
    }
}

/// The list of topics a topic is in, as the topic sees it: the service implements it.
pub trait Topics: Send + Sync {
    /// True while `topic` is in the list (not destroyed).
    fn has_topic(&self, topic: &Arc<TopicCore>) -> bool;
    /// Takes `topic` out of the list, shuts it and stores that; `None` when it was not
    /// there any more. The receiver completes once the removal is stored.
    fn destroy_topic(&self, topic: &Arc<TopicCore>) -> Option<tokio::sync::oneshot::Receiver<()>>;
}

/// The topic name an identity stands for: `topic.<name>` in a category, or a bare name.
pub fn identity_to_topic_name(id: &Identity) -> String {
    if id.category.is_empty() {
        return id.name.to_string();
    }
    id.name.strip_prefix("topic.").unwrap_or(&id.name).to_string()
}

impl TopicCore {
    /// Creates a topic and registers its objects (with no subscribers).
    pub fn new(env: Arc<Env>, topics: Weak<dyn Topics>, name: &str) -> Arc<TopicCore> {
        let instance = &env.config.instance_name;
        let topic = Arc::new(TopicCore {
            name: name.to_string(),
            id: Identity::with_category(instance, format!("topic.{name}")),
            publisher_id: Identity::with_category(instance, format!("{name}.publish")),
            link_id: Identity::with_category(instance, format!("{name}.link")),
            env,
            topics,
            subscribers: RwLock::new(Arc::new(Vec::new())),
            changes: Mutex::new(()),
        });
        let s = &topic.env;
        s.topic_adapter.add(ice_storm::TopicInternalServer::new(TopicServant(topic.clone())), topic.id.clone());
        s.publish_adapter.add(Arc::new(Publisher(topic.clone())), topic.publisher_id.clone());
        s.publish_adapter.add(ice_storm::TopicLinkServer::new(LinkServant(topic.clone())), topic.link_id.clone());
        topic
    }

    /// The topic's proxy.
    pub fn proxy(&self) -> TopicPrx {
        TopicPrx::from_object(self.env.topic_manager_proxy(self.id.clone()))
    }

    /// The subscribers now.
    pub fn subscribers(&self) -> Arc<Vec<Arc<Subscriber>>> {
        self.subscribers.read().expect("subscribers").clone()
    }

    /// Queues events for every subscriber (links only for events not `forwarded` by a link).
    pub fn publish(&self, events: &[Arc<Event>], forwarded: bool) {
        for s in self.subscribers().iter() {
            // A subscriber that fails here is removed by its own delivery task.
            s.queue(events, forwarded);
        }
    }

    fn per_subscriber_id(&self, subscriber: &Identity) -> Identity {
        Identity::with_category(
            &self.env.config.instance_name,
            format!("topic.{}.publish.{}", self.name, identity_to_string(subscriber)),
        )
    }

    /// Adds a subscriber restored from the store or just made; false when one with its
    /// identity is there already. Returns the store write to wait for.
    fn add(self: &Arc<Self>, s: Arc<Subscriber>, persist: bool) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let _change = self.changes.lock().expect("topic changes");
        let mut list = (*self.subscribers()).clone();
        if list.iter().any(|x| x.id == s.id) {
            return None;
        }
        if !s.is_link() {
            let per = self.per_subscriber_id(&s.id);
            self.env.publish_adapter.add(Arc::new(SubscriberPublisher(s.clone())), per);
        }
        let topic = Arc::downgrade(self);
        s.start(Box::new(move |s| {
            Box::pin(async move {
                if let Some(topic) = topic.upgrade() {
                    topic.remove_failed(&s).await;
                }
            })
        }));
        list.push(s.clone());
        *self.subscribers.write().expect("subscribers") = Arc::new(list);
        let change = Change::PutSubscriber(self.name.clone(), identity_to_string(&s.id), s.record.clone());
        Some(if persist { self.env.write(vec![change]) } else { done() })
    }

    /// Removes the subscriber with identity `id` (writing that to the store when `persist`);
    /// `None` when there is none.
    fn remove(&self, id: &Identity, persist: bool) -> Option<tokio::sync::oneshot::Receiver<()>> {
        let _change = self.changes.lock().expect("topic changes");
        let mut list = (*self.subscribers()).clone();
        let i = list.iter().position(|x| x.id == *id)?;
        let s = list.remove(i);
        *self.subscribers.write().expect("subscribers") = Arc::new(list);
        s.close();
        if !s.is_link() {
            self.env.publish_adapter.remove(&self.per_subscriber_id(id));
        }
        let change = Change::RemoveSubscriber(self.name.clone(), identity_to_string(id));
        Some(if persist { self.env.write(vec![change]) } else { done() })
    }

    /// Removes a subscriber that failed for good (if it is still this topic's).
    pub async fn remove_failed(&self, s: &Arc<Subscriber>) {
        let is_ours = self.subscribers().iter().any(|x| Arc::ptr_eq(x, s));
        if is_ours {
            if let Some(w) = self.remove(&s.id, true) {
                let _ = w.await;
            }
        }
    }

    /// Takes back a subscriber whose addition could not be stored (if it is still this
    /// topic's).
    fn undo_add(&self, s: &Arc<Subscriber>) {
        if self.subscribers().iter().any(|x| Arc::ptr_eq(x, s)) {
            self.remove(&s.id, false);
        }
    }

    /// Restores a stored subscriber or link.
    pub fn restore(self: &Arc<Self>, id: &str, record: Record) -> Result<(), Error> {
        let communicator = &self.env.communicator;
        let id = floe::reference::string_to_identity(id)
            .map_err(|e| Error::Property { name: "stored subscriber".into(), reason: e })?;
        let proxy = communicator.string_to_proxy(&record.proxy)?;
        let s = match &record.link {
            Some((cost, topic)) => {
                let topic = communicator.string_to_proxy(topic)?;
                Subscriber::new(
                    id,
                    record.clone(),
                    proxy,
                    Some(topic),
                    Delivery::Link { cost: *cost },
                    -1,
                    self.env.config.clone(),
                )
            }
            None => {
                let (delivery, retry) = parse_qos(&record.qos, &proxy)
                    .map_err(|e| Error::Property { name: "stored subscriber".into(), reason: e.0 })?;
                Subscriber::new(id, record.clone(), proxy, None, delivery, retry, self.env.config.clone())
            }
        };
        self.add(s, false);
        Ok(())
    }

    /// Applies a subscriber (or link) as etcd holds it (`None`: gone) without writing
    /// anything: one with the same record is left alone, one with another record replaced.
    pub fn apply_subscriber(self: &Arc<Self>, id: &str, record: Option<Record>) {
        let Ok(identity) = floe::reference::string_to_identity(id) else {
            tracing::warn!(target: "floe::storm", "topic {}: subscriber {id:?} ignored: not an identity", self.name);
            return;
        };
        let existing = self.subscribers().iter().find(|s| s.id == identity).map(|s| s.record.clone());
        match (existing, record) {
            (None, None) => {}
            (Some(_), None) => {
                self.trace(|| format!("subscriber {id} removed by another replica"));
                self.remove(&identity, false);
            }
            (Some(old), Some(new)) if old == new => {}
            (existing, Some(new)) => {
                if existing.is_some() {
                    self.remove(&identity, false);
                }
                if let Err(e) = self.restore(id, new) {
                    tracing::warn!(target: "floe::storm", "topic {}: subscriber {id} not applied: {e}", self.name);
                }
            }
        }
    }

    /// Unregisters the topic's objects and stops its subscribers.
    pub fn shut(&self) {
        let _change = self.changes.lock().expect("topic changes");
        let list = std::mem::take(&mut *self.subscribers.write().expect("subscribers"));
        for s in list.iter() {
            s.close();
            if !s.is_link() {
                self.env.publish_adapter.remove(&self.per_subscriber_id(&s.id));
            }
        }
        self.env.topic_adapter.remove(&self.id);
        self.env.publish_adapter.remove(&self.publisher_id);
        self.env.publish_adapter.remove(&self.link_id);
    }

    fn trace(&self, what: impl FnOnce() -> String) {
        if self.env.config.trace_topic > 0 {
            info!(target: "floe::storm", "topic {}: {}", self.name, what());
        }
    }
}

/// Waits for a store write; a change that could not be stored fails its request.
pub async fn written(rx: tokio::sync::oneshot::Receiver<()>) -> Result<(), Error> {
    rx.await.map_err(|_| Error::UnknownLocalException("floe-storm could not store the change".into()))
}

fn done() -> tokio::sync::oneshot::Receiver<()> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    let _ = tx.send(());
    rx
}

/// The event a publisher's request carries.
fn event_of(request: &IncomingRequest) -> Arc<Event> {
    let c = &request.current;
    Arc::new(Event {
        op: c.operation.to_string(),
        mode: c.mode,
        encoding: c.encoding,
        // Copied, so that a queued event does not keep the whole receive buffer alive.
        params: floe::bytes::Bytes::copy_from_slice(&request.params),
        ctx: c.ctx.clone().into_context(),
    })
}

/// `<InstanceName>/<name>.publish`: any operation is an event for every subscriber.
struct Publisher(Arc<TopicCore>);

impl Dispatcher for Publisher {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        self.0.publish(&[event_of(&request)], false);
        let reply = request.current.ok(|_| {});
        Box::pin(async move { reply })
    }
}

/// `<InstanceName>/topic.<name>.publish.<id>`: events for one subscriber only.
struct SubscriberPublisher(Arc<Subscriber>);

impl Dispatcher for SubscriberPublisher {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        self.0.queue(&[event_of(&request)], false);
        let reply = request.current.ok(|_| {});
        Box::pin(async move { reply })
    }
}

/// `<InstanceName>/<name>.link`: events forwarded by linked topics.
struct LinkServant(Arc<TopicCore>);

impl ice_storm::TopicLink for LinkServant {
    async fn forward(&self, events: EventDataSeq, _: &Current) -> floe::Result<()> {
        let events: Vec<Arc<Event>> = events.into_iter().filter_map(Event::from_event_data).map(Arc::new).collect();
        self.0.publish(&events, true);
        Ok(())
    }
}

/// `<InstanceName>/topic.<name>`.
struct TopicServant(Arc<TopicCore>);

fn no_topic(current: &Current) -> Error {
    Error::ObjectNotExist {
        identity: current.id.clone(),
        facet: current.facet.to_string(),
        operation: current.operation.to_string(),
    }
}

impl TopicServant {
    /// The topic, unless it was destroyed.
    fn live(&self, current: &Current) -> Result<&Arc<TopicCore>, Error> {
        if self.0.topics.upgrade().is_some_and(|t| t.has_topic(&self.0)) {
            Ok(&self.0)
        } else {
            Err(no_topic(current))
        }
    }
}

impl ice_storm::Topic for TopicServant {
    async fn get_name(&self, current: &Current) -> floe::Result<floe::CompactString> {
        Ok(self.live(current)?.name.as_str().into())
    }

    async fn get_publisher(&self, current: &Current) -> floe::Result<Option<ObjectPrx>> {
        let t = self.live(current)?;
        Ok(Some(t.env.publish_proxy(t.publisher_id.clone())))
    }

    async fn get_non_replicated_publisher(&self, current: &Current) -> floe::Result<Option<ObjectPrx>> {
        let t = self.live(current)?;
        Ok(Some(t.env.publish_direct_proxy(t.publisher_id.clone())))
    }

    async fn subscribe_and_get_publisher(
        &self,
        qos: QoS,
        subscriber: Option<ObjectPrx>,
        current: &Current,
    ) -> floe::Result<Option<ObjectPrx>> {
        let t = self.live(current)?;
        let Some(proxy) = subscriber else {
            return Err(Error::user(InvalidSubscriber { reason: "subscriber is a null proxy".into() }));
        };
        let mut qos: Vec<(String, String)> = qos.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        qos.sort();
        let (delivery, retry) = parse_qos(&qos, &proxy).map_err(|e| Error::user(BadQoS { reason: e.0.into() }))?;
        let id = proxy.ice_get_identity().clone();
        t.trace(|| format!("subscribe {} ({proxy}) QoS {qos:?}", identity_to_string(&id)));
        let record = Record { proxy: proxy.to_string(), qos, link: None };
        let s = Subscriber::new(id.clone(), record, proxy, None, delivery, retry, t.env.config.clone());
        let w = t.add(s.clone(), true).ok_or_else(|| Error::user(AlreadySubscribed::default()))?;
        if let Err(e) = written(w).await {
            t.undo_add(&s);
            return Err(e);
        }
        Ok(Some(t.env.publish_proxy(t.per_subscriber_id(&id))))
    }

    async fn unsubscribe(&self, subscriber: Option<ObjectPrx>, current: &Current) -> floe::Result<()> {
        let t = self.live(current)?;
        if let Some(p) = subscriber {
            t.trace(|| format!("unsubscribe {}", identity_to_string(p.ice_get_identity())));
            if let Some(w) = t.remove(p.ice_get_identity(), true) {
                written(w).await?;
            }
        }
        Ok(())
    }

    async fn link(&self, link_to: Option<TopicPrx>, cost: i32, current: &Current) -> floe::Result<()> {
        let t = self.live(current)?;
        let Some(to) = link_to else {
            return Err(Error::user(InvalidSubscriber { reason: "link to a null proxy".into() }));
        };
        let id = to.as_object().ice_get_identity().clone();
        let name = identity_to_topic_name(&id);
        if t.subscribers().iter().any(|s| s.id == id) {
            return Err(Error::user(LinkExists { name: name.into() }));
        }
        let link: Option<TopicLinkPrx> = TopicInternalPrx::from_object(to.as_object().clone()).get_link_proxy().await?;
        let Some(link) = link else {
            return Err(Error::user(InvalidSubscriber { reason: "the topic has no link object".into() }));
        };
        t.trace(|| format!("link {} cost {cost}", identity_to_string(&id)));
        let record = Record { proxy: link.to_string(), qos: vec![], link: Some((cost, to.to_string())) };
        let s = Subscriber::new(
            id,
            record,
            link.as_object().clone(),
            Some(to.as_object().clone()),
            Delivery::Link { cost },
            -1,
            t.env.config.clone(),
        );
        let w = t.add(s.clone(), true).ok_or_else(|| Error::user(LinkExists { name: name.into() }))?;
        if let Err(e) = written(w).await {
            t.undo_add(&s);
            return Err(e);
        }
        Ok(())
    }

    async fn unlink(&self, link_to: Option<TopicPrx>, current: &Current) -> floe::Result<()> {
        let t = self.live(current)?;
        let Some(to) = link_to else {
            return Err(Error::user(NoSuchLink::default()));
        };
        let id = to.as_object().ice_get_identity().clone();
        let is_link = t.subscribers().iter().any(|s| s.id == id && s.is_link());
        let removed = if is_link { t.remove(&id, true) } else { None };
        match removed {
            Some(w) => {
                t.trace(|| format!("unlink {}", identity_to_string(&id)));
                written(w).await
            }
            None => Err(Error::user(NoSuchLink { name: identity_to_topic_name(&id).into() })),
        }
    }

    async fn get_link_info_seq(&self, current: &Current) -> floe::Result<LinkInfoSeq> {
        let t = self.live(current)?;
        Ok(t.subscribers()
            .iter()
            .filter(|s| s.is_link() && !s.errored())
            .map(|s| {
                let topic = s.linked_topic.clone().map(TopicPrx::from_object);
                LinkInfo {
                    name: identity_to_topic_name(&s.id).into(),
                    cost: s.record.link.as_ref().map_or(0, |l| l.0),
                    the_topic: topic,
                }
            })
            .collect())
    }

    async fn get_subscribers(&self, current: &Current) -> floe::Result<ice::IdentitySeq> {
        let t = self.live(current)?;
        Ok(t.subscribers().iter().map(|s| s.id.clone()).collect())
    }

    async fn destroy(&self, current: &Current) -> floe::Result<()> {
        let t = self.live(current)?;
        t.trace(|| "destroy".into());
        match t.topics.upgrade().and_then(|topics| topics.destroy_topic(t)) {
            Some(w) => written(w).await,
            None => Err(no_topic(current)),
        }
    }
}

impl ice_storm::TopicInternal for TopicServant {
    async fn get_link_proxy(&self, current: &Current) -> floe::Result<Option<TopicLinkPrx>> {
        let t = self.live(current)?;
        Ok(Some(TopicLinkPrx::from_object(t.env.publish_proxy(t.link_id.clone()))))
    }

    async fn reap(&self, _ids: ice::IdentitySeq, _: &Current) -> floe::Result<()> {
        // Replication is not IceStorm's here: there is nothing to reap.
        Ok(())
    }
}
