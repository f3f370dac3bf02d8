//! IceSSL configuration: the `IceSSL.*` properties of Ice 3.7 read into [`SslSettings`].
//!
//! | property | meaning here |
//! |---|---|
//! | `IceSSL.DefaultDir` | directory that relative file names below are resolved against |
//! | `IceSSL.CAs` | PEM (or DER) file of the certificate authorities peers are verified against (`IceSSL.CertAuthFile`, its older name, is read too) |
//! | `IceSSL.CertFile` | this side's certificate: PKCS#12 (with `IceSSL.Password`), or PEM with `IceSSL.KeyFile` |
//! | `IceSSL.KeyFile` | the PEM private key of a PEM `IceSSL.CertFile` (PKCS#8, PKCS#1 or SEC1) |
//! | `IceSSL.Password` | the password of a PKCS#12 `IceSSL.CertFile` |
//! | `IceSSL.VerifyPeer` | 0, 1 or 2 (default 2). Server: 0 asks no client certificate, 1 asks for one and verifies it if sent, 2 requires one. Client: 0 accepts any server certificate, 1 and 2 verify it |
//! | `IceSSL.CheckCertName` | > 0: the client also checks the server certificate's names against the endpoint's host (default 0) |
//! | `IceSSL.VerifyDepthMax` | maximum length of the peer's chain, its own certificate and the trust anchor included (default 3; 0: no limit) |
//! | `IceSSL.Protocols` | `tls1_2`, `tls1_3` (also `TLSv1_2`…; default both); SSLv3, TLS 1.0 and 1.1 are refused |

use std::path::{Path, PathBuf};

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use rustls::SupportedProtocolVersion;

use crate::error::{Error, Result};
use crate::properties::Properties;

/// The IceSSL settings of one communicator, with its certificates loaded.
#[derive(Debug)]
pub struct SslSettings {
    /// `IceSSL.VerifyPeer` (0, 1 or 2).
    pub verify_peer: u8,
    /// `IceSSL.CheckCertName` > 0.
    pub check_cert_name: bool,
    /// `IceSSL.VerifyDepthMax` (0: no limit).
    pub verify_depth_max: usize,
    /// The TLS versions allowed (`IceSSL.Protocols`).
    pub versions: Vec<&'static SupportedProtocolVersion>,
    /// The trusted certificate authorities (`IceSSL.CAs`).
    pub cas: Vec<CertificateDer<'static>>,
    /// This side's certificate chain and key (`IceSSL.CertFile`), if any.
    pub identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
}

fn property_error(name: &str, reason: impl Into<String>) -> Error {
    Error::Property { name: name.to_string(), reason: reason.into() }
}

/// `IceSSL.Protocols`: the TLS versions named, or an error naming what is not supported.
pub fn parse_protocols(value: &str) -> Result<Vec<&'static SupportedProtocolVersion>> {
    let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
    for word in value.split(|c: char| c == ',' || c.is_whitespace()).filter(|w| !w.is_empty()) {
        let w = word.to_ascii_uppercase().replace("TLSV", "TLS");
        let v = match w.as_str() {
            "TLS1_2" => &rustls::version::TLS12,
            "TLS1_3" => &rustls::version::TLS13,
            "SSL3" | "SSLV3" | "TLS" | "TLS1" | "TLS1_0" | "TLS1_1" => {
                return Err(property_error(
                    "IceSSL.Protocols",
                    format!("{word} is not supported (only tls1_2 and tls1_3 are)"),
                ))
            }
            _ => return Err(property_error("IceSSL.Protocols", format!("unknown protocol {word:?}"))),
        };
        if !versions.iter().any(|x| std::ptr::eq(*x, v)) {
            versions.push(v);
        }
    }
    if versions.is_empty() {
        return Err(property_error("IceSSL.Protocols", "no protocol given"));
    }
    Ok(versions)
}

impl SslSettings {
    /// Reads the `IceSSL.*` properties and loads the files they name.
    pub fn from_properties(props: &Properties) -> Result<SslSettings> {
        let verify_peer = props.get_int("IceSSL.VerifyPeer", 2)?;
        if !(0..=2).contains(&verify_peer) {
            return Err(property_error("IceSSL.VerifyPeer", format!("{verify_peer} is not 0, 1 or 2")));
        }
        let dir = props.get("IceSSL.DefaultDir").filter(|d| !d.is_empty()).map(PathBuf::from);
        let resolve = |file: &str| -> PathBuf {
            let p = Path::new(file);
            match &dir {
                Some(d) if p.is_relative() => d.join(p),
                _ => p.to_path_buf(),
            }
        };
        let read = |name: &str, file: &str| -> Result<Vec<u8>> {
            let path = resolve(file);
            std::fs::read(&path).map_err(|e| property_error(name, format!("cannot read {}: {e}", path.display())))
        };
        let versions = match props.get("IceSSL.Protocols").filter(|v| !v.trim().is_empty()) {
            Some(v) => parse_protocols(&v)?,
            None => vec![&rustls::version::TLS13, &rustls::version::TLS12],
        };
        let cas_name = if props.get("IceSSL.CAs").is_some() { "IceSSL.CAs" } else { "IceSSL.CertAuthFile" };
        let cas = match props.get(cas_name).filter(|v| !v.is_empty()) {
            Some(file) => {
                let data = read(cas_name, &file)?;
                let cas = certificates(&data).map_err(|e| property_error(cas_name, e))?;
                if cas.is_empty() {
                    return Err(property_error(cas_name, format!("{file}: no certificate found")));
                }
                cas
            }
            None => Vec::new(),
        };
        let identity = match props.get("IceSSL.CertFile").filter(|v| !v.is_empty()) {
            None => None,
            Some(file) => {
                let data = read("IceSSL.CertFile", &file)?;
                if is_pem(&data) {
                    let chain = certificates(&data).map_err(|e| property_error("IceSSL.CertFile", e))?;
                    // The key may be in the certificate's file itself.
                    let key_data = match props.get("IceSSL.KeyFile").filter(|v| !v.is_empty()) {
                        Some(k) => read("IceSSL.KeyFile", &k)?,
                        None => data.clone(),
                    };
                    let key = PrivateKeyDer::from_pem_slice(&key_data).map_err(|e| {
                        property_error("IceSSL.KeyFile", format!("no usable PEM private key for {file}: {e}"))
                    })?;
                    if chain.is_empty() {
                        return Err(property_error("IceSSL.CertFile", format!("{file}: no certificate found")));
                    }
                    Some((chain, key))
                } else {
                    let password = props.get_or("IceSSL.Password", "");
                    Some(
                        pkcs12(&data, &password)
                            .map_err(|e| property_error("IceSSL.CertFile", format!("{file}: {e}")))?,
                    )
                }
            }
        };
        Ok(SslSettings {
            verify_peer: verify_peer as u8,
            check_cert_name: props.get_int("IceSSL.CheckCertName", 0)? > 0,
            verify_depth_max: props.get_int("IceSSL.VerifyDepthMax", 3)?.max(0) as usize,
            versions,
            cas,
            identity,
        })
    }
}

fn is_pem(data: &[u8]) -> bool {
    let start = data.iter().position(|b| !b.is_ascii_whitespace()).unwrap_or(data.len());
    data[start..].starts_with(b"-----BEGIN")
}

/// The certificates of a PEM file (or of a single DER certificate).
fn certificates(data: &[u8]) -> std::result::Result<Vec<CertificateDer<'static>>, String> {
    if !is_pem(data) {
        return Ok(vec![CertificateDer::from(data.to_vec())]);
    }
    CertificateDer::pem_slice_iter(data).collect::<std::result::Result<Vec<_>, _>>().map_err(|e| e.to_string())
}

/// The certificate chain and key of a PKCS#12 file.
fn pkcs12(
    data: &[u8],
    password: &str,
) -> std::result::Result<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>), String> {
    let store = p12_keystore::KeyStore::from_pkcs12(data, password, p12_keystore::Pkcs12ImportPolicy::Relaxed)
        .map_err(|e| format!("cannot decode PKCS#12 (wrong IceSSL.Password?): {e}"))?;
    let (_, chain) = store.private_key_chain().ok_or("no private key in the PKCS#12 file")?;
    let certs: Vec<CertificateDer<'static>> =
        chain.certs().iter().map(|c| CertificateDer::from(c.as_der().to_vec())).collect();
    if certs.is_empty() {
        return Err("no certificate for the private key in the PKCS#12 file".into());
    }
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(chain.key().as_der().to_vec()));
    Ok((certs, key))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protocols() {
        assert_eq!(parse_protocols("tls1_2, TLS1_3").unwrap().len(), 2);
        assert_eq!(parse_protocols("TLSv1_3").unwrap().len(), 1);
        let e = parse_protocols("tls1_0").unwrap_err().to_string();
        assert!(e.contains("not supported"), "{e}");
        assert!(parse_protocols("sslv3 tls1_2").is_err());
        assert!(parse_protocols("bogus").is_err());
        assert!(parse_protocols(" ").is_err());
    }

    #[test]
    fn verify_peer_out_of_range() {
        let p = Properties::new();
        p.set("IceSSL.VerifyPeer", "3");
        assert!(matches!(SslSettings::from_properties(&p), Err(Error::Property { .. })));
    }
}
