//! Sessions: one per client connection, with the client's callback category and its routing
//! table (the proxies it added, by identity).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::{Connection, Identity, ObjectPrx};

use crate::filters::Filters;
use crate::outbox::Outbox;
use crate::slice::glacier2::SessionPrx;

/// One client's session.
pub struct Session {
    /// The client's connection: its requests come on it, and callbacks go back over it.
    pub connection: Connection,
    /// The category of the client's callback objects.
    pub category: String,
    /// The user id the session was created for.
    pub user: String,
    /// The session manager's session, destroyed with this one.
    pub managed: Option<SessionPrx>,
    /// The categories, identities and adapter ids the client may call.
    pub filters: Arc<Filters>,
    /// The session's objects on the server adapter (its `SessionControl` and filter sets),
    /// removed when it ends.
    pub objects: Vec<Identity>,
    /// The `_con.` entries added to forwarded requests (`Glacier2.AddConnectionContext`).
    pub connection_context: floe::Context,
    /// The order the client's requests are forwarded in (`Glacier2.Client.Buffered`).
    pub client_outbox: Outbox,
    /// The order callbacks to the client are forwarded in (`Glacier2.Server.Buffered`).
    pub server_outbox: Outbox,
    routes: Mutex<RoutingTable>,
    oneways: Mutex<OnewayBatches>,
    /// Milliseconds since the router started, at the last sign of life.
    last_activity: AtomicU64,
    /// Heartbeats counted at the last sweep.
    heartbeats_seen: AtomicU64,
}

/// The client's oneway requests on their way to servers: queued in batch-oneway proxies (one
/// per target, facet and encoding) and sent together once the requests read with them are
/// queued, as Glacier2 forwards batches.
#[derive(Default)]
struct OnewayBatches {
    proxies: HashMap<String, ObjectPrx>,
    /// Keys of the proxies with requests queued.
    queued: Vec<String>,
    /// A flush is scheduled.
    flush_scheduled: bool,
}

#[derive(Default)]
struct RoutingTable {
    by_identity: HashMap<Identity, ObjectPrx>,
    /// Identities in the order they were added, for eviction.
    order: VecDeque<Identity>,
}

impl Session {
    /// The batch-oneway proxy that queues oneway requests for `target` (its facet and
    /// encoding included in `key`).
    pub fn batch_proxy(&self, key: String, make: impl FnOnce() -> ObjectPrx) -> ObjectPrx {
        self.oneways.lock().expect("oneways").proxies.entry(key).or_insert_with(make).clone()
    }

    /// Notes that the batch proxy of `key` has queued requests; true when the caller must
    /// schedule a flush.
    pub fn queued(&self, key: &str) -> bool {
        let mut o = self.oneways.lock().expect("oneways");
        if !o.queued.iter().any(|k| k == key) {
            o.queued.push(key.to_string());
        }
        !std::mem::replace(&mut o.flush_scheduled, true)
    }

    /// Sends every queued oneway request (before a twoway request, so that it arrives after
    /// them, and from the flush task).
    pub async fn flush_oneways(&self) {
        let queued: Vec<ObjectPrx> = {
            let mut o = self.oneways.lock().expect("oneways");
            o.flush_scheduled = false;
            let keys = std::mem::take(&mut o.queued);
            keys.iter().filter_map(|k| o.proxies.get(k).cloned()).collect()
        };
        for p in queued {
            if let Err(e) = p.ice_flush_batch_requests().await {
                tracing::debug!(target: "floe::router", "forwarding oneway requests to {p} failed: {e}");
            }
        }
    }

    /// The proxy the client added for `identity`.
    pub fn route(&self, identity: &Identity) -> Option<ObjectPrx> {
        self.routes.lock().expect("routes").by_identity.get(identity).cloned()
    }

    /// Adds a proxy to the routing table (replacing one with the same identity); returns the
    /// proxies evicted to keep at most `max`.
    pub fn add_route(&self, proxy: ObjectPrx, max: usize) -> Vec<ObjectPrx> {
        let mut t = self.routes.lock().expect("routes");
        let id = proxy.ice_get_identity().clone();
        if t.by_identity.insert(id.clone(), proxy).is_none() {
            t.order.push_back(id);
        }
        let mut evicted = Vec::new();
        while t.by_identity.len() > max {
            let Some(oldest) = t.order.pop_front() else { break };
            if let Some(p) = t.by_identity.remove(&oldest) {
                evicted.push(p);
            }
        }
        evicted
    }
}

/// What a new session is made of.
pub struct SessionParts {
    /// The category of the client's callback objects (empty without a server adapter).
    pub category: String,
    /// The user id (or, for ssl sessions, what identifies the client).
    pub user: String,
    /// The session manager's session.
    pub managed: Option<SessionPrx>,
    /// The session's filters.
    pub filters: Arc<Filters>,
    /// Its objects on the server adapter.
    pub objects: Vec<Identity>,
    /// The `_con.` entries added to forwarded requests.
    pub connection_context: floe::Context,
}

/// Every session of the router, by connection and by category.
#[derive(Default)]
pub struct Sessions {
    inner: Mutex<Tables>,
    started: Option<Instant>,
    /// The pauses of the sessions' outboxes after each flush: clients' requests, callbacks.
    pauses: (Duration, Duration),
}

#[derive(Default)]
struct Tables {
    by_connection: HashMap<Connection, Arc<Session>>,
    by_category: HashMap<String, Arc<Session>>,
}

impl Sessions {
    /// An empty table.
    pub fn new() -> Self {
        Sessions { inner: Mutex::default(), started: Some(Instant::now()), pauses: Default::default() }
    }

    /// An empty table whose sessions pause for `client` after each flush of their client's
    /// queued requests, and for `server` after each flush of queued callbacks
    /// (`Glacier2.Client.SleepTime`, `Glacier2.Server.SleepTime`; buffered mode only).
    pub fn with_pauses(client: Duration, server: Duration) -> Self {
        Sessions { pauses: (client, server), ..Sessions::new() }
    }

    fn now_ms(&self) -> u64 {
        self.started.map_or(0, |s| s.elapsed().as_millis() as u64)
    }

    /// The session of a client connection.
    pub fn of_connection(&self, connection: &Connection) -> Option<Arc<Session>> {
        self.inner.lock().expect("sessions").by_connection.get(connection).cloned()
    }

    /// The session whose callback category is `category`.
    pub fn of_category(&self, category: &str) -> Option<Arc<Session>> {
        self.inner.lock().expect("sessions").by_category.get(category).cloned()
    }

    /// Records a new session; `None` if the connection already has one.
    pub fn create(&self, connection: &Connection, parts: SessionParts) -> Option<Arc<Session>> {
        let SessionParts { category, user, managed, filters, objects, connection_context } = parts;
        let session = Arc::new(Session {
            connection: connection.clone(),
            category: category.clone(),
            user,
            managed,
            filters,
            objects,
            connection_context,
            client_outbox: Outbox::with_pause(self.pauses.0),
            server_outbox: Outbox::with_pause(self.pauses.1),
            routes: Mutex::default(),
            oneways: Mutex::default(),
            last_activity: AtomicU64::new(self.now_ms()),
            heartbeats_seen: AtomicU64::new(connection.heartbeats_received()),
        });
        let mut t = self.inner.lock().expect("sessions");
        if t.by_connection.contains_key(connection) {
            return None;
        }
        t.by_connection.insert(connection.clone(), session.clone());
        if !category.is_empty() {
            t.by_category.insert(category, session.clone());
        }
        Some(session)
    }

    /// Removes the session of a connection; returns it.
    pub fn remove(&self, connection: &Connection) -> Option<Arc<Session>> {
        let mut t = self.inner.lock().expect("sessions");
        let s = t.by_connection.remove(connection)?;
        if t.by_category.get(&s.category).is_some_and(|c| Arc::ptr_eq(c, &s)) {
            t.by_category.remove(&s.category);
        }
        Some(s)
    }

    /// Notes a sign of life of a session.
    pub fn touch(&self, session: &Session) {
        session.last_activity.store(self.now_ms(), Ordering::Relaxed);
    }

    /// The sessions silent for longer than `timeout_ms` (heartbeats count as life).
    pub fn expired(&self, timeout_ms: u64) -> Vec<Arc<Session>> {
        let now = self.now_ms();
        let all: Vec<Arc<Session>> = self.inner.lock().expect("sessions").by_connection.values().cloned().collect();
        all.into_iter()
            .filter(|s| {
                let beats = s.connection.heartbeats_received();
                if beats != s.heartbeats_seen.swap(beats, Ordering::Relaxed) {
                    s.last_activity.store(now, Ordering::Relaxed);
                    return false;
                }
                now.saturating_sub(s.last_activity.load(Ordering::Relaxed)) > timeout_ms
            })
            .collect()
    }

    /// Number of sessions.
    pub fn len(&self) -> usize {
        self.inner.lock().expect("sessions").by_connection.len()
    }

    /// True without sessions.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
