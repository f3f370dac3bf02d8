//! cargo-fuzz target: see floe_fuzz::classes.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| floe_fuzz::classes(data));
