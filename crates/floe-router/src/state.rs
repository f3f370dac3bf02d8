//! The router's shared state ([`RouterCore`]): its configuration, sessions, verifiers and
//! session managers, and what a session's life takes: creating it once its client is let
//! in, ending it, and the contexts of the calls made for it.

use std::sync::Arc;
use std::time::Duration;

use floe::reference::identity_to_string;
use floe::{CallError, Communicator, Context, Current, Error, ObjectAdapter, ObjectPrx, Proxy};
use floe_service::crypt::CryptPasswords;
use tracing::{debug, info};

use crate::config::RouterConfig;
use crate::control::SessionControlServant;
use crate::filters::{Filters, IdentitySetServant, StringFilter, StringSetServant};
use crate::sessions::{Session, SessionParts, Sessions};
use crate::slice::glacier2::{
    self, CannotCreateSessionException, IdentitySetPrx, PermissionDeniedException,
    PermissionsVerifierCheckPermissionsError, PermissionsVerifierPrx, SSLInfo, SSLPermissionsVerifierAuthorizeError,
    SSLPermissionsVerifierPrx, SSLSessionManagerCreateError, SSLSessionManagerPrx, SessionControlPrx,
    SessionManagerCreateError, SessionManagerPrx, SessionPrx, StringSetPrx,
};
use crate::ssl::{connection_type, pem_certificate};

/// How the router checks user ids and passwords.
pub(crate) enum Verifier {
    /// Everyone is let in (`<InstanceName>/NullPermissionsVerifier`).
    Null,
    /// `Glacier2.CryptPasswords`.
    Crypt(CryptPasswords),
    /// A `Glacier2::PermissionsVerifier` object.
    Remote(PermissionsVerifierPrx),
    /// Nothing configured: nobody is let in, as with Glacier2.
    None,
}

/// How the router checks clients that ask for a session from their ssl connection.
pub(crate) enum SslVerifier {
    /// Every ssl client is let in (`<InstanceName>/NullSSLPermissionsVerifier`).
    Null,
    /// A `Glacier2::SSLPermissionsVerifier` object.
    Remote(SSLPermissionsVerifierPrx),
    /// Nothing configured: `createSessionFromSecureConnection` is refused, as with Glacier2.
    None,
}

/// The session manager a new session is created with, and what it is given.
pub(crate) enum Manager<'a> {
    /// `Glacier2.SessionManager`, with the user id.
    Password(&'a SessionManagerPrx, &'a str),
    /// `Glacier2.SSLSessionManager`, with the client's ssl connection.
    Ssl(&'a SSLSessionManagerPrx, &'a SSLInfo),
}

/// The router's shared state.
pub struct RouterCore {
    pub(crate) communicator: Communicator,
    pub(crate) config: RouterConfig,
    pub(crate) sessions: Arc<Sessions>,
    pub(crate) verifier: Verifier,
    pub(crate) session_manager: Option<SessionManagerPrx>,
    pub(crate) ssl_verifier: SslVerifier,
    pub(crate) ssl_session_manager: Option<SSLSessionManagerPrx>,
    pub(crate) client_adapter: ObjectAdapter,
    pub(crate) server_adapter: Option<ObjectAdapter>,
}

impl RouterCore {
    /// Creates the router's adapters (bound, not yet active) and its state; its servants are
    /// added by [`RouterCore::new`].
    pub(crate) fn create(communicator: Communicator, config: RouterConfig) -> Result<Arc<RouterCore>, Error> {
        let props = communicator.properties().clone();
        let verifier = if let Some(file) = &config.crypt_passwords {
            Verifier::Crypt(CryptPasswords::load(std::path::Path::new(file), "Glacier2.CryptPasswords")?)
        } else if let Some(v) = &config.permissions_verifier {
            let null = format!("{}/NullPermissionsVerifier", config.instance_name);
            let proxy = communicator.string_to_proxy(v)?;
            if identity_to_string(proxy.ice_get_identity()) == null {
                Verifier::Null
            } else {
                Verifier::Remote(PermissionsVerifierPrx::from_object(proxy))
            }
        } else {
            Verifier::None
        };
        let session_manager = match &config.session_manager {
            Some(s) => Some(SessionManagerPrx::from_object(communicator.string_to_proxy(s)?)),
            None => None,
        };
        let ssl_verifier = match &config.ssl_permissions_verifier {
            Some(v) => {
                let proxy = communicator.string_to_proxy(v)?;
                if identity_to_string(proxy.ice_get_identity())
                    == format!("{}/NullSSLPermissionsVerifier", config.instance_name)
                {
                    SslVerifier::Null
                } else {
                    SslVerifier::Remote(SSLPermissionsVerifierPrx::from_object(proxy))
                }
            }
            None => SslVerifier::None,
        };
        let ssl_session_manager = match &config.ssl_session_manager {
            Some(s) => Some(SSLSessionManagerPrx::from_object(communicator.string_to_proxy(s)?)),
            None => None,
        };
        // Ice's names for the two adapters, so that `Ice.PrintAdapterReady` prints what
        // glacier2router prints.
        if props.get("Glacier2.Client.ACM.Timeout").is_none() {
            if let Some(t) = config.session_timeout {
                props.set("Glacier2.Client.ACM.Timeout", &t.as_secs().to_string());
            }
        }
        client_connection_defaults(&props, config.session_timeout.is_some());
        let client_adapter =
            communicator.create_object_adapter_with_endpoints("Glacier2.Client", &config.client_endpoints)?;
        let server_adapter = if config.server_endpoints.is_empty() {
            None
        } else {
            Some(communicator.create_object_adapter_with_endpoints("Glacier2.Server", &config.server_endpoints)?)
        };
        let sessions = Sessions::with_pauses(
            if config.client_buffered { config.client_sleep_time } else { Duration::ZERO },
            if config.server_buffered { config.server_sleep_time } else { Duration::ZERO },
        );
        let core = Arc::new(RouterCore {
            communicator,
            config,
            sessions: Arc::new(sessions),
            verifier,
            session_manager,
            ssl_verifier,
            ssl_session_manager,
            client_adapter,
            server_adapter,
        });
        Ok(core)
    }

    /// Starts accepting clients (and callbacks), and the session-timeout sweeper.
    pub async fn activate(self: &Arc<Self>) -> Result<(), Error> {
        if let Some(server) = &self.server_adapter {
            server.activate().await?;
        }
        self.client_adapter.activate().await?;
        if let Some(timeout) = self.config.session_timeout {
            let core = Arc::downgrade(self);
            let period = (timeout / 4).max(Duration::from_millis(250));
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(period).await;
                    let Some(core) = core.upgrade() else { return };
                    for s in core.sessions.expired(timeout.as_millis() as u64) {
                        info!(target: "floe::router", "session of {} timed out", s.user);
                        core.end_session(&s.connection).await;
                        s.connection.close_forcefully(Error::ConnectionLost("Glacier2 session timed out".into()));
                    }
                }
            });
        }
        Ok(())
    }

    /// The sessions.
    pub fn sessions(&self) -> &Sessions {
        &self.sessions
    }

    /// `Glacier2.SessionTimeout` in seconds (0: none).
    pub fn session_timeout_secs(&self) -> u64 {
        self.config.session_timeout.map_or(0, |t| t.as_secs())
    }

    /// Ends the session of a connection (if it has one), destroying the session manager's
    /// session with it and removing its objects from the server adapter.
    pub async fn end_session(&self, connection: &floe::Connection) -> bool {
        let Some(s) = self.sessions.remove(connection) else { return false };
        debug!(target: "floe::router", "session of {} ended", s.user);
        if !connection.is_closed() {
            watch_heartbeats(self.sessions.clone(), connection.clone());
        }
        self.remove_objects(&s.objects);
        if let Some(managed) = &s.managed {
            // With the connection's `_con.` entries (`Glacier2.AddConnectionContext`), as
            // Glacier2 destroys it.
            if let Err(e) = with_context(managed, &s.connection_context).destroy().await {
                debug!(target: "floe::router", "destroying the session manager's session failed: {e}");
            }
        }
        true
    }

    /// What a session's `SessionControl` calls to end it (the router held weakly: its
    /// adapter holds the servant).
    fn session_ender(self: &Arc<Self>) -> crate::control::EndSession {
        let core = Arc::downgrade(self);
        Arc::new(move |connection| {
            let core = core.clone();
            Box::pin(async move {
                if let Some(core) = core.upgrade() {
                    core.end_session(&connection).await;
                }
            })
        })
    }

    fn remove_objects(&self, objects: &[floe::Identity]) {
        if let Some(server) = &self.server_adapter {
            for id in objects {
                server.remove(id);
            }
        }
    }

    pub(crate) async fn check_ssl_permissions(&self, info: &SSLInfo, ctx: &Context) -> Result<(), Error> {
        let denied =
            |reason: floe::CompactString| Error::user(PermissionDeniedException { reason, ..Default::default() });
        match &self.ssl_verifier {
            SslVerifier::Null => Ok(()),
            SslVerifier::Remote(v) => match with_context(v, ctx).authorize(info).await {
                Ok((true, _)) => Ok(()),
                Ok((false, reason)) if reason.is_empty() => Err(denied("permission denied".into())),
                Ok((false, reason)) => Err(denied(reason)),
                Err(CallError::User(SSLPermissionsVerifierAuthorizeError::PermissionDeniedException(e))) => {
                    Err(Error::user(e))
                }
                Err(CallError::Local(e)) => {
                    debug!(target: "floe::router", "ssl permissions verifier failed: {e}");
                    Err(denied("internal server error".into()))
                }
            },
            SslVerifier::None => Err(denied("no configured ssl permissions verifier".into())),
        }
    }

    /// Creates the session of `connection` once its client is let in (`ssl`: from its ssl
    /// connection rather than with a password): its filters (and, on
    /// the server adapter, their objects and the `SessionControl` given to the session
    /// manager), the session manager's session, and the routing state.
    pub(crate) async fn establish(
        self: &Arc<Self>,
        connection: floe::Connection,
        user: String,
        ssl: bool,
        manager: Option<Manager<'_>>,
        ctx: &Context,
    ) -> floe::Result<Option<SessionPrx>> {
        // `Glacier2.Filter.Category.AcceptUser` concerns password sessions only.
        let filters = Arc::new(Filters::from_config(&self.config, (!ssl).then_some(user.as_str())));
        let mut objects = Vec::new();
        let mut control = None;
        if let Some(server) = &self.server_adapter {
            let mut add = |servant| {
                let proxy = server.add_with_uuid(servant);
                objects.push(proxy.ice_get_identity().clone());
                proxy
            };
            let categories = StringSetPrx::from_object(add(glacier2::StringSetServer::new(StringSetServant {
                filters: filters.clone(),
                which: StringFilter::Categories,
            })));
            let adapter_ids = StringSetPrx::from_object(add(glacier2::StringSetServer::new(StringSetServant {
                filters: filters.clone(),
                which: StringFilter::AdapterIds,
            })));
            let identities =
                IdentitySetPrx::from_object(add(glacier2::IdentitySetServer::new(IdentitySetServant(filters.clone()))));
            if manager.is_some() {
                control = Some(SessionControlPrx::from_object(add(glacier2::SessionControlServer::new(
                    SessionControlServant {
                        session_timeout_secs: self.session_timeout_secs(),
                        end: self.session_ender(),
                        connection: connection.clone(),
                        categories,
                        adapter_ids,
                        identities,
                    },
                ))));
            }
        }
        let cannot =
            |reason: String| Error::user(CannotCreateSessionException { reason: reason.into(), ..Default::default() });
        let managed = match manager {
            None => Ok(None),
            Some(Manager::Password(m, user_id)) => match with_context(m, ctx).create(user_id, control.as_ref()).await {
                Ok(s) => Ok(s),
                Err(CallError::User(SessionManagerCreateError::CannotCreateSessionException(e))) => Err(Error::user(e)),
                Err(CallError::Local(e)) => Err(cannot(format!("session manager failed: {e}"))),
            },
            Some(Manager::Ssl(m, info)) => match with_context(m, ctx).create(info, control.as_ref()).await {
                Ok(s) => Ok(s),
                Err(CallError::User(SSLSessionManagerCreateError::CannotCreateSessionException(e))) => {
                    Err(Error::user(e))
                }
                Err(CallError::Local(e)) => Err(cannot(format!("session manager failed: {e}"))),
            },
        };
        let managed = match managed {
            Ok(m) => m,
            Err(e) => {
                self.remove_objects(&objects);
                return Err(e);
            }
        };
        let category = if self.server_adapter.is_some() { uuid::Uuid::new_v4().to_string() } else { String::new() };
        let parts = SessionParts {
            category,
            user: user.clone(),
            managed: managed.clone(),
            filters,
            objects: objects.clone(),
            connection_context: self.connection_context(&connection),
        };
        if self.sessions.create(&connection, parts).is_none() {
            self.remove_objects(&objects);
            if let Some(m) = &managed {
                let _ = m.destroy().await;
            }
            return Err(cannot("session exists".into()));
        }
        info!(target: "floe::router", "session created for {user}");
        // The session ends with its connection.
        let watcher = self.clone();
        tokio::spawn(async move {
            connection.wait_closed().await;
            watcher.end_session(&connection).await;
        });
        Ok(managed)
    }

    pub(crate) async fn check_permissions(&self, user: &str, password: &str, ctx: &Context) -> Result<(), Error> {
        let denied =
            |reason: floe::CompactString| Error::user(PermissionDeniedException { reason, ..Default::default() });
        match &self.verifier {
            Verifier::Null => Ok(()),
            // Hashed off the runtime's thread: forwarding goes on meanwhile.
            Verifier::Crypt(c) => c.verify(user, password).await.map_err(|e| {
                debug!(target: "floe::router", "password check of {user} failed: {e}");
                denied("password check failed".into())
            }),
            Verifier::Remote(v) => match with_context(v, ctx).check_permissions(user, password).await {
                Ok((true, _)) => Ok(()),
                Ok((false, reason)) => Err(denied(reason)),
                Err(CallError::User(PermissionsVerifierCheckPermissionsError::PermissionDeniedException(e))) => {
                    Err(Error::user(e))
                }
                Err(CallError::Local(e)) => Err(denied(format!("permissions verifier failed: {e}").into())),
            },
            Verifier::None => Err(denied("no permissions verifier is configured".into())),
        }
    }

    /// The `_con.` entries Glacier2 adds with `Glacier2.AddConnectionContext`: the client
    /// connection's type, addresses and ports and, over ssl, `_con.cipher` and `_con.peerCert`
    /// (the client's certificate in PEM). Empty without the property.
    fn connection_context(&self, connection: &floe::Connection) -> Context {
        let mut ctx = Context::new();
        if !self.config.add_connection_context {
            return ctx;
        }
        ctx.insert("_con.type".into(), connection_type(connection).into());
        if let Some(a) = connection.remote_address() {
            ctx.insert("_con.remoteAddress".into(), a.ip().to_string());
            ctx.insert("_con.remotePort".into(), a.port().to_string());
        }
        if let Some(a) = connection.local_address() {
            ctx.insert("_con.localAddress".into(), a.ip().to_string());
            ctx.insert("_con.localPort".into(), a.port().to_string());
        }
        if let Some(cipher) = connection.cipher() {
            ctx.insert("_con.cipher".into(), cipher.to_string());
            if let Some(cert) = connection.peer_certificates().first() {
                ctx.insert("_con.peerCert".into(), pem_certificate(cert));
            }
        }
        ctx
    }

    /// The context of the calls to verifiers and session managers made for a client's
    /// `createSession` or `createSessionFromSecureConnection`: the client's own context
    /// without the `_con.` entries only the router may set, plus the connection's
    /// ([`Self::connection_context`]), as Glacier2 gives them.
    pub(crate) fn session_context(&self, current: &Current, connection: &floe::Connection) -> Context {
        let mut ctx = current.ctx.clone().into_context();
        ctx.retain(|k, _| {
            !matches!(
                k.as_str(),
                "_con.type"
                    | "_con.remotePort"
                    | "_con.remoteAddress"
                    | "_con.localPort"
                    | "_con.localAddress"
                    | "_con.cipher"
                    | "_con.peerCert"
            )
        });
        ctx.extend(self.connection_context(connection));
        ctx
    }

    /// The context of a request a client's session forwards: the client's (with
    /// `Glacier2.Client.ForwardContext`) and the connection's entries.
    pub(crate) fn forward_context(current: &Current, session: &Session, forward: bool) -> Option<Context> {
        if !forward {
            return (!session.connection_context.is_empty()).then(|| session.connection_context.clone());
        }
        let mut ctx = current.ctx.clone().into_context();
        ctx.extend(session.connection_context.iter().map(|(k, v)| (k.clone(), v.clone())));
        (!ctx.is_empty()).then_some(ctx)
    }

    /// Whether a proxy a client adds passes the address filters (the adapter-id filter is
    /// the session's, checked with each request, as Glacier2 does).
    pub(crate) fn accepts_proxy(&self, proxy: &ObjectPrx) -> bool {
        let c = &self.config;
        let r = proxy.reference();
        let hosts: Vec<String> = r.wire.endpoints.iter().filter_map(endpoint_host).collect();
        if hosts.iter().any(|h| c.reject_addresses.iter().any(|p| host_matches(p, h))) {
            return false;
        }
        if !c.accept_addresses.is_empty()
            && !hosts.iter().all(|h| c.accept_addresses.iter().any(|p| host_matches(p, h)))
        {
            return false;
        }
        true
    }
}

/// How often the connection of an ended session is checked for heartbeats.
const HEARTBEAT_CHECK: Duration = Duration::from_millis(250);

/// Watches the connection of a session that ended while it stayed open: as with Glacier2,
/// the client's next heartbeat closes it (a client learns that way that its session is
/// gone), unless a new session was created on it first. Ends when the connection closes or
/// has a session again.
fn watch_heartbeats(sessions: Arc<Sessions>, connection: floe::Connection) {
    let seen = connection.heartbeats_received();
    tokio::spawn(async move {
        loop {
            tokio::select! {
                _ = connection.wait_closed() => return,
                _ = tokio::time::sleep(HEARTBEAT_CHECK) => {}
            }
            if sessions.of_connection(&connection).is_some() {
                return;
            }
            if connection.heartbeats_received() != seen {
                debug!(target: "floe::router", "heartbeat without a session: closing the connection");
                connection.close_forcefully(Error::ConnectionLost("heartbeat without a Glacier2 session".into()));
                return;
            }
        }
    });
}

/// `proxy` with `ctx` as its context (itself when `ctx` is empty).
pub(crate) fn with_context<P: Proxy + Clone>(proxy: &P, ctx: &Context) -> P {
    if ctx.is_empty() {
        proxy.clone()
    } else {
        proxy.ice_context(ctx.clone())
    }
}
fn endpoint_host(e: &floe::encoding::EndpointData) -> Option<String> {
    use floe::encoding::EndpointData;
    match e {
        EndpointData::Tcp(ip) | EndpointData::Ssl(ip) | EndpointData::Ws(ip, _) | EndpointData::Wss(ip, _) => {
            Some(ip.host.clone())
        }
        EndpointData::Udp { host, .. } => Some(host.clone()),
        _ => None,
    }
}

/// Glacier2's address patterns: a host with an optional `:port`, where `*` matches anything;
/// the port is not checked here.
fn host_matches(pattern: &str, host: &str) -> bool {
    let pattern = pattern.rsplit_once(':').map_or(pattern, |(h, _)| h);
    pattern == "*" || pattern == host
}

/// The client adapter's connection settings when nothing selects Ice 3.7's ACM for it (no
/// `Glacier2.SessionTimeout`, no `Ice.ACM.*` or `Glacier2.Client.ACM.*`): Ice 3.8's model, in
/// which a session lasts as long as its connection, so without an inactivity timeout (as
/// glacier2router 3.8 sets it), with heartbeats that keep Ice 3.8 clients' idle checks
/// satisfied, and, unless configured, without an idle check of the router's own, which would
/// abort the sessions of Ice 3.7 clients that send no heartbeats (glacier2router 3.7 keeps them).
fn client_connection_defaults(props: &floe::Properties, session_timeout: bool) {
    let acm = !props.with_prefix("Ice.ACM.").is_empty() || !props.with_prefix("Glacier2.Client.ACM.").is_empty();
    if session_timeout || acm {
        return;
    }
    for (name, value, side) in [
        ("Glacier2.Client.Connection.InactivityTimeout", "0", "Ice.Connection.Server.InactivityTimeout"),
        ("Glacier2.Client.Connection.EnableIdleCheck", "0", "Ice.Connection.Server.EnableIdleCheck"),
    ] {
        if props.get(name).is_none() && props.get(side).is_none() {
            props.set(name, value);
        }
    }
}
