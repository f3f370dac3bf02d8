//! The etcd kit of services that keep their state in an etcd cluster: the connection (with
//! the services' keep-alive options), reads of a prefix, a watch that resumes from the last
//! revision it saw and re-reads everything after a compaction, lease keep-alives, and
//! retries with back-off for transactions. Generic over the service's key space: the service
//! parses keys and values, this module only moves them.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use etcd_client;
use etcd_client::{Client, ConnectOptions, EventType, GetOptions, KeyValue, WatchOptions};
use floe::{Error, Properties};
use tokio::sync::Notify;

use crate::props::{comma_list, non_empty, property_error};

const LOG: &str = "floe_service::etcd";

/// Where and how a service keeps its state in etcd (`<Base>.Etcd.*` properties).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EtcdConfig {
    /// `<Base>.Etcd.Endpoints`: the cluster's members (comma-separated `http://host:port`
    /// URLs); empty when unset.
    pub endpoints: Vec<String>,
    /// `<Base>.Etcd.Prefix`: where in etcd's key space the state is; always ends with `/`.
    pub prefix: String,
    /// `<Base>.Etcd.LeaseTTL` (s, at least 2).
    pub lease_ttl: i64,
    /// `<Base>.Etcd.Timeout` (s, default 10): how long a change may take to reach etcd,
    /// retries included, and how long the service waits for etcd when it starts.
    pub timeout: Duration,
}

impl EtcdConfig {
    /// Reads `<base>.Etcd.*` with `default_prefix` and `default_ttl` (s) for the unset ones.
    pub fn from_properties(
        props: &Properties,
        base: &str,
        default_prefix: String,
        default_ttl: i64,
    ) -> Result<EtcdConfig, Error> {
        let mut prefix = non_empty(props, &format!("{base}.Etcd.Prefix")).unwrap_or(default_prefix);
        if !prefix.ends_with('/') {
            prefix.push('/');
        }
        Ok(EtcdConfig {
            endpoints: comma_list(props, &format!("{base}.Etcd.Endpoints")),
            prefix,
            lease_ttl: props.get_int(&format!("{base}.Etcd.LeaseTTL"), default_ttl)?.clamp(2, 86_400),
            timeout: Duration::from_secs(props.get_int(&format!("{base}.Etcd.Timeout"), 10)?.clamp(1, 3600) as u64),
        })
    }
}

/// Connects to the members `endpoints`. HTTP/2 pings find a member that stopped answering;
/// etcd closes connections that ping more often than every 5 s
/// (`--grpc-keepalive-min-time`), or at all while idle.
pub async fn connect(endpoints: &[String], property: &str) -> Result<Client, Error> {
    let options = ConnectOptions::new()
        .with_connect_timeout(Duration::from_secs(2))
        .with_timeout(Duration::from_secs(5))
        .with_keep_alive(Duration::from_secs(10), Duration::from_secs(5))
        .with_keep_alive_while_idle(false);
    Client::connect(endpoints, Some(options)).await.map_err(|e| property_error(property, e.to_string()))
}

/// Everything under `prefix`, and the revision it is at.
pub async fn read_prefix(client: &Client, prefix: &str) -> Result<(Vec<KeyValue>, i64), etcd_client::Error> {
    let mut client = client.clone();
    let mut resp = client.get(prefix, Some(GetOptions::new().with_prefix())).await?;
    let revision = resp.header().map(|h| h.revision()).unwrap_or(0);
    Ok((resp.take_kvs(), revision))
}

/// Runs `attempt` until it succeeds, every 250 ms, logging each failure; after `deadline`,
/// fails with `cannot {what}: {error}`. For what a service needs from etcd to start.
pub async fn retry_at_start<T, E, F, Fut>(deadline: Instant, what: &str, mut attempt: F) -> Result<T, String>
where
    E: std::fmt::Display,
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    loop {
        match attempt().await {
            Ok(t) => return Ok(t),
            Err(e) if Instant::now() > deadline => return Err(format!("cannot {what}: {e}")),
            Err(e) => {
                tracing::warn!(target: LOG, "cannot {what}, retrying: {e}");
                tokio::time::sleep(Duration::from_millis(250)).await;
            }
        }
    }
}

/// Runs `attempt` until it succeeds, pausing 20 ms after the first failure and twice as
/// long after each next one (at most 500 ms); returns the last error once the next pause
/// would end after `deadline`. For writes, which any member may take.
pub async fn retry_until<T, F, Fut>(deadline: Instant, mut attempt: F) -> Result<T, String>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, String>>,
{
    let mut pause = Duration::from_millis(20);
    loop {
        match attempt().await {
            Ok(t) => return Ok(t),
            Err(e) if Instant::now() + pause > deadline => return Err(e),
            Err(e) => {
                tracing::debug!(target: LOG, "etcd write failed, retrying: {e}");
                tokio::time::sleep(pause).await;
                pause = (pause * 2).min(Duration::from_millis(500));
            }
        }
    }
}

/// One key's change, as a watch reports it.
#[derive(Debug, Clone, Copy)]
pub struct KeyChange<'a> {
    /// The key.
    pub key: &'a [u8],
    /// Its new value; `None` when it was deleted.
    pub value: Option<&'a [u8]>,
    /// The revision of the change.
    pub revision: i64,
}

/// What a [`watch`] tells the service.
pub trait Watcher: Send + Sync + 'static {
    /// Changes under the prefix, in revision order (one watch response's worth).
    fn changed(&self, changes: &[KeyChange<'_>]);

    /// The history the watch needed was compacted away: read everything again, replace
    /// the state with it, and return the revision it is at (the watch resumes after it).
    fn reread(&self) -> impl Future<Output = Result<i64, etcd_client::Error>> + Send;
}

/// Watches `prefix` from revision `next` on for ever, telling `watcher`; a broken watch is
/// started again from the revision after the last change it brought, and after a
/// compaction from the revision after the re-read.
pub async fn watch<W: Watcher>(client: Client, prefix: String, mut next: i64, watcher: Arc<W>) {
    let mut client = client;
    loop {
        let options = WatchOptions::new().with_prefix().with_start_revision(next);
        match client.watch(prefix.as_str(), Some(options)).await {
            Ok((_watcher, mut stream)) => loop {
                let resp = match stream.message().await {
                    Ok(Some(r)) => r,
                    Ok(None) => break,
                    Err(e) => {
                        tracing::debug!(target: LOG, "watch: {e}");
                        break;
                    }
                };
                if resp.compact_revision() > 0 {
                    // The history from `next` is gone: read everything again.
                    tracing::info!(target: LOG, "watch of {prefix} compacted at {}: reading again", resp.compact_revision());
                    match watcher.reread().await {
                        Ok(revision) => next = revision + 1,
                        Err(e) => tracing::debug!(target: LOG, "read: {e}"),
                    }
                    break;
                }
                if resp.canceled() {
                    break;
                }
                let changes: Vec<KeyChange<'_>> = resp
                    .events()
                    .iter()
                    .filter_map(|ev| {
                        let kv = ev.kv()?;
                        let value = match ev.event_type() {
                            EventType::Put => Some(kv.value()),
                            EventType::Delete => None,
                        };
                        Some(KeyChange { key: kv.key(), value, revision: kv.mod_revision() })
                    })
                    .collect();
                if let Some(last) = changes.iter().map(|c| c.revision).max() {
                    next = next.max(last + 1);
                }
                tracing::trace!(target: LOG, "watch: {} changes, next {next}", changes.len());
                watcher.changed(&changes);
            },
            Err(e) => tracing::debug!(target: LOG, "watch: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Why [`keep_lease`] returned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseEnd {
    /// etcd says the lease expired: it must be granted again.
    Expired,
    /// The keep-alive stream broke or etcd did not answer: try again with the same lease.
    Broken,
    /// `current` said the lease is no longer the one to keep.
    Replaced,
}

/// Keeps lease `id` alive, renewing it every `period`, until it expires, the keep-alive
/// stream breaks, or (checked whenever `wake` is notified and after each renewal) `current`
/// returns false.
pub async fn keep_lease(
    client: &Client,
    id: i64,
    period: Duration,
    wake: &Notify,
    current: impl Fn() -> bool,
) -> LeaseEnd {
    let mut client = client.clone();
    let (mut keeper, mut stream) = match client.lease_keep_alive(id).await {
        Ok(k) => k,
        Err(e) => {
            tracing::debug!(target: LOG, "lease keep-alive: {e}");
            tokio::time::sleep(Duration::from_millis(100)).await;
            return LeaseEnd::Broken;
        }
    };
    loop {
        if keeper.keep_alive().await.is_err() {
            return LeaseEnd::Broken;
        }
        match tokio::time::timeout(Duration::from_secs(2), stream.message()).await {
            Ok(Ok(Some(r))) if r.ttl() > 0 => {}
            Ok(Ok(Some(_))) => return LeaseEnd::Expired,
            _ => return LeaseEnd::Broken,
        }
        tokio::select! {
            _ = tokio::time::sleep(period) => {}
            _ = wake.notified() => {}
        }
        if !current() {
            return LeaseEnd::Replaced;
        }
    }
}

/// The renewal period of a lease of `ttl` seconds: a third of it (at least 200 ms).
pub fn renewal_period(ttl: i64) -> Duration {
    Duration::from_millis((ttl.max(0) as u64 * 1000 / 3).max(200))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_etcd_properties_are_read_with_their_defaults() {
        let p = Properties::new();
        let c = EtcdConfig::from_properties(&p, "Floe.X", "/floe-x/X/".into(), 10).unwrap();
        assert_eq!(
            c,
            EtcdConfig {
                endpoints: vec![],
                prefix: "/floe-x/X/".into(),
                lease_ttl: 10,
                timeout: Duration::from_secs(10)
            }
        );
        p.set("Floe.X.Etcd.Endpoints", " http://a:2379, http://b:2379 ,");
        p.set("Floe.X.Etcd.Prefix", "/x");
        p.set("Floe.X.Etcd.LeaseTTL", "1");
        p.set("Floe.X.Etcd.Timeout", "3");
        let c = EtcdConfig::from_properties(&p, "Floe.X", "/floe-x/X/".into(), 10).unwrap();
        assert_eq!(c.endpoints, ["http://a:2379", "http://b:2379"]);
        assert_eq!((c.prefix.as_str(), c.lease_ttl, c.timeout), ("/x/", 2, Duration::from_secs(3)));
        p.set("Floe.X.Etcd.LeaseTTL", "soon");
        assert!(EtcdConfig::from_properties(&p, "Floe.X", String::new(), 10).is_err());
        assert_eq!(renewal_period(30), Duration::from_secs(10));
        assert_eq!(renewal_period(0), Duration::from_millis(200));
    }
}
