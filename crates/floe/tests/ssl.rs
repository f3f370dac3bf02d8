//! The ssl, ws and wss transports between floe programs, on loopback: IceSSL's properties
//! (PEM and PKCS#12 certificates, VerifyPeer, CheckCertName, VerifyDepthMax, Protocols),
//! the typed security error on both sides, the peer's certificate chain in the connection,
//! and WebSocket upgrades that fail without harming other connections. The test certificates
//! are the repository's neighbour `../shared/certs` (see its README).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, Dispatcher, Error, Identity, IncomingRequest, ObjectPrx, Properties};

fn certs() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/certs");
    assert!(dir.join("ca.pem").exists(), "test certificates missing at {}", dir.display());
    dir
}

/// Answers `certs` with the number of certificates the client presented on this connection.
struct Peer;

impl Dispatcher for Peer {
    fn dispatch(&self, request: IncomingRequest) -> DispatchFuture {
        let c = &request.current;
        let response = match c.operation.as_str() {
            "certs" => {
                let n = c.connection().map(|k| k.peer_certificates().len()).unwrap_or(0) as i32;
                c.ok(|e| e.write_i32(n))
            }
            _ => c.operation_not_exist(),
        };
        Box::pin(std::future::ready(response))
    }
}

/// IceSSL properties with the test directory and `ca.pem`, plus `extra` (`Name=value`).
fn props(extra: &[&str]) -> Properties {
    let p = Properties::new();
    p.set("IceSSL.DefaultDir", certs().to_str().unwrap());
    p.set("IceSSL.CAs", "ca.pem");
    for kv in extra {
        let (k, v) = kv.split_once('=').unwrap();
        p.set(k, v);
    }
    p
}

const SERVER_P12: &[&str] = &["IceSSL.CertFile=server.p12", "IceSSL.Password=password"];
const CLIENT_PEM: &[&str] = &["IceSSL.CertFile=client.pem", "IceSSL.KeyFile=client_key.pem"];

/// A server with `Peer` at "peer" on `endpoint` (port 0), and its proxy.
async fn server(endpoint: &str, extra: &[&str]) -> floe::Result<(Communicator, ObjectPrx)> {
    let c = Communicator::with_properties(props(extra))?;
    let a = c.create_object_adapter_with_endpoints("A", endpoint)?;
    a.add(std::sync::Arc::new(Peer), Identity::new("peer"));
    a.activate().await?;
    let proxy = a.create_proxy(Identity::new("peer"));
    Ok((c, proxy))
}

/// Calls `certs` through `client`'s view of `proxy`.
async fn call(client: &Communicator, proxy: &ObjectPrx) -> floe::Result<i32> {
    let p = client.string_to_proxy(&proxy.to_string())?;
    let call = p.invoke("certs", OperationMode::Normal, None, |_| {});
    let outcome = tokio::time::timeout(Duration::from_secs(20), call).await.expect("call timed out")?;
    outcome.expect("twoway").decode(|d| d.read_i32())
}

fn client(extra: &[&str]) -> Communicator {
    Communicator::with_properties(props(extra)).unwrap()
}

fn both<'a>(a: &[&'a str], b: &[&'a str]) -> Vec<&'a str> {
    a.iter().chain(b).copied().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pkcs12_server_and_pem_client_see_each_others_chain() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let c = client(CLIENT_PEM);
    // The server saw the client's certificate (VerifyPeer=2 by default).
    assert!(call(&c, &proxy).await.unwrap() >= 1);
    let p = c.string_to_proxy(&proxy.to_string()).unwrap();
    let conn = p.ice_get_connection().await.unwrap();
    let chain = conn.peer_certificates();
    assert!(!chain.is_empty());
    let server_pem = std::fs::read_to_string(certs().join("server.pem")).unwrap();
    let b64: String = server_pem.lines().filter(|l| !l.starts_with("-----")).collect();
    use base64::Engine as _;
    let der = base64::engine::general_purpose::STANDARD.decode(b64).unwrap();
    assert_eq!(chain[0], der, "the first certificate is the server's own");
    // The negotiated suite is named (TLS 1.3 by default).
    assert!(conn.cipher().is_some_and(|c| c.starts_with("TLS13_")), "{:?}", conn.cipher());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pem_server_and_pkcs12_client() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", &["IceSSL.CertFile=server.pem", "IceSSL.KeyFile=server_key.pem"])
        .await
        .unwrap();
    let c = client(&["IceSSL.CertFile=client.p12", "IceSSL.Password=password"]);
    assert!(call(&c, &proxy).await.unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_server_certificate_is_a_security_error() {
    let (_s, proxy) = server(
        "ssl -h 127.0.0.1 -p 0",
        &["IceSSL.CertFile=untrusted.pem", "IceSSL.KeyFile=untrusted_key.pem", "IceSSL.VerifyPeer=0"],
    )
    .await
    .unwrap();
    let got = call(&client(CLIENT_PEM), &proxy).await;
    assert!(matches!(got, Err(Error::Security(_))), "{got:?}");
    // With VerifyPeer=0 the client accepts it.
    assert_eq!(call(&client(&["IceSSL.VerifyPeer=0"]), &proxy).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn untrusted_client_is_refused_and_others_still_served() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let bad = client(&["IceSSL.CertFile=untrusted.pem", "IceSSL.KeyFile=untrusted_key.pem"]);
    for _ in 0..3 {
        let got = call(&bad, &proxy).await;
        assert!(matches!(got, Err(Error::Security(_))), "{got:?}");
    }
    assert!(call(&client(CLIENT_PEM), &proxy).await.unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_peer_2_requires_a_client_certificate_and_1_does_not() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let got = call(&client(&[]), &proxy).await;
    assert!(matches!(got, Err(Error::Security(_))), "{got:?}");

    let (_s1, proxy1) = server("ssl -h 127.0.0.1 -p 0", &both(SERVER_P12, &["IceSSL.VerifyPeer=1"])).await.unwrap();
    assert_eq!(call(&client(&[]), &proxy1).await.unwrap(), 0);
    assert!(call(&client(CLIENT_PEM), &proxy1).await.unwrap() >= 1);
    // VerifyPeer=1 still verifies a certificate that is sent.
    let bad = client(&["IceSSL.CertFile=untrusted.pem", "IceSSL.KeyFile=untrusted_key.pem"]);
    assert!(matches!(call(&bad, &proxy1).await, Err(Error::Security(_))));

    let (_s0, proxy0) = server("ssl -h 127.0.0.1 -p 0", &both(SERVER_P12, &["IceSSL.VerifyPeer=0"])).await.unwrap();
    assert_eq!(call(&client(CLIENT_PEM), &proxy0).await.unwrap(), 0, "no certificate asked for");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_cert_name_rejects_a_host_the_certificate_does_not_name() {
    // 127.0.0.2 is loopback too, but the certificate names only localhost and 127.0.0.1.
    let Ok((_s, proxy)) = server("ssl -h 127.0.0.2 -p 0", SERVER_P12).await else {
        eprintln!("127.0.0.2 cannot be bound here: skipped");
        return;
    };
    let got = call(&client(&both(CLIENT_PEM, &["IceSSL.CheckCertName=1"])), &proxy).await;
    assert!(matches!(got, Err(Error::Security(_))), "{got:?}");
    // Ice's default, CheckCertName=0, verifies the chain only.
    assert!(call(&client(CLIENT_PEM), &proxy).await.unwrap() >= 1);
    // And the right name passes the check.
    let (_s2, good) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    assert!(call(&client(&both(CLIENT_PEM, &["IceSSL.CheckCertName=1"])), &good).await.unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_depth_max_limits_the_chain() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let got = call(&client(&both(CLIENT_PEM, &["IceSSL.VerifyDepthMax=1"])), &proxy).await;
    assert!(matches!(got, Err(Error::Security(_))), "{got:?}");
    assert!(call(&client(&both(CLIENT_PEM, &["IceSSL.VerifyDepthMax=2"])), &proxy).await.unwrap() >= 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocols_and_missing_properties_are_clear_errors() {
    let got = server("ssl -h 127.0.0.1 -p 0", &both(SERVER_P12, &["IceSSL.Protocols=tls1_0"])).await;
    assert!(matches!(got, Err(Error::Property { ref name, .. }) if name == "IceSSL.Protocols"), "{got:?}");
    let got = server("ssl -h 127.0.0.1 -p 0", &[]).await;
    assert!(matches!(got, Err(Error::Property { ref name, .. }) if name == "IceSSL.CertFile"), "{got:?}");
    let got = server("ssl -h 127.0.0.1 -p 0", &["IceSSL.CertFile=server.p12", "IceSSL.Password=wrong"]).await;
    assert!(matches!(got, Err(Error::Property { .. })), "{got:?}");

    // TLS 1.2 only on the server: a default client still connects.
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", &both(SERVER_P12, &["IceSSL.Protocols=tls1_2"])).await.unwrap();
    assert!(call(&client(CLIENT_PEM), &proxy).await.unwrap() >= 1);
    // A client without CAs cannot verify the server.
    let bare = Communicator::with_properties(Properties::new()).unwrap();
    let got = call(&bare, &proxy).await;
    assert!(matches!(got, Err(Error::Security(_))), "{got:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ws_and_wss_round_trips() {
    let (_s, proxy) = server("ws -h 127.0.0.1 -p 0 -r /floe", &[]).await.unwrap();
    assert!(proxy.to_string().contains("-r /floe"), "{proxy}");
    let c = client(&[]);
    for _ in 0..3 {
        assert_eq!(call(&c, &proxy).await.unwrap(), 0);
    }
    let plain = c.string_to_proxy(&proxy.to_string()).unwrap().ice_get_connection().await.unwrap();
    assert_eq!(plain.cipher(), None, "ws is not encrypted");
    let (_s2, proxy2) = server("wss -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let c2 = client(CLIENT_PEM);
    assert!(call(&c2, &proxy2).await.unwrap() >= 1);
    let conn = c2.string_to_proxy(&proxy2.to_string()).unwrap().ice_get_connection().await.unwrap();
    assert!(!conn.peer_certificates().is_empty());
    assert!(conn.cipher().is_some());
    // Closing gracefully exchanges close frames and leaves nothing behind.
    c.destroy().await;
    c2.destroy().await;
}

/// Sends `request` on a raw connection to `port` and tells whether the server closed it
/// (within 5 s) without ever sending an Ice message.
fn refused(port: u16, request: &[u8]) -> bool {
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let _ = s.write_all(request);
    let mut got = Vec::new();
    let mut b = [0u8; 512];
    loop {
        match s.read(&mut b) {
            Ok(0) => break,
            Ok(n) => got.extend_from_slice(&b[..n]),
            Err(_) => break,
        }
    }
    !got.windows(4).any(|w| w == b"IceP") && !got.starts_with(b"HTTP/1.1 101")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_ws_upgrades_close_only_their_connection() {
    let (_s, proxy) = server("ws -h 127.0.0.1 -p 0", &[]).await.unwrap();
    let port = proxy.to_string().split("-p ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let c = client(&[]);
    assert_eq!(call(&c, &proxy).await.unwrap(), 0);
    let oversized = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(20_000));
    let bad: Vec<Vec<u8>> = vec![
        b"garbage garbage\r\n\r\n".to_vec(),
        b"\x00\x01\x02\x03\r\n\r\n".to_vec(),
        b"POST / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: AAAAAAAAAAAAAAAAAAAAAA==\r\n\r\n".to_vec(),
        b"GET / HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\n\r\n".to_vec(),
        oversized.into_bytes(),
    ];
    let results =
        tokio::task::spawn_blocking(move || bad.iter().map(|r| refused(port, r)).collect::<Vec<_>>()).await.unwrap();
    assert!(results.iter().all(|r| *r), "{results:?}");
    // The established connection and new ones are still served.
    assert_eq!(call(&c, &proxy).await.unwrap(), 0);
    assert_eq!(call(&client(&[]), &proxy).await.unwrap(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ssl_server_survives_garbage_and_silence() {
    let (_s, proxy) = server("ssl -h 127.0.0.1 -p 0", SERVER_P12).await.unwrap();
    let port: u16 = proxy.to_string().split("-p ").nth(1).unwrap().split_whitespace().next().unwrap().parse().unwrap();
    let results = tokio::task::spawn_blocking(move || {
        // A silent peer holds only its own connection while the next ones are served.
        let _silent = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
        refused(port, b"GET / HTTP/1.1\r\n\r\n")
    })
    .await
    .unwrap();
    assert!(results);
    assert!(call(&client(CLIENT_PEM), &proxy).await.unwrap() >= 1);
}
