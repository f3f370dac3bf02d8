//! Diagnostics with stable codes, printed like rustc's.

use std::fmt;

/// A position in a source file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct Span {
    /// Index into [`crate::SourceMap`].
    pub file: u32,
    /// 1-based line.
    pub line: u32,
    /// 1-based column.
    pub col: u32,
}

/// How bad a diagnostic is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Severity {
    /// Compilation fails.
    Error,
    /// Compilation goes on.
    Warning,
}

/// Stable diagnostic codes. Their numbers never change meaning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Code {
    /// E0001: a character or token the lexer does not accept.
    Lexical,
    /// E0002: the grammar does not allow this token here.
    Syntax,
    /// E0003: a preprocessor directive is malformed, or an include cannot be read.
    Preprocessor,
    /// E0004: a name that is not defined.
    Undefined,
    /// E0005: a name defined twice in one scope.
    Redefinition,
    /// E0006: two names in one scope that differ only in capitalization.
    CaseClash,
    /// E0007: a name that refers to the wrong kind of definition.
    WrongKind,
    /// E0008: a dictionary key type that Slice does not allow.
    IllegalKey,
    /// E0009: two optional values with the same tag.
    DuplicateTag,
    /// E0010: a class, interface or exception that inherits from itself.
    CyclicInheritance,
    /// E0011: a keyword used where an identifier is needed (escape it with a backslash).
    KeywordIdentifier,
    /// E0012: an enumerator value that is out of range or repeated.
    BadEnumerator,
    /// E0013: a constant or default value that does not fit its type.
    BadConstant,
    /// E0014: an optional of a type that cannot be optional, or a bad tag.
    BadOptional,
    /// E0015: a construct used where it is not allowed (e.g. a local type in a remote operation).
    IllegalUse,
    /// E0016: a name that is ambiguous or hides a parent's member.
    Ambiguous,
    /// E0017: a defined name that starts with `ice` (any case), which Slice reserves for
    /// Ice's own definitions unless the file has `[["ice-prefix"]]`.
    ReservedPrefix,
    /// E0018: an underscore in a defined name: never leading; elsewhere only with the file's
    /// `[["underscore"]]`, and then neither trailing nor doubled.
    IllegalUnderscore,
    /// E0019: a defined name that ends in `Helper`, `Holder`, `Prx` or `Ptr`, which Slice
    /// reserves for the names its language mappings generate.
    ReservedSuffix,
    /// E0020: a definition other than a module outside any module.
    GlobalDefinition,
    /// E0021: a definition named like an enclosing module, or an operation named like its
    /// interface or class (in any capitalization).
    EnclosingName,
    /// E0022: a name spelt with other capitalization than the definition it names, including
    /// one that a case-insensitive match in an inner scope takes from the definition meant.
    Capitalization,
    /// E0023: a name used in a scope for one definition, then defined or used there for
    /// another (names are compared case-insensitively).
    ChangedMeaning,
}

impl Code {
    /// The stable code string, e.g. `E0004`.
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Lexical => "E0001",
            Code::Syntax => "E0002",
            Code::Preprocessor => "E0003",
            Code::Undefined => "E0004",
            Code::Redefinition => "E0005",
            Code::CaseClash => "E0006",
            Code::WrongKind => "E0007",
            Code::IllegalKey => "E0008",
            Code::DuplicateTag => "E0009",
            Code::CyclicInheritance => "E0010",
            Code::KeywordIdentifier => "E0011",
            Code::BadEnumerator => "E0012",
            Code::BadConstant => "E0013",
            Code::BadOptional => "E0014",
            Code::IllegalUse => "E0015",
            Code::Ambiguous => "E0016",
            Code::ReservedPrefix => "E0017",
            Code::IllegalUnderscore => "E0018",
            Code::ReservedSuffix => "E0019",
            Code::GlobalDefinition => "E0020",
            Code::EnclosingName => "E0021",
            Code::Capitalization => "E0022",
            Code::ChangedMeaning => "E0023",
        }
    }
}

/// One diagnostic.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// Stable code.
    pub code: Code,
    /// What is wrong.
    pub message: String,
    /// Where.
    pub span: Span,
}

impl Diagnostic {
    /// An error.
    pub fn error(code: Code, span: Span, message: impl Into<String>) -> Self {
        Diagnostic { severity: Severity::Error, code, message: message.into(), span }
    }

    /// Renders the diagnostic like rustc: header, location, and the source line with a caret.
    pub fn render(&self, sources: &crate::SourceMap) -> String {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let mut out = format!("{kind}[{}]: {}\n", self.code.as_str(), self.message);
        if let Some(file) = sources.files.get(self.span.file as usize) {
            let lineno = self.span.line.to_string();
            let pad = " ".repeat(lineno.len());
            out.push_str(&format!("{pad}--> {}:{}:{}\n", file.path, self.span.line, self.span.col));
            if let Some(text) = file.text.lines().nth(self.span.line.saturating_sub(1) as usize) {
                out.push_str(&format!("{pad} |\n{lineno} | {text}\n"));
                let caret_pad: String = text
                    .chars()
                    .take(self.span.col.saturating_sub(1) as usize)
                    .map(|c| if c == '\t' { '\t' } else { ' ' })
                    .collect();
                out.push_str(&format!("{pad} | {caret_pad}^\n"));
            }
        }
        out
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}] {}:{}: {}", self.code.as_str(), self.span.line, self.span.col, self.message)
    }
}
