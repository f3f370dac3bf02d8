//! Throughput client: sends and receives 500,000-byte sequences for about a second each and
//! prints the payload rate. `throughput-client [--proxy "throughput:tcp -h 127.0.0.1 -p 10002"] [--shutdown]`
use std::time::{Duration, Instant};

use floe::bytes::Bytes;
use floe::{Communicator, Proxy};
use floe_examples::throughput::demo::ThroughputPrx;

fn main() -> floe::Result<()> {
    let (communicator, args) = Communicator::from_args(std::env::args())?;
    let proxy = floe_examples::arg("--proxy", "throughput:tcp -h 127.0.0.1 -p 10002");
    let t = ThroughputPrx::from_object(communicator.string_to_proxy(&proxy)?);
    let seconds: u64 = floe_examples::arg("--seconds", "1").parse().unwrap_or(1);
    let payload = Bytes::from(vec![1u8; 500_000]);
    communicator.block_on(async {
        for (name, send) in [("send", true), ("receive", false)] {
            let start = Instant::now();
            let mut calls = 0u64;
            while start.elapsed() < Duration::from_secs(seconds) {
                if send {
                    t.send_byte_seq(&payload).await?;
                } else {
                    assert_eq!(t.recv_byte_seq(500_000).await?.len(), 500_000);
                }
                calls += 1;
            }
            let secs = start.elapsed().as_secs_f64();
            println!(
                "{name} 500,000 bytes: {:.0} calls/s, {:.0} Mbit/s",
                calls as f64 / secs,
                calls as f64 * 4.0 / secs
            );
        }
        if args.iter().any(|a| a == "--shutdown") {
            t.shutdown().await?;
        }
        Ok::<(), floe::Error>(())
    })?;
    communicator.destroy_blocking();
    Ok(())
}
