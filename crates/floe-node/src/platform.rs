//! What the node tells the registry about its machine: `InternalNodeInfo` (from uname(2)) and
//! load samples (the 1, 5 and 15 minute load averages, which the registry divides by the
//! processor count for adaptive load balancing, as it does for IceGrid's nodes).

use std::collections::BTreeSet;
use std::ffi::CStr;

use floe_icegrid::ice_grid::{InternalNodeInfo, LoadInfo};

/// The node's description for `InternalRegistry::registerNode`.
pub fn node_info(name: &str, data_dir: &str) -> InternalNodeInfo {
    // SAFETY: uname fills the zeroed struct; its fields are NUL-terminated C strings.
    let mut uts: libc::utsname = unsafe { std::mem::zeroed() };
    let ok = unsafe { libc::uname(&mut uts) } == 0;
    let field = |f: &[libc::c_char]| -> String {
        if !ok {
            return String::new();
        }
        // SAFETY: uname NUL-terminates every field within its array.
        unsafe { CStr::from_ptr(f.as_ptr()) }.to_string_lossy().into_owned()
    };
    InternalNodeInfo {
        name: name.to_string(),
        os: field(&uts.sysname),
        hostname: field(&uts.nodename),
        release: field(&uts.release),
        version: field(&uts.version),
        machine: field(&uts.machine),
        n_processors: processor_threads(),
        data_dir: data_dir.to_string(),
    }
}

/// The number of processor threads the node may use.
pub fn processor_threads() -> i32 {
    std::thread::available_parallelism().map(|n| n.get() as i32).unwrap_or(1)
}

/// The number of processor sockets (distinct `physical id`s in /proc/cpuinfo; 1 if none).
pub fn processor_sockets() -> i32 {
    let Ok(text) = std::fs::read_to_string("/proc/cpuinfo") else { return 1 };
    let ids: BTreeSet<&str> =
        text.lines().filter(|l| l.starts_with("physical id")).filter_map(|l| l.split(':').nth(1)).collect();
    ids.len().max(1) as i32
}

/// The load averages of /proc/loadavg; -1 each when it cannot be read (as IceGrid's nodes
/// report an unknown load).
pub fn load() -> LoadInfo {
    let unknown = LoadInfo { avg1: -1.0, avg5: -1.0, avg15: -1.0 };
    let Ok(text) = std::fs::read_to_string("/proc/loadavg") else { return unknown };
    let mut values = text.split_whitespace().map(|v| v.parse::<f32>().ok());
    match (values.next().flatten(), values.next().flatten(), values.next().flatten()) {
        (Some(avg1), Some(avg5), Some(avg15)) => LoadInfo { avg1, avg5, avg15 },
        _ => unknown,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_machine_is_described() {
        let info = node_info("n1", "/data");
        assert_eq!(info.name, "n1");
        assert_eq!(info.os, "Linux");
        assert!(!info.hostname.is_empty() && !info.machine.is_empty());
        assert!(info.n_processors >= 1);
        assert!(processor_sockets() >= 1);
        let l = load();
        assert!(l.avg1 >= 0.0 && l.avg5 >= 0.0 && l.avg15 >= 0.0, "{l:?}");
    }
}
