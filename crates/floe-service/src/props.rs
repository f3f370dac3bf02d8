//! Property helpers shared by the services: trimmed values, required values and lists, all
//! failing with floe's property error ([`floe::Error::Property`]).

use floe::{Error, Properties};

/// The trimmed value of `name`, unless it is unset or blank.
pub fn non_empty(props: &Properties, name: &str) -> Option<String> {
    props.get(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty())
}

/// The trimmed value of `name`; a property error giving `reason` when it is unset or blank.
pub fn required(props: &Properties, name: &str, reason: &str) -> Result<String, Error> {
    non_empty(props, name).ok_or_else(|| property_error(name, reason))
}

/// The comma-separated items of `name`, trimmed, blanks left out (empty when unset).
pub fn comma_list(props: &Properties, name: &str) -> Vec<String> {
    non_empty(props, name)
        .map(|v| v.split(',').map(|e| e.trim().to_string()).filter(|e| !e.is_empty()).collect())
        .unwrap_or_default()
}

/// A property error for `name`.
pub fn property_error(name: &str, reason: impl Into<String>) -> Error {
    Error::Property { name: name.into(), reason: reason.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_trimmed_and_lists_split() {
        let p = Properties::new();
        p.set("A", "  x ");
        p.set("B", "   ");
        p.set("C", " a, b ,,");
        assert_eq!(non_empty(&p, "A").as_deref(), Some("x"));
        assert_eq!(non_empty(&p, "B"), None);
        assert_eq!(non_empty(&p, "Z"), None);
        assert_eq!(comma_list(&p, "C"), ["a", "b"]);
        assert!(comma_list(&p, "Z").is_empty());
        match required(&p, "B", "needed") {
            Err(Error::Property { name, reason }) => assert_eq!((name.as_str(), reason.as_str()), ("B", "needed")),
            other => panic!("{other:?}"),
        }
        assert_eq!(required(&p, "A", "needed").unwrap(), "x");
    }
}
