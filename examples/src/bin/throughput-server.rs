//! Throughput server: `throughput-server [--endpoints "tcp -h 127.0.0.1 -p 10002"]`.
use floe::bytes::Bytes;
use floe::{Communicator, Current, Identity};
use floe_examples::throughput::demo::{ByteSeq, Throughput, ThroughputServer};

struct ThroughputI {
    communicator: Communicator,
    data: Bytes,
}

impl Throughput for ThroughputI {
    async fn send_byte_seq(&self, _seq: ByteSeq, _: &Current) -> floe::Result<()> {
        Ok(())
    }
    async fn recv_byte_seq(&self, size: i32, _: &Current) -> floe::Result<ByteSeq> {
        // A zero-copy slice of a buffer prepared once.
        Ok(self.data.slice(..(size.max(0) as usize).min(self.data.len())))
    }
    async fn shutdown(&self, _: &Current) -> floe::Result<()> {
        self.communicator.shutdown();
        Ok(())
    }
}

fn main() -> floe::Result<()> {
    let (communicator, _) = Communicator::from_args(std::env::args())?;
    let endpoints = floe_examples::arg("--endpoints", "tcp -h 127.0.0.1 -p 10002");
    let adapter = communicator.create_object_adapter_with_endpoints("Throughput", &endpoints)?;
    let servant = ThroughputI { communicator: communicator.clone(), data: Bytes::from(vec![7u8; 1 << 20]) };
    adapter.add(ThroughputServer::new(servant), Identity::new("throughput"));
    communicator.block_on(adapter.activate())?;
    println!("Throughput ready");
    communicator.block_on(async {
        communicator.wait_for_shutdown().await;
        communicator.destroy().await;
    });
    Ok(())
}
