//! Server for Ice's `Ice/optional` suite: `initial` echoes optional parameters of every type
//! (present or not), classes with optional members of every type through `pingPong`, and throws
//! exceptions with optional members, as the suite's own servant does.

use std::collections::HashMap;

use floe::{AnyClass, Class, Current, Error, Identity, ObjectPrx};
use floe_conformance::generated::optional::test::*;
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
    async fn op_optional_exception(
        &self,
        a: Option<i32>,
        b: Option<floe::CompactString>,
        o: Option<Class<OneOptional>>,
        _: &Current,
    ) -> R<()> {
        Err(Error::user(OptionalException { req: false, a, b, o }))
    }
    async fn op_derived_exception(
        &self,
        a: Option<i32>,
        b: Option<floe::CompactString>,
        o: Option<Class<OneOptional>>,
        _: &Current,
    ) -> R<()> {
        Err(Error::user(DerivedException {
            req: false,
            a,
            b: b.clone(),
            o: o.clone(),
            d1: "d1".into(),
            ss: b,
            o2: o,
            d2: "d2".into(),
        }))
    }
    async fn op_required_exception(
        &self,
        a: Option<i32>,
        b: Option<floe::CompactString>,
        o: Option<Class<OneOptional>>,
        _: &Current,
    ) -> R<()> {
        let mut e = RequiredException { a, b: b.clone(), o: o.clone(), ..Default::default() };
        if let Some(b) = b {
            e.ss = b;
        }
        if o.is_some() {
            e.o2 = o;
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
        op_one_optional: Class<OneOptional>,
        op_one_optional_proxy: ObjectPrx,
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
        op_int_one_optional_dict: IntOneOptionalDict,
        op_m_struct2: SmallStruct,
        op_m_seq2: StringSeq,
        op_m_dict2: StringIntDict,
    );
    async fn op_class_and_unknown_optional(&self, _p: Option<Class<A>>, _: &Current) -> R<()> {
        Ok(())
    }
    async fn op_required_after_optional(
        &self,
        p1: i32,
        p2: Option<i32>,
        p3: i32,
        _: &Current,
    ) -> R<(i32, Option<i32>, i32)> {
        Ok((p1, p2, p3))
    }
    async fn op_optional_after_required(
        &self,
        p1: i32,
        p2: Option<i32>,
        p3: Option<i32>,
        _: &Current,
    ) -> R<(i32, Option<i32>, Option<i32>)> {
        Ok((p1, p2, p3))
    }
    async fn send_optional_class(&self, _req: bool, _o: Option<Class<OneOptional>>, _: &Current) -> R<()> {
        Ok(())
    }
    async fn return_optional_class(&self, _req: bool, _: &Current) -> R<Option<Class<OneOptional>>> {
        Ok(Some(Class::new(OneOptional { a: Some(53) })))
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
    async fn op_mg1(&self, _: &Current) -> R<Option<Class<G>>> {
        Ok(Some(Class::new(G::default())))
    }
    async fn op_mg2(&self, p1: Option<Class<G>>, _: &Current) -> R<(Option<Class<G>>, Option<Class<G>>)> {
        Ok((p1.clone(), p1))
    }
    async fn supports_required_params(&self, _: &Current) -> R<bool> {
        Ok(false)
    }
    async fn supports_java_serializable(&self, _: &Current) -> R<bool> {
        Ok(true)
    }
    async fn supports_csharp_serializable(&self, _: &Current) -> R<bool> {
        Ok(true)
    }
    async fn supports_cpp_string_view(&self, _: &Current) -> R<bool> {
        Ok(false)
    }
    async fn supports_null_optional(&self, _: &Current) -> R<bool> {
        // In the Rust mapping an optional class is `Option<Class<T>>`: "not set" and "set to
        // null" are the same `None` (the suite's flag for mappings like this one).
        Ok(false)
    }
}

fn main() -> std::process::ExitCode {
    // The suite sends cyclic graphs (as Ice's own C++ server, this one accepts them).
    TestServer::main("optional", &[("Ice.AcceptClassCycles", "1")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(InitialServer::new(InitialI), Identity::new("initial"));
        adapter.activate().await
    })
}
