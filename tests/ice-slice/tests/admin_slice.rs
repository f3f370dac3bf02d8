//! floe's own Slice definitions of the admin facets (`crates/floe/slice/admin.ice`, from
//! which the `floe` crate generates `floe::admin::slice`) against Ice 3.7's Slice files:
//! both are compiled with floe's Slice compiler, and every definition floe declares must have
//! the same wire-relevant shape as Ice's definition of the same name (kind, bases, compact id,
//! operations with their mode, return type, parameters in order with their types, direction
//! and tags, exception lists, members in order with types, tags and defaults, enumerators,
//! element / key / value types, and the `format:` and `preserve-slice` metadata).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use floe_slice::ast::{DefKind, Definition, Member, Operation, TypeRef};
use floe_slice::Unit;

fn ice_slice_dir() -> PathBuf {
    PathBuf::from(std::env::var("FLOE_ICE_SLICE_DIR").unwrap_or_else(|_| "/usr/share/ice/slice".into()))
}

fn floe_admin_ice() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../crates/floe/slice/admin.ice")
}

/// Ice's files that define what floe's admin.ice declares.
fn ice_unit() -> Unit {
    let root = ice_slice_dir();
    let files: Vec<PathBuf> = [
        "Ice/BuiltinSequences.ice",
        "Ice/Process.ice",
        "Ice/PropertiesAdmin.ice",
        "Ice/RemoteLogger.ice",
        "Ice/Metrics.ice",
    ]
    .iter()
    .map(|f| root.join(f))
    .collect();
    for f in &files {
        assert!(f.is_file(), "{} is missing (install zeroc-ice-slice: bash scripts/install-deps)", f.display());
    }
    let c = floe_slice::compile(&files, &[root]);
    let diagnostics = c.render_diagnostics();
    c.unit.unwrap_or_else(|| panic!("Ice's Slice files do not compile:\n{diagnostics}"))
}

fn ty(t: &TypeRef) -> String {
    match t {
        TypeRef::Builtin(b, _) => b.name().to_string(),
        TypeRef::Named { resolved, name, proxy, .. } => {
            format!("{}{}", resolved.as_deref().unwrap_or(name), if *proxy { "*" } else { "" })
        }
    }
}

fn opt_ty(t: &Option<TypeRef>) -> String {
    t.as_ref().map(ty).unwrap_or_else(|| "void".into())
}

fn resolved(r: &(String, floe_slice::Span, Option<String>)) -> String {
    r.2.clone().unwrap_or_else(|| r.0.clone())
}

/// The metadata that changes what goes on the wire.
fn wire_metadata(md: &[String]) -> Vec<String> {
    let mut v: Vec<String> =
        md.iter().filter(|m| m.starts_with("format:") || m.as_str() == "preserve-slice").cloned().collect();
    v.sort();
    v
}

fn members(ms: &[Member]) -> Vec<String> {
    ms.iter()
        .map(|m| {
            let default = match &m.default {
                None => "-".to_string(),
                Some(floe_slice::ast::ConstValue::Name(n, _)) => n.clone(),
                Some(v) => format!("{v:?}"),
            };
            format!("{} {} tag={:?} default={default} {:?}", ty(&m.ty), m.name, m.tag, wire_metadata(&m.metadata))
        })
        .collect()
}

fn operations(ops: &[Operation]) -> Vec<String> {
    ops.iter()
        .map(|o| {
            let params: Vec<String> = o
                .params
                .iter()
                .map(|p| format!("{}{} {} tag={:?}", if p.out { "out " } else { "" }, ty(&p.ty), p.name, p.tag))
                .collect();
            let throws: Vec<String> = o.throws.iter().map(resolved).collect();
            format!(
                "{}{} {}({}) ret_tag={:?} throws [{}] {:?}",
                if o.idempotent { "idempotent " } else { "" },
                opt_ty(&o.ret),
                o.name,
                params.join(", "),
                o.ret_tag,
                throws.join(", "),
                wire_metadata(&o.metadata)
            )
        })
        .collect()
}

/// One line per wire-relevant fact of a (non-module) definition.
fn describe(d: &Definition) -> Vec<String> {
    let mut v = vec![format!("local={} metadata={:?}", d.local, wire_metadata(&d.metadata))];
    match &d.kind {
        DefKind::Module(_) => v.push("module".into()),
        DefKind::Interface { bases, ops, forward } => {
            let bases: Vec<String> = bases.iter().map(resolved).collect();
            v.push(format!("interface forward={forward} extends [{}]", bases.join(", ")));
            v.extend(operations(ops));
        }
        DefKind::Class { base, implements, compact_id, members: ms, ops, forward, .. } => {
            let implements: Vec<String> = implements.iter().map(resolved).collect();
            v.push(format!(
                "class forward={forward} extends {:?} implements [{}] compact_id={compact_id:?}",
                base.as_ref().map(resolved),
                implements.join(", ")
            ));
            v.extend(members(ms));
            v.extend(operations(ops));
        }
        DefKind::Exception { base, members: ms } => {
            v.push(format!("exception extends {:?}", base.as_ref().map(resolved)));
            v.extend(members(ms));
        }
        DefKind::Struct { members: ms } => {
            v.push("struct".into());
            v.extend(members(ms));
        }
        DefKind::Enum { enumerators } => {
            v.push("enum".into());
            v.extend(enumerators.iter().map(|e| format!("{} = {}", e.name, e.value)));
        }
        DefKind::Sequence { elem } => v.push(format!("sequence<{}>", ty(elem))),
        DefKind::Dictionary { key, value } => v.push(format!("dictionary<{}, {}>", ty(key), ty(value))),
        DefKind::Const { ty: t, value, .. } => v.push(format!("const {} = {value:?}", ty(t))),
    }
    v
}

/// Every definition of `unit` that comes from its own files, by absolute name.
fn declared(unit: &Unit) -> BTreeMap<String, &Definition> {
    fn walk<'a>(scope: &str, defs: &'a [Definition], out: &mut BTreeMap<String, &'a Definition>) {
        for d in defs.iter().filter(|d| !d.included) {
            let name = format!("{scope}::{}", d.name);
            match &d.kind {
                DefKind::Module(inner) => walk(&name, inner, out),
                _ => {
                    out.insert(name, d);
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk("", &unit.defs, &mut out);
    out
}

/// Compares every definition of `floe` with Ice's of the same name; the differences found.
fn differences(floe: &Unit, ice: &Unit) -> Vec<String> {
    let mut diffs = Vec::new();
    for (name, d) in declared(floe) {
        let Some((_, theirs)) = ice.lookup(&name) else {
            diffs.push(format!("{name}: not defined by Ice"));
            continue;
        };
        let (ours, theirs) = (describe(d), describe(theirs));
        if ours != theirs {
            diffs.push(format!("{name}:\n  floe: {ours:#?}\n  Ice:  {theirs:#?}"));
        }
    }
    diffs
}

fn floe_unit_from(text: &str) -> Unit {
    let c = floe_slice::compile_str("admin.ice", text, &[]);
    let diagnostics = c.render_diagnostics();
    c.unit.unwrap_or_else(|| panic!("floe's admin.ice does not compile:\n{diagnostics}"))
}

fn floe_text() -> String {
    std::fs::read_to_string(floe_admin_ice()).expect("crates/floe/slice/admin.ice")
}

#[test]
fn floe_admin_slice_matches_ice() {
    let floe = floe_unit_from(&floe_text());
    let names: Vec<String> = declared(&floe).into_keys().collect();
    // The facets' interfaces and everything their operations use are declared.
    for expected in [
        "::Ice::Process",
        "::Ice::PropertiesAdmin",
        "::Ice::PropertyDict",
        "::Ice::LoggerAdmin",
        "::Ice::RemoteLogger",
        "::Ice::LogMessage",
        "::Ice::LogMessageType",
        "::Ice::LogMessageSeq",
        "::Ice::LogMessageTypeSeq",
        "::Ice::RemoteLoggerAlreadyAttachedException",
        "::Ice::StringSeq",
        "::IceMX::MetricsAdmin",
        "::IceMX::Metrics",
        "::IceMX::MetricsMap",
        "::IceMX::MetricsView",
        "::IceMX::MetricsFailures",
        "::IceMX::MetricsFailuresSeq",
        "::IceMX::StringIntDict",
        "::IceMX::UnknownMetricsView",
    ] {
        assert!(names.iter().any(|n| n == expected), "admin.ice does not declare {expected}: {names:?}");
    }
    let diffs = differences(&floe, &ice_unit());
    assert!(diffs.is_empty(), "floe's admin.ice differs from Ice 3.7's Slice:\n{}", diffs.join("\n"));
}

/// The comparison catches a change of parameter order, of a parameter's type, of an
/// exception list, of a member, of an enumerator's order and of the format metadata.
#[test]
fn a_changed_definition_is_caught() {
    let text = floe_text();
    let ice = ice_unit();
    let edits: [(&str, &str); 7] = [
        ("void writeMessage(string message, int fd);", "void writeMessage(int fd, string message);"),
        ("void writeMessage(string message, int fd);", "void writeMessage(string message, long fd);"),
        ("out string prefix);", "out string prefix, out optional(1) int extra);"),
        (
            "MetricsFailuresSeq getMapMetricsFailures(string view, string map)\n            throws UnknownMetricsView;",
            "MetricsFailuresSeq getMapMetricsFailures(string view, string map);",
        ),
        ("long timestamp;\n        /// The trace", "int timestamp;\n        /// The trace"),
        (
            "PrintMessage,\n        /// A trace, with a category.\n        TraceMessage,",
            "TraceMessage,\n        /// A trace, with a category.\n        PrintMessage,",
        ),
        ("[\"format:sliced\"]", "[\"format:compact\"]"),
    ];
    for (from, to) in edits {
        assert_eq!(text.matches(from).count(), 1, "admin.ice has not exactly one `{from}`");
        let changed = floe_unit_from(&text.replacen(from, to, 1));
        let diffs = differences(&changed, &ice);
        assert_eq!(diffs.len(), 1, "replacing `{from}` by `{to}`: {diffs:#?}");
    }
}
