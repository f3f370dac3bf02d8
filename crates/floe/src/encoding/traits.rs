//! The [`Encode`] and [`Decode`] traits, their implementations for the built-in types, and the
//! bulk copy of sequences of fixed-layout types ([`WireLayout`]).

use std::collections::{BTreeMap, HashMap};
use std::hash::{BuildHasher, Hash};

use bytes::Bytes;

use super::error::Result;
use super::{Decoder, Encoder};

/// A value that can be written in the Slice encoding.
pub trait Encode {
    /// Writes `self`.
    fn encode(&self, enc: &mut Encoder);

    /// Writes a sequence of values: a size, then the elements. Types with a bulk layout
    /// override this to copy the whole slice at once.
    #[inline]
    fn encode_seq(items: &[Self], enc: &mut Encoder)
    where
        Self: Sized,
    {
        enc.write_size(items.len());
        for item in items {
            item.encode(enc);
        }
    }
}

/// A value that can be read from the Slice encoding.
pub trait Decode: Sized {
    /// The smallest number of bytes one encoded value can take. Decoders use it to reject
    /// sequence counts that the remaining input cannot hold before allocating anything.
    const MIN_WIRE_SIZE: usize;

    /// Reads a value.
    fn decode(dec: &mut Decoder) -> Result<Self>;

    /// Reads a sequence: a size, then the elements. Types with a bulk layout override this.
    #[inline]
    fn decode_seq(dec: &mut Decoder) -> Result<Vec<Self>> {
        let n = dec.read_seq_len(Self::MIN_WIRE_SIZE)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(Self::decode(dec)?);
        }
        Ok(out)
    }
}

/// Types whose little-endian in-memory layout is exactly their wire layout: no padding, no
/// invalid bit patterns. Sequences of them are copied with one `memcpy` on little-endian
/// machines.
///
/// # Safety
/// Implementors must be `#[repr(C)]` (or primitive) with no padding bytes, every bit pattern
/// must be a valid value, and the field order and widths must match the Slice wire layout.
pub unsafe trait WireLayout: Copy + 'static {}

unsafe impl WireLayout for u8 {}
unsafe impl WireLayout for i16 {}
unsafe impl WireLayout for i32 {}
unsafe impl WireLayout for i64 {}
unsafe impl WireLayout for f32 {}
unsafe impl WireLayout for f64 {}

/// The encoded bytes of a sequence of [`WireLayout`] values, without its size: the values'
/// own memory on a little-endian machine; `None` on a big-endian one (encode them instead).
#[inline]
pub fn wire_bytes<T: WireLayout>(items: &[T]) -> Option<&[u8]> {
    if cfg!(target_endian = "little") {
        // SAFETY: WireLayout guarantees no padding, so every byte of the slice is initialised,
        // and the in-memory bytes are the wire bytes on a little-endian machine.
        Some(unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), std::mem::size_of_val(items)) })
    } else {
        None
    }
}

/// A vector of [`WireLayout`] values seen as its encoded bytes (little-endian machines), so
/// that it can be sent from its own memory as `Bytes::from_owner(WireVec(items))`.
pub(crate) struct WireVec<T>(pub(crate) Vec<T>);

impl<T: WireLayout> AsRef<[u8]> for WireVec<T> {
    fn as_ref(&self) -> &[u8] {
        wire_bytes(&self.0).unwrap_or_default()
    }
}

/// Writes a sequence of [`WireLayout`] values with one copy.
#[inline]
pub fn encode_seq_bulk<T: WireLayout + Encode>(items: &[T], enc: &mut Encoder) {
    enc.write_size(items.len());
    match wire_bytes(items) {
        Some(bytes) => enc.write_raw(bytes),
        None => {
            for item in items {
                item.encode(enc);
            }
        }
    }
}

/// Reads a sequence of [`WireLayout`] values with one copy.
#[inline]
pub fn decode_seq_bulk<T: WireLayout + Decode>(dec: &mut Decoder) -> Result<Vec<T>> {
    let elem = std::mem::size_of::<T>();
    let n = dec.read_seq_len(elem)?;
    if cfg!(target_endian = "little") {
        let src = dec.read_raw(n * elem)?;
        let mut out: Vec<T> = Vec::with_capacity(n);
        // SAFETY: `out` has capacity for n elements, `src` holds n * size_of::<T>() bytes, every
        // bit pattern is a valid T (WireLayout), and the regions do not overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(src.as_ptr(), out.as_mut_ptr().cast::<u8>(), n * elem);
            out.set_len(n);
        }
        Ok(out)
    } else {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(T::decode(dec)?);
        }
        Ok(out)
    }
}

macro_rules! primitive {
    ($t:ty, $write:ident, $read:ident, $size:expr) => {
        impl Encode for $t {
            #[inline]
            fn encode(&self, enc: &mut Encoder) {
                enc.$write(*self);
            }
            #[inline]
            fn encode_seq(items: &[Self], enc: &mut Encoder) {
                encode_seq_bulk(items, enc);
            }
        }
        impl Decode for $t {
            const MIN_WIRE_SIZE: usize = $size;
            #[inline]
            fn decode(dec: &mut Decoder) -> Result<Self> {
                dec.$read()
            }
            #[inline]
            fn decode_seq(dec: &mut Decoder) -> Result<Vec<Self>> {
                decode_seq_bulk(dec)
            }
        }
    };
}

primitive!(u8, write_u8, read_u8, 1);
primitive!(i16, write_i16, read_i16, 2);
primitive!(i32, write_i32, read_i32, 4);
primitive!(i64, write_i64, read_i64, 8);
primitive!(f32, write_f32, read_f32, 4);
primitive!(f64, write_f64, read_f64, 8);

impl Encode for bool {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_bool(*self);
    }
    #[inline]
    fn encode_seq(items: &[Self], enc: &mut Encoder) {
        enc.write_size(items.len());
        // SAFETY: bool is one byte holding 0 or 1, exactly its wire form.
        let bytes = unsafe { std::slice::from_raw_parts(items.as_ptr().cast::<u8>(), items.len()) };
        enc.write_raw(bytes);
    }
}

impl Decode for bool {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_bool()
    }
    #[inline]
    fn decode_seq(dec: &mut Decoder) -> Result<Vec<Self>> {
        let n = dec.read_seq_len(1)?;
        Ok(dec.read_raw(n)?.iter().map(|b| *b != 0).collect())
    }
}

impl Encode for str {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_str(self);
    }
}

impl Encode for String {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_str(self);
    }
}

impl Decode for String {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_string()
    }
}

/// A string stored inline when it is short (up to 24 bytes): decoding it allocates nothing.
/// Generated code maps Slice `string` to it unless a file asks for `String` with
/// `[["rust:std-strings"]]`.
impl Encode for compact_str::CompactString {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_str(self);
    }
}

impl Decode for compact_str::CompactString {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_str().map(compact_str::CompactString::from)
    }
}

/// A byte sequence decoded as a zero-copy view of the receive buffer.
impl Encode for Bytes {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        enc.write_byte_seq(self);
    }
}

impl Decode for Bytes {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        dec.read_byte_seq()
    }
}

impl<T: Encode> Encode for Vec<T> {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        T::encode_seq(self, enc);
    }
}

impl<T: Encode> Encode for [T] {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        T::encode_seq(self, enc);
    }
}

impl<T: Decode> Decode for Vec<T> {
    const MIN_WIRE_SIZE: usize = 1;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        T::decode_seq(dec)
    }
}

impl<T: Encode + ?Sized> Encode for &T {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        (**self).encode(enc);
    }
}

impl<T: Encode + ?Sized> Encode for Box<T> {
    #[inline]
    fn encode(&self, enc: &mut Encoder) {
        (**self).encode(enc);
    }
}

impl<T: Decode> Decode for Box<T> {
    const MIN_WIRE_SIZE: usize = T::MIN_WIRE_SIZE;
    #[inline]
    fn decode(dec: &mut Decoder) -> Result<Self> {
        T::decode(dec).map(Box::new)
    }
}

impl<K: Encode, V: Encode, S> Encode for HashMap<K, V, S> {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_size(self.len());
        for (k, v) in self {
            k.encode(enc);
            v.encode(enc);
        }
    }
}

impl<K: Decode + Eq + Hash, V: Decode, S: BuildHasher + Default> Decode for HashMap<K, V, S> {
    const MIN_WIRE_SIZE: usize = 1;
    fn decode(dec: &mut Decoder) -> Result<Self> {
        let n = dec.read_seq_len(K::MIN_WIRE_SIZE + V::MIN_WIRE_SIZE)?;
        let mut out = HashMap::with_capacity_and_hasher(n, S::default());
        for _ in 0..n {
            let k = K::decode(dec)?;
            let v = V::decode(dec)?;
            out.insert(k, v);
        }
        Ok(out)
    }
}

impl<K: Encode, V: Encode> Encode for BTreeMap<K, V> {
    fn encode(&self, enc: &mut Encoder) {
        enc.write_size(self.len());
        for (k, v) in self {
            k.encode(enc);
            v.encode(enc);
        }
    }
}

impl<K: Decode + Ord, V: Decode> Decode for BTreeMap<K, V> {
    const MIN_WIRE_SIZE: usize = 1;
    fn decode(dec: &mut Decoder) -> Result<Self> {
        let n = dec.read_seq_len(K::MIN_WIRE_SIZE + V::MIN_WIRE_SIZE)?;
        let mut out = BTreeMap::new();
        for _ in 0..n {
            let k = K::decode(dec)?;
            let v = V::decode(dec)?;
            out.insert(k, v);
        }
        Ok(out)
    }
}
