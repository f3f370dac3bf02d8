//! Server for Ice's `Ice/faultTolerance` suite: the driver starts twelve of them, each given its
//! test port as its one argument; the client kills them one after the other (`abort`,
//! `idempotentAbort`) and checks that its retries move on to the next.

use floe::{Current, Identity};
use floe_conformance::generated::fault_tolerance::test::*;
use floe_conformance::TestServer;

struct TestI;

impl TestIntf for TestI {
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn abort(&self, _: &Current) -> floe::Result<()> {
        println!("aborting...");
        std::process::exit(0);
    }
    async fn idempotent_abort(&self, _: &Current) -> floe::Result<()> {
        std::process::exit(0);
    }
    async fn pid(&self, _: &Current) -> floe::Result<i32> {
        Ok(std::process::id() as i32)
    }
}

fn main() -> std::process::ExitCode {
    // The port number is the one argument that is not a property.
    let port = std::env::args().skip(1).filter(|a| !a.starts_with('-')).map(|a| a.parse::<i32>()).collect::<Vec<_>>();
    let port = match port.as_slice() {
        [Ok(p)] if *p > 0 => *p,
        _ => {
            eprintln!("faultTolerance: give exactly one test port number");
            return std::process::ExitCode::from(2);
        }
    };
    TestServer::main("faultTolerance", &[], move |server| async move {
        let adapter = server.adapter("TestAdapter", port)?;
        adapter.add(TestIntfServer::new(TestI), Identity::new("test"));
        adapter.activate().await
    })
}
