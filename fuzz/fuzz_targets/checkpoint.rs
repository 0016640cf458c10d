#![no_main]
//! Fuzz target `checkpoint`: see `fuzz/checks.rs` for what it asserts.

#[path = "../checks.rs"]
mod checks;

libfuzzer_sys::fuzz_target!(|data: &[u8]| checks::checkpoint(data));
