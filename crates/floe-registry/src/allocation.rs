//! Who holds what: the allocatable objects that client sessions (`IceGrid::Session`) have
//! allocated, and the allocatable servers their objects belong to. An allocatable server
//! (`allocatable="true"`, or one with the `session` activation mode) belongs to one session
//! at a time: while a session holds any of its objects, no other session can allocate any of
//! them. The table only records; the rules about descriptors, waiting and servers on nodes
//! are the sessions' (`crate::client_session`).

use std::collections::HashMap;
use std::sync::Mutex;

use tokio::sync::Notify;

/// A session that holds allocations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Holder {
    /// The session's key (its identity's string form).
    pub(crate) session: String,
    /// The session's id, its user: what `${session.id}` is for the servers it allocated.
    pub(crate) user: String,
}

/// What an allocation attempt found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Attempt {
    /// Allocated; `server_taken` when it made the session the holder of the object's server.
    Allocated { server_taken: bool },
    /// The object, or its server, is held by another session.
    Busy,
    /// The session holds the object already.
    Held,
    /// The session is gone (destroyed while it asked).
    Closed,
}

/// What releasing an object did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Release {
    /// The session does not hold it.
    NotHeld,
    /// Released; with the object's server when that was released with it.
    Released { server: Option<String> },
}

#[derive(Default)]
struct State {
    /// Object (identity string) → its holder, and its server when allocatable.
    objects: HashMap<String, (Holder, Option<String>)>,
    /// Allocatable server → its holder and how many of its objects the holder has.
    servers: HashMap<String, (Holder, usize)>,
}

/// The allocation table, and a signal for those waiting for something to be released.
#[derive(Default)]
pub(crate) struct Allocations {
    state: Mutex<State>,
    released: Notify,
}

impl Allocations {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Allocates object `key` to `holder`; `server` is the object's server when that server
    /// is allocatable (it then goes to the holder with the object). `alive` says whether the
    /// holder's session still exists: asked under the table's lock, so that an allocation
    /// cannot slip in after the session's [`release_all`](Self::release_all).
    pub(crate) fn try_allocate(
        &self,
        key: &str,
        holder: &Holder,
        server: Option<&str>,
        alive: impl FnOnce() -> bool,
    ) -> Attempt {
        let mut s = self.state();
        if !alive() {
            return Attempt::Closed;
        }
        match s.objects.get(key) {
            Some((h, _)) if h.session == holder.session => return Attempt::Held,
            Some(_) => return Attempt::Busy,
            None => {}
        }
        let mut server_taken = false;
        if let Some(server) = server {
            match s.servers.get_mut(server) {
                Some((h, _)) if h.session != holder.session => return Attempt::Busy,
                Some((_, count)) => *count += 1,
                None => {
                    s.servers.insert(server.to_string(), (holder.clone(), 1));
                    server_taken = true;
                }
            }
        }
        s.objects.insert(key.to_string(), (holder.clone(), server.map(str::to_string)));
        Attempt::Allocated { server_taken }
    }

    /// Releases object `key` held by `session` (with the server it was allocated with).
    pub(crate) fn release(&self, key: &str, session: &str) -> Release {
        let released = {
            let mut s = self.state();
            let server = match s.objects.get(key) {
                Some((h, server)) if h.session == session => server.clone(),
                _ => return Release::NotHeld,
            };
            s.objects.remove(key);
            server.filter(|server| release_server(&mut s, server, session))
        };
        self.released.notify_waiters();
        Release::Released { server: released }
    }

    /// Drops the allocations of objects that `keep` no longer accepts (their application
    /// changed: the object is gone, or moved to another server), and wakes the sessions
    /// waiting for objects, which may find new ones. Returns the servers released.
    pub(crate) fn prune(&self, keep: impl Fn(&str, Option<&str>) -> bool) -> Vec<String> {
        let servers = {
            let mut s = self.state();
            let gone: Vec<(String, Holder, Option<String>)> = s
                .objects
                .iter()
                .filter(|(k, (_, server))| !keep(k, server.as_deref()))
                .map(|(k, (h, server))| (k.clone(), h.clone(), server.clone()))
                .collect();
            let mut servers = Vec::new();
            for (key, holder, server) in gone {
                s.objects.remove(&key);
                if let Some(server) = server {
                    if release_server(&mut s, &server, &holder.session) {
                        servers.push(server);
                    }
                }
            }
            servers
        };
        self.released.notify_waiters();
        servers
    }

    /// Releases everything `session` holds (it was destroyed); returns the servers it held.
    pub(crate) fn release_all(&self, session: &str) -> Vec<String> {
        let servers = {
            let mut s = self.state();
            s.objects.retain(|_, (h, _)| h.session != session);
            let servers: Vec<String> =
                s.servers.iter().filter(|(_, (h, _))| h.session == session).map(|(k, _)| k.clone()).collect();
            for server in &servers {
                s.servers.remove(server);
            }
            servers
        };
        self.released.notify_waiters();
        servers
    }

    /// The holder of allocatable server `server`, if a session holds it.
    pub(crate) fn server_holder(&self, server: &str) -> Option<Holder> {
        self.state().servers.get(server).map(|(h, _)| h.clone())
    }

    /// Resolves when something is released next; create it before an attempt, so that a
    /// release between the attempt and the wait is not missed.
    pub(crate) fn released(&self) -> tokio::sync::futures::Notified<'_> {
        self.released.notified()
    }
}

/// One object of `server` is no longer held by `session`: the server is released with its
/// last one. Whether it was.
fn release_server(s: &mut State, server: &str, session: &str) -> bool {
    let Some((h, count)) = s.servers.get_mut(server) else { return false };
    if h.session != session {
        return false;
    }
    *count -= 1;
    if *count > 0 {
        return false;
    }
    s.servers.remove(server);
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holder(s: &str) -> Holder {
        Holder { session: s.into(), user: s.into() }
    }

    #[test]
    fn a_server_belongs_to_one_session_while_it_holds_any_of_its_objects() {
        let t = Allocations::default();
        let (a, b) = (holder("a"), holder("b"));
        let alive = || true;
        assert_eq!(t.try_allocate("o1", &a, Some("S"), alive), Attempt::Allocated { server_taken: true });
        assert_eq!(t.try_allocate("o1", &a, Some("S"), alive), Attempt::Held);
        assert_eq!(t.try_allocate("o2", &b, Some("S"), alive), Attempt::Busy);
        assert_eq!(t.try_allocate("o2", &a, Some("S"), alive), Attempt::Allocated { server_taken: false });
        assert_eq!(t.server_holder("S"), Some(a.clone()));
        assert_eq!(t.release("o1", "b"), Release::NotHeld);
        assert_eq!(t.release("o1", "a"), Release::Released { server: None });
        assert_eq!(t.release("o2", "a"), Release::Released { server: Some("S".into()) });
        assert_eq!(t.server_holder("S"), None);
        assert_eq!(t.try_allocate("o2", &b, Some("S"), alive), Attempt::Allocated { server_taken: true });
        // Objects of servers that are not allocatable are held one by one.
        assert_eq!(t.try_allocate("p1", &a, None, alive), Attempt::Allocated { server_taken: false });
        assert_eq!(t.try_allocate("p2", &b, None, alive), Attempt::Allocated { server_taken: false });
        assert_eq!(t.release_all("b"), vec!["S".to_string()]);
        assert_eq!(t.try_allocate("p2", &a, None, alive), Attempt::Allocated { server_taken: false });
        assert_eq!(t.try_allocate("o1", &a, Some("S"), alive), Attempt::Allocated { server_taken: true });
        // A session that is gone gets nothing.
        assert_eq!(t.try_allocate("q", &b, None, || false), Attempt::Closed);
    }

    #[test]
    fn objects_that_an_application_change_removed_are_released() {
        let t = Allocations::default();
        let a = holder("a");
        t.try_allocate("o1", &a, Some("S"), || true);
        t.try_allocate("o2", &a, Some("S"), || true);
        t.try_allocate("p", &a, None, || true);
        assert_eq!(t.prune(|k, _| k != "o1"), Vec::<String>::new());
        assert_eq!(t.prune(|k, server| k == "p" && server.is_none()), vec!["S".to_string()]);
        assert_eq!(t.release("o2", "a"), Release::NotHeld);
        assert_eq!(t.release("p", "a"), Release::Released { server: None });
    }
}
