//! A short smoke run of floe-bench (floe and the raw baseline, one run of a few tests) that
//! checks the suite works end to end and writes well-formed JSON, HTML and Markdown. Figures
//! are not asserted: performance is judged by full runs of the suite, never by tests.

use std::process::Command;

#[path = "../../../tests/support/ports.rs"]
mod ports;

/// A child process killed when dropped, so that a failed assertion leaves none behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

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
    assert!(html_text.contains("<svg") && html_text.contains("<h3>Resources</h3>"));
    assert!(
        html_text.contains("<h2 id=\"summary\">Summary</h2>") && html_text.contains("<li>rates: floe ≥ raw on "),
        "{html_text}"
    );
    assert!(stdout.contains("Demarey method") && stdout.contains("std-dev"), "{stdout}");
    let md = std::fs::read_to_string(&markdown).unwrap();
    for row in ["| twoway `o()`", "| batched oneway `incr()`, delivered", "| v (0 B) |", "| d8 (64 B) |"] {
        assert!(md.contains(row), "no row {row:?} in the Markdown tables:\n{md}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// The ssl variants end to end: floe, the raw TLS baseline and Ice C++ (with its IceSSL
/// plugin), each server on ssl with the test certificates of `../shared/certs`, each client
/// checking the server's certificate.
#[test]
fn ssl_variants_run_for_floe_raw_tls_and_ice() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    let (_, text) = quick_ice_run(exe, "ssl-twoway,ssl-bytes-send,ssl-bytes-recv");
    for test in ["ssl-twoway", "ssl-bytes-send", "ssl-bytes-recv"] {
        for system in ["floe", "raw", "ice-cpp"] {
            let needle = format!("\"system\": \"{system}\", \"test\": \"{test}\"");
            assert!(text.contains(&needle), "no record for {system}/{test} in {text}");
        }
    }
}

/// The `connections` test end to end at a small scale: 300 connections spread over three load
/// processes (100 each, from three source addresses), against floe and the raw scale server.
#[test]
fn connections_smoke_run_opens_every_connection_and_reports_latencies() {
    let dir = std::env::temp_dir().join(format!("floe-bench-conn-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let html = dir.join("report.html");
    let out = Command::new(env!("CARGO_BIN_EXE_floe-bench"))
        .args(["--quick", "--runs", "1", "--peers", "none", "--tests", "connections"])
        .args(["--connections", "300", "--conn-per-process", "100", "--conn-measure-ms", "4200"])
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(&html)
        .output()
        .expect("floe-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    for system in ["floe", "raw"] {
        // Every connection validated, every connection pinged at least once, no error.
        let row =
            stdout.lines().find(|l| l.starts_with(&format!("| {system} |"))).unwrap_or_else(|| panic!("{stdout}"));
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[2], "300 / 300", "{row}");
        let pings: usize = cells[8].parse().unwrap();
        assert!(pings >= 300, "{row}");
        assert_eq!(cells[9], "0", "{row}\n{stdout}");
        let record = format!("\"system\": \"{system}\", \"test\": \"connections\"");
        assert!(std::fs::read_to_string(&json).unwrap().contains(&record), "no JSON record for {system}");
    }
    assert!(!stdout.contains("note:"), "{stdout}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("<h2>Connections</h2>"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs floe-bench with the Ice peer on `tests` (`--quick --runs 1 --peers ice --tests TESTS`),
/// checks that it succeeded with no note (nothing failed or was skipped), and returns its
/// standard output and its JSON records.
fn quick_ice_run(exe: &std::path::Path, tests: &str) -> (String, String) {
    quick_ice_run_with(exe, tests, &[])
}

/// [`quick_ice_run`] with more arguments.
fn quick_ice_run_with(exe: &std::path::Path, tests: &str, extra: &[&str]) -> (String, String) {
    let tag = tests.replace(',', "_");
    let dir = std::env::temp_dir().join(format!("floe-bench-{tag}-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let out = Command::new(exe)
        .args(["--quick", "--runs", "1", "--peers", "ice", "--tests", tests])
        .args(extra)
        .arg("--json")
        .arg(&json)
        .arg("--html")
        .arg(dir.join("report.html"))
        .output()
        .expect("floe-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("note:"), "something failed or was skipped:\n{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    (stdout, text)
}

/// Each side alone, one quick round: Ice C++'s (3.7 and 3.8) and floe's clients against
/// floe's and Ice's Tester servers, every pair giving every test a value. floe's server is the
/// workspace's `floe-interop-server`, which `cargo test --workspace` builds beside floe-bench.
#[test]
fn cross_pairs_give_every_test_a_value_for_every_client_and_server() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    let server = exe.with_file_name("floe-interop-server");
    assert!(
        server.exists(),
        "{} is not built: run `cargo build -p floe-interop --bin floe-interop-server` (cargo test --workspace does)",
        server.display()
    );
    let (stdout, text) = quick_ice_run(exe, "cross");
    for test in [
        "twoway",
        "oneway",
        "batch_oneway",
        "ami",
        "bytes_send",
        "bytes_recv",
        "fixed_send",
        "fixed_recv",
        "sd_send",
        "sd_recv",
    ] {
        // A row in the Ice 3.7 table and one in the Ice 3.8 table.
        let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with(&format!("| {test} |"))).collect();
        assert_eq!(rows.len(), 2, "{stdout}");
        for row in rows {
            assert!(!row.contains('–'), "a pair has no value for {test}: {row}");
        }
        for pair in [
            "ice-cpp client → floe server",
            "floe client → ice-cpp server",
            "floe client → floe server",
            "ice-cpp client → raw server",
            "raw client → ice-cpp server",
            "ice-cpp client → ice-cpp server",
            "ice-cpp-3.8 client → floe server",
            "ice-cpp-3.8 client → ice-cpp-3.8 server",
            "floe client → ice-cpp-3.8 server",
        ] {
            let needle = format!("\"system\": \"{pair}\", \"test\": \"cross/{test}\"");
            assert!(text.contains(&needle), "no JSON record {needle}");
        }
    }
}

/// The router test, one quick round: for both pairs (Ice C++ and floe client and server), every
/// figure direct, through floe-router and glacier2router (the workspace's floe-router, built
/// here beside floe-bench in its profile, as floe-interop-server is) and through the copy relay.
#[test]
fn router_gives_every_figure_through_each_router_and_the_copy_relay() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    // floe-router and floe-interop-server belong to other packages, whose tests may not have
    // built them yet.
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "-p", "floe-router", "-p", "floe-interop"]);
    build.args(["--bin", "floe-router", "--bin", "floe-interop-server"]);
    if exe.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo runs").success(), "building the router and the server failed");
    for binary in ["floe-router", "floe-interop-server"] {
        let path = exe.with_file_name(binary);
        assert!(path.exists(), "{} is not built (cargo test --workspace builds it)", path.display());
    }
    let (stdout, text) = quick_ice_run(exe, "router");
    for test in ["twoway", "ami", "oneway", "bytes", "callback"] {
        let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with(&format!("| {test} |"))).collect();
        assert_eq!(rows.len(), 2, "one row per pair for {test}:\n{stdout}");
        for row in rows {
            assert!(!row.contains('–'), "a path has no value for {test}: {row}");
        }
    }
    for path in ["direct", "floe-router", "glacier2router", "copy relay"] {
        for test in ["router/bytes", "router-floe/bytes", "router-floe/callback"] {
            let needle = format!("\"system\": \"{path}\", \"test\": \"{test}\"");
            assert!(text.contains(&needle), "no JSON record {needle}");
        }
    }
}

/// The storm test, one quick round: floe-storm (the workspace's, which `cargo test
/// --workspace` builds beside floe-bench) and ZeroC's IceStorm in icebox, every case giving
/// both figures for both services.
#[test]
fn storm_gives_rates_and_latencies_for_floe_storm_and_icestorm() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    let storm = exe.with_file_name("floe-storm");
    assert!(
        storm.exists(),
        "{} is not built: run `cargo build -p floe-storm --bin floe-storm` (cargo test --workspace does)",
        storm.display()
    );
    let (stdout, text) = quick_ice_run(exe, "storm");
    let rows: Vec<&str> = stdout.lines().filter(|l| l.starts_with("| ") && l.contains(" sub, ")).collect();
    assert_eq!(rows.len(), 12, "{stdout}");
    for row in rows {
        assert!(!row.contains('–'), "a case has no value: {row}");
    }
    for service in ["floe-storm", "IceStorm"] {
        for case in ["1-oneway-16", "3-twoway-1024", "10-oneway-1024", "10-twoway-16"] {
            for metric in ["events", "p99"] {
                let needle = format!("\"system\": \"{service}\", \"test\": \"storm/{case}/{metric}\"");
                assert!(text.contains(&needle), "no JSON record {needle}");
            }
        }
    }
}

/// `--floe-property` reaches the communicator of floe's client in `--against` and
/// `--router-client`: a value floe rejects stops it before it connects anywhere, with the
/// property named.
#[test]
fn floe_properties_reach_the_against_and_router_clients() {
    let exe = env!("CARGO_BIN_EXE_floe-bench");
    for mode in ["--against", "--router-client"] {
        let out = Command::new(exe)
            .args([mode, "tester:tcp -h 127.0.0.1 -p 1", "--floe-property", "Floe.Runtime.BusyPoll=notanumber"])
            .output()
            .expect("floe-bench runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{mode} ran with a property floe rejects");
        assert!(stderr.contains("Floe.Runtime.BusyPoll"), "{mode}: {stderr}");
    }
}

/// `--stepped`, as the cross stage drives floe's and the raw client: after the warm-up the
/// client says `warm`, runs each test named on a line of its input (an unknown name gets an
/// error line, and the client goes on), and ends with its input, failing if a test failed.
#[test]
fn stepped_clients_run_the_tests_named_on_their_input() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, Stdio};
    use std::sync::mpsc;
    use std::time::Duration;

    /// The lines a child prints, each awaited for at most a minute.
    fn lines_of(child: &mut Child) -> mpsc::Receiver<String> {
        let out = BufReader::new(child.stdout.take().unwrap());
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in out.lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        rx
    }
    let next = |rx: &mpsc::Receiver<String>| rx.recv_timeout(Duration::from_secs(60)).ok();

    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    let server_exe = exe.with_file_name("floe-interop-server");
    assert!(server_exe.exists(), "{} is not built (cargo test --workspace builds it)", server_exe.display());
    let port = ports::unused_port(4);
    let mut server = Killed(
        Command::new(&server_exe)
            .args(["--endpoints", &format!("tcp -h 127.0.0.1 -p {port}")])
            .stdout(Stdio::piped())
            .spawn()
            .expect("floe-interop-server starts"),
    );
    let server_lines = lines_of(&mut server.0);
    let ready = next(&server_lines).unwrap_or_default();
    assert!(ready.contains("ready"), "{ready:?}");
    let proxy = format!("tester:tcp -h 127.0.0.1 -p {port}");
    let port_arg = port.to_string();
    for args in [["--against", proxy.as_str()], ["--raw-against", port_arg.as_str()]] {
        let mut client = Killed(
            Command::new(exe)
                .args(args)
                .args(["--quick", "--stepped"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .spawn()
                .expect("floe-bench runs"),
        );
        let lines = lines_of(&mut client.0);
        assert_eq!(next(&lines).as_deref(), Some("warm"), "{args:?}");
        let mut input = client.0.stdin.take().unwrap();
        writeln!(input, "twoway").unwrap();
        let twoway = next(&lines).unwrap_or_default();
        assert!(twoway.starts_with("RESULT twoway ") && twoway.ends_with(" calls/s"), "{args:?}: {twoway}");
        writeln!(input, "\nno_such_test\nbytes_recv").unwrap();
        drop(input);
        let unknown = next(&lines).unwrap_or_default();
        assert_eq!(unknown, "RESULT no_such_test error unknown test", "{args:?}");
        let bytes = next(&lines).unwrap_or_default();
        assert!(bytes.starts_with("RESULT bytes_recv ") && bytes.ends_with(" Mbit/s"), "{args:?}: {bytes}");
        // Nothing more, and the unknown test counts as a failure.
        assert_eq!(next(&lines), None, "{args:?}");
        assert_eq!(client.0.wait().unwrap().code(), Some(1), "{args:?}");
    }
}

/// The tokio baseline (`--serve tokio`, `--client tokio`) speaks the raw baseline's twoway
/// exchange: its client and the raw client both call its server, its client calls floe's and
/// the raw server, and a test other than twoway gets an error line rather than a figure.
#[test]
fn tokio_baseline_serves_and_calls_the_twoway_exchange() {
    use std::process::Stdio;

    let exe = env!("CARGO_BIN_EXE_floe-bench");
    let client = |system: &str, port: u16, tests: &str| -> String {
        let out = Command::new(exe)
            .args(["--client", system, "--port", &port.to_string(), "--tests", tests, "--duration-ms", "100"])
            .output()
            .expect("floe-bench runs");
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for server_system in ["tokio", "floe", "raw"] {
        let port = ports::unused_port(5);
        let mut server = Killed(
            Command::new(exe)
                .args(["--serve", server_system, "--port", &port.to_string(), "--threads", "1"])
                .stdout(Stdio::piped())
                .spawn()
                .expect("floe-bench --serve starts"),
        );
        let mut first = String::new();
        std::io::BufRead::read_line(&mut std::io::BufReader::new(server.0.stdout.take().unwrap()), &mut first).unwrap();
        assert!(first.contains("ready"), "{server_system}: {first:?}");
        let clients: &[&str] = if server_system == "tokio" { &["tokio", "raw"] } else { &["tokio"] };
        for client_system in clients {
            let line = client(client_system, port, "twoway");
            let fields: Vec<&str> = line.split_whitespace().collect();
            assert!(fields.len() == 5 && fields[2] == *client_system && fields[3] == "twoway", "{line:?}");
            let calls: u64 = fields[0].parse().unwrap();
            assert!(calls >= 100, "{client_system} -> {server_system}: {line:?}");
        }
        if server_system == "tokio" {
            let line = client("tokio", port, "oneway");
            assert!(line.contains("error: the tokio baseline runs only twoway tests"), "{line:?}");
        }
        drop(server);
    }
}

/// floe-bench-helper, which floe-bench starts its children from, takes the same role flags:
/// it serves and calls as `floe-bench --serve` / `--client` do, and without a role it says so
/// and fails instead of running the benchmark.
#[test]
fn the_helper_binary_runs_the_roles_and_only_them() {
    use std::process::Stdio;

    let helper = env!("CARGO_BIN_EXE_floe-bench-helper");
    let port = ports::unused_port(5);
    let mut server = Killed(
        Command::new(helper)
            .args(["--serve", "raw", "--port", &port.to_string(), "--threads", "1"])
            .stdout(Stdio::piped())
            .spawn()
            .expect("floe-bench-helper --serve starts"),
    );
    let mut first = String::new();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(server.0.stdout.take().unwrap()), &mut first).unwrap();
    assert!(first.contains("ready"), "{first:?}");
    let out = Command::new(helper)
        .args(["--client", "raw", "--port", &port.to_string(), "--tests", "twoway", "--duration-ms", "100"])
        .output()
        .expect("floe-bench-helper --client runs");
    let line = String::from_utf8_lossy(&out.stdout).into_owned();
    let fields: Vec<&str> = line.split_whitespace().collect();
    assert!(fields.len() == 5 && fields[2] == "raw" && fields[3] == "twoway", "{line:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("peak-rss-kb "), "{out:?}");
    drop(server);
    let none = Command::new(helper).arg("--quick").output().expect("floe-bench-helper runs");
    assert_eq!(none.status.code(), Some(2), "{none:?}");
    assert!(String::from_utf8_lossy(&none.stderr).contains("no role"), "{none:?}");
}

/// The scaling stage, one quick round with `--max-threads 2`: a figure for floe's, Ice C++'s
/// and the raw server in each of the four configurations, the growth line, and a JSON record
/// per server and configuration.
#[test]
fn scaling_gives_every_server_a_figure_in_every_configuration() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    let (stdout, text) = quick_ice_run_with(exe, "scaling", &["--max-threads", "2"]);
    for (clients, threads) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {clients} | {threads} |")))
            .unwrap_or_else(|| panic!("no row for {clients} clients, {threads} threads:\n{stdout}"));
        assert!(!row.contains('–'), "a server has no figure: {row}");
        for server in ["floe server", "ice-cpp server"] {
            let needle = format!("\"system\": \"{server}\", \"test\": \"scaling/{clients}c{threads}t\"");
            assert!(text.contains(&needle), "no JSON record {needle}");
        }
    }
    assert!(stdout.contains("from 1 client and 1 thread to 2 of each: floe "), "{stdout}");
}

/// The deployment test, one quick round: floe's grid (floe-registry and floe-node, the
/// workspace's, built here beside floe-bench in its profile), the mixed one and ZeroC's
/// (icegridregistry and icegridnode) each activate the on-demand server five times, every grid
/// giving its figures and a JSON record.
#[test]
fn deployment_times_the_first_calls_of_every_grid() {
    let exe = std::path::Path::new(env!("CARGO_BIN_EXE_floe-bench"));
    // floe-registry and floe-node belong to other packages, whose tests may not have built
    // them yet.
    let mut build = Command::new(env!("CARGO"));
    build.args(["build", "--quiet", "-p", "floe-registry", "-p", "floe-node"]);
    build.args(["--bin", "floe-registry", "--bin", "floe-node"]);
    if exe.parent().and_then(|d| d.file_name()).is_some_and(|d| d == "release") {
        build.arg("--release");
    }
    assert!(build.status().expect("cargo runs").success(), "building floe-registry and floe-node failed");
    let dir = std::env::temp_dir().join(format!("floe-bench-deployment-smoke-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let json = dir.join("out.json");
    let out = Command::new(exe)
        .args(["--quick", "--runs", "1", "--peers", "none", "--tests", "deployment", "--json"])
        .arg(&json)
        .arg("--html")
        .arg(dir.join("report.html"))
        .output()
        .expect("floe-bench runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(!stdout.contains("note:"), "something failed or was skipped:\n{stdout}");
    let text = std::fs::read_to_string(&json).unwrap();
    assert!(std::fs::read_to_string(dir.join("report.html")).unwrap().contains("<h2>Deployment</h2>"));
    let _ = std::fs::remove_dir_all(&dir);
    for grid in ["floe grid", "mixed grid", "ZeroC grid"] {
        let row = stdout
            .lines()
            .find(|l| l.starts_with(&format!("| {grid} |")))
            .unwrap_or_else(|| panic!("no row for the {grid}:\n{stdout}"));
        assert!(row.contains("| 5 |") && !row.contains('–'), "the {grid} has no figure: {row}");
    }
    for system in ["floe-registry+floe-node", "icegridregistry+floe-node", "icegridregistry+icegridnode"] {
        let needle = format!("\"system\": \"{system}\", \"test\": \"deployment/first-call\"");
        assert!(text.contains(&needle), "no JSON record {needle}");
    }
}
