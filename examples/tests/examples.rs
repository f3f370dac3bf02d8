//! Runs each example's server and client together and checks they finish successfully.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "../../tests/support/ports.rs"]
mod ports;

/// A loopback port for an example's server: free now, never handed out before by this test
/// program, and below the ephemeral range (`tests/support/ports.rs`, block 3).
fn free_port() -> u16 {
    ports::unused_port(3)
}

fn run_pair(server: &str, server_args: &[&str], client: &str, client_args: &[&str]) -> String {
    let mut srv = Command::new(server).args(server_args).stdout(Stdio::piped()).spawn().unwrap();
    let mut lines = BufReader::new(srv.stdout.take().unwrap()).lines();
    let first = lines.next().unwrap().unwrap();
    assert!(first.ends_with("ready"), "{first}");
    std::thread::spawn(move || for _ in lines.by_ref() {});
    let out = Command::new(client).args(client_args).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{client}: {stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    // Every client here asks its server to shut down: it must exit by itself.
    for _ in 0..200 {
        if let Some(status) = srv.try_wait().unwrap() {
            assert!(status.success());
            return stdout;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    let _ = srv.kill();
    panic!("{server} did not exit after shutdown");
}

#[test]
fn hello() {
    let p = free_port();
    let ep = format!("tcp -h 127.0.0.1 -p {p}");
    let proxy = format!("hello:{ep}");
    let out = run_pair(
        env!("CARGO_BIN_EXE_hello-server"),
        &["--endpoints", &ep],
        env!("CARGO_BIN_EXE_hello-client"),
        &["--proxy", &proxy, "--shutdown"],
    );
    assert!(out.contains("the server said hello 5 times"), "{out}");
}

#[test]
fn hello_async() {
    let p = free_port();
    let ep = format!("tcp -h 127.0.0.1 -p {p}");
    let proxy = format!("hello:{ep}");
    let out = run_pair(
        env!("CARGO_BIN_EXE_hello-server"),
        &["--endpoints", &ep],
        env!("CARGO_BIN_EXE_hello-async-client"),
        &["--proxy", &proxy, "--shutdown"],
    );
    assert!(out.contains("timeout: gave up after"), "{out}");
    assert!(out.contains("_blocking fails with BlockingInAsync, .await works"), "{out}");
}

#[test]
fn bidirectional_callback() {
    let p = free_port();
    let ep = format!("tcp -h 127.0.0.1 -p {p}");
    let proxy = format!("sender:{ep}");
    let out = run_pair(
        env!("CARGO_BIN_EXE_callback-server"),
        &["--endpoints", &ep],
        env!("CARGO_BIN_EXE_callback-client"),
        &["--proxy", &proxy, "--shutdown"],
    );
    assert!(out.contains("server made 5 callbacks, 5 received"), "{out}");
}

#[test]
fn throughput() {
    let p = free_port();
    let ep = format!("tcp -h 127.0.0.1 -p {p}");
    let proxy = format!("throughput:{ep}");
    let out = run_pair(
        env!("CARGO_BIN_EXE_throughput-server"),
        &["--endpoints", &ep],
        env!("CARGO_BIN_EXE_throughput-client"),
        &["--proxy", &proxy, "--shutdown"],
    );
    assert!(out.contains("send 500,000 bytes") && out.contains("receive 500,000 bytes"), "{out}");
}

#[test]
fn chunked_file_transfer() {
    let dir = std::env::temp_dir().join(format!("floe-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data: Vec<u8> = (0..1_234_567u32).map(|k| (k.wrapping_mul(2_654_435_761) >> 24) as u8).collect();
    std::fs::write(dir.join("big.bin"), &data).unwrap();
    let out_path = dir.join("copy.bin");
    let p = free_port();
    let ep = format!("tcp -h 127.0.0.1 -p {p}");
    let proxy = format!("files:{ep}");
    let out = run_pair(
        env!("CARGO_BIN_EXE_file-server"),
        &["--endpoints", &ep, "--dir", dir.to_str().unwrap()],
        env!("CARGO_BIN_EXE_file-client"),
        &[
            "--proxy",
            &proxy,
            "--name",
            "big.bin",
            "--out",
            out_path.to_str().unwrap(),
            "--chunk",
            "100000",
            "--window",
            "4",
            "--shutdown",
        ],
    );
    assert!(out.contains("downloaded 1234567 bytes"), "{out}");
    assert_eq!(std::fs::read(&out_path).unwrap(), data);
    let _ = std::fs::remove_dir_all(&dir);
}
