//! Golden tests per Slice construct: each `tests/golden/constructs/<name>.ice` holds one or two
//! definitions of one kind, and the Rust generated for it is checked in next to it as
//! `<name>.rs`, so the output for that construct can be read (and reviewed when it changes) on
//! its own. Each checked-in file must also compile against floe (it is included below).
//! `FLOE_BLESS=1` rewrites the golden files; tests/golden.rs covers everything together.

use std::path::Path;

/// Includes every construct's golden file in a module of its own, and lists their names.
macro_rules! constructs {
    ($($module:ident => $name:literal),* $(,)?) => {
        $(
            #[allow(dead_code, missing_docs, unreachable_pub, clippy::all)]
            mod $module {
                include!(concat!("golden/constructs/", $name, ".rs"));
            }
        )*
        /// The constructs, by file name.
        const CONSTRUCTS: &[&str] = &[$($name),*];
    };
}

constructs! {
    constant => "constant",
    enums => "enum",
    structs => "struct",
    sequence => "sequence",
    dictionary => "dictionary",
    exception => "exception",
    class => "class",
    interface => "interface",
}

#[test]
fn generated_code_matches_the_construct_golden_files() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/constructs");
    let bless = std::env::var_os("FLOE_BLESS").is_some();
    let mut differ = Vec::new();
    for name in CONSTRUCTS {
        let c = floe_slice::compile(&[dir.join(format!("{name}.ice"))], &[]);
        assert!(!c.has_errors(), "{name}.ice: {}", c.render_diagnostics());
        let code =
            floe_slice::generate(c.unit.as_ref().unwrap(), &Default::default()).expect("the generated code parses");
        let golden = dir.join(format!("{name}.rs"));
        if bless {
            std::fs::write(&golden, &code).unwrap();
        }
        if std::fs::read_to_string(&golden).ok().as_deref() != Some(code.as_str()) {
            differ.push(format!("tests/golden/constructs/{name}.rs"));
        }
    }
    assert!(
        differ.is_empty(),
        "generated code differs from {}; rerun with FLOE_BLESS=1 after checking the change",
        differ.join(", ")
    );
}

/// Every `.ice` file in the directory has its golden test.
#[test]
fn every_construct_file_is_checked() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/constructs");
    let mut found: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .filter_map(|e| e.ok()?.path().file_stem()?.to_str().map(str::to_string))
        .collect();
    found.sort();
    found.dedup();
    let mut listed: Vec<String> = CONSTRUCTS.iter().map(|s| s.to_string()).collect();
    listed.sort();
    assert_eq!(found, listed, "add new construct files to the constructs! list");
}

#[test]
fn construct_types_behave() {
    use floe::encoding::{Decode, Decoder, Encode, Encoder, EncodingVersion, WireLayout};

    assert_eq!((constant::constants::ANSWER, constant::constants::GREETING), (42, "hello"));
    assert_eq!(enums::enums::Color::from_i32(5), Some(enums::enums::Color::Green));
    fn bulk<T: WireLayout>() {}
    bulk::<structs::structs::Point>();
    assert_eq!(structs::structs::Label::default().text, "none");
    let _: sequence::sequences::Blob = floe::bytes::Bytes::new();
    let _: dictionary::dictionaries::Sorted = std::collections::BTreeMap::new();
    let d = exception::exceptions::Detailed { reason: "r".into(), code: Some(7) };
    let mut e = Encoder::new(EncodingVersion::V1_1);
    floe::encoding::UserExceptionSlices::encode_exception(&d, &mut e);
    let mut dec = Decoder::from_slice(e.as_slice(), EncodingVersion::V1_1);
    dec.start_exception().unwrap();
    assert_eq!(dec.start_exception_slice().unwrap().type_id, "::Exceptions::Detailed");
    assert_eq!(
        <exception::exceptions::Detailed as floe::encoding::UserExceptionSlices>::decode_body(&mut dec).unwrap(),
        d
    );
    let c = enums::enums::Color::Blue;
    let mut e = Encoder::new(EncodingVersion::V1_0);
    c.encode(&mut e);
    assert_eq!(enums::enums::Color::decode(&mut Decoder::from_slice(e.as_slice(), EncodingVersion::V1_0)).unwrap(), c);
    let node = floe::Class::new(class::classes::Node { value: 1, next: None });
    assert_eq!(node.read().value, 1);
    assert_eq!(interface::interfaces::GreeterServer::<Greeter>::IDS, &["::Ice::Object", "::Interfaces::Greeter"]);
}

/// A servant for the interface golden: the generated trait can be implemented.
struct Greeter;

impl interface::interfaces::Greeter for Greeter {
    async fn greet(&self, name: floe::CompactString, _current: &floe::Current) -> floe::Result<floe::CompactString> {
        Ok(floe::format_compact!("hello {name}"))
    }

    async fn ping(&self, _current: &floe::Current) -> floe::Result<()> {
        Ok(())
    }
}
