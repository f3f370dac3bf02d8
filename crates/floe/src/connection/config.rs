//! The settings of one connection.

use std::time::Duration;

use super::acm::{AcmConfig, AcmSweeper};

/// Settings of one connection.
#[derive(Debug, Clone)]
pub struct ConnectionConfig {
    /// `Ice.MessageSizeMax` in bytes: larger incoming messages close the connection.
    pub max_message_size: usize,
    /// `Ice.Compression.Level` (bzip2 block size, 1–9).
    pub compression_level: u32,
    /// Heartbeat and idle settings.
    pub acm: AcmConfig,
    /// Upper bound on requests dispatched at once on this connection (0: no bound). When it is
    /// reached the connection stops reading until a dispatch completes.
    pub max_dispatches: usize,
    /// How long a graceful close waits for the peer to close its side.
    pub close_timeout: Duration,
    /// Ice 3.8's inactivity timeout: a connection with no call in progress and no request or
    /// reply sent or received for this long is closed gracefully (`None`: never). It is checked
    /// at the heartbeat checks, so it needs a (smaller) idle timeout.
    pub inactivity_timeout: Option<Duration>,
    /// How long an accepted connection may take for its TLS handshake or WebSocket upgrade
    /// (Ice 3.8's server-side connect timeout).
    pub accept_timeout: Duration,
    /// Log every message (`Ice.Trace.Protocol`).
    pub trace_protocol: bool,
    /// Log connection establishment and closing at info level (`Ice.Trace.Network`; they are
    /// always logged at debug level).
    pub trace_network: bool,
    /// How long a message may stay incomplete without more bytes arriving before the connection
    /// is closed (`Floe.Connection.PartialMessageTimeout`, seconds; protects against peers that
    /// send a header and stall).
    pub partial_message_timeout: Option<Duration>,
    /// Watches the ACM of the connections made with this configuration (and its clones).
    pub(crate) acm_sweeper: AcmSweeper,
}

impl Default for ConnectionConfig {
    fn default() -> Self {
        ConnectionConfig {
            max_message_size: crate::protocol::DEFAULT_MESSAGE_SIZE_MAX,
            compression_level: 1,
            acm: AcmConfig::default(),
            max_dispatches: 1000,
            close_timeout: Duration::from_secs(10),
            inactivity_timeout: None,
            accept_timeout: Duration::from_secs(10),
            trace_protocol: false,
            trace_network: false,
            partial_message_timeout: Some(Duration::from_secs(30)),
            acm_sweeper: AcmSweeper::default(),
        }
    }
}
