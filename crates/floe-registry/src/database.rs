//! The registry's state: dynamically registered adapters (and the replica groups they form),
//! well-known objects and deployed applications, kept in memory and written through to the [`Store`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use floe::encoding::{Decode, Decoder};
use floe::{Communicator, Identity, ObjectPrx};

use crate::etcd::Mirror;
use crate::record::{identity_key, read_record, record, Op, ENCODING};
pub use crate::record::{identity_string, AdapterEntry, ObjectEntry};
use crate::store::{Change, Contents, Store};

#[derive(Default)]
struct Tables {
    adapters: BTreeMap<String, AdapterEntry>,
    /// Replica group id → member adapter ids.
    groups: BTreeMap<String, Vec<String>>,
    /// Keyed by the identity's string form, so that listings come out sorted.
    objects: BTreeMap<String, ObjectEntry>,
    /// The objects this registry serves itself (its locator, query, …): with etcd they are
    /// kept here only, as each replica has its own.
    local_objects: BTreeSet<String>,
    /// Deployed applications: name → encoded `IceGrid::ApplicationInfo`.
    applications: BTreeMap<String, Vec<u8>>,
    /// Counts the changes to `applications`, so that what is derived from them knows when to
    /// be rebuilt; shared with the [`Database`], which reads it without the tables' lock
    /// (lookups check it on every call).
    applications_generation: Arc<AtomicU64>,
}

impl Tables {
    fn join_group(&mut self, adapter: &str, group: &str) {
        if !group.is_empty() {
            let members = self.groups.entry(group.to_string()).or_default();
            if let Err(i) = members.binary_search_by(|m| m.as_str().cmp(adapter)) {
                members.insert(i, adapter.to_string());
            }
        }
    }

    fn leave_group(&mut self, adapter: &str, group: &str) {
        if let Some(members) = self.groups.get_mut(group) {
            members.retain(|m| m != adapter);
            if members.is_empty() {
                self.groups.remove(group);
            }
        }
    }

    /// Applies one change, keeping the replica groups in step with the adapters.
    fn apply(&mut self, op: Op) {
        match op {
            Op::PutAdapter(id, entry) => {
                if let Some(old) = self.adapters.get(&id).map(|a| a.replica_group.clone()) {
                    if old != entry.replica_group {
                        self.leave_group(&id, &old);
                    }
                }
                self.join_group(&id, &entry.replica_group);
                self.adapters.insert(id, entry);
            }
            Op::RemoveAdapter(id) => {
                if let Some(old) = self.adapters.remove(&id) {
                    self.leave_group(&id, &old.replica_group);
                }
            }
            Op::RemoveAdapterIf(id, seen) => {
                if self.adapters.get(&id).is_some_and(|a| record(&a.proxy, &a.replica_group) == seen) {
                    self.apply(Op::RemoveAdapter(id));
                }
            }
            Op::PutObject(key, entry) => {
                self.objects.insert(key, entry);
            }
            Op::RemoveObject(key) => {
                self.objects.remove(&key);
            }
            Op::PutApplication(name, info) => {
                self.applications.insert(name, info);
                self.applications_generation.fetch_add(1, Ordering::Release);
            }
            Op::RemoveApplication(name) => {
                self.applications.remove(&name);
                self.applications_generation.fetch_add(1, Ordering::Release);
            }
        }
    }
}

/// Where changes go besides the tables.
enum Backend {
    /// Nowhere: the state lives in memory only.
    Memory,
    /// Written through to a redb database.
    Redb(Store),
    /// Sent to etcd; the tables change when the watch brings the change back.
    Etcd(crate::etcd::Etcd),
}

/// The registry's database: in-memory tables, written through to a store when there is one,
/// or a cache of what etcd holds.
pub struct Database {
    tables: Arc<Mutex<Tables>>,
    /// The tables' `applications_generation`.
    applications_generation: Arc<AtomicU64>,
    backend: Mutex<Backend>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

/// A pending write: completes once the change is durable (an error, the sender dropped,
/// when it could not be made).
pub type Written = Option<tokio::sync::oneshot::Receiver<()>>;

/// Waits for a write to be durable; false if it failed.
pub async fn durable(w: Written) -> bool {
    match w {
        Some(rx) => rx.await.is_ok(),
        None => true,
    }
}

/// Waits for a write to be durable; an error for the caller (an `UnknownLocalException`)
/// if it could not be made.
pub(crate) async fn written(w: Written) -> floe::Result<()> {
    if durable(w).await {
        Ok(())
    } else {
        Err(floe::Error::UnknownLocalException(
            "the registry cannot store the change: its etcd cluster is unavailable".into(),
        ))
    }
}

/// The tables, shared with the task that keeps them in step with etcd.
#[derive(Clone)]
struct SharedTables(Arc<Mutex<Tables>>);

impl SharedTables {
    fn lock(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Mirror for SharedTables {
    /// Applies changes that etcd reported.
    fn apply(&self, ops: Vec<Op>) {
        let mut t = self.lock();
        for op in ops {
            t.apply(op);
        }
    }

    /// Replaces everything but the local objects with `ops` (after etcd compacted away the
    /// history the watch needed).
    fn reset(&self, ops: Vec<Op>) {
        let mut t = self.lock();
        t.adapters.clear();
        t.groups.clear();
        t.applications.clear();
        t.applications_generation.fetch_add(1, Ordering::Release);
        let local = std::mem::take(&mut t.local_objects);
        t.objects.retain(|k, _| local.contains(k));
        t.local_objects = local;
        for op in ops {
            t.apply(op);
        }
    }
}

impl Database {
    /// A database over `store` (None: memory only), filled with what the store held.
    pub fn new(communicator: &Communicator, store: Option<(Store, Contents)>) -> Database {
        let mut tables = Tables::default();
        let backend = match store {
            Some((store, contents)) => {
                for (id, bytes) in contents.adapters {
                    if let Some((proxy, replica_group)) = read_record(communicator, &bytes) {
                        tables.apply(Op::PutAdapter(id, AdapterEntry { proxy, replica_group }));
                    }
                }
                for (key, bytes) in contents.objects {
                    let mut dec = Decoder::from_slice(&key, ENCODING);
                    let Ok(id) = Identity::decode(&mut dec) else { continue };
                    if let Some((proxy, type_id)) = read_record(communicator, &bytes) {
                        tables.apply(Op::PutObject(identity_string(&id), ObjectEntry { proxy, type_id }));
                    }
                }
                for (name, info) in contents.applications {
                    tables.apply(Op::PutApplication(name, info));
                }
                Backend::Redb(store)
            }
            None => Backend::Memory,
        };
        let applications_generation = tables.applications_generation.clone();
        Database { tables: Arc::new(Mutex::new(tables)), applications_generation, backend: Mutex::new(backend) }
    }

    /// An empty database whose tables `connect` fills and keeps in step with etcd.
    pub(crate) async fn with_etcd<F, Fut, E>(connect: F) -> Result<Database, E>
    where
        F: FnOnce(Arc<dyn Mirror>) -> Fut,
        Fut: std::future::Future<Output = Result<crate::etcd::Etcd, E>>,
    {
        let tables = Arc::new(Mutex::new(Tables::default()));
        let etcd = connect(Arc::new(SharedTables(tables.clone()))).await?;
        let applications_generation = tables.lock().unwrap_or_else(|e| e.into_inner()).applications_generation.clone();
        Ok(Database { tables, applications_generation, backend: Mutex::new(Backend::Etcd(etcd)) })
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Makes changes: applies them to the tables and writes them to the store, or (with
    /// etcd) sends them to etcd, from where the watch brings them back into the tables.
    /// Called with the tables locked, so that the store sees the changes in order.
    fn commit(&self, t: &mut Tables, ops: Vec<Op>) -> Written {
        let backend = self.backend.lock().unwrap_or_else(|e| e.into_inner());
        match &*backend {
            Backend::Memory => {
                for op in ops {
                    t.apply(op);
                }
                None
            }
            Backend::Redb(store) => {
                let changes = ops.iter().map(change).collect();
                for op in ops {
                    t.apply(op);
                }
                Some(store.write(changes))
            }
            Backend::Etcd(etcd) => {
                // The registry's own objects are not shared: changes to them stay here.
                let (local, shared): (Vec<Op>, Vec<Op>) = ops.into_iter().partition(|op| match op {
                    Op::PutObject(k, _) | Op::RemoveObject(k) => t.local_objects.contains(k),
                    _ => false,
                });
                for op in local {
                    if let Op::RemoveObject(k) = &op {
                        t.local_objects.remove(k);
                    }
                    t.apply(op);
                }
                if shared.is_empty() {
                    None
                } else {
                    Some(etcd.write(shared))
                }
            }
        }
    }

    /// Writes what is queued and closes the store (with etcd: stops keeping the cache and
    /// the registrations' lease alive).
    pub fn close(&self) {
        let mut backend = self.backend.lock().unwrap_or_else(|e| e.into_inner());
        match std::mem::replace(&mut *backend, Backend::Memory) {
            Backend::Redb(mut s) => s.close(),
            Backend::Etcd(e) => e.close(),
            Backend::Memory => {}
        }
    }

    // ---- adapters ----

    /// Registers (Some) or unregisters (None) an adapter's endpoints, with its replica group.
    pub fn set_adapter(&self, id: &str, replica_group: &str, proxy: Option<ObjectPrx>) -> Written {
        let mut t = self.tables();
        let op = match proxy {
            Some(proxy) => {
                Op::PutAdapter(id.to_string(), AdapterEntry { proxy, replica_group: replica_group.to_string() })
            }
            None => {
                if !t.adapters.contains_key(id) && !self.is_etcd() {
                    return None;
                }
                Op::RemoveAdapter(id.to_string())
            }
        };
        self.commit(&mut t, vec![op])
    }

    fn is_etcd(&self) -> bool {
        matches!(&*self.backend.lock().unwrap_or_else(|e| e.into_inner()), Backend::Etcd(_))
    }

    /// The adapter registered as `id`.
    pub fn adapter(&self, id: &str) -> Option<AdapterEntry> {
        self.tables().adapters.get(id).cloned()
    }

    /// The members of the replica group `id` (sorted by adapter id), empty if there is none.
    pub fn group_members(&self, id: &str) -> Vec<(String, AdapterEntry)> {
        let t = self.tables();
        t.groups
            .get(id)
            .map(|m| m.iter().filter_map(|a| t.adapters.get(a).map(|e| (a.clone(), e.clone()))).collect())
            .unwrap_or_default()
    }

    /// Every adapter id, then every replica group id.
    pub fn all_adapter_ids(&self) -> Vec<String> {
        let t = self.tables();
        t.adapters.keys().chain(t.groups.keys()).cloned().collect()
    }

    /// Removes an adapter, or dissolves a replica group (its members stay, ungrouped). None
    /// when there is neither.
    pub fn remove_adapter(&self, id: &str) -> Option<Written> {
        let mut t = self.tables();
        if t.adapters.contains_key(id) {
            return Some(self.commit(&mut t, vec![Op::RemoveAdapter(id.to_string())]));
        }
        let members = t.groups.get(id)?.clone();
        let ops = members
            .iter()
            .filter_map(|m| {
                let a = t.adapters.get(m)?;
                Some(Op::PutAdapter(m.clone(), AdapterEntry { proxy: a.proxy.clone(), replica_group: String::new() }))
            })
            .collect();
        Some(self.commit(&mut t, ops))
    }

    /// Unregisters adapter `id` if it is still registered as `entry` (it has not registered
    /// again meanwhile, through this replica or another).
    pub fn remove_adapter_if(&self, id: &str, entry: &AdapterEntry) -> Written {
        let mut t = self.tables();
        let seen = record(&entry.proxy, &entry.replica_group);
        if !self.is_etcd() && t.adapters.get(id).is_none_or(|a| record(&a.proxy, &a.replica_group) != seen) {
            return None;
        }
        self.commit(&mut t, vec![Op::RemoveAdapterIf(id.to_string(), seen)])
    }

    /// Every registered adapter.
    pub fn adapters(&self) -> Vec<(String, AdapterEntry)> {
        self.tables().adapters.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// How many adapters are registered.
    pub fn adapter_count(&self) -> usize {
        self.tables().adapters.len()
    }

    // ---- deployed applications ----

    /// The stored applications (name → encoded `ApplicationInfo`) and the generation they
    /// are at.
    pub fn applications(&self) -> (u64, BTreeMap<String, Vec<u8>>) {
        let t = self.tables();
        (t.applications_generation.load(Ordering::Acquire), t.applications.clone())
    }

    /// The generation of the stored applications (see [`Database::applications`]).
    pub fn applications_generation(&self) -> u64 {
        self.applications_generation.load(Ordering::Acquire)
    }

    /// Stores (Some) or removes (None) an application, if the stored applications are still
    /// at `generation`; None if they changed meanwhile (the caller checks again).
    pub fn set_application(&self, name: &str, info: Option<Vec<u8>>, generation: u64) -> Option<Written> {
        let mut t = self.tables();
        if t.applications_generation.load(Ordering::Acquire) != generation {
            return None;
        }
        let op = match info {
            Some(info) => Op::PutApplication(name.to_string(), info),
            None => Op::RemoveApplication(name.to_string()),
        };
        Some(self.commit(&mut t, vec![op]))
    }

    // ---- well-known objects ----

    /// The well-known object `id`.
    pub fn object(&self, id: &Identity) -> Option<ObjectEntry> {
        self.tables().objects.get(&identity_string(id)).cloned()
    }

    /// Adds a well-known object; None if one with that identity exists (and `replace` is
    /// false).
    pub fn add_object(&self, proxy: ObjectPrx, type_id: &str, replace: bool) -> Option<Written> {
        let key = identity_string(proxy.ice_get_identity());
        let mut t = self.tables();
        if !replace && t.objects.contains_key(&key) {
            return None;
        }
        Some(self.commit(&mut t, vec![Op::PutObject(key, ObjectEntry { proxy, type_id: type_id.to_string() })]))
    }

    /// Adds one of the registry's own objects (its locator, query, …). With etcd it is kept
    /// in this replica's tables only, as every replica serves its own.
    pub fn add_local_object(&self, proxy: ObjectPrx, type_id: &str) -> Written {
        let key = identity_string(proxy.ice_get_identity());
        let mut t = self.tables();
        if self.is_etcd() {
            t.local_objects.insert(key.clone());
        }
        self.commit(&mut t, vec![Op::PutObject(key, ObjectEntry { proxy, type_id: type_id.to_string() })])
    }

    /// Replaces the proxy of a well-known object, keeping its type; None if there is none.
    pub fn update_object(&self, proxy: ObjectPrx) -> Option<Written> {
        let key = identity_string(proxy.ice_get_identity());
        let mut t = self.tables();
        let type_id = t.objects.get(&key)?.type_id.clone();
        Some(self.commit(&mut t, vec![Op::PutObject(key, ObjectEntry { proxy, type_id })]))
    }

    /// Removes a well-known object; None if there is none.
    pub fn remove_object(&self, id: &Identity) -> Option<Written> {
        let key = identity_string(id);
        let mut t = self.tables();
        if !t.objects.contains_key(&key) {
            return None;
        }
        Some(self.commit(&mut t, vec![Op::RemoveObject(key)]))
    }

    /// Well-known objects whose identity (as a string) matches `pattern` (see [`matches`]).
    pub fn objects_matching(&self, pattern: &str) -> Vec<ObjectEntry> {
        self.tables().objects.iter().filter(|(k, _)| matches(k, pattern)).map(|(_, e)| e.clone()).collect()
    }

    /// Well-known objects of type `type_id`.
    pub fn objects_of_type(&self, type_id: &str) -> Vec<ObjectEntry> {
        self.tables().objects.values().filter(|e| e.type_id == type_id).cloned().collect()
    }
}

/// The store's form of a change.
fn change(op: &Op) -> Change {
    match op {
        Op::PutAdapter(id, a) => Change::PutAdapter(id.clone(), record(&a.proxy, &a.replica_group)),
        Op::RemoveAdapter(id) | Op::RemoveAdapterIf(id, _) => Change::RemoveAdapter(id.clone()),
        Op::PutObject(_, o) => {
            Change::PutObject(identity_key(o.proxy.ice_get_identity()), record(&o.proxy, &o.type_id))
        }
        // Keys are identity_string's output, which parses back.
        Op::RemoveObject(key) => Change::RemoveObject(identity_key(
            &floe::reference::string_to_identity(key).unwrap_or_else(|_| Identity::new(key)),
        )),
        Op::PutApplication(name, info) => Change::PutApplication(name.clone(), info.clone()),
        Op::RemoveApplication(name) => Change::RemoveApplication(name.clone()),
    }
}

/// Whether `s` matches `pattern`, where `*` stands for any run of characters; the empty
/// pattern matches everything.
pub fn matches(s: &str, pattern: &str) -> bool {
    if pattern.is_empty() {
        return true;
    }
    let parts: Vec<&str> = pattern.split('*').collect();
    if parts.len() == 1 {
        return s == pattern;
    }
    let (first, last) = (parts[0], parts[parts.len() - 1]);
    if !s.starts_with(first) || s.len() < first.len() + last.len() || !s.ends_with(last) {
        return false;
    }
    let mut rest = &s[first.len()..s.len() - last.len()];
    for mid in &parts[1..parts.len() - 1] {
        match rest.find(mid) {
            Some(i) => rest = &rest[i + mid.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn patterns() {
        assert!(matches("IceGrid/Query", ""));
        assert!(matches("IceGrid/Query", "IceGrid/*"));
        assert!(matches("IceGrid/Query", "*Query"));
        assert!(matches("IceGrid/Query", "Ice*/*ry"));
        assert!(!matches("IceGrid/Query", "IceGrid/Q"));
        assert!(!matches("ab", "a*b*b"));
        assert!(matches("abb", "a*b*b"));
    }
}
