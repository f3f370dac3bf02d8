//! [`DecodeError`]: why a byte buffer could not be decoded.

use thiserror::Error;

/// Why a byte buffer could not be decoded. Every decoder in floe returns this instead of
/// panicking, and none of them allocates more than the input can justify.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DecodeError {
    /// The buffer ended before a value of `needed` bytes could be read.
    #[error("unmarshal out of bounds: reading {what} needs {needed} bytes, {remaining} remain")]
    OutOfBounds {
        /// What was being read.
        what: &'static str,
        /// Bytes needed.
        needed: usize,
        /// Bytes left in the buffer (or the current encapsulation).
        remaining: usize,
    },
    /// A size was encoded as a negative int32.
    #[error("negative size {0}")]
    NegativeSize(i32),
    /// A sequence or string announces more elements than the remaining bytes can hold.
    #[error("size {count} × at least {min_element_size} bytes exceeds the {remaining} bytes remaining")]
    SizeExceedsInput {
        /// Announced element count.
        count: usize,
        /// Smallest encoded size of one element.
        min_element_size: usize,
        /// Bytes remaining.
        remaining: usize,
    },
    /// A string is not valid UTF-8.
    #[error("string is not valid UTF-8 (at byte {valid_up_to})")]
    InvalidUtf8 {
        /// Length of the valid prefix.
        valid_up_to: usize,
    },
    /// An enum value that names no enumerator.
    #[error("{value} is not an enumerator of {type_id}")]
    UnknownEnumerator {
        /// The Slice type id of the enum.
        type_id: &'static str,
        /// The value read.
        value: i32,
    },
    /// An encapsulation size below 6 or beyond the remaining bytes.
    #[error("bad encapsulation size {size} ({remaining} bytes remain)")]
    BadEncapsulationSize {
        /// Announced size.
        size: i32,
        /// Bytes remaining at its start.
        remaining: usize,
    },
    /// An encapsulation or proxy uses an encoding floe does not know.
    #[error("unsupported encoding {major}.{minor}")]
    UnsupportedEncoding {
        /// Major version.
        major: u8,
        /// Minor version.
        minor: u8,
    },
    /// An encapsulation holds data past its last value.
    #[error("encapsulation does not end where expected ({extra} bytes left)")]
    EncapsulationNotConsumed {
        /// Bytes left over.
        extra: usize,
    },
    /// A facet field holds more than one string.
    #[error("facet path with {0} elements (at most 1 allowed)")]
    InvalidFacet(usize),
    /// A proxy carries an invocation mode above 4.
    #[error("invalid proxy mode {0}")]
    InvalidProxyMode(u8),
    /// An optional value's tag says one format where the type needs another.
    #[error("optional tag {tag} has format {found:?}, expected {expected:?}")]
    OptionalFormatMismatch {
        /// The tag.
        tag: i32,
        /// Format found on the wire.
        found: super::OptionalFormat,
        /// Format the type needs.
        expected: super::OptionalFormat,
    },
    /// A value of this kind cannot be skipped (for instance a class inside an optional that
    /// this reader does not understand).
    #[error("cannot skip {0}")]
    CannotSkip(&'static str),
    /// A class reference whose instance is not of the reference's static type.
    #[error("class instance of type {got} where {expected} was expected")]
    UnexpectedClass {
        /// The static type.
        expected: &'static str,
        /// The instance's type.
        got: &'static str,
    },
    /// A user-exception slice without a size whose type is unknown: the rest cannot be read.
    #[error("unknown exception slice {type_id} has no size and cannot be skipped")]
    UnknownSliceWithoutSize {
        /// The type id of the slice.
        type_id: String,
    },
    /// A user exception whose type ids are all unknown to the reader.
    #[error("unknown user exception {type_id}")]
    UnknownUserException {
        /// The most-derived type id that was read.
        type_id: String,
    },
    /// A slice size that does not fit the data.
    #[error("bad slice size {0}")]
    BadSliceSize(i32),
    /// A value broke a rule of the encoding not covered above.
    #[error("malformed data: {0}")]
    Malformed(&'static str),
}

/// Shorthand used throughout the decoders.
pub type Result<T> = std::result::Result<T, DecodeError>;
