//! What an async runtime costs a ping-pong on this machine, without any middleware: 32-byte
//! requests and 25-byte replies over loopback TCP, with blocking sockets (the raw baseline's way)
//! and with bare tokio tasks (a multi-thread runtime with one worker, and a current-thread
//! runtime, as floe's single-threaded servers and clients use). The tokio rates are the ceiling for
//! any tokio-based implementation of the twoway test; printed as medians of interleaved runs
//! and as ratios to the blocking rate. A last variant spins on non-blocking sockets instead of
//! sleeping: the difference to blocking sockets is what waking a sleeping thread (and, on a
//! virtual machine, its CPU) costs per round trip.
//!
//! ```text
//! cargo run --release -p floe-bench --example pingpong_floor
//! ```

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};

const RUNS: usize = 5;
const MEASURE_FOR: Duration = Duration::from_millis(700);

/// Reads exactly `buf.len()` bytes: blocking, or from a non-blocking socket spinning while
/// none are there.
fn read_full(s: &mut std::net::TcpStream, buf: &mut [u8], spin: bool) -> std::io::Result<()> {
    if !spin {
        return s.read_exact(buf);
    }
    let mut got = 0;
    while got < buf.len() {
        match s.read(&mut buf[got..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::hint::spin_loop(),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Round trips per second with std sockets on both sides: blocking ones (the raw baseline's
/// way), or, with `spin`, non-blocking ones that spin instead of sleeping — what the round
/// trip costs when no CPU has to be woken (two busy cores).
fn std_sockets(spin: bool) -> f64 {
    let listener = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).unwrap();
    let address = listener.local_addr().unwrap();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        s.set_nonblocking(spin).unwrap();
        let mut request = [0u8; 32];
        while read_full(&mut s, &mut request, spin).is_ok() {
            if s.write_all(&[0u8; 25]).is_err() {
                break;
            }
        }
    });
    let mut c = std::net::TcpStream::connect(address).unwrap();
    c.set_nodelay(true).unwrap();
    c.set_nonblocking(spin).unwrap();
    let mut reply = [0u8; 25];
    let start = Instant::now();
    let mut calls = 0u64;
    while start.elapsed() < MEASURE_FOR {
        for _ in 0..100 {
            c.write_all(&[0u8; 32]).unwrap();
            read_full(&mut c, &mut reply, spin).unwrap();
        }
        calls += 100;
    }
    let rate = calls as f64 / start.elapsed().as_secs_f64();
    drop(c);
    server.join().unwrap();
    rate
}

fn runtime(multi_thread: bool) -> tokio::runtime::Runtime {
    let mut builder = if multi_thread {
        let mut b = tokio::runtime::Builder::new_multi_thread();
        b.worker_threads(1);
        b
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    builder.enable_all().build().unwrap()
}

/// Round trips per second with a tokio task on each side (each side its own runtime and thread).
fn tokio_tasks(multi_thread: bool) -> f64 {
    let (address_tx, address_rx) = std::sync::mpsc::channel::<SocketAddr>();
    let server = std::thread::spawn(move || {
        runtime(multi_thread).block_on(async move {
            let listener = tokio::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
            address_tx.send(listener.local_addr().unwrap()).unwrap();
            let (mut s, _) = listener.accept().await.unwrap();
            // Spawned, as a server's connection tasks are (a multi-thread runtime's block_on
            // runs on the calling thread, not on its worker).
            tokio::spawn(async move {
                s.set_nodelay(true).unwrap();
                let mut request = [0u8; 32];
                while s.read_exact(&mut request).await.is_ok() {
                    if s.write_all(&[0u8; 25]).await.is_err() {
                        break;
                    }
                }
            })
            .await
            .unwrap();
        })
    });
    let address = address_rx.recv().unwrap();
    let rate = runtime(multi_thread).block_on(async move {
        tokio::spawn(async move {
            let mut c = tokio::net::TcpStream::connect(address).await.unwrap();
            c.set_nodelay(true).unwrap();
            let mut reply = [0u8; 25];
            let start = Instant::now();
            let mut calls = 0u64;
            while start.elapsed() < MEASURE_FOR {
                for _ in 0..100 {
                    c.write_all(&[0u8; 32]).await.unwrap();
                    c.read_exact(&mut reply).await.unwrap();
                }
                calls += 100;
            }
            calls as f64 / start.elapsed().as_secs_f64()
        })
        .await
        .unwrap()
    });
    server.join().unwrap();
    rate
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let (mut block, mut multi, mut current, mut spin) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for run in 1..=RUNS {
        block.push(std_sockets(false));
        multi.push(tokio_tasks(true));
        current.push(tokio_tasks(false));
        spin.push(std_sockets(true));
        eprintln!(
            "run {run}: blocking {:.0}, tokio multi-thread {:.0}, tokio current-thread {:.0}, spinning {:.0} round trips/s",
            block[run - 1],
            multi[run - 1],
            current[run - 1],
            spin[run - 1]
        );
    }
    let (b, m, c, s) = (median(block), median(multi), median(current), median(spin));
    println!("32 B / 25 B ping-pong over loopback, medians of {RUNS} interleaved runs:");
    println!("  blocking sockets              {b:>9.0} round trips/s");
    println!("  tokio, multi-thread (1 worker) {m:>8.0} round trips/s  ({:.2} × blocking)", m / b);
    println!("  tokio, current-thread         {c:>9.0} round trips/s  ({:.2} × blocking)", c / b);
    println!("  spinning, no sleep            {s:>9.0} round trips/s  ({:.2} × blocking)", s / b);
}
