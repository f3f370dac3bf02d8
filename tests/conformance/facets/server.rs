//! Server for Ice's `Ice/facets` suite: identity `d` with a `D` as its default facet and the
//! facets `facetABCD` (D), `facetEF` (F) and `facetGH` (H, whose `shutdown` ends the server).

use floe::{Current, Identity};
use floe_conformance::generated::facets::test::*;
use floe_conformance::TestServer;

struct DI;

impl A for DI {
    async fn call_a(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("A".into())
    }
}
impl B for DI {
    async fn call_b(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("B".into())
    }
}
impl C for DI {
    async fn call_c(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("C".into())
    }
}
impl D for DI {
    async fn call_d(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("D".into())
    }
}

struct FI;

impl E for FI {
    async fn call_e(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("E".into())
    }
}
impl F for FI {
    async fn call_f(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("F".into())
    }
}

struct HI;

impl G for HI {
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn call_g(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("G".into())
    }
}
impl H for HI {
    async fn call_h(&self, _: &Current) -> floe::Result<floe::CompactString> {
        Ok("H".into())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("facets", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let d = Identity::new("d");
        adapter.add(DServer::new(DI), d.clone());
        adapter.add_facet(DServer::new(DI), d.clone(), "facetABCD");
        adapter.add_facet(FServer::new(FI), d.clone(), "facetEF");
        adapter.add_facet(HServer::new(HI), d, "facetGH");
        adapter.activate().await
    })
}
