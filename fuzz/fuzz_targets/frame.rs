//! cargo-fuzz target: see floe_fuzz::frame.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| floe_fuzz::frame(data));
