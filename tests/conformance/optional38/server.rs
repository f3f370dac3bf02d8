//! Server for Ice 3.8's `Ice/optional` suite, generated from 3.8's Test.ice: as the 3.7 server,
//! `initial` echoes optional parameters of every type (present or not), classes with optional
//! members through `pingPong`, and throws exceptions with optional members, for 3.8's Slice
//! (no optional classes, `G1` and `G2` structs, an optional `MyInterface` proxy, the
//! marshaled-result operations with parameters).

#[cfg(floe_ice38)]
mod server {
    use std::collections::HashMap;

    use floe::{AnyClass, Class, Current, Error, Identity};
    use floe_conformance::generated38::optional::test::*;
    use floe_conformance::TestServer;

    type R<T> = floe::Result<T>;

    /// Implements the operations that return their optional argument twice.
    macro_rules! echo_twice {
        ($($op:ident: $t:ty),+ $(,)?) => {
            $(fn $op(&self, p1: Option<$t>, _: &Current) -> impl std::future::Future<Output = R<(Option<$t>, Option<$t>)>> + Send {
                async move { Ok((p1.clone(), p1)) }
            })+
        };
    }

    struct InitialI;

    impl Initial for InitialI {
        async fn shutdown(&self, current: &Current) -> R<()> {
            floe_conformance::shutdown(current);
            Ok(())
        }
        async fn ping_pong(&self, o: Option<AnyClass>, _: &Current) -> R<Option<AnyClass>> {
            Ok(o)
        }
        async fn op_optional_exception(&self, a: Option<i32>, b: Option<floe::CompactString>, _: &Current) -> R<()> {
            Err(Error::user(OptionalException { req: false, a, b }))
        }
        async fn op_derived_exception(&self, a: Option<i32>, b: Option<floe::CompactString>, _: &Current) -> R<()> {
            Err(Error::user(DerivedException { req: false, a, b: b.clone(), d1: "d1".into(), ss: b, d2: "d2".into() }))
        }
        async fn op_required_exception(&self, a: Option<i32>, b: Option<floe::CompactString>, _: &Current) -> R<()> {
            let mut e = RequiredException { a, b: b.clone(), ..Default::default() };
            if let Some(b) = b {
                e.ss = b;
            }
            Err(Error::user(e))
        }
        echo_twice!(
            op_byte: u8,
            op_bool: bool,
            op_short: i16,
            op_int: i32,
            op_long: i64,
            op_float: f32,
            op_double: f64,
            op_string: floe::CompactString,
            op_my_enum: MyEnum,
            op_small_struct: SmallStruct,
            op_fixed_struct: FixedStruct,
            op_var_struct: VarStruct,
            op_my_interface_proxy: MyInterfacePrx,
            op_byte_seq: ByteSeq,
            op_bool_seq: BoolSeq,
            op_short_seq: ShortSeq,
            op_int_seq: IntSeq,
            op_long_seq: LongSeq,
            op_float_seq: FloatSeq,
            op_double_seq: DoubleSeq,
            op_string_seq: StringSeq,
            op_small_struct_seq: SmallStructSeq,
            op_small_struct_list: SmallStructList,
            op_fixed_struct_seq: FixedStructSeq,
            op_fixed_struct_list: FixedStructList,
            op_var_struct_seq: VarStructSeq,
            op_serializable: Serializable,
            op_int_int_dict: IntIntDict,
            op_string_int_dict: StringIntDict,
            op_m_struct2: SmallStruct,
            op_m_seq2: StringSeq,
            op_m_dict2: StringIntDict,
        );
        async fn op_one_optional(
            &self,
            p1: Option<Class<OneOptional>>,
            _: &Current,
        ) -> R<(Option<Class<OneOptional>>, Option<Class<OneOptional>>)> {
            Ok((p1.clone(), p1))
        }
        async fn op_class_and_unknown_optional(&self, _p: Option<Class<A>>, _: &Current) -> R<()> {
            Ok(())
        }
        async fn op_g(&self, g: Option<Class<G>>, _: &Current) -> R<Option<Class<G>>> {
            Ok(g)
        }
        async fn op_void(&self, _: &Current) -> R<()> {
            Ok(())
        }
        async fn op_m_struct1(&self, _: &Current) -> R<Option<SmallStruct>> {
            Ok(Some(SmallStruct::default()))
        }
        async fn op_m_seq1(&self, _: &Current) -> R<Option<StringSeq>> {
            Ok(Some(Vec::new()))
        }
        async fn op_m_dict1(&self, _: &Current) -> R<Option<StringIntDict>> {
            Ok(Some(HashMap::new()))
        }
        async fn supports_java_serializable(&self, _: &Current) -> R<bool> {
            Ok(true)
        }
    }

    pub(crate) fn main() -> std::process::ExitCode {
        // The suite sends cyclic graphs (as Ice's own C++ server, this one accepts them).
        TestServer::main("optional", &[("Ice.AcceptClassCycles", "1")], |server| async move {
            let adapter = server.adapter("TestAdapter", 0)?;
            adapter.add(InitialServer::new(InitialI), Identity::new("initial"));
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
    floe_conformance::without_ice38("optional38")
}
