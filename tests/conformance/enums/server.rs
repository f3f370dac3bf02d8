//! Server for Ice's `Ice/enums` suite: every operation echoes its argument as both the return
//! value and the out parameter.

use floe::{Current, Identity};
use floe_conformance::generated::enums::test::*;
use floe_conformance::TestServer;

struct TestIntfI;

impl TestIntf for TestIntfI {
    async fn op_byte(&self, b1: ByteEnum, _: &Current) -> floe::Result<(ByteEnum, ByteEnum)> {
        Ok((b1, b1))
    }
    async fn op_short(&self, s1: ShortEnum, _: &Current) -> floe::Result<(ShortEnum, ShortEnum)> {
        Ok((s1, s1))
    }
    async fn op_int(&self, i1: IntEnum, _: &Current) -> floe::Result<(IntEnum, IntEnum)> {
        Ok((i1, i1))
    }
    async fn op_simple(&self, s1: SimpleEnum, _: &Current) -> floe::Result<(SimpleEnum, SimpleEnum)> {
        Ok((s1, s1))
    }
    async fn op_byte_seq(&self, b1: ByteEnumSeq, _: &Current) -> floe::Result<(ByteEnumSeq, ByteEnumSeq)> {
        Ok((b1.clone(), b1))
    }
    async fn op_short_seq(&self, s1: ShortEnumSeq, _: &Current) -> floe::Result<(ShortEnumSeq, ShortEnumSeq)> {
        Ok((s1.clone(), s1))
    }
    async fn op_int_seq(&self, i1: IntEnumSeq, _: &Current) -> floe::Result<(IntEnumSeq, IntEnumSeq)> {
        Ok((i1.clone(), i1))
    }
    async fn op_simple_seq(&self, s1: SimpleEnumSeq, _: &Current) -> floe::Result<(SimpleEnumSeq, SimpleEnumSeq)> {
        Ok((s1.clone(), s1))
    }
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("enums", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(TestIntfServer::new(TestIntfI), Identity::new("test"));
        adapter.activate().await
    })
}
