//! Hello client with an async `main`: calls the hello server with `.await`, several calls in
//! flight at once, an invocation timeout, and the generated `_blocking` methods, which also
//! work under `#[tokio::main]` (a multi-thread runtime) but not on a current-thread runtime.
//! `hello-async-client [--proxy "hello:tcp -h 127.0.0.1 -p 10000"] [--shutdown]`
use std::time::{Duration, Instant};

use floe::{Communicator, Proxy};
use floe_examples::demo::HelloPrx;

#[tokio::main]
async fn main() -> floe::Result<()> {
    // Made inside a runtime, the communicator runs its connections on that runtime.
    let (communicator, args) = Communicator::from_args(std::env::args())?;
    let proxy = floe_examples::arg("--proxy", "hello:tcp -h 127.0.0.1 -p 10000");
    let base = communicator.string_to_proxy(&proxy)?;
    // Asks the server whether the object is a `::Demo::Hello` (one round trip).
    let Some(hello) = HelloPrx::checked_cast(&base).await? else {
        eprintln!("{proxy} is not a ::Demo::Hello");
        std::process::exit(1);
    };

    // A twoway call: the future completes with the reply.
    hello.say_hello(0).await?;
    println!("twoway: done");

    // Five calls in flight at once on one connection. The server's servant sleeps 200 ms
    // without blocking its connection, so together they take about 200 ms, not a second.
    let start = Instant::now();
    let calls = (0..5).map(|_| hello.say_hello(200));
    for result in futures_util::future::join_all(calls).await {
        result?;
    }
    println!("5 concurrent calls of 200 ms each: {} ms", start.elapsed().as_millis());

    // An invocation timeout: the call gives up waiting after 50 ms (the server still runs it).
    let impatient = hello.ice_invocation_timeout(Some(Duration::from_millis(50)));
    match impatient.say_hello(500).await {
        Err(floe::Error::InvocationTimeout(after)) => println!("timeout: gave up after {after:?}"),
        other => {
            eprintln!("expected an invocation timeout, got {other:?}");
            std::process::exit(1);
        }
    }

    // `_blocking` methods work here: `#[tokio::main]` starts a multi-thread runtime, and a
    // blocking call hands this worker thread's other tasks to the other workers while it waits.
    let count = hello.count_blocking()?;
    println!("blocking call under #[tokio::main]: the server said hello {count} times");
    let h = hello.clone();
    let from_pool = tokio::task::spawn_blocking(move || h.count_blocking()).await.expect("task")?;
    println!("blocking call from spawn_blocking: {from_pool}");

    // On a current-thread runtime a blocking call would wait on the very thread that has to
    // run the call: it fails with `Error::BlockingInAsync` instead. Await the call there.
    let h = hello.clone();
    let (refused, awaited) = std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async { (h.count_blocking(), h.count().await) })
    })
    .join()
    .expect("thread");
    match (refused, awaited) {
        (Err(floe::Error::BlockingInAsync(_)), Ok(_)) => {
            println!("current-thread runtime: _blocking fails with BlockingInAsync, .await works")
        }
        other => {
            eprintln!("unexpected results on a current-thread runtime: {other:?}");
            std::process::exit(1);
        }
    }

    if args.iter().any(|a| a == "--shutdown") {
        hello.shutdown().await?;
    }
    communicator.destroy().await;
    Ok(())
}
