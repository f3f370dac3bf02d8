//! Callback client: registers a receiver served over its outgoing connection (no endpoints of
//! its own), asks the server to call it back, and checks every callback arrived.
//! `callback-client [--proxy "sender:tcp -h 127.0.0.1 -p 10001"] [--shutdown]`
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::Arc;

use floe::{Communicator, Current, Identity, Proxy};
use floe_examples::callback::demo::{CallbackReceiver, CallbackReceiverServer, CallbackSenderPrx};

struct ReceiverI(Arc<AtomicI32>);

impl CallbackReceiver for ReceiverI {
    async fn callback(&self, num: i32, _: &Current) -> floe::Result<()> {
        println!("received callback #{num}");
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

fn main() -> floe::Result<()> {
    let (communicator, args) = Communicator::from_args(std::env::args())?;
    let proxy = floe_examples::arg("--proxy", "sender:tcp -h 127.0.0.1 -p 10001");
    let sender = CallbackSenderPrx::from_object(communicator.string_to_proxy(&proxy)?);
    let received = Arc::new(AtomicI32::new(0));
    // An adapter without endpoints: it only serves requests arriving on our own connection.
    let adapter = communicator.create_object_adapter_with_endpoints("Callback.Client", "")?;
    let ident = Identity::new("receiver");
    adapter.add(CallbackReceiverServer::new(ReceiverI(received.clone())), ident.clone());
    let conn = communicator.block_on(sender.ice_get_connection())?;
    conn.set_adapter(Some(adapter));
    sender.add_client_blocking(&ident)?;
    let ok = sender.notify_all_blocking(5)?;
    println!("server made {ok} callbacks, {} received", received.load(Ordering::SeqCst));
    if args.iter().any(|a| a == "--shutdown") {
        sender.shutdown_blocking()?;
    }
    communicator.destroy_blocking();
    if ok != 5 || received.load(Ordering::SeqCst) != 5 {
        std::process::exit(1);
    }
    Ok(())
}
