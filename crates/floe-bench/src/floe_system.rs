//! floe as a benchmark system: a single-threaded server process (as in the seeds) and an
//! in-process client whose calls run on the connection's own runtime thread.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::{Duration, Instant};

use floe::bytes::Bytes;
use floe::protocol::OperationMode;
use floe::{Communicator, Current, Identity, ObjectPrx, Properties, Proxy};

use crate::bench::*;
use crate::stats::Steps;
use crate::tests::{Kind, Measured, Test};

struct PerfI {
    communicator: Communicator,
    count: AtomicI32,
}

impl Perf for PerfI {
    async fn o(&self, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn send_byte_seq(&self, _b: ByteSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn recv_byte_seq(&self, size: i32, _: &Current) -> floe::Result<ByteSeq> {
        Ok(Bytes::from(vec![0u8; size.max(0) as usize]))
    }
    async fn send_fixed_seq(&self, _s: FixedSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn recv_fixed_seq(&self, count: i32, _: &Current) -> floe::Result<FixedSeq> {
        Ok(vec![Fixed { i: 1, j: 2, d: 3.0 }; count.max(0) as usize])
    }
    async fn send_string_double_seq(&self, _s: StringDoubleSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn recv_string_double_seq(&self, count: i32, _: &Current) -> floe::Result<StringDoubleSeq> {
        Ok(vec![StringDouble { s: "hello".into(), d: 3.14 }; count.max(0) as usize])
    }
    async fn work(&self, micros: i32, _: &Current) -> floe::Result<()> {
        let end = Instant::now() + Duration::from_micros(micros.max(0) as u64);
        while Instant::now() < end {}
        Ok(())
    }
    async fn incr(&self, _: &Current) -> floe::Result<()> {
        self.count.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
    async fn count(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.count.load(Ordering::Relaxed))
    }
    async fn reset(&self, _: &Current) -> floe::Result<()> {
        self.count.store(0, Ordering::Relaxed);
        Ok(())
    }
    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }
    counting_operations! {
        b1(a): u8; b2(a, b): u8; b4(a, b, c, d): u8; b8(a, b, c, d, e, f, g, h): u8;
        s1(a): i16; s2(a, b): i16; s4(a, b, c, d): i16; s8(a, b, c, d, e, f, g, h): i16;
        i1(a): i32; i2(a, b): i32; i4(a, b, c, d): i32; i8(a, b, c, d, e, f, g, h): i32;
        l1(a): i64; l2(a, b): i64; l4(a, b, c, d): i64; l8(a, b, c, d, e, f, g, h): i64;
        f1(a): f32; f2(a, b): f32; f4(a, b, c, d): f32; f8(a, b, c, d, e, f, g, h): f32;
        d1(a): f64; d2(a, b): f64; d4(a, b, c, d): f64; d8(a, b, c, d, e, f, g, h): f64;
    }
}

/// The cxRmi payload operations of the servant: each counts its calls, as `incr` does.
macro_rules! counting_operations {
    ($($op:ident($($arg:ident),*): $t:ty;)*) => {
        $(async fn $op(&self, $($arg: $t,)* _: &Current) -> floe::Result<()> {
            $(let _ = $arg;)*
            self.count.fetch_add(1, Ordering::Relaxed);
            Ok(())
        })*
    };
}
use counting_operations;

/// Queues one request of a cxRmi payload variant (`b4`: four byte parameters, …) on a batch
/// writer; `None` for an unknown variant.
fn payload_call(variant: &str) -> Option<fn(&mut PerfBatch)> {
    macro_rules! calls {
        ($($op:ident($($x:literal),*);)*) => {
            match variant {
                $(stringify!($op) => Some(|b: &mut PerfBatch| b.$op($($x as _),*)),)*
                _ => None,
            }
        };
    }
    calls! {
        b1(1); b2(1, 2); b4(1, 2, 3, 4); b8(1, 2, 3, 4, 5, 6, 7, 8);
        s1(1); s2(1, 2); s4(1, 2, 3, 4); s8(1, 2, 3, 4, 5, 6, 7, 8);
        i1(1); i2(1, 2); i4(1, 2, 3, 4); i8(1, 2, 3, 4, 5, 6, 7, 8);
        l1(1); l2(1, 2); l4(1, 2, 3, 4); l8(1, 2, 3, 4, 5, 6, 7, 8);
        f1(1); f2(1, 2); f4(1, 2, 3, 4); f8(1, 2, 3, 4, 5, 6, 7, 8);
        d1(1); d2(1, 2); d4(1, 2, 3, 4); d8(1, 2, 3, 4, 5, 6, 7, 8);
    }
}

/// The benchmark's properties: `threads` runtime threads, ACM off and a 100 MB message size
/// limit, or with `None` floe's defaults (the connections test); `--floe-property` settings
/// either way.
fn properties(threads: Option<usize>) -> Properties {
    let p = Properties::new();
    if let Some(threads) = threads {
        p.set("Floe.Runtime.Threads", &threads.to_string());
        p.set("Ice.ACM.Timeout", "0");
        p.set("Ice.MessageSizeMax", "100000");
    }
    apply_properties(&p);
    p
}

/// Properties given with `--floe-property`, for every floe communicator of this process.
static EXTRA_PROPERTIES: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Takes the `--floe-property NAME=VALUE` arguments for this process's floe communicators.
pub(crate) fn set_properties(given: &[String]) -> Result<(), String> {
    let parsed = given
        .iter()
        .map(|p| {
            p.split_once('=')
                .map(|(n, v)| (n.trim().to_string(), v.trim().to_string()))
                .filter(|(n, _)| !n.is_empty())
                .ok_or_else(|| format!("--floe-property {p:?} is not NAME=VALUE"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    EXTRA_PROPERTIES.set(parsed).map_err(|_| "floe properties set twice".to_string())
}

/// Passes this process's `--floe-property` arguments on to a floe server or client process.
pub(crate) fn forward_properties(cmd: &mut std::process::Command) {
    for (name, value) in property_list() {
        cmd.arg(format!("--floe-property={name}={value}"));
    }
}

/// The `--floe-property` settings, as (name, value).
fn property_list() -> impl Iterator<Item = &'static (String, String)> {
    EXTRA_PROPERTIES.get().into_iter().flatten()
}

/// Sets this process's `--floe-property` settings on `props` (a floe communicator's).
pub(crate) fn apply_properties(props: &Properties) {
    for (name, value) in property_list() {
        props.set(name, value);
    }
}

/// Passes this process's `--floe-property` settings to a floe program (floe-interop-server,
/// floe-router, floe-storm) as its own command-line properties, `--NAME=VALUE`.
pub(crate) fn forward_as_program_properties(cmd: &mut std::process::Command) {
    for (name, value) in property_list() {
        cmd.arg(format!("--{name}={value}"));
    }
}

/// Serves the benchmark interface on `port` (and over ssl on `ssl_port` if given) with
/// `threads` runtime threads (and, unless `exact`, floe's default connection runtimes) until
/// `shutdown`;
/// with `None`, on floe's default configuration (runtime size, ACM) but for the message size
/// limit and `--floe-property` settings.
pub(crate) fn serve(port: u16, threads: Option<usize>, exact: bool, ssl_port: Option<u16>) -> floe::Result<()> {
    let props = properties(threads);
    if exact {
        // Exactly `threads` threads: accepted connections stay on the communicator's runtime.
        props.set("Floe.Runtime.ConnectionThreads", "0");
    }
    let mut endpoints = format!("tcp -h 127.0.0.1 -p {port}");
    if let Some(ssl_port) = ssl_port {
        crate::tls::floe_server_properties(&props);
        endpoints.push_str(&format!(":ssl -h 127.0.0.1 -p {ssl_port}"));
    }
    let communicator = Communicator::with_properties(props)?;
    let adapter = communicator.create_object_adapter_with_endpoints("Bench", &endpoints)?;
    adapter.add(
        PerfServer::new(PerfI { communicator: communicator.clone(), count: AtomicI32::new(0) }),
        Identity::new("a"),
    );
    communicator.block_on(adapter.activate())?;
    println!("ready");
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}

/// Serves the benchmark interface as a server of an IceGrid application (the `deployment`
/// test's): its configuration comes from `args` (`--Ice.Config=FILE`, as an IceGrid node
/// passes it), its adapter `Pinged` takes its endpoints and adapter id from there, and it
/// serves one object, `Pinged.Identity`, until its communicator is shut down (by the node,
/// through its `Process` object).
pub(crate) fn serve_grid(args: Vec<String>) -> floe::Result<()> {
    let (communicator, _) = Communicator::from_args(args)?;
    let adapter = communicator.create_object_adapter("Pinged")?;
    let identity = communicator.properties().get_or("Pinged.Identity", "pinged");
    adapter.add(
        PerfServer::new(PerfI { communicator: communicator.clone(), count: AtomicI32::new(0) }),
        Identity::new(identity),
    );
    communicator.block_on(adapter.activate())?;
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}

/// Runs `test` against a server on `port` (its ssl port for an ssl test) for about
/// `duration`; returns the operations done and the seconds they took.
pub(crate) fn measure(test: &Test, port: u16, duration: Duration) -> floe::Result<Measured> {
    let props = properties(Some(1));
    let transport = if test.ssl {
        crate::tls::floe_client_properties(&props);
        "ssl"
    } else {
        "tcp"
    };
    let communicator = Communicator::with_properties(props)?;
    let proxy = PerfPrx::from_object(communicator.string_to_proxy(&format!("a:{transport} -h 127.0.0.1 -p {port}"))?);
    let test = *test;
    let handle = communicator.runtime_handle().clone();
    let result = communicator.block_on(async move {
        handle
            .spawn(async move { run(&test, &proxy, duration).await })
            .await
            .map_err(|e| floe::Error::Io(e.to_string()))?
    });
    communicator.destroy_blocking();
    result
}

/// The request a batched-oneway test queues: `o()` for the sender side, `incr()` when delivery
/// is counted, or a payload variant (which counts too).
fn batch_call(test: &Test) -> floe::Result<fn(&mut PerfBatch)> {
    match test.kind {
        Kind::BatchSend => Ok(|b: &mut PerfBatch| b.o()),
        Kind::BatchDelivered => Ok(|b: &mut PerfBatch| b.incr()),
        _ => payload_call(test.payload_variant())
            .ok_or_else(|| floe::Error::Io(format!("unknown payload variant in {}", test.name))),
    }
}

async fn run(test: &Test, p: &PerfPrx, duration: Duration) -> floe::Result<Measured> {
    for _ in 0..100 {
        p.o().await?;
    }
    let param = test.param;
    let n = param.max(0) as usize;
    let mut ops: u64 = 0;
    let start = Instant::now();
    let deadline = start + duration;
    match test.kind {
        Kind::Twoway => {
            while Instant::now() < deadline {
                for _ in 0..100 {
                    p.o().await?;
                }
                ops += 100;
            }
        }
        Kind::Demarey => {
            let mut steps = Steps::default();
            for _ in 0..1000 {
                p.o().await?;
            }
            let start = Instant::now();
            for _ in 0..10 {
                let s0 = Instant::now();
                for _ in 0..param {
                    p.o().await?;
                }
                steps.push(s0.elapsed(), param as u64);
                ops += param as u64;
            }
            return Ok(Measured { ops, secs: start.elapsed().as_secs_f64(), steps: Some(steps.stats()) });
        }
        Kind::Oneway => {
            let o = p.ice_oneway();
            while Instant::now() < deadline {
                for _ in 0..1000 {
                    o.o().await?;
                }
                ops += 1000;
            }
            p.o().await?;
        }
        Kind::BatchSend | Kind::BatchSendPayload => {
            // cxRmi TEST1 times only the batching: rounds of queuing through the typed batch
            // writer (which packs requests into messages of Ice.BatchAutoFlushSize and does no
            // I/O); each round is then flushed and confirmed by a twoway call, untimed.
            let queue = batch_call(test)?;
            let round = crate::tests::sender_round(duration);
            let mut b = p.batch_writer();
            let mut queuing = Duration::ZERO;
            while ops == 0 || Instant::now() < deadline {
                let t0 = Instant::now();
                for _ in 0..round {
                    queue(&mut b);
                }
                queuing += t0.elapsed();
                ops += round;
                b.flush().await?;
                p.o().await?;
            }
            return Ok(Measured::new(ops, queuing.as_secs_f64()));
        }
        Kind::BatchDelivered | Kind::BatchDeliveredPayload => {
            let queue = batch_call(test)?;
            p.reset().await?;
            let mut b = p.batch_writer();
            while Instant::now() < deadline {
                for _ in 0..10_000 {
                    queue(&mut b);
                    if b.needs_flush() {
                        b.flush().await?;
                    }
                }
                b.flush().await?;
                ops += 10_000;
            }
            // Every queued request must arrive; a lost one fails the run instead of hanging it.
            let give_up = Instant::now() + Duration::from_secs(30);
            while (p.count().await? as u64) < ops {
                if Instant::now() > give_up {
                    return Err(floe::Error::Io(format!(
                        "batched requests lost: {} of {ops} delivered",
                        p.count().await?
                    )));
                }
            }
        }
        Kind::BatchTwoway => {
            let obj: &ObjectPrx = floe::Proxy::as_object(p);
            while Instant::now() < deadline {
                let outcomes = obj
                    .invoke_batch_twoway(
                        "o",
                        OperationMode::Normal,
                        (0..param).map(|_| |_: &mut floe::encoding::Encoder| {}),
                    )
                    .await?;
                for o in outcomes {
                    o?.decode(|_| Ok(()))?;
                }
                ops += param as u64;
            }
        }
        Kind::Ami => {
            ops = crate::pipeline::pipelined(deadline, n, || {
                let q = p.clone();
                async move { q.o().await }
            })
            .await?;
        }
        Kind::BytesSend => {
            let b = Bytes::from(vec![0u8; n]);
            while Instant::now() < deadline {
                p.send_byte_seq(&b).await?;
                ops += 1;
            }
        }
        Kind::BytesRecv => {
            while Instant::now() < deadline {
                p.recv_byte_seq(param).await?;
                ops += 1;
            }
        }
        Kind::FixedSend => {
            let v = vec![Fixed { i: 1, j: 2, d: 3.0 }; n];
            while Instant::now() < deadline {
                p.send_fixed_seq(&v).await?;
                ops += 1;
            }
        }
        Kind::FixedRecv => {
            while Instant::now() < deadline {
                p.recv_fixed_seq(param).await?;
                ops += 1;
            }
        }
        Kind::StringsSend => {
            let v = vec![StringDouble { s: "hello".into(), d: 3.14 }; n];
            while Instant::now() < deadline {
                p.send_string_double_seq(&v).await?;
                ops += 1;
            }
        }
        Kind::StringsRecv => {
            while Instant::now() < deadline {
                p.recv_string_double_seq(param).await?;
                ops += 1;
            }
        }
        _ => {
            while Instant::now() < deadline {
                p.work(param).await?;
                ops += 1;
            }
        }
    }
    Ok(Measured::new(ops, start.elapsed().as_secs_f64()))
}
