//! The Slice preprocessor: `#include`, `#pragma once`, `#define`/`#undef`, and
//! `#if`/`#ifdef`/`#ifndef`/`#elif`/`#else`/`#endif` with `defined(X)`, `!`, `&&`, `||`.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use crate::diag::{Code, Diagnostic, Span};
use crate::lexer::{lex, Token};
use crate::{SourceFile, SourceMap};

/// Tokens of one file and everything it includes, each run tagged with whether it came from
/// an included file.
pub struct Preprocessed {
    /// `(tokens, included)` runs in order.
    pub runs: Vec<(Vec<Token>, bool)>,
}

/// Runs the preprocessor.
pub struct Preprocessor<'a> {
    include_dirs: &'a [PathBuf],
    defines: HashSet<String>,
    once: HashSet<PathBuf>,
    active: Vec<PathBuf>,
    main_files: HashSet<PathBuf>,
    /// Loaded files.
    pub sources: SourceMap,
    /// Problems found.
    pub diags: Vec<Diagnostic>,
}

impl<'a> Preprocessor<'a> {
    /// A preprocessor searching `include_dirs` for `#include <…>`, with `__SLICE2RS__` defined.
    pub fn new(include_dirs: &'a [PathBuf]) -> Self {
        let mut defines = HashSet::new();
        defines.insert("__SLICE2RS__".to_string());
        Preprocessor {
            include_dirs,
            defines,
            once: HashSet::new(),
            active: Vec::new(),
            main_files: HashSet::new(),
            sources: SourceMap::default(),
            diags: Vec::new(),
        }
    }

    /// Declares the files given to the compiler: their definitions are generated even when
    /// another of them includes them first.
    pub fn set_main_files(&mut self, files: &[PathBuf]) {
        self.main_files = files.iter().map(|f| f.canonicalize().unwrap_or_else(|_| f.clone())).collect();
    }

    /// Adds a file that exists only in memory (for tests and the fuzzer).
    pub fn add_virtual(&mut self, path: &str, text: &str) -> u32 {
        self.sources.files.push(SourceFile { path: path.to_string(), text: text.to_string() });
        (self.sources.files.len() - 1) as u32
    }

    /// Preprocesses a file on disk.
    pub fn file(&mut self, path: &Path, included: bool, out: &mut Preprocessed, from: Span) {
        let canon = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
        if self.once.contains(&canon) {
            return;
        }
        if self.active.contains(&canon) || self.active.len() > 64 {
            self.diags.push(Diagnostic::error(
                Code::Preprocessor,
                from,
                format!("recursive #include of {}", path.display()),
            ));
            return;
        }
        let text = match std::fs::read_to_string(path) {
            Ok(t) => t,
            Err(e) => {
                self.diags.push(Diagnostic::error(
                    Code::Preprocessor,
                    from,
                    format!("cannot read {}: {e}", path.display()),
                ));
                return;
            }
        };
        let id = self.add_virtual(&path.display().to_string(), &text);
        self.active.push(canon.clone());
        let included = included && !self.main_files.contains(&canon);
        self.text(id, &text, Some(path), included, out, &canon);
        self.active.pop();
    }

    /// Preprocesses the text of file `id`.
    pub fn text(
        &mut self,
        id: u32,
        text: &str,
        path: Option<&Path>,
        included: bool,
        out: &mut Preprocessed,
        canon: &Path,
    ) {
        // Each entry: (this branch active, some branch of the group taken, parent active).
        let mut stack: Vec<(bool, bool)> = Vec::new();
        let mut pending = String::new();
        let mut pending_first = 1u32;
        let active = |stack: &Vec<(bool, bool)>| stack.iter().all(|(a, _)| *a);
        let flush = |me: &mut Self, pending: &mut String, first: u32, out: &mut Preprocessed| {
            if !pending.trim().is_empty() {
                let toks = lex(pending, id, first, &mut me.diags);
                out.runs.push((toks, included));
            }
            pending.clear();
        };
        for (n, line) in text.lines().enumerate() {
            let lineno = n as u32 + 1;
            let trimmed = line.trim_start();
            if !trimmed.starts_with('#') {
                if pending.is_empty() {
                    pending_first = lineno;
                }
                if active(&stack) {
                    pending.push_str(line);
                }
                pending.push('\n');
                continue;
            }
            let span = Span { file: id, line: lineno, col: (line.len() - trimmed.len() + 1) as u32 };
            let directive = trimmed[1..].trim();
            let (word, rest) = directive.split_once(char::is_whitespace).unwrap_or((directive, ""));
            let rest = rest.split("//").next().unwrap_or("").trim();
            // Keep line numbers: the directive line becomes empty.
            if pending.is_empty() {
                pending_first = lineno;
            }
            pending.push('\n');
            match word {
                "ifdef" | "ifndef" => {
                    let on = self.defines.contains(rest) == (word == "ifdef");
                    stack.push((on, on));
                }
                "if" => match self.eval(rest) {
                    Ok(on) => stack.push((on, on)),
                    Err(msg) => {
                        self.diags.push(Diagnostic::error(Code::Preprocessor, span, msg));
                        stack.push((false, true));
                    }
                },
                "elif" => match stack.last_mut() {
                    Some(top) => {
                        let on = !top.1 && self.eval(rest).unwrap_or(false);
                        top.0 = on;
                        top.1 |= on;
                    }
                    None => self.diags.push(Diagnostic::error(Code::Preprocessor, span, "#elif without #if")),
                },
                "else" => match stack.last_mut() {
                    Some(top) => {
                        top.0 = !top.1;
                        top.1 = true;
                    }
                    None => self.diags.push(Diagnostic::error(Code::Preprocessor, span, "#else without #if")),
                },
                "endif" => {
                    if stack.pop().is_none() {
                        self.diags.push(Diagnostic::error(Code::Preprocessor, span, "#endif without #if"));
                    }
                }
                _ if !active(&stack) => {}
                "define" => {
                    let name = rest.split_whitespace().next().unwrap_or("");
                    if name.is_empty() {
                        self.diags.push(Diagnostic::error(Code::Preprocessor, span, "#define needs a name"));
                    } else {
                        self.defines.insert(name.to_string());
                    }
                }
                "undef" => {
                    self.defines.remove(rest);
                }
                "pragma" => {
                    if rest == "once" {
                        self.once.insert(canon.to_path_buf());
                    }
                }
                "include" => {
                    flush(self, &mut pending, pending_first, out);
                    pending_first = lineno + 1;
                    let target = if let Some(r) = rest.strip_prefix('<').and_then(|r| r.strip_suffix('>')) {
                        self.find(r, None)
                    } else if let Some(r) = rest.strip_prefix('"').and_then(|r| r.strip_suffix('"')) {
                        self.find(r, path.and_then(Path::parent))
                    } else {
                        self.diags.push(Diagnostic::error(
                            Code::Preprocessor,
                            span,
                            format!("malformed #include {rest:?}"),
                        ));
                        continue;
                    };
                    match target {
                        Some(p) => self.file(&p, true, out, span),
                        None => self.diags.push(Diagnostic::error(
                            Code::Preprocessor,
                            span,
                            format!("cannot find include file {rest}"),
                        )),
                    }
                }
                "error" => self.diags.push(Diagnostic::error(Code::Preprocessor, span, format!("#error {rest}"))),
                other => {
                    self.diags.push(Diagnostic::error(Code::Preprocessor, span, format!("unknown directive #{other}")))
                }
            }
        }
        if !stack.is_empty() {
            self.diags.push(Diagnostic::error(
                Code::Preprocessor,
                Span { file: id, line: text.lines().count() as u32, col: 1 },
                "missing #endif",
            ));
        }
        flush(self, &mut pending, pending_first, out);
    }

    fn find(&self, name: &str, relative_to: Option<&Path>) -> Option<PathBuf> {
        if let Some(dir) = relative_to {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
        self.include_dirs.iter().map(|d| d.join(name)).find(|p| p.is_file())
    }

    /// Evaluates an `#if` expression of `defined(X)`, `defined X`, `!`, `&&`, `||`, parentheses,
    /// and the integers 0 and 1.
    fn eval(&self, expr: &str) -> Result<bool, String> {
        let toks = tokenize_expr(expr)?;
        let mut pos = 0;
        let v = self.or(&toks, &mut pos)?;
        if pos != toks.len() {
            return Err(format!("unexpected {:?} in #if expression", toks[pos]));
        }
        Ok(v)
    }

    fn or(&self, t: &[String], pos: &mut usize) -> Result<bool, String> {
        let mut v = self.and(t, pos)?;
        while t.get(*pos).map(String::as_str) == Some("||") {
            *pos += 1;
            v |= self.and(t, pos)?;
        }
        Ok(v)
    }

    fn and(&self, t: &[String], pos: &mut usize) -> Result<bool, String> {
        let mut v = self.unary(t, pos)?;
        while t.get(*pos).map(String::as_str) == Some("&&") {
            *pos += 1;
            v &= self.unary(t, pos)?;
        }
        Ok(v)
    }

    fn unary(&self, t: &[String], pos: &mut usize) -> Result<bool, String> {
        let tok = t.get(*pos).ok_or("incomplete #if expression")?.clone();
        *pos += 1;
        match tok.as_str() {
            "!" => Ok(!self.unary(t, pos)?),
            "(" => {
                let v = self.or(t, pos)?;
                if t.get(*pos).map(String::as_str) != Some(")") {
                    return Err("missing ')' in #if expression".into());
                }
                *pos += 1;
                Ok(v)
            }
            "defined" => {
                let paren = t.get(*pos).map(String::as_str) == Some("(");
                if paren {
                    *pos += 1;
                }
                let name = t.get(*pos).ok_or("defined needs a name")?.clone();
                *pos += 1;
                if paren {
                    if t.get(*pos).map(String::as_str) != Some(")") {
                        return Err("missing ')' after defined(".into());
                    }
                    *pos += 1;
                }
                Ok(self.defines.contains(&name))
            }
            "0" => Ok(false),
            "1" => Ok(true),
            other if other.chars().all(|c| c.is_alphanumeric() || c == '_') => Ok(self.defines.contains(other)),
            other => Err(format!("unexpected {other:?} in #if expression")),
        }
    }
}

fn tokenize_expr(s: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < c.len() {
        match c[i] {
            ' ' | '\t' => i += 1,
            '(' | ')' | '!' => {
                out.push(c[i].to_string());
                i += 1;
            }
            '&' | '|' if i + 1 < c.len() && c[i + 1] == c[i] => {
                out.push(format!("{}{}", c[i], c[i]));
                i += 2;
            }
            ch if ch.is_alphanumeric() || ch == '_' => {
                let start = i;
                while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                    i += 1;
                }
                out.push(c[start..i].iter().collect());
            }
            other => return Err(format!("unexpected {other:?} in #if expression")),
        }
    }
    Ok(out)
}
