//! The one record type checks read: a span after `read` has understood its convention
//! (model/records.py's `SpanRecord`, field for field), and the tool calls it names.
//!
//! Text is WTF-8 (pyfmt/strs.rs) and owned: a record outlives the request it was read from.

use super::attributes::Attributes;
use super::value::{Text, Value};
use crate::model::ids::{SpanId, TraceId};

/// Owned WTF-8 text.
pub type Str = Box<[u8]>;

pub fn str_of(t: &[u8]) -> Str {
    t.into()
}

// What a span should have carried and did not (`SpanRecord.missing`, bit flags): content
// capture is opt-in in every convention, so an absent attribute means "not recorded".
pub const MISSING_INPUT: u32 = 1; // a model span without its input messages
pub const MISSING_OUTPUT: u32 = 2; // a model span without its output messages
pub const MISSING_FINISH: u32 = 4; // a model span without gen_ai.response.finish_reasons
pub const MISSING_TOOL_ARGUMENTS: u32 = 8; // a tool span without its arguments
pub const MISSING_TOOL_RESULT: u32 = 16; // a tool span without its result
pub const MISSING_WHAT: [(u32, &str); 5] = [
    (MISSING_INPUT, "input messages"), (MISSING_OUTPUT, "output messages"), (MISSING_FINISH, "finish reasons"),
    (MISSING_TOOL_ARGUMENTS, "tool arguments"), (MISSING_TOOL_RESULT, "tool results"),
];

// Operation names the reader normalises onto (gen_ai.operation.name values).
pub const INVOKE_AGENT: &str = "invoke_agent";
pub const EXECUTE_TOOL: &str = "execute_tool";
pub const CREATE_AGENT: &str = "create_agent";

/// What an `execute_tool` span says about the call it ran.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ToolExecution {
    pub name: Str,
    pub arguments: Str,
    pub result: Str,
    pub call_id: Str,
}

/// A tool call named inside a model's output message (a `tool_call` part).
#[derive(Clone, Debug, PartialEq, Default)]
pub struct ToolCall {
    pub call_id: Str,
    pub name: Str,
    pub arguments: Str,
}

/// What the conventions make of a span: every field of its record but the span's own
/// (ids, name, times, status), which the reader takes as they are.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Fields {
    pub operation: Option<Str>,
    /// the attributes the record keeps, in the span's order (shared: model/attributes.rs)
    pub attrs: Attributes,
    pub prompt: Str,
    pub answer: Str,
    pub tool: Option<ToolExecution>,
    pub calls: Vec<ToolCall>,
    /// (call id, result) of tool_call_response parts
    pub responses: Vec<(Str, Str)>,
    pub finish_reasons: Vec<Str>,
    /// OpenInference LLM spans repeat the calls their TOOL spans carry: when a run has tool
    /// spans, these message calls are not steps.
    pub calls_shadowed_by_tool_spans: bool,
    /// approximate bytes held, for the assembler's memory bound
    pub size: i64,
    pub missing: u32,
}

impl Fields {
    pub fn is_tool(&self) -> bool {
        self.tool.is_some()
    }

    /// `attrs.get(key)`.
    pub fn attr(&self, key: &str) -> Option<std::borrow::Cow<'_, Value<'_>>> {
        self.attrs.get(key.as_bytes())
    }
}

/// One span, convention-free.
#[derive(Clone, Debug, PartialEq)]
pub struct SpanRecord {
    pub trace_id: TraceId,
    pub span_id: SpanId,
    /// None when the span names no parent
    pub parent_id: Option<SpanId>,
    pub name: Str,
    pub start_ns: i128,
    pub end_ns: i128,
    /// OTLP: 0 unset, 1 ok, 2 error
    pub status_code: i64,
    pub status_message: Str,
    pub fields: Fields,
}

impl SpanRecord {
    pub fn is_agent(&self) -> bool {
        self.fields.operation.as_deref() == Some(INVOKE_AGENT.as_bytes())
    }

    /// A root candidate: an `invoke_agent` span, or one with no parent.
    pub fn root_candidate(&self) -> bool {
        self.is_agent() || self.parent_id.as_ref().is_none_or(SpanId::is_empty)
    }
}

/// Text borrowed as long as `whole`: `part` (a slice of `whole`'s bytes) when `whole` is
/// borrowed, a copy otherwise.
pub fn sub_text<'a>(whole: &Text<'a>, part: &[u8]) -> Text<'a> {
    match whole {
        std::borrow::Cow::Borrowed(w) => {
            let start = part.as_ptr() as usize - w.as_ptr() as usize;
            std::borrow::Cow::Borrowed(&w[start..start + part.len()])
        }
        std::borrow::Cow::Owned(_) => std::borrow::Cow::Owned(part.to_vec()),
    }
}
