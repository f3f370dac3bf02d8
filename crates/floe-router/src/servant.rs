//! `<InstanceName>/router`: the `Glacier2::Router` object clients create, refresh and
//! destroy their sessions with and add proxies to their routing table through.

use std::sync::Arc;

use floe::{Current, Error, ObjectPrx, Proxy};
use tracing::debug;

use crate::sessions::Session;
use crate::slice::glacier2::{
    self, CannotCreateSessionException, PermissionDeniedException, SessionNotExistException, SessionPrx,
};
use crate::slice::ice;
use crate::ssl::ssl_info;
use crate::state::{Manager, RouterCore, SslVerifier};

pub(crate) struct RouterServant(pub(crate) Arc<RouterCore>);

impl RouterServant {
    fn session(&self, current: &Current) -> Option<Arc<Session>> {
        current.connection().and_then(|c| self.0.sessions.of_connection(c))
    }

    fn no_session() -> Error {
        Error::user(SessionNotExistException::default())
    }

    /// The session of the caller's connection (its life noted), or, as Glacier2 does for the
    /// router's operations that need one, `ObjectNotExistException` with the connection
    /// closed: that is how a client whose session ended learns of it.
    fn session_or_close(&self, current: &Current) -> floe::Result<Arc<Session>> {
        if let Some(session) = self.session(current) {
            self.0.sessions.touch(&session);
            return Ok(session);
        }
        debug!(target: "floe::router", "{} without a session: closing the connection", current.operation);
        if let Some(conn) = current.connection() {
            conn.close_forcefully(Error::ConnectionLost(format!("{} without a Glacier2 session", current.operation)));
        }
        Err(Error::ObjectNotExist {
            identity: current.id.clone(),
            facet: current.facet.to_string(),
            operation: current.operation.to_string(),
        })
    }
}

impl ice::Router for RouterServant {
    async fn get_client_proxy(&self, current: &Current) -> floe::Result<(Option<ObjectPrx>, Option<bool>)> {
        self.session_or_close(current)?;
        let client = self.0.client_adapter.create_direct_proxy(floe::Identity::new("dummy"));
        Ok((Some(client), Some(true)))
    }

    async fn get_server_proxy(&self, current: &Current) -> floe::Result<Option<ObjectPrx>> {
        self.session_or_close(current)?;
        Ok(self.0.server_adapter.as_ref().map(|a| a.create_direct_proxy(floe::Identity::new("dummy"))))
    }

    async fn add_proxies(&self, proxies: ice::ObjectProxySeq, current: &Current) -> floe::Result<ice::ObjectProxySeq> {
        let session = self.session_or_close(current)?;
        let mut evicted = Vec::new();
        for p in proxies.into_iter().flatten() {
            if !self.0.accepts_proxy(&p) {
                debug!(target: "floe::router", "proxy {p} refused by the filters");
                continue;
            }
            evicted.extend(session.add_route(p, self.0.config.routing_table_max).into_iter().map(Some));
        }
        Ok(evicted)
    }
}

impl glacier2::Router for RouterServant {
    async fn get_category_for_client(&self, current: &Current) -> floe::Result<floe::CompactString> {
        // Without server endpoints there are no categories, session or not (as with Glacier2).
        if self.0.server_adapter.is_none() {
            return Ok(Default::default());
        }
        Ok(self.session_or_close(current)?.category.as_str().into())
    }

    async fn create_session(
        &self,
        user_id: floe::CompactString,
        password: floe::CompactString,
        current: &Current,
    ) -> floe::Result<Option<SessionPrx>> {
        let core = &self.0;
        let Some(connection) = current.connection().cloned() else {
            return Err(Error::user(CannotCreateSessionException {
                reason: "no connection".into(),
                ..Default::default()
            }));
        };
        if core.sessions.of_connection(&connection).is_some() {
            return Err(Error::user(CannotCreateSessionException {
                reason: "session exists".into(),
                ..Default::default()
            }));
        }
        let ctx = core.session_context(current, &connection);
        core.check_permissions(&user_id, &password, &ctx).await?;
        let manager = core.session_manager.as_ref().map(|m| Manager::Password(m, &user_id));
        core.establish(connection, user_id.to_string(), false, manager, &ctx).await
    }

    async fn create_session_from_secure_connection(&self, current: &Current) -> floe::Result<Option<SessionPrx>> {
        let core = &self.0;
        let denied =
            |reason: &str| Error::user(PermissionDeniedException { reason: reason.into(), ..Default::default() });
        if matches!(core.ssl_verifier, SslVerifier::None) {
            return Err(denied("no configured ssl permissions verifier"));
        }
        let Some(connection) = current.connection().cloned() else {
            return Err(denied("not ssl connection"));
        };
        let Some(info) = ssl_info(&connection) else {
            return Err(denied("not ssl connection"));
        };
        if core.sessions.of_connection(&connection).is_some() {
            return Err(Error::user(CannotCreateSessionException {
                reason: "session exists".into(),
                ..Default::default()
            }));
        }
        let ctx = core.session_context(current, &connection);
        core.check_ssl_permissions(&info, &ctx).await?;
        let user = format!("ssl client {}:{}", info.remote_host, info.remote_port);
        let manager = core.ssl_session_manager.as_ref().map(|m| Manager::Ssl(m, &info));
        core.establish(connection, user, true, manager, &ctx).await
    }

    async fn refresh_session(&self, current: &Current) -> floe::Result<()> {
        let session = self.session(current).ok_or_else(Self::no_session)?;
        self.0.sessions.touch(&session);
        // As Glacier2 does, the session manager's session is pinged (so that it does not time
        // out either); when it is gone, so is the router's session.
        if let Some(managed) = &session.managed {
            if let Err(e) = managed.ice_ping().await {
                debug!(target: "floe::router", "the session manager's session of {} is gone: {e}", session.user);
                self.0.end_session(&session.connection).await;
                return Err(Self::no_session());
            }
        }
        Ok(())
    }

    async fn destroy_session(&self, current: &Current) -> floe::Result<()> {
        let connection = current.connection().cloned().ok_or_else(Self::no_session)?;
        if !self.0.end_session(&connection).await {
            return Err(Self::no_session());
        }
        Ok(())
    }

    async fn get_session_timeout(&self, _: &Current) -> floe::Result<i64> {
        Ok(self.0.config.session_timeout.map_or(0, |t| t.as_secs() as i64))
    }

    async fn get_acm_timeout(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.0.config.session_timeout.map_or(0, |t| t.as_secs() as i32))
    }
}
