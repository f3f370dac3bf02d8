//! The router: the `Glacier2::Router` object clients talk to, the forwarding of clients'
//! requests to servers, and of servers' callbacks back over the clients' connections.

use std::sync::Arc;
use std::time::Duration;

use floe::encoding::{Decoder, EncodingVersion, InvocationMode};
use floe::protocol::ReplyBody;
use floe::reference::{identity_to_string, Reference};
use floe::{
    CallError, Communicator, Context, Current, DispatchFuture, Dispatcher, Error, IncomingRequest, ObjectAdapter,
    ObjectPrx, Outcome, Proxy, Response,
};
use tracing::{debug, info};

use crate::config::RouterConfig;
use crate::control::SessionControlServant;
use crate::filters::{Filters, IdentitySetServant, StringFilter, StringSetServant};
use crate::outbox::{Outbox, Pending};
use crate::sessions::{Session, SessionParts, Sessions};
use crate::slice::glacier2::{
    self, CannotCreateSessionException, IdentitySetPrx, PermissionDeniedException,
    PermissionsVerifierCheckPermissionsError, PermissionsVerifierPrx, SSLInfo, SSLPermissionsVerifierAuthorizeError,
    SSLPermissionsVerifierPrx, SSLSessionManagerCreateError, SSLSessionManagerPrx, SessionControlPrx,
    SessionManagerCreateError, SessionManagerPrx, SessionNotExistException, SessionPrx, StringSetPrx,
};
use crate::slice::ice;
use crate::verify::CryptPasswords;

/// How the router checks user ids and passwords.
enum Verifier {
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
enum SslVerifier {
    /// Every ssl client is let in (`<InstanceName>/NullSSLPermissionsVerifier`).
    Null,
    /// A `Glacier2::SSLPermissionsVerifier` object.
    Remote(SSLPermissionsVerifierPrx),
    /// Nothing configured: `createSessionFromSecureConnection` is refused, as with Glacier2.
    None,
}

/// The session manager a new session is created with, and what it is given.
enum Manager<'a> {
    /// `Glacier2.SessionManager`, with the user id.
    Password(&'a SessionManagerPrx, &'a str),
    /// `Glacier2.SSLSessionManager`, with the client's ssl connection.
    Ssl(&'a SSLSessionManagerPrx, &'a SSLInfo),
}

/// The router's shared state.
pub struct RouterCore {
    communicator: Communicator,
    config: RouterConfig,
    sessions: Arc<Sessions>,
    verifier: Verifier,
    session_manager: Option<SessionManagerPrx>,
    ssl_verifier: SslVerifier,
    ssl_session_manager: Option<SSLSessionManagerPrx>,
    client_adapter: ObjectAdapter,
    server_adapter: Option<ObjectAdapter>,
}

impl RouterCore {
    /// Creates the router's adapters (bound, not yet active) and its objects.
    pub fn new(communicator: Communicator, config: RouterConfig) -> Result<Arc<RouterCore>, Error> {
        let props = communicator.properties().clone();
        let verifier = if let Some(file) = &config.crypt_passwords {
            Verifier::Crypt(CryptPasswords::load(file)?)
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
        let router_id = floe::Identity::with_category(&core.config.instance_name, "router");
        core.client_adapter.add(glacier2::RouterServer::new(RouterServant(core.clone())), router_id);
        core.client_adapter.add_default_servant(Arc::new(ClientForwarder(core.clone())), "");
        if let Some(server) = &core.server_adapter {
            server.add_default_servant(Arc::new(ServerForwarder(core.clone())), "");
        }
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

    fn remove_objects(&self, objects: &[floe::Identity]) {
        if let Some(server) = &self.server_adapter {
            for id in objects {
                server.remove(id);
            }
        }
    }

    async fn check_ssl_permissions(&self, info: &SSLInfo, ctx: &Context) -> Result<(), Error> {
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
    async fn establish(
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
                        core: Arc::downgrade(self),
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

    async fn check_permissions(&self, user: &str, password: &str, ctx: &Context) -> Result<(), Error> {
        let denied =
            |reason: floe::CompactString| Error::user(PermissionDeniedException { reason, ..Default::default() });
        match &self.verifier {
            Verifier::Null => Ok(()),
            Verifier::Crypt(c) => {
                if c.verify(user, password) {
                    Ok(())
                } else {
                    Err(denied("password check failed".into()))
                }
            }
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
    fn session_context(&self, current: &Current, connection: &floe::Connection) -> Context {
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
    fn forward_context(current: &Current, session: &Session, forward: bool) -> Option<Context> {
        if !forward {
            return (!session.connection_context.is_empty()).then(|| session.connection_context.clone());
        }
        let mut ctx = current.ctx.clone().into_context();
        ctx.extend(session.connection_context.iter().map(|(k, v)| (k.clone(), v.clone())));
        (!ctx.is_empty()).then_some(ctx)
    }

    /// Whether a proxy a client adds passes the address filters (the adapter-id filter is
    /// the session's, checked with each request, as Glacier2 does).
    fn accepts_proxy(&self, proxy: &ObjectPrx) -> bool {
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
fn with_context<P: Proxy + Clone>(proxy: &P, ctx: &Context) -> P {
    if ctx.is_empty() {
        proxy.clone()
    } else {
        proxy.ice_context(ctx.clone())
    }
}

/// The transport of a connection, as Ice's `Connection::type` names it.
fn connection_type(c: &floe::Connection) -> &'static str {
    match (c.cipher().is_some(), !c.ws_headers().is_empty()) {
        (false, false) => "tcp",
        (true, false) => "ssl",
        (false, true) => "ws",
        (true, true) => "wss",
    }
}

/// The `Glacier2::SSLInfo` of a client's ssl connection: its addresses, cipher suite and
/// certificate chain (PEM, the client's own certificate first). `None` unless the connection
/// is ssl (a wss connection is not, as with Glacier2).
fn ssl_info(c: &floe::Connection) -> Option<SSLInfo> {
    if connection_type(c) != "ssl" {
        return None;
    }
    let (remote, local) = (c.remote_address(), c.local_address());
    Some(SSLInfo {
        remote_host: remote.map(|a| a.ip().to_string()).unwrap_or_default().into(),
        remote_port: remote.map_or(0, |a| i32::from(a.port())),
        local_host: local.map(|a| a.ip().to_string()).unwrap_or_default().into(),
        local_port: local.map_or(0, |a| i32::from(a.port())),
        cipher: c.cipher().unwrap_or_default().into(),
        certs: c.peer_certificates().iter().map(|der| pem_certificate(der).into()).collect(),
    })
}

/// A DER certificate in PEM, as Ice's `IceSSL::Certificate::encode` gives it.
pub fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine as _;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut pem = String::with_capacity(b64.len() + b64.len() / 64 + 64);
    pem.push_str("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        pem.push_str(std::str::from_utf8(line).unwrap_or_default());
        pem.push('\n');
    }
    pem.push_str("-----END CERTIFICATE-----\n");
    pem
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

/// What a request's `_fwd` context asks of its forwarding, read as Glacier2 reads it: each
/// letter in turn, the last mode letter winning — `t` twoway, `o` oneway, `d` datagram, `O`
/// batch oneway and `D` batch datagram (buffered; oneway and datagram unbuffered), `s` a
/// secure connection, `z` compression. Other letters are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct FwdOptions {
    /// The invocation mode asked for, if any.
    pub mode: Option<InvocationMode>,
    /// Forward over a secure endpoint only.
    pub secure: bool,
    /// Compress the forwarded request.
    pub compress: bool,
}

impl FwdOptions {
    /// Reads a `_fwd` value; `buffered` says whether the batch modes are available.
    pub fn parse(value: &str, buffered: bool) -> FwdOptions {
        let mut options = FwdOptions::default();
        for letter in value.chars() {
            match letter {
                't' => options.mode = Some(InvocationMode::Twoway),
                'o' => options.mode = Some(InvocationMode::Oneway),
                'd' => options.mode = Some(InvocationMode::Datagram),
                'O' if buffered => options.mode = Some(InvocationMode::BatchOneway),
                'O' => options.mode = Some(InvocationMode::Oneway),
                'D' if buffered => options.mode = Some(InvocationMode::BatchDatagram),
                'D' => options.mode = Some(InvocationMode::Datagram),
                's' => options.secure = true,
                'z' => options.compress = true,
                // Glacier2 warns; a debug line here, so that a client cannot flood the log.
                other => debug!(target: "floe::router", "unknown forward option `{other}'"),
            }
        }
        options
    }

    /// `target` with the endpoint options asked for.
    fn apply(&self, mut target: ObjectPrx) -> ObjectPrx {
        if self.secure {
            target = target.ice_secure(true);
        }
        if self.compress {
            target = target.ice_compress(true);
        }
        target
    }
}

/// The `_fwd` options of a request, if it has a `_fwd` context.
fn fwd_options(current: &Current, buffered: bool) -> Option<FwdOptions> {
    current.ctx.get("_fwd").map(|v| FwdOptions::parse(v.as_str(), buffered))
}

/// The mode a request is forwarded in (twoway, oneway or datagram), as the client sent it
/// unless `_fwd` says otherwise.
fn forward_mode(current: &Current, fwd: Option<&FwdOptions>) -> InvocationMode {
    match fwd.and_then(|f| f.mode) {
        Some(mode) => mode,
        None if current.is_oneway() => InvocationMode::Oneway,
        None => InvocationMode::Twoway,
    }
}

/// `target` as `current` asks for it: its facet, encoding and invocation `mode`.
fn prepared(current: &Current, target: ObjectPrx, encoding: EncodingVersion, mode: InvocationMode) -> ObjectPrx {
    // Each derived proxy is a new proxy (and looks its connection up again): derive only what
    // differs from the routing table's proxy, which is usually nothing for twoway requests.
    let mut target = target;
    if target.ice_get_facet() != current.facet.as_str() {
        target = target.ice_facet(&current.facet);
    }
    if target.ice_get_encoding_version() != encoding {
        target = target.ice_encoding_version(encoding);
    }
    if target.mode() != mode {
        target = match mode {
            InvocationMode::Twoway => target.ice_twoway(),
            InvocationMode::Oneway => target.ice_oneway(),
            InvocationMode::BatchOneway => target.ice_batch_oneway(),
            InvocationMode::Datagram => target.ice_datagram(),
            InvocationMode::BatchDatagram => target.ice_batch_datagram(),
        };
    }
    target
}

/// Forwards a request that is not batched, in `mode` (twoway, oneway or datagram), as
/// `buffered` says: buffered, a oneway (or datagram) request goes through the session's
/// queue (where a newer one with the same `_ovrd` value may replace it) and a twoway one
/// follows the requests queued before it; unbuffered, each request is forwarded in the order
/// it was read, a twoway one without waiting for its reply. A twoway request forwarded
/// without a reply (`_fwd`) gets an empty one, once queued (buffered) or sent (unbuffered).
async fn forward_in_order(
    outbox: &Outbox,
    buffered: bool,
    request: &IncomingRequest,
    target: ObjectPrx,
    context: Option<Context>,
    mode: InvocationMode,
) -> Response {
    let c = &request.current;
    let target = prepared(c, target, c.encoding, mode);
    let twoway = mode == InvocationMode::Twoway;
    if !buffered {
        return outbox.in_turn(!twoway, || forward(c, &request.params, target, context)).await;
    }
    if twoway {
        return outbox.twoway(|| forward(c, &request.params, target, context)).await;
    }
    let ovrd = c.ctx.get("_ovrd").filter(|v| !v.is_empty()).map(|v| (v.as_str().into(), target.to_string()));
    outbox
        .oneway(Pending {
            target,
            operation: c.operation.clone(),
            mode: c.mode,
            context,
            params: request.params.clone(),
            ovrd,
        })
        .await;
    c.ok_empty()
}

async fn forward(
    current: &Current,
    params: &floe::bytes::Bytes,
    target: ObjectPrx,
    context: Option<Context>,
) -> Response {
    // Large parameters go out from the buffer they were read into, without a copy.
    let outcome = target.invoke_encoded(&current.operation, current.mode, context.as_ref(), params).await;
    match outcome {
        // Sent without a reply: none for a oneway request, an empty one for a twoway request
        // forwarded as oneway (`_fwd`).
        Ok(None) => current.ok_empty(),
        Ok(Some(Outcome::Ok(d))) => current.reply_body(ReplyBody::Ok { encoding: d.encoding(), payload: rest(&d) }),
        Ok(Some(Outcome::UserException(d))) => {
            current.reply_body(ReplyBody::UserException { encoding: d.encoding(), payload: rest(&d) })
        }
        Err(e) => {
            debug!(target: "floe::router", "forwarding {} to {} failed: {e}", current.operation, identity_to_string(&current.id));
            current.error(&e)
        }
    }
}

fn rest(d: &Decoder) -> floe::bytes::Bytes {
    d.buffer().slice(d.position()..)
}

/// The default servant of the client adapter: forwards a client's requests to the proxies it
/// added to its routing table.
struct ClientForwarder(Arc<RouterCore>);

impl Dispatcher for ClientForwarder {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let core = self.0.clone();
        // Built in its box (and in the block of a forward that completed at once, such as a
        // oneway's), not moved into a new one.
        floe::codegen::future_in(floe::codegen::future_slot(), async move {
            let c = &request.current;
            let Some(session) = c.connection().and_then(|conn| core.sessions.of_connection(conn)) else {
                // As Glacier2 does, the connection of a client without a session is closed:
                // that is how a client whose session a session manager destroyed learns of it.
                debug!(target: "floe::router", "request for {} without a session", identity_to_string(&c.id));
                if let Some(conn) = c.connection() {
                    conn.close_forcefully(Error::ConnectionLost("request without a Glacier2 session".into()));
                }
                return c.object_not_exist();
            };
            core.sessions.touch(&session);
            let Some(target) = session.route(&c.id) else {
                return c.object_not_exist();
            };
            if !session.filters.accepts(&c.id, &target.reference().wire.adapter_id) {
                debug!(target: "floe::router", "request for {} refused by the filters", identity_to_string(&c.id));
                return c.object_not_exist();
            }
            let context = RouterCore::forward_context(c, &session, core.config.client_forward_context);
            let buffered = core.config.client_buffered;
            let fwd = fwd_options(c, buffered);
            let target = match &fwd {
                Some(f) => f.apply(target),
                None => target,
            };
            let mode = fwd.and_then(|f| f.mode);
            let batch = match mode {
                Some(m @ (InvocationMode::BatchOneway | InvocationMode::BatchDatagram)) => Some(m),
                // A batched request is forwarded in a batch, unless `_fwd` gives another mode
                // or, buffered, it has an `_ovrd` value: then it is queued as a oneway request,
                // where a newer one may replace it, as glacier2router queues it.
                None if c.is_batched() && !(buffered && c.ctx.get("_ovrd").is_some_and(|v| !v.is_empty())) => {
                    Some(InvocationMode::BatchOneway)
                }
                _ => None,
            };
            if let Some(batch) = batch {
                forward_batched(&session, &request, target, context, batch, fwd.unwrap_or_default()).await;
                return c.ok_empty();
            }
            // Any other request goes after the batched requests the client sent before it.
            session.flush_oneways().await;
            let mode = forward_mode(c, fwd.as_ref());
            forward_in_order(&session.client_outbox, buffered, &request, target, context, mode).await
        })
    }
}

/// Queues a client's request with the other batched requests for the same target (and
/// `mode`, batch oneway or batch datagram), to be sent together once the requests read with
/// it are queued too, as a batch. `fwd` is the request's `_fwd` options (applied to
/// `target` already), which keep requests apart.
async fn forward_batched(
    session: &Arc<Session>,
    request: &IncomingRequest,
    target: ObjectPrx,
    context: Option<Context>,
    mode: InvocationMode,
    fwd: FwdOptions,
) {
    let c = &request.current;
    let key =
        format!("{target} -f {:?} -e {} {mode:?} s{} z{}", c.facet.as_str(), c.encoding, fwd.secure, fwd.compress);
    let batch = session.batch_proxy(key.clone(), || prepared(c, target, c.encoding, mode));
    if let Err(e) = batch.invoke(&c.operation, c.mode, context.as_ref(), |e| e.write_raw(&request.params)).await {
        debug!(target: "floe::router", "forwarding {} failed: {e}", c.operation);
    }
    if session.queued(&key) {
        let session = session.clone();
        tokio::spawn(async move { session.flush_oneways().await });
    }
}

/// The default servant of the server adapter: forwards callbacks to the client whose
/// category they are for, over that client's connection.
struct ServerForwarder(Arc<RouterCore>);

impl Dispatcher for ServerForwarder {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let core = self.0.clone();
        // Built in its box (and in the block of a forward that completed at once, such as a
        // oneway's), not moved into a new one.
        floe::codegen::future_in(floe::codegen::future_slot(), async move {
            let c = &request.current;
            let Some(session) = core.sessions.of_category(&c.id.category) else {
                return c.object_not_exist();
            };
            let reference = Reference::new(c.id.clone());
            let target =
                ObjectPrx::from_reference(core.communicator.clone(), reference).ice_fixed(session.connection.clone());
            let context = if core.config.server_forward_context { Some(c.ctx.clone().into_context()) } else { None };
            let context = context.filter(|ctx| !ctx.is_empty());
            let buffered = core.config.server_buffered;
            // `_fwd`: callbacks have no batches here, a batch mode is forwarded as oneway or
            // datagram.
            let fwd = fwd_options(c, buffered).map(|mut f| {
                f.mode = f.mode.map(|m| match m {
                    InvocationMode::BatchOneway => InvocationMode::Oneway,
                    InvocationMode::BatchDatagram => InvocationMode::Datagram,
                    m => m,
                });
                f
            });
            let target = match &fwd {
                Some(f) => f.apply(target),
                None => target,
            };
            let mode = forward_mode(c, fwd.as_ref());
            forward_in_order(&session.server_outbox, buffered, &request, target, context, mode).await
        })
    }
}

/// `<InstanceName>/router`.
struct RouterServant(Arc<RouterCore>);

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fwd_letters_are_read_in_turn() {
        let parse = FwdOptions::parse;
        assert_eq!(parse("", true), FwdOptions::default());
        assert_eq!(parse("o", true).mode, Some(InvocationMode::Oneway));
        assert_eq!(parse("ot", true).mode, Some(InvocationMode::Twoway), "the last mode wins");
        assert_eq!(parse("O", true).mode, Some(InvocationMode::BatchOneway));
        assert_eq!(parse("O", false).mode, Some(InvocationMode::Oneway), "no batches unbuffered");
        assert_eq!(parse("D", true).mode, Some(InvocationMode::BatchDatagram));
        assert_eq!(parse("D", false).mode, Some(InvocationMode::Datagram));
        assert_eq!(parse("d", true).mode, Some(InvocationMode::Datagram));
        let f = parse("zsx?", true);
        assert_eq!((f.mode, f.secure, f.compress), (None, true, true), "unknown letters are ignored");
    }
}
