//! `Glacier2::SessionControl`: the object a session manager gets with each session it
//! creates (only when the router has `Glacier2.Server.Endpoints`, where the object lives). It
//! gives the session's filters, the session timeout, and destroys the session.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use floe::{Connection, Current};

use crate::slice::glacier2::{IdentitySetPrx, SessionControl, StringSetPrx};

/// Ends the session of a connection: given by the router, which owns the sessions.
pub type EndSession = Arc<dyn Fn(Connection) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// The `SessionControl` servant of one session.
pub struct SessionControlServant {
    /// `Glacier2.SessionTimeout` in seconds (0: none).
    pub session_timeout_secs: u64,
    /// Ends the session (and the session manager's session with it).
    pub end: EndSession,
    /// The client connection of the session.
    pub connection: Connection,
    /// The session's category filter.
    pub categories: StringSetPrx,
    /// The session's adapter-id filter.
    pub adapter_ids: StringSetPrx,
    /// The session's identity filter.
    pub identities: IdentitySetPrx,
}

impl SessionControl for SessionControlServant {
    async fn categories(&self, _: &Current) -> floe::Result<Option<StringSetPrx>> {
        Ok(Some(self.categories.clone()))
    }

    async fn adapter_ids(&self, _: &Current) -> floe::Result<Option<StringSetPrx>> {
        Ok(Some(self.adapter_ids.clone()))
    }

    async fn identities(&self, _: &Current) -> floe::Result<Option<IdentitySetPrx>> {
        Ok(Some(self.identities.clone()))
    }

    async fn get_session_timeout(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.session_timeout_secs.min(i32::MAX as u64) as i32)
    }

    /// Destroys the session (and the session manager's session with it). The client's
    /// connection stays open, as with Glacier2: its next routed request closes it.
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        (self.end)(self.connection.clone()).await;
        Ok(())
    }
}
