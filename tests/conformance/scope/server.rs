//! Server for Ice's `Ice/scope` suite: four servants of interfaces named `I` in different
//! modules (`::Test`, `::Test::Inner::Inner2`, `::Test::Inner`, `::Inner::Test::Inner2`), whose
//! operations echo structs, classes, sequences and dictionaries declared in other scopes.

use floe::{Class, Current, Identity};
use floe_conformance::generated::scope::{inner, test};
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

/// An operation that returns its argument as both its result and its out parameter.
macro_rules! echo2 {
    ($name:ident, $t:ty) => {
        async fn $name(&self, v: $t, _: &Current) -> R<($t, $t)> {
            Ok((v.clone(), v))
        }
    };
}

/// An operation that returns its argument.
macro_rules! echo1 {
    ($name:ident, $t:ty) => {
        async fn $name(&self, v: $t, _: &Current) -> R<$t> {
            Ok(v)
        }
    };
}

/// The six operations every `I` has, over the types of module `$m`.
macro_rules! common {
    ($($m:ident)::+) => {
        echo2!(op_s, $($m)::+::S);
        echo2!(op_s_seq, $($m)::+::SSeq);
        echo2!(op_s_map, $($m)::+::SMap);
        echo2!(op_c, Option<Class<$($m)::+::C>>);
        echo2!(op_c_seq, $($m)::+::CSeq);
        echo2!(op_c_map, $($m)::+::CMap);
        async fn shutdown(&self, current: &Current) -> R<()> {
            floe_conformance::shutdown(current);
            Ok(())
        }
    };
}

struct I1;

impl test::I for I1 {
    common!(test);
    echo1!(op_e1, test::E1);
    echo1!(op_s1, test::S1);
    echo1!(op_c1, Option<Class<test::C1>>);
}

struct I2;

impl test::inner::inner2::I for I2 {
    common!(test::inner::inner2);
}

struct I3;

impl test::inner::I for I3 {
    echo2!(op_s, test::inner::inner2::S);
    echo2!(op_s_seq, test::inner::inner2::SSeq);
    echo2!(op_s_map, test::inner::inner2::SMap);
    echo2!(op_c, Option<Class<test::inner::inner2::C>>);
    echo2!(op_c_seq, test::inner::inner2::CSeq);
    echo2!(op_c_map, test::inner::inner2::CMap);
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

struct I4;

impl inner::test::inner2::I for I4 {
    common!(test);
}

fn main() -> std::process::ExitCode {
    TestServer::main("scope", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(test::IServer::new(I1), Identity::new("i1"));
        adapter.add(test::inner::inner2::IServer::new(I2), Identity::new("i2"));
        adapter.add(test::inner::IServer::new(I3), Identity::new("i3"));
        adapter.add(inner::test::inner2::IServer::new(I4), Identity::new("i4"));
        adapter.activate().await
    })
}
