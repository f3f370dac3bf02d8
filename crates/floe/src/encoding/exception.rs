//! What classes and exceptions share on the wire: the [`FormatType`], the [`SliceHeader`] of
//! each slice, and [`UserExceptionSlices`], how a user exception writes and reads its slices.

use super::error::Result;
use super::{Decoder, Encoder};

/// The format of classes and exceptions: compact (no slice sizes; the default) or sliced
/// (slice sizes, so a reader can skip types it does not know).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FormatType {
    /// No slice sizes.
    #[default]
    Compact,
    /// Every slice carries its size.
    Sliced,
}

/// The header of one slice of a user exception, as read from the wire.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SliceHeader {
    /// The Slice type id of this slice (for example `::Interop::BaseError`).
    pub type_id: String,
    /// The slice carries its size and can be skipped.
    pub has_size: bool,
    /// This is the least derived slice (1.1 only; always false in 1.0).
    pub is_last: bool,
    /// Optional members follow the required ones (1.1 only).
    pub has_optionals: bool,
}

/// A user exception that can write itself as slices and read itself back.
///
/// Generated code implements this for every Slice exception. `encode_slices` writes the
/// slices from most to least derived; `decode_body` reads them once the most derived slice's
/// header has been read by the caller (who used its type id to pick the type).
pub trait UserExceptionSlices: std::fmt::Debug {
    /// The Slice type id of the most derived type, e.g. `::Interop::DerivedError`.
    fn type_id(&self) -> &'static str;

    /// Writes every slice, most derived first.
    fn encode_slices(&self, enc: &mut Encoder);

    /// Reads the members of every slice after the most derived slice's header.
    fn decode_body(dec: &mut Decoder) -> Result<Self>
    where
        Self: Sized;

    /// Writes the exception as the body of a user-exception reply.
    fn encode_exception(&self, enc: &mut Encoder) {
        enc.start_exception();
        self.encode_slices(enc);
    }
}
