//! The sessions' records: registering a session (admin or client) with its objects on the
//! client adapter, removing it with them, and finding those whose client has gone.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use floe::{Current, Identity};

use crate::database::identity_string;
use crate::shared::{SessionRecord, Shared};

/// A fresh identity for a session's object.
pub(crate) fn new_identity(shared: &Shared) -> Identity {
    Identity::with_category(&shared.config.instance_name, uuid::Uuid::new_v4().to_string().to_uppercase())
}

/// Records a session whose objects are `identities` (the session object first).
pub(crate) fn register(shared: &Arc<Shared>, identities: Vec<Identity>, current: &Current) -> Arc<SessionRecord> {
    let record = Arc::new(SessionRecord {
        identities,
        objects: Mutex::new(Vec::new()),
        connection: current.connection().cloned(),
        last: Mutex::new(Instant::now()),
    });
    let key = identity_string(&record.identities[0]);
    let mut sessions = shared.sessions.lock().unwrap_or_else(|e| e.into_inner());
    sessions.insert(key, record.clone());
    record
}

/// Removes a session and its objects (a client session's allocations are released by its
/// caller: [`crate::client_session::release_all`]).
pub(crate) fn destroy(shared: &Shared, record: &SessionRecord) {
    let key = identity_string(&record.identities[0]);
    shared.sessions.lock().unwrap_or_else(|e| e.into_inner()).remove(&key);
    crate::observers::unregister(shared, &key);
    let opened = std::mem::take(&mut *record.objects.lock().unwrap_or_else(|e| e.into_inner()));
    for id in record.identities.iter().chain(&opened) {
        shared.client.remove(id);
    }
}

/// Destroys the sessions whose client has gone: idle for longer than the session timeout
/// and without an open connection. Returns their keys (for their allocations to be
/// released).
pub(crate) fn reap(shared: &Shared) -> Vec<String> {
    let timeout = Duration::from_secs(shared.config.session_timeout.max(1) as u64);
    let expired: Vec<Arc<SessionRecord>> = shared
        .sessions
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .filter(|r| {
            let idle = r.last.lock().unwrap_or_else(|e| e.into_inner()).elapsed() > timeout;
            idle && r.connection.as_ref().is_none_or(|c| c.is_closed())
        })
        .cloned()
        .collect();
    expired
        .into_iter()
        .map(|r| {
            destroy(shared, &r);
            identity_string(&r.identities[0])
        })
        .collect()
}
