//! Server for Ice's `Ice/custom` suite (its client checks Python's custom sequence mappings:
//! lists, tuples, `array.array`, memoryviews): every operation echoes what it gets.

use floe::{Class, Current, Identity};
use floe_conformance::generated::custom::test::*;
use floe_conformance::TestServer;

type R<T> = floe::Result<T>;

/// An operation that returns its argument as both its result and its out parameter.
macro_rules! echo2 {
    ($($name:ident: $t:ty),* $(,)?) => {
        $(async fn $name(&self, v: $t, _: &Current) -> R<($t, $t)> {
            Ok((v.clone(), v))
        })*
    };
}

/// An operation whose bogus Python mapping the client checks: it returns a fixed sequence.
macro_rules! bools {
    ($($name:ident),* $(,)?) => {
        $(async fn $name(&self, _: &Current) -> R<BoolSeq1> {
            Ok(vec![true, false, true, false])
        })*
    };
}

struct CustomI;

impl Custom for CustomI {
    echo2!(
        op_byte_string1: ByteString,
        op_byte_string2: ByteString,
        op_byte_list1: ByteList,
        op_byte_list2: ByteList,
        op_string_list1: StringList,
        op_string_list2: StringList,
        op_string_tuple1: StringTuple,
        op_string_tuple2: StringTuple,
        op_bool_seq: BoolSeq1,
        op_byte_seq: ByteSeq1,
        op_short_seq: ShortSeq1,
        op_int_seq: IntSeq1,
        op_long_seq: LongSeq1,
        op_float_seq: FloatSeq1,
        op_double_seq: DoubleSeq1,
    );
    bools!(
        op_bogus_array_not_exists_factory,
        op_bogus_array_throw_factory,
        op_bogus_array_type,
        op_bogus_array_none_factory,
        op_bogus_array_signature_factory,
        op_bogus_array_no_callable_factory,
    );
    async fn send_s(&self, _: S, _: &Current) -> R<()> {
        Ok(())
    }
    async fn send_c(&self, _: Option<Class<C>>, _: &Current) -> R<()> {
        Ok(())
    }
    async fn op_d(&self, d: Option<Class<D>>, _: &Current) -> R<Option<Class<D>>> {
        Ok(d)
    }
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("custom", &[], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(CustomServer::new(CustomI), Identity::new("test"));
        adapter.activate().await
    })
}
