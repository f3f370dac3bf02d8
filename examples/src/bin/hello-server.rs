//! Hello server: `hello-server [--endpoints "tcp -h 127.0.0.1 -p 10000"]`. When its
//! configuration sets `Hello.Endpoints` (as an IceGrid node's configuration file does, with
//! `Hello.AdapterId`), the adapter takes its endpoints and id from there instead.
use std::sync::atomic::{AtomicI32, Ordering};

use floe::{Communicator, Current, Identity};
use floe_examples::demo::{Hello, HelloServer};

struct HelloI {
    communicator: Communicator,
    count: AtomicI32,
}

impl Hello for HelloI {
    async fn say_hello(&self, delay: i32, _: &Current) -> floe::Result<()> {
        if delay > 0 {
            tokio::time::sleep(std::time::Duration::from_millis(delay as u64)).await;
        }
        self.count.fetch_add(1, Ordering::SeqCst);
        println!("Hello World!");
        Ok(())
    }
    async fn count(&self, _: &Current) -> floe::Result<i32> {
        Ok(self.count.load(Ordering::SeqCst))
    }
    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }
}

fn main() -> floe::Result<()> {
    let (communicator, _) = Communicator::from_args(std::env::args())?;
    let endpoints = floe_examples::arg("--endpoints", "tcp -h 127.0.0.1 -p 10000");
    let adapter = if communicator.properties().get("Hello.Endpoints").is_some_and(|e| !e.is_empty()) {
        communicator.create_object_adapter("Hello")?
    } else {
        communicator.create_object_adapter_with_endpoints("Hello", &endpoints)?
    };
    adapter.add(
        HelloServer::new(HelloI { communicator: communicator.clone(), count: AtomicI32::new(0) }),
        Identity::new("hello"),
    );
    communicator.block_on(adapter.activate())?;
    println!("Hello ready");
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}
