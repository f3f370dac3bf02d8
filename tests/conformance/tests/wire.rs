//! Requests built byte by byte, as Ice's clients send them, against the floe servers of this
//! crate (and the generated code they run): what Ice's Python clients never send.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use floe::connection::Compress;
use floe::encoding::Context;
use floe::encoding::{Decode, Decoder, EncodingVersion};
use floe::protocol::request::{encode_request, RequestPrefix};
use floe::protocol::{OperationMode, ReplyBody};
use floe::{Communicator, Identity};

// Only its port ranges are used here.
#[allow(unused_macros)]
mod runner;

fn hex(s: &str) -> Vec<u8> {
    (0..s.len()).step_by(2).map(|i| u8::from_str_radix(&s[i..i + 2], 16).expect("hex")).collect()
}

/// A floe conformance server on a free loopback port, killed on drop.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(binary: &str, extra: &[&str]) -> Server {
        // A range of ports free now, below the ephemeral range, that no other test of this
        // program is handed (the test server listens on the first).
        let port = runner::port_base(10);
        let mut child = Command::new(binary)
            .args(["--Ice.Default.Host=127.0.0.1", "--Ice.PrintAdapterReady=1"])
            .arg(format!("--Test.BasePort={port}"))
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("server starts");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(line) if line.trim() == "TestAdapter ready" => break,
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    panic!("{binary} never said `TestAdapter ready`");
                }
            }
        }
        Server { child, port }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Sends `operation` on `identity` with the parameter encapsulation `params` claiming
/// `encoding`, and returns the reply's body.
fn call(port: u16, identity: &str, operation: &str, encoding: EncodingVersion, params: &[u8]) -> ReplyBody {
    let communicator = Communicator::new().expect("communicator");
    let c = communicator.clone();
    let body = communicator.block_on(async move {
        let proxy = c.string_to_proxy(&format!("{identity}:tcp -h 127.0.0.1 -p {port} -t 10000")).expect("proxy");
        let connection = proxy.ice_get_connection().await.expect("connection");
        let prefix = RequestPrefix::new(&Identity::new(identity), "", operation, OperationMode::Normal);
        let message = encode_request(0, &prefix, &Context::new(), encoding, |e| e.write_raw(params));
        let reply = tokio::time::timeout(Duration::from_secs(10), connection.invoke_message(message, Compress::No))
            .await
            .expect("a reply within 10 s")
            .expect("a reply");
        c.destroy().await;
        reply.body
    });
    body
}

/// Ice checks the encoding of a request's parameters when it reads them, for the built-in
/// operations and the servant's own alike, and answers an unsupported one (1.2, 2.0) with
/// UnknownLocalException carrying UnsupportedEncodingException (Ice's C++ proxy client
/// checks that text). An operation that does not exist is OperationNotExist first.
#[test]
fn an_unsupported_parameter_encoding_is_unknown_local_exception() {
    let server = Server::start(env!("CARGO_BIN_EXE_floe-conformance-operations"), &[]);
    let isa = {
        let mut e = floe::encoding::Encoder::new(EncodingVersion::V1_1);
        e.write_str("::Ice::Object");
        e.into_bytes()
    };
    for encoding in [EncodingVersion { major: 1, minor: 2 }, EncodingVersion { major: 2, minor: 0 }] {
        for (operation, params) in [
            ("ice_ping", &[][..]),
            ("ice_isA", &isa[..]),
            ("ice_id", &[][..]),
            ("ice_ids", &[][..]),
            ("opVoid", &[][..]),
        ] {
            match call(server.port, "test", operation, encoding, params) {
                ReplyBody::UnknownLocalException(text) => assert!(
                    text.contains("UnsupportedEncodingException") && text.contains(&encoding.to_string()),
                    "{operation} with {encoding}: {text}"
                ),
                other => panic!("{operation} with encoding {encoding}: {other:?}"),
            }
        }
        let body = call(server.port, "test", "opByte", encoding, &[1, 2]);
        assert!(
            matches!(&body, ReplyBody::UnknownLocalException(t) if t.contains("UnsupportedEncodingException")),
            "{body:?}"
        );
        let body = call(server.port, "test", "noSuchOperation", encoding, &[]);
        assert!(matches!(body, ReplyBody::OperationNotExist(_)), "{body:?}");
    }
    // Encodings 1.0 and 1.1 are served as before.
    for encoding in [EncodingVersion::V1_0, EncodingVersion::V1_1] {
        let body = call(server.port, "test", "ice_ping", encoding, &[]);
        assert!(matches!(body, ReplyBody::Ok { .. }), "{body:?}");
    }
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

/// `pingPong`'s parameter as Ice 3.7's Python client of the optional suite marshals it with
/// `Ice.Default.SlicedFormat=1`: a `::Test::D` (client-private, derived from the
/// `["preserve-slice"]` class B) that the server knows only as a B.
const SLICED_D: &str = concat!(
    "011d093a3a546573743a3a441f0000000474657374",
    "f6ffde030000040000000102743",
    "1f7ffe803000001ff",
    "010131093a3a546573743a3a410800000012000000",
    "11093a3a546573743a3a42080000000e000000",
    "3202080000000e000000",
);

/// With `Ice.Default.SlicedFormat` the server's replies are in the sliced format (slices carry
/// their sizes), so the preserved slice of the unknown D goes back to the client, which can
/// read the D again; without it, the reply is compact and holds no D.
#[test]
fn the_server_replies_in_the_sliced_format_when_told_and_keeps_preserved_slices() {
    let params = hex(SLICED_D);
    let d_type_id = b"::Test::D";
    let has = |payload: &[u8], needle: &[u8]| payload.windows(needle.len()).any(|w| w == needle);
    let sliced = Server::start(env!("CARGO_BIN_EXE_floe-conformance-optional"), &["--Ice.Default.SlicedFormat=1"]);
    let ReplyBody::Ok { payload, .. } = call(sliced.port, "initial", "pingPong", EncodingVersion::V1_1, &params) else {
        panic!("pingPong failed")
    };
    // Inline instance, then the first slice's flags: a type id string, a size, more slices.
    assert_eq!(payload[0], 1, "{payload:02x?}");
    assert_eq!(payload[1] & 0x13, 0x11, "the most derived slice is sized: {payload:02x?}");
    assert!(has(&payload, d_type_id), "the D slice was preserved: {payload:02x?}");
    drop(sliced);
    let compact = Server::start(env!("CARGO_BIN_EXE_floe-conformance-optional"), &[]);
    let ReplyBody::Ok { payload, .. } = call(compact.port, "initial", "pingPong", EncodingVersion::V1_1, &params)
    else {
        panic!("pingPong failed")
    };
    assert_eq!(payload[1] & 0x10, 0, "compact by default: {payload:02x?}");
    assert!(!has(&payload, d_type_id), "{payload:02x?}");
}
