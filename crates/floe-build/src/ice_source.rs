//! Files from ZeroC Ice 3.7.8's Debian source package, for build scripts that need Slice
//! definitions Debian's zeroc-ice-slice does not install (IceGrid's internal protocol) or Ice's
//! own test sources.
//!
//! The package is fetched once per target directory with `apt-get source --download-only`,
//! through a private deb-src list and private apt state (the machine's apt configuration is
//! untouched), into `<target>/ice-source-package/`. Build scripts of several crates may ask at
//! the same time: a lock directory lets one download while the others wait. Nothing of Ice's
//! sources is ever part of floe's own.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, SystemTime};

/// The Ice release whose source package is fetched.
pub const ICE_SOURCE_VERSION: &str = "3.7.8";

/// The target directory of the running build script: `<target>` from
/// `OUT_DIR` = `<target>/<profile>/build/<package>/out`.
pub fn target_dir() -> PathBuf {
    let out = PathBuf::from(std::env::var("OUT_DIR").expect("OUT_DIR is set for build scripts"));
    out.ancestors().nth(4).map(Path::to_path_buf).unwrap_or(out)
}

/// Extracts `members` (paths in the source tarball, each starting with `ice-3.7.8/`; tar
/// wildcards allowed) into `into`, fetching the source package first if this target directory
/// has not got it, and returns `into/ice-3.7.8`. A stamp names what was extracted: asking for
/// the same members again extracts nothing.
pub fn extract(members: &[&str], into: &Path) -> Result<PathBuf, String> {
    let tree = into.join(format!("ice-{ICE_SOURCE_VERSION}"));
    let stamp = into.join(format!("extracted-{:016x}", fingerprint(members)));
    if stamp.exists() && tree.is_dir() {
        return Ok(tree);
    }
    let tarball = fetch()?;
    std::fs::create_dir_all(into).map_err(|e| format!("{}: {e}", into.display()))?;
    let status = Command::new("tar")
        .arg("-xJf")
        .arg(&tarball)
        .arg("-C")
        .arg(into)
        .arg("--wildcards")
        .args(members)
        .status()
        .map_err(|e| format!("tar: {e}"))?;
    if !status.success() {
        return Err(format!("tar could not extract {members:?} from {}", tarball.display()));
    }
    std::fs::write(&stamp, members.join("\n")).map_err(|e| e.to_string())?;
    Ok(tree)
}

/// A stable hash of the member list (FNV-1a), so that a longer or different list extracts again.
fn fingerprint(members: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in members.join("\n").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// The source tarball, downloaded under `<target>/ice-source-package/` unless it is there.
pub fn fetch() -> Result<PathBuf, String> {
    let cache = target_dir().join("ice-source-package");
    let tarball = cache.join(format!("download/zeroc-ice_{ICE_SOURCE_VERSION}.orig.tar.xz"));
    if tarball.exists() {
        return Ok(tarball);
    }
    std::fs::create_dir_all(&cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let _lock = Lock::take(&cache.join("lock"))?;
    if !tarball.exists() {
        download(&cache)?;
    }
    if tarball.exists() {
        Ok(tarball)
    } else {
        Err(format!("apt-get source left no {}", tarball.display()))
    }
}

fn download(cache: &Path) -> Result<(), String> {
    let download = cache.join("download");
    let lists = cache.join("apt-lists");
    let parts = cache.join("apt-sources");
    for d in [&download, &lists.join("partial"), &parts, &cache.join("apt-cache/archives/partial")] {
        std::fs::create_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
    }
    std::fs::write(
        parts.join("deb-src.sources"),
        "Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\n\
         Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg\n",
    )
    .map_err(|e| e.to_string())?;
    let apt = |args: &[&str]| -> Result<(), String> {
        let out = Command::new("apt-get")
            .current_dir(&download)
            .arg("-qq")
            .arg("-o")
            .arg("Dir::Etc::SourceList=/dev/null")
            .arg("-o")
            .arg(format!("Dir::Etc::SourceParts={}", parts.display()))
            .arg("-o")
            .arg(format!("Dir::State::Lists={}", lists.display()))
            .arg("-o")
            .arg("Debug::NoLocking=1")
            .arg("-o")
            .arg(format!("Dir::Cache={}", cache.join("apt-cache").display()))
            .arg("-o")
            .arg(format!("Dir::Cache::Archives={}", cache.join("apt-cache/archives").display()))
            .args(args)
            .output()
            .map_err(|e| format!("apt-get: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!("apt-get {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr)))
        }
    };
    apt(&["update"])?;
    apt(&["source", "--download-only", &format!("zeroc-ice={ICE_SOURCE_VERSION}-2.1")])
        .or_else(|_| apt(&["source", "--download-only", "zeroc-ice"]))
}

/// A directory made with `create_dir` (atomic), removed when dropped. One left by a killed
/// build is taken over after ten minutes.
struct Lock(PathBuf);

impl Lock {
    fn take(path: &Path) -> Result<Lock, String> {
        let started = SystemTime::now();
        loop {
            match std::fs::create_dir(path) {
                Ok(()) => return Ok(Lock(path.to_path_buf())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|t| t.elapsed().ok())
                        .unwrap_or_default();
                    if age > Duration::from_secs(600) {
                        let _ = std::fs::remove_dir(path);
                        continue;
                    }
                    if started.elapsed().unwrap_or_default() > Duration::from_secs(900) {
                        return Err(format!("{} is still held after 15 minutes", path.display()));
                    }
                    std::thread::sleep(Duration::from_millis(200));
                }
                Err(e) => return Err(format!("{}: {e}", path.display())),
            }
        }
    }
}

impl Drop for Lock {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir(&self.0);
    }
}
