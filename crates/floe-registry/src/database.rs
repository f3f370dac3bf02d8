//! The registry's state: dynamically registered adapters (and the replica groups they form)
//! and well-known objects, kept in memory and written through to the [`Store`].

use std::collections::BTreeMap;
use std::sync::Mutex;

use floe::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion};
use floe::{Communicator, Identity, ObjectPrx};

use crate::store::{Change, Contents, Store};

/// An adapter registered by a server (`setAdapterDirectProxy`).
#[derive(Debug, Clone)]
pub struct AdapterEntry {
    /// The adapter's (dummy) direct proxy, carrying its endpoints.
    pub proxy: ObjectPrx,
    /// The replica group it belongs to ("" for none).
    pub replica_group: String,
}

/// A well-known object.
#[derive(Debug, Clone)]
pub struct ObjectEntry {
    /// Its proxy.
    pub proxy: ObjectPrx,
    /// Its most-derived Slice type id.
    pub type_id: String,
}

#[derive(Default)]
struct Tables {
    adapters: BTreeMap<String, AdapterEntry>,
    /// Replica group id → member adapter ids.
    groups: BTreeMap<String, Vec<String>>,
    /// Keyed by the identity's string form, so that listings come out sorted.
    objects: BTreeMap<String, ObjectEntry>,
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
}

/// Encoding used for stored records.
const ENCODING: EncodingVersion = EncodingVersion { major: 1, minor: 1 };

fn record(proxy: &ObjectPrx, text: &str) -> Vec<u8> {
    let mut enc = Encoder::new(ENCODING);
    ObjectPrx::encode_nullable(Some(proxy), &mut enc);
    text.encode(&mut enc);
    enc.into_bytes().to_vec()
}

fn read_record(communicator: &Communicator, bytes: &[u8]) -> Option<(ObjectPrx, String)> {
    let mut dec = Decoder::from_slice(bytes, ENCODING);
    let proxy = ObjectPrx::decode(communicator, &mut dec).ok()??;
    let text = String::decode(&mut dec).ok()?;
    Some((proxy, text))
}

fn identity_key(id: &Identity) -> Vec<u8> {
    let mut enc = Encoder::new(ENCODING);
    id.encode(&mut enc);
    enc.into_bytes().to_vec()
}

/// The identity's string form (`category/name`, with Ice's escapes).
pub fn identity_string(id: &Identity) -> String {
    floe::reference::identity_to_string(id)
}

/// The registry's database: in-memory tables, written through to a store when there is one.
pub struct Database {
    tables: Mutex<Tables>,
    store: Mutex<Option<Store>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").finish_non_exhaustive()
    }
}

/// A pending write: completes once the change is durable.
pub type Written = Option<tokio::sync::oneshot::Receiver<()>>;

/// Waits for a write to be durable.
pub async fn durable(w: Written) {
    if let Some(rx) = w {
        let _ = rx.await;
    }
}

impl Database {
    /// A database over `store` (None: memory only), filled with what the store held.
    pub fn new(communicator: &Communicator, store: Option<(Store, Contents)>) -> Database {
        let mut tables = Tables::default();
        let store = store.map(|(store, contents)| {
            for (id, bytes) in contents.adapters {
                if let Some((proxy, replica_group)) = read_record(communicator, &bytes) {
                    tables.join_group(&id, &replica_group);
                    tables.adapters.insert(id, AdapterEntry { proxy, replica_group });
                }
            }
            for (key, bytes) in contents.objects {
                let mut dec = Decoder::from_slice(&key, ENCODING);
                let Ok(id) = Identity::decode(&mut dec) else { continue };
                if let Some((proxy, type_id)) = read_record(communicator, &bytes) {
                    tables.objects.insert(identity_string(&id), ObjectEntry { proxy, type_id });
                }
            }
            store
        });
        Database { tables: Mutex::new(tables), store: Mutex::new(store) }
    }

    fn tables(&self) -> std::sync::MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Queues changes while the tables are locked, so that the store sees them in order.
    fn write(&self, _tables: &Tables, changes: Vec<Change>) -> Written {
        let store = self.store.lock().unwrap_or_else(|e| e.into_inner());
        store.as_ref().map(|s| s.write(changes))
    }

    /// Writes what is queued and closes the store.
    pub fn close(&self) {
        if let Some(mut s) = self.store.lock().unwrap_or_else(|e| e.into_inner()).take() {
            s.close();
        }
    }

    // ---- adapters ----

    /// Registers (Some) or unregisters (None) an adapter's endpoints, with its replica group.
    pub fn set_adapter(&self, id: &str, replica_group: &str, proxy: Option<ObjectPrx>) -> Written {
        let mut t = self.tables();
        match proxy {
            Some(proxy) => {
                if let Some(old) = t.adapters.get(id).map(|a| a.replica_group.clone()) {
                    if old != replica_group {
                        t.leave_group(id, &old);
                    }
                }
                t.join_group(id, replica_group);
                let bytes = record(&proxy, replica_group);
                t.adapters.insert(id.to_string(), AdapterEntry { proxy, replica_group: replica_group.to_string() });
                self.write(&t, vec![Change::PutAdapter(id.to_string(), bytes)])
            }
            None => {
                let old = t.adapters.remove(id)?;
                t.leave_group(id, &old.replica_group);
                self.write(&t, vec![Change::RemoveAdapter(id.to_string())])
            }
        }
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
        if let Some(old) = t.adapters.remove(id) {
            t.leave_group(id, &old.replica_group);
            return Some(self.write(&t, vec![Change::RemoveAdapter(id.to_string())]));
        }
        let members = t.groups.remove(id)?;
        let mut changes = Vec::new();
        for m in members {
            if let Some(a) = t.adapters.get_mut(&m) {
                a.replica_group.clear();
                changes.push(Change::PutAdapter(m.clone(), record(&a.proxy, "")));
            }
        }
        Some(self.write(&t, changes))
    }

    /// How many adapters are registered.
    pub fn adapter_count(&self) -> usize {
        self.tables().adapters.len()
    }

    // ---- well-known objects ----

    /// The well-known object `id`.
    pub fn object(&self, id: &Identity) -> Option<ObjectEntry> {
        self.tables().objects.get(&identity_string(id)).cloned()
    }

    /// Adds a well-known object; None if one with that identity exists (and `replace` is
    /// false).
    pub fn add_object(&self, proxy: ObjectPrx, type_id: &str, replace: bool) -> Option<Written> {
        let id = proxy.ice_get_identity().clone();
        let key = identity_string(&id);
        let mut t = self.tables();
        if !replace && t.objects.contains_key(&key) {
            return None;
        }
        let bytes = record(&proxy, type_id);
        t.objects.insert(key, ObjectEntry { proxy, type_id: type_id.to_string() });
        Some(self.write(&t, vec![Change::PutObject(identity_key(&id), bytes)]))
    }

    /// Replaces the proxy of a well-known object, keeping its type; None if there is none.
    pub fn update_object(&self, proxy: ObjectPrx) -> Option<Written> {
        let id = proxy.ice_get_identity().clone();
        let mut t = self.tables();
        let entry = t.objects.get_mut(&identity_string(&id))?;
        entry.proxy = proxy;
        let bytes = record(&entry.proxy, &entry.type_id);
        Some(self.write(&t, vec![Change::PutObject(identity_key(&id), bytes)]))
    }

    /// Removes a well-known object; None if there is none.
    pub fn remove_object(&self, id: &Identity) -> Option<Written> {
        let mut t = self.tables();
        t.objects.remove(&identity_string(id))?;
        Some(self.write(&t, vec![Change::RemoveObject(identity_key(id))]))
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
