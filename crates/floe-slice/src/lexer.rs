//! The Slice lexer.

use crate::diag::{Code, Diagnostic, Span};

/// A token kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Tok {
    /// An identifier (escaped identifiers arrive without their backslash, with `escaped` set).
    Ident {
        /// The name.
        name: String,
        /// Written with a leading backslash.
        escaped: bool,
    },
    /// An integer literal.
    Int(i128),
    /// A floating-point literal.
    Float(f64),
    /// A string literal: its value (escapes processed), and its text as written between the
    /// quotes (escapes not processed).
    Str(String, String),
    /// A doc comment (`/** … */` or `///`), its text without the comment markers.
    Doc(String),
    /// `::`
    Scope,
    /// One of `{ } ( ) < > [ ] , ; : = * ? -` and `+`.
    Punct(char),
    /// `[[`
    GlobalOpen,
    /// `]]`
    GlobalClose,
}

/// A token with its position.
#[derive(Debug, Clone, PartialEq)]
pub struct Token {
    /// What it is.
    pub tok: Tok,
    /// Where it starts.
    pub span: Span,
}

/// Lexes `text` (lines numbered from `first_line`) of file `file`.
pub fn lex(text: &str, file: u32, first_line: u32, diags: &mut Vec<Diagnostic>) -> Vec<Token> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let mut line = first_line;
    let mut col = 1u32;
    macro_rules! adv {
        () => {{
            if chars[i] == '\n' {
                line += 1;
                col = 1;
            } else {
                col += 1;
            }
            i += 1;
        }};
    }
    while i < chars.len() {
        let c = chars[i];
        let span = Span { file, line, col };
        if c.is_whitespace() {
            adv!();
            continue;
        }
        // Comments.
        if c == '/' && i + 1 < chars.len() && chars[i + 1] == '/' {
            let doc = i + 2 < chars.len() && chars[i + 2] == '/' && !(i + 3 < chars.len() && chars[i + 3] == '/');
            let start = i + if doc { 3 } else { 2 };
            while i < chars.len() && chars[i] != '\n' {
                adv!();
            }
            if doc {
                let text: String = chars[start..i].iter().collect();
                // Consecutive `///` lines make one comment.
                if let Some(Token { tok: Tok::Doc(prev), span: s }) = out.last_mut() {
                    if s.line + 1 >= span.line && s.file == file {
                        prev.push('\n');
                        prev.push_str(text.trim());
                        s.line = span.line;
                        continue;
                    }
                }
                out.push(Token { tok: Tok::Doc(text.trim().to_string()), span });
            }
            continue;
        }
        if c == '/' && i + 1 < chars.len() && chars[i + 1] == '*' {
            let doc = i + 2 < chars.len() && chars[i + 2] == '*' && !(i + 3 < chars.len() && chars[i + 3] == '/');
            adv!();
            adv!();
            let start = i;
            loop {
                if i + 1 >= chars.len() {
                    diags.push(Diagnostic::error(Code::Lexical, span, "unterminated comment"));
                    return out;
                }
                if chars[i] == '*' && chars[i + 1] == '/' {
                    break;
                }
                adv!();
            }
            let body: String = chars[start..i].iter().collect();
            adv!();
            adv!();
            if doc {
                let text = body
                    .trim_start_matches('*')
                    .lines()
                    .map(|l| l.trim().trim_start_matches('*').trim())
                    .collect::<Vec<_>>()
                    .join("\n");
                out.push(Token { tok: Tok::Doc(text.trim().to_string()), span });
            }
            continue;
        }
        if c == '[' && i + 1 < chars.len() && chars[i + 1] == '[' {
            adv!();
            adv!();
            out.push(Token { tok: Tok::GlobalOpen, span });
            continue;
        }
        if c == ']' && i + 1 < chars.len() && chars[i + 1] == ']' {
            adv!();
            adv!();
            out.push(Token { tok: Tok::GlobalClose, span });
            continue;
        }
        if c == ':' && i + 1 < chars.len() && chars[i + 1] == ':' {
            adv!();
            adv!();
            out.push(Token { tok: Tok::Scope, span });
            continue;
        }
        if "{}()<>[],;:=*?-+".contains(c) {
            adv!();
            out.push(Token { tok: Tok::Punct(c), span });
            continue;
        }
        if c == '"' {
            adv!();
            let raw_start = i;
            let mut raw_end = i;
            let mut s = String::new();
            loop {
                if i >= chars.len() || chars[i] == '\n' {
                    diags.push(Diagnostic::error(Code::Lexical, span, "unterminated string literal"));
                    break;
                }
                let ch = chars[i];
                adv!();
                if ch == '"' {
                    raw_end = i - 1;
                    break;
                }
                if ch != '\\' {
                    s.push(ch);
                    continue;
                }
                if i >= chars.len() {
                    break;
                }
                let e = chars[i];
                adv!();
                match e {
                    'n' => s.push('\n'),
                    't' => s.push('\t'),
                    'r' => s.push('\r'),
                    'a' => s.push('\x07'),
                    'b' => s.push('\x08'),
                    'f' => s.push('\x0c'),
                    'v' => s.push('\x0b'),
                    '\\' | '"' | '\'' | '?' => s.push(e),
                    'x' => {
                        let mut v = 0u32;
                        let mut n = 0;
                        while i < chars.len() && chars[i].is_ascii_hexdigit() && n < 2 {
                            v = v * 16 + chars[i].to_digit(16).unwrap_or(0);
                            adv!();
                            n += 1;
                        }
                        s.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    }
                    'u' | 'U' => {
                        let want = if e == 'u' { 4 } else { 8 };
                        let mut v = 0u32;
                        let mut n = 0;
                        while i < chars.len() && chars[i].is_ascii_hexdigit() && n < want {
                            v = v.saturating_mul(16).saturating_add(chars[i].to_digit(16).unwrap_or(0));
                            adv!();
                            n += 1;
                        }
                        match char::from_u32(v) {
                            Some(ch) if n == want => s.push(ch),
                            _ => diags.push(Diagnostic::error(Code::Lexical, span, "invalid unicode escape")),
                        }
                    }
                    '0'..='7' => {
                        let mut v = e.to_digit(8).unwrap_or(0);
                        let mut n = 1;
                        while i < chars.len() && n < 3 && chars[i].is_digit(8) {
                            v = v * 8 + chars[i].to_digit(8).unwrap_or(0);
                            adv!();
                            n += 1;
                        }
                        s.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                    }
                    other => {
                        diags.push(Diagnostic::error(
                            Code::Lexical,
                            span,
                            format!("unknown escape sequence \\{other}"),
                        ));
                    }
                }
            }
            let raw: String = chars[raw_start..raw_end.max(raw_start)].iter().collect();
            out.push(Token { tok: Tok::Str(s, raw), span });
            continue;
        }
        if c.is_ascii_digit() || (c == '.' && i + 1 < chars.len() && chars[i + 1].is_ascii_digit()) {
            let start = i;
            while i < chars.len()
                && (chars[i].is_ascii_alphanumeric()
                    || chars[i] == '.'
                    || ((chars[i] == '+' || chars[i] == '-')
                        && matches!(chars[i - 1], 'e' | 'E')
                        && !text_is_hex(&chars[start..i])))
            {
                adv!();
            }
            let lit: String = chars[start..i].iter().collect();
            match parse_number(&lit) {
                Some(t) => out.push(Token { tok: t, span }),
                None => diags.push(Diagnostic::error(Code::Lexical, span, format!("invalid number {lit:?}"))),
            }
            continue;
        }
        if c.is_alphabetic() || c == '_' || c == '\\' {
            let escaped = c == '\\';
            if escaped {
                adv!();
            }
            let start = i;
            while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == '_') {
                adv!();
            }
            let name: String = chars[start..i].iter().collect();
            if name.is_empty() {
                diags.push(Diagnostic::error(Code::Lexical, span, "a backslash must be followed by an identifier"));
                continue;
            }
            out.push(Token { tok: Tok::Ident { name, escaped }, span });
            continue;
        }
        diags.push(Diagnostic::error(Code::Lexical, span, format!("unexpected character {c:?}")));
        adv!();
    }
    out
}

fn text_is_hex(prefix: &[char]) -> bool {
    prefix.len() >= 2 && prefix[0] == '0' && (prefix[1] == 'x' || prefix[1] == 'X')
}

fn parse_number(lit: &str) -> Option<Tok> {
    let l = lit.to_ascii_lowercase();
    if let Some(hex) = l.strip_prefix("0x") {
        return i128::from_str_radix(hex, 16).ok().map(Tok::Int);
    }
    let is_float = l.contains('.') || (l.contains('e')) || l.ends_with('f') || l.ends_with('d');
    if is_float {
        let body = l.trim_end_matches(['f', 'd']);
        return body.parse::<f64>().ok().map(Tok::Float);
    }
    if l.len() > 1 && l.starts_with('0') {
        return i128::from_str_radix(&l[1..], 8).ok().map(Tok::Int);
    }
    l.parse::<i128>().ok().map(Tok::Int)
}
