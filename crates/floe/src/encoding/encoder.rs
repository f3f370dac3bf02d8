//! The [`Encoder`]: writes Slice values into a byte buffer, with the encapsulation, slice and
//! optional-member framing of both encodings.

use bytes::{BufMut, Bytes, BytesMut};

use super::exception::FormatType;
use super::{slice_flags, EncodingVersion, OptionalFormat, OPTIONAL_END_MARKER};

/// The longest string [`Encoder::write_str`] copies without calling `memcpy`; also below
/// 255, so that its size takes one byte.
const SHORT_STRING_MAX: usize = 32;

/// Copies `src` (at most [`SHORT_STRING_MAX`] bytes) to `dst` with at most two overlapping
/// loads and stores of a power-of-two width, the way `memcpy` does for small sizes, but
/// inline.
///
/// # Safety
/// `dst` must be valid for writes of `src.len()` bytes and not overlap `src`.
#[inline(always)]
unsafe fn copy_short(src: &[u8], dst: *mut u8) {
    let len = src.len();
    let s = src.as_ptr();
    // SAFETY (all arms): every load reads within `src` (offsets 0 and len − width, with
    // width ≤ len) and every store writes within the `len` bytes at `dst`.
    unsafe {
        if len >= 16 {
            let a = s.cast::<u128>().read_unaligned();
            let b = s.add(len - 16).cast::<u128>().read_unaligned();
            dst.cast::<u128>().write_unaligned(a);
            dst.add(len - 16).cast::<u128>().write_unaligned(b);
        } else if len >= 8 {
            let a = s.cast::<u64>().read_unaligned();
            let b = s.add(len - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(len - 8).cast::<u64>().write_unaligned(b);
        } else if len >= 4 {
            let a = s.cast::<u32>().read_unaligned();
            let b = s.add(len - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(len - 4).cast::<u32>().write_unaligned(b);
        } else if len > 0 {
            // 1 to 3 bytes: the first, the middle and the last (some the same byte).
            *dst = *s;
            *dst.add(len / 2) = *s.add(len / 2);
            *dst.add(len - 1) = *s.add(len - 1);
        }
    }
}

/// Writes Slice values into a growable byte buffer.
///
/// The encoder keeps track of the encoding version of the innermost open encapsulation,
/// because enums, optionals, proxies and exceptions are written differently in 1.0 and 1.1.
#[derive(Debug)]
pub struct Encoder {
    buf: BytesMut,
    encoding: EncodingVersion,
    /// Open encapsulations, innermost last: a request or a reply opens one, so two are kept
    /// inline and encoding a message allocates nothing for them.
    encaps: smallvec::SmallVec<[OpenEncapsulation; 2]>,
    slice: Option<OpenSlice>,
    format: FormatType,
    pub(super) classes: Option<Box<super::class::ClassWriteState>>,
}

#[derive(Debug, Clone, Copy)]
struct OpenEncapsulation {
    start: usize,
    outer_encoding: EncodingVersion,
}

#[derive(Debug, Clone, Copy)]
struct OpenSlice {
    flags_pos: usize,
    size_pos: Option<usize>,
    /// Sliced format: class members go to an indirection table written after the slice.
    table: bool,
}

impl Default for Encoder {
    fn default() -> Self {
        Self::new(EncodingVersion::V1_1)
    }
}

impl Encoder {
    /// An empty encoder writing the given encoding.
    pub fn new(encoding: EncodingVersion) -> Self {
        Self::with_buffer(BytesMut::new(), encoding)
    }

    /// An encoder that appends to `buf` (whose existing bytes are kept).
    pub fn with_buffer(buf: BytesMut, encoding: EncodingVersion) -> Self {
        Encoder {
            buf,
            encoding,
            encaps: smallvec::SmallVec::new(),
            slice: None,
            format: FormatType::Compact,
            classes: None,
        }
    }

    /// An empty encoder with room for `capacity` bytes.
    pub fn with_capacity(capacity: usize, encoding: EncodingVersion) -> Self {
        Self::with_buffer(BytesMut::with_capacity(capacity), encoding)
    }

    /// The encoding of the innermost open encapsulation (or the encoder's own).
    #[inline]
    pub fn encoding(&self) -> EncodingVersion {
        self.encoding
    }

    /// Sets the class and exception format (compact or sliced) for what follows.
    pub fn set_format(&mut self, format: FormatType) {
        self.format = format;
    }

    /// The class and exception format in use.
    pub fn format(&self) -> FormatType {
        self.format
    }

    /// Bytes written so far.
    #[inline]
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    /// True when nothing was written.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    /// The bytes written so far.
    #[inline]
    pub fn as_slice(&self) -> &[u8] {
        &self.buf
    }

    /// Mutable access to the bytes written so far (for patching headers).
    #[inline]
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf
    }

    /// Gives up the buffer.
    pub fn into_buffer(self) -> BytesMut {
        self.buf
    }

    /// Gives up the buffer as immutable [`Bytes`].
    pub fn into_bytes(self) -> Bytes {
        self.buf.freeze()
    }

    /// Reserves room for `additional` more bytes.
    #[inline]
    pub fn reserve(&mut self, additional: usize) {
        self.buf.reserve(additional);
    }

    /// Overwrites four bytes at `pos` with `value` (little-endian).
    #[inline]
    pub fn patch_i32(&mut self, pos: usize, value: i32) {
        self.buf[pos..pos + 4].copy_from_slice(&value.to_le_bytes());
    }

    /// Appends a fixed number of bytes: an inlined copy instead of a general `memcpy`.
    #[inline(always)]
    fn put_array<const N: usize>(&mut self, bytes: [u8; N]) {
        self.buf.reserve(N);
        let spare = self.buf.spare_capacity_mut();
        // SAFETY: `reserve` made room for N more bytes, so `spare` holds at least N elements;
        // the N bytes written are initialised before the length grows over them.
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), spare.as_mut_ptr().cast::<u8>(), N);
            self.buf.set_len(self.buf.len() + N);
        }
    }

    /// Appends raw bytes.
    #[inline]
    pub fn write_raw(&mut self, bytes: &[u8]) {
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a byte.
    #[inline]
    pub fn write_u8(&mut self, v: u8) {
        self.put_array([v]);
    }

    /// Writes a bool as 0 or 1.
    #[inline]
    pub fn write_bool(&mut self, v: bool) {
        self.put_array([v as u8]);
    }

    /// Writes a short.
    #[inline]
    pub fn write_i16(&mut self, v: i16) {
        self.put_array(v.to_le_bytes());
    }

    /// Writes an int.
    #[inline]
    pub fn write_i32(&mut self, v: i32) {
        self.put_array(v.to_le_bytes());
    }

    /// Writes a long.
    #[inline]
    pub fn write_i64(&mut self, v: i64) {
        self.put_array(v.to_le_bytes());
    }

    /// Writes a float.
    #[inline]
    pub fn write_f32(&mut self, v: f32) {
        self.put_array(v.to_le_bytes());
    }

    /// Writes a double.
    #[inline]
    pub fn write_f64(&mut self, v: f64) {
        self.put_array(v.to_le_bytes());
    }

    /// Writes a size: one byte below 255, otherwise 255 followed by an int32.
    ///
    /// # Panics
    /// If `size` exceeds `i32::MAX`, which no Ice message can hold.
    #[inline]
    pub fn write_size(&mut self, size: usize) {
        if size < 255 {
            self.put_array([size as u8]);
        } else {
            let size = i32::try_from(size).expect("Slice sizes are limited to i32::MAX");
            let b = size.to_le_bytes();
            self.put_array([255, b[0], b[1], b[2], b[3]]);
        }
    }

    /// Writes a string: size and UTF-8 bytes.
    #[inline(always)]
    pub fn write_str(&mut self, s: &str) {
        let bytes = s.as_bytes();
        if bytes.len() <= SHORT_STRING_MAX {
            // One capacity check for the size byte and the bytes, and a copy without a call
            // to `memcpy`, which costs more than the copy itself for a few bytes.
            self.buf.reserve(1 + bytes.len());
            let spare = self.buf.spare_capacity_mut();
            // SAFETY: `reserve` made room for 1 + len more bytes; all of them are written
            // before the length grows over them.
            unsafe {
                let dst = spare.as_mut_ptr().cast::<u8>();
                *dst = bytes.len() as u8;
                copy_short(bytes, dst.add(1));
                self.buf.set_len(self.buf.len() + 1 + bytes.len());
            }
            return;
        }
        self.write_long_str(bytes);
    }

    /// [`Self::write_str`] for strings longer than [`SHORT_STRING_MAX`], out of line.
    #[inline(never)]
    fn write_long_str(&mut self, bytes: &[u8]) {
        self.write_size(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    /// Writes a byte sequence: size and bytes.
    #[inline]
    pub fn write_byte_seq(&mut self, bytes: &[u8]) {
        self.write_size(bytes.len());
        self.buf.extend_from_slice(bytes);
    }

    /// Writes an enumerator. Encoding 1.0 uses a byte, short or int depending on the enum's
    /// largest value `max_value`; encoding 1.1 writes a size.
    #[inline]
    pub fn write_enum(&mut self, value: i32, max_value: i32) {
        if self.encoding.is_1_0() {
            if max_value < 127 {
                self.write_u8(value as u8);
            } else if max_value < 32767 {
                self.write_i16(value as i16);
            } else {
                self.write_i32(value);
            }
        } else {
            self.write_size(value as usize);
        }
    }

    /// Writes a facet as the wire's `sequence<string>` with zero or one element.
    pub fn write_facet(&mut self, facet: &str) {
        if facet.is_empty() {
            self.write_u8(0);
        } else {
            self.write_u8(1);
            self.write_str(facet);
        }
    }

    /// Opens an encapsulation of the given version: writes a placeholder size and the version.
    #[inline]
    pub fn start_encapsulation(&mut self, encoding: EncodingVersion) {
        self.encaps.push(OpenEncapsulation { start: self.buf.len(), outer_encoding: self.encoding });
        self.put_array([0, 0, 0, 0, encoding.major, encoding.minor]);
        self.encoding = encoding;
    }

    /// Opens an encapsulation whose 6-byte header (size placeholder and `encoding`) the caller
    /// has already written at `start`, as part of a larger copy.
    #[inline]
    pub(crate) fn resume_encapsulation(&mut self, start: usize, encoding: EncodingVersion) {
        debug_assert!(
            start + 6 <= self.buf.len() && self.buf[start + 4..start + 6] == [encoding.major, encoding.minor]
        );
        self.encaps.push(OpenEncapsulation { start, outer_encoding: self.encoding });
        self.encoding = encoding;
    }

    /// Opens an encapsulation with the current encoding (as Ice does for endpoints).
    pub fn start_nested_encapsulation(&mut self) {
        self.start_encapsulation(self.encoding);
    }

    /// Closes the innermost encapsulation and patches its size.
    ///
    /// # Panics
    /// If no encapsulation is open (a bug in the calling code, never caused by data).
    #[inline]
    pub fn end_encapsulation(&mut self) {
        self.end_encapsulation_before(0);
    }

    /// Closes the innermost encapsulation, counting `extra` bytes that are sent right after
    /// the encoder's bytes without being written into it (a large trailing parameter).
    ///
    /// # Panics
    /// If no encapsulation is open, or the encapsulation would exceed `i32::MAX` bytes (no
    /// Ice message can hold it).
    #[inline]
    pub fn end_encapsulation_before(&mut self, extra: usize) {
        let open = self.encaps.pop().expect("end_encapsulation without start_encapsulation");
        let size = i32::try_from(self.buf.len() - open.start + extra).expect("encapsulations are limited to i32::MAX");
        self.patch_i32(open.start, size);
        self.encoding = open.outer_encoding;
    }

    /// Writes an empty encapsulation of the given version (6 bytes).
    pub fn write_empty_encapsulation(&mut self, encoding: EncodingVersion) {
        self.buf.put_i32_le(6);
        self.buf.put_u8(encoding.major);
        self.buf.put_u8(encoding.minor);
    }

    /// Writes an already encoded encapsulation body as an encapsulation.
    pub fn write_encapsulation(&mut self, encoding: EncodingVersion, body: &[u8]) {
        self.buf.put_i32_le((body.len() + 6) as i32);
        self.buf.put_u8(encoding.major);
        self.buf.put_u8(encoding.minor);
        self.buf.extend_from_slice(body);
    }

    // ---- optionals (encoding 1.1)

    /// Writes the tag of an optional value. Returns false under encoding 1.0, where optionals
    /// are left out entirely: the caller then writes nothing.
    #[inline]
    pub fn write_optional_tag(&mut self, tag: i32, format: OptionalFormat) -> bool {
        if self.encoding.is_1_0() {
            return false;
        }
        if tag < 30 {
            self.write_u8(format as u8 | ((tag as u8) << 3));
        } else {
            self.write_u8(format as u8 | 0xF0);
            self.write_size(tag as usize);
        }
        true
    }

    /// Starts an `FSize` optional body: a placeholder int32 length. Pass the result to
    /// [`Encoder::end_fsize`] once the value is written.
    pub fn start_fsize(&mut self) -> usize {
        let pos = self.buf.len();
        self.buf.put_i32_le(0);
        pos
    }

    /// Patches the length written by [`Encoder::start_fsize`].
    pub fn end_fsize(&mut self, pos: usize) {
        let len = (self.buf.len() - pos - 4) as i32;
        self.patch_i32(pos, len);
    }

    // ---- exceptions

    /// Starts writing a user exception: encoding 1.0 writes the `usesClasses` flag first.
    pub fn start_exception(&mut self) {
        self.start_exception_with_classes(false);
    }

    /// Starts writing a user exception whose members may hold class instances: encoding 1.0
    /// announces them (the instances follow the exception, see
    /// [`Encoder::write_pending_values`]).
    pub fn start_exception_with_classes(&mut self, uses_classes: bool) {
        if self.encoding.is_1_0() {
            self.write_bool(uses_classes);
        }
    }

    /// Starts a slice of a user exception with the given type id. `last` marks the least
    /// derived slice; `has_optionals` announces optional members (1.1 only).
    pub fn start_exception_slice(&mut self, type_id: &str, last: bool, has_optionals: bool) {
        if self.encoding.is_1_0() {
            self.write_str(type_id);
            let size_pos = self.buf.len();
            self.buf.put_i32_le(0);
            self.slice = Some(OpenSlice { flags_pos: usize::MAX, size_pos: Some(size_pos), table: false });
            return;
        }
        let mut flags = 0u8;
        if last {
            flags |= slice_flags::IS_LAST_SLICE;
        }
        if has_optionals {
            flags |= slice_flags::HAS_OPTIONAL_MEMBERS;
        }
        let sliced = self.format == FormatType::Sliced;
        if sliced {
            flags |= slice_flags::HAS_SLICE_SIZE;
        }
        let flags_pos = self.buf.len();
        self.write_u8(flags);
        self.write_str(type_id);
        let size_pos = if sliced {
            let p = self.buf.len();
            self.buf.put_i32_le(0);
            Some(p)
        } else {
            None
        };
        if sliced {
            self.open_exception_table(flags_pos, size_pos);
        }
        self.slice = Some(OpenSlice { flags_pos, size_pos, table: sliced });
    }

    /// Ends the slice opened by [`Encoder::start_exception_slice`]: writes the optional end
    /// marker when optionals were announced and patches the slice size.
    ///
    /// # Panics
    /// If no slice is open (a bug in the calling code).
    pub fn end_exception_slice(&mut self) {
        let open = self.slice.take().expect("end_exception_slice without start_exception_slice");
        if open.flags_pos != usize::MAX && self.buf[open.flags_pos] & slice_flags::HAS_OPTIONAL_MEMBERS != 0 {
            self.write_u8(OPTIONAL_END_MARKER);
        }
        if let Some(size_pos) = open.size_pos {
            let size = (self.buf.len() - size_pos) as i32;
            self.patch_i32(size_pos, size);
        }
        if open.table {
            self.close_exception_table();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wire form of a string, written out by hand: its size, then its bytes.
    fn expected(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        if s.len() < 255 {
            out.push(s.len() as u8);
        } else {
            out.push(255);
            out.extend_from_slice(&(s.len() as i32).to_le_bytes());
        }
        out.extend_from_slice(s.as_bytes());
        out
    }

    #[test]
    fn strings_of_every_short_length_and_beyond_are_written_as_size_and_bytes() {
        // Every length around the inline copies' widths (1–3, 4–7, 8–15, 16–32), the
        // longest short string and past it, and the switch to a five-byte size; ASCII and
        // multi-byte UTF-8, after an odd number of bytes so that nothing is aligned.
        let alphabet: Vec<char> = "abcdefghijklmnopqrstuvwxyzäöü€𝄞".chars().collect();
        for len in (0..=70).chain(250..=260) {
            let s: String = (0..len).map(|i| alphabet[(i * 7 + len) % alphabet.len()]).collect();
            let mut enc = Encoder::new(EncodingVersion::V1_0);
            enc.write_u8(0xAA);
            enc.write_str(&s);
            enc.write_u8(0xBB);
            let buf = enc.into_buffer();
            let mut want = vec![0xAA];
            want.extend(expected(&s));
            want.push(0xBB);
            assert_eq!(&buf[..], &want[..], "a string of {} bytes", s.len());
        }
    }

    #[test]
    fn a_short_string_at_the_end_of_the_capacity_grows_the_buffer() {
        for room in 0..40 {
            let mut enc = Encoder::with_buffer(BytesMut::with_capacity(room), EncodingVersion::V1_0);
            enc.write_raw(&vec![7; room]);
            enc.write_str("hello, short string");
            let buf = enc.into_buffer();
            assert_eq!(&buf[room..], &expected("hello, short string")[..]);
        }
    }
}
