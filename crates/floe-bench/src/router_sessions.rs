//! The `router-sessions` test (not in the default run): `--connections` sessions held on
//! floe-router and on glacier2router, their creation rate, the router's RSS per session, and
//! the Ice C++ client's calls through the router before and while they are held.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::report::figure_cell as cell;
use crate::router::{client, client_command, floe_router_binary, start, start_router, Pair, RoutePath};
use crate::stats::round_to;
use crate::charts::{Group, Spread};
use crate::suite::{Context, Suite};
use crate::summary::{of_runs, Ratio, StageSummary};

/// What the `router-sessions` test measured for one router.
#[derive(Debug, Clone)]
pub(crate) struct SessionsOutcome {
    /// The router's name.
    pub(crate) router: &'static str,
    /// Sessions asked for (after lowering to the router's file limit).
    pub(crate) n: usize,
    /// Sessions created (`createSession` answered with success).
    pub(crate) created: usize,
    /// Seconds from the first connect to the last session created.
    pub(crate) create_s: f64,
    /// The router's RSS before and with the sessions, in kB.
    pub(crate) rss_kb: (u64, u64),
    /// The Ice C++ client's twoway ping (calls/s, p50 µs) and callback (calls/s) through the
    /// router, before the sessions were created and while they are held.
    pub(crate) probe_before: Option<(f64, f64, f64)>,
    /// The same, while the sessions are held.
    pub(crate) probe_during: Option<(f64, f64, f64)>,
    /// Connects or sessions that failed.
    pub(crate) errors: usize,
    /// The first of those errors.
    pub(crate) first_error: Option<String>,
}

impl SessionsOutcome {
    fn per_session_bytes(&self) -> f64 {
        if self.created == 0 {
            return 0.0;
        }
        (self.rss_kb.1.saturating_sub(self.rss_kb.0) * 1024) as f64 / self.created as f64
    }
}

/// The `createSession("u<i>", "x")` request of the router on identity `Glacier2/router`.
fn create_session_request(i: usize) -> Vec<u8> {
    use floe::encoding::{EncodingVersion, Identity};
    use floe::protocol::request::encode_request;
    use floe::protocol::{OperationMode, RequestPrefix};
    let prefix =
        RequestPrefix::new(&Identity::with_category("Glacier2", "router"), "", "createSession", OperationMode::Normal);
    encode_request(1, &prefix, &Default::default(), EncodingVersion::V1_1, |e| {
        e.write_str(&format!("u{i}"));
        e.write_str("x");
    })
    .to_vec()
}

/// Opens one connection from `source`, reads the router's ValidateConnection and creates a
/// session; returns the connection, to be held.
async fn open_session(port: u16, source: std::net::Ipv4Addr, i: usize) -> Result<tokio::net::TcpStream, String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let socket = tokio::net::TcpSocket::new_v4().map_err(|e| e.to_string())?;
    socket.bind((source, 0).into()).map_err(|e| format!("bind {source}: {e}"))?;
    let mut s = socket.connect(([127, 0, 0, 1], port).into()).await.map_err(|e| format!("connect: {e}"))?;
    let _ = s.set_nodelay(true);
    let mut header = [0u8; 14];
    s.read_exact(&mut header).await.map_err(|e| format!("validate: {e}"))?;
    s.write_all(&create_session_request(i)).await.map_err(|e| format!("createSession: {e}"))?;
    s.read_exact(&mut header).await.map_err(|e| format!("createSession reply: {e}"))?;
    let size = i32::from_le_bytes([header[10], header[11], header[12], header[13]]);
    if header[8] != 2 || !(19..=1 << 20).contains(&size) {
        return Err(format!("createSession: unexpected message {header:?}"));
    }
    let mut body = vec![0u8; size as usize - 14];
    s.read_exact(&mut body).await.map_err(|e| format!("createSession reply: {e}"))?;
    if body[4] != 0 {
        return Err(format!("createSession failed: reply status {}", body[4]));
    }
    Ok(s)
}

/// Twoway calls/s, twoway p50 (µs) and callbacks/s of the Ice C++ client through the router.
fn probe(client_exe: &Path, server_port: u16, router_port: u16) -> Option<(f64, f64, f64)> {
    let command = client_command(Pair::Ice, client_exe, server_port, Some(router_port), 300, None).ok()?;
    let values = client(command, 300).ok()?;
    let get = |n: &str| values.iter().find(|(k, _)| k == n).map(|(_, v)| *v);
    Some((get("twoway")?, get("twoway_p50")?, get("callback")?))
}

/// The `router-sessions` test: `n` sessions on one router (floe-router, then glacier2router),
/// opened 500 at a time from source addresses 127.<k>.0.x, each with its own connection and
/// `createSession`, then held while the Ice C++ client measures calls through the router.
pub(crate) fn run_sessions(n: usize, quick: bool) -> (Vec<SessionsOutcome>, Vec<String>) {
    let mut notes = Vec::new();
    let mut outcomes = Vec::new();
    let setup = (|| {
        let tester = crate::cross::build_tester_peer()?;
        let client = crate::proc::build_cpp_peer("ice-router", "Ice C++ router client")?.join("ice-router-client");
        Ok::<_, String>((tester, client, floe_router_binary()?))
    })();
    let (tester, client_exe, floe_router) = match setup {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("router-sessions skipped: {e}"));
            return (outcomes, notes);
        }
    };
    let server_port = crate::proc::free_port();
    let mut server_cmd = Command::new(tester.join("ice-tester-server"));
    server_cmd.arg(server_port.to_string());
    let _server = match start(server_cmd, "ice-tester-server") {
        Ok(s) => s,
        Err(e) => {
            notes.push(format!("router-sessions skipped: {e}"));
            return (outcomes, notes);
        }
    };
    let mut routers = vec![RoutePath::Floe];
    if !quick {
        routers.push(RoutePath::Glacier2);
    }
    for (k, path) in routers.into_iter().enumerate() {
        let (router, port) = match start_router(path, &floe_router) {
            Ok(r) => r,
            Err(e) => {
                notes.push(e);
                continue;
            }
        };
        let pid = router.child.id();
        let mut n = n;
        if let Some(limit) = crate::proc::fd_limit_of(pid) {
            let room = limit.saturating_sub(100) as usize;
            if n > room {
                notes.push(format!("{}: {n} sessions asked, its file limit allows {room}", path.name()));
                n = room;
            }
        }
        let probe_before = probe(&client_exe, server_port, port);
        std::thread::sleep(Duration::from_millis(300));
        let rss_before = crate::proc::rss_kb(pid);
        let runtime = match tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                notes.push(e.to_string());
                continue;
            }
        };
        let second_octet = 100 + 10 * k as u8;
        let started = Instant::now();
        let (held, errors, first_error) = runtime.block_on(async {
            let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(500));
            let mut tasks = Vec::with_capacity(n);
            for i in 0..n {
                // 5,000 connections per source address at most.
                let source = std::net::Ipv4Addr::new(127, second_octet, 0, 10 + (i / 5_000) as u8);
                let gate = gate.clone();
                tasks.push(tokio::spawn(async move {
                    let _permit = gate.acquire_owned().await;
                    tokio::time::timeout(Duration::from_secs(30), open_session(port, source, i))
                        .await
                        .unwrap_or_else(|_| Err("no session within 30 s".into()))
                }));
            }
            let mut held = Vec::with_capacity(n);
            let mut errors = 0;
            let mut first_error = None;
            for t in tasks {
                match t.await {
                    Ok(Ok(s)) => held.push(s),
                    Ok(Err(e)) => {
                        errors += 1;
                        first_error.get_or_insert(e);
                    }
                    Err(e) => {
                        errors += 1;
                        first_error.get_or_insert(e.to_string());
                    }
                }
            }
            (held, errors, first_error)
        });
        let create_s = started.elapsed().as_secs_f64();
        std::thread::sleep(Duration::from_millis(500));
        let rss_after = crate::proc::rss_kb(pid);
        let probe_during = probe(&client_exe, server_port, port);
        let outcome = SessionsOutcome {
            router: path.name(),
            n,
            created: held.len(),
            create_s,
            rss_kb: (rss_before, rss_after),
            probe_before,
            probe_during,
            errors,
            first_error,
        };
        eprintln!(
            "router-sessions {}: {}/{} sessions in {:.2} s, RSS {} → {} kB ({:.0} B/session), {} errors",
            outcome.router,
            outcome.created,
            outcome.n,
            outcome.create_s,
            rss_before,
            rss_after,
            outcome.per_session_bytes(),
            errors
        );
        outcomes.push(outcome);
        runtime.block_on(async { drop(held) });
        drop(runtime);
        drop(router);
    }
    (outcomes, notes)
}

/// The Markdown table of the `router-sessions` test.
pub(crate) fn sessions_table(outcomes: &[SessionsOutcome], notes: &[String]) -> String {
    let mut s = String::new();
    let n = outcomes.iter().map(|o| o.n).max().unwrap_or(0);
    let _ = writeln!(
        s,
        "router sessions: {n} sessions (one connection and createSession each, 500 at a time), held while the Ice C++ client calls through the router\n"
    );
    s.push_str("| router | sessions | created in (s) | sessions/s | RSS before → with (MB) | RSS per session (bytes) | twoway calls/s, p50 µs before | with the sessions | callbacks/s before | with the sessions | errors |\n");
    s.push_str("|---|---|---|---|---|---|---|---|---|---|---|\n");
    let probe = |p: Option<(f64, f64, f64)>| match p {
        Some((c, l, _)) => format!("{}, {}", cell(Some(c)), cell(Some(l))),
        None => "–".into(),
    };
    for o in outcomes {
        let _ = writeln!(
            s,
            "| {} | {} / {} | {:.2} | {:.0} | {:.1} → {:.1} | {:.0} | {} | {} | {} | {} | {} |",
            o.router,
            o.created,
            o.n,
            o.create_s,
            o.created as f64 / o.create_s.max(1e-9),
            o.rss_kb.0 as f64 / 1024.0,
            o.rss_kb.1 as f64 / 1024.0,
            o.per_session_bytes(),
            probe(o.probe_before),
            probe(o.probe_during),
            cell(o.probe_before.map(|p| p.2)),
            cell(o.probe_during.map(|p| p.2)),
            o.errors
        );
        if let Some(e) = &o.first_error {
            let _ = writeln!(s, "note: {}: first error: {e}", o.router);
        }
    }
    for n in notes {
        let _ = writeln!(s, "note: {n}");
    }
    s
}

/// The JSON record of one router's sessions.
#[derive(Debug, Serialize)]
struct Record {
    system: &'static str,
    test: &'static str,
    metric: &'static str,
    sessions: usize,
    created: usize,
    create_s: f64,
    rss_per_session_bytes: f64,
    errors: usize,
}

/// JSON records of the `router-sessions` test.
pub(crate) fn sessions_json(outcomes: &[SessionsOutcome]) -> Vec<serde_json::Value> {
    outcomes
        .iter()
        .map(|o| {
            crate::json::record(&Record {
                system: o.router,
                test: "router-sessions",
                metric: "router-sessions",
                sessions: o.n,
                created: o.created,
                create_s: round_to(o.create_s, 3),
                rss_per_session_bytes: round_to(o.per_session_bytes(), 0),
                errors: o.errors,
            })
        })
        .collect()
}

/// The router-sessions test, run when `--tests` names it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RouterSessions;

/// The stage's charts: each router's sessions created per second and memory per session,
/// and its twoway pings before and with the sessions held.
fn charts(outcomes: &[SessionsOutcome]) -> String {
    type Figure = fn(&SessionsOutcome) -> Option<f64>;
    let by_router = |figures: &[Figure]| -> Vec<Group> {
        outcomes
            .iter()
            .map(|o| Group {
                name: o.router.to_string(),
                values: figures.iter().map(|f| f(o).map(|v| Spread { mid: v, low: v, high: v })).collect(),
            })
            .collect()
    };
    let one = |label: &str| [label.to_string()];
    let rate: Figure = |o| (o.create_s > 0.0).then(|| o.created as f64 / o.create_s);
    let mut s = crate::charts::bars(
        "Router sessions: sessions created per second",
        "sessions/s",
        &one("createSession"),
        &by_router(&[rate]),
    );
    let memory: Figure = |o| Some(o.per_session_bytes());
    s.push_str(&crate::charts::bars(
        "Router sessions: router memory per session",
        "bytes",
        &one("RSS per session"),
        &by_router(&[memory]),
    ));
    let (before, during): (Figure, Figure) = (|o| o.probe_before.map(|p| p.0), |o| o.probe_during.map(|p| p.0));
    s.push_str(&crate::charts::bars(
        "Router sessions: twoway pings through the router",
        "calls/s",
        &["before the sessions".to_string(), "with the sessions held".to_string()],
        &by_router(&[before, during]),
    ));
    s
}

/// floe-router's memory per session against glacier2router's, turned over (less is better).
fn ratios(outcomes: &[SessionsOutcome]) -> Vec<Ratio> {
    let of = |name: &str| outcomes.iter().filter(|o| o.router == name).map(|o| o.per_session_bytes()).collect::<Vec<f64>>();
    let (f, g) = (of(RoutePath::Floe.name()), of(RoutePath::Glacier2.name()));
    of_runs("RSS per session", "glacier2router", &f, &g).and_then(Ratio::inverted).into_iter().collect()
}

impl Suite for RouterSessions {
    type Results = (Vec<SessionsOutcome>, Vec<String>);

    fn name(&self) -> &'static str {
        "router-sessions"
    }

    fn title(&self) -> &'static str {
        "Router sessions"
    }

    fn selected(&self, ctx: &Context) -> bool {
        ctx.args.names_suite(self.name())
    }

    fn systems(&self, ctx: &Context) -> Vec<String> {
        let mut routers = vec![RoutePath::Floe.name().to_string()];
        if !ctx.args.quick {
            routers.push(RoutePath::Glacier2.name().to_string());
        }
        routers
    }

    fn run(&self, ctx: &Context) -> Self::Results {
        let n = ctx.args.connections.unwrap_or(if ctx.args.quick { 2_000 } else { 10_000 });
        run_sessions(n, ctx.args.quick)
    }

    fn table(&self, _ctx: &Context, (outcomes, notes): &Self::Results) -> String {
        sessions_table(outcomes, notes)
    }

    fn charts(&self, ctx: &Context, r: &Self::Results) -> String {
        crate::suite::charts_section(self.title(), &charts(&r.0), &self.table(ctx, r))
    }

    fn summary(&self, _ctx: &Context, (outcomes, _): &Self::Results) -> Option<StageSummary> {
        StageSummary::new("router sessions", "figures", ratios(outcomes))
    }

    fn records(&self, (outcomes, _): &Self::Results) -> Vec<serde_json::Value> {
        sessions_json(outcomes)
    }
}
