//! `slice2rs`: compiles Slice files to Rust for floe.
//!
//! `slice2rs [-I DIR]… [--output-dir DIR] [--checksum] FILE.ice…` writes `<stem>.rs` for each file (all of
//! them when one file includes another are generated together). Exit status 0 on success, 1
//! with diagnostics on stderr otherwise.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;

#[derive(Parser)]
#[command(name = "slice2rs", about = "Compiles Slice (.ice) files to Rust for floe")]
struct Args {
    /// Directories searched by `#include <…>`.
    #[arg(short = 'I', value_name = "DIR")]
    include: Vec<PathBuf>,
    /// Where generated files go.
    #[arg(long = "output-dir", value_name = "DIR", default_value = ".")]
    output_dir: PathBuf,
    /// Path of the floe crate in generated code.
    #[arg(long = "floe-path", default_value = "::floe")]
    floe_path: String,
    /// Map Slice `string` to `String` instead of `floe::CompactString` (in files that do not
    /// choose with `[["rust:std-strings"]]` or `[["rust:compact-strings"]]`).
    #[arg(long = "std-strings")]
    std_strings: bool,
    /// Also generate the Slice checksums of the definitions (`SLICE_CHECKSUMS` and
    /// `slice_checksums()`), computed as Ice's compilers compute them.
    #[arg(long)]
    checksum: bool,
    /// Every class keeps the slices of unknown derived types it is received with, as Ice 3.8
    /// does, not only classes marked `["preserve-slice"]`.
    #[arg(long = "preserve-class-slices")]
    preserve_class_slices: bool,
    /// Only check the files; write nothing.
    #[arg(long)]
    check: bool,
    /// Slice files.
    #[arg(required = true)]
    files: Vec<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let options = floe_slice::gen::Options {
        floe: args.floe_path.clone(),
        std_strings: args.std_strings,
        checksums: args.checksum,
        preserve_class_slices: args.preserve_class_slices,
    };
    let mut failed = false;
    for file in &args.files {
        let c = floe_slice::compile(&[file], &args.include);
        if !c.diagnostics.is_empty() {
            eprintln!("{}", c.render_diagnostics());
        }
        let Some(unit) = c.unit else {
            failed = true;
            continue;
        };
        if args.check {
            continue;
        }
        let code = match floe_slice::generate(&unit, &options) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {}: {e}", file.display());
                failed = true;
                continue;
            }
        };
        let stem = file.file_stem().map(|s| s.to_string_lossy().to_string()).unwrap_or_else(|| "out".into());
        let out = args.output_dir.join(format!("{stem}.rs"));
        if let Err(e) = std::fs::create_dir_all(&args.output_dir).and_then(|_| std::fs::write(&out, code)) {
            eprintln!("error: cannot write {}: {e}", out.display());
            failed = true;
        }
    }
    if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    }
}
