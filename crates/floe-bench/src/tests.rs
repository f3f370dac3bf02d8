//! The catalogue of the rate tests, after the seed documents: each test's name, what its
//! client does ([`Kind`]), its parameter and payload, and the clients and server size it runs
//! with; and [`Measured`], what one measurement of a test gives.

use crate::stats::StepStats;

/// What a test's client does; the systems' measurement loops match on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Sequential twoway `o()`.
    Twoway,
    /// Twoway `o()` by the Demarey method: a warm-up, then timed steps.
    Demarey,
    /// Oneway `o()`.
    Oneway,
    /// Batched oneway `o()`, sender side (cxRmi TEST1).
    BatchSend,
    /// Batched oneway `incr()`, delivered (cxRmi TEST2).
    BatchDelivered,
    /// Batched oneways of a payload variant, sender side.
    BatchSendPayload,
    /// Batched oneways of a payload variant, delivered.
    BatchDeliveredPayload,
    /// Batched twoway calls.
    BatchTwoway,
    /// Pipelined asynchronous twoway calls.
    Ami,
    /// Send a byte sequence.
    BytesSend,
    /// Receive a byte sequence.
    BytesRecv,
    /// Send a sequence of `{int,int,double}`.
    FixedSend,
    /// Receive a sequence of `{int,int,double}`.
    FixedRecv,
    /// Send a sequence of `{string,double}`.
    StringsSend,
    /// Receive a sequence of `{string,double}`.
    StringsRecv,
    /// Twoway calls to a servant busy for `param` µs.
    Work,
}

impl Kind {
    /// The name of the client's work, as the Ice peer's client knows it (the payload kinds go
    /// by their test's name instead: see [`Test::ice_name`]).
    pub fn name(self) -> &'static str {
        match self {
            Kind::Twoway => "twoway",
            Kind::Demarey => "demarey",
            Kind::Oneway => "oneway",
            Kind::BatchSend => "batch-send",
            Kind::BatchDelivered => "batch-delivered",
            Kind::BatchSendPayload => "batch-send-payload",
            Kind::BatchDeliveredPayload => "batch-delivered-payload",
            Kind::BatchTwoway => "batch-twoway",
            Kind::Ami => "ami",
            Kind::BytesSend => "bytes-send",
            Kind::BytesRecv => "bytes-recv",
            Kind::FixedSend => "fixed-send",
            Kind::FixedRecv => "fixed-recv",
            Kind::StringsSend => "strings-send",
            Kind::StringsRecv => "strings-recv",
            Kind::Work => "work",
        }
    }

    /// A batched-oneway payload variant (`batch-send-<v>`, `batch-delivered-<v>`).
    pub fn is_payload(self) -> bool {
        matches!(self, Kind::BatchSendPayload | Kind::BatchDeliveredPayload)
    }

    /// A sender-side batched-oneway test, which measures rounds of [`sender_round`] requests.
    pub fn is_batch_send(self) -> bool {
        matches!(self, Kind::BatchSend | Kind::BatchSendPayload)
    }
}

/// One benchmark test.
#[derive(Debug, Clone, Copy)]
pub struct Test {
    /// Short name (`--tests` selects by it; the JSON records' `"test"`).
    pub name: &'static str,
    /// What it measures, for the report.
    pub title: &'static str,
    /// What the client does.
    pub kind: Kind,
    /// Parameter: payload size, element count, in-flight window or servant microseconds.
    pub param: i32,
    /// Payload bytes moved per operation (for Mbit/s), 0 if not a throughput test.
    pub payload: usize,
    /// Unit of the rate.
    pub unit: &'static str,
    /// The seed the test comes from.
    pub seed: &'static str,
    /// Whether Ice can run it (batched twoway does not exist in Ice).
    pub ice: bool,
    /// Runs over the ssl transport (TLS) rather than tcp.
    pub ssl: bool,
    /// Part of the message-size sweep (drawn as throughput against size).
    pub sweep: bool,
    /// Concurrent clients, each on its own connection.
    pub clients: usize,
    /// The server's exact thread count (floe then runs no connection runtimes beside them, as
    /// Ice runs a pool of that size); `None` for the servers on their defaults.
    pub threads: Option<usize>,
}

impl Test {
    /// A test of one client against the servers on their defaults, which Ice runs too.
    pub const fn new(
        name: &'static str,
        title: &'static str,
        kind: Kind,
        param: i32,
        payload: usize,
        unit: &'static str,
        seed: &'static str,
    ) -> Test {
        Test {
            name,
            title,
            kind,
            param,
            payload,
            unit,
            seed,
            ice: true,
            ssl: false,
            sweep: false,
            clients: 1,
            threads: None,
        }
    }

    /// The same test over ssl.
    const fn ssl(self) -> Test {
        Test { ssl: true, ..self }
    }

    /// The same test as part of the message-size sweep.
    const fn sweep(self) -> Test {
        Test { sweep: true, ..self }
    }

    /// The same test with `n` clients at once.
    const fn clients(self, n: usize) -> Test {
        Test { clients: n, ..self }
    }

    /// The same test against servers of exactly `t` threads.
    const fn threads(self, t: usize) -> Test {
        Test { threads: Some(t), ..self }
    }

    /// The same test, which Ice cannot run.
    const fn without_ice(self) -> Test {
        Test { ice: false, ..self }
    }
}

/// Every test, in report order.
pub const ALL: &[Test] = &[
    Test::new(
        "twoway",
        "twoway void o() (32 B request, 25 B reply)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning latency; TAO twoway; cxRmi TEST5",
    ),
    Test::new(
        "demarey",
        "twoway o(), Demarey method: 1000 warm-up, 10 steps × 1000 calls",
        Kind::Demarey,
        1000,
        0,
        "calls/s",
        "Demarey et al. 2004",
    ),
    Test::new("oneway", "oneway void o()", Kind::Oneway, 0, 0, "calls/s", "Henning oneway; TAO oneway"),
    Test::new(
        "batch-send",
        "batched oneway o(), sender side",
        Kind::BatchSend,
        0,
        0,
        "requests/s",
        "cxRmi TEST1; TAO batched oneway",
    ),
    Test::new(
        "batch-delivered",
        "batched oneway incr(), delivered",
        Kind::BatchDelivered,
        0,
        0,
        "requests/s",
        "cxRmi TEST2",
    ),
    Test::new(
        "batch-twoway",
        "batched twoway o() (1000 per batch)",
        Kind::BatchTwoway,
        1000,
        0,
        "calls/s",
        "cxRmi TEST3/TEST4",
    )
    .without_ice(),
    Test::new(
        "ami",
        "pipelined async twoway o() (100 in flight)",
        Kind::Ami,
        100,
        0,
        "calls/s",
        "Henning AMI; TAO twoway AMI",
    ),
    Test::new(
        "bytes-send",
        "send 500,000-byte sequence",
        Kind::BytesSend,
        500_000,
        500_000,
        "calls/s",
        "Henning byte seq; cxRmi TEST6",
    ),
    Test::new(
        "bytes-recv",
        "receive 500,000-byte sequence",
        Kind::BytesRecv,
        500_000,
        500_000,
        "calls/s",
        "Henning byte seq",
    ),
    Test::new(
        "fixed-send",
        "send 50,000 {int,int,double}",
        Kind::FixedSend,
        50_000,
        800_000,
        "calls/s",
        "Henning fixed structs; cxRmi TEST7",
    ),
    Test::new(
        "fixed-recv",
        "receive 50,000 {int,int,double}",
        Kind::FixedRecv,
        50_000,
        800_000,
        "calls/s",
        "Henning fixed structs",
    ),
    Test::new(
        "strings-send",
        "send 50,000 {string \"hello\", double}",
        Kind::StringsSend,
        50_000,
        700_000,
        "calls/s",
        "Henning string structs",
    ),
    Test::new(
        "strings-recv",
        "receive 50,000 {string \"hello\", double}",
        Kind::StringsRecv,
        50_000,
        700_000,
        "calls/s",
        "Henning string structs",
    ),
    Test::new("work-10", "twoway, servant busy 10 µs", Kind::Work, 10, 0, "calls/s", "Henning server-side processing"),
    Test::new(
        "work-150",
        "twoway, servant busy 150 µs",
        Kind::Work,
        150,
        0,
        "calls/s",
        "Henning server-side processing",
    ),
    Test::new(
        "ssl-twoway",
        "twoway void o() over ssl (TLS 1.3)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning latency, over IceSSL",
    )
    .ssl(),
    Test::new(
        "ssl-bytes-send",
        "send 500,000-byte sequence over ssl (TLS 1.3)",
        Kind::BytesSend,
        500_000,
        500_000,
        "calls/s",
        "Henning byte seq, over IceSSL",
    )
    .ssl(),
    Test::new(
        "ssl-bytes-recv",
        "receive 500,000-byte sequence over ssl (TLS 1.3)",
        Kind::BytesRecv,
        500_000,
        500_000,
        "calls/s",
        "Henning byte seq, over IceSSL",
    )
    .ssl(),
    Test::new("send-0", "send 0-byte sequence", Kind::BytesSend, 0, 0, "calls/s", "Henning throughput vs size").sweep(),
    Test::new("send-1k", "send 1 KB sequence", Kind::BytesSend, 1024, 1024, "calls/s", "Henning throughput vs size")
        .sweep(),
    Test::new("send-4k", "send 4 KB sequence", Kind::BytesSend, 4096, 4096, "calls/s", "Henning throughput vs size")
        .sweep(),
    Test::new(
        "send-16k",
        "send 16 KB sequence",
        Kind::BytesSend,
        16384,
        16384,
        "calls/s",
        "Henning throughput vs size",
    )
    .sweep(),
    Test::new(
        "send-64k",
        "send 64 KB sequence",
        Kind::BytesSend,
        65536,
        65536,
        "calls/s",
        "Henning throughput vs size",
    )
    .sweep(),
    Test::new(
        "send-256k",
        "send 256 KB sequence",
        Kind::BytesSend,
        262144,
        262144,
        "calls/s",
        "Henning throughput vs size",
    )
    .sweep(),
    Test::new(
        "send-1m",
        "send 1 MB sequence",
        Kind::BytesSend,
        1048576,
        1048576,
        "calls/s",
        "Henning throughput vs size",
    )
    .sweep(),
    Test::new(
        "clients-2",
        "twoway o() from 2 clients at once, servers on their defaults",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(2),
    Test::new(
        "clients-5",
        "twoway o() from 5 clients at once, servers on their defaults",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(5),
    Test::new(
        "clients-1-threads-1",
        "twoway o() from 1 clients at once, server with 1 thread(s)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(1)
    .threads(1),
    Test::new(
        "clients-2-threads-1",
        "twoway o() from 2 clients at once, server with 1 thread(s)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(2)
    .threads(1),
    Test::new(
        "clients-5-threads-1",
        "twoway o() from 5 clients at once, server with 1 thread(s)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(5)
    .threads(1),
    Test::new(
        "clients-2-threads-4",
        "twoway o() from 2 clients at once, server with 4 thread(s)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(2)
    .threads(4),
    Test::new(
        "clients-5-threads-4",
        "twoway o() from 5 clients at once, server with 4 thread(s)",
        Kind::Twoway,
        0,
        0,
        "calls/s",
        "Henning connection scalability",
    )
    .clients(5)
    .threads(4),
];

/// Requests per round of a sender-side batched-oneway test: one million, as cxRmi TEST1 batches,
/// for the full-length `batch-send` (measurements of 500 ms or more); 100,000 for the shorter
/// measurements of the payload variants and of `--quick` runs, so that one round fits in them.
pub fn sender_round(duration: std::time::Duration) -> u64 {
    if duration >= std::time::Duration::from_millis(500) {
        1_000_000
    } else {
        100_000
    }
}

/// Declares the cxRmi TEST1/TEST2 payload matrix: batched oneways carrying `n` parameters of one
/// primitive type (`b` byte, `s` short, `i` int, `l` long, `f` float, `d` double).
macro_rules! payload_tests {
    ($($variant:literal: $bytes:literal),*) => {
        /// Batched oneways by payload, sender side then delivered (after the tests in [`ALL`]).
        pub const PAYLOAD_TESTS: &[Test] = &[
            $(payload_test!("batch-send-", Kind::BatchSendPayload, $variant, $bytes, "sender side", "cxRmi TEST1"),)*
            $(payload_test!("batch-delivered-", Kind::BatchDeliveredPayload, $variant, $bytes, "delivered", "cxRmi TEST2"),)*
        ];
    };
}

/// One test of the payload matrix.
macro_rules! payload_test {
    ($prefix:literal, $kind:expr, $variant:literal, $bytes:literal, $side:literal, $seed:literal) => {
        Test::new(
            concat!($prefix, $variant),
            concat!("batched oneway ", $variant, " (", $bytes, " B), ", $side),
            $kind,
            $bytes,
            $bytes,
            "requests/s",
            $seed,
        )
    };
}

payload_tests! {
    "b1": 1, "b2": 2, "s1": 2, "b4": 4, "s2": 4, "i1": 4, "f1": 4,
    "b8": 8, "s4": 8, "i2": 8, "l1": 8, "f2": 8, "d1": 8,
    "s8": 16, "i4": 16, "l2": 16, "f4": 16, "d2": 16,
    "i8": 32, "l4": 32, "f8": 32, "d4": 32, "l8": 64, "d8": 64
}

/// Every test: [`ALL`] then [`PAYLOAD_TESTS`].
pub fn every_test() -> impl Iterator<Item = &'static Test> {
    ALL.iter().chain(PAYLOAD_TESTS)
}

impl Test {
    /// The name the Ice peer knows the test by (payload tests keep their variant).
    pub fn ice_name(&self) -> &'static str {
        if self.kind.is_payload() {
            self.name
        } else {
            self.kind.name()
        }
    }

    /// The payload variant of a `batch-send-<v>` / `batch-delivered-<v>` test (`b4`, `d8`, …).
    pub fn payload_variant(&self) -> &'static str {
        self.name.rsplit('-').next().unwrap_or("")
    }

    /// Concurrent clients and server threads (1 for the servers on their defaults).
    pub fn clients_and_threads(&self) -> (usize, usize) {
        (self.clients, self.threads.unwrap_or(1))
    }

    /// A test of servers of a given size (`clients-N-threads-T`): floe's server then runs
    /// exactly T threads, as Ice's runs a pool of T, with no connection runtimes beside them.
    pub fn exact_threads(&self) -> bool {
        self.threads.is_some()
    }
}

/// What one measurement of a test gave.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Operations done.
    pub ops: u64,
    /// Seconds they took.
    pub secs: f64,
    /// The Demarey statistics of the series, for the Demarey test.
    pub steps: Option<StepStats>,
}

impl Measured {
    /// `ops` operations in `secs` seconds.
    pub fn new(ops: u64, secs: f64) -> Measured {
        Measured { ops, secs, steps: None }
    }
}

#[cfg(test)]
mod catalogue_tests {
    use super::*;

    #[test]
    fn the_catalogue_keeps_its_names_and_kinds() {
        let find = |name: &str| every_test().find(|t| t.name == name).copied().unwrap();
        assert_eq!(every_test().count(), 32 + 48);
        assert_eq!(find("ssl-twoway").ice_name(), "twoway");
        assert!(find("ssl-bytes-recv").ssl && find("ssl-bytes-recv").kind == Kind::BytesRecv);
        assert_eq!(find("clients-5").clients_and_threads(), (5, 1));
        assert!(!find("clients-5").exact_threads());
        assert_eq!(find("clients-2-threads-4").clients_and_threads(), (2, 4));
        assert!(find("clients-2-threads-4").exact_threads());
        assert_eq!(find("work-150").ice_name(), "work");
        assert_eq!(find("send-1k").ice_name(), "bytes-send");
        assert!(find("send-1k").sweep && !find("bytes-send").sweep);
        assert_eq!(find("batch-send-d8").ice_name(), "batch-send-d8");
        assert_eq!(find("batch-delivered-d8").kind, Kind::BatchDeliveredPayload);
        assert_eq!(find("batch-delivered-d8").payload_variant(), "d8");
        assert!(!find("batch-twoway").ice);
    }
}
