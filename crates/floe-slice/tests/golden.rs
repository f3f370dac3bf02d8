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
    let code = floe_slice::generate(c.unit.as_ref().unwrap(), &Default::default()).expect("the generated code parses");
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

/// Class graphs keep their shape (shared instances, cycles, derived types with compact ids)
/// through every encoding and format, and references are checked against their static type.
/// Every way class graphs are encoded: 1.1 compact and sliced, and 1.0.
const CLASS_ENCODINGS: [(floe::encoding::EncodingVersion, floe::encoding::FormatType); 3] = [
    (floe::encoding::EncodingVersion::V1_1, floe::encoding::FormatType::Compact),
    (floe::encoding::EncodingVersion::V1_1, floe::encoding::FormatType::Sliced),
    (floe::encoding::EncodingVersion::V1_0, floe::encoding::FormatType::Compact),
];

#[test]
fn class_graphs_round_trip() {
    use floe::encoding::{Decoder, Encoder, EncodingVersion};
    use floe::{AnyClass, Class};
    use generated::demo::*;

    let leaf = Class::new(Leaf { base: Node { value: 2, next: None, label: Some("l".into()) }, name: "x".into() });
    let a = Class::new(Node { value: 1, next: None, label: None });
    let b = Class::new(Node { value: 3, next: Some(a.clone()), label: None });
    a.write().next = Some(b.clone()); // a ↔ b
    let leaf_as_node: Class<Node> = leaf.downcast().unwrap();
    for (encoding, format) in CLASS_ENCODINGS {
        let mut e = Encoder::new(encoding);
        e.set_format(format);
        e.write_class(Some(&a));
        e.write_class(Some(&leaf_as_node));
        e.write_class(Some(&b));
        e.write_class(None::<&AnyClass>);
        e.write_class(Some(&leaf.to_any()));
        e.write_pending_values();
        let bytes = e.as_slice().to_vec();
        // A graph with a cycle is refused unless cycles are accepted (Ice.AcceptClassCycles).
        let mut d = Decoder::from_slice(&bytes, encoding);
        let refused = (|| {
            for _ in 0..3 {
                d.read_class::<Node>()?;
            }
            d.read_any_class(None)?;
            d.read_any_class(None)?;
            d.read_pending_values()
        })();
        assert!(refused.is_err(), "{encoding} {format:?}: the a ↔ b cycle must be refused by default");
        let mut d = Decoder::from_slice(&bytes, encoding);
        d.set_accept_class_cycles(true);
        let a2 = d.read_class::<Node>().unwrap().unwrap();
        let leaf2 = d.read_class::<Node>().unwrap().unwrap();
        let b2 = d.read_class::<Node>().unwrap().unwrap();
        assert!(d.read_any_class(None).unwrap().is_none());
        let leaf_any = d.read_any_class(None).unwrap().unwrap();
        d.read_pending_values().unwrap();
        assert!(d.is_empty(), "{encoding} {format:?}: {} bytes left", d.remaining());
        assert_eq!(a2.read().value, 1);
        assert_eq!(b2.read().value, 3);
        assert!(a2.read().next.as_ref().unwrap().ptr_eq(&b2), "{encoding} {format:?}: a.next is b");
        assert!(b2.read().next.as_ref().unwrap().ptr_eq(&a2), "{encoding} {format:?}: b.next is a (cycle)");
        assert!(leaf_any.ptr_eq(&leaf2), "{encoding} {format:?}: one instance, two references");
        assert_eq!(leaf2.ice_id(), "::Demo::Leaf");
        let as_leaf = leaf2.downcast::<Leaf>().unwrap();
        assert_eq!(as_leaf.read().name, "x");
        assert_eq!(as_leaf.read().value, 2, "derived classes reach base members through Deref");
        let expected_label =
            if encoding == EncodingVersion::V1_0 { None } else { Some(floe::CompactString::from("l")) };
        assert_eq!(leaf2.read().label, expected_label, "{encoding}: optionals do not exist in 1.0");

        // A Node where a Leaf is required is refused, never accepted as a wrong type.
        let mut d = Decoder::from_slice(&bytes, encoding);
        d.set_accept_class_cycles(true);
        let r = d.read_class::<Leaf>().and_then(|_| d.read_pending_values());
        assert!(r.is_err(), "{encoding} {format:?}: a Node must not pass as a Leaf");
    }
}

/// A chain of instances as deep as `Ice.ClassGraphDepthMax` decodes; one level more is an
/// error, in every encoding (the 1.0 encoding sends instances one after another, their depth
/// is where they are referenced).
#[test]
fn the_class_graph_depth_limit_is_the_decoders() {
    use floe::encoding::{Decoder, Encoder};
    use floe::Class;
    use generated::demo::*;

    let chain = |n: i32| {
        let mut next = None;
        for value in (0..n).rev() {
            next = Some(Class::new(Node { value, next, label: None }));
        }
        next.expect("a chain")
    };
    for (encoding, format) in CLASS_ENCODINGS {
        for (levels, max, ok) in [(10, 10, true), (11, 10, false), (100, 0, true), (100, 100, true), (101, 100, false)]
        {
            let mut e = Encoder::new(encoding);
            e.set_format(format);
            e.write_class(Some(&chain(levels)));
            e.write_pending_values();
            let mut d = Decoder::from_slice(e.as_slice(), encoding);
            if max > 0 {
                d.set_class_graph_depth_max(max);
            } else {
                d.set_class_graph_depth_max(usize::MAX);
            }
            let r = d.read_class::<Node>().and_then(|n| d.read_pending_values().map(|_| n));
            assert_eq!(r.is_ok(), ok, "{encoding} {format:?}: {levels} levels, at most {max}: {:?}", r.err());
        }
        // The default is Ice 3.7's, 100.
        let mut e = Encoder::new(encoding);
        e.set_format(format);
        e.write_class(Some(&chain(101)));
        e.write_pending_values();
        let mut d = Decoder::from_slice(e.as_slice(), encoding);
        assert!(d.read_class::<Node>().and_then(|_| d.read_pending_values()).is_err());
    }
}

/// Truncations and byte flips of encoded class graphs give errors, never panics or hangs.
#[test]
fn damaged_class_graphs_are_errors() {
    use floe::encoding::{Decoder, Encoder};
    use floe::Class;
    use generated::demo::*;

    let a = Class::new(Node { value: 1, next: None, label: Some("a".into()) });
    let b = Class::new(Leaf { base: Node { value: 2, next: Some(a.clone()), label: None }, name: "b".into() });
    a.write().next = b.downcast();
    for (encoding, format) in CLASS_ENCODINGS {
        let mut e = Encoder::new(encoding);
        e.set_format(format);
        e.write_class(Some(&a));
        e.write_pending_values();
        let bytes = e.as_slice().to_vec();
        for cut in 0..bytes.len() {
            let mut d = Decoder::from_slice(&bytes[..cut], encoding);
            let r = d.read_class::<Node>().and_then(|_| d.read_pending_values());
            assert!(r.is_err() || !d.is_empty() || cut == bytes.len(), "{encoding} {format:?} cut {cut}");
        }
        for i in 0..bytes.len() {
            for flip in [0x01u8, 0x80, 0xff] {
                let mut damaged = bytes.clone();
                damaged[i] ^= flip;
                let mut d = Decoder::from_slice(&damaged, encoding);
                let _ = d.read_class::<Node>().and_then(|_| d.read_pending_values());
            }
        }
    }
}

/// Value factories the program registers are asked before the generated ones.
#[test]
fn registered_value_factories_come_first() {
    use floe::encoding::{Decoder, Encoder, EncodingVersion, ValueFactories};
    use floe::Class;
    use generated::demo::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    let leaf = Class::new(Leaf { base: Node { value: 7, next: None, label: None }, name: "x".into() });
    let mut e = Encoder::new(EncodingVersion::V1_1);
    e.write_class(Some(&leaf));
    e.write_pending_values();
    let made = Arc::new(AtomicUsize::new(0));
    let factories = Arc::new(ValueFactories::default());
    let counter = made.clone();
    factories.add("::Demo::Leaf", move || {
        counter.fetch_add(1, Ordering::SeqCst);
        Box::new(Leaf::default())
    });
    let mut d = Decoder::from_slice(e.as_slice(), EncodingVersion::V1_1);
    d.set_value_factories(Some(factories.clone()));
    let back = d.read_class::<Node>().unwrap().unwrap();
    d.read_pending_values().unwrap();
    assert_eq!(made.load(Ordering::SeqCst), 1, "the registered factory made the instance");
    assert_eq!(back.downcast::<Leaf>().unwrap().read().name, "x");
    assert!(factories.remove("::Demo::Leaf"));
}
