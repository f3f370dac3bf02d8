//! The registry's state in an etcd cluster (`Floe.Registry.Etcd.Endpoints`), shared by any
//! number of stateless floe-registry replicas.
//!
//! Each replica answers lookups from its in-memory tables, which mirror what etcd holds
//! under the registry's prefix: it reads everything once, then watches the prefix from the
//! revision after that read, so that no change is lost between the two; when etcd has
//! compacted away the revisions a (re)started watch needs, it reads everything again.
//! Changes are not applied to the tables directly: they are sent to etcd (the changes that
//! arrive together in one transaction) and the request that made them is answered once the
//! watch has brought them back, so a replica always sees its own writes.
//!
//! Keys, under the prefix (default `/floe-registry/<InstanceName>/`):
//!
//! - `adapters/<adapter id>`: a registered adapter (its proxy and replica group), attached
//!   to the registrations' lease;
//! - `objects/<identity>`: a well-known object (its proxy and type), without lease;
//! - `applications/<name>`: a deployed application (its `IceGrid::ApplicationInfo`), without
//!   lease;
//! - `lease`: the id of the registrations' lease (in decimal), attached to that lease.
//!
//! There is one registrations' lease for the whole registry, which every live replica keeps
//! alive: a registration made through a replica that dies stays, and all of them expire
//! once no replica has renewed the lease for `Floe.Registry.Etcd.LeaseTTL` seconds. The
//! first replica to find no live lease grants a new one.

use std::collections::HashSet;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::Communicator;
use floe_service::etcd::etcd_client::{Client, Compare, CompareOp, PutOptions, Txn, TxnOp, TxnOpResponse};
use floe_service::etcd::{self as kit, KeyChange, LeaseEnd, Watcher};
use tokio::sync::{mpsc, oneshot, watch, Notify};
use tokio::task::JoinHandle;

use crate::config::Config;
use crate::record::{read_record, record, AdapterEntry, ObjectEntry, Op};

/// The in-memory tables etcd's contents are mirrored into (the database's).
pub(crate) trait Mirror: Send + Sync {
    /// Applies changes that etcd reported.
    fn apply(&self, ops: Vec<Op>);
    /// Replaces everything shared with `ops` (after etcd compacted away the history the
    /// watch needed).
    fn reset(&self, ops: Vec<Op>);
}

/// The most operations put in one transaction (etcd's default `--max-txn-ops` is 128).
const MAX_OPS: usize = 100;

/// The connection to etcd: the tasks that write, watch and keep the lease alive.
pub(crate) struct Etcd {
    jobs: mpsc::UnboundedSender<Job>,
    tasks: Vec<JoinHandle<()>>,
}

/// Changes to write, and who to tell once they are in the tables.
struct Job {
    ops: Vec<Op>,
    done: oneshot::Sender<()>,
}

/// The registrations' lease as this replica knows it.
struct Lease {
    /// Its id; 0 while there is none.
    id: AtomicI64,
    /// Wakes the keeper when the id was found dead or changed.
    changed: Notify,
}

impl Lease {
    fn current(&self) -> i64 {
        self.id.load(Ordering::Acquire)
    }

    fn set(&self, id: i64) {
        if self.id.swap(id, Ordering::AcqRel) != id {
            self.changed.notify_one();
        }
    }

    /// `id` was found expired: forget it (unless it changed meanwhile).
    fn lost(&self, id: i64) {
        if self.id.compare_exchange(id, 0, Ordering::AcqRel, Ordering::Acquire).is_ok() {
            self.changed.notify_one();
        }
    }
}

/// What the tasks share.
struct Ctx {
    client: Client,
    prefix: String,
    communicator: Communicator,
    tables: Arc<dyn Mirror>,
    lease: Lease,
    /// The revision up to which the tables are in step with etcd.
    applied: watch::Sender<i64>,
    /// `Floe.Registry.Etcd.LeaseTTL`.
    ttl: i64,
    /// `Floe.Registry.Etcd.Timeout`: how long a write may take, retries included.
    timeout: Duration,
}

impl Ctx {
    fn adapter_key(&self, id: &str) -> String {
        format!("{}adapters/{id}", self.prefix)
    }

    fn object_key(&self, id: &str) -> String {
        format!("{}objects/{id}", self.prefix)
    }

    fn application_key(&self, name: &str) -> String {
        format!("{}applications/{name}", self.prefix)
    }

    fn lease_key(&self) -> String {
        format!("{}lease", self.prefix)
    }

    /// The change that a key's new value (None: its deletion) stands for.
    fn parse(&self, key: &[u8], value: Option<&[u8]>) -> Option<Op> {
        let rest = std::str::from_utf8(key).ok()?.strip_prefix(self.prefix.as_str())?;
        if let Some(id) = rest.strip_prefix("adapters/") {
            return Some(match value {
                Some(v) => {
                    let (proxy, replica_group) = read_record(&self.communicator, v)?;
                    Op::PutAdapter(id.to_string(), AdapterEntry { proxy, replica_group })
                }
                None => Op::RemoveAdapter(id.to_string()),
            });
        }
        if let Some(id) = rest.strip_prefix("objects/") {
            return Some(match value {
                Some(v) => {
                    let (proxy, type_id) = read_record(&self.communicator, v)?;
                    Op::PutObject(id.to_string(), ObjectEntry { proxy, type_id })
                }
                None => Op::RemoveObject(id.to_string()),
            });
        }
        if let Some(name) = rest.strip_prefix("applications/") {
            return Some(match value {
                Some(v) => Op::PutApplication(name.to_string(), v.to_vec()),
                None => Op::RemoveApplication(name.to_string()),
            });
        }
        if rest == "lease" {
            // Another replica granted a new lease after the last one expired: use it.
            if let Some(id) = value.and_then(|v| std::str::from_utf8(v).ok()).and_then(|v| v.parse().ok()) {
                self.lease.set(id);
            }
        }
        None
    }

    /// Reads everything under the prefix; returns the changes that rebuild the tables and
    /// the revision they are at.
    async fn read_all(&self) -> Result<(Vec<Op>, i64), kit::etcd_client::Error> {
        let (kvs, revision) = kit::read_prefix(&self.client, &self.prefix).await?;
        let ops = kvs.iter().filter_map(|kv| self.parse(kv.key(), Some(kv.value()))).collect();
        Ok((ops, revision))
    }
}

impl Watcher for Ctx {
    fn changed(&self, changes: &[KeyChange<'_>]) {
        let ops: Vec<Op> = changes.iter().filter_map(|c| self.parse(c.key, c.value)).collect();
        self.tables.apply(ops);
        if let Some(r) = changes.iter().map(|c| c.revision).max() {
            self.applied.send_if_modified(|a| {
                let newer = r > *a;
                if newer {
                    *a = r;
                }
                newer
            });
        }
    }

    async fn reread(&self) -> Result<i64, kit::etcd_client::Error> {
        let (ops, revision) = self.read_all().await?;
        self.tables.reset(ops);
        self.applied.send_replace(revision);
        Ok(revision)
    }
}

/// Connects to the cluster, fills `tables` with what it holds and starts keeping them in
/// step; gives up after `Floe.Registry.Etcd.Timeout` if the cluster does not answer.
pub(crate) async fn connect(
    config: &Config,
    communicator: &Communicator,
    tables: Arc<dyn Mirror>,
) -> Result<Etcd, String> {
    let client = kit::connect(&config.etcd.endpoints, "Floe.Registry.Etcd.Endpoints").await.map_err(|e| match e {
        floe::Error::Property { name, reason } => format!("{name}: {reason}"),
        e => e.to_string(),
    })?;
    let (applied, _) = watch::channel(0);
    let ctx = Arc::new(Ctx {
        client,
        prefix: config.etcd.prefix.clone(),
        communicator: communicator.clone(),
        tables,
        lease: Lease { id: AtomicI64::new(0), changed: Notify::new() },
        applied,
        ttl: config.etcd.lease_ttl,
        timeout: config.etcd.timeout,
    });
    let deadline = Instant::now() + config.etcd.timeout;
    let revision = kit::retry_at_start(deadline, "read the registry from etcd", || ctx.reread()).await?;
    let id = kit::retry_at_start(deadline, "get the registrations' lease from etcd", || ensure_lease(&ctx)).await?;
    ctx.lease.set(id);
    let (jobs, rx) = mpsc::unbounded_channel();
    let tasks = vec![
        tokio::spawn(kit::watch(ctx.client.clone(), ctx.prefix.clone(), revision + 1, ctx.clone())),
        tokio::spawn(keep_lease(ctx.clone())),
        tokio::spawn(write_loop(ctx, rx)),
    ];
    Ok(Etcd { jobs, tasks })
}

impl Etcd {
    /// Queues changes; the receiver completes once they are in etcd and back in this
    /// replica's tables (it fails if they could not be written in time).
    pub(crate) fn write(&self, ops: Vec<Op>) -> oneshot::Receiver<()> {
        let (done, rx) = oneshot::channel();
        let _ = self.jobs.send(Job { ops, done });
        rx
    }

    /// Stops the tasks. The registrations' lease is left to expire (or to the other
    /// replicas, which keep it alive).
    pub(crate) fn close(self) {
        for t in self.tasks {
            t.abort();
        }
    }
}

/// Finds the live registrations' lease, or grants one and publishes it under `lease`.
async fn ensure_lease(ctx: &Ctx) -> Result<i64, kit::etcd_client::Error> {
    let mut client = ctx.client.clone();
    let key = ctx.lease_key();
    loop {
        let resp = client.get(key.as_str(), None).await?;
        let compare = match resp.kvs().first() {
            Some(kv) => {
                if let Some(id) = kv.value_str().ok().and_then(|v| v.parse::<i64>().ok()) {
                    if client.lease_time_to_live(id, None).await?.ttl() > 0 {
                        return Ok(id);
                    }
                }
                Compare::mod_revision(key.as_str(), CompareOp::Equal, kv.mod_revision())
            }
            None => Compare::create_revision(key.as_str(), CompareOp::Equal, 0),
        };
        let id = client.lease_grant(ctx.ttl, None).await?.id();
        let put = TxnOp::put(key.as_str(), id.to_string(), Some(PutOptions::new().with_lease(id)));
        if client.txn(Txn::new().when([compare]).and_then([put])).await?.succeeded() {
            tracing::info!(target: "floe_registry::etcd", "granted the registrations' lease {id:x}");
            return Ok(id);
        }
        // Another replica published one first: use that.
        let _ = client.lease_revoke(id).await;
    }
}

/// Keeps the registrations' lease alive (every third of its TTL), granting a new one when
/// it expired.
async fn keep_lease(ctx: Arc<Ctx>) {
    let period = kit::renewal_period(ctx.ttl);
    loop {
        let id = ctx.lease.current();
        if id == 0 {
            match ensure_lease(&ctx).await {
                Ok(id) => ctx.lease.set(id),
                Err(e) => {
                    tracing::warn!(target: "floe_registry::etcd", "cannot get the registrations' lease: {e}");
                    tokio::time::sleep(Duration::from_millis(250)).await;
                }
            }
            continue;
        }
        if kit::keep_lease(&ctx.client, id, period, &ctx.lease.changed, || ctx.lease.current() == id).await
            == LeaseEnd::Expired
        {
            tracing::warn!(target: "floe_registry::etcd", "the registrations' lease {id:x} expired");
            ctx.lease.lost(id);
        }
    }
}

/// The key a change is about.
fn key_of(ctx: &Ctx, op: &Op) -> String {
    match op {
        Op::PutAdapter(id, _) | Op::RemoveAdapter(id) | Op::RemoveAdapterIf(id, _) => ctx.adapter_key(id),
        Op::PutObject(id, _) | Op::RemoveObject(id) => ctx.object_key(id),
        Op::PutApplication(name, _) | Op::RemoveApplication(name) => ctx.application_key(name),
    }
}

/// Writes the queued changes, those that arrived together in one transaction (as long as
/// they touch different keys, which etcd requires).
async fn write_loop(ctx: Arc<Ctx>, mut rx: mpsc::UnboundedReceiver<Job>) {
    let mut held: Option<Job> = None;
    loop {
        let first = match held.take() {
            Some(j) => j,
            None => match rx.recv().await {
                Some(j) => j,
                None => return,
            },
        };
        let mut keys: HashSet<String> = first.ops.iter().map(|op| key_of(&ctx, op)).collect();
        // A conditional change goes in a transaction of its own, as its condition covers the
        // whole transaction.
        let conditional = |j: &Job| j.ops.iter().any(|op| matches!(op, Op::RemoveAdapterIf(..)));
        let alone = conditional(&first);
        let mut batch = vec![first];
        while !alone && keys.len() < MAX_OPS {
            let Ok(job) = rx.try_recv() else { break };
            let job_keys: Vec<String> = job.ops.iter().map(|op| key_of(&ctx, op)).collect();
            if conditional(&job) || keys.len() + job_keys.len() > MAX_OPS || job_keys.iter().any(|k| keys.contains(k)) {
                held = Some(job);
                break;
            }
            keys.extend(job_keys);
            batch.push(job);
        }
        let ops: Vec<&Op> = batch.iter().flat_map(|j| j.ops.iter()).collect();
        let ops_len = ops.len();
        let deadline = Instant::now() + ctx.timeout;
        let mut revision = None;
        let mut failed = false;
        // A job larger than one transaction allows goes in several.
        for chunk in ops.chunks(MAX_OPS) {
            match commit(&ctx, chunk, deadline).await {
                Ok(Some(r)) => revision = Some(r),
                Ok(None) => {}
                Err(e) => {
                    tracing::error!(target: "floe_registry::etcd", "cannot write to etcd: {e}");
                    failed = true;
                    break;
                }
            }
        }
        if failed {
            // Dropping the senders tells the callers.
            continue;
        }
        let dones: Vec<_> = batch.drain(..).map(|j| j.done).collect();
        tracing::trace!(target: "floe_registry::etcd", "wrote {} changes of {} requests at revision {revision:?}", ops_len, dones.len());
        match revision {
            None => dones.into_iter().for_each(|d| {
                let _ = d.send(());
            }),
            Some(r) => {
                // Answer once the watch has brought the changes back.
                let mut applied = ctx.applied.subscribe();
                let deadline = Instant::now() + ctx.timeout;
                tokio::spawn(async move {
                    let wait = applied.wait_for(|a| *a >= r);
                    if tokio::time::timeout_at(deadline.into(), wait).await.is_ok_and(|r| r.is_ok()) {
                        dones.into_iter().for_each(|d| {
                            let _ = d.send(());
                        });
                    } else {
                        tracing::warn!(target: "floe_registry::etcd", "the watch did not bring revision {r} back in time");
                    }
                });
            }
        }
    }
}

/// Commits changes in one transaction, retrying until `deadline`; returns the revision
/// that made them, or None if nothing changed (deleting keys that were not there).
async fn commit(ctx: &Ctx, ops: &[&Op], deadline: Instant) -> Result<Option<i64>, String> {
    kit::retry_until(deadline, || commit_once(ctx, ops)).await
}

/// One try of [`commit`].
async fn commit_once(ctx: &Ctx, ops: &[&Op]) -> Result<Option<i64>, String> {
    let mut client = ctx.client.clone();
    let lease = ctx.lease.current();
    if lease == 0 && ops.iter().any(|op| matches!(op, Op::PutAdapter(..))) {
        return Err("no registrations' lease".to_string());
    }
    let txn_ops: Vec<TxnOp> = ops
        .iter()
        .map(|op| {
            let key = key_of(ctx, op);
            match op {
                Op::PutAdapter(_, a) => {
                    TxnOp::put(key, record(&a.proxy, &a.replica_group), Some(PutOptions::new().with_lease(lease)))
                }
                Op::PutObject(_, o) => TxnOp::put(key, record(&o.proxy, &o.type_id), None),
                Op::PutApplication(_, info) => TxnOp::put(key, info.clone(), None),
                Op::RemoveAdapter(_) | Op::RemoveAdapterIf(..) | Op::RemoveObject(_) | Op::RemoveApplication(_) => {
                    TxnOp::delete(key, None)
                }
            }
        })
        .collect();
    // Conditional removals: only if the value is still the one seen.
    let compares: Vec<Compare> = ops
        .iter()
        .filter_map(|op| match op {
            Op::RemoveAdapterIf(_, seen) => Some(Compare::value(key_of(ctx, op), CompareOp::Equal, seen.clone())),
            _ => None,
        })
        .collect();
    match client.txn(Txn::new().when(compares).and_then(txn_ops)).await {
        Ok(resp) => {
            let changed = resp.succeeded()
                && resp.op_responses().iter().any(|r| match r {
                    TxnOpResponse::Delete(d) => d.deleted() > 0,
                    _ => true,
                });
            let revision = resp.header().map(|h| h.revision()).unwrap_or(0);
            Ok(changed.then_some(revision))
        }
        Err(e) => {
            let text = e.to_string();
            if text.contains("lease not found") {
                ctx.lease.lost(lease);
            }
            Err(text)
        }
    }
}
