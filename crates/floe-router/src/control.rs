//! `Glacier2::SessionControl`: the object a session manager gets with each session it
//! creates (only when the router has `Glacier2.Server.Endpoints`, where the object lives). It
//! gives the session's filters, the session timeout, and destroys the session.

use std::sync::Weak;

use floe::{Connection, Current};

use crate::router::RouterCore;
use crate::slice::glacier2::{IdentitySetPrx, SessionControl, StringSetPrx};

/// The `SessionControl` servant of one session.
pub struct SessionControlServant {
    /// The router (weak: the router's adapter holds this servant).
    pub core: Weak<RouterCore>,
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
        Ok(self.core.upgrade().map_or(0, |c| c.session_timeout_secs() as i32))
    }

    /// Destroys the session (and the session manager's session with it). The client's
    /// connection stays open, as with Glacier2: its next routed request closes it.
    async fn destroy(&self, _: &Current) -> floe::Result<()> {
        if let Some(core) = self.core.upgrade() {
            core.end_session(&self.connection).await;
        }
        Ok(())
    }
}
