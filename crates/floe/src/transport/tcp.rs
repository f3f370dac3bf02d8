//! TCP, over IPv4 and IPv6.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};

use super::TransportStream;
use crate::error::{Error, Result};

fn wrap(stream: TcpStream) -> TransportStream {
    let _ = stream.set_nodelay(true);
    let description = match (stream.local_addr(), stream.peer_addr()) {
        (Ok(l), Ok(r)) => format!("local address = {l}\nremote address = {r}"),
        _ => "tcp".to_string(),
    };
    let (read, write) = stream.into_split();
    TransportStream { read: Box::new(read), write: Box::new(write), description }
}

/// Connects to `host:port`, giving up after `timeout` (if any).
pub async fn connect(host: &str, port: u16, timeout: Option<Duration>) -> Result<TransportStream> {
    let host = if host.is_empty() || host == "*" || host == "0.0.0.0" { "127.0.0.1" } else { host };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let endpoint = format!("tcp -h {host} -p {port}");
    let fut = TcpStream::connect((host, port));
    let stream = match timeout {
        Some(t) => tokio::time::timeout(t, fut).await.map_err(|_| Error::ConnectFailed {
            endpoint: endpoint.clone(),
            reason: format!("timed out after {t:?}"),
        })?,
        None => fut.await,
    }
    .map_err(|e| Error::ConnectFailed { endpoint, reason: e.to_string() })?;
    Ok(wrap(stream))
}

/// Binds a listening socket for `host:port` (`*` or empty host: all IPv4 interfaces;
/// port 0: an ephemeral port).
pub async fn bind(host: &str, port: u16) -> Result<TcpListener> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    TcpListener::bind((host, port)).await.map_err(|e| Error::Adapter(format!("cannot bind {host}:{port}: {e}")))
}

/// Accepts one connection.
pub async fn accept(listener: &TcpListener) -> std::io::Result<(TransportStream, SocketAddr)> {
    let (s, addr) = listener.accept().await?;
    Ok((wrap(s), addr))
}
