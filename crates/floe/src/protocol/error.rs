//! [`ProtocolError`]: why a message could not be framed, decompressed or parsed.

use thiserror::Error;

use crate::encoding::DecodeError;

/// Why a message could not be framed, decompressed or parsed. Each of these closes the
/// connection it arrived on (except a request whose parameters do not decode, which is
/// answered with an error reply by the layers above).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// The first four bytes are not `IceP`.
    #[error("bad magic {0:02x?} (expected \"IceP\")")]
    BadMagic([u8; 4]),
    /// A protocol version other than 1.0.
    #[error("unsupported protocol {major}.{minor}")]
    UnsupportedProtocol {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// A protocol encoding other than 1.0.
    #[error("unsupported protocol encoding {major}.{minor}")]
    UnsupportedProtocolEncoding {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// A message type above 4.
    #[error("unknown message type {0}")]
    UnknownMessageType(u8),
    /// A compression status above 2.
    #[error("invalid compression status {0}")]
    InvalidCompressionStatus(u8),
    /// A message size below the 14-byte header.
    #[error("illegal message size {0} (below the 14-byte header)")]
    MessageTooSmall(i32),
    /// A message larger than `Ice.MessageSizeMax`.
    #[error("message of {size} bytes exceeds Ice.MessageSizeMax ({max} bytes)")]
    MessageTooLarge {
        /// Announced size.
        size: usize,
        /// Limit in force.
        max: usize,
    },
    /// A validate-connection or close-connection message with a body.
    #[error("{kind} message of {size} bytes (must be 14)")]
    HeaderOnlyMessageWithBody {
        /// Which message.
        kind: &'static str,
        /// Its size.
        size: usize,
    },
    /// A compressed message whose bzip2 data is corrupt or does not match its announced size.
    #[error("bad compressed message: {0}")]
    Compression(String),
    /// A batch request with a negative or impossible count.
    #[error("invalid batch request count {0}")]
    InvalidBatchCount(i32),
    /// A reply status that [`ReplyStatus::from_u8`](super::ReplyStatus::from_u8) does not
    /// name (above 10); reply decoding reads every status from 8 on with its message instead.
    #[error("unknown reply status {0}")]
    UnknownReplyStatus(u8),
    /// An operation mode above 2.
    #[error("invalid operation mode {0}")]
    InvalidOperationMode(u8),
    /// The body of a message does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
}
