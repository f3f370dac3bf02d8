//! floe — an object RPC middleware that speaks the ZeroC Ice protocol.
//!
//! The crate is organised in layers, each using only those before it:
//!
//! * [`encoding`] — the Slice encoding (1.0 and 1.1) over byte buffers, no I/O;
//! * [`protocol`] — Ice protocol 1.0 messages, framing and compression, no I/O.
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod encoding;
pub mod protocol;
