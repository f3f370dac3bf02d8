#![doc = include_str!("../README.md")]

pub mod ice_source;

use std::path::{Path, PathBuf};

/// The caller's include directories followed by floe's built-in Slice directory (which has
/// `Ice/Identity.ice` and `Ice/Context.ice`).
fn with_builtin(include_dirs: &[impl AsRef<Path>]) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = include_dirs.iter().map(|d| d.as_ref().to_path_buf()).collect();
    v.push(Path::new(env!("CARGO_MANIFEST_DIR")).join("slice"));
    v
}

/// Builder for a Slice compilation.
#[derive(Debug, Clone)]
pub struct Builder {
    out_dir: Option<PathBuf>,
    floe_path: String,
    emit_rerun: bool,
    std_strings: bool,
    checksums: bool,
    preserve_class_slices: bool,
}

/// A builder with default settings: output in `$OUT_DIR`, floe at `::floe`.
pub fn configure() -> Builder {
    Builder {
        out_dir: None,
        floe_path: "::floe".into(),
        emit_rerun: true,
        std_strings: false,
        checksums: false,
        preserve_class_slices: false,
    }
}

/// Compiles with default settings.
pub fn compile(files: &[impl AsRef<Path>], include_dirs: &[impl AsRef<Path>]) -> Result<(), Error> {
    configure().compile(files, include_dirs)
}

/// Why compilation failed.
#[derive(Debug)]
pub enum Error {
    /// The Slice has errors; the rendered diagnostics.
    Slice(String),
    /// Writing the output failed.
    Io(std::io::Error),
    /// `OUT_DIR` is not set and no output directory was given.
    NoOutDir,
    /// The generated Rust does not parse (a bug of the generator).
    Generate(floe_slice::GenerateError),
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Slice(d) => write!(f, "Slice compilation failed:\n{d}"),
            Error::Io(e) => write!(f, "cannot write generated code: {e}"),
            Error::NoOutDir => write!(f, "OUT_DIR is not set; call out_dir()"),
            Error::Generate(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {}

impl Builder {
    /// Writes generated files here instead of `$OUT_DIR`.
    pub fn out_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.out_dir = Some(dir.into());
        self
    }

    /// The path of the floe crate in generated code (default `::floe`).
    pub fn floe_path(mut self, path: &str) -> Self {
        self.floe_path = path.to_string();
        self
    }

    /// Maps Slice `string` to `String` instead of the default `floe::CompactString` in files
    /// without `[["rust:std-strings"]]` or `[["rust:compact-strings"]]` (default false).
    pub fn std_strings(mut self, on: bool) -> Self {
        self.std_strings = on;
        self
    }

    /// Also generates the Slice checksums of the compiled definitions, as Ice's compilers do
    /// with `--checksum` (default false): a `SLICE_CHECKSUMS` table and a `slice_checksums()`
    /// function returning them as an `Ice::SliceChecksumDict` (absolute name → digest).
    pub fn checksums(mut self, on: bool) -> Self {
        self.checksums = on;
        self
    }

    /// Whether every class keeps the slices of unknown derived types it is received with (in
    /// the sliced format), as Ice 3.8 does, rather than only classes marked
    /// `["preserve-slice"]`, as Ice 3.7 does (default false).
    pub fn preserve_class_slices(mut self, on: bool) -> Self {
        self.preserve_class_slices = on;
        self
    }

    /// Whether to print `cargo:rerun-if-changed` lines (default true).
    pub fn emit_rerun_if_changed(mut self, on: bool) -> Self {
        self.emit_rerun = on;
        self
    }

    fn options(&self) -> floe_slice::gen::Options {
        floe_slice::gen::Options {
            floe: self.floe_path.clone(),
            std_strings: self.std_strings,
            checksums: self.checksums,
            preserve_class_slices: self.preserve_class_slices,
        }
    }

    /// Compiles several files as one unit (so that definitions shared between them are
    /// generated once) into `file_name` in the output directory.
    pub fn compile_into(
        self,
        files: &[impl AsRef<Path>],
        include_dirs: &[impl AsRef<Path>],
        file_name: &str,
    ) -> Result<(), Error> {
        let out_dir = match self.out_dir.clone().or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from)) {
            Some(d) => d,
            None => return Err(Error::NoOutDir),
        };
        let includes = with_builtin(include_dirs);
        let c = floe_slice::compile(files, &includes);
        if self.emit_rerun {
            for f in &c.sources.files {
                println!("cargo:rerun-if-changed={}", f.path);
            }
        }
        let Some(unit) = c.unit.as_ref() else {
            return Err(Error::Slice(c.render_diagnostics()));
        };
        let code = floe_slice::generate(unit, &self.options()).map_err(Error::Generate)?;
        std::fs::create_dir_all(&out_dir).map_err(Error::Io)?;
        std::fs::write(out_dir.join(file_name), code).map_err(Error::Io)
    }

    /// Compiles each file to `<stem>.rs` in the output directory.
    pub fn compile(self, files: &[impl AsRef<Path>], include_dirs: &[impl AsRef<Path>]) -> Result<(), Error> {
        let out_dir = match self.out_dir.clone().or_else(|| std::env::var_os("OUT_DIR").map(PathBuf::from)) {
            Some(d) => d,
            None => return Err(Error::NoOutDir),
        };
        let includes = with_builtin(include_dirs);
        let options = self.options();
        for file in files {
            let file = file.as_ref();
            let c = floe_slice::compile(&[file], &includes);
            if self.emit_rerun {
                for f in &c.sources.files {
                    println!("cargo:rerun-if-changed={}", f.path);
                }
            }
            let Some(unit) = c.unit.as_ref() else {
                return Err(Error::Slice(c.render_diagnostics()));
            };
            let code = floe_slice::generate(unit, &options).map_err(Error::Generate)?;
            let stem = file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "out".into());
            std::fs::create_dir_all(&out_dir).map_err(Error::Io)?;
            std::fs::write(out_dir.join(format!("{stem}.rs")), code).map_err(Error::Io)?;
        }
        Ok(())
    }
}
