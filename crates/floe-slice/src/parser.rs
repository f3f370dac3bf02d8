//! A recursive-descent parser for Slice 3.7.

use crate::ast::*;
use crate::diag::{Code, Diagnostic, Span};
use crate::lexer::{Tok, Token};

/// Slice keywords (case-sensitive, as in Ice 3.7: `value` is an identifier, `Value` a keyword).
pub const KEYWORDS: &[&str] = &[
    "bool",
    "byte",
    "class",
    "const",
    "dictionary",
    "double",
    "enum",
    "exception",
    "extends",
    "false",
    "float",
    "idempotent",
    "implements",
    "int",
    "interface",
    "local",
    "LocalObject",
    "long",
    "module",
    "Object",
    "optional",
    "out",
    "sequence",
    "short",
    "string",
    "struct",
    "throws",
    "true",
    "Value",
    "void",
];

struct Tk {
    tok: Tok,
    span: Span,
    doc: Option<String>,
    included: bool,
}

/// Parses preprocessed token runs into global metadata and top-level definitions.
pub struct Parser {
    toks: Vec<Tk>,
    pos: usize,
    /// Problems found.
    pub diags: Vec<Diagnostic>,
    /// Global metadata (`[["…"]]`).
    pub global_metadata: Vec<String>,
    /// Global metadata with the file it appears in (`Span::file`).
    pub file_metadata: Vec<(u32, String)>,
    /// Every name a definition gives (of a module, type, member, parameter, enumerator or
    /// constant), where it is given; names that refer to definitions are not in it.
    pub defined: Vec<(String, Span)>,
    eof: Span,
}

type PResult<T> = Result<T, ()>;

impl Parser {
    /// A parser over `(tokens, included)` runs.
    pub fn new(runs: Vec<(Vec<Token>, bool)>) -> Self {
        let mut toks = Vec::new();
        let mut eof = Span::default();
        for (run, included) in runs {
            let mut doc = None;
            for t in run {
                eof = t.span;
                match t.tok {
                    Tok::Doc(d) => doc = Some(d),
                    tok => toks.push(Tk { tok, span: t.span, doc: doc.take(), included }),
                }
            }
        }
        Parser {
            toks,
            pos: 0,
            diags: Vec::new(),
            global_metadata: Vec::new(),
            file_metadata: Vec::new(),
            defined: Vec::new(),
            eof,
        }
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn span(&self) -> Span {
        self.toks.get(self.pos).map(|t| t.span).unwrap_or(self.eof)
    }

    fn doc(&self) -> Option<String> {
        self.toks.get(self.pos).and_then(|t| t.doc.clone())
    }

    fn included(&self) -> bool {
        self.toks.get(self.pos).map(|t| t.included).unwrap_or(false)
    }

    fn err<T>(&mut self, msg: impl Into<String>) -> PResult<T> {
        let found = match self.peek() {
            None => "end of input".to_string(),
            Some(t) => describe(t),
        };
        self.diags.push(Diagnostic::error(Code::Syntax, self.span(), format!("{}, found {found}", msg.into())));
        Err(())
    }

    fn is_punct(&self, c: char) -> bool {
        matches!(self.peek(), Some(Tok::Punct(p)) if *p == c)
    }

    fn is_kw(&self, kw: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident { name, escaped: false }) if name == kw)
    }

    fn eat_punct(&mut self, c: char) -> bool {
        if self.is_punct(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_kw(&mut self, kw: &str) -> bool {
        if self.is_kw(kw) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect_punct(&mut self, c: char) -> PResult<()> {
        if self.eat_punct(c) {
            Ok(())
        } else {
            self.err(format!("expected '{c}'"))
        }
    }

    /// An identifier that is not a keyword (escaped identifiers may be).
    fn ident(&mut self, what: &str) -> PResult<(String, Span)> {
        let span = self.span();
        match self.peek().cloned() {
            Some(Tok::Ident { name, escaped }) => {
                if !escaped && KEYWORDS.contains(&name.as_str()) {
                    self.diags.push(Diagnostic::error(
                        Code::KeywordIdentifier,
                        span,
                        format!("expected {what}, found keyword `{name}` (escape it as `\\{name}`)"),
                    ));
                    return Err(());
                }
                self.pos += 1;
                Ok((name, span))
            }
            _ => self.err(format!("expected {what}")),
        }
    }

    /// An identifier that names what is being defined (see [`defined`](Self::defined)).
    fn def_ident(&mut self, what: &str) -> PResult<(String, Span)> {
        let (name, span) = self.ident(what)?;
        self.defined.push((name.clone(), span));
        Ok((name, span))
    }

    fn scoped_name(&mut self) -> PResult<(String, Span)> {
        let span = self.span();
        let mut s = String::new();
        if matches!(self.peek(), Some(Tok::Scope)) {
            self.pos += 1;
            s.push_str("::");
        }
        let (first, _) = self.ident("a name")?;
        s.push_str(&first);
        while matches!(self.peek(), Some(Tok::Scope)) {
            self.pos += 1;
            let (n, _) = self.ident("a name after '::'")?;
            s.push_str("::");
            s.push_str(&n);
        }
        Ok((s, span))
    }

    fn metadata(&mut self) -> PResult<Vec<String>> {
        let mut md = Vec::new();
        while self.is_punct('[') {
            self.pos += 1;
            loop {
                match self.peek().cloned() {
                    Some(Tok::Str(s, _)) => {
                        self.pos += 1;
                        md.push(s);
                    }
                    _ => return self.err("expected a metadata string"),
                }
                if !self.eat_punct(',') {
                    break;
                }
            }
            self.expect_punct(']')?;
        }
        Ok(md)
    }

    /// Parses the whole input.
    pub fn parse(&mut self) -> Vec<Definition> {
        let mut defs = Vec::new();
        while self.peek().is_some() {
            if matches!(self.peek(), Some(Tok::GlobalOpen)) {
                self.pos += 1;
                loop {
                    let file = self.span().file;
                    match self.peek().cloned() {
                        Some(Tok::Str(s, _)) => {
                            self.pos += 1;
                            self.file_metadata.push((file, s.clone()));
                            self.global_metadata.push(s);
                        }
                        _ => {
                            let _ = self.err::<()>("expected a metadata string");
                            self.recover_top();
                            break;
                        }
                    }
                    if !self.eat_punct(',') {
                        if !matches!(self.peek(), Some(Tok::GlobalClose)) {
                            let _ = self.err::<()>("expected ']]'");
                            self.recover_top();
                        } else {
                            self.pos += 1;
                        }
                        break;
                    }
                }
                continue;
            }
            match self.definition() {
                Ok(d) => defs.push(d),
                Err(()) => self.recover_top(),
            }
        }
        defs
    }

    /// Skips to just after the next ';' at nesting depth 0 (or a closing '}').
    fn recover_top(&mut self) {
        let mut depth = 0i32;
        while let Some(t) = self.peek().cloned() {
            self.pos += 1;
            match t {
                Tok::Punct('{') => depth += 1,
                Tok::Punct('}') => {
                    depth -= 1;
                    if depth <= 0 {
                        self.eat_punct(';');
                        return;
                    }
                }
                Tok::Punct(';') if depth <= 0 => return,
                _ => {}
            }
        }
    }

    fn definition(&mut self) -> PResult<Definition> {
        let doc = self.doc();
        let included = self.included();
        let metadata = self.metadata()?;
        let local = self.eat_kw("local");
        let span = self.span();
        let kw = match self.peek() {
            Some(Tok::Ident { name, escaped: false }) => name.clone(),
            _ => return self.err("expected a definition"),
        };
        self.pos += 1;
        let (name, kind) = match kw.as_str() {
            "module" => {
                let (name, _) = self.def_ident("a module name")?;
                // Ice 3.8's nested module syntax, `module A::B::C { … }`: modules `B` and `C`
                // inside `A`, the definitions in `C`.
                let mut inner = Vec::new();
                while matches!(self.peek(), Some(Tok::Scope)) {
                    self.pos += 1;
                    inner.push(self.def_ident("a module name after '::'")?.0);
                }
                self.expect_punct('{')?;
                let mut defs = Vec::new();
                while !self.is_punct('}') {
                    if self.peek().is_none() {
                        return self.err("expected '}' to close the module");
                    }
                    match self.definition() {
                        Ok(d) => defs.push(d),
                        Err(()) => self.recover_top(),
                    }
                }
                self.pos += 1;
                if defs.is_empty() {
                    self.diags.push(Diagnostic::error(Code::Syntax, span, format!("module `{name}` is empty")));
                }
                let defs = inner.into_iter().rev().fold(defs, |defs, inner_name| {
                    vec![Definition {
                        name: inner_name,
                        kind: DefKind::Module(defs),
                        local: false,
                        metadata: Vec::new(),
                        doc: None,
                        included,
                        span,
                    }]
                });
                (name, DefKind::Module(defs))
            }
            "interface" => {
                let (name, _) = self.def_ident("an interface name")?;
                if self.is_punct(';') {
                    (name, DefKind::Interface { bases: vec![], ops: vec![], forward: true })
                } else {
                    let mut bases = Vec::new();
                    if self.eat_kw("extends") {
                        loop {
                            let (b, s) = self.scoped_name()?;
                            bases.push((b, s, None));
                            if !self.eat_punct(',') {
                                break;
                            }
                        }
                    }
                    self.expect_punct('{')?;
                    let mut ops = Vec::new();
                    while !self.is_punct('}') {
                        if self.peek().is_none() {
                            return self.err("expected '}' to close the interface");
                        }
                        match self.operation_or_member(true) {
                            Ok(Either::Op(o)) => ops.push(o),
                            Ok(Either::Member(m)) => {
                                self.diags.push(Diagnostic::error(
                                    Code::Syntax,
                                    m.span,
                                    "interfaces cannot have data members",
                                ));
                            }
                            Err(()) => self.recover_member(),
                        }
                    }
                    self.pos += 1;
                    (name, DefKind::Interface { bases, ops, forward: false })
                }
            }
            "class" => {
                let (name, _) = self.def_ident("a class name")?;
                let mut compact_id = None;
                let mut compact_id_name = None;
                if self.eat_punct('(') {
                    match self.peek().cloned() {
                        Some(Tok::Int(v)) if (0..=i32::MAX as i128).contains(&v) => {
                            self.pos += 1;
                            compact_id = Some(v as i32);
                        }
                        Some(Tok::Ident { .. }) | Some(Tok::Scope) => compact_id_name = Some(self.scoped_name()?),
                        _ => return self.err("expected a compact id (a non-negative integer or an integer constant)"),
                    }
                    self.expect_punct(')')?;
                }
                if self.is_punct(';') {
                    (
                        name,
                        DefKind::Class {
                            base: None,
                            implements: vec![],
                            compact_id,
                            compact_id_name,
                            members: vec![],
                            ops: vec![],
                            forward: true,
                        },
                    )
                } else {
                    let mut base = None;
                    if self.eat_kw("extends") {
                        let (b, s) = self.scoped_name()?;
                        base = Some((b, s, None));
                    }
                    let mut implements = Vec::new();
                    if self.eat_kw("implements") {
                        loop {
                            let (i, s) = self.scoped_name()?;
                            implements.push((i, s, None));
                            if !self.eat_punct(',') {
                                break;
                            }
                        }
                    }
                    self.expect_punct('{')?;
                    let mut members = Vec::new();
                    let mut ops = Vec::new();
                    while !self.is_punct('}') {
                        if self.peek().is_none() {
                            return self.err("expected '}' to close the class");
                        }
                        match self.operation_or_member(false) {
                            Ok(Either::Op(o)) => ops.push(o),
                            Ok(Either::Member(m)) => members.push(m),
                            Err(()) => self.recover_member(),
                        }
                    }
                    self.pos += 1;
                    (
                        name,
                        DefKind::Class { base, implements, compact_id, compact_id_name, members, ops, forward: false },
                    )
                }
            }
            "exception" | "struct" => {
                let (name, _) = self.def_ident(if kw == "struct" { "a struct name" } else { "an exception name" })?;
                let mut base = None;
                if kw == "exception" && self.eat_kw("extends") {
                    let (b, s) = self.scoped_name()?;
                    base = Some((b, s, None));
                }
                self.expect_punct('{')?;
                let mut members = Vec::new();
                while !self.is_punct('}') {
                    if self.peek().is_none() {
                        return self.err("expected '}'");
                    }
                    match self.operation_or_member(false) {
                        Ok(Either::Member(m)) => members.push(m),
                        Ok(Either::Op(o)) => {
                            self.diags.push(Diagnostic::error(
                                Code::Syntax,
                                o.span,
                                format!("a {kw} cannot have operations"),
                            ));
                        }
                        Err(()) => self.recover_member(),
                    }
                }
                self.pos += 1;
                if kw == "struct" {
                    if members.is_empty() {
                        self.diags.push(Diagnostic::error(
                            Code::Syntax,
                            span,
                            format!("struct `{name}` has no members"),
                        ));
                    }
                    (name, DefKind::Struct { members })
                } else {
                    (name, DefKind::Exception { base, members })
                }
            }
            "enum" => {
                let (name, _) = self.def_ident("an enum name")?;
                self.expect_punct('{')?;
                let mut enumerators = Vec::new();
                while !self.is_punct('}') {
                    let doc = self.doc();
                    let (en, es) = self.def_ident("an enumerator")?;
                    let explicit = if self.eat_punct('=') { Some(self.const_value()?) } else { None };
                    enumerators.push(Enumerator { name: en, explicit, value: 0, doc, span: es });
                    if !self.eat_punct(',') {
                        break;
                    }
                }
                self.expect_punct('}')?;
                if enumerators.is_empty() {
                    self.diags.push(Diagnostic::error(Code::Syntax, span, format!("enum `{name}` has no enumerators")));
                }
                (name, DefKind::Enum { enumerators })
            }
            "sequence" => {
                self.expect_punct('<')?;
                let _ = self.metadata()?;
                let elem = self.type_ref()?;
                self.expect_punct('>')?;
                let (name, _) = self.def_ident("a sequence name")?;
                (name, DefKind::Sequence { elem })
            }
            "dictionary" => {
                self.expect_punct('<')?;
                let _ = self.metadata()?;
                let key = self.type_ref()?;
                self.expect_punct(',')?;
                let _ = self.metadata()?;
                let value = self.type_ref()?;
                self.expect_punct('>')?;
                let (name, _) = self.def_ident("a dictionary name")?;
                (name, DefKind::Dictionary { key, value })
            }
            "const" => {
                let _ = self.metadata()?;
                let ty = self.type_ref()?;
                let (name, _) = self.def_ident("a constant name")?;
                self.expect_punct('=')?;
                let literal = match self.peek() {
                    Some(Tok::Str(_, raw)) => Some(raw.clone()),
                    _ => None,
                };
                let value = self.const_value()?;
                (name, DefKind::Const { ty, value, literal })
            }
            other => {
                self.pos -= 1;
                return self.err(format!("expected a definition (module, interface, class, …), not `{other}`"));
            }
        };
        // Slice 3.7 makes the ';' after a closing brace optional; elsewhere it is required.
        let braced = matches!(
            kind,
            DefKind::Module(_)
                | DefKind::Interface { forward: false, .. }
                | DefKind::Class { forward: false, .. }
                | DefKind::Exception { .. }
                | DefKind::Struct { .. }
                | DefKind::Enum { .. }
        );
        if braced {
            self.eat_punct(';');
        } else {
            self.expect_punct(';')?;
        }
        Ok(Definition { name, kind, local, metadata, doc, included, span })
    }

    fn recover_member(&mut self) {
        let mut depth = 0;
        while let Some(t) = self.peek().cloned() {
            match t {
                Tok::Punct('}') if depth == 0 => return,
                Tok::Punct('(') => depth += 1,
                Tok::Punct(')') => depth -= 1,
                Tok::Punct(';') if depth <= 0 => {
                    self.pos += 1;
                    return;
                }
                _ => {}
            }
            self.pos += 1;
        }
    }

    fn optional_tag(&mut self) -> PResult<Option<i32>> {
        if !self.eat_kw("optional") {
            return Ok(None);
        }
        self.expect_punct('(')?;
        let tag = match self.peek().cloned() {
            Some(Tok::Int(v)) if (0..=i32::MAX as i128).contains(&v) => {
                self.pos += 1;
                v as i32
            }
            Some(Tok::Ident { .. }) | Some(Tok::Scope) => {
                // A constant used as tag: accepted by name, value checked later as 0.
                self.scoped_name()?;
                0
            }
            _ => return self.err("expected a tag (a non-negative integer)"),
        };
        self.expect_punct(')')?;
        Ok(Some(tag))
    }

    fn operation_or_member(&mut self, interface: bool) -> PResult<Either> {
        let doc = self.doc();
        let metadata = self.metadata()?;
        let span = self.span();
        let idempotent = self.eat_kw("idempotent");
        let tag = self.optional_tag()?;
        let ret = if self.eat_kw("void") {
            if tag.is_some() {
                return self.err("void cannot be optional");
            }
            None
        } else {
            Some(self.type_ref()?)
        };
        let (name, nspan) = self.def_ident("a name")?;
        if self.eat_punct('(') {
            let mut params = Vec::new();
            if !self.is_punct(')') {
                loop {
                    let mut pmd = self.metadata()?;
                    let pspan = self.span();
                    let out = self.eat_kw("out");
                    if out {
                        // Ice's grammar puts a parameter's metadata after `out`
                        // (`out ["python:seq:list"] ByteString b2`).
                        pmd.extend(self.metadata()?);
                    }
                    let ptag = self.optional_tag()?;
                    let ty = self.type_ref()?;
                    let (pname, _) = self.def_ident("a parameter name")?;
                    params.push(Param { name: pname, ty, out, tag: ptag, metadata: pmd, span: pspan });
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            self.expect_punct(')')?;
            let mut throws = Vec::new();
            if self.eat_kw("throws") {
                loop {
                    let (t, s) = self.scoped_name()?;
                    throws.push((t, s, None));
                    if !self.eat_punct(',') {
                        break;
                    }
                }
            }
            self.expect_punct(';')?;
            return Ok(Either::Op(Operation {
                name,
                ret,
                ret_tag: tag,
                params,
                idempotent,
                throws,
                metadata,
                doc,
                span: nspan,
            }));
        }
        if interface || idempotent {
            return self.err("expected '(' after the operation name");
        }
        let Some(ty) = ret else {
            return self.err("a data member cannot be void");
        };
        let default = if self.eat_punct('=') { Some(self.const_value()?) } else { None };
        self.expect_punct(';')?;
        Ok(Either::Member(Member { name, ty, tag, default, metadata, doc, span }))
    }

    fn type_ref(&mut self) -> PResult<TypeRef> {
        let span = self.span();
        let builtin = match self.peek() {
            Some(Tok::Ident { name, escaped: false }) => match name.as_str() {
                "bool" => Some(Builtin::Bool),
                "byte" => Some(Builtin::Byte),
                "short" => Some(Builtin::Short),
                "int" => Some(Builtin::Int),
                "long" => Some(Builtin::Long),
                "float" => Some(Builtin::Float),
                "double" => Some(Builtin::Double),
                "string" => Some(Builtin::String),
                "Object" => Some(Builtin::Object),
                "Value" => Some(Builtin::Value),
                "LocalObject" => Some(Builtin::LocalObject),
                _ => None,
            },
            _ => None,
        };
        if let Some(b) = builtin {
            self.pos += 1;
            if self.eat_punct('*') {
                if b == Builtin::Object {
                    return Ok(TypeRef::Builtin(Builtin::ObjectProxy, span));
                }
                self.diags.push(Diagnostic::error(Code::Syntax, span, format!("`{}*` is not a proxy type", b.name())));
            }
            return Ok(TypeRef::Builtin(b, span));
        }
        if !matches!(self.peek(), Some(Tok::Ident { .. }) | Some(Tok::Scope)) {
            return self.err("expected a type");
        }
        let (name, span) = self.scoped_name()?;
        let proxy = self.eat_punct('*');
        Ok(TypeRef::Named { name, proxy, span, resolved: None })
    }

    fn const_value(&mut self) -> PResult<ConstValue> {
        let neg = if self.eat_punct('-') {
            true
        } else {
            self.eat_punct('+');
            false
        };
        let span = self.span();
        let v = match self.peek().cloned() {
            Some(Tok::Int(v)) => {
                self.pos += 1;
                ConstValue::Int(if neg { -v } else { v })
            }
            Some(Tok::Float(v)) => {
                self.pos += 1;
                ConstValue::Float(if neg { -v } else { v })
            }
            Some(Tok::Str(s, _)) if !neg => {
                self.pos += 1;
                ConstValue::Str(s)
            }
            Some(Tok::Ident { name, escaped: false }) if !neg && (name == "true" || name == "false") => {
                self.pos += 1;
                ConstValue::Bool(name == "true")
            }
            Some(Tok::Ident { .. }) | Some(Tok::Scope) if !neg => {
                let (n, _) = self.scoped_name()?;
                ConstValue::Name(n, span)
            }
            _ => return self.err("expected a constant value"),
        };
        Ok(v)
    }
}

enum Either {
    Op(Operation),
    Member(Member),
}

fn describe(t: &Tok) -> String {
    match t {
        Tok::Ident { name, .. } => format!("`{name}`"),
        Tok::Int(v) => format!("`{v}`"),
        Tok::Float(v) => format!("`{v}`"),
        Tok::Str(s, _) => format!("{s:?}"),
        Tok::Doc(_) => "a doc comment".into(),
        Tok::Scope => "`::`".into(),
        Tok::Punct(c) => format!("`{c}`"),
        Tok::GlobalOpen => "`[[`".into(),
        Tok::GlobalClose => "`]]`".into(),
    }
}
