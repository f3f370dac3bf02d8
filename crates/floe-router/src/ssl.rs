//! What the router reads of a client's connection: its transport as Ice names it, the
//! `Glacier2::SSLInfo` of an ssl connection, and certificates in PEM.

use crate::slice::glacier2::SSLInfo;

/// The transport of a connection, as Ice's `Connection::type` names it.
pub(crate) fn connection_type(c: &floe::Connection) -> &'static str {
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
pub(crate) fn ssl_info(c: &floe::Connection) -> Option<SSLInfo> {
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
