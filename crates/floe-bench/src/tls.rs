//! The ssl variants of the tests: where the test certificates are, and how each system is told
//! to use them. Every server listens on ssl beside tcp with the same server certificate; every
//! client checks that certificate against the test CA. Servers do not ask clients for a
//! certificate (`IceSSL.VerifyPeer=0` for floe and Ice), so each handshake is the same one-way
//! authentication whatever the system.
//!
//! The raw baseline is rustls with the same crypto provider (ring) and defaults as floe's ssl
//! transport: TLS 1.3 with the cipher suite both sides prefer (AES-256-GCM on x86-64 with
//! AES-NI), as with Ice C++ on OpenSSL.

use std::io::{BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};

/// The certificate directory of this process, once set by [`set_certs`].
static CERTS: OnceLock<PathBuf> = OnceLock::new();

/// Where the test certificates are by default: `../shared/certs` beside the repository.
pub(crate) fn default_certs() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/certs")
}

/// Takes `dir` as the certificate directory if it holds the files the ssl tests use; the
/// reason otherwise.
pub(crate) fn set_certs(dir: &Path) -> Result<(), String> {
    for f in ["ca.pem", "server.pem", "server_key.pem", "server.p12"] {
        if !dir.join(f).is_file() {
            return Err(format!("no {f} in {} (the test certificates; see --certs)", dir.display()));
        }
    }
    let dir = dir.canonicalize().map_err(|e| format!("{}: {e}", dir.display()))?;
    CERTS.set(dir).map_err(|_| "certificates set twice".to_string())
}

/// The certificate directory, if the ssl tests can run.
pub(crate) fn certs() -> Option<&'static Path> {
    CERTS.get().map(PathBuf::as_path)
}

fn certs_or_err() -> std::io::Result<&'static Path> {
    certs().ok_or_else(|| std::io::Error::other("no test certificates (see --certs)"))
}

/// The command-line arguments that give a floe-bench child process the certificates.
pub(crate) fn forward_certs(cmd: &mut std::process::Command) {
    if let Some(dir) = certs() {
        cmd.arg("--certs").arg(dir);
    }
}

/// IceSSL properties for a floe server: the server certificate (PKCS#12) and no client
/// certificate asked for.
pub(crate) fn floe_server_properties(p: &floe::Properties) {
    if let Some(dir) = certs() {
        p.set("IceSSL.DefaultDir", &dir.to_string_lossy());
        p.set("IceSSL.CAs", "ca.pem");
        p.set("IceSSL.CertFile", "server.p12");
        p.set("IceSSL.Password", "password");
        p.set("IceSSL.VerifyPeer", "0");
    }
}

/// IceSSL properties for a floe client: the test CA, which the server's certificate must
/// chain to.
pub(crate) fn floe_client_properties(p: &floe::Properties) {
    if let Some(dir) = certs() {
        p.set("IceSSL.DefaultDir", &dir.to_string_lossy());
        p.set("IceSSL.CAs", "ca.pem");
    }
}

/// The Ice C++ peer's arguments for the same settings (it loads the IceSSL plugin).
pub(crate) fn ice_args(server: bool) -> Vec<String> {
    let Some(dir) = certs() else { return Vec::new() };
    let mut v = vec![
        "--Ice.Plugin.IceSSL=IceSSL:createIceSSL".to_string(),
        format!("--IceSSL.DefaultDir={}", dir.display()),
        "--IceSSL.CAs=ca.pem".to_string(),
    ];
    if server {
        v.push("--IceSSL.CertFile=server.p12".into());
        v.push("--IceSSL.Password=password".into());
        v.push("--IceSSL.VerifyPeer=0".into());
    }
    v
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read(path: &Path) -> std::io::Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| std::io::Error::other(format!("{}: {e}", path.display())))
}

/// The raw baseline's TLS server configuration: the server certificate from PEM.
pub(crate) fn raw_server_config() -> std::io::Result<Arc<rustls::ServerConfig>> {
    let dir = certs_or_err()?;
    let chain = CertificateDer::pem_slice_iter(&read(&dir.join("server.pem"))?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| std::io::Error::other(format!("server.pem: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(&read(&dir.join("server_key.pem"))?)
        .map_err(|e| std::io::Error::other(format!("server_key.pem: {e}")))?;
    let config = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(std::io::Error::other)?;
    Ok(Arc::new(config))
}

/// The raw baseline's TLS client configuration: the test CA as the only root.
pub(crate) fn raw_client_config() -> std::io::Result<Arc<rustls::ClientConfig>> {
    let dir = certs_or_err()?;
    let mut roots = rustls::RootCertStore::empty();
    for ca in CertificateDer::pem_slice_iter(&read(&dir.join("ca.pem"))?) {
        roots.add(ca.map_err(|e| std::io::Error::other(format!("ca.pem: {e}")))?).map_err(std::io::Error::other)?;
    }
    let config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(std::io::Error::other)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// A blocking TLS client stream to 127.0.0.1:`port`, handshake done.
pub(crate) fn raw_connect(
    port: u16,
    config: Arc<rustls::ClientConfig>,
) -> std::io::Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let tcp = TcpStream::connect(("127.0.0.1", port))?;
    tcp.set_nodelay(true)?;
    let name = ServerName::IpAddress(std::net::Ipv4Addr::LOCALHOST.into());
    let conn = rustls::ClientConnection::new(config, name).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// A blocking TLS server stream over an accepted `tcp` connection, handshake done.
pub(crate) fn raw_accept(
    tcp: TcpStream,
    config: Arc<rustls::ServerConfig>,
) -> std::io::Result<rustls::StreamOwned<rustls::ServerConnection, TcpStream>> {
    tcp.set_nodelay(true)?;
    let conn = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut stream = rustls::StreamOwned::new(conn, tcp);
    while stream.conn.is_handshaking() {
        stream.conn.complete_io(&mut stream.sock)?;
    }
    Ok(stream)
}

/// A stream the raw baseline reads through a buffer and writes directly: a TCP socket or a
/// TLS session over one.
pub(crate) struct Buffered<S: Read + Write> {
    reader: BufReader<S>,
}

impl<S: Read + Write> Buffered<S> {
    /// Wraps `stream` with a read buffer of `capacity` bytes.
    pub(crate) fn new(stream: S, capacity: usize) -> Self {
        Buffered { reader: BufReader::with_capacity(capacity, stream) }
    }

    /// Reads exactly `buf.len()` bytes.
    pub(crate) fn read_exact(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        self.reader.read_exact(buf)
    }

    /// Writes all of `buf` (past the read buffer, which holds only what was read).
    pub(crate) fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        let s = self.reader.get_mut();
        s.write_all(buf)?;
        s.flush()
    }
}
