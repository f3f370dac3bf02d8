//! File client: downloads a file in chunks with several reads in flight at once (the
//! newsletter's interleaved asynchronous calls), writing them in order.
//! `file-client --name NAME --out PATH [--proxy "files:tcp -h 127.0.0.1 -p 10003"] [--chunk 65536] [--window 4] [--shutdown]`
use std::io::Write;
use std::time::Instant;

use floe::{CallError, Communicator, Proxy};
use floe_examples::file_transfer::demo::{FileStorePrx, FileStoreReadError};
use futures_util::stream::{FuturesOrdered, StreamExt};

fn main() -> floe::Result<()> {
    let (communicator, args) = Communicator::from_args(std::env::args())?;
    let proxy = floe_examples::arg("--proxy", "files:tcp -h 127.0.0.1 -p 10003");
    let name = floe_examples::arg("--name", "");
    let out_path = floe_examples::arg("--out", "download.bin");
    let chunk: i32 = floe_examples::arg("--chunk", "65536").parse().unwrap_or(65536);
    let window: usize = floe_examples::arg("--window", "4").parse().unwrap_or(4);
    let files = FileStorePrx::from_object(communicator.string_to_proxy(&proxy)?);
    let start = Instant::now();
    let total = communicator.block_on(async {
        let size = match files.size(&name).await {
            Ok(s) => s,
            Err(CallError::User(e)) => {
                eprintln!("cannot download {name}: {e}");
                std::process::exit(1);
            }
            Err(CallError::Local(e)) => return Err(e),
        };
        let mut out = std::fs::File::create(&out_path).map_err(floe::Error::from)?;
        let mut next: i64 = 0;
        let mut inflight = FuturesOrdered::new();
        let mut written: i64 = 0;
        loop {
            while inflight.len() < window && next < size {
                let f = files.clone();
                let n = name.clone();
                let offset = next;
                inflight.push_back(async move { f.read(&n, offset, chunk).await });
                next += chunk as i64;
            }
            let Some(r) = inflight.next().await else { break };
            let data = match r {
                Ok(d) => d,
                Err(CallError::User(FileStoreReadError::FileAccessException(e))) => {
                    eprintln!("read failed: {}", e.reason);
                    std::process::exit(1);
                }
                Err(CallError::Local(e)) => return Err(e),
            };
            out.write_all(&data).map_err(floe::Error::from)?;
            written += data.len() as i64;
        }
        if args.iter().any(|a| a == "--shutdown") {
            files.shutdown().await?;
        }
        Ok(written)
    })?;
    println!("downloaded {total} bytes to {out_path} in {:?}", start.elapsed());
    communicator.destroy_blocking();
    Ok(())
}
