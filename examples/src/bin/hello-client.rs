//! Hello client: says hello twoway, oneway and batched, then checks the count.
//! `hello-client [--proxy "hello:tcp -h 127.0.0.1 -p 10000"] [--shutdown]`
use floe::{Communicator, Proxy};
use floe_examples::demo::HelloPrx;

fn main() -> floe::Result<()> {
    let (communicator, args) = Communicator::from_args(std::env::args())?;
    let proxy = floe_examples::arg("--proxy", "hello:tcp -h 127.0.0.1 -p 10000");
    let hello = HelloPrx::from_object(communicator.string_to_proxy(&proxy)?);
    hello.say_hello_blocking(0)?;
    println!("twoway: done");
    hello.ice_oneway().say_hello_blocking(0)?;
    println!("oneway: sent");
    let batch = hello.ice_batch_oneway();
    for _ in 0..3 {
        batch.say_hello_blocking(0)?;
    }
    communicator.block_on(batch.ice_flush_batch_requests())?;
    println!("batch: 3 requests flushed in one message");
    // A twoway call after them: requests on one connection are dispatched in order.
    let count = hello.count_blocking()?;
    println!("the server said hello {count} times");
    if args.iter().any(|a| a == "--shutdown") {
        hello.shutdown_blocking()?;
    }
    communicator.destroy_blocking();
    if count < 5 {
        eprintln!("expected at least 5 greetings");
        std::process::exit(1);
    }
    Ok(())
}
