//! Server for Ice's `Ice/packagemd` suite (its client maps the modules to Python packages with
//! `python:package` metadata): `initial` returns derived classes as their bases and raises
//! derived exceptions as their bases, from three modules, one named only by an escaped keyword
//! exception (`def`).

use floe::{Class, Current, Error, Identity};
use floe_conformance::generated::packagemd::{test, test1, test2, test3};
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

struct InitialI;

impl test::Initial for InitialI {
    async fn get_test1_c2_as_c1(&self, _: &Current) -> R<Option<Class<test1::C1>>> {
        Ok(Class::new(test1::C2::default()).to_any().downcast())
    }
    async fn get_test1_c2_as_c2(&self, _: &Current) -> R<Option<Class<test1::C2>>> {
        Ok(Some(Class::new(test1::C2::default())))
    }
    async fn throw_test1_e2_as_e1(&self, _: &Current) -> R<()> {
        Err(Error::user(test1::E2 { i: 0, l: 0 }))
    }
    async fn throw_test1_e2_as_e2(&self, _: &Current) -> R<()> {
        Err(Error::user(test1::E2 { i: 0, l: 0 }))
    }
    async fn throw_test1_def(&self, _: &Current) -> R<()> {
        Err(Error::user(test1::def { i: 0 }))
    }
    async fn get_test2_c2_as_c1(&self, _: &Current) -> R<Option<Class<test2::C1>>> {
        Ok(Class::new(test2::C2::default()).to_any().downcast())
    }
    async fn get_test2_c2_as_c2(&self, _: &Current) -> R<Option<Class<test2::C2>>> {
        Ok(Some(Class::new(test2::C2::default())))
    }
    async fn throw_test2_e2_as_e1(&self, _: &Current) -> R<()> {
        Err(Error::user(test2::E2 { i: 0, l: 0 }))
    }
    async fn throw_test2_e2_as_e2(&self, _: &Current) -> R<()> {
        Err(Error::user(test2::E2 { i: 0, l: 0 }))
    }
    async fn get_test3_c2_as_c1(&self, _: &Current) -> R<Option<Class<test3::C1>>> {
        Ok(Class::new(test3::C2::default()).to_any().downcast())
    }
    async fn get_test3_c2_as_c2(&self, _: &Current) -> R<Option<Class<test3::C2>>> {
        Ok(Some(Class::new(test3::C2::default())))
    }
    async fn throw_test3_e2_as_e1(&self, _: &Current) -> R<()> {
        Err(Error::user(test3::E2 { i: 0, l: 0 }))
    }
    async fn throw_test3_e2_as_e2(&self, _: &Current) -> R<()> {
        Err(Error::user(test3::E2 { i: 0, l: 0 }))
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("packagemd", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(test::InitialServer::new(InitialI), Identity::new("initial"));
        adapter.activate().await
    })
}
