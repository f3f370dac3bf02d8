//! Ice/optional: the "optional parameters" and "exception optionals" client checks of
//! `AllTests.py` against Ice's Python server.
//!
//! Ported: 59 checks (assertions in the source; each `opt!` line checks the unset and the set
//! parameter), and 5 more in `required_exception_members` — every `op*` of an optional in-parameter, out-parameter and return value (unset
//! gives unset, a value comes back twice), required and optional parameters mixed, and the
//! optional members of exceptions (unset, set, and dropped by the 1.0 encoding).
//!
//! Not ported yet: the optional data members of classes, tag marshaling, the large containers,
//! unknown class slices and the marshaled-result checks of the same `AllTests.py`. Not
//! applicable: the `…Async` variants (floe's calls are all futures) and Python's null struct
//! passed as an optional (`opSmallStruct(None)`).

use floe::encoding::EncodingVersion;
use floe::{CallError, Class, Proxy};
use floe_conformance::generated::optional::test::*;

use super::Helper;

/// `op(None)` returns unset twice; `op(Some(v))` returns `v` twice.
macro_rules! opt {
    ($initial:expr, $op:ident, $arg:expr, $expected:expr) => {{
        let (p2, p3) = $initial.$op(None).await.expect(stringify!($op));
        assert!(p2.is_none() && p3.is_none(), "{}(unset)", stringify!($op));
        let expected = $expected;
        let (p2, p3) = $initial.$op(Some($arg)).await.expect(stringify!($op));
        assert!(p2.as_ref() == Some(&expected) && p3.as_ref() == Some(&expected), "{}", stringify!($op));
    }};
    ($initial:expr, $op:ident, $v:expr) => {
        opt!($initial, $op, $v, $v)
    };
}

fn one(a: i32) -> Class<OneOptional> {
    Class::new(OneOptional { a: Some(a) })
}

fn a_of(o: &Option<Class<OneOptional>>) -> Option<i32> {
    o.as_ref().and_then(|o| o.read().a)
}

pub(crate) async fn all_tests(h: Helper) {
    let base = h.proxy("initial");
    let initial = InitialPrx::checked_cast(&base).await.expect("checkedCast").expect("an Initial");
    let i = &initial;

    // Optional parameters.
    opt!(i, op_byte, 56u8);
    opt!(i, op_bool, true);
    opt!(i, op_short, 56i16);
    opt!(i, op_int, 56i32);
    opt!(i, op_long, 56i64);
    opt!(i, op_float, 1.0f32);
    opt!(i, op_double, 1.0f64);
    opt!(i, op_string, "test", floe::CompactString::from("test"));
    opt!(i, op_my_enum, MyEnum::MyEnumMember);
    opt!(i, op_small_struct, &SmallStruct { m: 56 }, SmallStruct { m: 56 });
    opt!(i, op_fixed_struct, &FixedStruct { m: 56 }, FixedStruct { m: 56 });
    let v = VarStruct { m: "test".into() };
    opt!(i, op_var_struct, &v, v.clone());

    let (p2, p3) = i.op_one_optional(None).await.expect("opOneOptional");
    assert!(p2.is_none() && p3.is_none());
    let (p2, p3) = i.op_one_optional(Some(&one(58))).await.expect("opOneOptional");
    assert!(a_of(&p2) == Some(58) && a_of(&p3) == Some(58));

    let (p2, p3) = i.op_one_optional_proxy(None).await.expect("opOneOptionalProxy");
    assert!(p2.is_none() && p3.is_none());
    let p1 = h.communicator.string_to_proxy("test").expect("test");
    let (p2, p3) = i.op_one_optional_proxy(Some(&p1)).await.expect("opOneOptionalProxy");
    assert!(p2.as_ref() == Some(&p1) && p3.as_ref() == Some(&p1));

    let b = floe::bytes::Bytes::from(vec![56u8; 100]);
    opt!(i, op_byte_seq, &b, b.clone());
    let v = vec![true; 100];
    opt!(i, op_bool_seq, &v[..], v.clone());
    let v = vec![56i16; 100];
    opt!(i, op_short_seq, &v[..], v.clone());
    let v = vec![56i32; 100];
    opt!(i, op_int_seq, &v[..], v.clone());
    let v = vec![56i64; 100];
    opt!(i, op_long_seq, &v[..], v.clone());
    let v = vec![1.0f32; 100];
    opt!(i, op_float_seq, &v[..], v.clone());
    let v = vec![1.0f64; 100];
    opt!(i, op_double_seq, &v[..], v.clone());
    let strings: Vec<floe::CompactString> = vec!["test1".into(); 100];
    opt!(i, op_string_seq, &strings[..], strings.clone());
    let v = vec![SmallStruct { m: 1 }; 10];
    opt!(i, op_small_struct_seq, &v[..], v.clone());
    let v = vec![SmallStruct { m: 1 }; 10];
    opt!(i, op_small_struct_list, &v[..], v.clone());
    let v = vec![FixedStruct { m: 1 }; 10];
    opt!(i, op_fixed_struct_seq, &v[..], v.clone());
    let v = vec![FixedStruct { m: 1 }; 10];
    opt!(i, op_fixed_struct_list, &v[..], v.clone());
    let v = vec![VarStruct { m: "test".into() }; 10];
    opt!(i, op_var_struct_seq, &v[..], v.clone());
    let d = IntIntDict::from_iter([(1, 2), (2, 3)]);
    opt!(i, op_int_int_dict, &d, d.clone());
    let d = StringIntDict::from_iter([("1".into(), 2), ("2".into(), 3)]);
    opt!(i, op_string_int_dict, &d, d.clone());

    let (p2, p3) = i.op_int_one_optional_dict(None).await.expect("opIntOneOptionalDict");
    assert!(p2.is_none() && p3.is_none());
    let d = IntOneOptionalDict::from_iter([(1, Some(one(58))), (2, Some(one(59)))]);
    let (p2, p3) = i.op_int_one_optional_dict(Some(&d)).await.expect("opIntOneOptionalDict");
    assert!(a_of(&p2.expect("p2")[&1]) == Some(58) && a_of(&p3.expect("p3")[&1]) == Some(58));

    assert_eq!(i.op_required_after_optional(1, Some(2), 3).await.expect("opRequiredAfterOptional"), (1, Some(2), 3));
    assert_eq!(i.op_optional_after_required(1, None, None).await.expect("opOptionalAfterRequired"), (1, None, None));
    assert_eq!(
        i.op_optional_after_required(1, None, Some(3)).await.expect("opOptionalAfterRequired"),
        (1, None, Some(3))
    );

    // Exception optionals.
    match i.op_optional_exception(None, None, None).await {
        Err(CallError::User(InitialOpOptionalExceptionError::OptionalException(ex))) => {
            assert!(ex.a.is_none() && ex.b.is_none() && ex.o.is_none());
        }
        other => panic!("expected OptionalException, got {other:?}"),
    }
    match i.op_optional_exception(Some(30), Some("test"), Some(&one(53))).await {
        Err(CallError::User(InitialOpOptionalExceptionError::OptionalException(ex))) => {
            assert_eq!(ex.a, Some(30));
            assert_eq!(ex.b.as_deref(), Some("test"));
            assert_eq!(a_of(&ex.o), Some(53));
        }
        other => panic!("expected OptionalException, got {other:?}"),
    }
    // With the 1.0 encoding, which has no optionals, the members arrive unset.
    let i10 = InitialPrx::from_object(i.as_object().ice_encoding_version(EncodingVersion::V1_0));
    match i10.op_optional_exception(Some(30), Some("test"), Some(&one(53))).await {
        Err(CallError::User(InitialOpOptionalExceptionError::OptionalException(ex))) => {
            assert!(ex.a.is_none() && ex.b.is_none() && ex.o.is_none());
        }
        other => panic!("expected OptionalException, got {other:?}"),
    }
    match i.op_derived_exception(None, None, None).await {
        Err(CallError::User(InitialOpDerivedExceptionError::DerivedException(ex))) => {
            assert!(ex.a.is_none() && ex.b.is_none() && ex.o.is_none());
            assert!(ex.ss.is_none() && ex.o2.is_none());
            assert_eq!((ex.d1.as_str(), ex.d2.as_str()), ("d1", "d2"));
        }
        other => panic!("expected DerivedException, got {other:?}"),
    }
    match i.op_derived_exception(Some(30), Some("test2"), Some(&one(53))).await {
        Err(CallError::User(InitialOpDerivedExceptionError::DerivedException(ex))) => {
            assert_eq!(ex.a, Some(30));
            assert_eq!(ex.b.as_deref(), Some("test2"));
            assert_eq!(a_of(&ex.o), Some(53));
            assert_eq!(ex.ss.as_deref(), Some("test2"));
            assert!(ex.o2.as_ref().expect("o2").ptr_eq(ex.o.as_ref().expect("o")));
            assert_eq!((ex.d1.as_str(), ex.d2.as_str()), ("d1", "d2"));
        }
        other => panic!("expected DerivedException, got {other:?}"),
    }
    match i.op_required_exception(None, None, None).await {
        Err(CallError::User(InitialOpRequiredExceptionError::RequiredException(ex))) => {
            assert!(ex.a.is_none() && ex.b.is_none() && ex.o.is_none());
            assert_eq!(ex.ss, "test");
            assert!(ex.o2.is_none());
        }
        other => panic!("expected RequiredException, got {other:?}"),
    }
    // RequiredException(30, "test2", OneOptional(53)): see `required_exception_members`.

    initial.shutdown().await.expect("shutdown");
}

/// The RequiredException of `opRequiredException(30, "test2", OneOptional(53))`: `o` and `o2`
/// are the same instance, read inline inside the exception's own slice, and that instance's
/// optional member `a` is 53 (its slice announces optional members although the exception's
/// does not).
pub(crate) async fn required_exception_members(h: Helper) {
    let i = &InitialPrx::from_object(h.proxy("initial"));
    match i.op_required_exception(Some(30), Some("test2"), Some(&one(53))).await {
        Err(CallError::User(InitialOpRequiredExceptionError::RequiredException(ex))) => {
            assert_eq!(ex.a, Some(30));
            assert_eq!(ex.b.as_deref(), Some("test2"));
            assert_eq!(a_of(&ex.o), Some(53));
            assert_eq!(ex.ss, "test2");
            assert!(ex.o2.as_ref().expect("o2").ptr_eq(ex.o.as_ref().expect("o")));
        }
        other => panic!("expected RequiredException, got {other:?}"),
    }

    i.shutdown().await.expect("shutdown");
}
