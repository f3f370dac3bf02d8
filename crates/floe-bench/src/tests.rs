//! The catalogue of tests, after the seed documents.

/// One benchmark test.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Test {
    /// Short name (also the Ice peer's test name).
    pub(crate) name: &'static str,
    /// What it measures, for the report.
    pub(crate) title: &'static str,
    /// Parameter: payload size, element count, in-flight window or servant microseconds.
    pub(crate) param: i32,
    /// Payload bytes moved per operation (for Mbit/s), 0 if not a throughput test.
    pub(crate) payload: usize,
    /// Unit of the rate.
    pub(crate) unit: &'static str,
    /// The seed the test comes from.
    pub(crate) seed: &'static str,
    /// Whether Ice can run it (batched twoway does not exist in Ice).
    pub(crate) ice: bool,
}

/// Every test, in report order.
pub(crate) const ALL: &[Test] = &[
    Test {
        name: "twoway",
        title: "twoway void o() (32 B request, 25 B reply)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning latency; TAO twoway; cxRmi TEST5",
        ice: true,
    },
    Test {
        name: "demarey",
        title: "twoway o(), Demarey method: 1000 warm-up, 10 steps × 1000 calls",
        param: 1000,
        payload: 0,
        unit: "calls/s",
        seed: "Demarey et al. 2004",
        ice: true,
    },
    Test {
        name: "oneway",
        title: "oneway void o()",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning oneway; TAO oneway",
        ice: true,
    },
    Test {
        name: "batch-send",
        title: "batched oneway o(), sender side",
        param: 0,
        payload: 0,
        unit: "requests/s",
        seed: "cxRmi TEST1; TAO batched oneway",
        ice: true,
    },
    Test {
        name: "batch-delivered",
        title: "batched oneway incr(), delivered",
        param: 0,
        payload: 0,
        unit: "requests/s",
        seed: "cxRmi TEST2",
        ice: true,
    },
    Test {
        name: "batch-twoway",
        title: "batched twoway o() (1000 per batch)",
        param: 1000,
        payload: 0,
        unit: "calls/s",
        seed: "cxRmi TEST3/TEST4",
        ice: false,
    },
    Test {
        name: "ami",
        title: "pipelined async twoway o() (100 in flight)",
        param: 100,
        payload: 0,
        unit: "calls/s",
        seed: "Henning AMI; TAO twoway AMI",
        ice: true,
    },
    Test {
        name: "bytes-send",
        title: "send 500,000-byte sequence",
        param: 500_000,
        payload: 500_000,
        unit: "calls/s",
        seed: "Henning byte seq; cxRmi TEST6",
        ice: true,
    },
    Test {
        name: "bytes-recv",
        title: "receive 500,000-byte sequence",
        param: 500_000,
        payload: 500_000,
        unit: "calls/s",
        seed: "Henning byte seq",
        ice: true,
    },
    Test {
        name: "fixed-send",
        title: "send 50,000 {int,int,double}",
        param: 50_000,
        payload: 800_000,
        unit: "calls/s",
        seed: "Henning fixed structs; cxRmi TEST7",
        ice: true,
    },
    Test {
        name: "fixed-recv",
        title: "receive 50,000 {int,int,double}",
        param: 50_000,
        payload: 800_000,
        unit: "calls/s",
        seed: "Henning fixed structs",
        ice: true,
    },
    Test {
        name: "strings-send",
        title: "send 50,000 {string \"hello\", double}",
        param: 50_000,
        payload: 700_000,
        unit: "calls/s",
        seed: "Henning string structs",
        ice: true,
    },
    Test {
        name: "strings-recv",
        title: "receive 50,000 {string \"hello\", double}",
        param: 50_000,
        payload: 700_000,
        unit: "calls/s",
        seed: "Henning string structs",
        ice: true,
    },
    Test {
        name: "work-10",
        title: "twoway, servant busy 10 µs",
        param: 10,
        payload: 0,
        unit: "calls/s",
        seed: "Henning server-side processing",
        ice: true,
    },
    Test {
        name: "work-150",
        title: "twoway, servant busy 150 µs",
        param: 150,
        payload: 0,
        unit: "calls/s",
        seed: "Henning server-side processing",
        ice: true,
    },
    Test {
        name: "ssl-twoway",
        title: "twoway void o() over ssl (TLS 1.3)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning latency, over IceSSL",
        ice: true,
    },
    Test {
        name: "ssl-bytes-send",
        title: "send 500,000-byte sequence over ssl (TLS 1.3)",
        param: 500_000,
        payload: 500_000,
        unit: "calls/s",
        seed: "Henning byte seq, over IceSSL",
        ice: true,
    },
    Test {
        name: "ssl-bytes-recv",
        title: "receive 500,000-byte sequence over ssl (TLS 1.3)",
        param: 500_000,
        payload: 500_000,
        unit: "calls/s",
        seed: "Henning byte seq, over IceSSL",
        ice: true,
    },
    Test {
        name: "send-0",
        title: "send 0-byte sequence",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-1k",
        title: "send 1 KB sequence",
        param: 1024,
        payload: 1024,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-4k",
        title: "send 4 KB sequence",
        param: 4096,
        payload: 4096,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-16k",
        title: "send 16 KB sequence",
        param: 16384,
        payload: 16384,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-64k",
        title: "send 64 KB sequence",
        param: 65536,
        payload: 65536,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-256k",
        title: "send 256 KB sequence",
        param: 262144,
        payload: 262144,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "send-1m",
        title: "send 1 MB sequence",
        param: 1048576,
        payload: 1048576,
        unit: "calls/s",
        seed: "Henning throughput vs size",
        ice: true,
    },
    Test {
        name: "clients-2",
        title: "twoway o() from 2 clients at once, servers on their defaults",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-5",
        title: "twoway o() from 5 clients at once, servers on their defaults",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-1-threads-1",
        title: "twoway o() from 1 clients at once, server with 1 thread(s)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-2-threads-1",
        title: "twoway o() from 2 clients at once, server with 1 thread(s)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-5-threads-1",
        title: "twoway o() from 5 clients at once, server with 1 thread(s)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-2-threads-4",
        title: "twoway o() from 2 clients at once, server with 4 thread(s)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
    Test {
        name: "clients-5-threads-4",
        title: "twoway o() from 5 clients at once, server with 4 thread(s)",
        param: 0,
        payload: 0,
        unit: "calls/s",
        seed: "Henning connection scalability",
        ice: true,
    },
];

/// Requests per round of a sender-side batched-oneway test: one million, as cxRmi TEST1 batches,
/// for the full-length `batch-send`; 100,000 for the shorter measurements of the payload
/// variants and of `--quick` runs (Ice queues about 1.2 million a second here, so a round of a
/// million would take longer than those measurements are meant to).
pub(crate) fn sender_round(duration: std::time::Duration) -> u64 {
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
        pub(crate) const PAYLOAD_TESTS: &[Test] = &[
            $(payload_test!("batch-send-", $variant, $bytes, "sender side", "cxRmi TEST1"),)*
            $(payload_test!("batch-delivered-", $variant, $bytes, "delivered", "cxRmi TEST2"),)*
        ];
    };
}

/// One test of the payload matrix.
macro_rules! payload_test {
    ($prefix:literal, $variant:literal, $bytes:literal, $side:literal, $seed:literal) => {
        Test {
            name: concat!($prefix, $variant),
            title: concat!("batched oneway ", $variant, " (", $bytes, " B), ", $side),
            param: $bytes,
            payload: $bytes,
            unit: "requests/s",
            seed: $seed,
            ice: true,
        }
    };
}

payload_tests! {
    "b1": 1, "b2": 2, "s1": 2, "b4": 4, "s2": 4, "i1": 4, "f1": 4,
    "b8": 8, "s4": 8, "i2": 8, "l1": 8, "f2": 8, "d1": 8,
    "s8": 16, "i4": 16, "l2": 16, "f4": 16, "d2": 16,
    "i8": 32, "l4": 32, "f8": 32, "d4": 32, "l8": 64, "d8": 64
}

/// Every test: [`ALL`] then [`PAYLOAD_TESTS`].
pub(crate) fn every_test() -> impl Iterator<Item = &'static Test> {
    ALL.iter().chain(PAYLOAD_TESTS)
}

impl Test {
    /// The name the Ice peer knows the test by (payload tests keep their variant).
    pub(crate) fn ice_name(&self) -> &'static str {
        if self.kind().ends_with("-payload") {
            self.name
        } else {
            self.kind()
        }
    }

    /// The payload variant of a `batch-send-<v>` / `batch-delivered-<v>` test (`b4`, `d8`, …).
    pub(crate) fn payload_variant(&self) -> &'static str {
        self.name.rsplit('-').next().unwrap_or("")
    }

    /// What the client does: size-sweep tests are `bytes-send`, busy servants `work`.
    pub(crate) fn kind(&self) -> &'static str {
        if let Some(plain) = self.name.strip_prefix("ssl-") {
            plain
        } else if self.name.starts_with("work-") {
            "work"
        } else if self.name.starts_with("send-") {
            "bytes-send"
        } else if self.name.starts_with("clients-") {
            "twoway"
        } else if self.name.starts_with("batch-send-") {
            "batch-send-payload"
        } else if self.name.starts_with("batch-delivered-") {
            "batch-delivered-payload"
        } else {
            self.name
        }
    }

    /// Concurrent clients and server threads of a scaling test, or (1, 1) (a `clients-N`
    /// test without `-threads-T` runs the servers on their defaults, those of the other tests).
    pub(crate) fn clients_and_threads(&self) -> (usize, usize) {
        let Some(rest) = self.name.strip_prefix("clients-") else { return (1, 1) };
        let mut it = rest.split("-threads-");
        let n = it.next().and_then(|v| v.parse().ok()).unwrap_or(1);
        let t = it.next().and_then(|v| v.parse().ok()).unwrap_or(1);
        (n, t)
    }

    /// A test of servers of a given size (`clients-N-threads-T`): floe's server then runs
    /// exactly T threads, as Ice's runs a pool of T, with no connection runtimes beside them.
    pub(crate) fn exact_threads(&self) -> bool {
        self.name.starts_with("clients-") && self.name.contains("-threads-")
    }

    /// Runs over the ssl transport (TLS) rather than tcp: the `ssl-` variants.
    pub(crate) fn ssl(&self) -> bool {
        self.name.starts_with("ssl-")
    }

    /// Part of the message-size sweep (drawn as throughput against size).
    pub(crate) fn is_sweep(&self) -> bool {
        self.name.starts_with("send-")
    }
}
