//! The server side: the servant trait (`Name`, or `NameDisp` for a class) with one async
//! method per own operation, and the dispatcher `NameServer<T>` that decodes a request's
//! parameters, calls the servant and encodes its results or exception.

use std::collections::HashSet;

use super::{op_mode, Gen};
use crate::ast::*;
use crate::gen::{finish_classes, ident, snake};

impl Gen<'_> {
    /// The servant trait; returns its name (`Name`, or `NameDisp` for a class).
    pub(super) fn gen_servant_trait(&mut self, d: &Definition, abs: &str, ops: &[(String, &Operation)]) -> String {
        let f = self.f.clone();
        let name = ident(&d.name);
        let bases: Vec<String> = self
            .supertypes(abs)
            .into_iter()
            .filter(|b| !self.is_class(b) || self.class_has_proxy(b))
            .map(|b| self.servant_trait(&b))
            .collect();
        // A class's servant trait is `<Name>Disp`, leaving `<Name>` to the class's data.
        let name = if self.is_class(abs) { format!("{name}Disp") } else { name };
        self.doc(&d.doc);
        self.line(&format!("/// Servant trait for `{abs}`: implement it and serve it with [`{name}Server`]."));
        let supers = if bases.is_empty() { String::new() } else { format!("{} + ", bases.join(" + ")) };
        self.line(&format!("pub trait {name}: {supers}Send + Sync + 'static {{"));
        self.depth += 1;
        for (owner, o) in ops {
            if owner != abs {
                continue;
            }
            self.doc(&o.doc);
            let mut params = vec!["&self".to_string()];
            for p in o.params.iter().filter(|p| !p.out) {
                let t = self.rust_type(&p.ty);
                let t = if p.tag.is_some() && !t.starts_with("Option<") { format!("Option<{t}>") } else { t };
                params.push(format!("{}: {t}", ident(&snake(&p.name))));
            }
            params.push(format!("current: &{f}::Current"));
            let rt = self.result_type(o);
            self.line(&format!(
                "fn {}({}) -> impl std::future::Future<Output = {f}::Result<{rt}>> + Send;",
                ident(&snake(&o.name)),
                params.join(", ")
            ));
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
        name
    }

    /// The dispatcher `<name>Server<T>` of the servant trait `name`.
    pub(super) fn gen_dispatcher(&mut self, d: &Definition, abs: &str, name: &str, ops: &[(String, &Operation)]) {
        let f = self.f.clone();
        let ids = self.interface_ids(abs);
        self.line(&format!("/// Dispatches requests for `{abs}` to a [`{name}`] servant."));
        self.line(&format!("pub struct {name}Server<T: {name}>(pub std::sync::Arc<T>);"));
        self.line("");
        self.line(&format!("impl<T: {name}> {name}Server<T> {{"));
        self.line("    /// The Slice type ids of the interface and all its bases, sorted.");
        let ids_lit = ids.iter().map(|i| format!("{i:?}")).collect::<Vec<_>>().join(", ");
        self.line(&format!("    pub const IDS: &'static [&'static str] = &[{ids_lit}];"));
        self.line("    /// Wraps a servant, ready for `ObjectAdapter::add`.");
        self.line(&format!("    pub fn new(servant: T) -> std::sync::Arc<dyn {f}::Dispatcher> {{"));
        self.line("        std::sync::Arc::new(Self(std::sync::Arc::new(servant)))");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl<T: {name}> {f}::Dispatcher for {name}Server<T> {{"));
        self.line(&format!(
            "    fn dispatch(&self, #[allow(unused_mut)] mut request: {f}::IncomingRequest) -> {f}::DispatchFuture {{"
        ));
        self.line("        let servant = self.0.clone();");
        // The future is built in its heap slot, allocated first, instead of being moved there.
        self.line(&format!("        {f}::codegen::future_in({f}::codegen::future_slot(), async move {{"));
        // Slice reserves the `ice` prefix, so no operation of the interface is a built-in
        // one: those are looked for only when no operation matches.
        self.line("            match request.current.operation.as_str() {");
        self.depth += 4;
        for (owner, o) in ops {
            let odef = self.unit.lookup(owner).map(|(_, d)| d).unwrap_or(d);
            self.gen_dispatch_arm(odef, o);
        }
        self.depth -= 4;
        self.line(&format!(
            "                _ => match {f}::codegen::dispatch_builtin(&request, Self::IDS, {abs:?}) {{"
        ));
        self.line("                    Some(r) => r,");
        self.line("                    None => request.current.operation_not_exist(),");
        self.line("                },");
        self.line("            }");
        self.line("        })");
        self.line("    }");
        self.line("}");
        self.line("");
    }

    /// The dispatcher's match arm for an operation: check the mode, decode the parameters,
    /// call the servant, encode its results or exception.
    fn gen_dispatch_arm(&mut self, iface: &Definition, o: &Operation) {
        let f = self.f.clone();
        let mode = op_mode(o);
        let format = self.op_format(o, iface);
        self.line(&format!("{:?} => {{", o.name));
        self.depth += 1;
        self.line(&format!("if let Err(r) = request.current.check_mode({f}::protocol::OperationMode::{mode}) {{"));
        self.line("    return r;");
        self.line("}");
        let ins: Vec<&Param> = o.params.iter().filter(|p| !p.out).collect();
        let mut reads = Vec::new();
        for p in ins.iter().filter(|p| p.tag.is_none()) {
            let t = self.rust_type(&p.ty);
            reads.push(format!("let {}: {t} = {f}::encoding::Decode::decode(dec)?;", ident(&snake(&p.name))));
        }
        let mut opts: Vec<&&Param> = ins.iter().filter(|p| p.tag.is_some()).collect();
        opts.sort_by_key(|p| p.tag);
        for p in opts {
            reads.push(format!("let {} = {};", ident(&snake(&p.name)), self.read_optional(p.tag.unwrap_or(0), &p.ty)));
        }
        if let Some(finish) = finish_classes(self.op_sends_classes(o)) {
            reads.insert(0, format!("dec.set_class_factory({});", self.unit_factory()));
            reads.push(finish.into());
        }
        let names: Vec<String> = ins.iter().map(|p| ident(&snake(&p.name))).collect();
        let tuple = format!("({}{})", names.join(", "), if names.len() == 1 { "," } else { "" });
        // The decoder is gone before the servant runs (it is not part of the future), and an
        // operation without parameters needs none when the encapsulation is empty.
        // Parameters without proxies or classes are read by a decoder that carries nothing of
        // the communicator (cheaper to make).
        let mut seen = HashSet::new();
        let plain = ins.iter().all(|p| self.is_plain_data(&p.ty, &mut seen));
        // The decoder takes the parameters out of the request: they are read once.
        let decoder = if plain {
            format!("{f}::codegen::take_plain_decoder(&mut request)")
        } else {
            format!("{f}::codegen::take_decoder(&mut request)")
        };
        let decode = format!(
            "(|dec: &mut {f}::encoding::Decoder| -> {f}::encoding::Result<_> {{ {} {f}::codegen::finish_params(dec)?; Ok({tuple}) }})(&mut {decoder})",
            reads.join(" ")
        );
        if ins.is_empty() {
            self.line(&format!("let __args = if request.params.is_empty() {{ Ok(()) }} else {{ {decode} }};"));
        } else {
            self.line(&format!("let __args = {decode};"));
        }
        self.line("let current = &request.current;");
        self.line(&format!("let {tuple} = match __args {{"));
        self.line("    Ok(v) => v,");
        self.line(&format!("    Err(e) => return current.error(&{f}::Error::Marshal(e)),"));
        self.line("};");
        let mut call_args = names.clone();
        call_args.push("current".into());
        self.line(&format!("match servant.{}({}).await {{", ident(&snake(&o.name)), call_args.join(", ")));
        // Result destructuring: (ret, outs…).
        let mut rnames = Vec::new();
        if o.ret.is_some() {
            rnames.push("__ret".to_string());
        }
        for p in o.params.iter().filter(|p| p.out) {
            rnames.push(format!("__out_{}", snake(&p.name)));
        }
        let pat = match rnames.len() {
            0 => "()".to_string(),
            1 => rnames[0].clone(),
            _ => format!("({})", rnames.join(", ")),
        };
        let mut writes = Vec::new();
        for p in o.params.iter().filter(|p| p.out && p.tag.is_none()) {
            writes.push(format!("__out_{}.encode(enc);", snake(&p.name)));
        }
        if let (Some(_), None) = (&o.ret, o.ret_tag) {
            writes.push("__ret.encode(enc);".into());
        }
        let mut oopts: Vec<(i32, String, &TypeRef)> = o
            .params
            .iter()
            .filter(|p| p.out && p.tag.is_some())
            .map(|p| (p.tag.unwrap_or(0), format!("__out_{}", snake(&p.name)), &p.ty))
            .collect();
        if let (Some(r), Some(t)) = (&o.ret, o.ret_tag) {
            oopts.push((t, "__ret".into(), r));
        }
        oopts.sort_by_key(|x| x.0);
        for (tag, n, t) in oopts {
            writes.push(self.write_optional(tag, t, &format!("&{n}")));
        }
        let (any, required) = self.op_returns_classes(o);
        if any {
            match format {
                "Sliced" => writes.insert(0, format!("enc.set_format({f}::encoding::FormatType::Sliced);")),
                "Default" => writes.insert(0, "enc.set_format(current.default_format());".to_string()),
                _ => {}
            }
        }
        if required {
            writes.push("enc.write_pending_values();".into());
        }
        // Results that end with a sequence of bytes, numbers or structs of numbers send it from
        // its own memory when large.
        let no_optionals = o.ret_tag.is_none() && o.params.iter().all(|p| !p.out || p.tag.is_none());
        let last = match &o.ret {
            Some(r) => Some(("__ret".to_string(), r)),
            None => o.params.iter().rfind(|p| p.out).map(|p| (format!("__out_{}", snake(&p.name)), &p.ty)),
        };
        let tail = match last {
            Some((name, ty)) if no_optionals && !any => self.separate_tail(ty).map(|kind| (name, kind)),
            _ => None,
        };
        match tail {
            Some((name, kind)) => {
                let (ok, arg) = kind.reply(&name);
                let before: Vec<String> =
                    writes.iter().filter(|w| **w != format!("{name}.encode(enc);")).cloned().collect();
                self.line(&format!("    Ok({pat}) => current.{ok}(|enc| {{ {} }}, {arg}),", before.join(" ")));
            }
            None => self.line(&format!("    Ok({pat}) => current.ok(|enc| {{ {} }}),", writes.join(" "))),
        }
        let format = match format {
            "Default" => "current.default_format()".to_string(),
            other => format!("{f}::encoding::FormatType::{other}"),
        };
        self.line(&format!("    Err(e) => current.servant_error(&e, {format}),"));
        self.line("}");
        self.depth -= 1;
        self.line("}");
    }
}
