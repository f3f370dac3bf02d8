//! Topics, links and subscribers kept in an etcd cluster (`Floe.Storm.Etcd.Endpoints`) and
//! shared by several floe-storm replicas.
//!
//! Each replica keeps the whole state in memory, as it does with a data directory, and
//! delivers from there. It reads everything under the prefix once, then watches the prefix
//! from the revision after that read, so no change is lost between the two (when etcd has
//! compacted away the revisions a restarted watch needs, it reads everything again). A change
//! made through a replica is applied to its memory at once and written to etcd, one
//! transaction per request, in the order the changes were made; the request is answered once
//! etcd has committed it. Every replica applies what the watch brings, its own changes
//! included, idempotently: a topic or subscriber already there (with the same record) is left
//! alone.
//!
//! Keys, under the prefix (default `/floe-storm/<InstanceName>/`; names are escaped, `%` as
//! `%25` and `/` as `%2F`):
//!
//! - `topics/<topic>`: a topic (empty value);
//! - `subscribers/<topic>/<identity>`: a subscriber or link of a topic, its
//!   [`Record`] as value;
//! - `replicas/<uuid>`: a live replica, attached to a lease of its own: its topic manager's
//!   and its publish endpoints, one line each. Publisher and topic proxies carry the
//!   endpoints of every live replica, so that publishers fail over when one dies.

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use floe::encoding::EndpointData;
use floe::{Communicator, Error};
use floe_service::etcd::etcd_client::{Client, DeleteOptions, PutOptions, Txn, TxnOp};
use floe_service::etcd::{self as kit, EtcdConfig, KeyChange, LeaseEnd, Watcher};
use tokio::sync::{mpsc, oneshot, Notify};
use tokio::task::JoinHandle;

use crate::store::{Change, Contents, Record};

const LOG: &str = "floe::storm";

/// A change that etcd holds and this replica may not have yet.
#[derive(Debug, Clone)]
pub enum Update {
    /// A topic exists (true) or not (false).
    Topic(String, bool),
    /// A subscriber or link of a topic: its record, or `None` once it is gone.
    Subscriber(String, String, Option<Record>),
    /// The whole state (after a compaction made the watch miss changes).
    Reset(Contents),
}

/// A live replica's endpoints.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplicaEndpoints {
    /// Its topic manager's endpoints (`IceStorm.TopicManager.Endpoints`).
    pub topic_manager: Vec<EndpointData>,
    /// Its publish endpoints (`IceStorm.Publish.Endpoints`).
    pub publish: Vec<EndpointData>,
}

/// What the tasks share.
struct Ctx {
    client: Client,
    prefix: String,
    communicator: Communicator,
    /// This replica's key under `replicas/`.
    me: String,
    /// Every live replica but this one, by key.
    replicas: RwLock<BTreeMap<String, ReplicaEndpoints>>,
    lease_ttl: i64,
    timeout: Duration,
    updates: mpsc::UnboundedSender<Update>,
}

/// Escapes a name for a key: `%` and `/`.
fn escape(s: &str) -> String {
    s.replace('%', "%25").replace('/', "%2F")
}

/// Reverses [`escape`]; `None` for a malformed escape.
fn unescape(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let code = rest.get(i + 1..i + 3)?;
        out.push(match code {
            "25" => '%',
            "2F" => '/',
            _ => return None,
        });
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// What a key stands for.
enum Parsed {
    Topic(String),
    Subscriber(String, String),
    Replica(String),
}

impl Ctx {
    fn topic_key(&self, name: &str) -> String {
        format!("{}topics/{}", self.prefix, escape(name))
    }

    fn subscribers_prefix(&self, topic: &str) -> String {
        format!("{}subscribers/{}/", self.prefix, escape(topic))
    }

    fn subscriber_key(&self, topic: &str, id: &str) -> String {
        format!("{}{}", self.subscribers_prefix(topic), escape(id))
    }

    fn replica_key(&self) -> String {
        format!("{}replicas/{}", self.prefix, self.me)
    }

    fn parse_key(&self, key: &[u8]) -> Option<Parsed> {
        let rest = std::str::from_utf8(key).ok()?.strip_prefix(self.prefix.as_str())?;
        if let Some(name) = rest.strip_prefix("topics/") {
            return Some(Parsed::Topic(unescape(name)?));
        }
        if let Some(rest) = rest.strip_prefix("subscribers/") {
            let (topic, id) = rest.split_once('/')?;
            return Some(Parsed::Subscriber(unescape(topic)?, unescape(id)?));
        }
        rest.strip_prefix("replicas/").map(|r| Parsed::Replica(r.to_string()))
    }

    /// A replica's endpoints from its value; `None` when malformed.
    fn parse_replica(&self, value: &[u8]) -> Option<ReplicaEndpoints> {
        let text = std::str::from_utf8(value).ok()?;
        let (tm, publish) = text.split_once('\n')?;
        let endpoints = |s: &str| -> Option<Vec<EndpointData>> {
            if s.trim().is_empty() {
                return Some(Vec::new());
            }
            let p = self.communicator.string_to_proxy(&format!("x:{s}")).ok()?;
            Some(p.reference().wire.endpoints.clone())
        };
        Some(ReplicaEndpoints { topic_manager: endpoints(tm)?, publish: endpoints(publish)? })
    }

    /// Applies a key's new value (`None`: its deletion) to the replicas, or returns the
    /// update it stands for.
    fn update_of(&self, key: &[u8], value: Option<&[u8]>) -> Option<Update> {
        match self.parse_key(key)? {
            Parsed::Topic(name) => Some(Update::Topic(name, value.is_some())),
            Parsed::Subscriber(topic, id) => {
                let record = match value {
                    None => None,
                    Some(v) => match Record::decode(v) {
                        Ok(r) => Some(r),
                        Err(e) => {
                            tracing::warn!(target: LOG, "etcd: subscriber {id} of topic {topic} ignored: {e}");
                            return None;
                        }
                    },
                };
                Some(Update::Subscriber(topic, id, record))
            }
            Parsed::Replica(r) => {
                if r != self.me {
                    let mut replicas = self.replicas.write().expect("replicas");
                    match value.map(|v| self.parse_replica(v)) {
                        Some(Some(eps)) => {
                            replicas.insert(r, eps);
                        }
                        Some(None) => tracing::warn!(target: LOG, "etcd: replica {r} has a malformed value"),
                        None => {
                            replicas.remove(&r);
                        }
                    }
                }
                None
            }
        }
    }

    /// Reads everything under the prefix: the contents and the revision they are at (the
    /// live replicas are set on the way).
    async fn read_all(&self) -> Result<(Contents, i64), kit::etcd_client::Error> {
        let (kvs, revision) = kit::read_prefix(&self.client, &self.prefix).await?;
        let mut topics: BTreeMap<String, Vec<(String, Record)>> = BTreeMap::new();
        let mut subscribers = Vec::new();
        self.replicas.write().expect("replicas").clear();
        for kv in &kvs {
            match self.update_of(kv.key(), Some(kv.value())) {
                Some(Update::Topic(name, _)) => {
                    topics.entry(name).or_default();
                }
                Some(Update::Subscriber(topic, id, Some(record))) => subscribers.push((topic, id, record)),
                _ => {}
            }
        }
        for (topic, id, record) in subscribers {
            // A subscriber of a topic destroyed meanwhile is left out.
            if let Some(subs) = topics.get_mut(&topic) {
                subs.push((id, record));
            }
        }
        Ok((topics.into_iter().collect(), revision))
    }
}

impl Watcher for Ctx {
    fn changed(&self, changes: &[KeyChange<'_>]) {
        for c in changes {
            if let Some(u) = self.update_of(c.key, c.value) {
                let _ = self.updates.send(u);
            }
        }
    }

    async fn reread(&self) -> Result<i64, kit::etcd_client::Error> {
        let (contents, revision) = self.read_all().await?;
        let _ = self.updates.send(Update::Reset(contents));
        Ok(revision)
    }
}

/// Changes to write, and who to tell once they are committed.
struct Job {
    changes: Vec<Change>,
    done: oneshot::Sender<()>,
}

/// The connection to etcd: the tasks that write, watch and keep this replica listed.
pub struct EtcdStore {
    ctx: Arc<Ctx>,
    jobs: mpsc::UnboundedSender<Job>,
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore").field("prefix", &self.ctx.prefix).field("me", &self.ctx.me).finish_non_exhaustive()
    }
}

fn etcd_error(e: impl std::fmt::Display) -> Error {
    Error::Property { name: "Floe.Storm.Etcd.Endpoints".into(), reason: e.to_string() }
}

/// Connects to the cluster and reads the state; returns the store, what it held, and the
/// updates the watch brings from then on. Gives up after `Floe.Storm.Etcd.Timeout` if the
/// cluster does not answer. Runs in the communicator's runtime.
pub async fn connect(
    config: &EtcdConfig,
    communicator: &Communicator,
) -> Result<(EtcdStore, Contents, mpsc::UnboundedReceiver<Update>), Error> {
    let client = kit::connect(&config.endpoints, "Floe.Storm.Etcd.Endpoints").await?;
    let (updates, rx) = mpsc::unbounded_channel();
    let ctx = Arc::new(Ctx {
        client,
        prefix: config.prefix.clone(),
        communicator: communicator.clone(),
        me: uuid::Uuid::new_v4().to_string(),
        replicas: RwLock::new(BTreeMap::new()),
        lease_ttl: config.lease_ttl,
        timeout: config.timeout,
        updates,
    });
    let deadline = Instant::now() + config.timeout;
    let (contents, revision) =
        kit::retry_at_start(deadline, "read the topics from etcd", || ctx.read_all()).await.map_err(etcd_error)?;
    let (jobs, job_rx) = mpsc::unbounded_channel();
    let tasks = vec![
        tokio::spawn(kit::watch(ctx.client.clone(), ctx.prefix.clone(), revision + 1, ctx.clone())),
        tokio::spawn(write_loop(ctx.clone(), job_rx)),
    ];
    Ok((EtcdStore { ctx, jobs, tasks: std::sync::Mutex::new(tasks) }, contents, rx))
}

impl EtcdStore {
    /// Queues changes; the receiver completes once etcd committed them, and fails when they
    /// could not be written within `Floe.Storm.Etcd.Timeout`.
    pub fn write(&self, changes: Vec<Change>) -> oneshot::Receiver<()> {
        let (done, rx) = oneshot::channel();
        let _ = self.jobs.send(Job { changes, done });
        rx
    }

    /// Lists this replica among the live ones (under a lease of its own, kept alive from
    /// now on) with its topic manager and publish endpoints.
    pub async fn register(&self, topic_manager: &[EndpointData], publish: &[EndpointData]) -> Result<(), Error> {
        let join =
            |eps: &[EndpointData]| eps.iter().map(floe::reference::endpoint_to_string).collect::<Vec<_>>().join(":");
        let value = format!("{}\n{}", join(topic_manager), join(publish));
        let deadline = Instant::now() + self.ctx.timeout;
        let lease =
            kit::retry_at_start(deadline, "register the replica in etcd", || put_registration(&self.ctx, &value))
                .await
                .map_err(etcd_error)?;
        let task = tokio::spawn(keep_registered(self.ctx.clone(), value, lease));
        self.tasks.lock().expect("tasks").push(task);
        Ok(())
    }

    /// The other live replicas' endpoints.
    pub fn replicas(&self) -> Vec<ReplicaEndpoints> {
        self.ctx.replicas.read().expect("replicas").values().cloned().collect()
    }

    /// Stops the tasks and revokes this replica's lease (so that it is at once no longer
    /// listed).
    pub async fn close(&self) {
        for t in self.tasks.lock().expect("tasks").drain(..) {
            t.abort();
        }
        let mut client = self.ctx.client.clone();
        let key = self.ctx.replica_key();
        if let Ok(resp) = client.get(key.as_str(), None).await {
            if let Some(kv) = resp.kvs().first() {
                if kv.lease() != 0 {
                    let _ = client.lease_revoke(kv.lease()).await;
                }
            }
        }
    }
}

/// Grants a lease and puts this replica's key under it; returns the lease.
async fn put_registration(ctx: &Ctx, value: &str) -> Result<i64, kit::etcd_client::Error> {
    let mut client = ctx.client.clone();
    let id = client.lease_grant(ctx.lease_ttl, None).await?.id();
    client.put(ctx.replica_key(), value, Some(PutOptions::new().with_lease(id))).await?;
    Ok(id)
}

/// Keeps this replica's lease alive (every third of its TTL); registers again, under a new
/// lease, when it expired (etcd unreachable for longer than the TTL).
async fn keep_registered(ctx: Arc<Ctx>, value: String, mut lease: i64) {
    let period = kit::renewal_period(ctx.lease_ttl);
    let never = Notify::new();
    loop {
        if lease == 0 {
            match put_registration(&ctx, &value).await {
                Ok(id) => lease = id,
                Err(e) => {
                    tracing::warn!(target: LOG, "cannot register the replica in etcd: {e}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                    continue;
                }
            }
        }
        if kit::keep_lease(&ctx.client, lease, period, &never, || true).await == LeaseEnd::Expired {
            tracing::warn!(target: LOG, "the replica's lease {lease:x} expired: registering again");
            lease = 0;
        }
    }
}

/// The transaction's operations for `changes`.
fn txn_ops(ctx: &Ctx, changes: &[Change]) -> Vec<TxnOp> {
    let mut ops = Vec::new();
    for c in changes {
        match c {
            Change::AddTopic(name) => ops.push(TxnOp::put(ctx.topic_key(name), Vec::<u8>::new(), None)),
            Change::RemoveTopic(name) => {
                ops.push(TxnOp::delete(ctx.topic_key(name), None));
                ops.push(TxnOp::delete(ctx.subscribers_prefix(name), Some(DeleteOptions::new().with_prefix())));
            }
            Change::PutSubscriber(topic, id, record) => {
                ops.push(TxnOp::put(ctx.subscriber_key(topic, id), record.encode(), None))
            }
            Change::RemoveSubscriber(topic, id) => ops.push(TxnOp::delete(ctx.subscriber_key(topic, id), None)),
        }
    }
    ops
}

/// Writes the queued changes in order, each request's in one transaction, retried with
/// back-off through any member until `Floe.Storm.Etcd.Timeout`.
async fn write_loop(ctx: Arc<Ctx>, mut rx: mpsc::UnboundedReceiver<Job>) {
    while let Some(job) = rx.recv().await {
        let ops = txn_ops(&ctx, &job.changes);
        if ops.is_empty() {
            let _ = job.done.send(());
            continue;
        }
        let deadline = Instant::now() + ctx.timeout;
        let written = kit::retry_until(deadline, || {
            let mut client = ctx.client.clone();
            let txn = Txn::new().and_then(ops.clone());
            async move { client.txn(txn).await.map(drop).map_err(|e| e.to_string()) }
        })
        .await;
        match written {
            Ok(()) => {
                let _ = job.done.send(());
            }
            // Dropping `done` fails the request.
            Err(e) => tracing::error!(target: LOG, "cannot write to etcd: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_escaped_in_keys_and_back() {
        for name in ["plain", "a/b", "50%", "%2F", "/%/", ""] {
            let e = escape(name);
            assert!(!e.contains('/'), "{e}");
            assert_eq!(unescape(&e).as_deref(), Some(name));
        }
        assert_eq!(unescape("bad%"), None);
        assert_eq!(unescape("bad%41"), None);
    }
}
