//! The warning about unknown properties: a communicator logs one per property under a checked
//! prefix (`Ice.`, `IceSSL.`, `Floe.`…) whose name floe does not know, in the words of ZeroC
//! Ice, unless `Ice.Warn.UnknownProperties` is 0.

use std::sync::{Arc, Mutex};

use floe::admin::LogSink;
use floe::{Communicator, Properties};

/// A log sink that keeps the warnings.
#[derive(Default)]
struct Warnings(Mutex<Vec<String>>);

impl LogSink for Warnings {
    fn print(&self, _: &str) {}
    fn trace(&self, _: &str, _: &str) {}
    fn warning(&self, message: &str) {
        self.0.lock().unwrap().push(message.to_string());
    }
    fn error(&self, _: &str) {}
    fn prefix(&self) -> &str {
        ""
    }
}

const TYPOS: &[&str] = &["Ice.MessageSizeMaxx", "IceSSL.CertFil", "Floe.Runtime.BusyPol"];
const KNOWN: &[&str] = &[
    "Ice.ThreadPool.Server.Size",
    "MyAdapter.Endpoints",
    "IceGrid.Registry.Client.Endpoints",
    "Ice.Default.Locator.EndpointSelection",
    "IceMX.Metrics.ByOp.GroupBy",
    "Glacier2.Client.Endpoints",
    "IceStorm.TopicManager.Endpoints",
    "Floe.Runtime.Threads",
];

fn properties(names: &[&str]) -> Properties {
    let p = Properties::new();
    for name in names {
        p.set(name, "1");
    }
    p
}

/// The warnings a communicator with `props` logs when it is created.
fn warnings_of(props: Properties, known: &[&str]) -> Vec<String> {
    let sink = Arc::new(Warnings::default());
    let c = Communicator::builder().properties(props).logger(sink.clone()).known_properties(known).build().unwrap();
    c.destroy_blocking();
    let w = sink.0.lock().unwrap().clone();
    w
}

#[test]
fn typos_are_warned_once_and_known_names_never() {
    assert_eq!(properties(TYPOS).unknown(&[]), {
        let mut t = TYPOS.to_vec();
        t.sort();
        t
    });
    assert!(properties(KNOWN).unknown(&[]).is_empty());
    let all: Vec<&str> = TYPOS.iter().chain(KNOWN).copied().collect();
    let mut got = warnings_of(properties(&all), &[]);
    got.sort();
    let mut want: Vec<String> = TYPOS.iter().map(|n| format!("unknown property: `{n}'")).collect();
    want.sort();
    assert_eq!(got, want);
}

#[test]
fn program_names_and_the_switch_silence_it() {
    assert!(properties(TYPOS).unknown(&["Ice.MessageSizeMax*", "IceSSL.CertFil", "Floe.Runtime.*"]).is_empty());
    assert_eq!(
        warnings_of(properties(TYPOS), &["Ice.*", "Floe.Runtime.BusyPol"]),
        ["unknown property: `IceSSL.CertFil'"]
    );
    let p = properties(TYPOS);
    p.set("Ice.Warn.UnknownProperties", "0");
    assert!(warnings_of(p, &[]).is_empty());
}

/// The same names under ZeroC Ice's own runtime (Debian's python3-zeroc-ice, when
/// installed): floe's warnings are the texts after Ice's `warning: `. Ice 3.7 checks a name
/// when it is set, floe when the communicator is created.
#[test]
fn words_of_ice() {
    let names = ["Ice.MessageSizeMaxx", "IceSSL.CertFil", "ice.messagesizemax", "Ice.ThreadPool.Server.Size"];
    let script = format!(
        "import Ice\np = Ice.createProperties()\nfor n in {names:?}:\n    p.setProperty(n, '1')\n\
         d = Ice.InitializationData()\nd.properties = p\nIce.initialize(d).destroy()\n"
    );
    // Ice for Python (Debian's python3-zeroc-ice) is installed by scripts/install-deps.
    let out = std::process::Command::new("/usr/bin/python3").args(["-c", &script]).output().expect("python3 runs");
    assert!(out.status.success(), "Ice for Python failed: {}", String::from_utf8_lossy(&out.stderr));
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut ice: Vec<&str> = stderr.lines().filter_map(|l| l.split_once("warning: ").map(|(_, w)| w)).collect();
    ice.sort();
    let mut floe = warnings_of(properties(&names), &[]);
    floe.sort();
    assert_eq!(ice, floe, "Ice printed {stderr:?}");
    assert_eq!(ice.len(), 3, "Ice printed {stderr:?}");
}

/// Every `Floe.*` name that the runtime or a service spells in its source (outside test
/// modules) is in the table of known names, so that reading a new property without adding it
/// there fails here instead of warning every user who sets it.
#[test]
fn every_floe_property_the_sources_read_is_known() {
    let crates = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut files = Vec::new();
    let mut dirs = vec![crates];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().to_string();
            if path.is_dir() {
                // Sources only: each crate's src/, not its tests, benches or peers.
                if !["tests", "target", "benches", "examples", "peers", "golden"].contains(&name.as_str()) {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") && path.components().any(|c| c.as_os_str() == "src") {
                files.push(path);
            }
        }
    }
    let mut unknown = Vec::new();
    let mut seen = 0;
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for piece in code.split("\"Floe.").skip(1) {
            let end = piece.find(|c: char| !(c.is_ascii_alphanumeric() || c == '.')).unwrap_or(piece.len());
            let (name, next) = (&piece[..end], piece[end..].chars().next());
            // Whole names only (every Floe property has two segments at least): not the bases
            // or prefixes names are built from ("Floe.Registry", "Floe.Registry.ReplicaGroup.").
            if next != Some('"') || !name.contains('.') || name.ends_with('.') {
                continue;
            }
            seen += 1;
            let full = format!("Floe.{name}");
            if !floe::properties::is_known(&full) {
                unknown.push(format!("{full} ({})", file.display()));
            }
        }
    }
    assert!(seen >= 10, "only {seen} Floe.* names found: the scan is broken");
    assert!(unknown.is_empty(), "Floe.* names read but not in properties/known.rs:\n{}", unknown.join("\n"));
}
