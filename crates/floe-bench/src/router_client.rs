//! `floe-bench --router-client PROXY --duration-ms MS [--tests T] [--router ROUTER]`: floe's
//! client of the `router` test, the workload of `peers/ice-router/client.cpp` made with floe
//! on its defaults, so that the routers are also measured between a floe client and a floe
//! server. With `--router` (a Glacier2 router's proxy, set as `Ice.Default.Router`) it creates a
//! session (the router lets everyone in) and routes its callback adapter through the router;
//! without, it calls the server directly and its callback adapter listens on 127.0.0.1.
//!
//! Each test runs for MS milliseconds after a warm-up and prints `RESULT <name> <value>
//! <unit>` lines (`<name>_p50` / `<name>_p99` in µs for the sequential ones), or `RESULT
//! <name> error <what>`: `twoway` (sequential `ping()`), `ami` (`ping()`, at most 100 in
//! flight), `oneway` (`incCounter(1)` until the server counted them all), `bytes` (sequential
//! 500 kB `sendByteSeq`) and `callback` (sequential `callEcho`, the server calling the client's
//! `Echo` back).

use std::time::{Duration, Instant};

use floe::protocol::OperationMode;
use floe::{Communicator, Identity, Properties, Proxy};
use futures_util::stream::{FuturesUnordered, StreamExt};

use crate::interop::{Echo, EchoPrx, EchoServer, TesterPrx};

/// The tests, in the order they run.
pub(crate) const TESTS: [&str; 5] = ["twoway", "ami", "oneway", "bytes", "callback"];

/// Echoes, for callbacks.
struct EchoI;

impl Echo for EchoI {
    async fn echo_string(&self, s: floe::CompactString, _: &floe::Current) -> floe::Result<floe::CompactString> {
        Ok(s)
    }
}

/// Prints one result line.
fn result(name: &str, value: f64, unit: &str) {
    println!("RESULT {name} {value:.2} {unit}");
}

/// The value at fraction `p` of `v` (sorted here), 0 for no values.
fn percentile(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    crate::stats::percentile(v, p).unwrap_or(0.0)
}

/// Runs the client; true when every test produced its values.
pub(crate) fn run(proxy: &str, router: Option<&str>, ms: u64, only: &[String]) -> Result<bool, String> {
    let props = Properties::new();
    props.set("Ice.MessageSizeMax", "100000");
    // `--floe-property` settings (the router test forwards its own).
    crate::floe_system::apply_properties(&props);
    if let Some(r) = router {
        props.set("Ice.Default.Router", r);
    }
    let communicator = Communicator::with_properties(props).map_err(|e| e.to_string())?;
    let proxy = proxy.to_string();
    let only = only.to_vec();
    let c = communicator.clone();
    // The workload runs as a task of the communicator's runtime, as async code using floe does.
    let workload = communicator.runtime_handle().spawn(async move { workload(&c, &proxy, ms, &only).await });
    let outcome = communicator.block_on(workload).map_err(|e| e.to_string()).and_then(|r| r);
    communicator.destroy_blocking();
    outcome
}

async fn workload(c: &Communicator, proxy: &str, ms: u64, only: &[String]) -> Result<bool, String> {
    let fail = |e: floe::Error| e.to_string();
    let (adapter, category, router) = match c.default_router() {
        Some(router) => {
            router
                .invoke("createSession", OperationMode::Normal, None, |e| {
                    e.write_str("bench");
                    e.write_str("bench");
                })
                .await
                .map_err(fail)?
                .ok_or("createSession: no reply")?
                .decode(|_| Ok(()))
                .map_err(fail)?;
            let category = router
                .invoke("getCategoryForClient", OperationMode::Idempotent, None, |_| {})
                .await
                .map_err(fail)?
                .ok_or("getCategoryForClient: no reply")?
                .decode(|d| d.read_string())
                .map_err(fail)?
                .to_string();
            let adapter = c.create_object_adapter_with_router("Callbacks", &router).await.map_err(fail)?;
            (adapter, category, Some(router))
        }
        None => {
            let adapter = c.create_object_adapter_with_endpoints("Callbacks", "tcp -h 127.0.0.1").map_err(fail)?;
            (adapter, "direct".to_string(), None)
        }
    };
    let echo =
        EchoPrx::unchecked_cast(&adapter.add(EchoServer::new(EchoI), Identity::with_category(&category, "echo")));
    adapter.activate().await.map_err(fail)?;
    let tester = TesterPrx::from_object(c.string_to_proxy(proxy).map_err(fail)?);
    tester.ice_ping().await.map_err(fail)?;
    let mut all = true;
    for name in TESTS.iter().filter(|t| only.is_empty() || only.iter().any(|o| o == *t)) {
        if let Err(e) = one(name, &tester, &echo, ms).await {
            all = false;
            println!("RESULT {name} error {}", e.replace('\n', " "));
        }
    }
    if let Some(router) = router {
        // The router closes the connection as it destroys the session: the reply may be lost.
        let _ = router.invoke("destroySession", OperationMode::Normal, None, |_| {}).await;
    }
    Ok(all)
}

/// Calls `f` sequentially for `ms` (after `warm` calls); prints calls/s, p50 and p99 in µs.
async fn sequential<F, Fut>(name: &str, warm: usize, ms: u64, mut f: F) -> Result<(), String>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    for _ in 0..warm {
        f().await?;
    }
    let mut latencies = Vec::with_capacity(200_000);
    let start = Instant::now();
    let end = start + Duration::from_millis(ms);
    let mut t = start;
    while t < end {
        f().await?;
        let now = Instant::now();
        latencies.push((now - t).as_secs_f64() * 1e6);
        t = now;
    }
    result(name, latencies.len() as f64 / (t - start).as_secs_f64(), "calls/s");
    result(&format!("{name}_p50"), percentile(&mut latencies, 0.5), "us");
    result(&format!("{name}_p99"), percentile(&mut latencies, 0.99), "us");
    Ok(())
}

async fn one(name: &str, t: &TesterPrx, echo: &EchoPrx, ms: u64) -> Result<(), String> {
    let e = |e: floe::Error| e.to_string();
    match name {
        "twoway" => sequential("twoway", 2000, ms, || async { t.ping().await.map_err(e) }).await,
        "ami" => {
            let start = Instant::now();
            let end = start + Duration::from_millis(ms);
            let mut in_flight = FuturesUnordered::new();
            let mut done: u64 = 0;
            loop {
                while in_flight.len() < 100 && Instant::now() < end {
                    in_flight.push(t.ping());
                }
                match in_flight.next().await {
                    Some(r) => {
                        r.map_err(e)?;
                        done += 1;
                    }
                    None => break,
                }
            }
            result("ami", done as f64 / start.elapsed().as_secs_f64(), "calls/s");
            Ok(())
        }
        "oneway" => {
            let oneway = t.ice_oneway();
            t.reset_counter().await.map_err(e)?;
            let start = Instant::now();
            let end = start + Duration::from_millis(ms);
            let mut sent: i32 = 0;
            while Instant::now() < end {
                for _ in 0..100 {
                    oneway.inc_counter(1).await.map_err(e)?;
                }
                sent += 100;
            }
            let deadline = Instant::now() + Duration::from_secs(if ms > 1000 { 60 } else { 10 });
            loop {
                let got = t.get_counter().await.map_err(e)?;
                if got == sent {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!("the oneways did not all arrive in time: {got} of {sent}"));
                }
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            result("oneway", f64::from(sent) / start.elapsed().as_secs_f64(), "msg/s");
            Ok(())
        }
        "bytes" => {
            let payload = floe::bytes::Bytes::from((0..500_000).map(|k| k as u8).collect::<Vec<u8>>());
            sequential("bytes", 20, ms, || async { t.send_byte_seq(&payload).await.map_err(e) }).await
        }
        "callback" => {
            sequential("callback", 200, ms, || async {
                match t.call_echo(Some(echo), "hi").await.map_err(e)? {
                    s if s == "hi" => Ok(()),
                    s => Err(format!("callEcho returned {s:?}")),
                }
            })
            .await
        }
        other => Err(format!("no test {other}")),
    }
}
