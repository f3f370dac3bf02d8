//! Ports for the servers floe-bench starts.
//!
//! A port found with `bind(127.0.0.1:0)` is free when it is found, but the kernel may hand the
//! same port to an outgoing connection, or to another `bind(0)`, before the server started on
//! it binds it; with clients connecting and other benchmarks starting servers at the same time
//! (floe-bench's own smoke tests run several at once) that is a failed run now and then. So
//! ports come from the window just below the kernel's ephemeral range
//! (`/proc/sys/net/ipv4/ip_local_port_range`, which `connect` and `bind(0)` draw from), from a
//! counter that starts at a point given by the process id, so that one process never hands out
//! a port twice and two processes rarely meet; a port something holds is skipped. Where the
//! ephemeral range starts too low to leave such a window, the port is found with `bind(0)`.

use std::net::TcpListener;
use std::sync::atomic::{AtomicU32, Ordering};

/// Ports in the window below the ephemeral range.
const WINDOW: u16 = 2_000;

/// The lowest port of the window may not be below this (ports of well-known services, and
/// the ranges floe's test suite takes its ports from, 12000–29999).
const LOWEST: u16 = 30_000;

/// The default start of Linux's ephemeral range, where the kernel's setting cannot be read.
const DEFAULT_EPHEMERAL_LOW: u16 = 32_768;

/// A loopback port that is free now and that this process has not handed out before.
pub fn free_port() -> u16 {
    match window() {
        Some(first) => port_in_window(first).unwrap_or_else(ephemeral_port),
        None => ephemeral_port(),
    }
}

/// The first port of the window, if the ephemeral range leaves room for one.
fn window() -> Option<u16> {
    let low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|text| ephemeral_low(&text))
        .unwrap_or(DEFAULT_EPHEMERAL_LOW);
    window_below(low)
}

/// The first port of the window below an ephemeral range that starts at `low`.
fn window_below(low: u16) -> Option<u16> {
    let first = low.checked_sub(WINDOW)?;
    (first >= LOWEST).then_some(first)
}

/// The first number of an `ip_local_port_range` setting (`32768\t60999`).
fn ephemeral_low(text: &str) -> Option<u16> {
    text.split_ascii_whitespace().next()?.parse().ok()
}

/// The next port of the window that nothing holds, trying each once.
fn port_in_window(first: u16) -> Option<u16> {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    next_unheld(first, std::process::id() % u32::from(WINDOW), &NEXT)
}

/// The next port of the window starting at `first` that nothing holds, counting with `next`
/// from `start` within the window.
fn next_unheld(first: u16, start: u32, next: &AtomicU32) -> Option<u16> {
    for _ in 0..WINDOW {
        let n = next.fetch_add(1, Ordering::Relaxed);
        let port = first + ((start + n) % u32::from(WINDOW)) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() {
            return Some(port);
        }
    }
    None
}

/// A port the kernel finds free (0 if it cannot).
fn ephemeral_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).map(|a| a.port()).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_lies_below_the_ephemeral_range_and_above_the_test_ports() {
        assert_eq!(window_below(32_768), Some(30_768));
        assert_eq!(window_below(40_000), Some(38_000));
        assert_eq!(window_below(31_000), None, "too close to the test suite's ports");
        assert_eq!(window_below(1_024), None);
        assert_eq!(ephemeral_low("32768\t60999\n"), Some(32_768));
        assert_eq!(ephemeral_low("garbage"), None);
    }

    #[test]
    fn ports_are_free_and_never_handed_out_twice() {
        let ports: Vec<u16> = (0..50).map(|_| free_port()).collect();
        let mut unique = ports.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(unique.len(), ports.len(), "{ports:?}");
        for port in ports {
            assert_ne!(port, 0);
            if let Some(first) = window() {
                assert!((first..first + WINDOW).contains(&port), "{port} outside the window");
            }
            TcpListener::bind(("127.0.0.1", port)).expect("the port is free");
        }
    }

    #[test]
    fn a_port_something_holds_is_skipped() {
        let Some(first) = window() else { return };
        // Hold three ports in a row, then count from the first of them: the fourth is next.
        let next = AtomicU32::new(0);
        let start = (first..first + WINDOW - 4)
            .find(|&p| (p..p + 4).all(|q| TcpListener::bind(("127.0.0.1", q)).is_ok()))
            .expect("four free ports in a row");
        let held: Vec<TcpListener> =
            (start..start + 3).map(|p| TcpListener::bind(("127.0.0.1", p)).expect("hold")).collect();
        let got = next_unheld(first, u32::from(start - first), &next);
        assert_eq!(got, Some(start + 3));
        drop(held);
    }
}
