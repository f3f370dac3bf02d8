//! `IceGrid::FileReader` for the node and its servers: `icegridadmin node show` and
//! `server show` read the standard output and error files (`stdout`, `stderr`) and the
//! descriptor's log files (`#<path>`).

use std::io::{Read, Seek, SeekFrom};
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

fn open(path: &PathBuf) -> floe::Result<std::fs::File> {
    std::fs::File::open(path).map_err(|e| unavailable(format!("cannot open `{}': {e}", path.display())))
}

/// The offset where the last `lines` lines of the file start (`lines` < 0: the start).
pub fn offset_from_end(path: &PathBuf, lines: i32) -> floe::Result<i64> {
    let mut text = Vec::new();
    open(path)?.read_to_end(&mut text).map_err(|e| unavailable(e.to_string()))?;
    if lines < 0 {
        return Ok(0);
    }
    let mut wanted = lines as usize;
    // A final newline ends the last line; it does not start an empty one.
    let mut end = text.len();
    if end > 0 && text[end - 1] == b'\n' {
        end -= 1;
    }
    let mut at = end;
    while at > 0 {
        if text[at - 1] == b'\n' {
            if wanted == 0 {
                break;
            }
            wanted -= 1;
            if wanted == 0 {
                break;
            }
        }
        at -= 1;
    }
    if lines == 0 {
        at = text.len();
    }
    Ok(at as i64)
}

/// Up to `size` bytes from `pos`, as whole lines (a last line without its newline only at
/// the end of the file): whether the end was reached, the next position, the lines.
pub fn read(path: &PathBuf, pos: i64, size: i32) -> floe::Result<(bool, i64, StringSeq)> {
    let mut file = open(path)?;
    let len = file.metadata().map_err(|e| unavailable(e.to_string()))?.len();
    let pos = u64::try_from(pos).unwrap_or(0).min(len);
    file.seek(SeekFrom::Start(pos)).map_err(|e| unavailable(e.to_string()))?;
    let mut buf = vec![0; usize::try_from(size.clamp(1, 1 << 20)).unwrap_or(1)];
    let mut n = 0;
    while n < buf.len() {
        match file.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) => return Err(unavailable(e.to_string())),
        }
    }
    buf.truncate(n);
    let at_end = pos + n as u64 >= len;
    let used = if at_end { n } else { buf.iter().rposition(|b| *b == b'\n').map_or(n, |i| i + 1) };
    let lines = String::from_utf8_lossy(&buf[..used])
        .split_inclusive('\n')
        .map(|l| l.trim_end_matches('\n').to_string())
        .collect();
    Ok((pos + used as u64 >= len, (pos + used as u64) as i64, lines))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_lines_and_the_reads_split_at_newlines() {
        let path = std::env::temp_dir().join(format!("floe-node-files-{}", std::process::id()));
        std::fs::write(&path, "one\ntwo\nthree\n").unwrap();
        assert_eq!(offset_from_end(&path, 1).unwrap(), 8);
        assert_eq!(offset_from_end(&path, 2).unwrap(), 4);
        assert_eq!(offset_from_end(&path, 10).unwrap(), 0);
        assert_eq!(offset_from_end(&path, -1).unwrap(), 0);
        let (eof, next, lines) = read(&path, 0, 6).unwrap();
        assert_eq!((eof, next, lines), (false, 4, vec!["one".to_string()]));
        let (eof, next, lines) = read(&path, 4, 100).unwrap();
        assert_eq!((eof, next, lines), (true, 14, vec!["two".to_string(), "three".to_string()]));
        std::fs::remove_file(&path).unwrap();
        assert!(read(&path, 0, 10).is_err());
    }
}
