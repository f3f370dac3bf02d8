//! Ice-compatible configuration properties (`Ice.MessageSizeMax`, `<Adapter>.Endpoints`…),
//! from command-line arguments, configuration files and code, and the names floe knows
//! ([`Properties::unknown`], in `known.rs`).

mod known;

pub use known::{is_checked, is_known, matches_pattern, suggestion};

use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};

use crate::error::{Error, Result};

/// A set of `name = value` properties shared by a communicator and its adapters.
#[derive(Debug, Clone, Default)]
pub struct Properties {
    map: Arc<RwLock<BTreeMap<String, String>>>,
}

/// Property prefixes that command-line parsing recognises as Ice properties.
const RESERVED_PREFIXES: &[&str] = &["Ice", "IceSSL", "IceStorm", "IceGrid", "Glacier2", "IceBox", "Floe"];

impl Properties {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Reads properties from command-line arguments of the form `--Name=Value` (or `--Name`,
    /// meaning `1`) whose name starts with a known prefix (`Ice.`, `IceSSL.`, `Floe.`…) or
    /// with one of `extra_prefixes` (for instance an adapter name). Loads the files named by
    /// `--Ice.Config` first. Returns the properties and the arguments that were not used.
    pub fn from_args<I, S>(args: I, extra_prefixes: &[&str]) -> Result<(Properties, Vec<String>)>
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let props = Properties::new();
        let mut rest = Vec::new();
        let mut pairs = Vec::new();
        for arg in args {
            let arg: String = arg.into();
            if let Some(body) = arg.strip_prefix("--") {
                let (name, value) = match body.split_once('=') {
                    Some((n, v)) => (n.trim().to_string(), v.trim().to_string()),
                    None => (body.trim().to_string(), "1".to_string()),
                };
                let prefix = name.split('.').next().unwrap_or("");
                if name.contains('.') && (RESERVED_PREFIXES.contains(&prefix) || extra_prefixes.contains(&prefix)) {
                    pairs.push((name, value));
                    continue;
                }
            }
            rest.push(arg);
        }
        if let Some((_, files)) = pairs.iter().find(|(n, _)| n == "Ice.Config") {
            for file in files.split(',').map(str::trim).filter(|f| !f.is_empty()) {
                props.load_file(file)?;
            }
        }
        for (n, v) in pairs {
            props.set(&n, &v);
        }
        Ok((props, rest))
    }

    /// Loads a configuration file: `name = value` lines; `#` starts a comment.
    pub fn load_file(&self, path: &str) -> Result<()> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Property { name: "Ice.Config".into(), reason: format!("cannot read {path}: {e}") })?;
        self.load_str(&text)
    }

    /// Loads properties from the text of a configuration file.
    pub fn load_str(&self, text: &str) -> Result<()> {
        for (lineno, line) in text.lines().enumerate() {
            let line = match line.find('#') {
                Some(i) => &line[..i],
                None => line,
            };
            let line = line.trim();
            if line.is_empty() {
                continue;
            }
            let Some((name, value)) = line.split_once('=') else {
                return Err(Error::Property {
                    name: line.to_string(),
                    reason: format!("line {} has no '='", lineno + 1),
                });
            };
            self.set(name.trim(), value.trim());
        }
        Ok(())
    }

    /// Sets a property; an empty value removes it, as in Ice.
    pub fn set(&self, name: &str, value: &str) {
        let mut map = self.map.write().expect("properties lock");
        if value.is_empty() {
            map.remove(name);
        } else {
            map.insert(name.to_string(), value.to_string());
        }
    }

    /// The value of a property, if set.
    pub fn get(&self, name: &str) -> Option<String> {
        self.map.read().expect("properties lock").get(name).cloned()
    }

    /// The value of a property, or `default`.
    pub fn get_or(&self, name: &str, default: &str) -> String {
        self.get(name).unwrap_or_else(|| default.to_string())
    }

    /// An integer property, or `default` when unset. A value that is not an integer is an error.
    pub fn get_int(&self, name: &str, default: i64) -> Result<i64> {
        match self.get(name) {
            None => Ok(default),
            Some(v) => v
                .trim()
                .parse()
                .map_err(|_| Error::Property { name: name.to_string(), reason: format!("{v:?} is not an integer") }),
        }
    }

    /// A boolean property (`0` / non-zero integer), or `default`.
    pub fn get_bool(&self, name: &str, default: bool) -> Result<bool> {
        Ok(self.get_int(name, default as i64)? != 0)
    }

    /// The names of the properties set that are unknown: under a checked prefix (`Ice.`,
    /// `IceSSL.`, `IceGrid.`, `IceStorm.`, `Glacier2.`, `Floe.` and Ice 3.7's other sections,
    /// see [`is_checked`]) but neither a name of Ice 3.7 or floe ([`is_known`]) nor a match of
    /// one of `extra_known` (patterns where `*` stands for one or more characters, for the
    /// names a program reads itself). A communicator logs a warning for each of them when it
    /// is created, unless `Ice.Warn.UnknownProperties` is 0.
    pub fn unknown(&self, extra_known: &[&str]) -> Vec<String> {
        self.map
            .read()
            .expect("properties lock")
            .keys()
            .filter(|name| !is_known(name) && !extra_known.iter().any(|p| matches_pattern(p, name)))
            .cloned()
            .collect()
    }

    /// All properties whose name starts with `prefix`.
    pub fn with_prefix(&self, prefix: &str) -> BTreeMap<String, String> {
        self.map
            .read()
            .expect("properties lock")
            .range(prefix.to_string()..)
            .take_while(|(k, _)| k.starts_with(prefix))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_line_and_files() {
        let dir = std::env::temp_dir().join(format!("floe-props-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("config");
        std::fs::write(&file, "# comment\nIce.MessageSizeMax = 2048\nHello.Endpoints=tcp -p 1 # trailing\n").unwrap();
        let args = vec![
            "prog".to_string(),
            format!("--Ice.Config={}", file.display()),
            "--Ice.MessageSizeMax=4096".into(),
            "--Ice.Trace.Protocol".into(),
            "--TestAdapter.Endpoints=tcp -h 127.0.0.1 -p 12010".into(),
            "--other".into(),
            "plain".into(),
        ];
        let (p, rest) = Properties::from_args(args, &["TestAdapter"]).unwrap();
        assert_eq!(rest, vec!["prog", "--other", "plain"]);
        assert_eq!(p.get_int("Ice.MessageSizeMax", 0).unwrap(), 4096, "command line wins over the file");
        assert_eq!(p.get("Hello.Endpoints").as_deref(), Some("tcp -p 1"));
        assert_eq!(p.get("TestAdapter.Endpoints").as_deref(), Some("tcp -h 127.0.0.1 -p 12010"));
        assert!(p.get_bool("Ice.Trace.Protocol", false).unwrap());
        assert_eq!(p.with_prefix("Ice.").len(), 3);
        p.set("Ice.Bad", "x");
        assert!(p.get_int("Ice.Bad", 0).is_err());
        assert!(Properties::new().load_str("no equals sign").is_err());
    }
}
