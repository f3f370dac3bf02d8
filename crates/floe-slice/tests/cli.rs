//! `slice2rs`: exit status 0 and a generated file on success; 1 and diagnostics otherwise.

use std::process::Command;

#[test]
fn slice2rs_generates_or_reports() {
    let dir = std::env::temp_dir().join(format!("slice2rs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("Good.ice");
    std::fs::write(&good, "module M { struct S { int x; }; interface I { S get(); }; };").unwrap();
    let bad = dir.join("Bad.ice");
    std::fs::write(&bad, "module M {\n  struct S { Nope x; };\n};").unwrap();
    let out = dir.join("out");
    let ok = Command::new(env!("CARGO_BIN_EXE_slice2rs")).arg("--output-dir").arg(&out).arg(&good).output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    let code = std::fs::read_to_string(out.join("Good.rs")).unwrap();
    assert!(code.contains("pub struct S") && code.contains("pub struct IPrx"));
    let fail = Command::new(env!("CARGO_BIN_EXE_slice2rs")).arg("--output-dir").arg(&out).arg(&bad).output().unwrap();
    assert_eq!(fail.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&fail.stderr);
    assert!(stderr.contains("error[E0004]: `Nope` is not defined") && stderr.contains("Bad.ice:2:14"), "{stderr}");
    let missing = Command::new(env!("CARGO_BIN_EXE_slice2rs")).arg(dir.join("Missing.ice")).output().unwrap();
    assert_eq!(missing.status.code(), Some(1));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn strings_map_to_compact_strings_unless_a_file_or_the_options_ask_for_string() {
    let body = "module M { struct S { string name = \"x\"; }; sequence<string> Names; interface I { string echo(string s); }; };";
    let generate = |src: &str, std_strings: bool| {
        let c = floe_slice::compile_str("m.ice", src, &[]);
        assert!(!c.has_errors(), "{}", c.render_diagnostics());
        let options = floe_slice::gen::Options { std_strings, ..Default::default() };
        floe_slice::generate(c.unit.as_ref().unwrap(), &options).expect("the generated code parses")
    };
    // The default: inline strings, borrowed `&str` parameters on the client side.
    let code = generate(body, false);
    assert!(code.contains("pub name: ::floe::CompactString"), "{code}");
    assert!(code.contains("pub type Names = Vec<::floe::CompactString>"), "{code}");
    assert!(code.contains("pub async fn echo(&self, s: &str) -> ::floe::Result<::floe::CompactString>"), "{code}");
    // A file asks for `String`, or the options do (and a file can still choose compact).
    let std = generate(&format!("[[\"rust:std-strings\"]]\n{body}"), false);
    assert!(std.contains("pub name: String") && std.contains("pub type Names = Vec<String>"), "{std}");
    assert!(std.contains("-> ::floe::Result<String>") && !std.contains("CompactString"), "{std}");
    assert!(generate(body, true).contains("pub name: String"));
    let compact = generate(&format!("[[\"rust:compact-strings\"]]\n{body}"), true);
    assert!(compact.contains("pub name: ::floe::CompactString"), "{compact}");
}

/// `--checksum` adds the Slice checksums of the file's definitions (and only then).
#[test]
fn slice2rs_checksum_writes_the_checksums() {
    let dir = std::env::temp_dir().join(format!("slice2rs-checksum-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("Sums.ice");
    std::fs::write(&file, "module M { struct S { int x; }; local struct L { int y; }; sequence<bool> Bools; };")
        .unwrap();
    let run = |extra: &[&str], out: &str| {
        let out = dir.join(out);
        let status = Command::new(env!("CARGO_BIN_EXE_slice2rs"))
            .args(extra)
            .arg("--output-dir")
            .arg(&out)
            .arg(&file)
            .output()
            .unwrap();
        assert!(status.status.success(), "{}", String::from_utf8_lossy(&status.stderr));
        std::fs::read_to_string(out.join("Sums.rs")).unwrap()
    };
    let with = run(&["--checksum"], "with");
    let c = floe_slice::compile(&[&file], &[]);
    let sums = floe_slice::checksum::checksums(c.unit.as_ref().unwrap());
    assert_eq!(sums.keys().collect::<Vec<_>>(), ["::M::Bools", "::M::S"]);
    for (name, sum) in &sums {
        assert!(with.contains(&format!("({name:?}, {sum:?}),")), "{with}");
    }
    let squeezed: String = with.split_whitespace().collect();
    assert!(
        squeezed
            .contains("pubfnslice_checksums()->std::collections::HashMap<::floe::CompactString,::floe::CompactString"),
        "{with}"
    );
    let without = run(&[], "without");
    assert!(!without.contains("SLICE_CHECKSUMS") && !without.contains("slice_checksums"));
    let _ = std::fs::remove_dir_all(&dir);
}
