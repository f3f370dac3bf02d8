//! The protocol layer: Ice protocol 1.0 messages, sans I/O.
//!
//! * [`header`] — the 14-byte message header and its validation;
//! * [`request`] — request and batch-request bodies, with pre-encoded request prefixes;
//! * [`reply`] — reply bodies for every reply status;
//! * [`compress`] — bzip2 compression with Ice's rules (compression status 2);
//! * [`frame`] — a frame reader that enforces `Ice.MessageSizeMax` before allocating.

pub mod compress;
mod error;
pub mod frame;
pub mod header;
pub mod reply;
pub mod request;

pub use error::ProtocolError;
pub use frame::{FrameReader, Message};
pub use header::{CompressionStatus, Header, MessageType, HEADER_SIZE, MAGIC};
pub use reply::{Reply, ReplyBody, ReplyStatus};
pub use request::{BatchBuilder, BatchRequests, OperationMode, Request, RequestPrefix};

/// A byte sequence at least this long that ends a request's parameters or a reply's results
/// is sent from its own buffer, right after the rest of the message, instead of being copied
/// into it (`ObjectPrx::invoke_with_tail`, `Current::ok_with_tail`).
pub(crate) const SEPARATE_TAIL_MIN: usize = 64 * 1024;

/// The default `Ice.MessageSizeMax`: 1024 KB.
pub const DEFAULT_MESSAGE_SIZE_MAX: usize = 1024 * 1024;
