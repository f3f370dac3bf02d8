//! Server for Ice's `Ice/inheritance` suite: interfaces with multiple inheritance (IA, IB1,
//! IB2, IC) and Ice 3.7 classes with operations (CA, CB, CC, and CD, which also implements IB1
//! and IB2), each served under a UUID identity; every operation returns the proxy it gets.

use floe::{Current, Identity, Proxy};
use floe_conformance::generated::inheritance::test::ma::{self, CADisp, CCDisp, CDDisp, IA, IC};
use floe_conformance::generated::inheritance::test::mb::{self, CBDisp, IB1, IB2};
use floe_conformance::generated::inheritance::test::{Initial, InitialServer};
use floe_conformance::TestServer;

/// Implements every operation by returning its argument; each servant type below takes the
/// traits of the Slice type it serves.
macro_rules! echo_op {
    ($trait:ident, $op:ident, $prx:ty) => {
        fn $op(
            &self,
            p: Option<$prx>,
            _: &Current,
        ) -> impl std::future::Future<Output = floe::Result<Option<$prx>>> + Send {
            async move { Ok(p) }
        }
    };
}

macro_rules! servant {
    ($servant:ident: $($trait:ident => $op:ident($prx:ty)),+) => {
        struct $servant;
        $(impl $trait for $servant {
            echo_op!($trait, $op, $prx);
        })+
    };
}

servant!(CaServant: CADisp => caop(ma::CAPrx));
servant!(CbServant: CADisp => caop(ma::CAPrx), CBDisp => cbop(mb::CBPrx));
servant!(CcServant: CADisp => caop(ma::CAPrx), CBDisp => cbop(mb::CBPrx), CCDisp => ccop(ma::CCPrx));
servant!(CdServant: CADisp => caop(ma::CAPrx), CBDisp => cbop(mb::CBPrx), CCDisp => ccop(ma::CCPrx),
    CDDisp => cdop(ma::CDPrx), IA => iaop(ma::IAPrx), IB1 => ib1op(mb::IB1Prx), IB2 => ib2op(mb::IB2Prx));
servant!(IaServant: IA => iaop(ma::IAPrx));
servant!(Ib1Servant: IA => iaop(ma::IAPrx), IB1 => ib1op(mb::IB1Prx));
servant!(Ib2Servant: IA => iaop(ma::IAPrx), IB2 => ib2op(mb::IB2Prx));
servant!(IcServant: IA => iaop(ma::IAPrx), IB1 => ib1op(mb::IB1Prx), IB2 => ib2op(mb::IB2Prx), IC => icop(ma::ICPrx));

struct InitialI {
    ca: ma::CAPrx,
    cb: mb::CBPrx,
    cc: ma::CCPrx,
    cd: ma::CDPrx,
    ia: ma::IAPrx,
    ib1: mb::IB1Prx,
    ib2: mb::IB2Prx,
    ic: ma::ICPrx,
}

impl Initial for InitialI {
    async fn shutdown(&self, current: &Current) -> floe::Result<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn caop(&self, _: &Current) -> floe::Result<Option<ma::CAPrx>> {
        Ok(Some(self.ca.clone()))
    }
    async fn cbop(&self, _: &Current) -> floe::Result<Option<mb::CBPrx>> {
        Ok(Some(self.cb.clone()))
    }
    async fn ccop(&self, _: &Current) -> floe::Result<Option<ma::CCPrx>> {
        Ok(Some(self.cc.clone()))
    }
    async fn cdop(&self, _: &Current) -> floe::Result<Option<ma::CDPrx>> {
        Ok(Some(self.cd.clone()))
    }
    async fn iaop(&self, _: &Current) -> floe::Result<Option<ma::IAPrx>> {
        Ok(Some(self.ia.clone()))
    }
    async fn ib1op(&self, _: &Current) -> floe::Result<Option<mb::IB1Prx>> {
        Ok(Some(self.ib1.clone()))
    }
    async fn ib2op(&self, _: &Current) -> floe::Result<Option<mb::IB2Prx>> {
        Ok(Some(self.ib2.clone()))
    }
    async fn icop(&self, _: &Current) -> floe::Result<Option<ma::ICPrx>> {
        Ok(Some(self.ic.clone()))
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("inheritance", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        let initial = InitialI {
            ca: ma::CAPrx::from_object(adapter.add_with_uuid(ma::CADispServer::new(CaServant))),
            cb: mb::CBPrx::from_object(adapter.add_with_uuid(mb::CBDispServer::new(CbServant))),
            cc: ma::CCPrx::from_object(adapter.add_with_uuid(ma::CCDispServer::new(CcServant))),
            cd: ma::CDPrx::from_object(adapter.add_with_uuid(ma::CDDispServer::new(CdServant))),
            ia: ma::IAPrx::from_object(adapter.add_with_uuid(ma::IAServer::new(IaServant))),
            ib1: mb::IB1Prx::from_object(adapter.add_with_uuid(mb::IB1Server::new(Ib1Servant))),
            ib2: mb::IB2Prx::from_object(adapter.add_with_uuid(mb::IB2Server::new(Ib2Servant))),
            ic: ma::ICPrx::from_object(adapter.add_with_uuid(ma::ICServer::new(IcServant))),
        };
        adapter.add(InitialServer::new(initial), Identity::new("initial"));
        adapter.activate().await
    })
}
