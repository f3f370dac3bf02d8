//! The [`Decoder`]: reads Slice values from a byte buffer, with the encapsulation, slice and
//! optional-member framing of both encodings.

use bytes::Bytes;

use super::error::{DecodeError, Result};
use super::exception::SliceHeader;
use super::{slice_flags, EncodingVersion, OptionalFormat, OPTIONAL_END_MARKER};

/// Reads Slice values from a byte buffer.
///
/// The decoder works over a [`Bytes`] so that byte sequences can be handed out as zero-copy
/// views of the receive buffer. Every read checks the bounds of the buffer and of the
/// innermost open encapsulation, and returns a [`DecodeError`] instead of panicking.
#[derive(Debug, Clone)]
pub struct Decoder {
    buf: Bytes,
    pos: usize,
    end: usize,
    encoding: EncodingVersion,
    /// Open encapsulations, innermost last: two are kept inline, so that decoding a request
    /// or a reply allocates nothing for them.
    encaps: smallvec::SmallVec<[OpenEncapsulation; 2]>,
    slice: Option<OpenSlice>,
    context: Option<DecoderContext>,
    pub(super) classes: Option<Box<super::class::ClassReadState>>,
    pub(super) accept_class_cycles: bool,
    pub(super) class_graph_depth_max: usize,
    pub(super) value_factories: Option<std::sync::Arc<super::class::ValueFactories>>,
    /// Slices of unknown exception types skipped so far (1.1), for preserving exceptions.
    skipped_exception_slices: Vec<super::class::SliceInfo>,
}

/// Something the layers above attach to a decoder so that values needing more than bytes can
/// be built (proxies need their communicator). The encoding layer never looks inside.
pub type DecoderContext = std::sync::Arc<dyn std::any::Any + Send + Sync>;

#[derive(Debug, Clone, Copy)]
struct OpenEncapsulation {
    outer_end: usize,
    outer_encoding: EncodingVersion,
}

#[derive(Debug, Clone, Copy)]
struct OpenSlice {
    flags: u8,
    end: Option<usize>,
    /// Where the slice's members start.
    start: usize,
    /// The slice has an indirection table (read when first needed).
    table: bool,
}

impl Decoder {
    /// A decoder over `buf` with the given (outer) encoding.
    pub fn new(buf: Bytes, encoding: EncodingVersion) -> Self {
        let end = buf.len();
        Decoder {
            buf,
            pos: 0,
            end,
            encoding,
            encaps: smallvec::SmallVec::new(),
            slice: None,
            context: None,
            classes: None,
            accept_class_cycles: false,
            class_graph_depth_max: super::class::CLASS_GRAPH_DEPTH_MAX,
            value_factories: None,
            skipped_exception_slices: Vec::new(),
        }
    }

    /// Attaches a context (see [`DecoderContext`]).
    pub fn with_context(mut self, context: Option<DecoderContext>) -> Self {
        self.context = context;
        self
    }

    /// The attached context, if any.
    pub fn context(&self) -> Option<&DecoderContext> {
        self.context.as_ref()
    }

    /// A decoder over a copy of `data` (for tests and one-off decoding).
    pub fn from_slice(data: &[u8], encoding: EncodingVersion) -> Self {
        Self::new(Bytes::copy_from_slice(data), encoding)
    }

    /// The encoding of the innermost open encapsulation.
    #[inline]
    pub fn encoding(&self) -> EncodingVersion {
        self.encoding
    }

    /// Current read position from the start of the buffer.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Bytes left before the end of the buffer or of the innermost encapsulation.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.end - self.pos
    }

    /// True when nothing is left to read in the current scope.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.pos >= self.end
    }

    /// The whole underlying buffer.
    #[inline]
    pub fn buffer(&self) -> &Bytes {
        &self.buf
    }

    /// Fails with an out-of-bounds error unless `n` bytes remain.
    #[inline]
    fn need(&self, n: usize, what: &'static str) -> Result<()> {
        if self.end - self.pos < n {
            return Err(DecodeError::OutOfBounds { what, needed: n, remaining: self.end - self.pos });
        }
        Ok(())
    }

    #[inline]
    fn take<const N: usize>(&mut self, what: &'static str) -> Result<[u8; N]> {
        self.need(N, what)?;
        let mut out = [0u8; N];
        out.copy_from_slice(&self.buf[self.pos..self.pos + N]);
        self.pos += N;
        Ok(out)
    }

    /// Reads `n` raw bytes as a slice of the buffer.
    #[inline]
    pub fn read_raw(&mut self, n: usize) -> Result<&[u8]> {
        self.need(n, "raw bytes")?;
        let start = self.pos;
        self.pos += n;
        Ok(&self.buf[start..start + n])
    }

    /// Reads `n` raw bytes as a zero-copy [`Bytes`] view.
    #[inline]
    pub fn read_raw_bytes(&mut self, n: usize) -> Result<Bytes> {
        self.need(n, "raw bytes")?;
        let start = self.pos;
        self.pos += n;
        Ok(self.view(start, n))
    }

    /// `n` bytes of the buffer from `start` (checked by the caller), sharing it. Built inline
    /// (clone, truncate, advance) rather than with the out-of-line `Bytes::slice`, whose
    /// result would be written to memory and read back wider than written — a store-forwarding
    /// stall on every request decoded.
    #[inline(always)]
    pub(crate) fn view(&self, start: usize, n: usize) -> Bytes {
        if n == 0 {
            return Bytes::new();
        }
        let mut view = self.buf.clone();
        view.truncate(start + n);
        bytes::Buf::advance(&mut view, start);
        view
    }

    /// Skips `n` bytes.
    #[inline]
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.need(n, "skipped bytes")?;
        self.pos += n;
        Ok(())
    }

    /// Moves to an absolute position within the current encapsulation.
    pub(crate) fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.end {
            return Err(DecodeError::Malformed("position past the end of the encapsulation"));
        }
        self.pos = pos;
        Ok(())
    }

    /// Reads a byte.
    #[inline]
    pub fn read_u8(&mut self) -> Result<u8> {
        self.need(1, "byte")?;
        let v = self.buf[self.pos];
        self.pos += 1;
        Ok(v)
    }

    /// Reads a bool (any non-zero byte is true, as in Ice).
    #[inline]
    pub fn read_bool(&mut self) -> Result<bool> {
        Ok(self.read_u8()? != 0)
    }

    /// Reads a short.
    #[inline]
    pub fn read_i16(&mut self) -> Result<i16> {
        Ok(i16::from_le_bytes(self.take("short")?))
    }

    /// Reads an int.
    #[inline]
    pub fn read_i32(&mut self) -> Result<i32> {
        Ok(i32::from_le_bytes(self.take("int")?))
    }

    /// Reads a long.
    #[inline]
    pub fn read_i64(&mut self) -> Result<i64> {
        Ok(i64::from_le_bytes(self.take("long")?))
    }

    /// Reads a float.
    #[inline]
    pub fn read_f32(&mut self) -> Result<f32> {
        Ok(f32::from_le_bytes(self.take("float")?))
    }

    /// Reads a double.
    #[inline]
    pub fn read_f64(&mut self) -> Result<f64> {
        Ok(f64::from_le_bytes(self.take("double")?))
    }

    /// Reads a size (1 byte, or 255 followed by a non-negative int32).
    #[inline]
    pub fn read_size(&mut self) -> Result<usize> {
        let b = self.read_u8()?;
        if b < 255 {
            return Ok(b as usize);
        }
        let v = self.read_i32()?;
        if v < 0 {
            return Err(DecodeError::NegativeSize(v));
        }
        Ok(v as usize)
    }

    /// Reads the element count of a sequence and checks that `count × min_element_size`
    /// bytes can still follow, so that a hostile count never causes a large allocation.
    #[inline]
    pub fn read_seq_len(&mut self, min_element_size: usize) -> Result<usize> {
        let count = self.read_size()?;
        let remaining = self.remaining();
        if count.saturating_mul(min_element_size.max(1)) > remaining {
            return Err(DecodeError::SizeExceedsInput { count, min_element_size, remaining });
        }
        Ok(count)
    }

    /// Reads a string.
    #[inline]
    pub fn read_string(&mut self) -> Result<String> {
        Ok(self.read_str()?.to_owned())
    }

    /// Reads a string without copying it out of the buffer.
    #[inline]
    pub fn read_str(&mut self) -> Result<&str> {
        let n = self.read_seq_len(1)?;
        let start = self.pos;
        self.pos += n;
        let bytes = &self.buf[start..start + n];
        // Short ASCII strings (most identifiers, names, keys) skip the general validation.
        if n <= 32 && short_is_ascii(bytes) {
            // SAFETY: ASCII is valid UTF-8.
            return Ok(unsafe { std::str::from_utf8_unchecked(bytes) });
        }
        std::str::from_utf8(bytes).map_err(|e| DecodeError::InvalidUtf8 { valid_up_to: e.valid_up_to() })
    }

    /// Reads a byte sequence as a zero-copy view of the buffer.
    #[inline]
    pub fn read_byte_seq(&mut self) -> Result<Bytes> {
        let n = self.read_seq_len(1)?;
        self.read_raw_bytes(n)
    }

    /// Reads an enumerator written for an enum whose largest value is `max_value`, and checks
    /// only that it is within `0..=max_value`; the caller maps it to an enumerator.
    #[inline]
    pub fn read_enum(&mut self, max_value: i32) -> Result<i32> {
        if self.encoding.is_1_0() {
            if max_value < 127 {
                Ok(self.read_u8()? as i32)
            } else if max_value < 32767 {
                Ok(self.read_i16()? as i32)
            } else {
                self.read_i32()
            }
        } else {
            let v = self.read_size()?;
            Ok(v as i32)
        }
    }

    /// Reads a facet (`sequence<string>` of zero or one element).
    pub fn read_facet(&mut self) -> Result<String> {
        self.read_facet_str().map(str::to_string)
    }

    /// Like [`Decoder::read_facet`], borrowing the facet from the buffer.
    pub fn read_facet_str(&mut self) -> Result<&str> {
        let n = self.read_seq_len(1)?;
        match n {
            0 => Ok(""),
            1 => self.read_str(),
            n => Err(DecodeError::InvalidFacet(n)),
        }
    }

    // ---- encapsulations

    /// Opens an encapsulation: reads its size and version, and confines further reads to it.
    /// Returns the version.
    pub fn start_encapsulation(&mut self) -> Result<EncodingVersion> {
        let remaining = self.remaining();
        let size = self.read_i32()?;
        if size < 6 || (size as usize) > remaining {
            return Err(DecodeError::BadEncapsulationSize { size, remaining });
        }
        let major = self.read_u8()?;
        let minor = self.read_u8()?;
        let version = EncodingVersion { major, minor };
        if major != 1 || minor > 1 {
            return Err(DecodeError::UnsupportedEncoding { major, minor });
        }
        let start = self.pos - 6;
        self.encaps.push(OpenEncapsulation { outer_end: self.end, outer_encoding: self.encoding });
        self.end = start + size as usize;
        self.encoding = version;
        Ok(version)
    }

    /// Closes the innermost encapsulation. Under 1.1, optional values nobody asked for are
    /// skipped; any other data left over is an error (1.0 tolerates one byte, as Ice does).
    pub fn end_encapsulation(&mut self) -> Result<()> {
        if !self.encoding.is_1_0() {
            self.skip_remaining_optionals()?;
        }
        let extra = self.end - self.pos;
        if extra > 1 || (extra == 1 && !self.encoding.is_1_0()) {
            return Err(DecodeError::EncapsulationNotConsumed { extra });
        }
        let open = self.encaps.pop().ok_or(DecodeError::Malformed("no open encapsulation"))?;
        self.pos = self.end;
        self.end = open.outer_end;
        self.encoding = open.outer_encoding;
        Ok(())
    }

    /// Reads a whole encapsulation as `(version, body)` without decoding it.
    #[inline]
    pub fn read_encapsulation(&mut self) -> Result<(EncodingVersion, Bytes)> {
        let (encoding, start, len) = self.read_encapsulation_bounds()?;
        Ok((encoding, self.view(start, len)))
    }

    /// Moves past a whole encapsulation; returns its encoding and where its body lies in the
    /// buffer (for [`view`](Self::view)). Plain values, so that a request's decoder can build
    /// the body's `Bytes` where it is stored instead of moving it through a `Result`.
    #[inline(always)]
    pub(crate) fn read_encapsulation_bounds(&mut self) -> Result<(EncodingVersion, usize, usize)> {
        let remaining = self.remaining();
        let size = self.read_i32()?;
        if size < 6 || (size as usize) > remaining {
            return Err(DecodeError::BadEncapsulationSize { size, remaining });
        }
        let [major, minor] = self.take::<2>("encapsulation encoding")?;
        let start = self.pos;
        let len = size as usize - 6;
        self.skip(len)?;
        Ok((EncodingVersion { major, minor }, start, len))
    }

    /// The bytes not yet read in the current scope.
    #[inline(always)]
    pub(crate) fn unread(&self) -> &[u8] {
        &self.buf[self.pos..self.end]
    }

    /// Moves past `n` bytes of [`unread`](Self::unread) that the caller has decoded itself.
    #[inline(always)]
    pub(crate) fn consume(&mut self, n: usize) {
        debug_assert!(n <= self.remaining(), "consumed past the end");
        self.pos = (self.pos + n).min(self.end);
    }

    /// Reads a size that is most often 0 (a request's context): true, and moved past it, when
    /// it is 0; false, and nothing read, otherwise.
    #[inline(always)]
    pub(crate) fn read_zero_size(&mut self) -> bool {
        if self.pos < self.end && self.buf[self.pos] == 0 {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    /// Skips a whole encapsulation.
    pub fn skip_encapsulation(&mut self) -> Result<EncodingVersion> {
        Ok(self.read_encapsulation()?.0)
    }

    // ---- optionals (encoding 1.1)

    /// Looks for the optional value with `tag`. Skips values with smaller tags; returns false
    /// (leaving the position before the next tag) when the value is absent.
    pub fn read_optional(&mut self, tag: i32, expected: OptionalFormat) -> Result<bool> {
        if self.encoding.is_1_0() {
            return Ok(false);
        }
        // Inside a slice that announced no optional members there are none to find. The
        // slice is the innermost one: a class instance's own, while one is read (also when it
        // is a member of an exception slice), or else the exception's.
        let in_instance = self.classes.as_ref().is_some_and(|classes| classes.in_instance());
        if let Some(open) = self.slice {
            if !in_instance && open.flags & slice_flags::HAS_OPTIONAL_MEMBERS == 0 {
                return Ok(false);
            }
        }
        if let Some(classes) = &self.classes {
            if !classes.optionals_allowed() {
                return Ok(false);
            }
        }
        loop {
            if self.pos >= self.end {
                return Ok(false);
            }
            let start = self.pos;
            let v = self.read_u8()?;
            if v == OPTIONAL_END_MARKER {
                self.pos = start;
                return Ok(false);
            }
            let format = OptionalFormat::from_bits(v);
            let mut t = (v >> 3) as i32;
            if t == 30 {
                t = self.read_size()? as i32;
            }
            if t > tag {
                self.pos = start;
                return Ok(false);
            }
            if t < tag {
                self.skip_optional(format)?;
                continue;
            }
            if format != expected {
                return Err(DecodeError::OptionalFormatMismatch { tag, found: format, expected });
            }
            return Ok(true);
        }
    }

    /// Skips one optional value of the given format.
    pub fn skip_optional(&mut self, format: OptionalFormat) -> Result<()> {
        match format {
            OptionalFormat::F1 => self.skip(1),
            OptionalFormat::F2 => self.skip(2),
            OptionalFormat::F4 => self.skip(4),
            OptionalFormat::F8 => self.skip(8),
            OptionalFormat::Size => self.read_size().map(|_| ()),
            OptionalFormat::VSize => {
                let n = self.read_size()?;
                self.skip(n)
            }
            OptionalFormat::FSize => {
                let n = self.read_i32()?;
                if n < 0 {
                    return Err(DecodeError::NegativeSize(n));
                }
                self.skip(n as usize)
            }
            // A class instance is read (types nobody knows are sliced off) and dropped.
            OptionalFormat::Class => self.read_any_class(None).map(|_| ()),
        }
    }

    /// Skips every optional value up to the end of the current scope or an end marker
    /// (the marker itself is consumed).
    pub fn skip_remaining_optionals(&mut self) -> Result<()> {
        while self.pos < self.end {
            let v = self.read_u8()?;
            if v == OPTIONAL_END_MARKER {
                return Ok(());
            }
            if v >> 3 == 30 {
                self.read_size()?;
            }
            self.skip_optional(OptionalFormat::from_bits(v))?;
        }
        Ok(())
    }

    /// Reads the int32 length in front of an `FSize` optional value.
    pub fn read_fsize(&mut self) -> Result<usize> {
        let n = self.read_i32()?;
        if n < 0 {
            return Err(DecodeError::NegativeSize(n));
        }
        if n as usize > self.remaining() {
            return Err(DecodeError::OutOfBounds {
                what: "optional value",
                needed: n as usize,
                remaining: self.remaining(),
            });
        }
        Ok(n as usize)
    }

    // ---- exceptions

    /// Starts reading a user exception (encoding 1.0 reads the `usesClasses` flag).
    pub fn start_exception(&mut self) -> Result<()> {
        if self.encoding.is_1_0() {
            self.read_bool()?;
        }
        Ok(())
    }

    /// Reads the header of the next exception slice.
    pub fn start_exception_slice(&mut self) -> Result<SliceHeader> {
        let (flags, type_id) = if self.encoding.is_1_0() {
            (slice_flags::HAS_SLICE_SIZE, self.read_string()?)
        } else {
            let flags = self.read_u8()?;
            (flags, self.read_string()?)
        };
        let end = if flags & slice_flags::HAS_SLICE_SIZE != 0 {
            let size = self.read_i32()?;
            if size < 4 || (size as usize - 4) > self.remaining() {
                return Err(DecodeError::BadSliceSize(size));
            }
            Some(self.pos + size as usize - 4)
        } else {
            None
        };
        let table = match (flags & slice_flags::HAS_INDIRECTION_TABLE != 0, end) {
            (false, _) => false,
            (true, Some(end)) if !self.encoding.is_1_0() => {
                self.open_exception_table(flags, end);
                true
            }
            (true, _) => return Err(DecodeError::Malformed("an indirection table needs a sliced slice")),
        };
        let start = self.pos;
        self.slice = Some(OpenSlice { flags, end, start, table });
        Ok(SliceHeader {
            type_id,
            has_size: end.is_some(),
            is_last: flags & slice_flags::IS_LAST_SLICE != 0,
            has_optionals: flags & slice_flags::HAS_OPTIONAL_MEMBERS != 0,
        })
    }

    /// Ends the current exception slice: skips optional members nobody read (up to the end
    /// marker) and checks that a sized slice ended where its size said.
    pub fn end_exception_slice(&mut self) -> Result<()> {
        let open = self.slice.take().ok_or(DecodeError::Malformed("no open slice"))?;
        if open.flags & slice_flags::HAS_OPTIONAL_MEMBERS != 0 && !self.encoding.is_1_0() {
            self.skip_remaining_optionals()?;
        }
        if let Some(end) = open.end {
            if self.pos != end {
                return Err(DecodeError::Malformed("exception slice does not end at its size"));
            }
        }
        if open.table {
            let (after, _) = self.close_exception_table()?;
            self.seek(after)?;
        }
        Ok(())
    }

    /// The slices of unknown exception types skipped before the known one being read (most
    /// derived first); generated code for `["preserve-slice"]` exceptions keeps them.
    pub fn take_skipped_exception_slices(&mut self) -> Vec<super::class::SliceInfo> {
        std::mem::take(&mut self.skipped_exception_slices)
    }

    /// Skips the body of the current slice (only possible when it carries a size).
    pub fn skip_exception_slice(&mut self, header: &SliceHeader) -> Result<()> {
        let open = self.slice.take().ok_or(DecodeError::Malformed("no open slice"))?;
        let (after_table, table) = if open.table {
            let (after, table) = self.close_exception_table()?;
            (Some(after), table)
        } else {
            (None, Vec::new())
        };
        match after_table.or(open.end) {
            Some(end) if end <= self.end => {
                if let (Some(members_end), false) = (open.end, self.encoding.is_1_0()) {
                    // Kept in case the exception's known type preserves slices; the optional
                    // end marker is written again with the slice.
                    let has_optionals = open.flags & slice_flags::HAS_OPTIONAL_MEMBERS != 0;
                    let bytes_end =
                        if has_optionals { members_end.saturating_sub(1).max(open.start) } else { members_end };
                    self.skipped_exception_slices.push(super::class::SliceInfo::exception_slice(
                        header.type_id.clone(),
                        self.buf.slice(open.start..bytes_end),
                        table,
                        has_optionals,
                        open.flags & slice_flags::IS_LAST_SLICE != 0,
                    ));
                }
                self.pos = end;
                Ok(())
            }
            Some(_) => Err(DecodeError::Malformed("slice runs past its encapsulation")),
            None => Err(DecodeError::UnknownSliceWithoutSize { type_id: header.type_id.clone() }),
        }
    }
}

/// `bytes.is_ascii()` for at most 32 bytes, with at most four overlapping word loads instead
/// of a loop over the bytes.
#[inline(always)]
fn short_is_ascii(bytes: &[u8]) -> bool {
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let len = bytes.len();
    let word = |at: usize| u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    if len >= 16 {
        debug_assert!(len <= 32);
        (word(0) | word(8) | word(len - 16) | word(len - 8)) & HIGH == 0
    } else if len >= 8 {
        (word(0) | word(len - 8)) & HIGH == 0
    } else if len >= 4 {
        let half = |at: usize| u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"));
        (half(0) | half(len - 4)) & 0x8080_8080 == 0
    } else {
        bytes.iter().all(|b| b.is_ascii())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_short_ascii_check_finds_a_high_byte_at_every_position_of_every_length() {
        for len in 0..=32 {
            let ascii: Vec<u8> = (0..len).map(|i| b'a' + (i % 26) as u8).collect();
            assert!(short_is_ascii(&ascii), "{len} ASCII bytes");
            for at in 0..len {
                let mut bytes = ascii.clone();
                bytes[at] = 0x80 | (at as u8);
                assert!(!short_is_ascii(&bytes), "{len} bytes with a high one at {at}");
            }
        }
    }
}
