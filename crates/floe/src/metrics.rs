//! IceMX metrics views, configured by the `IceMX.Metrics.<view>.*` properties.
//!
//! A view groups what it measures into maps (floe gathers the `Dispatch` map); each map
//! groups its objects into entries by the `GroupBy` attributes, keeps only the objects whose
//! attributes match every `Accept.<attr>` expression and none of the `Reject.<attr>` ones,
//! and keeps at most `RetainDetached` entries that count nothing at the moment. `Map.<map>.*`
//! overrides the view's settings for one map. `Disabled=1` makes the view start disabled.
//!
//! The same observers feed the Prometheus endpoint's series when
//! `Floe.Metrics.Prometheus.Endpoints` is set ([`crate::prometheus`]).
//!
//! The hot paths look at [`Metrics::active`] (one atomic load) and do nothing else when no
//! view is enabled and there is no Prometheus endpoint.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use crate::prometheus::{Labels, Series};
use crate::properties::Properties;

/// The maps floe gathers, with the attributes each one's entries may be grouped and filtered by
/// (besides `context.<key>`).
const MAPS: &[(&str, &[&str])] = &[(
    "Dispatch",
    &[
        "parent",
        "id",
        "operation",
        "identity",
        "facet",
        "encodingVersion",
        "mode",
        "requestId",
        "incoming",
        "adapterName",
        "connectionId",
        "endpoint",
        "endpointType",
        "endpointIsDatagram",
        "endpointIsSecure",
        "endpointTimeout",
        "endpointCompress",
        "endpointHost",
        "endpointPort",
        "localHost",
        "localPort",
        "remoteHost",
        "remotePort",
        "mcastHost",
        "mcastPort",
    ],
)];

/// A mistake in a view's configuration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ConfigError {
    /// A `GroupBy`, `Accept` or `Reject` names an attribute the map does not have.
    #[error("unknown attribute `{attribute}` for map {map}")]
    UnknownAttribute {
        /// The map.
        map: String,
        /// The attribute.
        attribute: String,
    },
    /// An `Accept` or `Reject` value is not a regular expression.
    #[error("invalid regular expression in {property}: {message}")]
    InvalidRegex {
        /// The property.
        property: String,
        /// What is wrong with it.
        message: String,
    },
    /// A `RetainDetached` value is not a number.
    #[error("invalid number in {0}")]
    InvalidNumber(String),
}

/// One piece of a `GroupBy`: an attribute, or literal text between attributes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Part {
    /// The value of an attribute.
    Attribute(String),
    /// Text copied as is.
    Literal(String),
}

/// Splits a `GroupBy` value as Ice does: runs of letters, digits and dots are attribute
/// names, anything else is a separator. `none` (or an empty value) groups everything in one
/// entry with an empty id.
pub fn parse_group_by(value: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut in_attribute = false;
    for c in value.chars() {
        let attribute_char = c.is_ascii_alphanumeric() || c == '.';
        if attribute_char != in_attribute && !current.is_empty() {
            let text = std::mem::take(&mut current);
            parts.push(if in_attribute { Part::Attribute(text) } else { Part::Literal(text) });
        }
        in_attribute = attribute_char;
        current.push(c);
    }
    if !current.is_empty() {
        parts.push(if in_attribute { Part::Attribute(current) } else { Part::Literal(current) });
    }
    if parts == [Part::Attribute("none".into())] {
        parts.clear();
    }
    parts
}

fn known(map: &str, attribute: &str) -> bool {
    attribute.strip_prefix("context.").is_some_and(|k| !k.is_empty())
        || MAPS.iter().any(|(m, attrs)| *m == map && attrs.contains(&attribute))
}

/// What an object measured by a map looks like to `GroupBy`, `Accept` and `Reject`.
pub trait Attributes {
    /// The attribute's value; `None` when the object does not have it.
    fn attribute(&self, name: &str) -> Option<String>;
}

/// The settings of one map of one view.
#[derive(Debug, Clone)]
pub struct MapConfig {
    group_by: Vec<Part>,
    accept: Vec<(String, regex::Regex)>,
    reject: Vec<(String, regex::Regex)>,
    retain_detached: usize,
}

impl MapConfig {
    /// Reads the settings of map `map` from `props`, the properties under a view's prefix
    /// (`GroupBy`, `Accept.<attr>`, ... with the prefix removed); `map_props` override them.
    pub fn parse(
        map: &str,
        props: &BTreeMap<String, String>,
        map_props: &BTreeMap<String, String>,
    ) -> Result<MapConfig, ConfigError> {
        let get = |name: &str| map_props.get(name).or_else(|| props.get(name)).cloned();
        let group_by = parse_group_by(&get("GroupBy").unwrap_or_else(|| "id".into()));
        for part in &group_by {
            if let Part::Attribute(a) = part {
                if !known(map, a) {
                    return Err(ConfigError::UnknownAttribute { map: map.into(), attribute: a.clone() });
                }
            }
        }
        let retain_detached = match get("RetainDetached") {
            None => 10,
            Some(v) => v.trim().parse::<usize>().map_err(|_| ConfigError::InvalidNumber("RetainDetached".into()))?,
        };
        let filters = |kind: &str| -> Result<Vec<(String, regex::Regex)>, ConfigError> {
            // The map's own filters replace the view's for the same attribute.
            let mut merged: BTreeMap<String, String> = BTreeMap::new();
            for source in [props, map_props] {
                for (k, v) in source {
                    if let Some(attr) = k.strip_prefix(kind).and_then(|r| r.strip_prefix('.')) {
                        merged.insert(attr.to_string(), v.clone());
                    }
                }
            }
            merged
                .into_iter()
                .map(|(attr, pattern)| {
                    if !known(map, &attr) {
                        return Err(ConfigError::UnknownAttribute { map: map.into(), attribute: attr });
                    }
                    let re = regex::Regex::new(&format!("^(?:{pattern})$")).map_err(|e| ConfigError::InvalidRegex {
                        property: format!("{kind}.{attr}"),
                        message: e.to_string(),
                    })?;
                    Ok((attr, re))
                })
                .collect()
        };
        Ok(MapConfig { accept: filters("Accept")?, reject: filters("Reject")?, group_by, retain_detached })
    }

    /// The id of the entry `object` goes to, or `None` when the filters leave it out.
    pub fn key(&self, object: &dyn Attributes) -> Option<String> {
        for (attr, re) in &self.accept {
            if !re.is_match(&object.attribute(attr)?) {
                return None;
            }
        }
        for (attr, re) in &self.reject {
            if object.attribute(attr).is_some_and(|v| re.is_match(&v)) {
                return None;
            }
        }
        let mut id = String::new();
        for part in &self.group_by {
            match part {
                Part::Literal(text) => id.push_str(text),
                Part::Attribute(a) => id.push_str(&object.attribute(a).unwrap_or_default()),
            }
        }
        Some(id)
    }
}

/// The counters of one entry of a map.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Entry {
    /// The entry's id (its `GroupBy` value).
    pub id: String,
    /// Objects counted since the view was enabled.
    pub total: i64,
    /// Objects being counted now.
    pub current: i32,
    /// The lifetimes of the objects counted, in microseconds.
    pub total_lifetime: i64,
    /// Failures by exception type id.
    pub failures: BTreeMap<String, i32>,
    /// Dispatches that raised a user exception.
    pub user_exception: i32,
    /// Bytes of parameters.
    pub size: i64,
    /// Bytes of results.
    pub reply_size: i64,
}

/// The entries of one map of one view.
#[derive(Debug)]
pub struct Map {
    config: MapConfig,
    entries: BTreeMap<String, Entry>,
    /// Ids of entries that became detached (`current` 0), oldest first.
    detached: VecDeque<String>,
}

impl Map {
    /// An empty map.
    pub fn new(config: MapConfig) -> Map {
        Map { config, entries: BTreeMap::new(), detached: VecDeque::new() }
    }

    /// Counts a new object; its entry's id, or `None` when filtered out.
    pub fn begin(&mut self, object: &dyn Attributes) -> Option<String> {
        let id = self.config.key(object)?;
        let entry = self.entries.entry(id.clone()).or_insert_with(|| Entry { id: id.clone(), ..Entry::default() });
        entry.total += 1;
        entry.current += 1;
        Some(id)
    }

    /// Ends an object begun in entry `id`, adding what it measured.
    pub fn end(&mut self, id: &str, outcome: &Outcome) {
        let Some(entry) = self.entries.get_mut(id) else { return };
        entry.current -= 1;
        entry.total_lifetime += outcome.lifetime_us;
        entry.size += outcome.size;
        entry.reply_size += outcome.reply_size;
        if outcome.user_exception {
            entry.user_exception += 1;
        }
        if let Some(failure) = &outcome.failure {
            *entry.failures.entry(failure.clone()).or_insert(0) += 1;
        }
        if entry.current == 0 {
            self.detached.push_back(id.to_string());
            while self.detached.len() > self.config.retain_detached {
                let Some(old) = self.detached.pop_front() else { break };
                if self.entries.get(&old).is_some_and(|e| e.current == 0) && !self.detached.contains(&old) {
                    self.entries.remove(&old);
                }
            }
        }
    }

    /// The entries, by id.
    pub fn entries(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    /// Entry `id`.
    pub fn entry(&self, id: &str) -> Option<&Entry> {
        self.entries.get(id)
    }
}

/// What a finished object measured.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Its lifetime in microseconds.
    pub lifetime_us: i64,
    /// Bytes of parameters.
    pub size: i64,
    /// Bytes of results.
    pub reply_size: i64,
    /// It raised a user exception.
    pub user_exception: bool,
    /// The type id of the exception it failed with.
    pub failure: Option<String>,
}

/// One view: its maps by name.
#[derive(Debug)]
pub struct View {
    /// Whether it gathers.
    pub enabled: bool,
    /// Its maps.
    pub maps: BTreeMap<String, Map>,
}

/// The views of a communicator.
pub struct Metrics {
    active: AtomicBool,
    /// Some enabled view gathers something (`active` also counts the Prometheus endpoint).
    views_active: AtomicBool,
    views: Mutex<BTreeMap<String, View>>,
    /// The Prometheus endpoint's series, when it is configured.
    prometheus: Option<Arc<Series>>,
}

/// Reads every view from the `IceMX.Metrics.` properties; mistakes are returned beside the
/// views (the map concerned is left out).
pub fn parse_views(props: &Properties) -> (BTreeMap<String, View>, Vec<String>) {
    let all = props.with_prefix("IceMX.Metrics.");
    let mut by_view: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
    for (k, v) in &all {
        let rest = &k["IceMX.Metrics.".len()..];
        if let Some((view, setting)) = rest.split_once('.') {
            by_view.entry(view.to_string()).or_default().insert(setting.to_string(), v.clone());
        }
    }
    let mut views = BTreeMap::new();
    let mut warnings = Vec::new();
    for (name, settings) in by_view {
        let mut map_settings: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        let mut view_settings = BTreeMap::new();
        for (k, v) in settings {
            match k.strip_prefix("Map.").and_then(|r| r.split_once('.')) {
                Some((map, s)) => {
                    map_settings.entry(map.to_string()).or_default().insert(s.to_string(), v);
                }
                None => {
                    if !matches!(k.as_str(), "GroupBy" | "RetainDetached" | "Disabled")
                        && !k.starts_with("Accept.")
                        && !k.starts_with("Reject.")
                    {
                        warnings.push(format!("IceMX.Metrics.{name}.{k}: unknown property"));
                    }
                    view_settings.insert(k, v);
                }
            }
        }
        let disabled = view_settings.get("Disabled").is_some_and(|v| v.trim().parse::<i64>().unwrap_or(0) > 0);
        // Without `Map.` settings every map is gathered; with some, only those maps.
        let wanted: Vec<String> = if map_settings.is_empty() {
            MAPS.iter().map(|(m, _)| m.to_string()).collect()
        } else {
            map_settings.keys().cloned().collect()
        };
        let mut maps = BTreeMap::new();
        let empty = BTreeMap::new();
        for map in wanted {
            if !MAPS.iter().any(|(m, _)| *m == map) {
                warnings.push(format!("IceMX.Metrics.{name}.Map.{map}: floe does not gather map {map}"));
                continue;
            }
            match MapConfig::parse(&map, &view_settings, map_settings.get(&map).unwrap_or(&empty)) {
                Ok(config) => {
                    maps.insert(map, Map::new(config));
                }
                Err(e) => warnings.push(format!("IceMX.Metrics.{name}: {e}")),
            }
        }
        views.insert(name, View { enabled: !disabled, maps });
    }
    (views, warnings)
}

impl Metrics {
    /// The views configured by `props`, with a warning for every mistake.
    pub fn new(props: &Properties) -> Arc<Metrics> {
        let prometheus = props.get(crate::prometheus::ENDPOINTS_PROPERTY).filter(|v| !v.trim().is_empty());
        let metrics = Arc::new(Metrics {
            active: AtomicBool::new(false),
            views_active: AtomicBool::new(false),
            views: Mutex::new(BTreeMap::new()),
            prometheus: prometheus.map(|_| Arc::new(Series::new())),
        });
        metrics.reconfigure(props);
        metrics
    }

    /// Reads the views again (after the `IceMX.Metrics.` properties changed); the counters of
    /// views whose maps are kept are reset, as Ice does.
    pub fn reconfigure(&self, props: &Properties) {
        let (views, warnings) = parse_views(props);
        for w in warnings {
            tracing::warn!("{w}");
        }
        let mut guard = self.lock();
        *guard = views;
        self.update_active(&guard);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, View>> {
        self.views.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn update_active(&self, views: &BTreeMap<String, View>) {
        let views_active = views.values().any(|v| v.enabled && !v.maps.is_empty());
        self.views_active.store(views_active, Ordering::Release);
        self.active.store(views_active || self.prometheus.is_some(), Ordering::Release);
    }

    /// The start of an invocation, when its end is to be counted (there is a Prometheus
    /// endpoint).
    #[inline]
    pub fn invocation_begin(&self) -> Option<Instant> {
        self.prometheus.as_ref().map(|_| Instant::now())
    }

    /// Counts an invocation begun at `start`: its operation, mode and outcome (`ok`,
    /// `user_exception` or an exception's name).
    pub fn invocation_end(&self, start: Instant, operation: &str, mode: &str, outcome: &str) {
        let Some(series) = &self.prometheus else { return };
        let labels: Labels =
            vec![("operation".to_string(), operation.to_string()), ("mode".to_string(), mode.to_string())];
        series.invocation_duration.get_or_create(&labels).observe(start.elapsed().as_secs_f64());
        let mut with_outcome = labels;
        with_outcome.push(("outcome".to_string(), outcome.to_string()));
        series.invocations.get_or_create(&with_outcome).inc();
    }

    /// Counts a connection that just opened (`direction`: incoming or outgoing) while the
    /// returned guard lives, when there is a Prometheus endpoint.
    pub fn connection_opened(&self, direction: &str) -> Option<ConnectionGauge> {
        let series = self.prometheus.as_ref()?;
        let labels: Labels = vec![("direction".to_string(), direction.to_string())];
        series.connections.get_or_create(&labels).inc();
        series.connections_opened.get_or_create(&labels).inc();
        Some(ConnectionGauge { series: series.clone(), labels })
    }

    /// The Prometheus endpoint's series, when `Floe.Metrics.Prometheus.Endpoints` is set.
    pub fn prometheus(&self) -> Option<&Arc<Series>> {
        self.prometheus.as_ref()
    }

    /// True when some enabled view gathers something: the one check of the hot paths.
    #[inline]
    pub fn active(&self) -> bool {
        self.active.load(Ordering::Relaxed)
    }

    /// The names of the enabled views and of the disabled ones.
    pub fn view_names(&self) -> (Vec<String>, Vec<String>) {
        let views = self.lock();
        let (on, off): (Vec<_>, Vec<_>) = views.iter().partition(|(_, v)| v.enabled);
        (on.into_iter().map(|(n, _)| n.clone()).collect(), off.into_iter().map(|(n, _)| n.clone()).collect())
    }

    /// Enables or disables view `name`; false when there is no such view. Disabling clears
    /// its counters.
    pub fn set_enabled(&self, name: &str, enabled: bool) -> bool {
        let mut views = self.lock();
        let Some(view) = views.get_mut(name) else { return false };
        if view.enabled != enabled && !enabled {
            for map in view.maps.values_mut() {
                map.entries.clear();
                map.detached.clear();
            }
        }
        view.enabled = enabled;
        self.update_active(&views);
        true
    }

    /// Calls `f` with view `name`, if there is one.
    pub fn with_view<R>(&self, name: &str, f: impl FnOnce(&View) -> R) -> Option<R> {
        self.lock().get(name).map(f)
    }

    /// Starts counting an object of map `map`.
    pub fn begin(&self, map: &str, object: &dyn Attributes) -> Observer {
        let mut ids = Vec::new();
        // With only the Prometheus endpoint, the views' lock is not taken.
        if self.views_active.load(Ordering::Relaxed) {
            for (view_name, view) in self.lock().iter_mut() {
                if !view.enabled {
                    continue;
                }
                if let Some(m) = view.maps.get_mut(map) {
                    if let Some(id) = m.begin(object) {
                        ids.push((view_name.clone(), id));
                    }
                }
            }
        }
        let series = match &self.prometheus {
            Some(series) if map == "Dispatch" => {
                let adapter = object.attribute("parent").unwrap_or_default();
                let operation = object.attribute("operation").unwrap_or_default();
                series.dispatches_in_progress.get_or_create(&vec![("adapter".to_string(), adapter.clone())]).inc();
                Some(vec![("adapter".to_string(), adapter), ("operation".to_string(), operation)])
            }
            _ => None,
        };
        Observer { map: map.to_string(), ids, start: Instant::now(), series }
    }

    /// Ends an object begun with [`begin`](Self::begin).
    pub fn end(&self, observer: Observer, mut outcome: Outcome) {
        let elapsed = observer.start.elapsed();
        outcome.lifetime_us = elapsed.as_micros().min(i64::MAX as u128) as i64;
        if let (Some(series), Some(labels)) = (&self.prometheus, &observer.series) {
            record(series, labels, elapsed.as_secs_f64(), &outcome);
        }
        if observer.ids.is_empty() {
            return;
        }
        let mut views = self.lock();
        for (view, id) in &observer.ids {
            if let Some(m) = views.get_mut(view).and_then(|v| v.maps.get_mut(&observer.map)) {
                m.end(id, &outcome);
            }
        }
    }
}

/// An open connection in the Prometheus series; dropped when the connection closes.
pub struct ConnectionGauge {
    series: Arc<Series>,
    labels: Labels,
}

impl Drop for ConnectionGauge {
    fn drop(&mut self) {
        self.series.connections.get_or_create(&self.labels).dec();
    }
}

/// Adds a finished dispatch to the Prometheus series.
fn record(series: &Series, labels: &Labels, seconds: f64, outcome: &Outcome) {
    series.dispatches_in_progress.get_or_create(&vec![labels[0].clone()]).dec();
    series.dispatch_duration.get_or_create(labels).observe(seconds);
    series.dispatch_request_bytes.get_or_create(labels).inc_by(outcome.size.max(0) as u64);
    series.dispatch_reply_bytes.get_or_create(labels).inc_by(outcome.reply_size.max(0) as u64);
    let result = match &outcome.failure {
        Some(failure) => failure.rsplit("::").next().unwrap_or(failure).to_string(),
        None if outcome.user_exception => "user_exception".to_string(),
        None => "ok".to_string(),
    };
    let mut with_outcome = labels.clone();
    with_outcome.push(("outcome".to_string(), result));
    series.dispatches.get_or_create(&with_outcome).inc();
}

/// An object being counted, in the entries it went to.
pub struct Observer {
    map: String,
    ids: Vec<(String, String)>,
    start: Instant,
    /// Its Prometheus labels (adapter, operation), when there is an endpoint.
    series: Option<Labels>,
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Call(&'static [(&'static str, &'static str)]);

    impl Attributes for Call {
        fn attribute(&self, name: &str) -> Option<String> {
            self.0.iter().find(|(k, _)| *k == name).map(|(_, v)| v.to_string())
        }
    }

    fn props(lines: &[(&str, &str)]) -> Properties {
        let p = Properties::new();
        for (k, v) in lines {
            p.set(k, v);
        }
        p
    }

    #[test]
    fn group_by_splits_attributes_and_separators() {
        assert_eq!(
            parse_group_by("remoteHost:remotePort"),
            vec![Part::Attribute("remoteHost".into()), Part::Literal(":".into()), Part::Attribute("remotePort".into())]
        );
        assert_eq!(parse_group_by("none"), vec![]);
        assert_eq!(
            parse_group_by("[context.user] operation"),
            vec![
                Part::Literal("[".into()),
                Part::Attribute("context.user".into()),
                Part::Literal("] ".into()),
                Part::Attribute("operation".into())
            ]
        );
    }

    #[test]
    fn unknown_attribute_and_bad_regex_are_errors() {
        let mut view = BTreeMap::new();
        view.insert("GroupBy".to_string(), "operation:bogus".to_string());
        let err = MapConfig::parse("Dispatch", &view, &BTreeMap::new()).unwrap_err();
        assert_eq!(err, ConfigError::UnknownAttribute { map: "Dispatch".into(), attribute: "bogus".into() });
        let mut view = BTreeMap::new();
        view.insert("Accept.operation".to_string(), "(unclosed".to_string());
        assert!(matches!(MapConfig::parse("Dispatch", &view, &BTreeMap::new()), Err(ConfigError::InvalidRegex { .. })));
        let (views, warnings) = parse_views(&props(&[("IceMX.Metrics.V.GroupBy", "nope")]));
        assert!(views["V"].maps.is_empty());
        assert_eq!(warnings.len(), 1, "{warnings:?}");
    }

    #[test]
    fn accept_reject_and_group_by_choose_entries() {
        let p = props(&[
            ("IceMX.Metrics.ByOp.GroupBy", "operation"),
            ("IceMX.Metrics.ByOp.Reject.operation", "ice_.*"),
            ("IceMX.Metrics.Some.Map.Dispatch.GroupBy", "identity [operation]"),
            ("IceMX.Metrics.Some.Map.Dispatch.Accept.facet", ""),
            ("IceMX.Metrics.Off.Disabled", "1"),
        ]);
        let metrics = Metrics::new(&p);
        assert!(metrics.active());
        assert_eq!(metrics.view_names(), (vec!["ByOp".into(), "Some".into()], vec!["Off".into()]));
        let calls = [
            Call(&[("operation", "ping"), ("identity", "a"), ("facet", "")]),
            Call(&[("operation", "ping"), ("identity", "a"), ("facet", "f")]),
            Call(&[("operation", "ice_ping"), ("identity", "b"), ("facet", "")]),
        ];
        for (i, call) in calls.iter().enumerate() {
            let o = metrics.begin("Dispatch", call);
            let failure = (i == 1).then(|| "::Ice::UnknownException".to_string());
            metrics.end(o, Outcome { size: 10, reply_size: 3, failure, ..Outcome::default() });
        }
        metrics.with_view("ByOp", |v| {
            let ids: Vec<_> = v.maps["Dispatch"].entries().map(|e| (e.id.clone(), e.total, e.current)).collect();
            assert_eq!(ids, vec![("ping".to_string(), 2, 0)]);
            let e = v.maps["Dispatch"].entry("ping").unwrap();
            assert_eq!((e.size, e.reply_size), (20, 6));
            assert_eq!(e.failures.get("::Ice::UnknownException"), Some(&1));
        });
        metrics.with_view("Some", |v| {
            let ids: Vec<_> = v.maps["Dispatch"].entries().map(|e| e.id.clone()).collect();
            assert_eq!(ids, vec!["a [ping]".to_string(), "b [ice_ping]".to_string()]);
        });
        assert!(metrics.set_enabled("Off", true));
        assert!(!metrics.set_enabled("Nope", true));
    }

    #[test]
    fn retain_detached_drops_old_entries() {
        let p = props(&[("IceMX.Metrics.V.GroupBy", "operation"), ("IceMX.Metrics.V.RetainDetached", "2")]);
        let metrics = Metrics::new(&p);
        let ops = [Call(&[("operation", "a")]), Call(&[("operation", "b")]), Call(&[("operation", "c")])];
        for call in &ops {
            let o = metrics.begin("Dispatch", call);
            metrics.end(o, Outcome::default());
        }
        let ids = metrics.with_view("V", |v| v.maps["Dispatch"].entries().map(|e| e.id.clone()).collect::<Vec<_>>());
        assert_eq!(ids, Some(vec!["b".to_string(), "c".to_string()]));
    }

    #[test]
    fn disabled_views_cost_nothing() {
        let metrics = Metrics::new(&props(&[("IceMX.Metrics.V.Disabled", "1")]));
        assert!(!metrics.active());
        assert!(!Metrics::new(&Properties::new()).active());
    }
}
