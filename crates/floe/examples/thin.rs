//! Thin end-to-end check (temporary): calls opInt on a proxy given as argument, then serves
//! "tester" with a hand-written dispatcher on port 12077 until shutdown.
use std::sync::Arc;

use floe::encoding::{Decode, Encode};
use floe::protocol::OperationMode;
use floe::{Communicator, DispatchFuture, IncomingRequest};

fn main() {
    let (comm, args) = Communicator::from_args(std::env::args()).unwrap();
    let proxy = comm.string_to_proxy(&args[1]).unwrap();
    let r = comm.block_on(async {
        proxy.ice_ping().await?;
        let ids = proxy.ice_ids().await?;
        let o = proxy
            .invoke("opInt", OperationMode::Normal, None, |e| {
                3i32.encode(e);
                4i32.encode(e);
            })
            .await?
            .unwrap();
        let (product, ret) = o.decode(|d| Ok((i32::decode(d)?, i32::decode(d)?)))?;
        Ok::<_, floe::Error>((ids, product, ret))
    });
    println!("client: {r:?}");
    let adapter = comm.create_object_adapter_with_endpoints("TestAdapter", "tcp -h 127.0.0.1 -p 12077").unwrap();
    let c2 = comm.clone();
    let servant = move |req: IncomingRequest| -> DispatchFuture {
        let c2 = c2.clone();
        Box::pin(async move {
            if let Some(r) =
                floe::dispatch::dispatch_builtin(&req, &["::Ice::Object", "::Interop::Tester"], "::Interop::Tester")
            {
                return r;
            }
            let cur = &req.current;
            match cur.operation.as_str() {
                "opInt" => {
                    let mut d = req.decoder();
                    let a = i32::decode(&mut d).unwrap();
                    let b = i32::decode(&mut d).unwrap();
                    cur.ok(|e| {
                        a.wrapping_mul(b).encode(e);
                        a.encode(e);
                    })
                }
                "shutdown" => {
                    c2.shutdown();
                    cur.ok_empty()
                }
                _ => cur.operation_not_exist(),
            }
        })
    };
    adapter.add(Arc::new(servant), floe::Identity::new("tester"));
    comm.block_on(adapter.activate()).unwrap();
    println!("TestAdapter ready");
    comm.block_on(comm.wait_for_shutdown());
}
