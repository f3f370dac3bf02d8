//! glibc allocator settings for large messages.
//!
//! By default glibc serves blocks above 128 KB with `mmap` and returns freed memory to the
//! kernel eagerly, so every large message costs fresh pages and page faults (the seeds measure
//! 0.08 µs against 7–13 µs per `malloc`). floe raises both thresholds to the message size
//! limit once per process, unless `Floe.Malloc.Tune=0`.

use std::sync::Once;

static TUNED: Once = Once::new();

/// Keeps blocks up to `max_message_size` (at least 1 MB, at most 64 MB) on the heap and stops
/// trimming below twice that. Runs once per process; a no-op outside glibc.
pub(crate) fn tune(max_message_size: usize) {
    TUNED.call_once(|| {
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        {
            let threshold = max_message_size.clamp(1 << 20, 64 << 20) as libc::c_int;
            // SAFETY: mallopt only changes allocator parameters; it is safe to call at any time.
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, threshold);
                libc::mallopt(libc::M_TRIM_THRESHOLD, threshold.saturating_mul(2));
            }
        }
        let _ = max_message_size;
    });
}
