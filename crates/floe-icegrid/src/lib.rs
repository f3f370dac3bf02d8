#![doc = include_str!("../README.md")]
#![allow(missing_docs, unreachable_pub, clippy::all)]

include!(concat!(env!("OUT_DIR"), "/icegrid.rs"));
