//! UDP, the datagram transport: each datagram is one whole Ice message (a oneway request or a
//! batch of them); nothing is answered. This side receives, for object adapters listening on
//! `udp` endpoints.

use std::net::SocketAddr;

use bytes::BytesMut;
use tokio::net::UdpSocket;
use tracing::debug;

use crate::error::{Error, Result};
use crate::protocol::{BatchRequests, FrameReader, MessageType, Request};

/// The largest datagram (the UDP payload limit).
pub const MAX_DATAGRAM: usize = 65507;

/// Binds a UDP socket for `host:port` (`*` or empty host: all IPv4 interfaces; port 0: an
/// ephemeral port).
pub async fn bind(host: &str, port: u16) -> Result<UdpSocket> {
    let host = match host {
        "" | "*" => "0.0.0.0",
        h => h.trim_start_matches('[').trim_end_matches(']'),
    };
    UdpSocket::bind((host, port)).await.map_err(|e| Error::Adapter(format!("cannot bind udp {host}:{port}: {e}")))
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
