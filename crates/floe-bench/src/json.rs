//! The `--json` file: an array of records, one per line, each record an object written with
//! `": "` and `", "` between its members (the layout scripts grep), through serde_json.

use std::io;

use serde::Serialize;
use serde_json::ser::Formatter;

/// serde_json's formatter for that layout: the top-level array's elements on lines of their
/// own, indented by two spaces; everything inside an element on its line.
#[derive(Debug, Default)]
struct Lines {
    depth: usize,
}

impl Formatter for Lines {
    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth += 1;
        w.write_all(b"[")
    }

    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.depth -= 1;
        w.write_all(if self.depth == 0 { b"\n]" } else { b"]" })
    }

    fn begin_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        match (self.depth, first) {
            (1, true) => w.write_all(b"\n  "),
            (1, false) => w.write_all(b",\n  "),
            (_, true) => Ok(()),
            (_, false) => w.write_all(b", "),
        }
    }

    fn begin_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W, first: bool) -> io::Result<()> {
        if first {
            Ok(())
        } else {
            w.write_all(b", ")
        }
    }

    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

/// `records` as the `--json` file's array, ending with a newline.
pub fn array<T: Serialize>(records: &[T]) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, Lines::default());
    // Records are plain structs and maps: serializing them cannot fail.
    if records.serialize(&mut ser).is_err() {
        return "[\n]\n".into();
    }
    out.push(b'\n');
    String::from_utf8(out).unwrap_or_default()
}

/// One record as a JSON value (a record that cannot be serialized becomes `null`).
pub fn record<T: Serialize>(r: &T) -> serde_json::Value {
    serde_json::to_value(r).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct R {
        system: &'static str,
        test: &'static str,
        median: f64,
        client: Option<u64>,
    }

    #[test]
    fn one_record_a_line_with_spaced_separators() {
        let rs = [
            R { system: "floe", test: "twoway", median: 1.5, client: None },
            R { system: "raw", test: "a \"b\"", median: 2.0, client: Some(3) },
        ];
        assert_eq!(
            array(&rs),
            "[\n  {\"system\": \"floe\", \"test\": \"twoway\", \"median\": 1.5, \"client\": null},\n  \
             {\"system\": \"raw\", \"test\": \"a \\\"b\\\"\", \"median\": 2.0, \"client\": 3}\n]\n"
        );
        assert_eq!(array::<R>(&[]), "[\n]\n");
        let values: Vec<serde_json::Value> = rs.iter().map(record).collect();
        assert_eq!(array(&values), array(&rs), "values keep the members' order");
    }
}
