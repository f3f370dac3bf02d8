//! Persistent storage of the topics, links and subscribers in a [redb](https://docs.rs/redb)
//! database under the data directory (`IceStorm.LMDB.Path`).
//!
//! The service keeps its state in memory and delivers from there; every change is also
//! written, through floe-service's group-commit store, in the order the changes were made;
//! the request that made a change is answered once it is committed. Here: the tables, the
//! subscriber record and how changes apply to the tables.

use floe::encoding::{Decoder, Encoder, EncodingVersion};
use floe_service::store::redb::{ReadTransaction, ReadableTable, TableDefinition, WriteTransaction};
pub use floe_service::store::StoreError;
use floe_service::store::{err, read_table, Schema};

/// Topics: name → nothing (the table is the list).
const TOPICS: TableDefinition<&str, &[u8]> = TableDefinition::new("topics");
/// Subscribers and links: (topic name, subscriber identity as a string) → encoded [`Record`].
const SUBSCRIBERS: TableDefinition<(&str, &str), &[u8]> = TableDefinition::new("subscribers");

/// The name of the database file in the data directory.
pub const FILE_NAME: &str = "floe-storm.redb";

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

/// The handle to the database and its writer thread.
pub type Store = floe_service::store::Store<StormSchema>;

/// The service's tables, as the store reads and changes them.
#[derive(Debug)]
pub struct StormSchema;

impl Schema for StormSchema {
    const FILE_NAME: &'static str = FILE_NAME;
    const WRITER: &'static str = "floe-storm-store";
    type Change = Change;
    type Contents = Contents;

    fn read(r: &ReadTransaction) -> Result<Contents, StoreError> {
        let mut contents: Contents = Vec::new();
        read_table(r, TOPICS, |name, _| {
            contents.push((name.to_string(), Vec::new()));
            Ok(())
        })?;
        read_table(r, SUBSCRIBERS, |(topic, id), value| {
            let record = Record::decode(value)?;
            if let Some((_, subs)) = contents.iter_mut().find(|(t, _)| t == topic) {
                subs.push((id.to_string(), record));
            }
            Ok(())
        })?;
        Ok(contents)
    }

    fn apply(w: &WriteTransaction, changes: &[&Change]) -> Result<(), StoreError> {
        let mut topics = w.open_table(TOPICS).map_err(|e| err("topics table", e))?;
        let mut subscribers = w.open_table(SUBSCRIBERS).map_err(|e| err("subscribers table", e))?;
        for change in changes {
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
        Ok(())
    }
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
