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

/// Offset of the message-type byte in the header.
const MESSAGE_TYPE_AT: usize = 8;
/// Offset of the compression byte in the header.
const COMPRESSION_AT: usize = 9;
/// Offset of the 4-byte little-endian message size in the header.
const SIZE_AT: usize = 10;

/// Writes `size` into the size field of a message that starts at `message[0]`.
#[inline]
pub fn patch_size(message: &mut [u8], size: usize) {
    message[SIZE_AT..SIZE_AT + 4].copy_from_slice(&(size as i32).to_le_bytes());
}

/// The message-type byte of an encoded message, unchecked (`None` when `message` is shorter
/// than a header): for messages this process built, whose header is known to be valid.
#[inline]
pub fn message_type_byte(message: &[u8]) -> Option<u8> {
    if message.len() < HEADER_SIZE {
        return None;
    }
    Some(message[MESSAGE_TYPE_AT])
}

/// True when `message` is an encoded Request message (not a batch, a reply or a control
/// message).
#[inline]
pub fn is_request(message: &[u8]) -> bool {
    message_type_byte(message) == Some(MessageType::Request as u8)
}

/// The size an encoded message's header announces, unchecked (`None` when `message` is
/// shorter than a header; a negative size reads as 0).
#[inline]
pub fn announced_size(message: &[u8]) -> Option<usize> {
    let s = message.get(SIZE_AT..SIZE_AT + 4)?;
    Some(i32::from_le_bytes([s[0], s[1], s[2], s[3]]).max(0) as usize)
}

/// Sets the compression byte of an encoded message.
///
/// # Panics
///
/// If `message` is shorter than a header.
#[inline]
pub fn set_compression(message: &mut [u8], status: CompressionStatus) {
    message[COMPRESSION_AT] = status as u8;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_fields_are_read_and_written_where_the_wire_has_them() {
        let mut m = Header::bytes(MessageType::Request, CompressionStatus::NotCompressed, 20).to_vec();
        m.extend_from_slice(&[0; 6]);
        assert_eq!(message_type_byte(&m), Some(0));
        assert!(is_request(&m));
        assert_eq!(announced_size(&m), Some(20));
        patch_size(&mut m, 300);
        set_compression(&mut m, CompressionStatus::CompressedReplyAccepted);
        let parsed = Header::parse(m[..HEADER_SIZE].try_into().unwrap(), 1 << 20).unwrap();
        assert_eq!(parsed.size, 300);
        assert_eq!(parsed.compression, CompressionStatus::CompressedReplyAccepted);
        assert!(!is_request(&VALIDATE_CONNECTION));
        assert_eq!(message_type_byte(&[0; 13]), None);
        assert_eq!(announced_size(&[0; 13]), None);
        let mut negative = VALIDATE_CONNECTION;
        negative[SIZE_AT + 3] = 0x80;
        assert_eq!(announced_size(&negative), Some(0));
    }
}
