//! Server for Ice's `Ice/slicing/exceptions` suite: `Test` throws exceptions the client knows
//! only in part (sliced format, so the client slices them to a type it knows; compact for one
//! operation, so it cannot), exceptions with class members (indirection tables), and relays
//! the exceptions the client's own Relay throws back to it over the client's connection.
//! Exceptions whose most derived type only the client knows keep their unknown slices
//! (`["preserve-slice"]`) on the way through this server and reach the client whole.

use floe::{Class, Current, Error, Identity, Proxy};
use floe_conformance::generated::slicing_exceptions::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

fn known_preserved_derived() -> Error {
    Error::user(KnownPreservedDerived {
        b: "base".into(),
        kp: "preserved".into(),
        kpd: "derived".into(),
        ..Default::default()
    })
}

fn s_preserved2() -> Error {
    let p1 = Class::new(SPreservedClass { base: BaseClass { bc: "bc".into() }, spc: "spc".into() });
    let p1 = p1.downcast::<BaseClass>();
    Error::user(SPreserved2 {
        b: "base".into(),
        kp: "preserved".into(),
        kpd: "derived".into(),
        p1: p1.clone(),
        p2: p1,
        ..Default::default()
    })
}

/// The client's relay, called back over the connection the request came on.
fn relay(r: Option<RelayPrx>, current: &Current) -> R<RelayPrx> {
    let (Some(r), Some(connection)) = (r, current.connection().cloned()) else {
        return Err(Error::Marshal(floe::encoding::DecodeError::Malformed("a relay proxy is required")));
    };
    Ok(r.ice_fixed(connection))
}

struct TestI;

impl TestIntf for TestI {
    async fn base_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(Base { b: "Base.b".into() }))
    }
    async fn unknown_derived_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(UnknownDerived { b: "UnknownDerived.b".into(), ud: "UnknownDerived.ud".into() }))
    }
    async fn known_derived_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(KnownDerived { b: "KnownDerived.b".into(), kd: "KnownDerived.kd".into() }))
    }
    async fn known_derived_as_known_derived(&self, current: &Current) -> R<()> {
        self.known_derived_as_base(current).await
    }
    async fn unknown_intermediate_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(UnknownIntermediate { b: "UnknownIntermediate.b".into(), ui: "UnknownIntermediate.ui".into() }))
    }
    async fn known_intermediate_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(KnownIntermediate { b: "KnownIntermediate.b".into(), ki: "KnownIntermediate.ki".into() }))
    }
    async fn known_most_derived_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(KnownMostDerived {
            b: "KnownMostDerived.b".into(),
            ki: "KnownMostDerived.ki".into(),
            kmd: "KnownMostDerived.kmd".into(),
        }))
    }
    async fn known_intermediate_as_known_intermediate(&self, current: &Current) -> R<()> {
        self.known_intermediate_as_base(current).await
    }
    async fn known_most_derived_as_known_intermediate(&self, current: &Current) -> R<()> {
        self.known_most_derived_as_base(current).await
    }
    async fn known_most_derived_as_known_most_derived(&self, current: &Current) -> R<()> {
        self.known_most_derived_as_base(current).await
    }
    async fn unknown_most_derived1_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(UnknownMostDerived1 {
            b: "UnknownMostDerived1.b".into(),
            ki: "UnknownMostDerived1.ki".into(),
            umd1: "UnknownMostDerived1.umd1".into(),
        }))
    }
    async fn unknown_most_derived1_as_known_intermediate(&self, current: &Current) -> R<()> {
        self.unknown_most_derived1_as_base(current).await
    }
    async fn unknown_most_derived2_as_base(&self, _: &Current) -> R<()> {
        Err(Error::user(UnknownMostDerived2 {
            b: "UnknownMostDerived2.b".into(),
            ui: "UnknownMostDerived2.ui".into(),
            umd2: "UnknownMostDerived2.umd2".into(),
        }))
    }
    async fn unknown_most_derived2_as_base_compact(&self, current: &Current) -> R<()> {
        self.unknown_most_derived2_as_base(current).await
    }
    async fn known_preserved_as_base(&self, _: &Current) -> R<()> {
        Err(known_preserved_derived())
    }
    async fn known_preserved_as_known_preserved(&self, _: &Current) -> R<()> {
        Err(known_preserved_derived())
    }
    async fn relay_known_preserved_as_base(&self, r: Option<RelayPrx>, current: &Current) -> R<()> {
        Ok(relay(r, current)?.known_preserved_as_base().await?)
    }
    async fn relay_known_preserved_as_known_preserved(&self, r: Option<RelayPrx>, current: &Current) -> R<()> {
        Ok(relay(r, current)?.known_preserved_as_known_preserved().await?)
    }
    async fn unknown_preserved_as_base(&self, _: &Current) -> R<()> {
        Err(s_preserved2())
    }
    async fn unknown_preserved_as_known_preserved(&self, _: &Current) -> R<()> {
        Err(s_preserved2())
    }
    async fn relay_unknown_preserved_as_base(&self, r: Option<RelayPrx>, current: &Current) -> R<()> {
        // The client's exception is of a type this server does not know: it is sliced to
        // KnownPreservedDerived, whose preserved slices carry the rest back to the client.
        Ok(relay(r, current)?.unknown_preserved_as_base().await?)
    }
    async fn relay_unknown_preserved_as_known_preserved(&self, r: Option<RelayPrx>, current: &Current) -> R<()> {
        Ok(relay(r, current)?.unknown_preserved_as_known_preserved().await?)
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("slicing/exceptions", &[("Ice.Warn.Dispatch", "0")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(TestIntfServer::new(TestI), Identity::new("Test"));
        adapter.activate().await
    })
}
