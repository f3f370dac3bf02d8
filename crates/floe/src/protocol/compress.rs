//! bzip2 compression of whole messages, with Ice's rules.
//!
//! A compressed message keeps its 14-byte header (with compression status 2 and the size of
//! the compressed message), followed by the int32 size of the uncompressed message (header
//! included) and the bzip2 stream of the uncompressed body.

use bytes::{BufMut, BytesMut};
use bzip2::{Action, Compress, Compression, Decompress, Status};

use super::header::{patch_size, CompressionStatus, HEADER_SIZE};
use super::ProtocolError;

/// Messages smaller than this are never compressed.
pub const MIN_COMPRESS_SIZE: usize = 100;

/// Compresses a complete message (header included) with bzip2 block size `level` (1–9,
/// `Ice.Compression.Level`). Returns `None` when the message is below
/// [`MIN_COMPRESS_SIZE`], in which case it is sent as it is.
pub fn compress_message(message: &[u8], level: u32) -> Option<BytesMut> {
    if message.len() < MIN_COMPRESS_SIZE {
        return None;
    }
    let body = &message[HEADER_SIZE..];
    let capacity = body.len() + body.len() / 100 + 600;
    let mut out: Vec<u8> = Vec::with_capacity(HEADER_SIZE + 4 + capacity);
    out.extend_from_slice(&message[..HEADER_SIZE]);
    out.extend_from_slice(&(message.len() as i32).to_le_bytes());
    let mut compressor = Compress::new(Compression::new(level.clamp(1, 9)), 0);
    loop {
        let consumed = compressor.total_in() as usize;
        match compressor.compress_vec(&body[consumed..], &mut out, Action::Finish) {
            Ok(Status::StreamEnd) => break,
            Ok(_) => out.reserve(out.capacity().max(1024)),
            // The compressor only fails on misuse of its API, never because of the data.
            Err(_) => return None,
        }
    }
    super::header::set_compression(&mut out, CompressionStatus::Compressed);
    let size = out.len();
    patch_size(&mut out, size);
    Some(BytesMut::from(&out[..]))
}

/// Decompresses a complete compressed message (header included). The announced
/// uncompressed size must be above 14 and at most `max_size`; the output is never allowed to
/// grow past it. The returned message has its header's size field set to the uncompressed
/// size and keeps compression status 2, so the receiver knows a compressed reply is welcome.
pub fn decompress_message(message: &[u8], max_size: usize) -> Result<BytesMut, ProtocolError> {
    if message.len() < HEADER_SIZE + 4 {
        return Err(ProtocolError::Compression("compressed message without uncompressed size".into()));
    }
    let announced = i32::from_le_bytes([message[14], message[15], message[16], message[17]]);
    if announced <= HEADER_SIZE as i32 {
        return Err(ProtocolError::Compression(format!("uncompressed size {announced} is too small")));
    }
    let announced = announced as usize;
    if announced > max_size {
        return Err(ProtocolError::MessageTooLarge { size: announced, max: max_size });
    }
    let body_len = announced - HEADER_SIZE;
    let mut out: Vec<u8> = Vec::with_capacity(body_len);
    let mut decompressor = Decompress::new(false);
    let input = &message[HEADER_SIZE + 4..];
    let status = decompressor
        .decompress_vec(input, &mut out)
        .map_err(|e| ProtocolError::Compression(format!("corrupt bzip2 data: {e}")))?;
    if status != Status::StreamEnd {
        let reason = if out.len() >= body_len {
            "bzip2 data holds more than the announced size"
        } else {
            "bzip2 data ends before the announced size"
        };
        return Err(ProtocolError::Compression(reason.into()));
    }
    if out.len() != body_len {
        return Err(ProtocolError::Compression(format!(
            "bzip2 data holds {} bytes, {} announced",
            out.len(),
            body_len
        )));
    }
    let mut result = BytesMut::with_capacity(announced);
    result.put_slice(&message[..HEADER_SIZE]);
    result.put_slice(&out);
    patch_size(&mut result, announced);
    Ok(result)
}
