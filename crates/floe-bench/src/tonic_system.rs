//! tonic (gRPC over HTTP/2) as a benchmark peer: what a Rust user would pick instead of Ice.
//! Built only with the `tonic` feature.

use std::time::{Duration, Instant};

use tonic::{Request, Response, Status};

use crate::tests::{Kind, Measured, Test};

#[allow(missing_docs, unreachable_pub, clippy::all)]
mod pb {
    tonic::include_proto!("bench");
}

use pb::perf_client::PerfClient;
use pb::perf_server::{Perf, PerfServer};

struct PerfImpl;

#[tonic::async_trait]
impl Perf for PerfImpl {
    async fn o(&self, _: Request<pb::Empty>) -> Result<Response<pb::Empty>, Status> {
        Ok(Response::new(pb::Empty {}))
    }
    async fn send_byte_seq(&self, _: Request<pb::Bytes>) -> Result<Response<pb::Empty>, Status> {
        Ok(Response::new(pb::Empty {}))
    }
    async fn recv_byte_seq(&self, r: Request<pb::Size>) -> Result<Response<pb::Bytes>, Status> {
        Ok(Response::new(pb::Bytes { data: vec![0u8; r.into_inner().size.max(0) as usize] }))
    }
    async fn send_fixed_seq(&self, _: Request<pb::FixedSeq>) -> Result<Response<pb::Empty>, Status> {
        Ok(Response::new(pb::Empty {}))
    }
    async fn recv_fixed_seq(&self, r: Request<pb::Size>) -> Result<Response<pb::FixedSeq>, Status> {
        let n = r.into_inner().size.max(0) as usize;
        Ok(Response::new(pb::FixedSeq { items: vec![pb::Fixed { i: 1, j: 2, d: 3.0 }; n] }))
    }
    async fn send_string_double_seq(&self, _: Request<pb::StringDoubleSeq>) -> Result<Response<pb::Empty>, Status> {
        Ok(Response::new(pb::Empty {}))
    }
    async fn recv_string_double_seq(&self, r: Request<pb::Size>) -> Result<Response<pb::StringDoubleSeq>, Status> {
        let n = r.into_inner().size.max(0) as usize;
        Ok(Response::new(pb::StringDoubleSeq { items: vec![pb::StringDouble { s: "hello".into(), d: 3.14 }; n] }))
    }
    async fn work(&self, r: Request<pb::Micros>) -> Result<Response<pb::Empty>, Status> {
        let end = Instant::now() + Duration::from_micros(r.into_inner().micros.max(0) as u64);
        while Instant::now() < end {}
        Ok(Response::new(pb::Empty {}))
    }
}

/// Whether tonic has an equivalent of the test (gRPC has no oneway or batched calls; the ssl
/// variants compare floe with Ice C++ and raw TLS only).
pub(crate) fn supports(test: &Test) -> bool {
    !test.ssl
        && !matches!(
            test.kind,
            Kind::Oneway
                | Kind::BatchSend
                | Kind::BatchDelivered
                | Kind::BatchTwoway
                | Kind::BatchSendPayload
                | Kind::BatchDeliveredPayload
        )
}

/// HTTP/2 flow-control windows for both sides: room for the largest message of the suite
/// (1 MB, plus framing) without waiting for a WINDOW_UPDATE, as gRPC users moving bulk data
/// configure them. (hyper's adaptive windows would override these and start at 64 kB.)
const HTTP2_WINDOW: u32 = 2 << 20;

fn runtime(threads: usize) -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread().worker_threads(threads.max(1)).enable_all().build()
}

/// Serves the benchmark service on `port` until killed.
pub(crate) fn serve(port: u16, threads: usize) -> Result<(), String> {
    let rt = runtime(threads).map_err(|e| e.to_string())?;
    rt.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| e.to_string())?;
        println!("ready");
        // The accepted sockets are ours, not tonic's: TCP_NODELAY is set on each here (the
        // builder's `tcp_nodelay` applies only to listeners tonic makes itself). Without it,
        // Nagle's algorithm meets delayed ACKs and every large message waits ~40 ms.
        let incoming = tokio_stream::StreamExt::map(tokio_stream::wrappers::TcpListenerStream::new(listener), |s| {
            s.and_then(|s| s.set_nodelay(true).map(|()| s))
        });
        tonic::transport::Server::builder()
            .tcp_nodelay(true)
            .initial_stream_window_size(Some(HTTP2_WINDOW))
            .initial_connection_window_size(Some(HTTP2_WINDOW))
            .add_service(
                PerfServer::new(PerfImpl).max_decoding_message_size(64 << 20).max_encoding_message_size(64 << 20),
            )
            .serve_with_incoming(incoming)
            .await
            .map_err(|e| e.to_string())
    })
}

/// Runs `test` against a tonic server on `port` for about `duration`.
pub(crate) fn measure(test: &Test, port: u16, duration: Duration) -> Result<Measured, String> {
    let rt = runtime(1).map_err(|e| e.to_string())?;
    let test = *test;
    rt.block_on(async move {
        let channel = tonic::transport::Channel::from_shared(format!("http://127.0.0.1:{port}"))
            .map_err(|e| e.to_string())?
            .tcp_nodelay(true)
            .initial_stream_window_size(HTTP2_WINDOW)
            .initial_connection_window_size(HTTP2_WINDOW)
            .connect()
            .await
            .map_err(|e| e.to_string())?;
        let client = PerfClient::new(channel).max_decoding_message_size(64 << 20).max_encoding_message_size(64 << 20);
        run(&test, client, duration).await.map_err(|e| e.to_string())
    })
}

async fn run(
    test: &Test,
    mut c: PerfClient<tonic::transport::Channel>,
    duration: Duration,
) -> Result<Measured, Status> {
    for _ in 0..100 {
        c.o(pb::Empty {}).await?;
    }
    let param = test.param;
    let n = param.max(0) as usize;
    let mut ops = 0u64;
    let start = Instant::now();
    let deadline = start + duration;
    match test.kind {
        Kind::Twoway | Kind::Demarey => {
            while Instant::now() < deadline {
                for _ in 0..100 {
                    c.o(pb::Empty {}).await?;
                }
                ops += 100;
            }
        }
        Kind::Ami => {
            ops = crate::pipeline::pipelined(deadline, n, || {
                let mut q = c.clone();
                async move { q.o(pb::Empty {}).await }
            })
            .await?;
        }
        Kind::BytesSend => {
            let data = vec![0u8; n];
            while Instant::now() < deadline {
                c.send_byte_seq(pb::Bytes { data: data.clone() }).await?;
                ops += 1;
            }
        }
        Kind::BytesRecv => {
            while Instant::now() < deadline {
                c.recv_byte_seq(pb::Size { size: param }).await?;
                ops += 1;
            }
        }
        Kind::FixedSend => {
            let items = vec![pb::Fixed { i: 1, j: 2, d: 3.0 }; n];
            while Instant::now() < deadline {
                c.send_fixed_seq(pb::FixedSeq { items: items.clone() }).await?;
                ops += 1;
            }
        }
        Kind::FixedRecv => {
            while Instant::now() < deadline {
                c.recv_fixed_seq(pb::Size { size: param }).await?;
                ops += 1;
            }
        }
        Kind::StringsSend => {
            let items = vec![pb::StringDouble { s: "hello".into(), d: 3.14 }; n];
            while Instant::now() < deadline {
                c.send_string_double_seq(pb::StringDoubleSeq { items: items.clone() }).await?;
                ops += 1;
            }
        }
        Kind::StringsRecv => {
            while Instant::now() < deadline {
                c.recv_string_double_seq(pb::Size { size: param }).await?;
                ops += 1;
            }
        }
        _ => {
            while Instant::now() < deadline {
                c.work(pb::Micros { micros: param }).await?;
                ops += 1;
            }
        }
    }
    Ok(Measured::new(ops, start.elapsed().as_secs_f64()))
}
