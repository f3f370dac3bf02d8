//! The service's configuration, read from IceStorm's properties.

use std::path::PathBuf;
use std::time::Duration;

use floe::{Error, Properties};
use floe_service::props::{non_empty, property_error, required};

/// What a per-subscriber queue does when it is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueFullPolicy {
    /// The subscriber is removed (IceStorm's `RemoveSubscriber`, the default).
    RemoveSubscriber,
    /// The oldest queued event is dropped (IceStorm's `DropEvents`).
    DropEvents,
}

/// What `floe-storm` reads from its properties (IceStorm's names, under the service name
/// `IceStorm`).
#[derive(Debug, Clone)]
pub struct StormConfig {
    /// `IceStorm.InstanceName`: the category of the service's objects.
    pub instance_name: String,
    /// `IceStorm.TopicManager.Endpoints`: where the topic manager and topics listen.
    pub topic_manager_endpoints: String,
    /// `IceStorm.Publish.Endpoints`: where publishers (and linked topics) send events.
    pub publish_endpoints: String,
    /// `IceStorm.LMDB.Path`: the data directory (none: nothing is kept across restarts).
    pub data_dir: Option<PathBuf>,
    /// `IceStorm.Send.Timeout` (ms): the longest a delivery to a subscriber may take.
    pub send_timeout: Duration,
    /// `IceStorm.Discard.Interval` (s): how long a subscriber that failed (with retries
    /// left) has its events discarded before it is tried again.
    pub discard_interval: Duration,
    /// `IceStorm.Flush.Timeout` (ms): the longest batched events wait before they are sent.
    pub flush_timeout: Duration,
    /// `IceStorm.Send.QueueSizeMax`: events queued per subscriber at most.
    pub queue_size_max: usize,
    /// `Floe.Storm.QueueBytesMax`: bytes of events queued per subscriber at most.
    pub queue_bytes_max: usize,
    /// `IceStorm.Send.QueueSizeMaxPolicy`.
    pub queue_full_policy: QueueFullPolicy,
    /// `IceStorm.Trace.TopicManager`.
    pub trace_topic_manager: i32,
    /// `IceStorm.Trace.Topic`.
    pub trace_topic: i32,
    /// `IceStorm.Trace.Subscriber`.
    pub trace_subscriber: i32,
    /// `Floe.Storm.Etcd.*`: the etcd cluster whose state this replica shares with others
    /// (none: the state is in `IceStorm.LMDB.Path`, or in memory only).
    pub etcd: Option<EtcdConfig>,
}

/// Where and how replicas share their state in etcd (`Floe.Storm.Etcd.*`): the endpoints,
/// the prefix (default `/floe-storm/<InstanceName>/`), `LeaseTTL` (s, default 10: how long
/// a replica that stopped renewing its lease stays listed among the live replicas whose
/// endpoints publishers get) and `Timeout` (s, default 10).
pub use floe_service::etcd::EtcdConfig;

/// The default bound of a subscriber's queue, in events (IceStorm has none by default).
pub const DEFAULT_QUEUE_SIZE_MAX: usize = 100_000;
/// The default bound of a subscriber's queue, in bytes of event parameters.
pub const DEFAULT_QUEUE_BYTES_MAX: usize = 64 << 20;

impl StormConfig {
    /// Reads the configuration; both endpoint properties are required.
    pub fn from_properties(props: &Properties) -> Result<Self, Error> {
        let needed = "floe-storm needs the endpoints of its topic manager and of its publishers";
        let topic_manager_endpoints = required(props, "IceStorm.TopicManager.Endpoints", needed)?;
        let publish_endpoints = required(props, "IceStorm.Publish.Endpoints", needed)?;
        let queue_size_max = match props.get_int("IceStorm.Send.QueueSizeMax", -1)? {
            n if n > 0 => n as usize,
            _ => DEFAULT_QUEUE_SIZE_MAX,
        };
        let queue_bytes_max = match props.get_int("Floe.Storm.QueueBytesMax", -1)? {
            n if n > 0 => n as usize,
            _ => DEFAULT_QUEUE_BYTES_MAX,
        };
        let queue_full_policy = match non_empty(props, "IceStorm.Send.QueueSizeMaxPolicy").as_deref() {
            None | Some("RemoveSubscriber") => QueueFullPolicy::RemoveSubscriber,
            Some("DropEvents") => QueueFullPolicy::DropEvents,
            Some(other) => {
                return Err(property_error(
                    "IceStorm.Send.QueueSizeMaxPolicy",
                    format!("`{other}` is neither RemoveSubscriber nor DropEvents"),
                ))
            }
        };
        let ms = |name: &str, default: i64| -> Result<Duration, Error> {
            Ok(Duration::from_millis(props.get_int(name, default)?.max(1) as u64))
        };
        let instance_name = non_empty(props, "IceStorm.InstanceName").unwrap_or_else(|| "IceStorm".into());
        let etcd = match non_empty(props, "Floe.Storm.Etcd.Endpoints") {
            None => None,
            Some(_) => {
                let etcd =
                    EtcdConfig::from_properties(props, "Floe.Storm", format!("/floe-storm/{instance_name}/"), 10)?;
                if etcd.endpoints.is_empty() {
                    return Err(property_error(
                        "Floe.Storm.Etcd.Endpoints",
                        "no etcd endpoint (comma-separated http://host:port URLs)",
                    ));
                }
                Some(etcd)
            }
        };
        Ok(StormConfig {
            instance_name,
            topic_manager_endpoints,
            publish_endpoints,
            data_dir: non_empty(props, "IceStorm.LMDB.Path").map(PathBuf::from),
            send_timeout: ms("IceStorm.Send.Timeout", 60_000)?,
            discard_interval: Duration::from_secs(props.get_int("IceStorm.Discard.Interval", 60)?.max(0) as u64),
            flush_timeout: ms("IceStorm.Flush.Timeout", 1000)?,
            queue_size_max,
            queue_bytes_max,
            queue_full_policy,
            trace_topic_manager: props.get_int("IceStorm.Trace.TopicManager", 0)? as i32,
            trace_topic: props.get_int("IceStorm.Trace.Topic", 0)? as i32,
            trace_subscriber: props.get_int("IceStorm.Trace.Subscriber", 0)? as i32,
            etcd,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn props(pairs: &[(&str, &str)]) -> Properties {
        let p = Properties::new();
        p.set("IceStorm.TopicManager.Endpoints", "tcp");
        p.set("IceStorm.Publish.Endpoints", "tcp");
        for (k, v) in pairs {
            p.set(k, v);
        }
        p
    }

    #[test]
    fn the_etcd_properties_are_read_with_their_defaults() {
        assert!(StormConfig::from_properties(&props(&[])).unwrap().etcd.is_none());
        let c = StormConfig::from_properties(&props(&[
            ("IceStorm.InstanceName", "News"),
            ("Floe.Storm.Etcd.Endpoints", " http://a:2379, http://b:2379 ,"),
        ]))
        .unwrap();
        let etcd = c.etcd.unwrap();
        assert_eq!(etcd.endpoints, ["http://a:2379", "http://b:2379"]);
        assert_eq!(etcd.prefix, "/floe-storm/News/");
        assert_eq!((etcd.lease_ttl, etcd.timeout), (10, Duration::from_secs(10)));
        let etcd = StormConfig::from_properties(&props(&[
            ("Floe.Storm.Etcd.Endpoints", "http://a:2379"),
            ("Floe.Storm.Etcd.Prefix", "/x"),
            ("Floe.Storm.Etcd.LeaseTTL", "1"),
            ("Floe.Storm.Etcd.Timeout", "3"),
        ]))
        .unwrap()
        .etcd
        .unwrap();
        assert_eq!((etcd.prefix.as_str(), etcd.lease_ttl, etcd.timeout), ("/x/", 2, Duration::from_secs(3)));
        for bad in [("Floe.Storm.Etcd.Endpoints", ","), ("Floe.Storm.Etcd.LeaseTTL", "soon")] {
            let mut pairs = vec![("Floe.Storm.Etcd.Endpoints", "http://a:2379")];
            pairs.push(bad);
            assert!(StormConfig::from_properties(&props(&pairs)).is_err(), "{bad:?}");
        }
    }
}
