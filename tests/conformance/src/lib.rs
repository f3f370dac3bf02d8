//! floe servers for the cross-language suites of ZeroC Ice 3.7.8 (`python/test/Ice/<suite>`),
//! each generated from that suite's Test.ice by floe-build and implemented here, and the helper
//! they share. The runner (`tests/suites.rs`) plays Ice's unmodified clients against them.
#![allow(missing_docs)]

use std::process::ExitCode;

use floe::{Communicator, ObjectAdapter};

/// Generated code of each suite's Test.ice.
pub mod generated {
    #![allow(clippy::all, missing_docs, unreachable_pub)]
    pub mod enums {
        include!(concat!(env!("OUT_DIR"), "/enums.rs"));
    }
    pub mod facets {
        include!(concat!(env!("OUT_DIR"), "/facets.rs"));
    }
    pub mod proxy {
        include!(concat!(env!("OUT_DIR"), "/proxy.rs"));
    }
    pub mod exceptions {
        include!(concat!(env!("OUT_DIR"), "/exceptions.rs"));
    }
    pub mod ami {
        include!(concat!(env!("OUT_DIR"), "/ami.rs"));
    }
    pub mod inheritance {
        include!(concat!(env!("OUT_DIR"), "/inheritance.rs"));
    }
    pub mod operations {
        include!(concat!(env!("OUT_DIR"), "/operations.rs"));
    }
    pub mod objects {
        include!(concat!(env!("OUT_DIR"), "/objects.rs"));
    }
    pub mod optional {
        include!(concat!(env!("OUT_DIR"), "/optional.rs"));
    }
    pub mod slicing_exceptions {
        include!(concat!(env!("OUT_DIR"), "/slicing_exceptions.rs"));
    }
    pub mod servant_locator {
        include!(concat!(env!("OUT_DIR"), "/servantLocator.rs"));
    }
    pub mod binding {
        include!(concat!(env!("OUT_DIR"), "/binding.rs"));
    }
    pub mod acm {
        include!(concat!(env!("OUT_DIR"), "/acm.rs"));
    }
    pub mod info {
        include!(concat!(env!("OUT_DIR"), "/info.rs"));
    }
    pub mod slicing_objects {
        include!(concat!(env!("OUT_DIR"), "/slicing_objects.rs"));
    }
    pub mod location {
        include!(concat!(env!("OUT_DIR"), "/location.rs"));
    }
    pub mod timeout {
        include!(concat!(env!("OUT_DIR"), "/timeout.rs"));
    }
    pub mod blobject {
        include!(concat!(env!("OUT_DIR"), "/blobject.rs"));
    }
    pub mod scope {
        include!(concat!(env!("OUT_DIR"), "/scope.rs"));
    }
    pub mod fault_tolerance {
        include!(concat!(env!("OUT_DIR"), "/faultTolerance.rs"));
    }
    pub mod adapter_deactivation {
        include!(concat!(env!("OUT_DIR"), "/adapterDeactivation.rs"));
    }
    pub mod asyncio {
        include!(concat!(env!("OUT_DIR"), "/asyncio.rs"));
    }
    pub mod checksum {
        include!(concat!(env!("OUT_DIR"), "/checksum.rs"));
    }
    pub mod thread {
        include!(concat!(env!("OUT_DIR"), "/thread.rs"));
    }
    pub mod dispatcher {
        include!(concat!(env!("OUT_DIR"), "/dispatcher.rs"));
    }
    pub mod custom {
        include!(concat!(env!("OUT_DIR"), "/custom.rs"));
    }
    pub mod admin {
        include!(concat!(env!("OUT_DIR"), "/admin.rs"));
    }
    pub mod packagemd {
        // The suite's exception `def` keeps its Slice name.
        #![allow(non_camel_case_types)]
        include!(concat!(env!("OUT_DIR"), "/packagemd.rs"));
    }
}

/// Generated code of the Ice 3.8 Test.ice of the suites whose Slice 3.8 changed
/// (`cpp/test/Ice/<suite>` of the 3.8.2 source tarball), for the 3.8 servers; only when
/// `build.rs` found the tarball.
#[cfg(floe_ice38)]
pub mod generated38 {
    #![allow(clippy::all, missing_docs, unreachable_pub)]
    pub mod exceptions {
        include!(concat!(env!("OUT_DIR"), "/ice38_exceptions.rs"));
    }
    pub mod proxy {
        include!(concat!(env!("OUT_DIR"), "/ice38_proxy.rs"));
    }
    pub mod location {
        include!(concat!(env!("OUT_DIR"), "/ice38_location.rs"));
    }
    pub mod optional {
        include!(concat!(env!("OUT_DIR"), "/ice38_optional.rs"));
    }
    pub mod objects {
        include!(concat!(env!("OUT_DIR"), "/ice38_objects.rs"));
    }
    pub mod slicing_objects {
        include!(concat!(env!("OUT_DIR"), "/ice38_slicing_objects.rs"));
    }
    pub mod ami {
        include!(concat!(env!("OUT_DIR"), "/ice38_ami.rs"));
    }
    pub mod scope {
        include!(concat!(env!("OUT_DIR"), "/ice38_scope.rs"));
    }
}

/// What a 3.8 server does when this crate was built without Ice 3.8's source tarball, so it
/// has no code generated from 3.8's Slice: says so and fails.
pub fn without_ice38(name: &str) -> ExitCode {
    eprintln!("{name}: built without the Ice 3.8 source tarball (see build.rs)");
    ExitCode::from(2)
}

/// What every suite's `shutdown` operation does: shuts the server's communicator down.
pub fn shutdown(current: &floe::Current) {
    if let Some(adapter) = current.adapter() {
        adapter.communicator().shutdown();
    }
}

/// The extracted `ice-3.7.8` source tree the servers were generated from.
pub const ICE_TEST_SOURCES: &str = env!("FLOE_ICE_TEST_SOURCES");

/// What a conformance server gets from Ice's test driver: a communicator configured from the
/// command line (`--Ice.Default.Host`, `--Test.BasePort`, `--Ice.Default.Protocol`, …).
pub struct TestServer {
    pub communicator: Communicator,
}

impl TestServer {
    /// The endpoint of test port `num`, as Ice's `TestHelper.getTestEndpoint(num)` makes it:
    /// `<protocol> -p <Test.BasePort + num>` (the host comes from `Ice.Default.Host`).
    pub fn endpoint(&self, num: i32) -> String {
        let props = self.communicator.properties();
        let protocol = props.get("Ice.Default.Protocol").unwrap_or_else(|| "tcp".into());
        let protocol = if protocol == "default" { "tcp".to_string() } else { protocol };
        let base = props.get_int("Test.BasePort", 12010).unwrap_or(12010);
        format!("{protocol} -p {}", base + i64::from(num))
    }

    /// Creates adapter `name` listening on test port `num` (unless `<name>.Endpoints` is set).
    pub fn adapter(&self, name: &str, num: i32) -> floe::Result<ObjectAdapter> {
        let endpoints =
            self.communicator.properties().get(&format!("{name}.Endpoints")).unwrap_or_else(|| self.endpoint(num));
        self.communicator.create_object_adapter_with_endpoints(name, &endpoints)
    }

    /// Runs a server: builds the communicator from the process arguments plus `defaults` (which
    /// the command line overrides), calls `setup` to create and activate adapters, then waits
    /// for `shutdown()`. `Ice.PrintAdapterReady` makes activation print `<Adapter> ready`.
    pub fn main<F, Fut>(name: &str, defaults: &[(&str, &str)], setup: F) -> ExitCode
    where
        F: FnOnce(TestServer) -> Fut,
        Fut: std::future::Future<Output = floe::Result<()>>,
    {
        let _ = tracing_subscriber::fmt()
            .with_writer(std::io::stderr)
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .try_init();
        let mut args: Vec<String> = std::env::args().collect();
        let program = args.remove(0);
        let mut all = vec![program];
        all.extend(defaults.iter().map(|(k, v)| format!("--{k}={v}")));
        all.extend(args);
        let communicator = match Communicator::from_args(all) {
            Ok((c, _)) => c,
            Err(e) => {
                eprintln!("{name}: {e}");
                return ExitCode::from(2);
            }
        };
        let server = TestServer { communicator: communicator.clone() };
        let waiter = communicator.clone();
        let result = communicator.block_on(async move {
            setup(server).await?;
            waiter.wait_for_shutdown().await;
            waiter.destroy().await;
            Ok::<(), floe::Error>(())
        });
        match result {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("{name}: {e}");
                ExitCode::FAILURE
            }
        }
    }
}
