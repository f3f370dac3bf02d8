//! `Ice.StdOut` and `Ice.StdErr`: a communicator whose properties name files sends the
//! process's standard output and error there (appended), as Ice's runtime does, before
//! anything else runs. IceGrid nodes set both for the servers they start with an output
//! directory.

use std::os::fd::AsRawFd;

use crate::error::{Error, Result};
use crate::properties::Properties;

/// Redirects file descriptors 1 and 2 to the files the properties name (unset or empty: left
/// alone). A file that cannot be opened is a property error.
pub(crate) fn redirect(properties: &Properties) -> Result<()> {
    for (name, fd) in [("Ice.StdOut", 1), ("Ice.StdErr", 2)] {
        let Some(path) = properties.get(name).filter(|p| !p.is_empty()) else { continue };
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(|e| Error::Property { name: name.into(), reason: format!("cannot open {path}: {e}") })?;
        use std::io::Write;
        let _ = if fd == 1 { std::io::stdout().flush() } else { std::io::stderr().flush() };
        // SAFETY: dup2 onto 1 or 2 from a descriptor this function owns; the file is closed
        // afterwards, the duplicate stays.
        if unsafe { libc::dup2(file.as_raw_fd(), fd) } < 0 {
            let e = std::io::Error::last_os_error();
            return Err(Error::Property { name: name.into(), reason: format!("cannot redirect to {path}: {e}") });
        }
    }
    Ok(())
}
