//! Cutting a byte stream into messages.

use bytes::{Bytes, BytesMut};

use super::compress::decompress_message;
use super::header::{CompressionStatus, Header, HEADER_SIZE};
use super::ProtocolError;

/// One complete message read from a stream, decompressed if it was compressed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The header (its `size` is that of the uncompressed message; `compression` is as sent).
    pub header: Header,
    /// Everything after the 14-byte header.
    pub body: Bytes,
}

/// Reads messages from a growing receive buffer. The header is validated — magic, versions,
/// type, and size against `Ice.MessageSizeMax` — before any room is reserved for the body,
/// so a hostile size never causes an allocation.
#[derive(Debug, Clone, Copy)]
pub struct FrameReader {
    max_message_size: usize,
}

impl FrameReader {
    /// A reader that accepts messages of at most `max_message_size` bytes (compressed or not).
    pub fn new(max_message_size: usize) -> Self {
        FrameReader { max_message_size: max_message_size.max(HEADER_SIZE) }
    }

    /// The limit in force.
    pub fn max_message_size(&self) -> usize {
        self.max_message_size
    }

    /// Looks at the start of `buf`: `Ok(Some(header))` once a valid header is there,
    /// `Ok(None)` while fewer than 14 bytes are buffered.
    pub fn peek_header(&self, buf: &[u8]) -> Result<Option<Header>, ProtocolError> {
        if buf.len() < HEADER_SIZE {
            return Ok(None);
        }
        let bytes: &[u8; HEADER_SIZE] = buf[..HEADER_SIZE].try_into().expect("length checked");
        Header::parse(bytes, self.max_message_size).map(Some)
    }

    /// How many more bytes `buf` needs before [`FrameReader::next_message`] can return a
    /// message (0 when one is complete).
    pub fn bytes_needed(&self, buf: &[u8]) -> Result<usize, ProtocolError> {
        match self.peek_header(buf)? {
            None => Ok(HEADER_SIZE - buf.len()),
            Some(h) => Ok(h.size.saturating_sub(buf.len())),
        }
    }

    /// Whether `buf` starts with a complete message (its header announces no more bytes than
    /// `buf` holds); says nothing of its validity.
    pub fn complete_message_in(&self, buf: &[u8]) -> bool {
        buf.len() >= HEADER_SIZE && super::header::announced_size(buf).is_some_and(|n| n <= buf.len())
    }

    /// Splits the next complete message off the front of `buf`. Returns `Ok(None)` when more
    /// bytes are needed (having reserved exactly the room the announced size needs).
    pub fn next_message(&self, buf: &mut BytesMut) -> Result<Option<Message>, ProtocolError> {
        let Some(header) = self.peek_header(buf)? else {
            return Ok(None);
        };
        if buf.len() < header.size {
            buf.reserve(header.size - buf.len());
            return Ok(None);
        }
        let raw = buf.split_to(header.size).freeze();
        if header.compression == CompressionStatus::Compressed {
            let plain = decompress_message(&raw, self.max_message_size)?.freeze();
            let header = Header { size: plain.len(), ..header };
            return Ok(Some(Message { header, body: plain.slice(HEADER_SIZE..) }));
        }
        // Moved past the header rather than sliced: no reference count to change.
        let mut body = raw;
        bytes::Buf::advance(&mut body, HEADER_SIZE);
        Ok(Some(Message { header, body }))
    }
}
