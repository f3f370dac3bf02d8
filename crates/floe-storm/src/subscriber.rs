//! Subscribers: each has a bounded queue of events and a task of its own that delivers them,
//! so that a slow or dead subscriber never holds back the others.
//!
//! Failures follow IceStorm: a subscriber whose delivery fails with retries left (QoS
//! `retryCount`, 0 by default, -1 for ever) is offline for `IceStorm.Discard.Interval`, its
//! queued events and those published meanwhile discarded; out of retries, or on
//! `ObjectNotExistException`, it is removed. A delivery (a write, or a twoway call with its
//! reply) that takes longer than `IceStorm.Send.Timeout` is a failure; so is a full queue
//! under the `RemoveSubscriber` policy.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use floe::bytes::{BufMut, Bytes, BytesMut};
use floe::connection::Compress;
use floe::encoding::{EncodingVersion, InvocationMode};
use floe::protocol::{OperationMode, ReplyBody, RequestPrefix};
use floe::reference::identity_to_string;
use floe::{Context, Error, Identity, ObjectPrx, Proxy};
use tokio::sync::Notify;
use tracing::{debug, info, warn};

use crate::config::{QueueFullPolicy, StormConfig};
use crate::slice::ice;
use crate::slice::ice_storm::{EventData, TopicLinkPrx};
use crate::store::Record;

/// One published event, shared by the queues of every subscriber it goes to.
#[derive(Debug)]
pub struct Event {
    /// The operation.
    pub op: String,
    /// Its mode.
    pub mode: OperationMode,
    /// The encoding of its parameters.
    pub encoding: EncodingVersion,
    /// The parameters (the encapsulation's body).
    pub params: Bytes,
    /// The request's context.
    pub ctx: Context,
}

impl Event {
    /// What the event counts for in a queue's byte bound.
    fn size(&self) -> usize {
        self.params.len() + self.op.len() + 64
    }

    /// The event as a linked topic receives it: its parameters as a whole encapsulation.
    pub fn to_event_data(&self) -> EventData {
        let mut data = BytesMut::with_capacity(self.params.len() + 6);
        data.put_i32_le((self.params.len() + 6) as i32);
        data.put_u8(self.encoding.major);
        data.put_u8(self.encoding.minor);
        data.put_slice(&self.params);
        EventData {
            op: self.op.as_str().into(),
            mode: match self.mode {
                OperationMode::Normal => ice::OperationMode::Normal,
                OperationMode::Nonmutating => ice::OperationMode::Nonmutating,
                OperationMode::Idempotent => ice::OperationMode::Idempotent,
            },
            data: data.freeze(),
            context: self.ctx.clone(),
        }
    }

    /// An event a linked topic forwarded; `None` when its encapsulation is malformed.
    pub fn from_event_data(e: EventData) -> Option<Event> {
        let d = &e.data;
        if d.len() < 6 {
            return None;
        }
        let size = i32::from_le_bytes([d[0], d[1], d[2], d[3]]);
        if size < 6 || size as usize != d.len() {
            return None;
        }
        Some(Event {
            op: e.op.to_string(),
            mode: match e.mode {
                ice::OperationMode::Normal => OperationMode::Normal,
                ice::OperationMode::Nonmutating => OperationMode::Nonmutating,
                ice::OperationMode::Idempotent => OperationMode::Idempotent,
            },
            encoding: EncodingVersion { major: d[4], minor: d[5] },
            params: d.slice(6..),
            ctx: e.context,
        })
    }
}

/// How a subscriber gets its events.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Oneway or datagram requests.
    Oneway,
    /// Batched oneway or datagram requests, flushed when the queue is empty.
    Batch,
    /// Twoway requests: `ordered` sends one at a time, otherwise up to
    /// [`TWOWAY_WINDOW`] go out in one write and their replies are awaited together.
    Twoway {
        /// QoS `reliability=ordered`.
        ordered: bool,
    },
    /// A linked topic: `TopicLink::forward` with the events whose `cost` context is at most
    /// the link's cost (all of them for cost 0).
    Link {
        /// The link's cost.
        cost: i32,
    },
}

/// Twoway requests sent to a subscriber in one write (and then waited for together).
pub const TWOWAY_WINDOW: usize = 64;
/// Events taken from a queue at once for oneway and batched delivery.
const TAKE_MAX: usize = 256;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    Online,
    /// Events are discarded until then.
    Offline(Instant),
    /// Failed for good: to be removed.
    Error,
}

struct Queue {
    events: VecDeque<Arc<Event>>,
    bytes: usize,
    state: State,
    current_retry: i32,
    closed: bool,
}

/// A subscriber (or link) of a topic.
pub struct Subscriber {
    /// Its identity (the subscriber proxy's, or the linked topic's).
    pub id: Identity,
    /// What is stored of it.
    pub record: Record,
    /// The proxy events are delivered to.
    proxy: ObjectPrx,
    /// For a link: the linked topic.
    pub linked_topic: Option<ObjectPrx>,
    delivery: Delivery,
    retry_count: i32,
    config: Arc<StormConfig>,
    queue: Mutex<Queue>,
    wake: Notify,
}

impl std::fmt::Debug for Subscriber {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Subscriber").field("id", &identity_to_string(&self.id)).finish_non_exhaustive()
    }
}

/// What a subscriber's delivery task calls once the subscriber failed for good: given by
/// its topic, which removes it.
pub type OnFailed = Box<dyn FnOnce(Arc<Subscriber>) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send>;

/// Why a subscription was refused: the reason of a `BadQoS`.
#[derive(Debug, PartialEq, Eq)]
pub struct BadQoS(pub String);

/// Reads a QoS: (delivery, retry count).
pub fn parse_qos(qos: &[(String, String)], proxy: &ObjectPrx) -> Result<(Delivery, i32), BadQoS> {
    let mut retry_count = 0;
    let mut ordered = false;
    for (k, v) in qos {
        match k.as_str() {
            "reliability" => match v.as_str() {
                "" => {}
                "ordered" => ordered = true,
                other => return Err(BadQoS(format!("invalid reliability: {other}"))),
            },
            "retryCount" => {
                retry_count = v
                    .trim()
                    .parse::<i32>()
                    .map_err(|_| BadQoS(format!("invalid retry count (numeric value required): {v}")))?;
            }
            "locatorCacheTimeout" | "connectionCached" => {
                v.trim().parse::<i32>().map_err(|_| BadQoS(format!("invalid {k} (numeric value required): {v}")))?;
            }
            _ => {}
        }
    }
    let delivery = match proxy.mode() {
        InvocationMode::Twoway => Delivery::Twoway { ordered },
        _ if ordered => return Err(BadQoS("ordered reliability requires a twoway proxy".into())),
        InvocationMode::Oneway | InvocationMode::Datagram => Delivery::Oneway,
        InvocationMode::BatchOneway | InvocationMode::BatchDatagram => Delivery::Batch,
    };
    Ok((delivery, retry_count))
}

/// The outcome of one delivery attempt.
enum Failure {
    /// `ObjectNotExistException`, or a full queue: removed at once.
    Hard(String),
    /// Anything else: retried while the retry count allows.
    Soft(String),
}

impl Subscriber {
    /// A subscriber (not yet delivering: see [`start`](Self::start)).
    pub fn new(
        id: Identity,
        record: Record,
        proxy: ObjectPrx,
        linked_topic: Option<ObjectPrx>,
        delivery: Delivery,
        retry_count: i32,
        config: Arc<StormConfig>,
    ) -> Arc<Subscriber> {
        Arc::new(Subscriber {
            id,
            record,
            proxy,
            linked_topic,
            delivery,
            retry_count,
            config,
            queue: Mutex::new(Queue {
                events: VecDeque::new(),
                bytes: 0,
                state: State::Online,
                current_retry: 0,
                closed: false,
            }),
            wake: Notify::new(),
        })
    }

    /// True for a link to another topic.
    pub fn is_link(&self) -> bool {
        matches!(self.delivery, Delivery::Link { .. })
    }

    /// True once the subscriber failed for good.
    pub fn errored(&self) -> bool {
        self.queue.lock().expect("subscriber queue").state == State::Error
    }

    /// Starts the task that delivers the queued events; it calls `failed` (which takes the
    /// subscriber out of its topic) when the subscriber fails for good.
    pub fn start(self: &Arc<Self>, failed: OnFailed) {
        let me = self.clone();
        tokio::spawn(async move { me.run(failed).await });
    }

    /// Stops the delivery task (events still queued are dropped).
    pub fn close(&self) {
        let mut q = self.queue.lock().expect("subscriber queue");
        q.closed = true;
        q.events.clear();
        q.bytes = 0;
        drop(q);
        self.wake.notify_one();
    }

    /// Queues events; returns false when the subscriber failed for good. Events forwarded by
    /// a linked topic are not passed on to links (one hop, as IceStorm).
    pub fn queue(&self, events: &[Arc<Event>], forwarded: bool) -> bool {
        if forwarded && self.is_link() {
            return true;
        }
        let mut q = self.queue.lock().expect("subscriber queue");
        match q.state {
            State::Error => return false,
            State::Offline(until) => {
                if Instant::now() < until {
                    return true;
                }
                q.state = State::Online;
            }
            State::Online => {}
        }
        if q.closed {
            return true;
        }
        for e in events {
            let size = e.size();
            while q.events.len() >= self.config.queue_size_max
                || (!q.events.is_empty() && q.bytes + size > self.config.queue_bytes_max)
            {
                match self.config.queue_full_policy {
                    QueueFullPolicy::RemoveSubscriber => {
                        q.state = State::Error;
                        q.events.clear();
                        q.bytes = 0;
                        drop(q);
                        warn!(target: "floe::storm", "subscriber {}: queue full, removed", identity_to_string(&self.id));
                        self.wake.notify_one();
                        return false;
                    }
                    QueueFullPolicy::DropEvents => {
                        if let Some(old) = q.events.pop_front() {
                            q.bytes -= old.size();
                        }
                    }
                }
            }
            q.bytes += size;
            q.events.push_back(e.clone());
        }
        drop(q);
        self.wake.notify_one();
        true
    }

    /// Events queued now.
    pub fn queued(&self) -> usize {
        self.queue.lock().expect("subscriber queue").events.len()
    }

    async fn run(self: Arc<Self>, failed: OnFailed) {
        loop {
            let batch = loop {
                {
                    let mut q = self.queue.lock().expect("subscriber queue");
                    if q.closed {
                        return;
                    }
                    if q.state == State::Error {
                        break None;
                    }
                    if !q.events.is_empty() {
                        let n = match self.delivery {
                            Delivery::Twoway { ordered: true } => 1,
                            Delivery::Twoway { ordered: false } => TWOWAY_WINDOW,
                            _ => TAKE_MAX,
                        };
                        let n = n.min(q.events.len());
                        let batch: Vec<Arc<Event>> = q.events.drain(..n).collect();
                        q.bytes -= batch.iter().map(|e| e.size()).sum::<usize>();
                        break Some(batch);
                    }
                }
                self.wake.notified().await;
            };
            let Some(batch) = batch else {
                // Failed for good: leave the topic.
                failed(self.clone()).await;
                return;
            };
            debug!(target: "floe::storm", "subscriber {}: delivering {} events", identity_to_string(&self.id), batch.len());
            let result = match tokio::time::timeout(self.config.send_timeout, self.send(&batch)).await {
                Ok(r) => r,
                Err(_) => Err(Failure::Soft(format!("no delivery within {:?}", self.config.send_timeout))),
            };
            match result {
                Ok(()) => {
                    let mut q = self.queue.lock().expect("subscriber queue");
                    if q.state == State::Online {
                        q.current_retry = 0;
                    }
                }
                Err(f) => self.failed(f),
            }
        }
    }

    fn failed(&self, failure: Failure) {
        let mut q = self.queue.lock().expect("subscriber queue");
        if q.state == State::Error || q.closed {
            return;
        }
        let (hard, reason) = match failure {
            Failure::Hard(r) => (true, r),
            Failure::Soft(r) => (false, r),
        };
        q.events.clear();
        q.bytes = 0;
        let id = identity_to_string(&self.id);
        if !hard && (self.retry_count == -1 || q.current_retry < self.retry_count) {
            q.current_retry += 1;
            q.state = State::Offline(Instant::now() + self.config.discard_interval);
            warn!(target: "floe::storm", "subscriber {id} offline: {reason}; discarding events for {:?} (retry {}/{})",
                self.config.discard_interval, q.current_retry, self.retry_count);
        } else {
            q.state = State::Error;
            if self.config.trace_subscriber > 0 {
                info!(target: "floe::storm", "subscriber {id} removed: {reason}");
            }
            drop(q);
            self.wake.notify_one();
        }
    }

    /// A proxy for events of `encoding`.
    fn proxy_for(&self, encoding: EncodingVersion) -> ObjectPrx {
        if self.proxy.ice_get_encoding_version() == encoding {
            self.proxy.clone()
        } else {
            self.proxy.ice_encoding_version(encoding)
        }
    }

    async fn send(&self, batch: &[Arc<Event>]) -> Result<(), Failure> {
        match self.delivery {
            Delivery::Oneway => {
                for e in batch {
                    self.proxy_for(e.encoding)
                        .invoke(&e.op, e.mode, Some(&e.ctx), |enc| enc.write_raw(&e.params))
                        .await
                        .map_err(classify)?;
                }
                Ok(())
            }
            Delivery::Batch => {
                let mut current: Option<ObjectPrx> = None;
                for e in batch {
                    let p = self.proxy_for(e.encoding);
                    if let Some(c) = &current {
                        if *c != p {
                            c.ice_flush_batch_requests().await.map_err(classify)?;
                        }
                    }
                    p.invoke(&e.op, e.mode, Some(&e.ctx), |enc| enc.write_raw(&e.params)).await.map_err(classify)?;
                    current = Some(p);
                }
                // Flushed as soon as the queue is empty, so well within IceStorm.Flush.Timeout.
                if let Some(c) = current {
                    c.ice_flush_batch_requests().await.map_err(classify)?;
                }
                Ok(())
            }
            Delivery::Twoway { .. } => {
                let conn = self.proxy.ice_get_connection().await.map_err(classify)?;
                let facet = self.proxy.ice_get_facet().to_string();
                let msgs: Vec<BytesMut> = batch
                    .iter()
                    .map(|e| {
                        let prefix = RequestPrefix::new(&self.id, &facet, &e.op, e.mode);
                        floe::protocol::request::encode_request(1, &prefix, &e.ctx, e.encoding, |enc| {
                            enc.write_raw(&e.params)
                        })
                    })
                    .collect();
                let replies = conn.invoke_pipelined(msgs, Compress::No).await.map_err(classify)?;
                for r in replies {
                    match r {
                        Ok(reply) => match reply.body {
                            ReplyBody::Ok { .. } | ReplyBody::UserException { .. } => {}
                            ReplyBody::ObjectNotExist(_) => {
                                return Err(Failure::Hard("ObjectNotExistException".into()));
                            }
                            other => return Err(Failure::Soft(format!("{other:?}"))),
                        },
                        Err(e) => return Err(classify(e)),
                    }
                }
                Ok(())
            }
            Delivery::Link { cost } => {
                let events: Vec<EventData> =
                    batch.iter().filter(|e| cost == 0 || event_cost(e) <= cost).map(|e| e.to_event_data()).collect();
                if events.is_empty() {
                    return Ok(());
                }
                TopicLinkPrx::from_object(self.proxy.clone()).forward(&events).await.map_err(classify)
            }
        }
    }
}

/// The `cost` in an event's context (0 without one, as IceStorm).
fn event_cost(e: &Event) -> i32 {
    e.ctx.get("cost").and_then(|c| c.trim().parse().ok()).unwrap_or(0)
}

fn classify(e: Error) -> Failure {
    match e {
        Error::ObjectNotExist { .. } => Failure::Hard(e.to_string()),
        e => {
            debug!(target: "floe::storm", "delivery failed: {e}");
            Failure::Soft(e.to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn proxy(c: &floe::Communicator, s: &str) -> ObjectPrx {
        c.string_to_proxy(s).unwrap()
    }

    fn q(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_qos_and_the_proxy_mode_decide_the_delivery() {
        let c = floe::Communicator::new().unwrap();
        let twoway = proxy(&c, "s:tcp -h 127.0.0.1 -p 1");
        assert_eq!(parse_qos(&q(&[]), &twoway).unwrap(), (Delivery::Twoway { ordered: false }, 0));
        assert_eq!(
            parse_qos(&q(&[("reliability", "ordered"), ("retryCount", "-1")]), &twoway).unwrap(),
            (Delivery::Twoway { ordered: true }, -1)
        );
        assert_eq!(parse_qos(&q(&[("retryCount", " 3 ")]), &twoway.ice_oneway()).unwrap(), (Delivery::Oneway, 3));
        assert_eq!(parse_qos(&q(&[]), &twoway.ice_datagram()).unwrap().0, Delivery::Oneway);
        assert_eq!(parse_qos(&q(&[]), &twoway.ice_batch_oneway()).unwrap().0, Delivery::Batch);
        assert_eq!(parse_qos(&q(&[]), &twoway.ice_batch_datagram()).unwrap().0, Delivery::Batch);
        // Unknown keys are ignored, as IceStorm does.
        assert!(parse_qos(&q(&[("priority", "high")]), &twoway).is_ok());
        for bad in [
            q(&[("reliability", "best")]),
            q(&[("retryCount", "often")]),
            q(&[("locatorCacheTimeout", "x")]),
            q(&[("connectionCached", "")]),
        ] {
            assert!(parse_qos(&bad, &twoway).is_err(), "{bad:?}");
        }
        let e = parse_qos(&q(&[("reliability", "ordered")]), &twoway.ice_oneway()).unwrap_err();
        assert!(e.0.contains("twoway"), "{}", e.0);
        c.destroy_blocking();
    }

    #[test]
    fn events_cross_links_as_whole_encapsulations() {
        let mut ctx = Context::new();
        ctx.insert("cost".into(), "4".into());
        let e = Event {
            op: "tick".into(),
            mode: OperationMode::Idempotent,
            encoding: EncodingVersion { major: 1, minor: 0 },
            params: Bytes::from_static(&[1, 2, 3]),
            ctx,
        };
        let data = e.to_event_data();
        assert_eq!(&data.data[..], &[9, 0, 0, 0, 1, 0, 1, 2, 3]);
        let back = Event::from_event_data(data.clone()).unwrap();
        assert_eq!(
            (back.op.as_str(), back.mode, back.encoding, &back.params[..]),
            ("tick", e.mode, e.encoding, &[1u8, 2, 3][..])
        );
        assert_eq!(event_cost(&back), 4);
        // Sizes that lie are refused.
        for bad in [&[9u8, 0, 0, 0, 1, 1][..], &[5, 0, 0, 0, 1, 1], &[1, 2]] {
            let mut d = data.clone();
            d.data = Bytes::copy_from_slice(bad);
            assert!(Event::from_event_data(d).is_none(), "{bad:?}");
        }
    }

    fn config(policy: QueueFullPolicy) -> Arc<StormConfig> {
        let props = floe::Properties::new();
        props.set("IceStorm.TopicManager.Endpoints", "tcp");
        props.set("IceStorm.Publish.Endpoints", "tcp");
        props.set("IceStorm.Send.QueueSizeMax", "3");
        let mut c = StormConfig::from_properties(&props).unwrap();
        c.queue_full_policy = policy;
        Arc::new(c)
    }

    fn event(n: u8) -> Arc<Event> {
        Arc::new(Event {
            op: "tick".into(),
            mode: OperationMode::Normal,
            encoding: EncodingVersion { major: 1, minor: 1 },
            params: Bytes::copy_from_slice(&[n]),
            ctx: Context::new(),
        })
    }

    #[test]
    fn a_full_queue_removes_the_subscriber_or_drops_the_oldest_events() {
        let c = floe::Communicator::new().unwrap();
        let p = proxy(&c, "s:tcp -h 127.0.0.1 -p 1");
        let record = Record { proxy: p.to_string(), qos: vec![], link: None };
        let events: Vec<Arc<Event>> = (0..5).map(event).collect();

        let s = Subscriber::new(
            p.ice_get_identity().clone(),
            record.clone(),
            p.clone(),
            None,
            Delivery::Twoway { ordered: false },
            0,
            config(QueueFullPolicy::RemoveSubscriber),
        );
        assert!(s.queue(&events[..3], false));
        assert!(!s.errored());
        assert!(!s.queue(&events[3..4], false), "a fourth event fits a queue of three");
        assert!(s.errored() && s.queued() == 0);

        let s = Subscriber::new(
            p.ice_get_identity().clone(),
            record,
            p.clone(),
            None,
            Delivery::Twoway { ordered: false },
            0,
            config(QueueFullPolicy::DropEvents),
        );
        assert!(s.queue(&events, false));
        let kept: Vec<u8> = s.queue.lock().unwrap().events.iter().map(|e| e.params[0]).collect();
        assert_eq!(kept, vec![2, 3, 4]);
        c.destroy_blocking();
    }

    #[test]
    fn links_do_not_pass_on_forwarded_events() {
        let c = floe::Communicator::new().unwrap();
        let p = proxy(&c, "IceStorm/b.link:tcp -h 127.0.0.1 -p 1");
        let record = Record { proxy: p.to_string(), qos: vec![], link: Some((0, "IceStorm/topic.b".into())) };
        let s = Subscriber::new(
            p.ice_get_identity().clone(),
            record,
            p,
            None,
            Delivery::Link { cost: 0 },
            -1,
            config(QueueFullPolicy::RemoveSubscriber),
        );
        assert!(s.queue(&[event(1)], true));
        assert_eq!(s.queued(), 0);
        assert!(s.queue(&[event(1)], false));
        assert_eq!(s.queued(), 1);
        c.destroy_blocking();
    }
}
