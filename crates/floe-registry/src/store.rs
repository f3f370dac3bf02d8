//! Persistent storage of the registry's state in a [redb](https://docs.rs/redb) database
//! under the data directory (`IceGrid.Registry.LMDB.Path`).
//!
//! The registry keeps its whole state in memory and answers lookups from there; every change
//! is also written to the database through floe-service's group-commit store, and the
//! requests that made them are answered once they are committed. Here: the tables and how
//! changes apply to them.

use floe_service::store::redb::{ReadTransaction, TableDefinition, WriteTransaction};
pub use floe_service::store::StoreError;
use floe_service::store::{err, read_table, Schema};

/// Dynamically registered adapters: adapter id → encoded record (proxy, replica group id).
const ADAPTERS: TableDefinition<&str, &[u8]> = TableDefinition::new("adapters");
/// Well-known objects: encoded identity → encoded record (proxy, type id).
const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");
/// Deployed applications: name → encoded `IceGrid::ApplicationInfo`.
const APPLICATIONS: TableDefinition<&str, &[u8]> = TableDefinition::new("applications");

/// The name of the database file in the data directory.
pub const FILE_NAME: &str = "floe-registry.redb";

/// One change to the stored state.
#[derive(Debug, Clone)]
pub enum Change {
    /// Sets the record of an adapter.
    PutAdapter(String, Vec<u8>),
    /// Removes an adapter.
    RemoveAdapter(String),
    /// Sets the record of a well-known object (key: its encoded identity).
    PutObject(Vec<u8>, Vec<u8>),
    /// Removes a well-known object.
    RemoveObject(Vec<u8>),
    /// Sets the record of an application.
    PutApplication(String, Vec<u8>),
    /// Removes an application.
    RemoveApplication(String),
}

/// What was stored: adapter and object records, as written.
#[derive(Debug, Default)]
pub struct Contents {
    /// (adapter id, record).
    pub adapters: Vec<(String, Vec<u8>)>,
    /// (encoded identity, record).
    pub objects: Vec<(Vec<u8>, Vec<u8>)>,
    /// (application name, record).
    pub applications: Vec<(String, Vec<u8>)>,
}

/// The handle to the database and its writer thread.
pub type Store = floe_service::store::Store<RegistrySchema>;

/// The registry's tables, as the store reads and changes them.
#[derive(Debug)]
pub struct RegistrySchema;

impl Schema for RegistrySchema {
    type Contents = Contents;
    type Change = Change;
    const WRITER: &'static str = "floe-registry-store";
    const FILE_NAME: &'static str = FILE_NAME;

    fn apply(w: &WriteTransaction, changes: &[&Change]) -> Result<(), StoreError> {
        let mut adapters = w.open_table(ADAPTERS).map_err(|e| err("adapters table", e))?;
        let mut objects = w.open_table(OBJECTS).map_err(|e| err("objects table", e))?;
        let mut applications = w.open_table(APPLICATIONS).map_err(|e| err("applications table", e))?;
        for change in changes {
            match change {
                Change::PutAdapter(k, v) => adapters.insert(k.as_str(), v.as_slice()).map(drop),
                Change::RemoveAdapter(k) => adapters.remove(k.as_str()).map(drop),
                Change::PutObject(k, v) => objects.insert(k.as_slice(), v.as_slice()).map(drop),
                Change::RemoveObject(k) => objects.remove(k.as_slice()).map(drop),
                Change::PutApplication(k, v) => applications.insert(k.as_str(), v.as_slice()).map(drop),
                Change::RemoveApplication(k) => applications.remove(k.as_str()).map(drop),
            }
            .map_err(|e| err("change", e))?;
        }
        Ok(())
    }

    fn read(r: &ReadTransaction) -> Result<Contents, StoreError> {
        let mut contents = Contents::default();
        read_table(r, ADAPTERS, |id, record| {
            contents.adapters.push((id.to_string(), record.to_vec()));
            Ok(())
        })?;
        read_table(r, OBJECTS, |identity, record| {
            contents.objects.push((identity.to_vec(), record.to_vec()));
            Ok(())
        })?;
        read_table(r, APPLICATIONS, |name, record| {
            contents.applications.push((name.to_string(), record.to_vec()));
            Ok(())
        })?;
        Ok(contents)
    }
}
