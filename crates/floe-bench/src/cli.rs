//! The command line of floe-bench and of its helper binary: one set of flags, so that every
//! role (the benchmark run and the helper roles it starts as child processes) takes the same
//! arguments in either binary.

use std::path::PathBuf;

use clap::Parser;

/// floe-bench's flags. Those marked internal are the helper roles' (`--serve`, `--client`,
/// `--conn-load`, `--relay`, `--router-client`, `--raw-against`), hidden from `--help`.
#[derive(Parser, Debug)]
#[command(name = "floe-bench", about = "floe against a raw-socket baseline and ZeroC Ice C++, interleaved")]
#[command(group(clap::ArgGroup::new("against_or_raw").args(["against", "raw_against"])))]
pub struct Args {
    /// A short run (about 2 minutes): fewer runs, shorter measurements.
    #[arg(long)]
    pub quick: bool,
    /// Write one JSON record per system × test here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the HTML report here (default: target/floe-bench/report.html).
    #[arg(long)]
    pub html: Option<PathBuf>,
    /// Write the README's tables (headline tests, batched-oneway payload matrix) as Markdown here.
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Peers to include, comma-separated (`ice`, `tonic`); `none` for floe and raw only.
    #[arg(long, default_value = "ice,tonic")]
    pub peers: String,
    /// Only these tests (comma-separated names); with `--against`, only these of its ten.
    #[arg(long)]
    pub tests: Option<String>,
    /// Number of interleaved runs (default 5, or 3 with --quick).
    #[arg(long)]
    pub runs: Option<usize>,
    /// A property for floe's servers and clients, as NAME=VALUE (repeatable), e.g.
    /// `Floe.Runtime.BusyPoll=0` to measure floe without busy polling.
    #[arg(long = "floe-property", value_name = "NAME=VALUE")]
    pub floe_properties: Vec<String>,
    /// Run floe's client side of the seed tests against the server of this proxy (any
    /// implementation of `Interop::Tester` in tests/interop/Test.ice) and print one line per
    /// test, `RESULT <name> <value> <unit>`; `--quick` for the short workload.
    #[arg(long, value_name = "PROXY")]
    pub against: Option<String>,
    /// With --against (or the internal --raw-against): after the warm-up print `warm`, then
    /// run each test named on a line of standard input (printing its `RESULT` line) until the
    /// end of input, so that a benchmark can alternate several clients test by test.
    #[arg(long, requires = "against_or_raw")]
    pub stepped: bool,
    /// Internal: play the cross pairs' workload with the raw replay client against the Tester
    /// on this port (the client side of the caps).
    #[arg(long, hide = true, value_name = "PORT")]
    pub raw_against: Option<u16>,
    /// Internal: run floe's client of the `router` test against the Tester of this proxy, for
    /// --duration-ms per test, through the Glacier2 router of --router if given.
    #[arg(long, hide = true, value_name = "PROXY")]
    pub router_client: Option<String>,
    /// Internal: run the `router` test's copy relay on --port, forwarding to this port
    /// (`src/relay.rs`).
    #[arg(long, hide = true, value_name = "TARGET_PORT")]
    pub relay: Option<u16>,
    /// Internal: the Glacier2 router of --router-client.
    #[arg(long, hide = true, value_name = "PROXY")]
    pub router: Option<String>,
    /// Connections for the `connections` test (default 19,000, or 2,000 with --quick). The
    /// server's file limit caps it; the report says when it did. Also the sessions of the
    /// `router-sessions` test (default 10,000, or 2,000 with --quick).
    #[arg(long)]
    pub connections: Option<usize>,
    /// The most threads and clients of the `scaling` stage: it measures 1…N clients against
    /// servers with 1…N threads (default: the machine's CPU count).
    #[arg(long, value_name = "N")]
    pub max_threads: Option<usize>,
    /// The most connections one load process of the `connections` test opens (default 10,000).
    #[arg(long, value_name = "N")]
    pub conn_per_process: Option<usize>,
    /// How long the `connections` test measures pings, in milliseconds (default 20,000, or
    /// 8,000 with --quick).
    #[arg(long, value_name = "MS")]
    pub conn_measure_ms: Option<u64>,
    /// The test certificates for the ssl tests (default: `../shared/certs` beside the
    /// repository); without them the ssl tests are left out, with a note.
    #[arg(long, value_name = "DIR")]
    pub certs: Option<PathBuf>,
    /// Internal: run one load process of the `connections` test against --port.
    #[arg(long, hide = true)]
    pub conn_load: bool,
    /// Internal: connections this load process opens.
    #[arg(long, hide = true, default_value_t = 0)]
    pub conn_count: usize,
    /// Internal: the source address of this load process.
    #[arg(long, hide = true, default_value = "127.0.0.1")]
    pub conn_source: std::net::Ipv4Addr,
    /// Internal: connections this load process opens at once.
    #[arg(long, hide = true, default_value_t = 500)]
    pub conn_burst: usize,
    /// Internal: time between two pings of one connection, in milliseconds.
    #[arg(long, hide = true, default_value_t = 4000)]
    pub conn_interval_ms: u64,
    /// Internal: serve floe on its default configuration (runtime, ACM, message size limit),
    /// not the benchmark's.
    #[arg(long, hide = true)]
    pub defaults: bool,
    /// Internal: serve a system (`raw`, `raw-scale`, `raw-tester`, `floe`, or the `tokio`
    /// baseline) on --port.
    #[arg(long, hide = true)]
    pub serve: Option<String>,
    /// Internal: run one system's client (`raw`, `floe`, or the `tokio` baseline) against a
    /// server already on --port.
    #[arg(long, hide = true)]
    pub client: Option<String>,
    /// Internal: the port to serve on.
    #[arg(long, hide = true, default_value_t = 0)]
    pub port: u16,
    /// Internal: the port to serve ssl on, beside --port.
    #[arg(long, hide = true)]
    pub ssl_port: Option<u16>,
    /// Internal: server runtime threads.
    #[arg(long, hide = true, default_value_t = 1)]
    pub threads: usize,
    /// Internal: the floe server runs exactly `--threads` threads (no connection runtimes).
    #[arg(long, hide = true)]
    pub exact_threads: bool,
    /// Internal: how long a `--client` measures each test, in milliseconds.
    #[arg(long, hide = true)]
    pub duration_ms: Option<u64>,
}

impl Args {
    /// Whether `--tests` names `name`, or is not given (every suite then runs).
    pub fn runs_suite(&self, name: &str) -> bool {
        self.tests.as_deref().is_none_or(|l| l.split(',').any(|n| n.trim() == name))
    }

    /// Whether `--tests` names `name` (for the suites that run only when asked for).
    pub fn names_suite(&self, name: &str) -> bool {
        self.tests.as_deref().is_some_and(|l| l.split(',').any(|n| n.trim() == name))
    }

    /// Whether `--peers` includes `peer` (`ice`, `tonic`).
    pub fn peer(&self, peer: &str) -> bool {
        self.peers.split(',').any(|p| p.trim() == peer)
    }
}
