//! A short smoke run of floe-bench (floe and the raw baseline, one run of a few tests) that
//! checks the suite works end to end and writes well-formed JSON, HTML and Markdown. Figures
//! are not asserted: performance is judged by full runs of the suite, never by tests.

use std::process::Command;

#[test]
fn quick_run_produces_a_table_and_json() {
    let dir = std::env::temp_dir().join(format!("floe-bench-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let html = dir.join("report.html");
    let markdown = dir.join("tables.md");
    let out = Command::new(env!("CARGO_BIN_EXE_floe-bench"))
        .args([
            "--quick",
            "--runs",
            "1",
            "--peers",
            "none",
            "--tests",
            "twoway,demarey,oneway,batch-send,batch-delivered,batch-send-b1,batch-delivered-d8,batch-twoway,ami,bytes-send,fixed-recv,strings-send,work-10,send-1k",
        ])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .arg("--markdown")
        .arg(&markdown)
        .output()
        .expect("floe-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("twoway") && stdout.contains("floe/raw"), "{stdout}");
    assert!(!stdout.contains("note: floe /"), "a floe measurement failed:\n{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    for test in [
        "twoway",
        "oneway",
        "batch-send",
        "batch-delivered",
        "batch-send-b1",
        "batch-delivered-d8",
        "batch-twoway",
        "ami",
        "bytes-send",
        "fixed-recv",
        "strings-send",
        "work-10",
    ] {
        for system in ["floe", "raw"] {
            let needle = format!("\"system\": \"{system}\", \"test\": \"{test}\"");
            assert!(text.contains(&needle), "no record for {system}/{test} in {text}");
        }
    }
    // The twoway clients' own resources were measured, each in a process of its own.
    for system in ["floe", "raw"] {
        let needle = format!("\"system\": \"{system}\", \"test\": \"twoway\"");
        let record = text.lines().find(|l| l.contains(&needle)).expect("twoway record");
        assert!(
            record.contains("\"client_peak_rss_kb\": ") && !record.contains("\"client_peak_rss_kb\": null"),
            "no client resources for {system}: {record}"
        );
    }
    assert!(stdout.contains("client: CPU"), "{stdout}");
    let html_text = std::fs::read_to_string(&html).unwrap();
    assert!(html_text.contains("<svg") && html_text.contains("<h2>Resources</h2>"));
    assert!(stdout.contains("Demarey method") && stdout.contains("std-dev"), "{stdout}");
    let md = std::fs::read_to_string(&markdown).unwrap();
    for row in ["| twoway `o()`", "| batched oneway `incr()`, delivered", "| v (0 B) |", "| d8 (64 B) |"] {
        assert!(md.contains(row), "no row {row:?} in the Markdown tables:\n{md}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
