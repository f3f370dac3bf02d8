//! `IceGrid::FileReader` for the node and its servers: `icegridadmin node show` and
//! `server show` read the standard output and error files (`stdout`, `stderr`) and the
//! descriptor's log files (`#<path>`).

use std::path::PathBuf;

use floe::{Communicator, Error};
use floe_icegrid::ice::StringSeq;
use floe_icegrid::ice_grid::FileNotAvailableException;

use crate::server::ServerEntry;

fn unavailable(reason: impl Into<String>) -> Error {
    Error::user(FileNotAvailableException { reason: reason.into() })
}

/// The node's own `stdout` or `stderr` (its `Ice.StdOut` and `Ice.StdErr`).
pub fn node_file(communicator: &Communicator, filename: &str) -> floe::Result<PathBuf> {
    let property = match filename {
        "stdout" => "Ice.StdOut",
        "stderr" => "Ice.StdErr",
        _ => return Err(unavailable(format!("unknown file `{filename}'"))),
    };
    match communicator.properties().get(property).filter(|v| !v.is_empty()) {
        Some(p) => Ok(PathBuf::from(p)),
        None => Err(unavailable(format!("{property} is not set"))),
    }
}

/// A server's `stdout`, `stderr` or `#<log path>`.
pub fn server_file(server: &ServerEntry, filename: &str) -> floe::Result<PathBuf> {
    let desc = server.descriptor();
    let config = desc.properties.get("config");
    let property = |name: &str| config.and_then(|c| c.iter().rev().find(|p| p.name == name)).map(|p| p.value.clone());
    let output =
        |suffix: &str| server.context.config.output_dir.as_ref().map(|d| d.join(format!("{}.{suffix}", desc.id)));
    let err_suffix = if server.context.config.redirect_err_to_out { "out" } else { "err" };
    let path = match filename {
        "stdout" => property("Ice.StdOut").map(PathBuf::from).or_else(|| output("out")),
        "stderr" => property("Ice.StdErr").map(PathBuf::from).or_else(|| output(err_suffix)),
        f => match f.strip_prefix('#') {
            Some(log) if desc.logs.iter().any(|l| l == log) => Some(PathBuf::from(log)),
            _ => return Err(unavailable(format!("unknown file `{f}'"))),
        },
    };
    path.ok_or_else(|| unavailable(format!("the server's {filename} is not redirected to a file")))
}

/// The offset where the last `lines` lines of the file start (`lines` < 0: the start).
pub async fn offset_from_end(path: PathBuf, lines: i32) -> floe::Result<i64> {
    floe_service::files::offset_from_end(path, lines).await.map_err(unavailable)
}

/// Up to `size` bytes from `pos`, as whole lines: whether the end was reached, the next
/// position, the lines (see [`floe_service::files::read`]).
pub async fn read(path: PathBuf, pos: i64, size: i32) -> floe::Result<(bool, i64, StringSeq)> {
    floe_service::files::read(path, pos, size).await.map_err(unavailable)
}
