//! The [`Suite`] trait, which every stage of the benchmark implements (the rate tests, the
//! cross pairs, locate, router, storm, router sessions, connections), the [`Context`] they run
//! in, and the run of the selected suites with its outputs: the terminal text, the JSON array,
//! the HTML page and the Markdown tables.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::cli::Args;
use crate::summary::StageSummary;

/// What every suite of a run shares: the command line, the Ice C++ peer when it was built,
/// the machine, and when the run started.
#[derive(Debug)]
pub struct Context {
    /// The command line.
    pub args: Args,
    /// Where the Ice C++ peer (`peers/ice`) was built, when `--peers` includes `ice` and it
    /// could be built.
    pub ice_dir: Option<PathBuf>,
    /// Why the Ice C++ peer is missing, when it was asked for and could not be built.
    pub ice_note: Option<String>,
    /// Why the ssl tests cannot run (no test certificates), if they cannot.
    pub certs_note: Option<String>,
    /// The machine the run is taken on (with the `--floe-property` settings, if any).
    pub machine: String,
    /// When the run started.
    pub started: Instant,
}

impl Context {
    /// The context of a run of `args`: finds the test certificates and builds the Ice peer
    /// if the run includes it.
    pub fn new(args: Args) -> Context {
        let certs_note = crate::tls::set_certs(&args.certs.clone().unwrap_or_else(crate::tls::default_certs)).err();
        let (mut ice_dir, mut ice_note) = (None, None);
        if args.peer("ice") {
            match crate::proc::build_cpp_peer("ice", "Ice C++ peer") {
                Ok(d) => ice_dir = Some(d),
                Err(e) => ice_note = Some(format!("ice-cpp skipped: {e}")),
            }
        }
        let mut machine = crate::report::machine_description();
        if !args.floe_properties.is_empty() {
            // Every report says when floe did not run on its defaults.
            machine.push_str(&format!(", floe with {}", args.floe_properties.join(" ")));
        }
        Context { args, ice_dir, ice_note, certs_note, machine, started: Instant::now() }
    }

    /// The rounds of the stages with the Ice peer (cross pairs, router, storm): `--runs`, 3 by
    /// default, at most 5.
    pub fn stage_rounds(&self) -> usize {
        self.args.runs.unwrap_or(3).clamp(1, 5)
    }

    /// The Ice C++ peer's directory, if it was built.
    pub fn ice_dir(&self) -> Option<&Path> {
        self.ice_dir.as_deref()
    }
}

/// One stage of the benchmark: what it measures, how, and how it reports it.
pub trait Suite {
    /// What a run of the suite measured.
    type Results;

    /// The suite's name (as `--tests` selects it).
    fn name(&self) -> &'static str;

    /// The heading of the suite's section in the HTML report.
    fn title(&self) -> &'static str;

    /// Whether this run includes the suite: by default, when `--tests` names it or is not
    /// given.
    fn selected(&self, ctx: &Context) -> bool {
        ctx.args.runs_suite(self.name())
    }

    /// The systems the suite measures in this run (servers, clients, registries, routers or
    /// services), by the names its table and records give them.
    fn systems(&self, ctx: &Context) -> Vec<String>;

    /// Runs the suite's rounds (its progress goes to stderr).
    fn run(&self, ctx: &Context) -> Self::Results;

    /// The suite's table (with its notes), as the terminal and the Markdown show it.
    fn table(&self, ctx: &Context, results: &Self::Results) -> String;

    /// What the run prints on stdout for the suite: its table after a blank line.
    fn terminal(&self, ctx: &Context, results: &Self::Results) -> String {
        format!("\n{}\n", self.table(ctx, results))
    }

    /// The suite's part of the HTML report: its charts, or its table under its title.
    fn charts(&self, ctx: &Context, results: &Self::Results) -> String {
        section(self.title(), &self.table(ctx, results))
    }

    /// The suite's part of the report's summary: floe's ratio to each peer per test, with the
    /// spread of the per-run ratios, and the stage's verdict line. By default none.
    fn summary(&self, _ctx: &Context, _results: &Self::Results) -> Option<StageSummary> {
        None
    }

    /// The suite's records of the `--json` array.
    fn records(&self, results: &Self::Results) -> Vec<serde_json::Value>;

    /// The suite's part of the `--markdown` file.
    fn markdown(&self, ctx: &Context, results: &Self::Results) -> String {
        format!("\n{}", self.table(ctx, results))
    }
}

/// A section of the HTML report: `text` (a suite's table) under the heading `title`.
pub fn section(title: &str, text: &str) -> String {
    format!("<h2>{title}</h2>\n{}", table_html(text))
}

/// A suite's table (its text, as the terminal shows it) in the HTML report, below its charts.
pub fn table_html(text: &str) -> String {
    format!("<pre>{}</pre>\n", crate::report::html_escape(text))
}

/// A suite's section of the HTML report: its heading, its charts, then its table.
pub fn charts_section(title: &str, charts: &str, table: &str) -> String {
    format!("<h2>{title}</h2>\n{charts}{}", table_html(table))
}

/// A suite that has run, with its results: what the run's outputs are made of.
pub trait Finished {
    /// The suite's part of the HTML report.
    fn charts(&self) -> String;
    /// The suite's part of the report's summary, if it has one.
    fn summary(&self) -> Option<StageSummary>;
    /// The suite's JSON records.
    fn records(&self) -> Vec<serde_json::Value>;
    /// The suite's part of the Markdown file.
    fn markdown(&self) -> String;
}

/// A suite and its results.
struct Done<'a, S: Suite> {
    suite: S,
    ctx: &'a Context,
    results: S::Results,
}

impl<S: Suite> Finished for Done<'_, S> {
    fn charts(&self) -> String {
        self.suite.charts(self.ctx, &self.results)
    }
    fn summary(&self) -> Option<StageSummary> {
        self.suite.summary(self.ctx, &self.results)
    }
    fn records(&self) -> Vec<serde_json::Value> {
        self.suite.records(&self.results)
    }
    fn markdown(&self) -> String {
        self.suite.markdown(self.ctx, &self.results)
    }
}

/// A suite with results it did not run for: a report from synthetic results.
#[cfg(test)]
pub(crate) fn finished<'a, S: Suite + 'a>(suite: S, ctx: &'a Context, results: S::Results) -> Box<dyn Finished + 'a> {
    Box::new(Done { suite, ctx, results })
}

/// Runs `suite` if the run includes it and prints its terminal text.
pub fn run_suite<'a, S: Suite + 'a>(suite: S, ctx: &'a Context) -> Option<Box<dyn Finished + 'a>> {
    if !suite.selected(ctx) {
        return None;
    }
    let results = suite.run(ctx);
    print!("{}", suite.terminal(ctx, &results));
    Some(Box::new(Done { suite, ctx, results }))
}

/// The HTML report of the suites that ran, on `machine`: the summary (the verdicts and one
/// chart of floe's ratios to its peers), then each suite's charts and tables.
pub fn html_page(machine: &str, done: &[Box<dyn Finished + '_>]) -> String {
    let mut page = String::from(crate::report::HTML_HEAD);
    page.push_str(&format!(
        "<h1>floe-bench</h1><p>{}; medians over interleaved runs.</p>\n",
        crate::report::html_escape(machine)
    ));
    let stages: Vec<StageSummary> = done.iter().filter_map(|d| d.summary()).collect();
    page.push_str(&crate::summary::html(&stages));
    for d in done {
        page.push_str(&d.charts());
    }
    page.push_str("</body></html>\n");
    page
}

/// Writes the outputs of the suites that ran: the `--json` array, the `--markdown` file and
/// the HTML report (`--html`, by default target/floe-bench/report.html).
pub fn write_outputs(ctx: &Context, done: &[Box<dyn Finished + '_>]) {
    let args = &ctx.args;
    if let Some(path) = &args.json {
        let records: Vec<serde_json::Value> = done.iter().flat_map(|d| d.records()).collect();
        if let Err(e) = std::fs::write(path, crate::json::array(&records)) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    if let Some(path) = &args.markdown {
        let md: String = done.iter().map(|d| d.markdown()).collect();
        if let Err(e) = std::fs::write(path, md) {
            eprintln!("cannot write {}: {e}", path.display());
        }
    }
    let html = args
        .html
        .clone()
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/floe-bench/report.html"));
    if let Some(dir) = html.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    match std::fs::write(&html, html_page(&ctx.machine, done)) {
        Ok(()) => println!("HTML report: {}", html.display()),
        Err(e) => eprintln!("cannot write {}: {e}", html.display()),
    }
}
