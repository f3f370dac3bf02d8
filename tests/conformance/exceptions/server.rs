//! Server for Ice's `Ice/exceptions` suite: `thrower` raises the user exceptions each operation
//! names (declared and undeclared), local errors, a non-Ice failure (a panic), a reply larger
//! than the client's `Ice.MessageSizeMax`, and a marshal failure. `Ice.MessageSizeMax` is 10 KB
//! so a 20 KB request closes the connection, as the suite expects; `TestAdapter2` (no limit)
//! and `TestAdapter3` (1 KB) are there for the C++ client.

use floe::bytes::Bytes;
use floe::{Current, Error, Identity};
use floe_conformance::generated::exceptions::ice::ByteSeq;
use floe_conformance::generated::exceptions::test::*;
use floe_conformance::TestServer;

struct ThrowerI;

fn a(a_mem: i32) -> Error {
    Error::user(A { a_mem })
}
fn b(a_mem: i32, b_mem: i32) -> Error {
    Error::user(B { a_mem, b_mem })
}
fn c(a_mem: i32, b_mem: i32, c_mem: i32) -> Error {
    Error::user(C { a_mem, b_mem, c_mem })
}

impl Thrower for ThrowerI {
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn supports_undeclared_exceptions(&self, _: &Current) -> floe::Result<bool> {
        Ok(true)
    }
    async fn supports_assert_exception(&self, _: &Current) -> floe::Result<bool> {
        Ok(false)
    }
    async fn throw_aas_a(&self, x: i32, _: &Current) -> floe::Result<()> {
        Err(a(x))
    }
    async fn throw_aor_das_aor_d(&self, x: i32, _: &Current) -> floe::Result<()> {
        if x > 0 {
            Err(a(x))
        } else {
            Err(Error::user(D { d_mem: x }))
        }
    }
    async fn throw_bas_a(&self, x: i32, y: i32, _: &Current) -> floe::Result<()> {
        Err(b(x, y))
    }
    async fn throw_cas_a(&self, x: i32, y: i32, z: i32, _: &Current) -> floe::Result<()> {
        Err(c(x, y, z))
    }
    async fn throw_bas_b(&self, x: i32, y: i32, _: &Current) -> floe::Result<()> {
        Err(b(x, y))
    }
    async fn throw_cas_b(&self, x: i32, y: i32, z: i32, _: &Current) -> floe::Result<()> {
        Err(c(x, y, z))
    }
    async fn throw_cas_c(&self, x: i32, y: i32, z: i32, _: &Current) -> floe::Result<()> {
        Err(c(x, y, z))
    }
    async fn throw_mod_a(&self, x: i32, a2: i32, _: &Current) -> floe::Result<()> {
        Err(Error::user(r#mod::A { a_mem: x, a2_mem: a2 }))
    }
    async fn throw_undeclared_a(&self, x: i32, _: &Current) -> floe::Result<()> {
        Err(a(x))
    }
    async fn throw_undeclared_b(&self, x: i32, y: i32, _: &Current) -> floe::Result<()> {
        Err(b(x, y))
    }
    async fn throw_undeclared_c(&self, x: i32, y: i32, z: i32, _: &Current) -> floe::Result<()> {
        Err(c(x, y, z))
    }
    async fn throw_local_exception(&self, _: &Current) -> floe::Result<()> {
        Err(Error::InvocationTimeout(std::time::Duration::ZERO))
    }
    async fn throw_non_ice_exception(&self, _: &Current) -> floe::Result<()> {
        // Rust's counterpart of a non-Ice exception: the servant panics, and the client gets
        // UnknownException.
        panic!("12345")
    }
    async fn throw_assert_exception(&self, _: &Current) -> floe::Result<()> {
        Err(Error::OperationNotExist {
            identity: Identity::new("thrower"),
            facet: String::new(),
            operation: "throwAssertException".into(),
        })
    }
    async fn throw_memory_limit_exception(&self, _seq: ByteSeq, _: &Current) -> floe::Result<ByteSeq> {
        Ok(Bytes::from(vec![0u8; 20 * 1024]))
    }
    async fn throw_local_exception_idempotent(&self, _: &Current) -> floe::Result<()> {
        Err(Error::InvocationTimeout(std::time::Duration::ZERO))
    }
    async fn throw_after_response(&self, _: &Current) -> floe::Result<()> {
        // Only meaningful with asynchronous dispatch that keeps running after its reply.
        Ok(())
    }
    async fn throw_after_exception(&self, _: &Current) -> floe::Result<()> {
        Err(a(0))
    }
    async fn throw_marshal_exception(&self, _: &Current) -> floe::Result<(i32, i32)> {
        // The servant cannot produce its results: the client sees the marshal failure as
        // UnknownLocalException naming ::Ice::MarshalException.
        Err(Error::Marshal(floe::encoding::DecodeError::Malformed("results cannot be marshaled")))
    }
}

fn main() -> std::process::ExitCode {
    let defaults =
        [("Ice.MessageSizeMax", "10"), ("TestAdapter2.MessageSizeMax", "0"), ("TestAdapter3.MessageSizeMax", "1")];
    TestServer::main("exceptions", &defaults, |server| async move {
        let adapters =
            [server.adapter("TestAdapter", 0)?, server.adapter("TestAdapter2", 1)?, server.adapter("TestAdapter3", 2)?];
        for adapter in &adapters {
            adapter.add(ThrowerServer::new(ThrowerI), Identity::new("thrower"));
        }
        for adapter in &adapters {
            adapter.activate().await?;
        }
        Ok(())
    })
}
