//! floe-slice: a Slice 3.7 compiler front end (preprocessor, lexer, parser, semantic checks
//! with stable diagnostic codes) and a Rust code generator for floe. The `slice2rs` binary
//! and the `floe-build` crate are thin layers over [`compile`] and [`generate`].

pub mod ast;
pub mod check;
pub mod checksum;
pub mod diag;
pub mod gen;
pub mod lexer;
mod names;
pub mod parser;
pub mod preprocess;

use std::path::{Path, PathBuf};

pub use check::Unit;
pub use diag::{Code, Diagnostic, Severity, Span};
pub use gen::GenerateError;

/// One loaded source file.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// Path as given.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// Every file read during a compilation, for rendering diagnostics.
#[derive(Debug, Clone, Default)]
pub struct SourceMap {
    /// The files; [`Span::file`] indexes this.
    pub files: Vec<SourceFile>,
}

/// The result of compiling: the checked unit (when there were no errors), every diagnostic,
/// and the sources they point into.
#[derive(Debug)]
pub struct Compilation {
    /// The checked definitions; `None` if any error was found.
    pub unit: Option<Unit>,
    /// Errors and warnings.
    pub diagnostics: Vec<Diagnostic>,
    /// Sources for rendering diagnostics.
    pub sources: SourceMap,
}

impl Compilation {
    /// True when compilation found an error.
    pub fn has_errors(&self) -> bool {
        self.diagnostics.iter().any(|d| d.severity == Severity::Error)
    }

    /// Every diagnostic rendered like rustc's.
    pub fn render_diagnostics(&self) -> String {
        self.diagnostics.iter().map(|d| d.render(&self.sources)).collect::<Vec<_>>().join("\n")
    }
}

fn finish(pp: preprocess::Preprocessor<'_>, out: preprocess::Preprocessed) -> Compilation {
    let mut diagnostics = pp.diags;
    let sources = pp.sources;
    let mut parser = parser::Parser::new(out.runs);
    let defs = parser.parse();
    diagnostics.extend(parser.diags);
    diagnostics.extend(check::check_identifiers(&parser.defined, &parser.file_metadata));
    let (unit, check_diags) = check::check(defs, parser.global_metadata);
    diagnostics.extend(check_diags);
    let failed = diagnostics.iter().any(|d| d.severity == Severity::Error);
    Compilation { unit: if failed { None } else { Some(unit) }, diagnostics, sources }
}

/// Compiles Slice files (and what they include, searched in `include_dirs`).
pub fn compile(files: &[impl AsRef<Path>], include_dirs: &[PathBuf]) -> Compilation {
    let mut pp = preprocess::Preprocessor::new(include_dirs);
    let mains: Vec<PathBuf> = files.iter().map(|f| f.as_ref().to_path_buf()).collect();
    pp.set_main_files(&mains);
    let mut out = preprocess::Preprocessed { runs: Vec::new() };
    for f in files {
        pp.file(f.as_ref(), false, &mut out, Span::default());
    }
    finish(pp, out)
}

/// Compiles Slice source text held in memory (named `name` in diagnostics).
pub fn compile_str(name: &str, text: &str, include_dirs: &[PathBuf]) -> Compilation {
    let mut pp = preprocess::Preprocessor::new(include_dirs);
    let mut out = preprocess::Preprocessed { runs: Vec::new() };
    let id = pp.add_virtual(name, text);
    let canon = PathBuf::from(name);
    pp.text(id, text, None, false, &mut out, &canon);
    finish(pp, out)
}

/// Generates Rust for the definitions of a checked unit that come from the files given to
/// [`compile`] (not from included files), formatted. An error means the generator wrote Rust
/// that does not parse: a bug of the generator.
pub fn generate(unit: &Unit, options: &gen::Options) -> Result<String, gen::GenerateError> {
    gen::generate(unit, options)
}
