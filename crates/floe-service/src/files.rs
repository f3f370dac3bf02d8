//! Reading a text file by lines, as IceGrid's `FileReader` serves the standard output and
//! error files and the logs of registries, nodes and servers (what `icegridadmin … show`
//! prints): where the last lines of a file start, and reads of whole lines that fit in a
//! message.
//!
//! Errors are strings, for the caller to wrap in its own typed exception
//! (`IceGrid::FileNotAvailableException`).

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// What one line costs in a read's byte budget beyond its text: the worst case of the
/// encoding of a string's size.
const LINE_OVERHEAD: usize = 5;

/// How much of the file is read at a time when looking for the last lines.
const BLOCK: u64 = 16 * 1024;

fn open(path: &Path) -> Result<File, String> {
    File::open(path).map_err(|e| format!("failed to open file `{}': {e}", path.display()))
}

/// What [`offset_from_end`] does, on the calling thread.
fn offset_from_end_now(path: &Path, lines: i32) -> Result<i64, String> {
    let mut file = open(path)?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    if lines < 0 {
        return Ok(0);
    }
    if lines == 0 || len == 0 {
        return Ok(len as i64);
    }
    // Newlines seen from the end; the one that ends the file does not count.
    let mut newlines = 0;
    let mut end = len;
    let mut buf = vec![0u8; BLOCK as usize];
    while end > 0 {
        let start = end.saturating_sub(BLOCK);
        let chunk = &mut buf[..(end - start) as usize];
        file.seek(SeekFrom::Start(start)).map_err(|e| e.to_string())?;
        file.read_exact(chunk).map_err(|e| e.to_string())?;
        for (i, b) in chunk.iter().enumerate().rev() {
            let at = start + i as u64;
            if *b != b'\n' || at + 1 == len {
                continue;
            }
            newlines += 1;
            if newlines == lines {
                return Ok((at + 1) as i64);
            }
        }
        end = start;
    }
    Ok(0)
}

/// What [`read`] does, on the calling thread.
fn read_now(path: &Path, pos: i64, size: i32) -> Result<(bool, i64, Vec<String>), String> {
    let size = usize::try_from(size).unwrap_or(0);
    if size <= LINE_OVERHEAD {
        return Err("maximum bytes per read request is too low".into());
    }
    let mut file = open(path)?;
    let len = file.metadata().map_err(|e| e.to_string())?.len();
    let pos = u64::try_from(pos).unwrap_or(0);
    if pos >= len {
        return Ok((true, len as i64, Vec::new()));
    }
    file.seek(SeekFrom::Start(pos)).map_err(|e| e.to_string())?;
    // At most the budget, and one byte more to see whether the last line ends there.
    let mut reader = BufReader::new(file.take(size as u64 + 1));
    let mut lines = Vec::new();
    let mut next = pos;
    let mut used = 0;
    let mut raw = Vec::new();
    loop {
        raw.clear();
        let n = reader.read_until(b'\n', &mut raw).map_err(|e| e.to_string())?;
        let complete = raw.last() == Some(&b'\n');
        if complete {
            raw.pop();
        }
        let room = size - used;
        if raw.len() + LINE_OVERHEAD > room {
            if room > LINE_OVERHEAD {
                let cut = char_boundary(&raw, room - LINE_OVERHEAD);
                next += cut as u64;
                lines.push(String::from_utf8_lossy(&raw[..cut]).into_owned());
            } else {
                lines.push(String::new());
            }
            return Ok((false, next as i64, lines));
        }
        used += raw.len() + LINE_OVERHEAD;
        lines.push(String::from_utf8_lossy(&raw).into_owned());
        next += n as u64;
        if !complete {
            // The end of the file (the reader's limit is past the budget, so not that).
            return Ok((next >= len, next as i64, lines));
        }
    }
}

/// Where to cut `raw` so that the first part has at most `max` bytes and does not end in
/// the middle of a UTF-8 character; at least one byte when `max` allows one (bytes that are
/// not UTF-8 are cut anywhere).
fn char_boundary(raw: &[u8], max: usize) -> usize {
    let max = max.min(raw.len());
    let mut cut = max;
    while cut > 0 && cut < raw.len() && (raw[cut] & 0xC0) == 0x80 && max - cut < 3 {
        cut -= 1;
    }
    if cut == 0 {
        max.min(1)
    } else {
        cut
    }
}

/// The offset where the last `lines` lines of the file start: 0 when `lines` is negative,
/// the end of the file when it is 0. A newline that ends the file ends its last line; it does
/// not start an empty one. The file is read backwards, a block at a time, only as far as the
/// lines asked for.
/// Read on a blocking thread, as a long file takes a while.
pub async fn offset_from_end(path: PathBuf, lines: i32) -> Result<i64, String> {
    off_runtime(move || offset_from_end_now(&path, lines)).await
}

/// Reads whole lines from `pos` within a budget of `size` bytes (each line costs its length
/// plus 5 bytes, the worst case of the encoding of a string's size): whether the end of the
/// file was reached, the position to read from next, and the lines without their newlines
/// (invalid UTF-8 replaced). A line that does not fit is cut to what fits, at a character
/// boundary, and the rest comes with the next read; a read makes progress whenever the
/// budget allows a byte. As a reader line by line does, a file that ends with a newline gives
/// a last empty line once its end is reached. No more than the budget is read from the file.
/// Read on a blocking thread.
pub async fn read(path: PathBuf, pos: i64, size: i32) -> Result<(bool, i64, Vec<String>), String> {
    off_runtime(move || read_now(&path, pos, size)).await
}

async fn off_runtime<T: Send + 'static>(f: impl FnOnce() -> Result<T, String> + Send + 'static) -> Result<T, String> {
    tokio::task::spawn_blocking(f).await.map_err(|e| format!("the file read did not finish: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, text: &str) -> std::path::PathBuf {
        let path = std::env::temp_dir().join(format!("floe-service-files-{name}-{}", std::process::id()));
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_last_lines_start_after_the_newline_before_them() {
        let path = file("tail", "one\ntwo\nthree\n");
        assert_eq!(offset_from_end_now(&path, 1).unwrap(), 8);
        assert_eq!(offset_from_end_now(&path, 2).unwrap(), 4);
        assert_eq!(offset_from_end_now(&path, 3).unwrap(), 0);
        assert_eq!(offset_from_end_now(&path, 10).unwrap(), 0);
        assert_eq!(offset_from_end_now(&path, 0).unwrap(), 14);
        assert_eq!(offset_from_end_now(&path, -1).unwrap(), 0);
        std::fs::remove_file(&path).unwrap();
        assert!(offset_from_end_now(&path, 1).is_err());
    }

    #[test]
    fn the_last_lines_of_a_file_longer_than_a_block() {
        let text: String = (0..10_000).map(|k| format!("line {k}\n")).collect();
        let path = file("long", &text);
        let at = offset_from_end_now(&path, 3).unwrap() as usize;
        assert_eq!(&text[at..], "line 9997\nline 9998\nline 9999\n");
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn reads_give_whole_lines_within_the_budget() {
        let path = file("read", "one\ntwo\nthree");
        let (eof, next, lines) = read_now(&path, 0, 100).unwrap();
        assert_eq!((eof, next, lines), (true, 13, vec!["one".to_string(), "two".into(), "three".into()]));
        // 8 + 8 bytes for the first two lines, then 2 bytes left: an empty partial line.
        let (eof, next, lines) = read_now(&path, 0, 18).unwrap();
        assert_eq!((eof, next, lines), (false, 8, vec!["one".to_string(), "two".into(), String::new()]));
        // A line cut to what fits; the next read goes on from there.
        let (eof, next, lines) = read_now(&path, 8, 8).unwrap();
        assert_eq!((eof, next, lines), (false, 11, vec!["thr".to_string()]));
        let (eof, next, lines) = read_now(&path, 11, 100).unwrap();
        assert_eq!((eof, next, lines), (true, 13, vec!["ee".to_string()]));
        assert_eq!(read_now(&path, 13, 100).unwrap(), (true, 13, vec![]));
        assert!(read_now(&path, 0, 5).is_err());
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn long_lines_and_multibyte_characters_are_cut_and_read_on() {
        let path = file("cut", "ééé\n");
        // 6 bytes of text, 7 of budget: 2 bytes fit, one `é`.
        assert_eq!(read_now(&path, 0, 7).unwrap(), (false, 2, vec!["é".to_string()]));
        assert_eq!(read_now(&path, 2, 100).unwrap(), (true, 7, vec!["éé".to_string(), String::new()]));
        // A budget of a byte still moves on.
        let (_, next, _) = read_now(&path, 0, 6).unwrap();
        assert_eq!(next, 1);
        std::fs::remove_file(&path).unwrap();
        // A long line without a newline is read a budget at a time.
        let path = file("long-line", &"x".repeat(100_000));
        let (eof, next, lines) = read_now(&path, 0, 1005).unwrap();
        assert_eq!((eof, next, lines[0].len()), (false, 1000, 1000));
        std::fs::remove_file(&path).unwrap();
    }

    #[test]
    fn a_final_newline_gives_a_last_empty_line() {
        let path = file("newline", "one\n");
        assert_eq!(read_now(&path, 0, 100).unwrap(), (true, 4, vec!["one".to_string(), String::new()]));
        std::fs::remove_file(&path).unwrap();
    }
}
