//! Server for Ice 3.8's `Ice/exceptions` suite, generated from 3.8's Test.ice: the 3.7
//! server's operations (3.8 drops `throwMarshalException`), plus `throwE` and
//! `throwDispatchException(replyStatus)`, which fails the dispatch with that reply status as
//! 3.8's `DispatchException` does. Same properties and adapters as the 3.7 server.

#[cfg(floe_ice38)]
mod server {
    use floe::bytes::Bytes;
    use floe::{Current, Error, Identity};
    use floe_conformance::generated38::exceptions::ice::ByteSeq;
    use floe_conformance::generated38::exceptions::test::*;
    use floe_conformance::TestServer;

    /// The names Ice 3.8 gives the reply statuses in its `DispatchException` message.
    const STATUS_NAMES: [&str; 11] = [
        "Ok",
        "UserException",
        "ObjectNotExist",
        "FacetNotExist",
        "OperationNotExist",
        "UnknownLocalException",
        "UnknownUserException",
        "UnknownException",
        "InvalidData",
        "Unauthorized",
        "NotSupported",
    ];

    /// The failure Ice 3.8's `DispatchException { replyStatus }` sends for `status`: the request's
    /// not-exist failure for 2 to 4, an unknown failure for 5 to 7 (and 0 and 1, which 3.8's
    /// exception does not take), else the status with the message 3.8 makes for it
    /// (`The dispatch failed with reply status <name or number>.`).
    fn dispatch_failure(status: u8, current: &Current) -> Error {
        let name = STATUS_NAMES.get(usize::from(status)).map_or_else(|| status.to_string(), |n| (*n).to_string());
        let message = format!("The dispatch failed with reply status {name}.");
        let (identity, facet, operation) =
            (current.id.clone(), current.facet.to_string(), current.operation.to_string());
        match status {
            2 => Error::ObjectNotExist { identity, facet, operation },
            3 => Error::FacetNotExist { identity, facet, operation },
            4 => Error::OperationNotExist { identity, facet, operation },
            5 => Error::UnknownLocalException(message),
            6 => Error::UnknownUserException(message),
            0 | 1 | 7 => Error::UnknownException(message),
            status => Error::Dispatch { status, message },
        }
    }

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
        async fn throw_e(&self, _: &Current) -> floe::Result<()> {
            Err(Error::user(E { data: "E".into() }))
        }
        async fn throw_dispatch_exception(&self, reply_status: u8, current: &Current) -> floe::Result<()> {
            Err(dispatch_failure(reply_status, current))
        }
    }

    pub(crate) fn main() -> std::process::ExitCode {
        let defaults =
            [("Ice.MessageSizeMax", "10"), ("TestAdapter2.MessageSizeMax", "0"), ("TestAdapter3.MessageSizeMax", "1")];
        TestServer::main("exceptions", &defaults, |server| async move {
            let adapters = [
                server.adapter("TestAdapter", 0)?,
                server.adapter("TestAdapter2", 1)?,
                server.adapter("TestAdapter3", 2)?,
            ];
            for adapter in &adapters {
                adapter.add(ThrowerServer::new(ThrowerI), Identity::new("thrower"));
            }
            for adapter in &adapters {
                adapter.activate().await?;
            }
            Ok(())
        })
    }
}

#[cfg(floe_ice38)]
fn main() -> std::process::ExitCode {
    server::main()
}

#[cfg(not(floe_ice38))]
fn main() -> std::process::ExitCode {
    floe_conformance::without_ice38("exceptions38")
}
