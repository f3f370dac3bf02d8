//! Slice checksums, as ZeroC Ice 3.7's compilers compute them with `--checksum`.
//!
//! Each non-local class, interface, exception, struct, sequence, dictionary, enum and constant
//! defined in the compiled files (not in included ones) gets the MD5 digest of a canonical
//! text of its definition, keyed by its absolute name (`::M::Name`). Two programs compare
//! these dictionaries (`Ice::SliceChecksumDict`) to find out whether they were built from the
//! same definitions.
//!
//! The canonical text holds what changes the wire contract and nothing else: names, types
//! (absolute names; `bool` is written `boolean`), members and parameters in order, optional
//! tags, compact ids, bases, `throws` lists, enumerators (and their values when any is
//! explicit) and constant values. Metadata, comments, default values of members and
//! `idempotent` do not count. The rendering follows Ice's compilers exactly, including their
//! quirks, since the point is that a digest computed here equals the one Ice computes:
//!
//! - optional data members are written after the required ones, sorted by tag, without a
//!   line break between them;
//! - an operation's optional parameters come after its required ones, sorted by tag, and a
//!   separator is written before a required parameter whenever it is not the operation's
//!   first parameter (even if the parameters before it were optional);
//! - a constant's value is Ice's own rendering of it: integers in decimal, floating-point
//!   numbers as C++ streams print a `double` by default (six significant digits, `%g`),
//!   strings with Ice's escape processing (`\\` stays doubled, `\u…` stays as written, octal
//!   and hex escapes become bytes), enumerators as written, and a constant naming another
//!   constant takes that constant's value;
//! - the 16 digest bytes are written in lowercase hexadecimal with no padding, so a byte
//!   below 16 gives one digit and a checksum can be shorter than 32 digits.
//!
//! The built-in type `Value` has no rendering in Ice 3.7's compilers (slice2cpp and slice2py
//! stop with an error on a definition that uses it with `--checksum`); it is written `Value`
//! here.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::ast::*;
use crate::check::{SymKind, Unit};

/// The checksums of every non-local definition of `unit` that does not come from an included
/// file: absolute name → lowercase hexadecimal digest as Ice writes it.
pub fn checksums(unit: &Unit) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    walk(unit, &unit.defs, "", &mut out);
    out
}

/// The canonical text of each checksummed definition of `unit` (what is hashed), by absolute
/// name.
pub fn canonical_texts(unit: &Unit) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    collect(unit, &unit.defs, "", &mut out);
    out
}

fn walk(unit: &Unit, defs: &[Definition], scope: &str, out: &mut BTreeMap<String, String>) {
    let mut texts = BTreeMap::new();
    collect(unit, defs, scope, &mut texts);
    for (name, text) in texts {
        out.insert(name, hex(&md5(&text)));
    }
}

fn collect(unit: &Unit, defs: &[Definition], scope: &str, out: &mut BTreeMap<String, Vec<u8>>) {
    for d in defs {
        let abs = format!("{scope}::{}", d.name);
        if let DefKind::Module(inner) = &d.kind {
            collect(unit, inner, &abs, out);
            continue;
        }
        if d.included || d.local {
            continue;
        }
        if let Some(text) = canonical(unit, d, scope) {
            // As Ice's compilers do, the first definition of a name keeps its checksum.
            out.entry(abs).or_insert(text);
        }
    }
}

/// The canonical text of one definition (`None` for forward declarations and modules).
fn canonical(unit: &Unit, d: &Definition, scope: &str) -> Option<Vec<u8>> {
    let mut s = String::new();
    match &d.kind {
        DefKind::Module(_) => return None,
        DefKind::Interface { forward: true, .. } | DefKind::Class { forward: true, .. } => return None,
        DefKind::Interface { bases, ops, .. } => {
            let _ = write!(s, "interface {}", d.name);
            if !bases.is_empty() {
                s.push_str(" extends ");
                s.push_str(&base_list(bases));
            }
            s.push('\n');
            operations(&mut s, ops);
        }
        DefKind::Class { base, implements, compact_id, members, ops, .. } => {
            let _ = write!(s, "class {}", d.name);
            if let Some(id) = compact_id {
                let _ = write!(s, "({id})");
            }
            if let Some(b) = base {
                let _ = write!(s, " extends {}", resolved(b));
            }
            if !implements.is_empty() {
                s.push_str(" implements ");
                s.push_str(&base_list(implements));
            }
            s.push('\n');
            data_members(&mut s, members);
            operations(&mut s, ops);
        }
        DefKind::Exception { base, members } => {
            let _ = write!(s, "exception {}", d.name);
            if let Some(b) = base {
                let _ = write!(s, " extends {}", resolved(b));
            }
            s.push('\n');
            data_members(&mut s, members);
        }
        DefKind::Struct { members } => {
            let _ = writeln!(s, "struct {}", d.name);
            for m in members {
                let _ = writeln!(s, "{} {}", type_name(&m.ty), m.name);
            }
        }
        DefKind::Sequence { elem } => {
            let _ = writeln!(s, "sequence<{}> {}", type_name(elem), d.name);
        }
        DefKind::Dictionary { key, value } => {
            let _ = writeln!(s, "dictionary<{}, {}> {}", type_name(key), type_name(value), d.name);
        }
        DefKind::Enum { enumerators } => {
            let _ = writeln!(s, "enum {}", d.name);
            if enumerators.iter().any(|e| e.explicit.is_some()) {
                let mut sorted: Vec<&Enumerator> = enumerators.iter().collect();
                sorted.sort_by_key(|e| e.value);
                for e in sorted {
                    let _ = writeln!(s, "{} {}", e.name, e.value);
                }
            } else {
                for e in enumerators {
                    let _ = writeln!(s, "{}", e.name);
                }
            }
        }
        DefKind::Const { ty, value, literal } => {
            let mut bytes = format!("const {} {} = ", type_name(ty), d.name).into_bytes();
            bytes.extend(const_value(unit, scope, value, literal.as_deref(), 0));
            bytes.push(b'\n');
            return Some(bytes);
        }
    }
    Some(s.into_bytes())
}

/// A resolved name (the name as written if resolution did not happen).
fn resolved(b: &(String, crate::diag::Span, Option<String>)) -> &str {
    b.2.as_deref().unwrap_or(&b.0)
}

fn base_list(bases: &[(String, crate::diag::Span, Option<String>)]) -> String {
    bases.iter().map(resolved).collect::<Vec<_>>().join(", ")
}

/// A type as Ice's checksums write it.
fn type_name(t: &TypeRef) -> String {
    match t {
        TypeRef::Builtin(b, _) => match b {
            Builtin::Bool => "boolean".into(),
            other => other.name().into(),
        },
        TypeRef::Named { name, proxy, resolved, .. } => {
            let n = resolved.as_deref().unwrap_or(name);
            if *proxy {
                format!("{n}*")
            } else {
                n.to_string()
            }
        }
    }
}

/// Data members: the required ones a line each, then the optional ones by tag, unseparated.
fn data_members(s: &mut String, members: &[Member]) {
    for m in members.iter().filter(|m| m.tag.is_none()) {
        let _ = writeln!(s, "{} {}", type_name(&m.ty), m.name);
    }
    let mut optional: Vec<&Member> = members.iter().filter(|m| m.tag.is_some()).collect();
    optional.sort_by_key(|m| m.tag);
    for m in optional {
        let _ = write!(s, "{} {} {}", type_name(&m.ty), m.tag.unwrap_or_default(), m.name);
    }
}

fn operations(s: &mut String, ops: &[Operation]) {
    for op in ops {
        match &op.ret {
            Some(t) => s.push_str(&type_name(t)),
            None => s.push_str("void"),
        }
        s.push(' ');
        if let Some(tag) = op.ret_tag {
            let _ = write!(s, "{tag} ");
        }
        let _ = write!(s, "{}(", op.name);
        let out = |p: &Param| if p.out { "out " } else { "" };
        for (i, p) in op.params.iter().enumerate() {
            if p.tag.is_some() {
                continue;
            }
            if i > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{}{} {}", out(p), type_name(&p.ty), p.name);
        }
        let mut optional: Vec<&Param> = op.params.iter().filter(|p| p.tag.is_some()).collect();
        optional.sort_by_key(|p| p.tag);
        let required = op.params.len() - optional.len();
        for (i, p) in optional.into_iter().enumerate() {
            if i > 0 || required > 0 {
                s.push_str(", ");
            }
            let _ = write!(s, "{}{} {} {}", out(p), type_name(&p.ty), p.tag.unwrap_or_default(), p.name);
        }
        s.push(')');
        if !op.throws.is_empty() {
            s.push_str(" throws ");
            s.push_str(&base_list(&op.throws));
        }
        s.push('\n');
    }
}

/// Ice's rendering of a constant's value (bytes, as string constants may hold any byte).
fn const_value(unit: &Unit, scope: &str, v: &ConstValue, literal: Option<&str>, depth: u32) -> Vec<u8> {
    match v {
        ConstValue::Int(i) => i.to_string().into_bytes(),
        ConstValue::Float(x) => format_g(*x).into_bytes(),
        ConstValue::Bool(b) => b.to_string().into_bytes(),
        ConstValue::Str(s) => match literal {
            Some(raw) => ice_string_value(raw),
            None => s.clone().into_bytes(),
        },
        ConstValue::Name(n, _) => {
            // A constant naming another constant takes its value; an enumerator stays as
            // written. (Depth-bounded: the checker refuses cycles, but stay safe.)
            if depth < 64 {
                if let Some((abs, def)) = lookup_const(unit, scope, n) {
                    if let DefKind::Const { value, literal, .. } = &def.kind {
                        let outer = abs.rsplit_once("::").map(|(s, _)| s.to_string()).unwrap_or_default();
                        return const_value(unit, &outer, value, literal.as_deref(), depth + 1);
                    }
                }
            }
            n.clone().into_bytes()
        }
    }
}

/// Finds the constant a name written in `scope` refers to (from `scope` outwards).
fn lookup_const<'u>(unit: &'u Unit, scope: &str, name: &str) -> Option<(String, &'u Definition)> {
    let mut s = scope.to_string();
    loop {
        let candidate = if name.starts_with("::") { name.to_string() } else { format!("{s}::{name}") };
        if let Some((sym, def)) = unit.lookup(&candidate) {
            return (sym.kind == SymKind::Const).then_some((candidate, def));
        }
        if name.starts_with("::") || s.is_empty() {
            return None;
        }
        s.truncate(s.rfind("::").unwrap_or(0));
    }
}

/// The value Ice's Slice scanner gives a string literal (its text between the quotes): a
/// backslash escape stays doubled, `\u`/`\U` escapes stay as written, octal and hexadecimal
/// escapes become the byte they name, the other escapes the character, and an unknown escape
/// a doubled backslash followed by the character.
fn ice_string_value(raw: &str) -> Vec<u8> {
    let chars: Vec<char> = raw.chars().collect();
    let mut out = Vec::new();
    let mut buf = [0u8; 4];
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        i += 1;
        if c != '\\' {
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        let Some(&e) = chars.get(i) else {
            out.push(b'\\');
            break;
        };
        i += 1;
        match e {
            '\\' => out.extend_from_slice(b"\\\\"),
            '"' | '\'' | '?' => out.push(e as u8),
            'a' => out.push(0x07),
            'b' => out.push(0x08),
            'f' => out.push(0x0c),
            'n' => out.push(b'\n'),
            'r' => out.push(b'\r'),
            't' => out.push(b'\t'),
            'v' => out.push(0x0b),
            '0'..='7' => {
                let mut v = e.to_digit(8).unwrap_or(0);
                let mut n = 1;
                while n < 3 && i < chars.len() && chars[i].is_digit(8) {
                    v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            'x' => {
                let mut v = 0;
                let mut n = 0;
                while n < 2 && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                    i += 1;
                    n += 1;
                }
                out.push((v & 0xff) as u8);
            }
            'u' | 'U' => {
                let want = if e == 'u' { 4 } else { 8 };
                out.push(b'\\');
                out.push(e as u8);
                let mut n = 0;
                while n < want && i < chars.len() && chars[i].is_ascii_hexdigit() {
                    out.push(chars[i] as u8);
                    i += 1;
                    n += 1;
                }
            }
            _ => {
                out.extend_from_slice(b"\\\\");
                i -= 1;
            }
        }
    }
    out
}

/// A `double` as a C++ stream writes it by default (`%g`: six significant digits, trailing
/// zeros removed, scientific notation below 1e-4 and from 1e6 on, a two-digit exponent at
/// least).
pub fn format_g(x: f64) -> String {
    const PRECISION: i32 = 6;
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan".into() } else { "nan".into() };
    }
    if x.is_infinite() {
        return if x < 0.0 { "-inf".into() } else { "inf".into() };
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // The exponent after rounding to the precision.
    let sci = format!("{:.*e}", (PRECISION - 1) as usize, x);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..PRECISION).contains(&exp) {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (PRECISION - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{x:.decimals$}")).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Each byte in lowercase hexadecimal without padding, as Ice writes checksums.
fn hex(digest: &[u8; 16]) -> String {
    let mut s = String::with_capacity(32);
    for b in digest {
        let _ = write!(s, "{b:x}");
    }
    s
}

/// MD5 (RFC 1321).
pub fn md5(data: &[u8]) -> [u8; 16] {
    const S: [u32; 64] = [
        7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14,
        20, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6,
        10, 15, 21,
    ];
    // K[i] = floor(abs(sin(i + 1)) * 2^32).
    const K: [u32; 64] = [
        0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501, 0x698098d8,
        0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340,
        0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87,
        0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c,
        0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039,
        0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92,
        0xffeff47d, 0x85845dd1, 0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
        0xeb86d391,
    ];
    let mut state: [u32; 4] = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476];
    let mut msg = data.to_vec();
    let bit_len = (data.len() as u64).wrapping_mul(8);
    msg.push(0x80);
    while msg.len() % 64 != 56 {
        msg.push(0);
    }
    msg.extend_from_slice(&bit_len.to_le_bytes());
    for block in msg.chunks_exact(64) {
        let mut m = [0u32; 16];
        for (j, w) in block.chunks_exact(4).enumerate() {
            m[j] = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
        }
        let [mut a, mut b, mut c, mut d] = state;
        for i in 0..64 {
            let (f, g) = match i / 16 {
                0 => ((b & c) | (!b & d), i),
                1 => ((d & b) | (!d & c), (5 * i + 1) % 16),
                2 => (b ^ c ^ d, (3 * i + 5) % 16),
                _ => (c ^ (b | !d), (7 * i) % 16),
            };
            let f = f.wrapping_add(a).wrapping_add(K[i]).wrapping_add(m[g]);
            a = d;
            d = c;
            c = b;
            b = b.wrapping_add(f.rotate_left(S[i]));
        }
        state[0] = state[0].wrapping_add(a);
        state[1] = state[1].wrapping_add(b);
        state[2] = state[2].wrapping_add(c);
        state[3] = state[3].wrapping_add(d);
    }
    let mut out = [0u8; 16];
    for (j, w) in state.iter().enumerate() {
        out[j * 4..j * 4 + 4].copy_from_slice(&w.to_le_bytes());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex32(d: &[u8; 16]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn md5_matches_rfc_1321_vectors() {
        assert_eq!(hex32(&md5(b"")), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex32(&md5(b"abc")), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex32(&md5(b"message digest")), "f96b697d7cb7938d525a2f31aaf161d0");
        assert_eq!(
            hex32(&md5(b"12345678901234567890123456789012345678901234567890123456789012345678901234567890")),
            "57edf4a22be3c955ac49da2e2107b67a"
        );
        // Lengths around the padding boundary.
        assert_eq!(hex32(&md5(&[b'a'; 55])), "ef1772b6dff9a122358552954ad0df65");
        assert_eq!(hex32(&md5(&[b'a'; 56])), "3b0c8ac703f828b04c6c197006d17218");
        assert_eq!(hex32(&md5(&[b'a'; 64])), "014842d480b571495a4a0363793f7367");
    }

    #[test]
    fn hex_has_no_padding() {
        let mut d = [0u8; 16];
        d[0] = 0x0a;
        d[15] = 0xff;
        assert_eq!(hex(&d), format!("a{}ff", "0".repeat(14)));
    }

    #[test]
    fn format_g_matches_c_streams() {
        for (x, want) in [
            (1.5e10, "1.5e+10"),
            (0.1, "0.1"),
            (123456789.0, "1.23457e+08"),
            (1.5e-5, "1.5e-05"),
            (3.0, "3"),
            (-2.5, "-2.5"),
            (100000.0, "100000"),
            (1000000.0, "1e+06"),
            (999999.5, "1e+06"),
            (0.0001, "0.0001"),
            (0.00012345678, "0.000123457"),
            (1e100, "1e+100"),
            (1.234567891, "1.23457"),
            (7.654321e-3, "0.00765432"),
            (0.0, "0"),
        ] {
            assert_eq!(format_g(x), want, "{x}");
        }
    }

    #[test]
    fn string_values_follow_ice_scanner() {
        assert_eq!(ice_string_value(r#"a\\b\"c"#), br#"a\\b"c"#.to_vec());
        assert_eq!(ice_string_value(r"\u00e9\x41\101"), b"\\u00e9AA".to_vec());
        assert_eq!(ice_string_value(r"\xe9"), vec![0xe9]);
        assert_eq!(ice_string_value("é\\n"), "é\n".as_bytes().to_vec());
    }
}
