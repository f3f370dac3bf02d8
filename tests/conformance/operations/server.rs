//! Server for Ice's `Ice/operations` suite: `test` (Test::MyDerivedClass) answers every
//! operation as the suite's own servants do (echoes, reversals, concatenations and merges of
//! every primitive, sequence, nested sequence and dictionary type, proxies, contexts, string
//! literals, a class by value), checks the operation mode of opVoid/opIdempotent/opNonmutating,
//! and counts oneway calls; `b` serves M::B, a class with operations implementing an interface.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::atomic::{AtomicI32, Ordering};

use floe::bytes::Bytes;
use floe::protocol::OperationMode;
use floe::{Class, Context, Current, Error, Identity, Proxy};
use floe_conformance::generated::operations::m;
use floe_conformance::generated::operations::test::*;
use floe_conformance::TestServer;

fn rev<T: Clone>(v: &[T]) -> Vec<T> {
    v.iter().rev().cloned().collect()
}

fn cat<T: Clone>(a: &[T], b: &[T]) -> Vec<T> {
    a.iter().chain(b).cloned().collect()
}

/// `a` updated with the entries of `b` (Python's `dict.update`).
fn merged<K: Eq + Hash + Clone, V: Clone>(a: &HashMap<K, V>, b: &HashMap<K, V>) -> HashMap<K, V> {
    let mut r = a.clone();
    r.extend(b.iter().map(|(k, v)| (k.clone(), v.clone())));
    r
}

fn expect_mode(current: &Current, mode: OperationMode) -> floe::Result<()> {
    if current.mode == mode {
        Ok(())
    } else {
        Err(Error::UnknownException(format!("{} called with mode {:?}, not {mode:?}", current.operation, current.mode)))
    }
}

#[derive(Default)]
struct MyDerivedClassI {
    oneway_calls: AtomicI32,
}

type R<T> = floe::Result<T>;

impl MyClass for MyDerivedClassI {
    async fn shutdown(&self, current: &Current) -> R<()> {
        floe_conformance::shutdown(current);
        Ok(())
    }
    async fn supports_compress(&self, _: &Current) -> R<bool> {
        Ok(true)
    }
    async fn op_void(&self, current: &Current) -> R<()> {
        expect_mode(current, OperationMode::Normal)
    }
    async fn op_byte(&self, p1: u8, p2: u8, _: &Current) -> R<(u8, u8)> {
        Ok((p1, p1 ^ p2))
    }
    async fn op_bool(&self, p1: bool, p2: bool, _: &Current) -> R<(bool, bool)> {
        Ok((p2, p1))
    }
    async fn op_short_int_long(&self, p1: i16, p2: i32, p3: i64, _: &Current) -> R<(i64, i16, i32, i64)> {
        Ok((p3, p1, p2, p3))
    }
    async fn op_float_double(&self, p1: f32, p2: f64, _: &Current) -> R<(f64, f32, f64)> {
        Ok((p2, p1, p2))
    }
    async fn op_string(
        &self,
        p1: floe::CompactString,
        p2: floe::CompactString,
        _: &Current,
    ) -> R<(floe::CompactString, floe::CompactString)> {
        Ok((floe::format_compact!("{p1} {p2}"), floe::format_compact!("{p2} {p1}")))
    }
    async fn op_my_enum(&self, p1: MyEnum, _: &Current) -> R<(MyEnum, MyEnum)> {
        Ok((MyEnum::Enum3, p1))
    }
    async fn op_my_class(
        &self,
        p1: Option<MyClassPrx>,
        current: &Current,
    ) -> R<(Option<MyClassPrx>, Option<MyClassPrx>, Option<MyClassPrx>)> {
        let adapter = current.adapter().ok_or_else(|| Error::Adapter("no adapter".into()))?;
        let me = MyClassPrx::from_object(adapter.create_proxy(current.id.clone()));
        let nobody = MyClassPrx::from_object(adapter.create_proxy(Identity::new("noSuchIdentity")));
        Ok((Some(me), p1, Some(nobody)))
    }
    async fn op_struct(&self, mut p1: Structure, p2: Structure, _: &Current) -> R<(Structure, Structure)> {
        p1.s.s = "a new string".into();
        Ok((p2, p1))
    }
    async fn op_byte_s(&self, p1: ByteS, p2: ByteS, _: &Current) -> R<(ByteS, ByteS)> {
        Ok((Bytes::from(cat(&p1, &p2)), Bytes::from(rev(&p1))))
    }
    async fn op_bool_s(&self, p1: BoolS, p2: BoolS, _: &Current) -> R<(BoolS, BoolS)> {
        Ok((rev(&p1), cat(&p1, &p2)))
    }
    async fn op_short_int_long_s(
        &self,
        p1: ShortS,
        p2: IntS,
        p3: LongS,
        _: &Current,
    ) -> R<(LongS, ShortS, IntS, LongS)> {
        Ok((p3.clone(), p1, rev(&p2), cat(&p3, &p3)))
    }
    async fn op_float_double_s(&self, p1: FloatS, p2: DoubleS, _: &Current) -> R<(DoubleS, FloatS, DoubleS)> {
        let r = cat(&p2, &p1.iter().map(|f| f64::from(*f)).collect::<Vec<_>>());
        Ok((r, p1, rev(&p2)))
    }
    async fn op_string_s(&self, p1: StringS, p2: StringS, _: &Current) -> R<(StringS, StringS)> {
        Ok((rev(&p1), cat(&p1, &p2)))
    }
    async fn op_byte_ss(&self, p1: ByteSS, p2: ByteSS, _: &Current) -> R<(ByteSS, ByteSS)> {
        Ok((cat(&p1, &p2), rev(&p1)))
    }
    async fn op_bool_ss(&self, p1: BoolSS, p2: BoolSS, _: &Current) -> R<(BoolSS, BoolSS)> {
        Ok((rev(&p1), cat(&p1, &p2)))
    }
    async fn op_short_int_long_ss(
        &self,
        p1: ShortSS,
        p2: IntSS,
        p3: LongSS,
        _: &Current,
    ) -> R<(LongSS, ShortSS, IntSS, LongSS)> {
        Ok((p3.clone(), p1, rev(&p2), cat(&p3, &p3)))
    }
    async fn op_float_double_ss(&self, p1: FloatSS, p2: DoubleSS, _: &Current) -> R<(DoubleSS, FloatSS, DoubleSS)> {
        Ok((cat(&p2, &p2), p1, rev(&p2)))
    }
    async fn op_string_ss(&self, p1: StringSS, p2: StringSS, _: &Current) -> R<(StringSS, StringSS)> {
        Ok((rev(&p2), cat(&p1, &p2)))
    }
    async fn op_string_sss(&self, p1: StringSSS, p2: StringSSS, _: &Current) -> R<(StringSSS, StringSSS)> {
        Ok((rev(&p2), cat(&p1, &p2)))
    }
    async fn op_byte_bool_d(&self, p1: ByteBoolD, p2: ByteBoolD, _: &Current) -> R<(ByteBoolD, ByteBoolD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_short_int_d(&self, p1: ShortIntD, p2: ShortIntD, _: &Current) -> R<(ShortIntD, ShortIntD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_long_float_d(&self, p1: LongFloatD, p2: LongFloatD, _: &Current) -> R<(LongFloatD, LongFloatD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_string_string_d(
        &self,
        p1: StringStringD,
        p2: StringStringD,
        _: &Current,
    ) -> R<(StringStringD, StringStringD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_string_my_enum_d(
        &self,
        p1: StringMyEnumD,
        p2: StringMyEnumD,
        _: &Current,
    ) -> R<(StringMyEnumD, StringMyEnumD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_my_enum_string_d(
        &self,
        p1: MyEnumStringD,
        p2: MyEnumStringD,
        _: &Current,
    ) -> R<(MyEnumStringD, MyEnumStringD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_my_struct_my_enum_d(
        &self,
        p1: MyStructMyEnumD,
        p2: MyStructMyEnumD,
        _: &Current,
    ) -> R<(MyStructMyEnumD, MyStructMyEnumD)> {
        Ok((merged(&p1, &p2), p1))
    }
    async fn op_byte_bool_ds(&self, p1: ByteBoolDS, p2: ByteBoolDS, _: &Current) -> R<(ByteBoolDS, ByteBoolDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_short_int_ds(&self, p1: ShortIntDS, p2: ShortIntDS, _: &Current) -> R<(ShortIntDS, ShortIntDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_long_float_ds(&self, p1: LongFloatDS, p2: LongFloatDS, _: &Current) -> R<(LongFloatDS, LongFloatDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_string_string_ds(
        &self,
        p1: StringStringDS,
        p2: StringStringDS,
        _: &Current,
    ) -> R<(StringStringDS, StringStringDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_string_my_enum_ds(
        &self,
        p1: StringMyEnumDS,
        p2: StringMyEnumDS,
        _: &Current,
    ) -> R<(StringMyEnumDS, StringMyEnumDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_my_enum_string_ds(
        &self,
        p1: MyEnumStringDS,
        p2: MyEnumStringDS,
        _: &Current,
    ) -> R<(MyEnumStringDS, MyEnumStringDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_my_struct_my_enum_ds(
        &self,
        p1: MyStructMyEnumDS,
        p2: MyStructMyEnumDS,
        _: &Current,
    ) -> R<(MyStructMyEnumDS, MyStructMyEnumDS)> {
        Ok((rev(&p1), cat(&p2, &p1)))
    }
    async fn op_byte_byte_sd(&self, p1: ByteByteSD, p2: ByteByteSD, _: &Current) -> R<(ByteByteSD, ByteByteSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_bool_bool_sd(&self, p1: BoolBoolSD, p2: BoolBoolSD, _: &Current) -> R<(BoolBoolSD, BoolBoolSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_short_short_sd(
        &self,
        p1: ShortShortSD,
        p2: ShortShortSD,
        _: &Current,
    ) -> R<(ShortShortSD, ShortShortSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_int_int_sd(&self, p1: IntIntSD, p2: IntIntSD, _: &Current) -> R<(IntIntSD, IntIntSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_long_long_sd(&self, p1: LongLongSD, p2: LongLongSD, _: &Current) -> R<(LongLongSD, LongLongSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_string_float_sd(
        &self,
        p1: StringFloatSD,
        p2: StringFloatSD,
        _: &Current,
    ) -> R<(StringFloatSD, StringFloatSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_string_double_sd(
        &self,
        p1: StringDoubleSD,
        p2: StringDoubleSD,
        _: &Current,
    ) -> R<(StringDoubleSD, StringDoubleSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_string_string_sd(
        &self,
        p1: StringStringSD,
        p2: StringStringSD,
        _: &Current,
    ) -> R<(StringStringSD, StringStringSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_my_enum_my_enum_sd(
        &self,
        p1: MyEnumMyEnumSD,
        p2: MyEnumMyEnumSD,
        _: &Current,
    ) -> R<(MyEnumMyEnumSD, MyEnumMyEnumSD)> {
        Ok((merged(&p1, &p2), p2))
    }
    async fn op_int_s(&self, s: IntS, _: &Current) -> R<IntS> {
        Ok(s.iter().map(|x| x.wrapping_neg()).collect())
    }
    async fn op_byte_s_oneway(&self, _s: ByteS, _: &Current) -> R<()> {
        self.oneway_calls.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
    async fn op_byte_s_oneway_call_count(&self, _: &Current) -> R<i32> {
        Ok(self.oneway_calls.swap(0, Ordering::SeqCst))
    }
    async fn op_context(&self, current: &Current) -> R<Context> {
        Ok(Context::clone(&current.ctx))
    }
    async fn op_double_marshaling(&self, p1: f64, p2: DoubleS, _: &Current) -> R<()> {
        let d = 1278312346.0 / 13.0;
        if p1 == d && p2.iter().all(|x| *x == d) {
            Ok(())
        } else {
            Err(Error::UnknownException("opDoubleMarshaling got other values".into()))
        }
    }
    async fn op_idempotent(&self, current: &Current) -> R<()> {
        expect_mode(current, OperationMode::Idempotent)
    }
    async fn op_nonmutating(&self, current: &Current) -> R<()> {
        expect_mode(current, OperationMode::Nonmutating)
    }
    async fn op_byte1(&self, v: u8, _: &Current) -> R<u8> {
        Ok(v)
    }
    async fn op_short1(&self, v: i16, _: &Current) -> R<i16> {
        Ok(v)
    }
    async fn op_int1(&self, v: i32, _: &Current) -> R<i32> {
        Ok(v)
    }
    async fn op_long1(&self, v: i64, _: &Current) -> R<i64> {
        Ok(v)
    }
    async fn op_float1(&self, v: f32, _: &Current) -> R<f32> {
        Ok(v)
    }
    async fn op_double1(&self, v: f64, _: &Current) -> R<f64> {
        Ok(v)
    }
    async fn op_string1(&self, v: floe::CompactString, _: &Current) -> R<floe::CompactString> {
        Ok(v)
    }
    async fn op_string_s1(&self, v: StringS, _: &Current) -> R<StringS> {
        Ok(v)
    }
    async fn op_byte_bool_d1(&self, v: ByteBoolD, _: &Current) -> R<ByteBoolD> {
        Ok(v)
    }
    async fn op_string_s2(&self, v: StringS, _: &Current) -> R<StringS> {
        Ok(v)
    }
    async fn op_byte_bool_d2(&self, v: ByteBoolD, _: &Current) -> R<ByteBoolD> {
        Ok(v)
    }
    async fn op_string_literals(&self, _: &Current) -> R<StringS> {
        Ok([
            S0, S1, S2, S3, S4, S5, S6, S7, S8, S9, S10, SW0, SW1, SW2, SW3, SW4, SW5, SW6, SW7, SW8, SW9, SW10, SS0,
            SS1, SS2, SS3, SS4, SS5, SU0, SU1, SU2,
        ]
        .iter()
        .map(|s| floe::CompactString::from(*s))
        .collect())
    }
    async fn op_w_string_literals(&self, current: &Current) -> R<StringS> {
        self.op_string_literals(current).await
    }
    async fn op_m_struct1(&self, _: &Current) -> R<Structure> {
        Ok(Structure::default())
    }
    async fn op_m_struct2(&self, p1: Structure, _: &Current) -> R<(Structure, Structure)> {
        Ok((p1.clone(), p1))
    }
    async fn op_m_seq1(&self, _: &Current) -> R<StringS> {
        Ok(Vec::new())
    }
    async fn op_m_seq2(&self, p1: StringS, _: &Current) -> R<(StringS, StringS)> {
        Ok((p1.clone(), p1))
    }
    async fn op_m_dict1(&self, _: &Current) -> R<StringStringD> {
        Ok(HashMap::new())
    }
    async fn op_m_dict2(&self, p1: StringStringD, _: &Current) -> R<(StringStringD, StringStringD)> {
        Ok((p1.clone(), p1))
    }
}

impl MyDerivedClass for MyDerivedClassI {
    async fn op_derived(&self, _: &Current) -> R<()> {
        Ok(())
    }
    async fn op_my_class1(&self, v: Option<Class<MyClass1>>, _: &Current) -> R<Option<Class<MyClass1>>> {
        Ok(v)
    }
    async fn op_my_struct1(&self, v: MyStruct1, _: &Current) -> R<MyStruct1> {
        Ok(v)
    }
}

struct BI;

impl m::Intf for BI {
    async fn op_intf(&self, _: &Current) -> R<()> {
        Ok(())
    }
}

impl m::BDisp for BI {
    async fn op_b(&self, _: &Current) -> R<()> {
        Ok(())
    }
}

fn main() -> std::process::ExitCode {
    TestServer::main("operations", &[("Ice.Warn.Dispatch", "0")], |server| async move {
        let adapter = server.adapter("TestAdapter", 0)?;
        adapter.add(MyDerivedClassServer::new(MyDerivedClassI::default()), Identity::new("test"));
        adapter.add(m::BDispServer::new(BI), Identity::new("b"));
        adapter.activate().await
    })
}
