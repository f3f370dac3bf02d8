//! Slice checksums against ZeroC's own compilers: for the same Slice files, `slice2py
//! --checksum` and `slice2cpp --checksum` (Debian's zeroc-ice-compilers) must give exactly
//! the dictionary floe-slice computes — the same names, the same digests. The files are the
//! Slice that ships with Ice (`/usr/share/ice/slice`) and a set of tricky definitions written
//! here (metadata, comments, optional members and parameters, default values, nested modules,
//! compact ids, constants of every kind).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

const ICE_SLICE: &str = "/usr/share/ice/slice";

/// Definitions whose checksums are easy to get wrong.
const TRICKY: &[(&str, &str)] = &[
    (
        "Members.ice",
        r#"
[["suppress-warning:deprecated"]]
module M
{
    /** A doc comment does not count. */
    ["cpp:type:wstring"] struct S
    {
        int a = 5;             // a default value does not count
        string b = "x";
        bool c;
        ["protected"] double d;
        Object* p;
        Object o;
    }
    class Base(3) { int x; }
    class D extends Base
    {
        optional(5) int o5;
        string plain;
        optional(2) string o2;
        optional(9) S os;
        long after;
    }
    interface I1 { void ping(); }
    interface I2 extends I1 {}
    class Impl extends Base implements I1, I2 { int y; void own(int z); }
    class OnlyImpl implements I1 {}
    exception E1 { int code = 3; optional(4) string why; optional(1) int n; }
    exception E2 extends E1 { string more; }
    local struct Hidden { int x; }
    local interface LocalI { void f(); }
    class Fwd;
    interface FwdI;
    sequence<bool> Bools;
    sequence<Object*> Prxs;
    sequence<I1*> I1Prxs;
    sequence<Base> Bases;
    dictionary<string, Base> ByName;
    dictionary<long, ::M::S> ByNumber;
}
"#,
    ),
    (
        "Operations.ice",
        r#"
module M
{
    exception X {}
    exception Y extends X {}
    interface Ops
    {
        idempotent void a();
        ["amd"] int b(int x, out string y);
        optional(2) int c(optional(1) int a, int b, out optional(3) string c, out int d) throws X, Y;
        void d(optional(7) int a, optional(3) bool b);
        void e(string z, out optional(1) int a) throws Y;
        string f(string s1, string s2, out Ops* o);
    }
    interface Empty {}
}
"#,
    ),
    (
        "Nested.ice",
        r#"
module Outer
{
    module Inner
    {
        enum Color { red, green, blue }
        enum Explicit { one = 1, ten = 10, two = 2, three }
        struct P { Color c; }
        module Deeper { sequence<P> Ps; }
    }
    module Inner { dictionary<Inner::Color, Inner::Deeper::Ps> ColorMap; }
    const int Base = 7;
    enum ByConst { k = Base, l }
}
module Outer2 { struct Q { Outer::Inner::P p; } }
"#,
    ),
    (
        "Constants.ice",
        r#"
module C
{
    const bool T = true;
    const bool F = false;
    const byte By = 0xff;
    const short Sh = -017;
    const int I = +42;
    const long L = 9223372036854775807;
    const long Neg = -9223372036854775807;
    const float Fl = 1.5e10;
    const float Ff = 3.25f;
    const float FromInt = 3;
    const double D1 = 0.1;
    const double D2 = 123456789.0;
    const double D3 = 1.5e-5;
    const double D4 = 100000.0;
    const double D5 = 1000000.0;
    const double D6 = .5;
    const double D7 = 2.;
    const double D8 = -3.14159265358979;
    const string Plain = "hello";
    const string Escapes = "a\\b\"c\'d\?e\n\t\r\a\b\f\v";
    const string Unicode = "caf\u00e9 \U0001F600 é";
    const string Bytes = "\x41\101\7\x7f";
    const string Empty = "";
    enum Color { red, green, blue }
    const Color Green = green;
    const Color Blue = Color::blue;
    const Color Red = ::C::red;
    const int Copy = I;
    const string CopyString = Escapes;
    const Color CopyEnum = Green;
    module Inner { const long Outer = I; }
}
"#,
    ),
];

/// `slice2py --checksum`'s dictionary for one file: the `Ice.sliceChecksums["…"] = "…"` lines.
fn slice2py(file: &Path, includes: &[&Path], out: &Path) -> BTreeMap<String, String> {
    let mut cmd = Command::new("slice2py");
    cmd.arg("--checksum").arg("--output-dir").arg(out);
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    let status = cmd.arg(file).output().expect("slice2py runs (zeroc-ice-compilers)");
    assert!(status.status.success(), "slice2py {}: {}", file.display(), String::from_utf8_lossy(&status.stderr));
    // Files with `python:pkgdir` metadata go to a package directory.
    let stem = file.file_stem().unwrap().to_string_lossy().to_string();
    let name = format!("{stem}_ice.py");
    let mut found = None;
    let mut dirs = vec![out.to_path_buf()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.file_name().is_some_and(|n| n.to_string_lossy() == name) {
                found = Some(p);
            }
        }
    }
    let path = found.unwrap_or_else(|| panic!("slice2py wrote no {name}"));
    let text = std::fs::read_to_string(&path).expect("slice2py output");
    let _ = std::fs::remove_file(&path);
    let mut map = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("Ice.sliceChecksums[\"") {
            let (name, rest) = rest.split_once("\"] = \"").expect("checksum line");
            map.insert(name.to_string(), rest.trim_end_matches('"').to_string());
        }
    }
    map
}

/// `slice2cpp --checksum`'s dictionary for one file: the `"name", "sum",` lines of its table.
fn slice2cpp(file: &Path, includes: &[&Path], out: &Path) -> BTreeMap<String, String> {
    let mut cmd = Command::new("slice2cpp");
    cmd.arg("--checksum").arg("--output-dir").arg(out);
    for i in includes {
        cmd.arg(format!("-I{}", i.display()));
    }
    let status = cmd.arg(file).output().expect("slice2cpp runs (zeroc-ice-compilers)");
    assert!(status.status.success(), "slice2cpp {}: {}", file.display(), String::from_utf8_lossy(&status.stderr));
    let stem = file.file_stem().unwrap().to_string_lossy().to_string();
    let text = std::fs::read_to_string(out.join(format!("{stem}.cpp"))).expect("slice2cpp output");
    let mut map = BTreeMap::new();
    // The table appears once per C++ mapping (C++11 and C++98), the same both times.
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("\"::") {
            if let Some((name, sum)) = rest.split_once("\", \"") {
                let sum = sum.trim_end_matches("\",");
                if sum.chars().all(|c| c.is_ascii_hexdigit()) {
                    map.insert(format!("::{name}"), sum.to_string());
                }
            }
        }
    }
    map
}

fn floe(file: &Path, includes: &[&Path]) -> BTreeMap<String, String> {
    let dirs: Vec<PathBuf> = includes.iter().map(|p| p.to_path_buf()).collect();
    let c = floe_slice::compile(&[file], &dirs);
    let unit = c.unit.as_ref().unwrap_or_else(|| panic!("{}: {}", file.display(), c.render_diagnostics()));
    floe_slice::checksum::checksums(unit)
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("floe-slice-checksums-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Compares one file; returns the differences (empty when all three agree).
fn compare(file: &Path, includes: &[&Path], out: &Path) -> Vec<String> {
    let ours = floe(file, includes);
    let py = slice2py(file, includes, out);
    let cpp = slice2cpp(file, includes, out);
    let mut diffs = Vec::new();
    if py != cpp {
        diffs.push(format!("{}: slice2py and slice2cpp disagree: {py:?} / {cpp:?}", file.display()));
    }
    for name in ours.keys().chain(py.keys()).collect::<std::collections::BTreeSet<_>>() {
        if ours.get(name) != py.get(name) {
            diffs.push(format!("{}: {name}: floe {:?}, slice2py {:?}", file.display(), ours.get(name), py.get(name)));
        }
    }
    diffs
}

#[test]
fn tricky_definitions_match_slice2py_and_slice2cpp() {
    let dir = scratch("tricky");
    let mut diffs = Vec::new();
    let mut count = 0;
    for (name, text) in TRICKY {
        let file = dir.join(name);
        std::fs::write(&file, text).unwrap();
        count += floe(&file, &[]).len();
        diffs.extend(compare(&file, &[], &dir));
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(count > 50, "only {count} checksums compared");
    assert!(diffs.is_empty(), "checksums differ:\n{}", diffs.join("\n"));
}

#[test]
fn ice_slice_files_match_slice2py_and_slice2cpp() {
    let root = Path::new(ICE_SLICE);
    assert!(root.join("Ice").is_dir(), "{ICE_SLICE} is missing (Debian zeroc-ice-slice: bash scripts/install-deps)");
    let out = scratch("ice");
    let mut diffs = Vec::new();
    let mut files = 0;
    let mut sums = 0;
    let mut dirs = vec![root.to_path_buf()];
    while let Some(d) = dirs.pop() {
        let mut entries: Vec<PathBuf> = std::fs::read_dir(&d).unwrap().flatten().map(|e| e.path()).collect();
        entries.sort();
        for path in entries {
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "ice") {
                files += 1;
                sums += floe(&path, &[root]).len();
                diffs.extend(compare(&path, &[root], &out));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&out);
    assert!(files > 60, "only {files} Slice files under {ICE_SLICE}");
    assert!(sums > 200, "only {sums} checksums compared");
    assert!(diffs.is_empty(), "checksums differ:\n{}", diffs.join("\n"));
}

/// A string constant's checksum covers Ice's rendering of its literal, not its value: two
/// spellings of one string differ where Ice's do.
#[test]
fn string_constants_hash_their_spelling_as_ice_does() {
    let sum = |literal: &str| {
        let c = floe_slice::compile_str("S.ice", &format!("module M {{ const string A = \"{literal}\"; }}"), &[]);
        floe_slice::checksum::checksums(c.unit.as_ref().expect("compiles"))["::M::A"].clone()
    };
    assert_ne!(sum("\\u00e9"), sum("é"));
    assert_eq!(sum("\\x41"), sum("A"));
    assert_eq!(sum("\\101"), sum("A"));
    assert_ne!(sum("\\\\"), sum("\\x5c"));
}
