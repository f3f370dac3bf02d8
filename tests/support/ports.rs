//! Ports for the servers that tests start, for tests that choose a port before the server
//! binds it (an etcd member's peer and client URLs, a registry's client endpoint).
//!
//! `bind(127.0.0.1:0)` and dropping the listener gives a port that is free now, but the
//! kernel may hand the same port to the next `bind(0)` of a server started with port 0, or
//! to an outgoing connection, before the test's server binds it; with many servers started
//! at once (the etcd tests start three members and several replicas per test, four tests at
//! a time) that happens often enough to fail runs. The ports here come from below the
//! kernel's ephemeral range (32768–60999 on Linux by default), which `bind(0)` and
//! `connect` never take, from a counter, so that one process never hands the same port out
//! twice; a port some other program holds is skipped. Included with
//! `#[path = ".../tests/support/ports.rs"] mod ports;`. Blocks taken: 0 the etcd cluster
//! (`etcd_cluster.rs`), 1 floe-registry's tests and floe-storm's etcd test, 2 the interop
//! tests, 3 the examples' test, 4 floe-bench's smoke tests. The conformance runner
//! (`tests/conformance/tests/runner`, used by every conformance test program, the wire tests
//! too) counts its own port ranges up from 15010, across blocks 3 and up: test programs run
//! one after another (`scripts/test`), so they never meet. floe-bench takes the ports of the
//! servers it starts from the 2,000 just below the ephemeral range, above all of these
//! (`crates/floe-bench/src/ports.rs`).
#![allow(dead_code, unreachable_pub)]

use std::net::TcpListener;
use std::sync::atomic::{AtomicU16, Ordering};

/// The first port of block 0.
const FIRST: u16 = 12_000;
/// Ports per block.
const BLOCK: u16 = 1_000;
/// Blocks: 12000–31999, below the ephemeral range.
const BLOCKS: u16 = 20;

/// A port of `block` (0–19; each file that includes this module takes its own, so that two
/// copies of the counter never hand out the same port) that is free now and that this process
/// has not handed out before. Within the block, where the counter starts depends on the
/// process id, so that two test programs running at once rarely meet.
pub fn unused_port(block: u16) -> u16 {
    static NEXT: AtomicU16 = AtomicU16::new(0);
    assert!(block < BLOCKS, "port block {block} is out of range");
    let start = (std::process::id() % u32::from(BLOCK)) as u16;
    for _ in 0..BLOCK {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = FIRST + block * BLOCK + (start + n) % BLOCK;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return port;
        }
    }
    panic!("no free port left in block {block}");
}
