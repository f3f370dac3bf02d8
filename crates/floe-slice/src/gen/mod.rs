//! Rust code generation.
//!
//! Mapping (documented in docs/slice-rust-mapping.md):
//! modules → `pub mod snake_case`; structs → structs with derives (plus a bulk-copy layout when
//! the wire layout equals the memory layout); enums → `#[repr(i32)]` enums; sequences →
//! `Vec<T>` (byte sequences → `bytes::Bytes`, or `Vec<u8>` with `["rust:vec"]`); dictionaries →
//! `HashMap` (or `BTreeMap` with `["rust:btreemap"]`); constants → `pub const`; exceptions →
//! structs implementing `UserExceptionSlices` and `std::error::Error`; interfaces → a typed
//! proxy `NamePrx`, a servant trait `Name` with async methods, and a dispatcher
//! `NameServer<T>`. Operations that declare exceptions return `CallError<NameOpError>` where
//! `NameOpError` lists the declared exceptions and their known subtypes.
//!
//! Where each part is generated (all of them are methods of one generator, `Gen`, which
//! holds the output and the module being written):
//!
//! | file | what |
//! | --- | --- |
//! | `mod.rs` | [`generate`] and [`Options`], the walk over modules and definitions, writing lines, indentation and doc comments, formatting the output |
//! | `names.rs` | identifiers: snake_case, CamelCase, Rust keywords, absolute names, Rust paths |
//! | `types.rs` | the Rust type of each Slice type, and properties of types (sizes, layouts, keys, classes) |
//! | `codec.rs` | encoding and decoding snippets: members, optional (tagged) values, defaults, class instances |
//! | `data.rs` | constants, enums, structs, sequences, dictionaries |
//! | `exceptions.rs` | user exceptions |
//! | `classes.rs` | classes (values), and the unit's class factory |
//! | `interfaces/mod.rs` | interfaces and classes with operations: what is generated, facts about operations |
//! | `interfaces/proxy.rs` | typed proxies (async and `_blocking` methods), operations' error enums |
//! | `interfaces/batch.rs` | batch writers (batched oneway requests) |
//! | `interfaces/servant.rs` | servant traits and dispatchers |

mod classes;
mod codec;
mod data;
mod exceptions;
mod interfaces;
mod names;
mod types;

use std::fmt::Write as _;

use crate::ast::*;
use crate::check::Unit;
use codec::finish_classes;
use names::camel;
pub use names::{ident, snake};

/// Generation options.
#[derive(Debug, Clone)]
pub struct Options {
    /// Path of the floe crate in generated code.
    pub floe: String,
    /// Map Slice `string` to `String` rather than `floe::CompactString` in files that do not
    /// choose with `[["rust:std-strings"]]` or `[["rust:compact-strings"]]`.
    pub std_strings: bool,
    /// Also generate the Slice checksums of the definitions (`SLICE_CHECKSUMS` and
    /// `slice_checksums()`), as Ice's compilers do with `--checksum`; see [`crate::checksum`].
    pub checksums: bool,
    /// Keep the slices of unknown derived types with every class instance received in the
    /// sliced format, as Ice 3.8 does (it has no `["preserve-slice"]`), not only with classes
    /// marked `["preserve-slice"]`, as Ice 3.7 does. Exceptions are not affected.
    pub preserve_class_slices: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options { floe: "::floe".to_string(), std_strings: false, checksums: false, preserve_class_slices: false }
    }
}

/// The generator: the unit being generated, and the output written so far.
struct Gen<'a> {
    /// The checked definitions and their symbols.
    unit: &'a Unit,
    /// Strings map to `CompactString` (the default) rather than `String`
    /// (`[["rust:std-strings"]]` or [`Options::std_strings`]).
    compact_strings: bool,
    /// Path of the floe crate in generated code ([`Options::floe`]).
    f: String,
    /// The Rust written so far.
    out: String,
    /// Indentation level of the next line, in steps of four spaces.
    depth: usize,
    /// The Slice modules (unscoped names) enclosing what is being generated.
    module: Vec<String>,
    /// Definitions left out, listed in a comment at the end of the output.
    skipped: Vec<String>,
    /// Classes generated so far, with their compact ids (for the unit's class factory).
    classes: Vec<(String, Option<i32>)>,
    /// Every class preserves unknown slices ([`Options::preserve_class_slices`]).
    preserve_class_slices: bool,
}

/// Generated code that does not parse as Rust: a bug of the generator, not of the Slice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GenerateError {
    /// What the Rust parser reported.
    pub message: String,
}

impl std::fmt::Display for GenerateError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the Rust generated for this Slice does not parse (a bug of slice2rs): {}", self.message)
    }
}

impl std::error::Error for GenerateError {}

/// Generates Rust for every non-local definition of `unit` that does not come from an
/// included file, formatted by `prettyplease`.
pub fn generate(unit: &Unit, options: &Options) -> Result<String, GenerateError> {
    // `string` maps to CompactString unless the file or the options ask for `String`.
    let has = |name: &str| unit.global_metadata.iter().any(|m| m == name);
    let compact_strings =
        if has("rust:std-strings") { false } else { has("rust:compact-strings") || !options.std_strings };
    let mut g = Gen {
        unit,
        compact_strings,
        f: options.floe.clone(),
        out: String::new(),
        depth: 0,
        module: Vec::new(),
        skipped: Vec::new(),
        classes: Vec::new(),
        preserve_class_slices: options.preserve_class_slices,
    };
    let defs: Vec<Definition> = unit.defs.clone();
    g.defs(&defs);
    g.gen_class_factory();
    if options.checksums {
        g.gen_checksums();
    }
    format(&g.out, &g.skipped)
}

/// Formats generated code with `prettyplease`, under the file's header and above the list of
/// what was left out (plain comments, which do not survive the parser).
fn format(code: &str, skipped: &[String]) -> Result<String, GenerateError> {
    let file = syn::parse_file(code).map_err(|e| GenerateError { message: e.to_string() })?;
    let mut out = String::from("// Generated by slice2rs. Do not edit.\n\n");
    out.push_str(&prettyplease::unparse(&file));
    if !skipped.is_empty() {
        out.push_str("\n// Not generated:\n");
        for s in skipped {
            let _ = writeln!(out, "//   {s}");
        }
    }
    Ok(out)
}

/// Writes `doc` as `///` lines indented by `ind`.
fn doc_lines(out: &mut String, ind: &str, doc: &Option<String>) {
    if let Some(d) = doc {
        for line in d.lines() {
            let line = line.trim();
            if line.is_empty() {
                let _ = writeln!(out, "{ind}///");
            } else {
                let _ = writeln!(out, "{ind}/// {}", line.replace("*/", "* /"));
            }
        }
    }
}

impl Gen<'_> {
    /// `SLICE_CHECKSUMS` (absolute name → checksum as Ice writes it) and `slice_checksums()`,
    /// the same as an `Ice::SliceChecksumDict`.
    fn gen_checksums(&mut self) {
        let sums = crate::checksum::checksums(self.unit);
        let s = if self.compact_strings { format!("{}::CompactString", self.f) } else { "String".to_string() };
        self.line("/// The Slice checksums of the definitions generated here (absolute name, MD5 digest in");
        self.line("/// lowercase hexadecimal as Ice's compilers write it with `--checksum`).");
        self.line("pub const SLICE_CHECKSUMS: &[(&str, &str)] = &[");
        for (name, sum) in &sums {
            self.line(&format!("    ({name:?}, {sum:?}),"));
        }
        self.line("];");
        self.line("");
        self.line("/// [`SLICE_CHECKSUMS`] as an `Ice::SliceChecksumDict` (Slice `dictionary<string, string>`).");
        self.line(&format!("pub fn slice_checksums() -> std::collections::HashMap<{s}, {s}> {{"));
        self.line("    SLICE_CHECKSUMS.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect()");
        self.line("}");
        self.line("");
    }

    /// The indentation of the next line.
    fn ind(&self) -> String {
        "    ".repeat(self.depth)
    }

    /// Writes a Slice doc comment as `///` lines at the current indentation.
    fn doc(&mut self, doc: &Option<String>) {
        let ind = self.ind();
        doc_lines(&mut self.out, &ind, doc);
    }

    /// Writes one line at the current indentation (an empty line stays empty).
    fn line(&mut self, s: &str) {
        if s.is_empty() {
            self.out.push('\n');
        } else {
            let ind = self.ind();
            let _ = writeln!(self.out, "{ind}{s}");
        }
    }

    /// True when some of `defs` generates code (modules that would stay empty are left out).
    fn has_output(&self, defs: &[Definition]) -> bool {
        defs.iter().any(|d| {
            !d.local
                && match &d.kind {
                    DefKind::Module(inner) => self.has_output(inner),
                    _ if d.included => false,
                    DefKind::Class { forward, .. } => !forward,
                    DefKind::Interface { forward: true, .. } => false,
                    _ => true,
                }
        })
    }

    /// Generates `defs`, one Rust module per Slice module, each definition by its kind.
    fn defs(&mut self, defs: &[Definition]) {
        // A module reopened several times (in one file or across files) becomes one Rust module.
        let mut merged: Vec<Definition> = Vec::new();
        for d in defs {
            if let DefKind::Module(inner) = &d.kind {
                if let Some(prev) = merged.iter_mut().find(|m| m.name == d.name && matches!(m.kind, DefKind::Module(_)))
                {
                    if let DefKind::Module(all) = &mut prev.kind {
                        all.extend(inner.iter().cloned());
                    }
                    prev.included &= d.included;
                    continue;
                }
            }
            merged.push(d.clone());
        }
        for d in &merged {
            if d.included && !matches!(d.kind, DefKind::Module(_)) {
                continue;
            }
            if d.local {
                continue;
            }
            let abs = self.abs(&d.name);
            if let DefKind::Module(inner) = &d.kind {
                if !self.has_output(inner) {
                    continue;
                }
                self.doc(&d.doc);
                let name = ident(&snake(&d.name));
                self.line(&format!("pub mod {name} {{"));
                self.depth += 1;
                self.line(
                    "#![allow(unused_imports, dead_code, clippy::all, unused_mut, unused_variables, non_snake_case)]",
                );
                self.line(&format!("use {}::encoding::{{Decode as _, Encode as _}};", self.f));
                self.module.push(d.name.clone());
                self.defs(inner);
                self.module.pop();
                self.depth -= 1;
                self.line("}");
                self.line("");
                continue;
            }
            if let DefKind::Class { forward: false, .. } = &d.kind {
                self.gen_class(d, &abs);
                if self.class_has_proxy(&abs) {
                    // Its operations are served and invoked like an interface's.
                    self.gen_interface(d, &abs);
                }
                continue;
            }
            match &d.kind {
                DefKind::Struct { members } => self.gen_struct(d, members),
                DefKind::Enum { enumerators } => self.gen_enum(d, &abs, enumerators),
                DefKind::Sequence { elem } => self.gen_sequence(d, elem),
                DefKind::Dictionary { key, value } => self.gen_dictionary(d, key, value),
                DefKind::Const { ty, value, .. } => self.gen_const(d, ty, value),
                DefKind::Exception { .. } => self.gen_exception(d, &abs),
                DefKind::Interface { forward: false, .. } => self.gen_interface(d, &abs),
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::format;

    #[test]
    fn generated_code_is_formatted_and_keeps_its_doc_comments() {
        let out = format("/// A point.\npub struct P { pub x: i32 }\n// dropped\n", &["local I".to_string()]).unwrap();
        assert_eq!(
            out,
            "// Generated by slice2rs. Do not edit.\n\n/// A point.\npub struct P {\n    pub x: i32,\n}\n\n// Not generated:\n//   local I\n"
        );
    }

    #[test]
    fn code_that_does_not_parse_is_an_error() {
        let e = format("pub struct P {", &[]).unwrap_err();
        assert!(e.to_string().contains("does not parse (a bug of slice2rs)"), "{e}");
    }
}
