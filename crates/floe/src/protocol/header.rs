//! The 14-byte message header.

use super::ProtocolError;

/// `'I' 'c' 'e' 'P'`.
pub const MAGIC: [u8; 4] = *b"IceP";

/// Size of the message header; the smallest legal message.
pub const HEADER_SIZE: usize = 14;

/// The message types of protocol 1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum MessageType {
    /// A request.
    Request = 0,
    /// Several requests without replies.
    BatchRequest = 1,
    /// The reply to a twoway request.
    Reply = 2,
    /// Sent by a server after accepting a connection; also the heartbeat.
    ValidateConnection = 3,
    /// Graceful close.
    CloseConnection = 4,
}

impl MessageType {
    /// Maps the wire byte.
    pub fn from_u8(v: u8) -> Result<Self, ProtocolError> {
        Ok(match v {
            0 => MessageType::Request,
            1 => MessageType::BatchRequest,
            2 => MessageType::Reply,
            3 => MessageType::ValidateConnection,
            4 => MessageType::CloseConnection,
            v => return Err(ProtocolError::UnknownMessageType(v)),
        })
    }
}

/// The compression byte of the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[repr(u8)]
pub enum CompressionStatus {
    /// Not compressed, and the sender cannot take a compressed reply.
    #[default]
    NotCompressed = 0,
    /// Not compressed, but a reply may be compressed.
    CompressedReplyAccepted = 1,
    /// The body is bzip2-compressed.
    Compressed = 2,
}

impl CompressionStatus {
    /// Maps the wire byte.
    pub fn from_u8(v: u8) -> Result<Self, ProtocolError> {
        Ok(match v {
            0 => CompressionStatus::NotCompressed,
            1 => CompressionStatus::CompressedReplyAccepted,
            2 => CompressionStatus::Compressed,
            v => return Err(ProtocolError::InvalidCompressionStatus(v)),
        })
    }
}

/// A parsed, validated message header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// The message type.
    pub message_type: MessageType,
    /// The compression byte.
    pub compression: CompressionStatus,
    /// Size of the whole message, header included, as announced.
    pub size: usize,
}

impl Header {
    /// Parses and validates the first 14 bytes of a message against `max_size`
    /// (`Ice.MessageSizeMax`).
    pub fn parse(bytes: &[u8; HEADER_SIZE], max_size: usize) -> Result<Header, ProtocolError> {
        let magic = [bytes[0], bytes[1], bytes[2], bytes[3]];
        if magic != MAGIC {
            return Err(ProtocolError::BadMagic(magic));
        }
        if bytes[4] != 1 || bytes[5] != 0 {
            return Err(ProtocolError::UnsupportedProtocol { major: bytes[4], minor: bytes[5] });
        }
        if bytes[6] != 1 || bytes[7] != 0 {
            return Err(ProtocolError::UnsupportedProtocolEncoding { major: bytes[6], minor: bytes[7] });
        }
        let message_type = MessageType::from_u8(bytes[8])?;
        let compression = CompressionStatus::from_u8(bytes[9])?;
        let size = i32::from_le_bytes([bytes[10], bytes[11], bytes[12], bytes[13]]);
        if size < HEADER_SIZE as i32 {
            return Err(ProtocolError::MessageTooSmall(size));
        }
        let size = size as usize;
        if size > max_size {
            return Err(ProtocolError::MessageTooLarge { size, max: max_size });
        }
        if matches!(message_type, MessageType::ValidateConnection | MessageType::CloseConnection) && size != HEADER_SIZE
        {
            let kind = if message_type == MessageType::ValidateConnection {
                "validate connection"
            } else {
                "close connection"
            };
            return Err(ProtocolError::HeaderOnlyMessageWithBody { kind, size });
        }
        Ok(Header { message_type, compression, size })
    }

    /// The 14 header bytes for a message of this type, compression byte and total size.
    #[inline]
    pub fn bytes(message_type: MessageType, compression: CompressionStatus, size: usize) -> [u8; HEADER_SIZE] {
        let s = (size as i32).to_le_bytes();
        [b'I', b'c', b'e', b'P', 1, 0, 1, 0, message_type as u8, compression as u8, s[0], s[1], s[2], s[3]]
    }
}

/// The ValidateConnection message (also the ACM heartbeat).
pub const VALIDATE_CONNECTION: [u8; HEADER_SIZE] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 3, 0, 14, 0, 0, 0];

/// The CloseConnection message, with compression byte 1 as Ice sends it.
pub const CLOSE_CONNECTION: [u8; HEADER_SIZE] = [b'I', b'c', b'e', b'P', 1, 0, 1, 0, 4, 1, 14, 0, 0, 0];

/// Writes `size` into the size field of a message that starts at `message[0]`.
#[inline]
pub fn patch_size(message: &mut [u8], size: usize) {
    message[10..14].copy_from_slice(&(size as i32).to_le_bytes());
}
