//! The encoding layer: an [`Encoder`] and a [`Decoder`] over byte buffers for every Slice type,
//! in the Ice encodings 1.0 and 1.1.
//!
//! This layer does no I/O. Values are written little-endian with no alignment; sizes use the
//! compact 1-or-5-byte form; encapsulations carry their own encoding version. Sequences of
//! fixed-size types whose wire layout equals their little-endian memory layout are copied in
//! bulk (see [`WireLayout`]), and byte sequences decode as [`bytes::Bytes`] views of the receive
//! buffer without copying.

pub mod class;
mod decoder;
mod encoder;
mod error;
mod exception;
mod identity;
pub mod pool;
mod proxy_data;
mod traits;

pub use class::{
    AnyClass, Class, ClassFactory, ClassType, ClassValue, InterfaceByValue, SliceInfo, UnknownSlicedValue,
    ValueFactories, ValueFactoryFn,
};
pub use decoder::{Decoder, DecoderContext};
pub use encoder::Encoder;
pub use error::{DecodeError, Result};
pub use exception::{FormatType, SliceHeader, UserExceptionSlices};
pub use identity::{Context, Identity, RequestContext};
pub use proxy_data::{endpoint_type, EndpointData, InvocationMode, IpEndpointData, ProxyData};
pub(crate) use traits::WireVec;
pub use traits::{decode_seq_bulk, encode_seq_bulk, wire_bytes, Decode, Encode, WireLayout};

/// A `major.minor` version pair as it travels on the wire (two bytes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EncodingVersion {
    /// Major version; Ice only knows 1.
    pub major: u8,
    /// Minor version: 0 or 1.
    pub minor: u8,
}

impl EncodingVersion {
    /// Encoding 1.0 (Ice 3.4 and earlier; no optionals, classes written at the end).
    pub const V1_0: EncodingVersion = EncodingVersion { major: 1, minor: 0 };
    /// Encoding 1.1 (Ice 3.5 and later; the default).
    pub const V1_1: EncodingVersion = EncodingVersion { major: 1, minor: 1 };

    /// True for encoding 1.0, whose rules differ for enums, optionals, exceptions and classes.
    #[inline]
    pub fn is_1_0(self) -> bool {
        self.major == 1 && self.minor == 0
    }

    /// The version used to encode parameters for a proxy with this encoding: Ice falls back to
    /// 1.1 for unknown minor versions and rejects any major other than 1.
    pub fn compatible(self) -> Result<EncodingVersion> {
        if self.major != 1 {
            return Err(DecodeError::UnsupportedEncoding { major: self.major, minor: self.minor });
        }
        Ok(if self.minor == 0 { Self::V1_0 } else { Self::V1_1 })
    }
}

impl std::fmt::Display for EncodingVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The Ice protocol version; Ice 3.x only speaks 1.0.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProtocolVersion {
    /// Major version (1).
    pub major: u8,
    /// Minor version (0).
    pub minor: u8,
}

impl ProtocolVersion {
    /// Protocol 1.0, the only one Ice 3.x speaks.
    pub const V1_0: ProtocolVersion = ProtocolVersion { major: 1, minor: 0 };
}

impl std::fmt::Display for ProtocolVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// How an optional value is laid out after its tag (encoding 1.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum OptionalFormat {
    /// One byte (bool, byte).
    F1 = 0,
    /// Two bytes (short).
    F2 = 1,
    /// Four bytes (int, float).
    F4 = 2,
    /// Eight bytes (long, double).
    F8 = 3,
    /// A size (enums).
    Size = 4,
    /// A size followed by that many bytes (strings, fixed-size structs, sequences of fixed-size
    /// elements).
    VSize = 5,
    /// An int32 length followed by that many bytes (variable-size structs, containers, proxies).
    FSize = 6,
    /// A class instance.
    Class = 7,
}

impl OptionalFormat {
    /// Decodes the three low bits of a tag byte.
    pub fn from_bits(bits: u8) -> OptionalFormat {
        match bits & 7 {
            0 => OptionalFormat::F1,
            1 => OptionalFormat::F2,
            2 => OptionalFormat::F4,
            3 => OptionalFormat::F8,
            4 => OptionalFormat::Size,
            5 => OptionalFormat::VSize,
            6 => OptionalFormat::FSize,
            _ => OptionalFormat::Class,
        }
    }
}

/// Marks the end of optional members inside a class or exception slice.
pub const OPTIONAL_END_MARKER: u8 = 0xFF;

/// Slice flag bits of encoding 1.1.
pub mod slice_flags {
    /// The type id is written as a string.
    pub const TYPE_ID_STRING: u8 = 0x01;
    /// The type id is written as an index into the type-id table.
    pub const TYPE_ID_INDEX: u8 = 0x02;
    /// The type id is written as a compact (numeric) id.
    pub const TYPE_ID_COMPACT: u8 = 0x03;
    /// Mask of the type-id bits.
    pub const TYPE_ID_MASK: u8 = 0x03;
    /// Optional members follow the required ones, ended by [`super::OPTIONAL_END_MARKER`].
    pub const HAS_OPTIONAL_MEMBERS: u8 = 0x04;
    /// An indirection table follows the slice.
    pub const HAS_INDIRECTION_TABLE: u8 = 0x08;
    /// An int32 slice size follows the type id.
    pub const HAS_SLICE_SIZE: u8 = 0x10;
    /// This is the last (least derived) slice.
    pub const IS_LAST_SLICE: u8 = 0x20;
}
