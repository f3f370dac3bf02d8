//! Server for Ice's `Ice/checksum` suite: `getSliceChecksums` returns the Slice checksums
//! slice2rs computed for the server's side of the suite (Test.ice and STypes.ice, which
//! differs from the client's CTypes.ice on purpose: a type named `…1` is unchanged, one named
//! `…2` or more changed). The client compares them with the checksums Ice's own compiler
//! computed for its side.
//!
//! The checksum of `::Ice::SliceChecksumDict` (generated here from Ice's Slice, which the
//! suite's Test.ice includes) is left out, as Ice's C++ server leaves it out: Ice's C++
//! library carries no checksums of Ice's own types, so the C++ client would not know it.

use floe::{CompactString, Current, Identity};
use floe_conformance::generated::checksum::{slice_checksums, test::*};
use floe_conformance::TestServer;

struct ChecksumI;

impl Checksum for ChecksumI {
    async fn get_slice_checksums(
        &self,
        _: &Current,
    ) -> floe::Result<std::collections::HashMap<CompactString, CompactString>> {
        Ok(slice_checksums().into_iter().filter(|(name, _)| !name.starts_with("::Ice::")).collect())
    }
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("checksum", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(ChecksumServer::new(ChecksumI), Identity::new("test"));
        adapter.activate().await
    })
}
