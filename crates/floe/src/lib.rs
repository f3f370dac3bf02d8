#![doc = include_str!("../README.md")]

// The layers, from the bottom up (see the table above; tests/layers.rs checks them).
pub mod encoding;
pub mod protocol;

pub mod error;
mod malloc;
pub mod metrics;
pub mod prometheus;
pub mod properties;

pub mod transport;

pub mod reference;
mod response;
mod routing;
mod runtime;

pub mod connection;

mod instance;
mod settings;
mod stdio;

pub mod proxy;

pub mod dispatch;

#[doc(hidden)]
pub mod codegen;

pub mod adapter;

pub mod admin;

pub mod communicator;

pub use adapter::ObjectAdapter;
pub use communicator::{Communicator, CommunicatorBuilder};
pub use connection::Connection;
pub use dispatch::{
    Current, DispatchFuture, DispatchSlot, Dispatcher, IncomingRequest, Located, LocatorCookie, Response,
    ServantLocator,
};
pub use encoding::{AnyClass, Class, Context, Identity, RequestContext};
pub use error::{CallError, Error, ErrorKind, Result};
pub use properties::Properties;
pub use proxy::{BatchWriter, ObjectPrx, Outcome, Proxy};

/// Re-exported for generated code (byte sequences are [`bytes::Bytes`]).
pub use bytes;
/// `format!` for [`CompactString`]: formats short results without allocating.
pub use compact_str::format_compact;
/// Inline small strings, the default mapping of Slice `string` (up to 24 bytes are stored in
/// the value itself; `[["rust:std-strings"]]` maps to `String` instead).
pub use compact_str::CompactString;
/// `.to_compact_string()` for anything that is `Display`.
pub use compact_str::ToCompactString;
