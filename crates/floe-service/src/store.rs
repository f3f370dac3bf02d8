//! A [redb](https://docs.rs/redb) database in a service's data directory, written by one
//! thread with group commit: every change is queued in the order it was made, the writer
//! commits what arrived together in one durable transaction, and the request that made a
//! change is answered once it is committed. Generic over the service's change type `C`:
//! the service says how its tables are created, read and changed.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

pub use redb;
use redb::{Database, Key, ReadTransaction, ReadableTable, TableDefinition, TableError, Value, WriteTransaction};

/// Jobs committed in one transaction at most.
const GROUP_MAX: usize = 4096;

/// Why the store could not be opened, read or written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError(pub String);

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StoreError {}

/// A store error: `context`, then what went wrong.
pub fn err(context: &str, e: impl std::fmt::Display) -> StoreError {
    StoreError(format!("{context}: {e}"))
}

/// What a service's store is made of: its file, how its tables are read when the store
/// opens, and how a change is applied to them.
pub trait Schema: Send + 'static {
    /// One change to the stored state.
    type Change: Send + 'static;
    /// What the store held when it was opened.
    type Contents;
    /// The name of the database file in the data directory.
    const FILE_NAME: &'static str;
    /// The name of the writer thread.
    const WRITER: &'static str;

    /// Reads everything stored (see [`read_table`]).
    fn read(r: &ReadTransaction) -> Result<Self::Contents, StoreError>;
    /// Applies changes, in order, within the writer's transaction.
    fn apply(w: &WriteTransaction, changes: &[&Self::Change]) -> Result<(), StoreError>;
}

struct Job<C> {
    changes: Vec<C>,
    done: tokio::sync::oneshot::Sender<()>,
}

/// The handle to the database and its writer thread.
pub struct Store<S: Schema> {
    tx: Option<mpsc::Sender<Job<S::Change>>>,
    writer: Option<std::thread::JoinHandle<()>>,
    path: PathBuf,
}

impl<S: Schema> std::fmt::Debug for Store<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish_non_exhaustive()
    }
}

impl<S: Schema> Store<S> {
    /// Opens (creating it if needed) the database [`Schema::FILE_NAME`] in `dir`, and
    /// returns it with its contents.
    pub fn open(dir: &Path) -> Result<(Self, S::Contents), StoreError> {
        std::fs::create_dir_all(dir).map_err(|e| err(&format!("cannot create {}", dir.display()), e))?;
        let path = dir.join(S::FILE_NAME);
        let db = Database::create(&path).map_err(|e| err(&format!("cannot open {}", path.display()), e))?;
        let contents = S::read(&db.begin_read().map_err(|e| err("begin read", e))?)?;
        let (tx, rx) = mpsc::channel::<Job<S::Change>>();
        let writer = std::thread::Builder::new()
            .name(S::WRITER.into())
            .spawn(move || writer_loop::<S>(&db, rx))
            .map_err(|e| err("cannot start the store's writer", e))?;
        Ok((Store { tx: Some(tx), writer: Some(writer), path }, contents))
    }

    /// Queues `changes`; the returned receiver completes once they are durably committed,
    /// and fails (its sender dropped) when they could not be.
    pub fn write(&self, changes: Vec<S::Change>) -> tokio::sync::oneshot::Receiver<()> {
        let (done, rx) = tokio::sync::oneshot::channel();
        if let Some(tx) = &self.tx {
            let _ = tx.send(Job { changes, done });
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

impl<S: Schema> Drop for Store<S> {
    fn drop(&mut self) {
        self.close();
    }
}

/// Calls `each` with every entry of `table`, in key order (none when the table was never
/// written).
pub fn read_table<K: Key + 'static, V: Value + 'static>(
    r: &ReadTransaction,
    table: TableDefinition<K, V>,
    mut each: impl FnMut(K::SelfType<'_>, V::SelfType<'_>) -> Result<(), StoreError>,
) -> Result<(), StoreError> {
    let name = table.to_string();
    let t = match r.open_table(table) {
        Ok(t) => t,
        Err(TableError::TableDoesNotExist(_)) => return Ok(()),
        Err(e) => return Err(err(&format!("table {name}"), e)),
    };
    for entry in t.iter().map_err(|e| err(&format!("read {name}"), e))? {
        let (k, v) = entry.map_err(|e| err(&format!("read {name}"), e))?;
        each(k.value(), v.value())?;
    }
    Ok(())
}

fn writer_loop<S: Schema>(db: &Database, rx: mpsc::Receiver<Job<S::Change>>) {
    while let Ok(first) = rx.recv() {
        let mut jobs = vec![first];
        // Group commit: everything that arrived meanwhile goes into the same transaction.
        while jobs.len() < GROUP_MAX {
            match rx.try_recv() {
                Ok(j) => jobs.push(j),
                Err(_) => break,
            }
        }
        let committed = (|| {
            let w = db.begin_write().map_err(|e| err("begin", e))?;
            let changes: Vec<&S::Change> = jobs.iter().flat_map(|j| j.changes.iter()).collect();
            S::apply(&w, &changes)?;
            w.commit().map_err(|e| err("commit", e))
        })();
        match committed {
            Ok(()) => jobs.into_iter().for_each(|j| {
                let _ = j.done.send(());
            }),
            // Dropping the senders tells the requests that their changes are not stored.
            Err(e) => tracing::error!(target: "floe_service::store", "cannot write the database: {e}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redb::TableDefinition;

    const T: TableDefinition<&str, u64> = TableDefinition::new("t");

    struct Counts;

    impl Schema for Counts {
        type Change = (String, Option<u64>);
        type Contents = Vec<(String, u64)>;
        const FILE_NAME: &'static str = "t.redb";
        const WRITER: &'static str = "test-store";

        fn read(r: &ReadTransaction) -> Result<Self::Contents, StoreError> {
            let mut out = Vec::new();
            read_table(r, T, |k, v| {
                out.push((k.to_string(), v));
                Ok(())
            })?;
            Ok(out)
        }

        fn apply(w: &WriteTransaction, changes: &[&Self::Change]) -> Result<(), StoreError> {
            let mut t = w.open_table(T).map_err(|e| err("table", e))?;
            for (k, v) in changes {
                match v {
                    Some(v) => t.insert(k.as_str(), *v).map(drop),
                    None => t.remove(k.as_str()).map(drop),
                }
                .map_err(|e| err("change", e))?;
            }
            Ok(())
        }
    }

    #[test]
    fn changes_are_committed_in_order_and_survive_reopening() {
        let dir = std::env::temp_dir().join(format!("floe-service-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        {
            let (store, contents) = Store::<Counts>::open(&dir).unwrap();
            assert!(contents.is_empty());
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                let a = store.write(vec![("a".into(), Some(1)), ("b".into(), Some(2))]);
                let b = store.write(vec![("a".into(), None), ("c".into(), Some(3))]);
                a.await.unwrap();
                b.await.unwrap();
            });
        }
        let (_store, contents) = Store::<Counts>::open(&dir).unwrap();
        assert_eq!(contents, vec![("b".to_string(), 2), ("c".to_string(), 3)]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
