//! The Rust mapping of every Slice file that ships with ZeroC Ice 3.7, generated at build time.
//! That this crate compiles is the test; `tests/` checks a few of the generated items.
#![allow(missing_docs, unreachable_pub, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/ice_slice.rs"));

/// The Slice files that were compiled.
pub const FILES: &str = include_str!(concat!(env!("OUT_DIR"), "/files.txt"));
