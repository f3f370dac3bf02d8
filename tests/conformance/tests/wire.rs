//! Requests built byte by byte, as Ice's clients send them, against the floe servers of this
//! crate (and the generated code they run): what Ice's Python clients never send.

use floe::encoding::{Decode, Decoder, EncodingVersion};

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// `getD1`'s parameter as Ice 3.7's Python client marshals it with `Ice.Default.SlicedFormat=1`:
/// a D1 whose slices (D1, then B1) each carry an indirection table of A1 instances. The
/// instances of the second slice's table are of types the instance's factory knows too.
#[test]
fn a_sliced_d1_from_ice_decodes() {
    use floe_conformance::generated::objects::test::{A1, D1};
    let params = hex(concat!(
        "0119",
        "0a3a3a546573743a3a4431",
        "06000000",
        "0102",
        "02",
        "0131",
        "0a3a3a546573743a3a4131",
        "07000000",
        "026133",
        "0132",
        "02",
        "07000000",
        "026134",
        "39",
        "0a3a3a546573743a3a4231",
        "06000000",
        "0102",
        "02",
        "013202",
        "07000000",
        "026131",
        "013202",
        "07000000",
        "026132",
    ));
    let mut dec = Decoder::new(params.into(), EncodingVersion::V1_1);
    dec.set_class_factory(floe::encoding::ClassFactory {
        create: floe_conformance::generated::objects::__floe_classes::create,
        compact: floe_conformance::generated::objects::__floe_classes::compact,
    });
    let d1: Option<floe::Class<D1>> = Decode::decode(&mut dec).expect("D1");
    dec.read_pending_values().expect("every A1 is an A1");
    let d1 = d1.expect("not null");
    let d1 = d1.read();
    let name = |a: &Option<floe::Class<A1>>| a.as_ref().expect("not null").read().name.clone();
    assert_eq!([name(&d1.base.a1), name(&d1.base.a2), name(&d1.a3), name(&d1.a4)], ["a1", "a2", "a3", "a4"]);
}
