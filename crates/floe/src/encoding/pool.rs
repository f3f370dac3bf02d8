//! A small per-thread pool of message buffers.
//!
//! Large messages would otherwise cost a fresh allocation each — and with glibc, fresh pages
//! and page faults each, since freed large blocks go back to the kernel. Buffers are taken
//! for encoding a request or reply and given back once the message is written.

use std::cell::RefCell;

use bytes::BytesMut;

/// Buffers kept per thread.
const POOL_SIZE: usize = 4;
/// Buffers larger than this are not kept.
const MAX_POOLED: usize = 16 * 1024 * 1024;

thread_local! {
    static POOL: RefCell<Vec<BytesMut>> = const { RefCell::new(Vec::new()) };
}

/// An empty buffer with room for at least `capacity` bytes, reused when one is available.
pub fn take(capacity: usize) -> BytesMut {
    let reused = POOL.with(|p| {
        let mut p = p.borrow_mut();
        // Prefer the smallest buffer that fits; else the largest one.
        let idx = p
            .iter()
            .enumerate()
            .filter(|(_, b)| b.capacity() >= capacity)
            .min_by_key(|(_, b)| b.capacity())
            .map(|(i, _)| i)
            .or_else(|| (0..p.len()).max_by_key(|&i| p[i].capacity()));
        idx.map(|i| p.swap_remove(i))
    });
    match reused {
        Some(mut b) => {
            b.clear();
            b.reserve(capacity);
            b
        }
        None => BytesMut::with_capacity(capacity.max(256)),
    }
}

/// Gives a buffer back for reuse.
pub fn give(mut buf: BytesMut) {
    if buf.capacity() > MAX_POOLED || buf.capacity() < 256 {
        return;
    }
    buf.clear();
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() < POOL_SIZE {
            p.push(buf);
        } else if let Some(smallest) = (0..p.len()).min_by_key(|&i| p[i].capacity()) {
            if p[smallest].capacity() < buf.capacity() {
                p[smallest] = buf;
            }
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuses_buffers() {
        let mut b = take(100_000);
        b.extend_from_slice(&[1; 100_000]);
        let ptr = b.as_ptr();
        give(b);
        let again = take(50_000);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), ptr, "the pooled buffer is reused");
        give(BytesMut::with_capacity(MAX_POOLED + 1));
        let small = take(10);
        assert!(small.capacity() >= 10);
    }
}
