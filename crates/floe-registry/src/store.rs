//! Persistent storage of the registry's state in a [redb](https://docs.rs/redb) database
//! under the data directory (`IceGrid.Registry.LMDB.Path`).
//!
//! The registry keeps its whole state in memory and answers lookups from there; every change
//! is also written to the database by one writer thread, which commits the changes that
//! arrived together in one durable transaction (group commit) and only then lets the
//! requests that made them be answered.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use redb::{Database, ReadableTable, TableDefinition};

/// Dynamically registered adapters: adapter id → encoded record (proxy, replica group id).
const ADAPTERS: TableDefinition<&str, &[u8]> = TableDefinition::new("adapters");
/// Well-known objects: encoded identity → encoded record (proxy, type id).
const OBJECTS: TableDefinition<&[u8], &[u8]> = TableDefinition::new("objects");

/// The name of the database file in the data directory.
pub const FILE_NAME: &str = "floe-registry.redb";

/// Why the store could not be opened or written.
#[derive(Debug)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

fn err(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError(format!("{context}: {e}"))
}

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
}

/// What was stored: adapter and object records, as written.
#[derive(Debug, Default)]
pub struct Contents {
    /// (adapter id, record).
    pub adapters: Vec<(String, Vec<u8>)>,
    /// (encoded identity, record).
    pub objects: Vec<(Vec<u8>, Vec<u8>)>,
}

struct Job {
    changes: Vec<Change>,
    done: Option<tokio::sync::oneshot::Sender<()>>,
}

/// The handle to the database and its writer thread.
pub struct Store {
    tx: Option<mpsc::Sender<Job>>,
    writer: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl Store {
    /// Opens (creating it if needed) the database in `dir`, and returns it with its contents.
    pub fn open(dir: &Path) -> Result<(Store, Contents), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| err(&format!("cannot create {}", dir.display()), e))?;
        let path = dir.join(FILE_NAME);
        let db = Database::create(&path).map_err(|e| err(&format!("cannot open {}", path.display()), e))?;
        // Create the tables, so that reading an empty database works.
        let w = db.begin_write().map_err(|e| err("begin", e))?;
        w.open_table(ADAPTERS).map_err(|e| err("adapters table", e))?;
        w.open_table(OBJECTS).map_err(|e| err("objects table", e))?;
        w.commit().map_err(|e| err("commit", e))?;

        let mut contents = Contents::default();
        let r = db.begin_read().map_err(|e| err("begin read", e))?;
        let adapters = r.open_table(ADAPTERS).map_err(|e| err("adapters table", e))?;
        for entry in adapters.iter().map_err(|e| err("read adapters", e))? {
            let (k, v) = entry.map_err(|e| err("read adapter", e))?;
            contents.adapters.push((k.value().to_string(), v.value().to_vec()));
        }
        let objects = r.open_table(OBJECTS).map_err(|e| err("objects table", e))?;
        for entry in objects.iter().map_err(|e| err("read objects", e))? {
            let (k, v) = entry.map_err(|e| err("read object", e))?;
            contents.objects.push((k.value().to_vec(), v.value().to_vec()));
        }
        drop((adapters, objects, r));

        let (tx, rx) = mpsc::channel::<Job>();
        let writer = std::thread::Builder::new()
            .name("floe-registry-store".into())
            .spawn(move || writer_loop(db, rx))
            .map_err(|e| err("cannot start the store's writer", e))?;
        Ok((Store { tx: Some(tx), writer: Some(writer), path }, contents))
    }

    /// Queues `changes`; the returned receiver completes once they are durably committed.
    pub fn write(&self, changes: Vec<Change>) -> tokio::sync::oneshot::Receiver<()> {
        let (done, rx) = tokio::sync::oneshot::channel();
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job { changes, done: Some(done) });
        }
        rx
    }

    /// Writes what is queued and stops the writer thread.
    pub fn close(&mut self) {
        self.tx = None;
        if let Some(w) = self.writer.take() {
            let _ = w.join();
        }
    }
}

impl Drop for Store {
    fn drop(&mut self) {
        self.close();
    }
}

fn writer_loop(db: Database, rx: mpsc::Receiver<Job>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        // Group commit: everything that arrived meanwhile goes into the same transaction.
        while jobs.len() < 4096 {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        if let Err(e) = apply(&db, &jobs) {
            tracing::error!(target: "floe_registry::store", "cannot write the registry database: {e}");
        }
        for mut j in jobs {
            if let Some(done) = j.done.take() {
                let _ = done.send(());
            }
        }
    }
}

fn apply(db: &Database, jobs: &[Job]) -> Result<(), StoreError> {
    let w = db.begin_write().map_err(|e| err("begin", e))?;
    {
        let mut adapters = w.open_table(ADAPTERS).map_err(|e| err("adapters table", e))?;
        let mut objects = w.open_table(OBJECTS).map_err(|e| err("objects table", e))?;
        for change in jobs.iter().flat_map(|j| j.changes.iter()) {
            match change {
                Change::PutAdapter(k, v) => {
                    adapters.insert(k.as_str(), v.as_slice()).map_err(|e| err("put adapter", e))?;
                }
                Change::RemoveAdapter(k) => {
                    adapters.remove(k.as_str()).map_err(|e| err("remove adapter", e))?;
                }
                Change::PutObject(k, v) => {
                    objects.insert(k.as_slice(), v.as_slice()).map_err(|e| err("put object", e))?;
                }
                Change::RemoveObject(k) => {
                    objects.remove(k.as_slice()).map_err(|e| err("remove object", e))?;
                }
            }
        }
    }
    w.commit().map_err(|e| err("commit", e))
}
