//! Server for Ice 3.8's `Ice/scope` suite, generated from 3.8's Test.ice: the 3.7 server's four
//! servants (`i1` to `i4`) for 3.8's names (`MyInterface`, `MyStruct`, `MyClass`, …, and
//! `opMyStruct` and the others on `i1`), echoing structs, classes, sequences and dictionaries
//! declared in other scopes.

#[cfg(floe_ice38)]
mod server {

    use floe::{Class, Current, Identity};
    use floe_conformance::generated38::scope::{inner, test};
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
            echo2!(op_my_struct, $($m)::+::MyStruct);
            echo2!(op_my_struct_seq, $($m)::+::MyStructSeq);
            echo2!(op_my_struct_map, $($m)::+::MyStructMap);
            echo2!(op_my_class, Option<Class<$($m)::+::MyClass>>);
            echo2!(op_my_class_seq, $($m)::+::MyClassSeq);
            echo2!(op_my_class_map, $($m)::+::MyClassMap);
            async fn shutdown(&self, current: &Current) -> R<()> {
                floe_conformance::shutdown(current);
                Ok(())
            }
        };
    }

    struct I1;

    impl test::MyInterface for I1 {
        common!(test);
        echo1!(op_my_enum, test::MyEnum);
        echo1!(op_my_other_struct, test::MyOtherStruct);
        echo1!(op_my_other_class, Option<Class<test::MyOtherClass>>);
    }

    struct I2;

    impl test::inner::inner2::MyInterface for I2 {
        common!(test::inner::inner2);
    }

    struct I3;

    impl test::inner::MyInterface for I3 {
        echo2!(op_my_struct, test::inner::inner2::MyStruct);
        echo2!(op_my_struct_seq, test::inner::inner2::MyStructSeq);
        echo2!(op_my_struct_map, test::inner::inner2::MyStructMap);
        echo2!(op_my_class, Option<Class<test::inner::inner2::MyClass>>);
        echo2!(op_my_class_seq, test::inner::inner2::MyClassSeq);
        echo2!(op_my_class_map, test::inner::inner2::MyClassMap);
        async fn shutdown(&self, current: &Current) -> R<()> {
            floe_conformance::shutdown(current);
            Ok(())
        }
    }

    struct I4;

    impl inner::test::inner2::MyInterface for I4 {
        common!(test);
    }

    pub(crate) fn main() -> std::process::ExitCode {
        TestServer::main("scope", &[], |server| async move {
            let adapter = server.adapter("TestAdapter", 0)?;
            adapter.add(test::MyInterfaceServer::new(I1), Identity::new("i1"));
            adapter.add(test::inner::inner2::MyInterfaceServer::new(I2), Identity::new("i2"));
            adapter.add(test::inner::MyInterfaceServer::new(I3), Identity::new("i3"));
            adapter.add(inner::test::inner2::MyInterfaceServer::new(I4), Identity::new("i4"));
            adapter.activate().await
        })
    }
}

#[cfg(floe_ice38)]
fn main() -> std::process::ExitCode {
    server::main()
}

#[cfg(not(floe_ice38))]
fn main() -> std::process::ExitCode {
    floe_conformance::without_ice38("scope38")
}
