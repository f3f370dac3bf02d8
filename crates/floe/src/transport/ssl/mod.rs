//! ssl: TLS 1.2 and 1.3 over TCP with rustls (the `ring` provider; no OpenSSL), configured by
//! the `IceSSL.*` properties of Ice 3.7 ([`config`]). A communicator builds one [`SslContext`]
//! the first time an ssl or wss endpoint is used, so programs without ssl need no
//! certificates.
//!
//! Certificates are verified by default (`IceSSL.VerifyPeer=2`): a peer whose certificate does
//! not verify gets [`Error::Security`] and is never served. [`security_failure`] tells such
//! failures apart from other I/O errors.

pub mod config;

use std::io;
use std::pin::Pin;
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::server::WebPkiClientVerifier;
use rustls::{AlertDescription, CertificateError, DigitallySignedStruct, DistinguishedName, SignatureScheme};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

pub use config::SslSettings;

use crate::error::{Error, Result};
use crate::properties::Properties;

/// The TLS configuration of one communicator, for both sides.
pub struct SslContext {
    client: Arc<rustls::ClientConfig>,
    /// The server side, or why there is none (no certificate).
    server: Result<Arc<rustls::ServerConfig>>,
}

impl std::fmt::Debug for SslContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SslContext").field("server", &self.server.is_ok()).finish()
    }
}

/// A security failure as a rustls error whose text says what happened.
fn rejection(message: String) -> rustls::Error {
    #[derive(Debug)]
    struct Rejected(String);
    impl std::fmt::Display for Rejected {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(&self.0)
        }
    }
    impl std::error::Error for Rejected {}
    rustls::Error::InvalidCertificate(CertificateError::Other(rustls::OtherError(Arc::new(Rejected(message)))))
}

/// Checks `IceSSL.VerifyDepthMax`: the chain's length counts the peer's certificate, the
/// intermediates it sent and the trust anchor (unless the peer sent that too).
fn check_depth(
    max: usize,
    cas: &[CertificateDer<'static>],
    end_entity: &CertificateDer<'_>,
    intermediates: &[CertificateDer<'_>],
) -> std::result::Result<(), rustls::Error> {
    if max == 0 {
        return Ok(());
    }
    let last = intermediates.last().unwrap_or(end_entity);
    let anchor_sent = cas.iter().any(|ca| ca.as_ref() == last.as_ref());
    let length = 1 + intermediates.len() + usize::from(!anchor_sent);
    if length > max {
        return Err(rejection(format!(
            "length of the peer's certificate chain ({length}) exceeds IceSSL.VerifyDepthMax ({max})"
        )));
    }
    Ok(())
}

/// The client's verifier of server certificates, with IceSSL's rules.
#[derive(Debug)]
struct ServerVerifier {
    /// Chain (and name) verification against `IceSSL.CAs`; `None` without CAs.
    webpki: Option<Arc<WebPkiServerVerifier>>,
    verify_peer: u8,
    check_cert_name: bool,
    depth_max: usize,
    cas: Vec<CertificateDer<'static>>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for ServerVerifier {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> std::result::Result<ServerCertVerified, rustls::Error> {
        if self.verify_peer == 0 {
            // IceSSL.VerifyPeer=0: a client accepts whatever the server presents.
            return Ok(ServerCertVerified::assertion());
        }
        let Some(webpki) = &self.webpki else {
            return Err(rejection(
                "IceSSL.CAs is not set: no certificate authority to verify the server's certificate against \
                 (set IceSSL.CAs, or IceSSL.VerifyPeer=0 to accept any server)"
                    .into(),
            ));
        };
        match webpki.verify_server_cert(end_entity, intermediates, server_name, ocsp, now) {
            Ok(_) => {}
            // The chain verified (names are checked last); IceSSL checks names only with
            // IceSSL.CheckCertName.
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) if !self.check_cert_name => {}
            Err(e) => return Err(e),
        }
        check_depth(self.depth_max, &self.cas, end_entity, intermediates)?;
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The server's verifier of client certificates: rustls's, plus `IceSSL.VerifyDepthMax`.
#[derive(Debug)]
struct ClientVerifier {
    inner: Arc<dyn ClientCertVerifier>,
    depth_max: usize,
    cas: Vec<CertificateDer<'static>>,
}

impl ClientCertVerifier for ClientVerifier {
    fn offer_client_auth(&self) -> bool {
        self.inner.offer_client_auth()
    }

    fn client_auth_mandatory(&self) -> bool {
        self.inner.client_auth_mandatory()
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        self.inner.root_hint_subjects()
    }

    fn verify_client_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        now: UnixTime,
    ) -> std::result::Result<ClientCertVerified, rustls::Error> {
        let verified = self.inner.verify_client_cert(end_entity, intermediates, now)?;
        check_depth(self.depth_max, &self.cas, end_entity, intermediates)?;
        Ok(verified)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> std::result::Result<HandshakeSignatureValid, rustls::Error> {
        self.inner.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.inner.supported_verify_schemes()
    }
}

fn tls_error(name: &str, e: impl std::fmt::Display) -> Error {
    Error::Property { name: name.to_string(), reason: e.to_string() }
}

impl SslContext {
    /// The context the `IceSSL.*` properties describe.
    pub fn from_properties(props: &Properties) -> Result<SslContext> {
        SslContext::new(SslSettings::from_properties(props)?)
    }

    /// The context for `settings`.
    pub fn new(settings: SslSettings) -> Result<SslContext> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut roots = rustls::RootCertStore::empty();
        for ca in &settings.cas {
            roots.add(ca.clone()).map_err(|e| tls_error("IceSSL.CAs", e))?;
        }
        let roots = Arc::new(roots);

        // Client side.
        let webpki = if settings.cas.is_empty() {
            None
        } else {
            Some(
                WebPkiServerVerifier::builder_with_provider(roots.clone(), provider.clone())
                    .build()
                    .map_err(|e| tls_error("IceSSL.CAs", e))?,
            )
        };
        let verifier = ServerVerifier {
            webpki,
            verify_peer: settings.verify_peer,
            check_cert_name: settings.check_cert_name,
            depth_max: settings.verify_depth_max,
            cas: settings.cas.clone(),
            algorithms: provider.signature_verification_algorithms,
        };
        let builder = rustls::ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&settings.versions)
            .map_err(|e| tls_error("IceSSL.Protocols", e))?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier));
        let client = match &settings.identity {
            Some((chain, key)) => builder
                .with_client_auth_cert(chain.clone(), key.clone_key())
                .map_err(|e| tls_error("IceSSL.CertFile", e))?,
            None => builder.with_no_client_auth(),
        };

        // Server side.
        let server = (|| -> Result<Arc<rustls::ServerConfig>> {
            let Some((chain, key)) = &settings.identity else {
                return Err(tls_error(
                    "IceSSL.CertFile",
                    "not set: an ssl or wss object adapter endpoint needs a certificate and its key",
                ));
            };
            let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
                .with_protocol_versions(&settings.versions)
                .map_err(|e| tls_error("IceSSL.Protocols", e))?;
            let builder = match settings.verify_peer {
                0 => builder.with_no_client_auth(),
                n => {
                    if settings.cas.is_empty() {
                        return Err(tls_error(
                            "IceSSL.CAs",
                            format!(
                                "not set, but IceSSL.VerifyPeer={n} has the server verify client certificates \
                                 (set IceSSL.CAs, or IceSSL.VerifyPeer=0)"
                            ),
                        ));
                    }
                    let b = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone());
                    let b = if n == 1 { b.allow_unauthenticated() } else { b };
                    let inner = b.build().map_err(|e| tls_error("IceSSL.CAs", e))?;
                    builder.with_client_cert_verifier(Arc::new(ClientVerifier {
                        inner,
                        depth_max: settings.verify_depth_max,
                        cas: settings.cas.clone(),
                    }))
                }
            };
            let config = builder
                .with_single_cert(chain.clone(), key.clone_key())
                .map_err(|e| tls_error("IceSSL.CertFile", e))?;
            Ok(Arc::new(config))
        })();
        Ok(SslContext { client: Arc::new(client), server })
    }

    /// Fails unless this context can serve (it has a certificate): object adapters check
    /// this as they activate an ssl or wss endpoint.
    pub fn check_server(&self) -> Result<()> {
        self.server.as_ref().map(|_| ()).map_err(Clone::clone)
    }

    /// The client side of the TLS handshake over `io`, for a server reached as `host`.
    pub async fn connect<S>(&self, io: S, host: &str) -> Result<tokio_rustls::client::TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let host = if host.is_empty() || host == "*" || host == "0.0.0.0" { "127.0.0.1" } else { host };
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| Error::ConnectFailed { endpoint: host.to_string(), reason: format!("bad host name: {e}") })?;
        let connector = tokio_rustls::TlsConnector::from(self.client.clone());
        connector.connect(name, io).await.map_err(|e| handshake_error(e, host))
    }

    /// The server side of the TLS handshake over `io`.
    pub async fn accept<S>(&self, io: S) -> Result<tokio_rustls::server::TlsStream<S>>
    where
        S: AsyncRead + AsyncWrite + Unpin,
    {
        let config = self.server.as_ref().map_err(Clone::clone)?;
        let acceptor = tokio_rustls::TlsAcceptor::from(config.clone());
        acceptor.accept(io).await.map_err(|e| handshake_error(e, "incoming"))
    }
}

fn handshake_error(e: io::Error, who: &str) -> Error {
    match security_failure(&e) {
        Some(reason) => Error::Security(reason),
        None => Error::ConnectionLost(format!("ssl handshake with {who} failed: {e}")),
    }
}

/// The security failure an I/O error of a TLS stream reports, if it is one: this side
/// rejected the peer's certificate (or its absence), or the peer rejected this side's.
pub fn security_failure(e: &io::Error) -> Option<String> {
    let inner = e.get_ref()?.downcast_ref::<rustls::Error>()?;
    match inner {
        rustls::Error::InvalidCertificate(c) => Some(format!("the peer's certificate was rejected: {c}")),
        rustls::Error::NoCertificatesPresented => {
            Some("the peer presented no certificate, and IceSSL.VerifyPeer=2 requires one".into())
        }
        rustls::Error::AlertReceived(
            a @ (AlertDescription::BadCertificate
            | AlertDescription::UnsupportedCertificate
            | AlertDescription::CertificateRevoked
            | AlertDescription::CertificateExpired
            | AlertDescription::CertificateUnknown
            | AlertDescription::UnknownCA
            | AlertDescription::CertificateRequired
            | AlertDescription::AccessDenied),
        ) => Some(format!("the peer rejected this side's certificate (TLS alert {a:?})")),
        _ => None,
    }
}

/// What an established TLS connection tells about its peer.
#[derive(Debug, Clone, Default)]
pub struct PeerInfo {
    /// The peer's certificate chain (DER, the peer's own certificate first).
    pub certificates: Vec<Vec<u8>>,
    /// The negotiated cipher suite, as rustls names it.
    pub cipher: String,
}

impl PeerInfo {
    /// The peer's chain and the cipher suite of a TLS connection whose handshake is done.
    pub fn of<C, D>(connection: &C) -> PeerInfo
    where
        C: std::ops::Deref<Target = rustls::ConnectionCommon<D>>,
    {
        let certificates = connection
            .peer_certificates()
            .map(|c: &[CertificateDer<'static>]| c.iter().map(|c| c.as_ref().to_vec()).collect())
            .unwrap_or_default();
        let cipher = connection
            .negotiated_cipher_suite()
            .map(|s| s.suite().as_str().map_or_else(|| format!("{:?}", s.suite()), str::to_string))
            .unwrap_or_default();
        PeerInfo { certificates, cipher }
    }
}

/// A TLS client stream that records the first security failure it reads or writes: with TLS
/// 1.3 a server refuses the client's certificate only after the client's handshake has
/// completed, so the client learns of it from its first read.
pub struct Watched<S> {
    inner: S,
    failure: Arc<OnceLock<String>>,
}

impl<S> Watched<S> {
    /// `inner`, reporting into a new slot (see [`failure`](Self::failure)).
    pub fn new(inner: S) -> Self {
        Watched { inner, failure: Arc::default() }
    }

    /// Where the failure is recorded.
    pub fn failure(&self) -> Arc<OnceLock<String>> {
        self.failure.clone()
    }

    fn record<T>(&self, r: Poll<io::Result<T>>) -> Poll<io::Result<T>> {
        if let Poll::Ready(Err(e)) = &r {
            if let Some(reason) = security_failure(e) {
                let _ = self.failure.set(reason);
            }
        }
        r
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        this.record(r)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.record(r)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.record(r)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let r = Pin::new(&mut this.inner).poll_flush(cx);
        this.record(r)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
