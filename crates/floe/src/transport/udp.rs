//! UDP, the datagram transport: each datagram is one whole Ice message (a oneway request or a
//! batch of them); nothing is answered. Object adapters receive on `udp` endpoints; datagram
//! proxies (`ice_datagram`, `ice_batchDatagram`) send through a socket connected to one.

use std::net::SocketAddr;

use bytes::BytesMut;
use tokio::net::UdpSocket;
use tracing::debug;

use crate::error::{Error, Result};
use crate::protocol::{BatchRequests, FrameReader, MessageType, Request};

/// The largest datagram (the UDP payload limit).
pub const MAX_DATAGRAM: usize = 65507;

/// Binds a UDP socket for `host:port` (`*` or empty host: all IPv4 interfaces; port 0: an
/// ephemeral port). Synchronous, like [`super::tcp::bind`]: it must run in the context of a
/// tokio runtime.
pub fn bind(host: &str, port: u16) -> Result<UdpSocket> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    let fail = |e: std::io::Error| Error::Adapter(format!("cannot bind udp {host}:{port}: {e}"));
    let socket = std::net::UdpSocket::bind((host, port)).map_err(fail)?;
    socket.set_nonblocking(true).map_err(fail)?;
    UdpSocket::from_std(socket).map_err(fail)
}

/// The largest datagram sent to `addr`: what one IP packet carries after the IP and UDP
/// headers (65,507 bytes over IPv4, 65,487 over IPv6), as Ice limits it; a larger request
/// fails with [`Error::DatagramLimit`].
pub fn max_datagram_to(addr: &SocketAddr) -> usize {
    if addr.is_ipv4() {
        65_535 - 20 - 8
    } else {
        65_535 - 40 - 8
    }
}

/// A UDP socket bound to an ephemeral port and connected to `host:port`, for sending
/// datagrams there.
pub async fn connect(host: &str, port: u16) -> Result<UdpSocket> {
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let host = if host.is_empty() { "127.0.0.1" } else { host };
    let fail = |e: std::io::Error| Error::ConnectFailed {
        endpoint: format!("udp -h {host} -p {port}"),
        reason: e.to_string(),
    };
    let addr = tokio::net::lookup_host((host, port))
        .await
        .map_err(fail)?
        .next()
        .ok_or_else(|| fail(std::io::Error::new(std::io::ErrorKind::NotFound, "no address")))?;
    let local: SocketAddr =
        if addr.is_ipv4() { ([0, 0, 0, 0], 0).into() } else { (std::net::Ipv6Addr::UNSPECIFIED, 0).into() };
    let socket = UdpSocket::bind(local).await.map_err(fail)?;
    socket.connect(addr).await.map_err(fail)?;
    Ok(socket)
}

/// Sends one whole message as a datagram on a connected socket.
pub async fn send(socket: &UdpSocket, message: &[u8]) -> Result<()> {
    let peer = socket.peer_addr().map_err(|e| Error::Io(e.to_string()))?;
    let max = max_datagram_to(&peer);
    if message.len() > max {
        return Err(Error::DatagramLimit { size: message.len(), max });
    }
    let sent = socket.send(message).await.map_err(|e| Error::ConnectionLost(format!("udp send to {peer}: {e}")))?;
    if sent != message.len() {
        return Err(Error::ConnectionLost(format!("udp send to {peer}: {sent} of {} bytes sent", message.len())));
    }
    Ok(())
}

/// Receives one datagram and returns the requests it carries. Datagrams that are not a whole,
/// valid request or batch (or that carry a twoway request, which cannot be answered) are
/// dropped: `Ok(None)`.
pub async fn receive(
    socket: &UdpSocket,
    frames: &FrameReader,
    buf: &mut [u8],
) -> std::io::Result<Option<(SocketAddr, Vec<Request>)>> {
    let (n, from) = socket.recv_from(buf).await?;
    let mut bytes = BytesMut::from(&buf[..n]);
    let message = match frames.next_message(&mut bytes) {
        Ok(Some(m)) if bytes.is_empty() => m,
        Ok(_) => {
            debug!(target: "floe::network", "udp: incomplete or oversized datagram of {n} bytes from {from} dropped");
            return Ok(None);
        }
        Err(e) => {
            debug!(target: "floe::network", "udp: bad datagram from {from} dropped: {e}");
            return Ok(None);
        }
    };
    let requests = match message.header.message_type {
        MessageType::Request => Request::decode(message.body).map(|r| vec![r]).map_err(|e| e.to_string()),
        MessageType::BatchRequest => match BatchRequests::new(message.body) {
            Ok(batch) => batch.collect::<std::result::Result<Vec<_>, _>>().map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        },
        other => Err(format!("{other:?} messages are not used over udp")),
    };
    match requests {
        Ok(r) if r.iter().all(|r| r.request_id == 0) => Ok(Some((from, r))),
        Ok(_) => {
            debug!(target: "floe::network", "udp: twoway request from {from} dropped (datagrams get no reply)");
            Ok(None)
        }
        Err(e) => {
            debug!(target: "floe::network", "udp: datagram from {from} dropped: {e}");
            Ok(None)
        }
    }
}
