//! glibc allocator settings for large messages.
//!
//! By default glibc serves blocks above 128 KB with `mmap` and returns freed memory to the
//! kernel eagerly, so every large message costs fresh pages and page faults (the seeds measure
//! 0.08 µs against 7–13 µs per `malloc`). floe raises both thresholds once per process, unless
//! `Floe.Malloc.Tune=0`: to four times the message size limit, because what a message decodes
//! to is larger than the message (a `{string, double}` element takes 13 bytes on the wire and
//! 32 in a `Vec`, so 50,000 of them, a 650 KB message, decode to 1.6 MB).

use std::sync::Once;

static TUNED: Once = Once::new();

/// How many times the message size limit a block may take and still come from the heap.
const DECODED_PER_WIRE_BYTE: usize = 4;

/// Keeps blocks up to four times `max_message_size` (at least 4 MB, at most 64 MB) on the
/// heap and stops trimming below twice that. Runs once per process; a no-op outside glibc.
pub(crate) fn tune(max_message_size: usize) {
    TUNED.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let threshold =
                max_message_size.saturating_mul(DECODED_PER_WIRE_BYTE).clamp(4 << 20, 64 << 20) as libc::c_int;
            // SAFETY: mallopt only changes allocator parameters; it is safe to call at any time.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, threshold);
                libc::mallopt(libc::M_TRIM_THRESHOLD, threshold.saturating_mul(2));
            }
        }
        let _ = max_message_size;
    });
}
