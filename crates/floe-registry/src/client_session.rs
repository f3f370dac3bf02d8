//! Client sessions (`IceGrid::Session`, from `Registry::createSession`): allocation of the
//! allocatable objects that applications declare (`<allocatable>`), by identity or by type,
//! waiting up to the session's allocation timeout while another session holds them, and
//! servers with the `session` activation mode, which their node runs only while a session
//! holds them (loaded again with the session's id on allocation, and without it on release,
//! which stops them). Destroying a session releases what it holds.

use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use floe::{Current, Error, Identity, ObjectPrx};

use crate::allocation::{Attempt, Holder, Release};
use crate::database::identity_string;
use crate::deploy::{DeployedAllocatable, Deployment};
use crate::sessions;
use crate::shared::{SessionRecord, Shared};
use crate::slice::glacier2::Session as Glacier2Session;
use crate::slice::ice_grid::{AllocationException, AllocationTimeoutException, ObjectNotRegisteredException, Session};

fn allocation_error(reason: impl Into<String>) -> Error {
    Error::user(AllocationException { reason: reason.into() })
}

/// Creates a client session for `user`; returns its proxy.
pub(crate) fn create_client_session(shared: &Arc<Shared>, user: String, current: &Current) -> ObjectPrx {
    let session_id = sessions::new_identity(shared);
    let record = sessions::register(shared, vec![session_id.clone()], current);
    let session = ClientSessionI { shared: shared.clone(), record, user, timeout: AtomicI32::new(-1) };
    shared.add_client_object(crate::slice::ice_grid::SessionServer::new(session), session_id)
}

/// An `IceGrid::Session`.
pub(crate) struct ClientSessionI {
    pub(crate) shared: Arc<Shared>,
    pub(crate) record: Arc<SessionRecord>,
    pub(crate) user: String,
    /// The allocation timeout in milliseconds; negative: wait as long as it takes.
    pub(crate) timeout: AtomicI32,
}

/// Whether `server` is allocatable (it goes to a session with its objects), and whether its
/// node runs it only for a session.
fn server_allocation(d: &Deployment, server: &str) -> (bool, bool) {
    let Some(s) = d.servers.get(server) else { return (false, false) };
    let desc = s.descriptor.read();
    let session = desc.activation == "session";
    (desc.allocatable || session, session)
}

/// Loads a `session` server on its node again, for its new holder or for none. A failure is
/// logged: the allocation stands, and the next locate request reports the node's answer.
async fn reload(shared: &Shared, server: &str) {
    if let Err(e) = crate::nodes::servers::ensure(shared, server).await {
        tracing::info!(target: "floe_registry::session", server, "couldn't load the session server: {e}");
    }
}

/// After an application change: the allocations of objects that are gone (or whose server
/// changed) are dropped, the `session` servers they held are loaded again without a
/// session, and the sessions waiting for objects look again.
pub(crate) async fn deployment_changed(shared: &Shared) {
    let d = shared.deployment();
    let released = shared.allocations.prune(|key, server| {
        d.allocatables.get(key).is_some_and(|a| {
            let allocatable = server_allocation(&d, &a.server).0;
            server == allocatable.then_some(a.server.as_str())
        })
    });
    for server in released {
        if server_allocation(&d, &server).1 {
            reload(shared, &server).await;
        }
    }
}

/// Releases what session `key` holds (it is being destroyed), and has the nodes stop the
/// `session` servers it held.
pub(crate) async fn release_all(shared: &Shared, key: &str) {
    let servers = shared.allocations.release_all(key);
    let d = shared.deployment();
    for server in servers {
        if server_allocation(&d, &server).1 {
            reload(shared, &server).await;
        }
    }
}

impl ClientSessionI {
    fn holder(&self) -> Holder {
        Holder { session: identity_string(&self.record.identities[0]), user: self.user.clone() }
    }

    /// Allocates one of the objects `candidates` picks from the deployment (in its order),
    /// waiting for a release while they are all held, up to the allocation timeout.
    /// `by_id`: a single object, which the session may not allocate twice.
    async fn allocate(
        &self,
        by_id: bool,
        candidates: impl Fn(&Deployment) -> floe::Result<Vec<(String, DeployedAllocatable)>>,
    ) -> floe::Result<Option<ObjectPrx>> {
        self.record.touch();
        let holder = self.holder();
        let timeout = self.timeout.load(Ordering::SeqCst);
        let deadline = (timeout >= 0).then(|| Instant::now() + Duration::from_millis(timeout as u64));
        loop {
            let released = self.shared.allocations.released();
            tokio::pin!(released);
            released.as_mut().enable();
            let d = self.shared.deployment();
            for (key, a) in candidates(&d)? {
                let (allocatable, session) = server_allocation(&d, &a.server);
                let server = allocatable.then_some(a.server.as_str());
                let alive = || self.shared.has_session(&holder.session);
                match self.shared.allocations.try_allocate(&key, &holder, server, alive) {
                    Attempt::Allocated { server_taken } => {
                        tracing::debug!(target: "floe_registry::session", user = self.user, object = key, "allocated");
                        if server_taken && session {
                            reload(&self.shared, &a.server).await;
                        }
                        return Ok(Some(a.entry.proxy.clone()));
                    }
                    Attempt::Held if by_id => return Err(allocation_error("already allocated by the session")),
                    Attempt::Closed => return Err(allocation_error("session destroyed")),
                    Attempt::Held | Attempt::Busy => {}
                }
            }
            let wait = match deadline {
                None => None,
                Some(d) => match d.checked_duration_since(Instant::now()) {
                    Some(left) if !left.is_zero() => Some(left),
                    _ => return Err(Error::user(AllocationTimeoutException { reason: String::new() })),
                },
            };
            match wait {
                None => released.await,
                Some(left) => {
                    if tokio::time::timeout(left, released).await.is_err() {
                        return Err(Error::user(AllocationTimeoutException { reason: String::new() }));
                    }
                }
            }
            if !self.shared.has_session(&holder.session) {
                return Err(allocation_error("session destroyed"));
            }
        }
    }
}

impl Glacier2Session for ClientSessionI {
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        tracing::debug!(target: "floe_registry::session", user = self.user, "session destroyed");
        sessions::destroy(&self.shared, &self.record);
        release_all(&self.shared, &self.holder().session).await;
        Ok(())
    }
}

impl Session for ClientSessionI {
    async fn keep_alive(&self, _: &Current) -> floe::Result<()> {
        self.record.touch();
        Ok(())
    }

    async fn allocate_object_by_id(&self, id: Identity, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        let key = identity_string(&id);
        self.allocate(true, |d| match d.allocatables.get(&key) {
            Some(a) => Ok(vec![(key.clone(), a.clone())]),
            None => Err(Error::user(ObjectNotRegisteredException { id: id.clone() })),
        })
        .await
    }

    async fn allocate_object_by_type(&self, r#type: String, _: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.allocate(false, |d| {
            let mut all: Vec<(String, DeployedAllocatable)> = d
                .allocatables
                .iter()
                .filter(|(_, a)| a.entry.type_id == r#type)
                .map(|(k, a)| (k.clone(), a.clone()))
                .collect();
            if all.is_empty() {
                return Err(allocation_error(format!("no allocatable objects with type `{type}' registered")));
            }
            // Any free one, as IceGrid picks.
            fastrand::shuffle(&mut all);
            Ok(all)
        })
        .await
    }

    async fn release_object(&self, id: Identity, _: &Current) -> floe::Result<()> {
        self.record.touch();
        let key = identity_string(&id);
        let d = self.shared.deployment();
        if !d.allocatables.contains_key(&key) {
            return Err(Error::user(ObjectNotRegisteredException { id }));
        }
        match self.shared.allocations.release(&key, &self.holder().session) {
            Release::NotHeld => Err(allocation_error("can't release object which is not allocated")),
            Release::Released { server } => {
                if let Some(server) = server.filter(|s| server_allocation(&d, s).1) {
                    reload(&self.shared, &server).await;
                }
                Ok(())
            }
        }
    }

    async fn set_allocation_timeout(&self, timeout: i32, _: &Current) -> floe::Result<()> {
        self.record.touch();
        self.timeout.store(timeout, Ordering::SeqCst);
        Ok(())
    }
}
