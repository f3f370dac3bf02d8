//! Golden test: the Rust generated for tests/golden/Golden.ice is checked in and must not
//! change unexpectedly; the checked-in code must also compile against floe (it is included
//! below). `FLOE_BLESS=1` rewrites the golden file.

use std::path::Path;

#[allow(dead_code, missing_docs, unreachable_pub, clippy::all)]
mod generated {
    include!("golden/Golden.rs");
}

#[test]
fn generated_code_matches_the_golden_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden");
    let c = floe_slice::compile(&[dir.join("Golden.ice")], &[]);
    assert!(!c.has_errors(), "{}", c.render_diagnostics());
    let code = floe_slice::generate(c.unit.as_ref().unwrap(), &Default::default());
    let golden = dir.join("Golden.rs");
    if std::env::var_os("FLOE_BLESS").is_some() {
        std::fs::write(&golden, &code).unwrap();
    }
    let expected = std::fs::read_to_string(&golden).unwrap();
    assert!(
        code == expected,
        "generated code differs from tests/golden/Golden.rs; rerun with FLOE_BLESS=1 after checking the change"
    );
}

#[test]
fn golden_types_behave() {
    use floe::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion, WireLayout};
    use generated::demo::*;
    fn bulk<T: WireLayout>() {}
    bulk::<Point>();
    bulk::<Sample>();
    let n = Named::default();
    assert_eq!((n.name.as_str(), n.flag), ("none", true));
    assert_eq!(Level::from_i32(11), Some(Level::High));
    assert_eq!((ANSWER, GREETING, DEFAULT_LEVEL, RATIO, YES), (42, "hello \"world\"", Level::Mid, 0.5, true));
    let d = Detailed { reason: "r".into(), code: 3, hint: Some("h".into()) };
    let mut e = Encoder::new(EncodingVersion::V1_1);
    floe::encoding::UserExceptionSlices::encode_exception(&d, &mut e);
    let mut dec = Decoder::from_slice(e.as_slice(), EncodingVersion::V1_1);
    dec.start_exception().unwrap();
    assert_eq!(dec.start_exception_slice().unwrap().type_id, "::Demo::Detailed");
    assert_eq!(<Detailed as floe::encoding::UserExceptionSlices>::decode_body(&mut dec).unwrap(), d);
    let w = nested::Wrapper { p: Point { x: 1, y: 2 }, level: Level::High };
    let mut e = Encoder::new(EncodingVersion::V1_0);
    w.encode(&mut e);
    assert_eq!(nested::Wrapper::decode(&mut Decoder::from_slice(e.as_slice(), EncodingVersion::V1_0)).unwrap(), w);
    let _: ByteVec = vec![1u8];
    let _: Blob = floe::bytes::Bytes::new();
    let _: SortedNames = std::collections::BTreeMap::new();
}
