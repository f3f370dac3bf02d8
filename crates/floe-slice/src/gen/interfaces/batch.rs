//! Batch writers: `NameBatch`, typed synchronous queuing of batched oneway requests over a
//! `floe::BatchWriter`, one method per operation that returns nothing.

use super::{op_mode, returns_values, Gen};
use crate::ast::*;
use crate::gen::{ident, snake};

impl Gen<'_> {
    /// `<Name>Batch`: typed, synchronous queuing of batched oneway requests over a
    /// `floe::BatchWriter`, one method per operation that returns nothing.
    pub(super) fn gen_batch_writer(&mut self, iface: &Definition, abs: &str, prx: &str, ops: &[(String, &Operation)]) {
        let f = self.f.clone();
        let name = format!("{}Batch", ident(&iface.name));
        if ops.iter().all(|(_, o)| returns_values(o)) {
            return;
        }
        self.line(&format!("impl {prx} {{"));
        self.line(&format!(
            "    /// A [`{name}`]: queues batched oneway requests to this proxy's target synchronously."
        ));
        self.line(&format!("    pub fn batch_writer(&self) -> {name} {{"));
        self.line(&format!("        {name}(self.0.batch_writer())"));
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("/// Batched oneway requests to a `{abs}`, queued without I/O; send them with"));
        self.line("/// [`flush`](Self::flush) (see `floe::BatchWriter`, which it derefs to).");
        self.line("#[derive(Debug)]");
        self.line(&format!("pub struct {name}(pub {f}::BatchWriter);"));
        self.line("");
        self.line(&format!("impl std::ops::Deref for {name} {{"));
        self.line(&format!("    type Target = {f}::BatchWriter;"));
        self.line("    fn deref(&self) -> &Self::Target {");
        self.line("        &self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl std::ops::DerefMut for {name} {{"));
        self.line("    fn deref_mut(&mut self) -> &mut Self::Target {");
        self.line("        &mut self.0");
        self.line("    }");
        self.line("}");
        self.line("");
        self.line(&format!("impl {name} {{"));
        self.depth += 1;
        for (_, o) in ops {
            if returns_values(o) {
                continue;
            }
            let fname = ident(&snake(&o.name));
            let mut params = vec!["&mut self".to_string()];
            params.extend(self.proxy_params(o));
            let mode = op_mode(o);
            self.line(&format!("/// Queues a `{}` request.", o.name));
            self.line("#[inline]");
            self.line(&format!("pub fn {fname}({}) {{", params.join(", ")));
            let writes = self.param_writes(iface, o);
            if writes.is_empty() {
                self.line(&format!("    self.0.queue_empty({:?}, {f}::protocol::OperationMode::{mode});", o.name));
            } else {
                self.line(&format!(
                    "    self.0.queue({:?}, {f}::protocol::OperationMode::{mode}, |enc| {{ {} }});",
                    o.name,
                    writes.join(" ")
                ));
            }
            self.line("}");
            self.line("");
        }
        self.depth -= 1;
        self.line("}");
        self.line("");
    }
}
