//! The router's configuration, read from Glacier2's properties.

use std::time::Duration;

use floe::{Error, Properties};
use floe_service::props::{non_empty, required};

/// What `floe-router` reads from its properties (Glacier2's names).
#[derive(Debug, Clone)]
pub struct RouterConfig {
    /// `Glacier2.InstanceName`: the category of the router's own objects.
    pub instance_name: String,
    /// `Glacier2.Client.Endpoints`: where clients connect.
    pub client_endpoints: String,
    /// `Glacier2.Server.Endpoints`: where servers call back (none: no callbacks).
    pub server_endpoints: String,
    /// `Glacier2.SessionTimeout`: a session without traffic, refresh or heartbeat for this
    /// long is destroyed (`None`: never).
    pub session_timeout: Option<Duration>,
    /// `Glacier2.Client.ForwardContext`: forward the contexts of clients' requests.
    pub client_forward_context: bool,
    /// `Glacier2.Server.ForwardContext`: forward the contexts of callbacks.
    pub server_forward_context: bool,
    /// `Glacier2.Client.Buffered`: queue clients' requests (and let `_ovrd` replace queued
    /// oneway ones) rather than forward each in turn.
    pub client_buffered: bool,
    /// `Glacier2.Server.Buffered`: the same for callbacks.
    pub server_buffered: bool,
    /// `Glacier2.Client.SleepTime` (milliseconds): buffered, the pause after each flush of a
    /// session's queued requests, to gather more (and let `_ovrd` replace more).
    pub client_sleep_time: Duration,
    /// `Glacier2.Server.SleepTime`: the same for callbacks.
    pub server_sleep_time: Duration,
    /// `Glacier2.AddConnectionContext`: add the client connection's addresses to the
    /// context of forwarded requests (`_con.*` entries).
    pub add_connection_context: bool,
    /// `Glacier2.PermissionsVerifier`: a proxy string (or `<InstanceName>/NullPermissionsVerifier`).
    pub permissions_verifier: Option<String>,
    /// `Glacier2.CryptPasswords`: a file of `user crypt-hash` lines.
    pub crypt_passwords: Option<String>,
    /// `Glacier2.SessionManager`: a proxy string.
    pub session_manager: Option<String>,
    /// `Glacier2.SSLPermissionsVerifier`: a proxy string (or
    /// `<InstanceName>/NullSSLPermissionsVerifier`), for `createSessionFromSecureConnection`.
    pub ssl_permissions_verifier: Option<String>,
    /// `Glacier2.SSLSessionManager`: a proxy string.
    pub ssl_session_manager: Option<String>,
    /// `Glacier2.Filter.Category.Accept`: categories clients may call (empty: any).
    pub accept_categories: Vec<String>,
    /// `Glacier2.Filter.Category.AcceptUser`: 1 adds the user id of a password session to
    /// its category filter, 2 the user id with a leading underscore; 0 (the default) neither.
    pub accept_user: i64,
    /// `Glacier2.Filter.Identity.Accept`: identities clients may call.
    pub accept_identities: Vec<String>,
    /// `Glacier2.Filter.AdapterId.Accept`: adapter ids of the proxies clients may add.
    pub accept_adapter_ids: Vec<String>,
    /// `Glacier2.Filter.Address.Accept`: host patterns the endpoints of added proxies must match.
    pub accept_addresses: Vec<String>,
    /// `Glacier2.Filter.Address.Reject`: host patterns they must not match.
    pub reject_addresses: Vec<String>,
    /// `Glacier2.RoutingTable.MaxSize`: proxies kept per session; the oldest are evicted.
    pub routing_table_max: usize,
}

fn words(props: &Properties, name: &str) -> Vec<String> {
    props.get(name).map(|v| v.split_whitespace().map(str::to_string).collect()).unwrap_or_default()
}

/// A property in milliseconds (0 when unset or not positive).
fn millis(props: &Properties, name: &str) -> Result<Duration, Error> {
    Ok(Duration::from_millis(props.get_int(name, 0)?.max(0) as u64))
}

impl RouterConfig {
    /// Reads the configuration; `Glacier2.Client.Endpoints` is required.
    pub fn from_properties(props: &Properties) -> Result<Self, Error> {
        let client_endpoints =
            required(props, "Glacier2.Client.Endpoints", "the router needs the endpoints its clients connect to")?;
        let timeout = props.get_int("Glacier2.SessionTimeout", 0)?;
        Ok(RouterConfig {
            instance_name: non_empty(props, "Glacier2.InstanceName").unwrap_or_else(|| "Glacier2".into()),
            client_endpoints,
            server_endpoints: non_empty(props, "Glacier2.Server.Endpoints").unwrap_or_default(),
            session_timeout: (timeout > 0).then(|| Duration::from_secs(timeout as u64)),
            client_forward_context: props.get_int("Glacier2.Client.ForwardContext", 0)? > 0,
            server_forward_context: props.get_int("Glacier2.Server.ForwardContext", 0)? > 0,
            client_buffered: props.get_int("Glacier2.Client.Buffered", 1)? > 0,
            server_buffered: props.get_int("Glacier2.Server.Buffered", 1)? > 0,
            client_sleep_time: millis(props, "Glacier2.Client.SleepTime")?,
            server_sleep_time: millis(props, "Glacier2.Server.SleepTime")?,
            add_connection_context: props.get_int("Glacier2.AddConnectionContext", 0)? > 0,
            permissions_verifier: non_empty(props, "Glacier2.PermissionsVerifier"),
            crypt_passwords: non_empty(props, "Glacier2.CryptPasswords"),
            session_manager: non_empty(props, "Glacier2.SessionManager"),
            ssl_permissions_verifier: non_empty(props, "Glacier2.SSLPermissionsVerifier"),
            ssl_session_manager: non_empty(props, "Glacier2.SSLSessionManager"),
            accept_categories: words(props, "Glacier2.Filter.Category.Accept"),
            accept_user: props.get_int("Glacier2.Filter.Category.AcceptUser", 0)?,
            accept_identities: words(props, "Glacier2.Filter.Identity.Accept"),
            accept_adapter_ids: words(props, "Glacier2.Filter.AdapterId.Accept"),
            accept_addresses: words(props, "Glacier2.Filter.Address.Accept"),
            reject_addresses: words(props, "Glacier2.Filter.Address.Reject"),
            routing_table_max: props.get_int("Glacier2.RoutingTable.MaxSize", 1000)?.max(1) as usize,
        })
    }
}
