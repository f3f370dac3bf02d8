//! Persistent storage of the topics, links and subscribers in a [redb](https://docs.rs/redb)
//! database under the data directory (`IceStorm.LMDB.Path`).
//!
//! The service keeps its state in memory and delivers from there; every change is also
//! written by one writer thread, in the order the changes were made, which commits what
//! arrived together in one durable transaction; the request that made a change is answered
//! once it is committed.

use std::path::{Path, PathBuf};
use std::sync::mpsc;

use floe::encoding::{Decoder, Encoder, EncodingVersion};
use redb::{Database, ReadableTable, TableDefinition};

/// Topics: name → nothing (the table is the list).
const TOPICS: TableDefinition<&str, &[u8]> = TableDefinition::new("topics");
/// Subscribers and links: (topic name, subscriber identity as a string) → encoded [`Record`].
const SUBSCRIBERS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("subscribers");

/// The name of the database file in the data directory.
pub const FILE_NAME: &str = "floe-storm.redb";

/// Why the store could not be opened or read.
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

/// A stored subscriber or link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// The subscriber's proxy, or the link object of the linked topic, as a string.
    pub proxy: String,
    /// The subscriber's QoS (empty for links).
    pub qos: Vec<(String, String)>,
    /// For a link: its cost and the linked topic's proxy.
    pub link: Option<(i32, String)>,
}

impl Record {
    /// The record's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut e = Encoder::new(EncodingVersion::V1_1);
        e.write_u8(1); // format version
        e.write_str(&self.proxy);
        e.write_size(self.qos.len());
        for (k, v) in &self.qos {
            e.write_str(k);
            e.write_str(v);
        }
        match &self.link {
            None => e.write_u8(0),
            Some((cost, topic)) => {
                e.write_u8(1);
                e.write_i32(*cost);
                e.write_str(topic);
            }
        }
        e.as_slice().to_vec()
    }

    /// Reads a record written by [`encode`](Self::encode).
    pub fn decode(bytes: &[u8]) -> Result<Record, StoreError> {
        let mut d = Decoder::new(floe::bytes::Bytes::copy_from_slice(bytes), EncodingVersion::V1_1);
        let bad = |e: floe::encoding::DecodeError| err("bad subscriber record", e);
        let version = d.read_u8().map_err(bad)?;
        if version != 1 {
            return Err(StoreError(format!("subscriber record of unknown format {version}")));
        }
        let proxy = d.read_string().map_err(bad)?;
        let n = d.read_size().map_err(bad)?;
        let mut qos = Vec::with_capacity(n.min(64));
        for _ in 0..n {
            qos.push((d.read_string().map_err(bad)?, d.read_string().map_err(bad)?));
        }
        let link = match d.read_u8().map_err(bad)? {
            0 => None,
            _ => Some((d.read_i32().map_err(bad)?, d.read_string().map_err(bad)?)),
        };
        Ok(Record { proxy, qos, link })
    }
}

/// One change to the stored state.
#[derive(Debug, Clone)]
pub enum Change {
    /// Adds a topic.
    AddTopic(String),
    /// Removes a topic and everything subscribed to it.
    RemoveTopic(String),
    /// Sets a subscriber or link of a topic: (topic, identity, record).
    PutSubscriber(String, String, Record),
    /// Removes a subscriber or link: (topic, identity).
    RemoveSubscriber(String, String),
}

/// What was stored: each topic with its subscribers and links.
pub type Contents = Vec<(String, Vec<(String, Record)>)>;

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
        let w = db.begin_write().map_err(|e| err("begin", e))?;
        w.open_table(TOPICS).map_err(|e| err("topics table", e))?;
        w.open_table(SUBSCRIBERS).map_err(|e| err("subscribers table", e))?;
        w.commit().map_err(|e| err("commit", e))?;

        let mut contents: Contents = Vec::new();
        let r = db.begin_read().map_err(|e| err("begin read", e))?;
        let topics = r.open_table(TOPICS).map_err(|e| err("topics table", e))?;
        for entry in topics.iter().map_err(|e| err("read topics", e))? {
            let (k, _) = entry.map_err(|e| err("read topic", e))?;
            contents.push((k.value().to_string(), Vec::new()));
        }
        let subscribers = r.open_table(SUBSCRIBERS).map_err(|e| err("subscribers table", e))?;
        for entry in subscribers.iter().map_err(|e| err("read subscribers", e))? {
            let (k, v) = entry.map_err(|e| err("read subscriber", e))?;
            let (topic, id) = k.value();
            let record = Record::decode(v.value())?;
            if let Some((_, subs)) = contents.iter_mut().find(|(t, _)| t == topic) {
                subs.push((id.to_string(), record));
            }
        }
        drop((topics, subscribers, r));

        let (tx, rx) = mpsc::channel::<Job>();
        let writer = std::thread::Builder::new()
            .name("floe-storm-store".into())
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
            tracing::error!(target: "floe::storm", "cannot write the database: {e}");
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
        let mut topics = w.open_table(TOPICS).map_err(|e| err("topics table", e))?;
        let mut subscribers = w.open_table(SUBSCRIBERS).map_err(|e| err("subscribers table", e))?;
        for change in jobs.iter().flat_map(|j| j.changes.iter()) {
            match change {
                Change::AddTopic(name) => {
                    topics.insert(name.as_str(), &[][..]).map_err(|e| err("put topic", e))?;
                }
                Change::RemoveTopic(name) => {
                    topics.remove(name.as_str()).map_err(|e| err("remove topic", e))?;
                    let ids: Vec<String> = subscribers
                        .range((name.as_str(), "")..)
                        .map_err(|e| err("read subscribers", e))?
                        .filter_map(|e| e.ok())
                        .map(|(k, _)| {
                            let (t, id) = k.value();
                            (t.to_string(), id.to_string())
                        })
                        .take_while(|(t, _)| t == name)
                        .map(|(_, id)| id)
                        .collect();
                    for id in ids {
                        subscribers.remove((name.as_str(), id.as_str())).map_err(|e| err("remove subscriber", e))?;
                    }
                }
                Change::PutSubscriber(topic, id, record) => {
                    let bytes = record.encode();
                    subscribers
                        .insert((topic.as_str(), id.as_str()), bytes.as_slice())
                        .map_err(|e| err("put subscriber", e))?;
                }
                Change::RemoveSubscriber(topic, id) => {
                    subscribers.remove((topic.as_str(), id.as_str())).map_err(|e| err("remove subscriber", e))?;
                }
            }
        }
    }
    w.commit().map_err(|e| err("commit", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn topics_and_subscribers_survive_reopening() {
        let dir = std::env::temp_dir().join(format!("floe-storm-store-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let sub = Record {
            proxy: "s -o:tcp -h 127.0.0.1 -p 1".into(),
            qos: vec![("retryCount".into(), "3".into())],
            link: None,
        };
        let link =
            Record { proxy: "IceStorm/b.link:tcp".into(), qos: vec![], link: Some((5, "IceStorm/topic.b".into())) };
        {
            let (store, contents) = Store::open(&dir).unwrap();
            assert!(contents.is_empty());
            let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
            rt.block_on(async {
                store
                    .write(vec![
                        Change::AddTopic("a".into()),
                        Change::AddTopic("b".into()),
                        Change::AddTopic("c".into()),
                        Change::PutSubscriber("a".into(), "s".into(), sub.clone()),
                        Change::PutSubscriber("a".into(), "IceStorm/topic.b".into(), link.clone()),
                        Change::PutSubscriber("b".into(), "t".into(), sub.clone()),
                        Change::PutSubscriber("c".into(), "u".into(), sub.clone()),
                        Change::RemoveTopic("b".into()),
                        Change::RemoveSubscriber("c".into(), "u".into()),
                    ])
                    .await
                    .unwrap();
            });
        }
        let (_store, contents) = Store::open(&dir).unwrap();
        assert_eq!(
            contents,
            vec![
                ("a".to_string(), vec![("IceStorm/topic.b".to_string(), link), ("s".to_string(), sub)]),
                ("c".to_string(), vec![]),
            ]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_record_of_an_unknown_format_is_an_error() {
        assert!(Record::decode(&[2]).is_err());
        assert!(Record::decode(&[1, 200]).is_err());
    }
}
