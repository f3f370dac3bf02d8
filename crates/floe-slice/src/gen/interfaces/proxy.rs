//! Typed proxies: `NamePrx` with an async method and a `_blocking` one per operation (its own
//! and inherited), and the error enum of each operation that declares exceptions.

use super::{op_mode, returns_values, Gen, SeparateTail};
use crate::ast::*;
use crate::gen::{camel, finish_classes, ident, snake};

impl Gen<'_> {
    /// The error enum of each of the interface's own operations that declare exceptions
    /// (inherited operations use their interface's).
    pub(super) fn gen_error_enums(&mut self, d: &Definition, abs: &str, ops: &[(String, &Operation)]) {
        let f = self.f.clone();
        let name = ident(&d.name);
        for (owner, o) in ops {
            if owner != abs || o.throws.is_empty() {
                continue;
            }
            let ename = format!("{name}{}Error", camel(&o.name));
            self.line(&format!("/// The user exceptions `{}::{}` may raise.", d.name, o.name));
            self.line("#[derive(Debug, Clone, PartialEq)]");
            self.line(&format!("pub enum {ename} {{"));
            for (e, variant) in self.error_variants(o) {
                let p = self.path(&e);
                self.line(&format!("    /// `{e}`"));
                self.line(&format!("    {variant}({p}),"));
            }
            self.line("}");
            self.line("");
            self.line(&format!("impl From<{ename}> for {f}::Error {{"));
            self.line("    /// The exception as a servant raises it (to relay it, for instance).");
            self.line(&format!("    fn from(e: {ename}) -> Self {{"));
            self.line("        match e {");
            for (_, variant) in self.error_variants(o) {
                self.line(&format!("            {ename}::{variant}(x) => {f}::Error::user(x),"));
            }
            self.line("        }");
            self.line("    }");
            self.line("}");
            self.line("");
            self.line(&format!("impl std::fmt::Display for {ename} {{"));
            self.line("    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {");
            self.line("        write!(f, \"{self:?}\")");
            self.line("    }");
            self.line("}");
            self.line("");
        }
    }

    /// The proxy struct `<prx>`, its `Proxy` and `Display` impls, and a method pair per
    /// operation.
    pub(super) fn gen_proxy(&mut self, d: &Definition, abs: &str, prx: &str, ops: &[(String, &Operation)]) {
        let f = self.f.clone();
        self.doc(&d.doc);
        self.line(&format!("/// Proxy for `{abs}`."));
        self.line("#[derive(Clone, Debug, PartialEq)]");
        self.line(&format!("pub struct {prx}({f}::ObjectPrx);"));
        self.line("");
        self.line(&format!("impl {f}::Proxy for {prx} {{"));
        self.line(&format!("    const TYPE_ID: &'static str = {abs:?};"));
        self.line(&format!("    fn from_object(proxy: {f}::ObjectPrx) -> Self {{"));
        self.line("        Self(proxy)");
        self.line("    }");
        self.line(&format!("    fn as_object(&self) -> &{f}::ObjectPrx {{"));
        self.line("        &self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl std::fmt::Display for {prx} {{"));
        self.line("    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {");
        self.line("        std::fmt::Display::fmt(&self.0, f)");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {prx} {{"));
        self.depth += 1;
        for (owner, o) in ops {
            self.gen_proxy_op(d, owner, o);
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
    }

    /// An operation's proxy methods: `name` (async) and `name_blocking`.
    fn gen_proxy_op(&mut self, iface: &Definition, owner: &str, o: &Operation) {
        let f = self.f.clone();
        let fname = ident(&snake(&o.name));
        let mut params = vec!["&self".to_string()];
        params.extend(self.proxy_params(o));
        let args: Vec<String> = o.params.iter().filter(|p| !p.out).map(|p| ident(&snake(&p.name))).collect();
        let rt = self.result_type(o);
        let owner_name = owner.rsplit("::").next().unwrap_or(owner);
        let error_ty = if o.throws.is_empty() {
            None
        } else {
            Some(format!(
                "{}{}Error",
                self.path(owner).trim_end_matches(owner_name).to_string() + owner_name,
                camel(&o.name)
            ))
        };
        let ret = match &error_ty {
            Some(e) => format!("Result<{rt}, {f}::CallError<{e}>>"),
            None => format!("{f}::Result<{rt}>"),
        };
        self.doc(&o.doc);
        let returns_values = returns_values(o);
        self.line(&format!("pub async fn {fname}({}) -> {ret} {{", params.join(", ")));
        self.depth += 1;
        if returns_values {
            self.line(&format!("self.0.twoway_only({:?})?;", o.name));
        }
        let mode = op_mode(o);
        // A trailing byte sequence, or sequence of numbers or of structs of numbers, is sent
        // from its own memory when large.
        match self.tail_param(o) {
            Some((tail, kind)) => {
                let invoke = kind.invoke();
                let writes: Vec<String> = o
                    .params
                    .iter()
                    .filter(|p| !p.out && !std::ptr::eq(*p, tail))
                    .map(|p| format!("{};", self.encode_param(&p.ty, &ident(&snake(&p.name)))))
                    .collect();
                self.line(&format!(
                    "let __outcome = {f}::codegen::{invoke}(&self.0, {:?}, {f}::protocol::OperationMode::{mode}, None, |enc| {{ {} }}, {}).await?;",
                    o.name,
                    writes.join(" "),
                    ident(&snake(&tail.name))
                ));
            }
            None => {
                let writes = self.param_writes(iface, o);
                self.line(&format!(
                    "let __outcome = self.0.invoke({:?}, {f}::protocol::OperationMode::{mode}, None, |enc| {{ {} }}).await?;",
                    o.name,
                    writes.join(" ")
                ));
            }
        }
        let read = self.read_results_closure(o);
        match &error_ty {
            None => {
                if returns_values {
                    self.line(&format!(
                        "let __outcome = __outcome.ok_or_else(|| {f}::Error::TwowayOnly({:?}.into()))?;",
                        o.name
                    ));
                    self.line(&format!("__outcome.decode({read})"));
                } else {
                    self.line("match __outcome {");
                    self.line(&format!("    Some(o) => o.decode({read}),"));
                    self.line("    None => Ok(()),");
                    self.line("}");
                }
            }
            Some(e) => {
                let mut arms = Vec::new();
                for (ex, variant) in self.error_variants(o) {
                    let p = self.path(&ex);
                    arms.push(format!(
                        "{ex:?} => Some(<{p} as {f}::encoding::UserExceptionSlices>::decode_body(dec).map({e}::{variant})),"
                    ));
                }
                let handler = format!(
                    "|__id: &str, dec: &mut {f}::encoding::Decoder| match __id {{ {} _ => None }}",
                    arms.join(" ")
                );
                if returns_values {
                    self.line(&format!(
                        "let __outcome = __outcome.ok_or_else(|| {f}::Error::TwowayOnly({:?}.into()))?;",
                        o.name
                    ));
                    self.line(&format!("__outcome.decode_or_user({read}, {handler})"));
                } else {
                    self.line("match __outcome {");
                    self.line(&format!("    Some(o) => o.decode_or_user({read}, {handler}),"));
                    self.line("    None => Ok(()),");
                    self.line("}");
                }
            }
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        // Blocking wrapper.
        self.line(&format!("/// Blocking form of [`Self::{fname}`]: fails with `Error::BlockingInAsync` on the thread of a current-thread runtime."));
        self.line(&format!("pub fn {}_blocking({}) -> {ret} {{", snake(&o.name), params.join(", ")));
        self.line(&format!("    {f}::codegen::block_on(&self.0, self.{fname}({}))", args.join(", ")));
        self.line("}");
        self.line("");
    }

    /// The in-parameters of an operation as a proxy method declares them (after `&self`).
    pub(super) fn proxy_params(&self, o: &Operation) -> Vec<String> {
        let mut params = Vec::new();
        for p in o.params.iter().filter(|p| !p.out) {
            let t = self.param_type(&p.ty);
            let t = if p.tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t };
            params.push(format!("{}: {t}", ident(&snake(&p.name))));
        }
        params
    }

    /// The statements that encode an operation's in-parameters into `enc`: required ones in
    /// order, then optionals by tag, then the pending class instances when needed.
    pub(super) fn param_writes(&self, iface: &Definition, o: &Operation) -> Vec<String> {
        let f = &self.f;
        let mut writes = Vec::new();
        for p in o.params.iter().filter(|p| !p.out && p.tag.is_none()) {
            writes.push(format!("{};", self.encode_param(&p.ty, &ident(&snake(&p.name)))));
        }
        let mut opts: Vec<&Param> = o.params.iter().filter(|p| !p.out && p.tag.is_some()).collect();
        opts.sort_by_key(|p| p.tag);
        for p in opts {
            writes.push(self.write_optional(p.tag.unwrap_or(0), &p.ty, &ident(&snake(&p.name))));
        }
        let (any, required) = self.op_sends_classes(o);
        if any {
            match self.op_format(o, iface) {
                "Sliced" => writes.insert(0, format!("enc.set_format({f}::encoding::FormatType::Sliced);")),
                "Compact" => writes.insert(0, format!("enc.set_format({f}::encoding::FormatType::Compact);")),
                // The runtime starts the parameters in the communicator's default format.
                _ => {}
            }
        }
        if required {
            writes.push("enc.write_pending_values();".into());
        }
        writes
    }

    /// The last in-parameter when it ends the encoded parameters (no optional in-parameters
    /// and no class instances follow it) and can be sent from its own memory.
    fn tail_param<'o>(&self, o: &'o Operation) -> Option<(&'o Param, SeparateTail)> {
        let ins: Vec<&Param> = o.params.iter().filter(|p| !p.out).collect();
        let last = *ins.last()?;
        let plain = ins.iter().all(|p| p.tag.is_none()) && !self.op_sends_classes(o).0;
        if !plain {
            return None;
        }
        self.separate_tail(&last.ty).map(|kind| (last, kind))
    }

    /// A closure reading the results: outs (required) in order, the required return, then the
    /// optional ones by tag; returns them as `(ret, outs…)`.
    fn read_results_closure(&self, o: &Operation) -> String {
        let f = &self.f;
        let mut lines = Vec::new();
        let out_name = |p: &Param| format!("__out_{}", snake(&p.name));
        for p in o.params.iter().filter(|p| p.out && p.tag.is_none()) {
            let t = self.rust_type(&p.ty);
            lines.push(format!("let {}: {t} = {f}::encoding::Decode::decode(dec)?;", out_name(p)));
        }
        if let (Some(r), None) = (&o.ret, o.ret_tag) {
            let t = self.rust_type(r);
            lines.push(format!("let __ret: {t} = {f}::encoding::Decode::decode(dec)?;"));
        }
        let mut opts: Vec<(i32, String, &TypeRef)> = o
            .params
            .iter()
            .filter(|p| p.out && p.tag.is_some())
            .map(|p| (p.tag.unwrap_or(0), out_name(p), &p.ty))
            .collect();
        if let (Some(r), Some(t)) = (&o.ret, o.ret_tag) {
            opts.push((t, "__ret".into(), r));
        }
        opts.sort_by_key(|x| x.0);
        for (tag, n, t) in opts {
            lines.push(format!("let {n} = {};", self.read_optional(tag, t)));
        }
        let uses = self.op_returns_classes(o);
        if let Some(finish) = finish_classes(uses) {
            lines.insert(0, format!("dec.set_class_factory({});", self.unit_factory()));
            lines.push(finish.into());
        }
        let mut names = Vec::new();
        if o.ret.is_some() {
            names.push("__ret".to_string());
        }
        for p in o.params.iter().filter(|p| p.out) {
            names.push(out_name(p));
        }
        let value = match names.len() {
            0 => "()".to_string(),
            1 => names[0].clone(),
            _ => format!("({})", names.join(", ")),
        };
        format!("|dec: &mut {f}::encoding::Decoder| {{ {} Ok({value}) }}", lines.join(" "))
    }
}
