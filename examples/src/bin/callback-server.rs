//! Callback server: calls clients back over their own connections (bidirectional), so clients
//! behind firewalls need no endpoint of their own.
//! `callback-server [--endpoints "tcp -h 127.0.0.1 -p 10001"]`
use std::sync::Mutex;

use floe::proxy::reference::Reference;
use floe::{Communicator, Current, Identity, ObjectPrx, Proxy};
use floe_examples::callback::demo::{CallbackReceiverPrx, CallbackSender, CallbackSenderServer};

struct SenderI {
    communicator: Communicator,
    clients: Mutex<Vec<CallbackReceiverPrx>>,
}

impl CallbackSender for SenderI {
    async fn add_client(&self, ident: Identity, current: &Current) -> floe::Result<()> {
        let conn = current.connection().cloned().ok_or_else(|| floe::Error::Adapter("no connection".into()))?;
        // A proxy with no endpoints, bound to the caller's connection.
        let proxy = ObjectPrx::from_reference(self.communicator.clone(), Reference::new(ident)).ice_fixed(conn);
        self.clients.lock().expect("clients").push(CallbackReceiverPrx::from_object(proxy));
        Ok(())
    }
    async fn notify_all(&self, times: i32, _: &Current) -> floe::Result<i32> {
        let clients: Vec<CallbackReceiverPrx> = self.clients.lock().expect("clients").clone();
        let mut ok = 0;
        for c in &clients {
            for n in 0..times {
                if c.callback(n).await.is_ok() {
                    ok += 1;
                }
            }
        }
        Ok(ok)
    }
    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }
}

fn main() -> floe::Result<()> {
    let (communicator, _) = Communicator::from_args(std::env::args())?;
    let endpoints = floe_examples::arg("--endpoints", "tcp -h 127.0.0.1 -p 10001");
    let adapter = communicator.create_object_adapter_with_endpoints("Callback.Server", &endpoints)?;
    let sender = SenderI { communicator: communicator.clone(), clients: Mutex::new(Vec::new()) };
    adapter.add(CallbackSenderServer::new(sender), Identity::new("sender"));
    communicator.block_on(adapter.activate())?;
    println!("Callback.Server ready");
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}
