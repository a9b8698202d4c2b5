//! One span's attributes, in whichever convention wrote them, -> a record's fields.
//!
//! Three conventions meet here (see ../shared/reference/telemetry-conventions.md):
//!
//! - OTel GenAI: `gen_ai.operation.name`; content in `gen_ai.input.messages` /
//!   `gen_ai.output.messages` with `parts` (`text`, `tool_call`, `tool_call_response`
//!   whose payload is under `response` in the schema and `result` in older examples), or
//!   the legacy `gen_ai.prompt` / `gen_ai.completion`; tool spans carry
//!   `gen_ai.tool.call.arguments` / `.result`. Here.
//! - OpenInference (openinference.rs) and OpenLLMetry (openllmetry.rs).
//!
//! Every reader builds its records here: the protobuf reader from the bytes, and the
//! binding's `build_span` (read/conventions.py's name) from a dict, for the vendor formats,
//! the log events and tests. tests/read/conventions_oracle.py is the Python this replaced;
//! tests/read/test_conventions_parity.py holds the two equal.

use std::borrow::Cow;
use super::key_set::KeySet;

use super::attrs::{Attr, Attrs};
use super::openinference::{self, OI_MESSAGES};
use super::openllmetry::{self, TL_INDEXED};
use super::payload::{call_arguments, decode, lc_tool_result, load_json, messages_and_text, parts, plain_text,
                     python_literal, render, role_text_of, str_get, unrepr_messages};
use super::unread::{self, Sniff, UNREAD_OUTPUT_KEY};
use super::vercel::{self, AI_OPERATION};
use crate::error::Result;
use crate::model::attributes::{Attributes, Builder};
use crate::model::json::{dumps, Default, PLAIN};
use crate::model::record::{sub_text, Fields, Str, ToolCall, ToolExecution, EXECUTE_TOOL, INVOKE_AGENT,
                           MISSING_INPUT, MISSING_OUTPUT, MISSING_FINISH, MISSING_TOOL_ARGUMENTS,
                           MISSING_TOOL_RESULT};
use crate::model::value::{Text, Value};
use crate::pyfmt::strs::{ascii_lower, lower_contains, lower_equals, strip};

pub const OI_KIND: &str = "openinference.span.kind";
pub const TL_KIND: &str = "traceloop.span.kind";

/// Content the record carries parsed; the raw attribute is not kept beside it.
const MASTRA_RUN: [&str; 2] = ["mastra.agent_run.input", "mastra.agent_run.output"];
pub const CONTENT_KEYS: [&str; 20] = [
    "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions", "gen_ai.prompt",
    "gen_ai.completion", "input.value", "output.value", "traceloop.entity.input", "traceloop.entity.output",
    // the Vercel AI SDK's (vercel.rs)
    "ai.prompt", "ai.prompt.messages", "ai.response.text", "ai.result.text", "ai.response.object", "ai.result.object",
    "ai.response.toolCalls", "ai.result.toolCalls", "ai.toolCall.args",
    MASTRA_RUN[0], MASTRA_RUN[1],
];
pub const TOOL_CONTENT_KEYS: [&str; 6] = ["gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "tool.parameters",
                                          "ai.toolCall.input", "ai.toolCall.result", "ai.toolCall.output"];
pub const USER_KEYS: [&str; 4] = ["enduser.id", "user.id", "user_id", "userId"];
/// GenAI's message content: a span that carries it was read as a model call, with or
/// without an operation (unread.rs).
const GENAI_MESSAGES: [&str; 4] = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion"];
/// Operations of a model call: the spans whose messages and finish reasons checks read.
pub const MODEL_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];
/// Every other attribute a record is built from (with CONTENT_KEYS, TOOL_CONTENT_KEYS,
/// USER_KEYS and the prefixes of indexed and flattened messages): a reader may leave any
/// other out (read/projection.py). A name read here and missing from these is an attribute
/// the live service never sees (tests/read/test_projection.py reads every recorded trace
/// both ways).
const TOOL_STATUS_KEYS: [&str; 2] = ["gen_ai.tool.status", "tool.status"];
const READ_OTHERS: [&str; 27] = [
    OI_KIND, TL_KIND, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.response.finish_reasons", "gen_ai.response.finish_reason", "gen_ai.agent.name", "error.type", "metadata",
    "tool.name", "tool.id", "tool.arguments", "output.mime_type",
    "tool_call.id", "llm.token_count.prompt", "llm.token_count.completion", "llm.finish_reason",
    "llm.response.finish_reason", "traceloop.entity.name",
    AI_OPERATION, "ai.telemetry.functionId", "ai.toolCall.name", "ai.toolCall.id", "ai.response.finishReason",
    TOOL_STATUS_KEYS[0], TOOL_STATUS_KEYS[1],
];

/// What a framework writes as the answer when its own step budget ended the run: the run
/// ended at its step limit without an answer (LangGraph's prebuilt agent at recursion_limit).
pub const BUDGET_ANSWERS: [&str; 1] = ["Sorry, need more steps to process this request."];

// Framework payloads are recognised by a marker before anything is decoded: most tool
// spans carry plain arguments and results, and pay one substring test each.
const CALLBACK_MARKERS: [&[u8]; 2] = [b"\"input_str\"", b"\"kwargs\""];
const LC_MARKERS: [&[u8]; 2] = [b"\"lc\"", b"\"data\""];

/// The markers' searchers, built once: building one costs more than a search of the
/// ~200-byte payloads most tool spans carry.
fn markers() -> &'static [[memchr::memmem::Finder<'static>; 2]; 2] {
    static MARKERS: std::sync::OnceLock<[[memchr::memmem::Finder<'static>; 2]; 2]> = std::sync::OnceLock::new();
    MARKERS.get_or_init(|| {
        let f = |m: [&'static [u8]; 2]| m.map(memchr::memmem::Finder::new);
        [f(CALLBACK_MARKERS), f(LC_MARKERS)]
    })
}

pub fn read_names() -> impl Iterator<Item = &'static str> {
    CONTENT_KEYS.into_iter().chain(TOOL_CONTENT_KEYS).chain(USER_KEYS).chain(READ_OTHERS)
}

pub fn read_prefixes() -> impl Iterator<Item = &'static str> {
    TL_INDEXED.into_iter().chain(OI_MESSAGES)
}

/// Whether a convention reads `key` (a name of `read_names` or one of its prefixes).
pub fn is_read(key: &[u8]) -> bool {
    read_names().any(|n| n.as_bytes() == key) || read_prefixes().any(|p| key.starts_with(p.as_bytes()))
}

/// The span's own fields the conventions read.
pub struct SpanHead<'a> {
    pub name: Text<'a>,
    /// `bool(parent_id)`
    pub has_parent: bool,
    /// `status_code == 2`
    pub failed: bool,
    pub message: Text<'a>,
    /// `start_ns == end_ns`: the span has no duration
    pub instant: bool,
}

/// What the conventions make of a span: the record's other fields, borrowing the span's
/// bytes.
#[derive(Debug)]
pub struct Built<'a> {
    pub operation: Option<Text<'a>>,
    pub attrs: Attrs<'a>,
    pub is_tool: bool,
    pub prompt: Text<'a>,
    pub answer: Text<'a>,
    /// (name, arguments, result, call id)
    pub tool: Option<[Text<'a>; 4]>,
    /// (call id, name, arguments)
    pub calls: Vec<[Text<'a>; 3]>,
    /// (call id, result)
    pub responses: Vec<[Text<'a>; 2]>,
    pub finish: Vec<Text<'a>>,
    pub shadowed: bool,
    pub size: usize,
    pub missing: u32,
}

/// The only attributes a record keeps (read/projection.py), or all but content.
pub enum Kept<'k> {
    All,
    Names(&'k KeySet),
}

impl<'a> Built<'a> {
    /// Whether the record keeps `key`: every attribute but content, or only the `kept` ones.
    pub fn keeps(&self, key: &[u8], kept: &Kept<'_>) -> bool {
        match kept {
            Kept::All => {
                !(CONTENT_KEYS.iter().any(|k| k.as_bytes() == key)
                    || (self.is_tool && TOOL_CONTENT_KEYS.iter().any(|k| k.as_bytes() == key))
                    || OI_MESSAGES.iter().any(|p| key.starts_with(p.as_bytes())))
            }
            Kept::Names(names) => names.contains(key),
        }
    }

    /// The attributes the record keeps, copied.
    pub fn kept_attributes(&self, kept: &Kept<'_>) -> Attributes {
        // `keeps` once each (a hash of the key, or a scan of the content keys), remembered
        // in a word where a span reads at most 64 (almost all), without an allocation
        let all = &self.attrs.items;
        if all.len() <= 64 {
            let (mut mask, mut n, mut text) = (0u64, 0, 0);
            for (i, a) in all.iter().enumerate() {
                if self.keeps(&a.key, kept) {
                    mask |= 1 << i;
                    n += 1;
                    text += Builder::text_len(&a.key, &a.val);
                }
            }
            let mut b = Builder::with_capacity(n, text);
            for (i, a) in all.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    b.push(&a.key, &a.val);
                }
            }
            return b.finish();
        }
        let items: Vec<&Attr<'_>> = all.iter().filter(|a| self.keeps(&a.key, kept)).collect();
        let text = items.iter().map(|a| Builder::text_len(&a.key, &a.val)).sum();
        let mut b = Builder::with_capacity(items.len(), text);
        for a in items {
            b.push(&a.key, &a.val);
        }
        b.finish()
    }

    /// The record's fields, owned.
    pub fn into_fields(self, kept: &Kept<'_>) -> Fields {
        let s = |t: &Text<'_>| -> Str { t.as_ref().into() };
        let attrs = self.kept_attributes(kept);
        // the attributes read count as the fields made of them; those kept are a copy besides
        let size = self.size + attrs.size();
        Fields {
            operation: self.operation.as_ref().map(s),
            attrs,
            prompt: s(&self.prompt),
            answer: s(&self.answer),
            tool: self.tool.as_ref().map(|[name, arguments, result, call_id]| ToolExecution {
                name: s(name), arguments: s(arguments), result: s(result), call_id: s(call_id),
            }),
            calls: self.calls.iter().map(|[call_id, name, arguments]| ToolCall {
                call_id: s(call_id), name: s(name), arguments: s(arguments),
            }).collect(),
            responses: self.responses.iter().map(|[id, result]| (s(id), s(result))).collect(),
            finish_reasons: self.finish.iter().map(s).collect(),
            calls_shadowed_by_tool_spans: self.shadowed,
            size: size as i64,
            missing: self.missing,
        }
    }
}

/// `"" if v is None else str(v)`.
pub fn str_or_empty<'a>(v: Option<&Value<'a>>) -> Text<'a> {
    match v {
        None | Some(Value::Null) => Cow::Borrowed(b""),
        Some(v) => v.py_str(),
    }
}

/// What a tool span did not record: an absent attribute, not an empty one (a tool may take
/// no arguments or return nothing). A tool that failed (status error, `error.type`)
/// returned no result: its error is what was recorded, so no result is missing.
pub fn tool_missing(a: &Attrs<'_>, arguments: &str, result: &str, failed_status: bool) -> u32 {
    let failed = failed_status || a.get("error.type").is_some_and(Value::truthy);
    (if a.has(arguments) { 0 } else { MISSING_TOOL_ARGUMENTS })
        | (if a.has(result) || failed { 0 } else { MISSING_TOOL_RESULT })
}

pub fn model_missing(has_input: bool, has_output: bool, has_finish: bool) -> u32 {
    (if has_input { 0 } else { MISSING_INPUT }) | (if has_output { 0 } else { MISSING_OUTPUT })
        | (if has_finish { 0 } else { MISSING_FINISH })
}

/// The operations of a multi-agent orchestration (Strands Agents' `invoke_swarm` around the
/// agents that hand off to each other, `invoke_graph`): the agent of the run they hold, read
/// as `invoke_agent`, so that the agents inside are its sub-agents, in one run.
const ORCHESTRATIONS: [&str; 2] = ["invoke_swarm", "invoke_graph"];

/// Why a run ended whose agent's last output was a tool call: the framework's step or
/// tool-call budget stopped it before the call's result came back (Semantic Kernel at
/// `maximum_auto_invoke_attempts` returns that call as the agent's output).
pub const ENDED_ON_A_CALL: &str = "step limit: the agent's last output was a tool call, not an answer";

/// Whether the last output message is the assistant's and calls a tool (OpenAI's
/// `tool_calls` or GenAI `tool_call` parts).
fn ended_on_a_call(outputs: &[Value<'_>]) -> bool {
    let Some(last) = outputs.last() else { return false };
    last.get("role").is_some_and(|r| r.eq_str("assistant"))
        && (matches!(last.get("tool_calls"), Some(Value::List(c)) if !c.is_empty())
            || parts(last).iter().any(|p| p.get("type").is_some_and(|t| t.eq_str("tool_call"))))
}

/// What a framework's error says when its own step or model-call budget ended the run
/// (Google ADK's `LlmCallsLimitExceededError: Max number of llm calls limit of `12`
/// exceeded`, LlamaIndex's `Max iterations of 12 reached!`, LangGraph's `Recursion limit of
/// 25 reached`, the OpenAI Agents SDK's `Max turns (12) exceeded`, BeeAI's `Agent was not
/// able to resolve the task in 13 iterations.`), lowercase.
pub const LIMIT_ERRORS: [&str; 6] = ["llm calls limit", "max iterations", "recursion limit", "max turns", "max steps",
                                     "not able to resolve the task in"];

/// An agent span that failed with its framework's budget error ended at its step limit; the
/// error is its status message, else `error` (what the span wrote as its output).
pub fn limit_ended<'a>(span: &SpanHead<'a>, a: &mut Attrs<'a>, error: &[u8]) {
    let message: &[u8] = if span.message.is_empty() { error } else { &span.message };
    if span.failed && LIMIT_ERRORS.iter().any(|w| lower_contains(message, w.as_bytes())) {
        let mut why = b"step limit: ".to_vec();
        why.extend_from_slice(strip(message));
        a.setdefault("faultgate.termination", Value::Str(Cow::Owned(why)));
    }
}

/// A budget answer is no answer: the attributes say the step limit ended the run instead.
pub fn budget_ended<'a>(a: &mut Attrs<'a>, answer: &mut Text<'a>) {
    if answer.is_empty() {
        return;
    }
    let s = strip(answer);
    if BUDGET_ANSWERS.iter().any(|b| b.as_bytes() == s) {
        let mut why = b"step limit: ".to_vec();
        why.extend_from_slice(s);
        a.setdefault("faultgate.termination", Value::Str(Cow::Owned(why)));
        *answer = Cow::Borrowed(b"");
    }
}

/// Semantic Kernel 1.45 writes one finish reason, under the singular name, as its Python
/// enum's text (`FinishReason.LENGTH`): the reason is the member, as the API said it.
fn singular_finish_reason<'a>(raw: Option<&Value<'a>>) -> Option<Value<'a>> {
    let Some(Value::Str(r)) = raw else { return None };
    let member = r.strip_prefix(b"FinishReason.".as_slice()).filter(|m| m.is_ascii());
    Some(Value::List(vec![Value::Str(match member {
        Some(m) => Cow::Owned(m.to_ascii_lowercase()),
        None => r.clone(),
    })]))
}

/// The `finish_reason` each output message carries (the GenAI output message schema's
/// field), when no `gen_ai.response.finish_reasons` says them: Strands' latest conventions
/// write them there alone.
fn message_finish_reasons<'a>(outputs: &[Value<'a>]) -> Option<Value<'a>> {
    let reasons: Vec<Value<'a>> = outputs.iter()
        .filter_map(|m| m.get("finish_reason").filter(|r| matches!(r, Value::Str(t) if !t.is_empty())).cloned())
        .collect();
    if reasons.is_empty() { None } else { Some(Value::List(reasons)) }
}

/// `gen_ai.response.finish_reasons` as the record keeps them: a list's or tuple's items,
/// or the one value, each as `str()`.
pub fn finish_reasons<'a>(raw: &Value<'a>) -> Vec<Text<'a>> {
    match raw {
        Value::Null => Vec::new(),
        Value::List(items) | Value::Tuple(items) => items.iter().map(Value::py_str).collect(),
        // one JSON-encoded string (`json.dumps(reasons)`: AG2's instrumentation): its items
        Value::Str(s) if s.first() == Some(&b'[') => match decode(s) {
            Some(Value::List(items)) if items.iter().all(Value::is_str) => items.iter().map(Value::py_str).collect(),
            _ => vec![raw.py_str()],
        },
        other => vec![other.py_str()],
    }
}

/// The tool_call parts of output messages.
pub fn calls<'a>(outputs: &[Value<'a>]) -> Result<Vec<[Text<'a>; 3]>> {
    let mut out = Vec::new();
    for m in outputs {
        for p in parts(m) {
            if p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call")) {
                out.push([str_get(p, "id", ""), str_get(p, "name", "unknown"), render(p.get("arguments").unwrap_or(&Value::Null))?]);
            }
        }
    }
    Ok(out)
}

/// (call id, result) of the tool_call_response parts of input messages; a result the part
/// says failed reads as an error.
pub fn responses<'a>(inputs: &[Value<'a>]) -> Result<Vec<[Text<'a>; 2]>> {
    let mut out = Vec::new();
    for m in inputs {
        for p in parts(m) {
            if !(p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call_response"))) {
                continue;
            }
            let Some(id) = p.get("id") else { continue };
            if !id.truthy() {
                continue;
            }
            // The schema names the field `response`; attribute-table examples say `result`.
            let payload = match p.get("result") {
                Some(r) => r,
                None => p.get("response").unwrap_or(&Value::Null),
            };
            let mut res = match text_blocks(payload) {
                Some(t) => t,
                None => render(payload)?,
            };
            let status = ascii_lower(&str_get(p, "status", ""));
            let failed = matches!(p.get("is_error"), Some(Value::Bool(true)))
                || p.get("error").is_some_and(Value::truthy)
                || matches!(status.as_deref(), Some(b"error" | b"failed"));
            if failed && !res.starts_with(b"Error: ") {
                let mut r = b"Error: ".to_vec();
                r.extend_from_slice(&res);
                res = Cow::Owned(r);
            }
            out.push([id.py_str(), res]);
        }
    }
    Ok(out)
}

/// Whether the tool span says, in an attribute, that the tool failed when its status does
/// not: Strands records a handled tool exception as `gen_ai.tool.status` (`tool.status`
/// before 1.0) `error` with the span's status OK, the exception's text as the result.
fn tool_status_failed(a: &Attrs<'_>) -> bool {
    for key in TOOL_STATUS_KEYS {
        if let Some(Value::Str(s)) = a.get(key) {
            return lower_equals(s, b"error") || lower_equals(s, b"failed");
        }
    }
    false
}

/// Arguments as the tool got them, when the span holds a framework's callback payload, or
/// JSON when it holds a Python dict's repr (`str(args)`: `{'path': '../x'}`), which checks
/// that read arguments as JSON could not read.
fn tool_arguments(raw: Text<'_>) -> Result<Text<'_>> {
    if raw.first() == Some(&b'{') && markers()[0].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(unwrapped) = call_arguments(&load_json(&Value::Str(raw.clone())))? {
            return Ok(Cow::Owned(unwrapped.into_owned()));
        }
    }
    if raw.starts_with(b"{'") {
        if let Some(lit @ Value::Dict(_)) = python_literal(&raw) {
            return Ok(Cow::Owned(dumps(&lit, Default::Str, PLAIN)?));
        }
    }
    Ok(raw)
}

/// A result as the tool returned it: the string inside when the span holds it JSON-encoded
/// once more (`JSON.stringify` of a string: `"\"Error: ...\""`), and the content when it
/// holds a serialised LangChain message.
fn tool_result(raw: Text<'_>) -> Result<Text<'_>> {
    let raw = match raw.first() {
        Some(b'"') if raw.len() >= 2 && raw.last() == Some(&b'"') => match decode(&raw) {
            Some(Value::Str(inner)) => Cow::Owned(inner.into_owned()),
            _ => raw,
        },
        _ => raw,
    };
    if raw.first() == Some(&b'{') && markers()[1].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(content) = lc_tool_result(&load_json(&Value::Str(raw.clone())))? {
            return Ok(Cow::Owned(content.into_owned()));
        }
    }
    if raw.starts_with(TEXT_BLOCKS) {
        if let Some(t) = text_blocks(&load_json(&Value::Str(raw.clone()))) {
            return Ok(Cow::Owned(t.into_owned()));
        }
    }
    if raw.starts_with(ADK_RESULT) {
        // Google ADK wraps a tool's return value that is not an object as {"result": value}
        let v = load_json(&Value::Str(raw.clone()));
        if v.dict_len() == 1 {
            if let Some(inner) = v.get("result") {
                return Ok(Cow::Owned(render(inner)?.into_owned()));
            }
        }
    }
    Ok(raw)
}

/// A list of Strands' text content blocks (`[{"text": "..."}, ...]`: a tool's result as its
/// tracer serialises it) as the text the tool returned, one line a block; None for any
/// other value (content_events.rs's `blocks_text`).
pub fn text_blocks<'a>(v: &Value<'a>) -> Option<Text<'a>> {
    let Value::List(items) = v else { return None };
    if items.is_empty() {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    for (i, b) in items.iter().enumerate() {
        let (1, Some(Value::Str(t))) = (b.dict_len(), b.get("text")) else { return None };
        if i > 0 {
            out.push(b'\n');
        }
        out.extend_from_slice(t);
    }
    Some(Cow::Owned(out))
}

const TEXT_BLOCKS: &[u8] = b"[{\"text\": ";
const ADK_MERGED: &str = "(merged tools)";
const ADK_RESULT: &[u8] = b"{\"result\": ";

/// The record's fields from the span and its attributes (every convention), and what of
/// them no convention read (unread.rs).
pub fn build<'a>(span: &SpanHead<'a>, attrs: Attrs<'a>) -> Result<Built<'a>> {
    build_seen(span, attrs, |_| Ok(()))
}

/// `build`, where `skipped` tells the sniff of the attributes a reader left out of `attrs`
/// (a projection's: what no convention reads may still say what a span is).
pub fn build_seen<'a>(span: &SpanHead<'a>, attrs: Attrs<'a>, skipped: impl FnOnce(&mut Sniff) -> Result<()>)
    -> Result<Built<'a>> {
    let mut b = convention(span, attrs)?;
    // claimed: a convention read the span as what it is (tested in this order: a span
    // read as an operation or a tool call, the common case, costs no lookup)
    let claimed = b.operation.is_some() || b.tool.is_some() || b.attrs.has(OI_KIND) || b.attrs.has(TL_KIND)
        || b.attrs.any_key_starting(&TL_INDEXED) || GENAI_MESSAGES.iter().any(|k| b.attrs.has(k));
    let Some(mut sniff) = unread::sniff(claimed, span.has_parent, b.operation.as_deref(), b.tool.is_some(), &b.answer)
    else {
        return Ok(b);
    };
    sniff.name(&span.name);
    for a in &b.attrs.items {
        sniff.key(&a.key, Some(&a.val), is_read(&a.key));
    }
    skipped(&mut sniff)?;
    let (flags, output) = sniff.finish();
    b.missing |= flags;
    if let Some(key) = output {
        b.attrs.set_value(UNREAD_OUTPUT_KEY, Value::Str(Cow::Owned(key)));
    }
    Ok(b)
}

fn convention<'a>(span: &SpanHead<'a>, attrs: Attrs<'a>) -> Result<Built<'a>> {
    if attrs.has(OI_KIND) {
        return openinference::build(span, attrs);
    }
    let mut attrs = if attrs.has(TL_KIND) || attrs.any_key_starting(&TL_INDEXED) {
        openllmetry::map(&attrs)?
    } else if attrs.has(AI_OPERATION) {
        vercel::map(&attrs)?
    } else {
        attrs
    };
    let operation = match attrs.get("gen_ai.operation.name") {
        None | Some(Value::Null) => None,
        Some(op) if ORCHESTRATIONS.iter().any(|o| op.eq_str(o)) => Some(Cow::Borrowed(INVOKE_AGENT.as_bytes())),
        Some(op) => Some(op.py_str()),
    };
    let name: &[u8] = &span.name;
    // A tool span: the operation says so, or, when the exporter left it out, the semconv
    // span name does (`execute_tool` / `execute_tool {gen_ai.tool.name}`).
    let is_tool = match &operation {
        Some(op) => &**op == EXECUTE_TOOL.as_bytes(),
        None => name == EXECUTE_TOOL.as_bytes() || name.starts_with(b"execute_tool "),
    };
    // Google ADK's span around a batch of parallel calls, beside each call's own: not a call
    let is_tool = is_tool && !attrs.get("gen_ai.tool.name").is_some_and(|t| t.eq_str(ADK_MERGED));
    let tool = if is_tool {
        let tool_name = match attrs.get("gen_ai.tool.name") {
            Some(t) if t.truthy() => t.py_str(),
            _ => {
                let bare = strip(name.strip_prefix(EXECUTE_TOOL.as_bytes()).unwrap_or(name));
                if bare.is_empty() {
                    span.name.clone()
                } else {
                    sub_text(&span.name, bare)
                }
            }
        };
        let mut result = tool_result(str_or_empty(attrs.get("gen_ai.tool.call.result")))?;
        if tool_status_failed(&attrs) && !result.starts_with(b"Error: ") {
            let mut r = b"Error: ".to_vec();
            r.extend_from_slice(&result);
            result = Cow::Owned(r);
        }
        Some([
            tool_name,
            tool_arguments(str_or_empty(attrs.get("gen_ai.tool.call.arguments")))?,
            result,
            str_or_empty(attrs.get("gen_ai.tool.call.id")),
        ])
    } else {
        None
    };
    let raw_in = attrs.get("gen_ai.input.messages").filter(|v| !v.is_none());
    let raw_out = attrs.get("gen_ai.output.messages").filter(|v| !v.is_none());
    let (inputs, mut prompt) = messages_and_text(raw_in.unwrap_or(&Value::Null), "user");
    let (mut outputs, mut answer) = messages_and_text(raw_out.unwrap_or(&Value::Null), "assistant");
    if answer.starts_with(b"{'") {
        // a Python repr of the whole assistant message is not an answer: read what it holds
        outputs = unrepr_messages(outputs)?;
        answer = role_text_of(&outputs, "assistant");
    }
    let mut finish = attrs.get("gen_ai.response.finish_reasons").filter(|v| !v.is_none()).cloned();
    if finish.is_none() {
        finish = singular_finish_reason(attrs.get("gen_ai.response.finish_reason"));
    }
    if finish.is_none() {
        finish = message_finish_reasons(&outputs);
    }
    let mut missing = 0;
    if tool.is_some() {
        missing = tool_missing(&attrs, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                               span.failed || tool_status_failed(&attrs));
    } else if operation.as_deref().is_some_and(|op| MODEL_OPERATIONS.iter().any(|m| m.as_bytes() == op)) {
        missing = model_missing(raw_in.is_some() || attrs.has("gen_ai.prompt"),
                                raw_out.is_some() || attrs.has("gen_ai.completion"), finish.is_some());
    }
    let finish = finish.as_ref().map(finish_reasons).unwrap_or_default();
    budget_ended(&mut attrs, &mut answer);
    if operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) {
        if strip(&answer).is_empty() && ended_on_a_call(&outputs) {
            attrs.setdefault("faultgate.termination", Value::Str(Cow::Borrowed(ENDED_ON_A_CALL.as_bytes())));
        }
        limit_ended(span, &mut attrs, b"");
    }
    if prompt.is_empty() {
        prompt = str_or_empty(attrs.get("gen_ai.prompt"));
    }
    if answer.is_empty() {
        answer = str_or_empty(attrs.get("gen_ai.completion"));
    }
    if operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) {
        // Mastra's OTel bridge writes its agent run's input and output under its own keys
        // (`{"text": ..., "files": [...]}`), beside GenAI's operation and agent names
        if let (true, Some(v)) = (prompt.is_empty(), attrs.get(MASTRA_RUN[0])) {
            prompt = plain_text(&load_json(v), "user")?;
        }
        if let (true, Some(v)) = (answer.is_empty(), attrs.get(MASTRA_RUN[1])) {
            answer = plain_text(&load_json(v), "assistant")?;
        }
    }
    Ok(Built {
        operation,
        size: attrs.size(name),
        calls: calls(&outputs)?,
        responses: responses(&inputs)?,
        attrs,
        is_tool,
        prompt,
        answer,
        tool,
        finish,
        shadowed: false,
        missing,
    })
}

/// `attrs[key] = text` for a key the conventions add.
pub fn set_text<'a>(a: &mut Attrs<'a>, key: &'static str, text: Text<'a>) {
    a.set(Attr { key: Cow::Borrowed(key.as_bytes()), val: Value::Str(text), origin: None });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(name: &str) -> SpanHead<'_> {
        SpanHead { name: Cow::Borrowed(name.as_bytes()), has_parent: true, failed: false, message: Cow::Borrowed(b""),
                   instant: false }
    }

    fn attrs<'a>(items: &[(&'a str, Value<'a>)]) -> Attrs<'a> {
        let mut a = Attrs::default();
        for (k, v) in items {
            a.set(Attr { key: Cow::Borrowed(k.as_bytes()), val: v.clone(), origin: None });
        }
        a
    }

    #[test]
    fn a_record_keeps_the_named_attributes_or_all_but_content_in_the_spans_order_however_many() {
        for n in [3usize, 64, 65, 300] {
            let keys: Vec<String> = (0..n).map(|i| format!("k{i}")).collect();
            let mut items: Vec<(&str, Value<'_>)> = keys.iter().map(|k| (k.as_str(), Value::Int(1))).collect();
            items.insert(1, ("gen_ai.input.messages", Value::str("[]")));
            let b = build(&head("work"), attrs(&items)).unwrap();
            let everything = b.kept_attributes(&Kept::All);
            assert_eq!(everything.len(), n, "{n}: content is not kept");
            assert!(everything.iter().map(|(k, _)| k.to_vec()).eq(keys.iter().map(|k| k.as_bytes().to_vec())));
            let names: KeySet = [b"k2".to_vec(), b"k0".to_vec(), b"absent".to_vec()].into_iter().collect();
            let some = b.kept_attributes(&Kept::Names(&names));
            assert!(some.iter().map(|(k, _)| k.to_vec()).eq([b"k0".to_vec(), b"k2".to_vec()]), "{n}");
            assert_eq!(some.get(b"k2").as_deref(), Some(&Value::Int(1)));
        }
    }

    #[test]
    fn a_genai_model_span_gives_its_prompt_answer_calls_and_results() {
        let b = build(&head("chat gpt"), attrs(&[
            ("gen_ai.operation.name", Value::str("chat")),
            ("gen_ai.input.messages", Value::str(r#"[{"role": "user", "parts": [{"type": "text", "content": "q"}]},
                {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c0", "result": "r", "status": "ERROR"}]}]"#)),
            ("gen_ai.output.messages", Value::str(r#"[{"role": "assistant", "parts": [{"type": "text", "content": "a"},
                {"type": "tool_call", "id": "c1", "name": "search", "arguments": {"q": 1}}]}]"#)),
        ])).unwrap();
        let f = b.into_fields(&Kept::All);
        assert_eq!(&*f.prompt, b"q");
        assert_eq!(&*f.answer, b"a");
        assert_eq!(f.calls, vec![ToolCall { call_id: (*b"c1").into(), name: (*b"search").into(), arguments: (*br#"{"q": 1}"#).into() }]);
        assert_eq!(f.responses, vec![((*b"c0").into(), (*b"Error: r").into())]);
        assert_eq!(f.missing, MISSING_FINISH);
        assert_eq!(f.attrs.len(), 1); // content is not kept beside what was read of it
    }

    #[test]
    fn a_tool_span_named_by_semconv_without_its_operation_is_a_tool() {
        let b = build(&head("execute_tool lookup"), attrs(&[("gen_ai.tool.call.arguments", Value::str("{}"))])).unwrap();
        let t = b.tool.clone().unwrap();
        assert_eq!((&*t[0], &*t[1], &*t[2]), (&b"lookup"[..], &b"{}"[..], &b""[..]));
        assert_eq!(b.missing, MISSING_TOOL_RESULT);
    }

    #[test]
    fn a_budget_answer_is_no_answer() {
        let b = build(&head("agent"), attrs(&[("gen_ai.completion", Value::str("x")),
            ("gen_ai.output.messages", Value::str("Sorry, need more steps to process this request."))])).unwrap();
        assert_eq!(&*b.answer, b"x");
        assert_eq!(b.attrs.get("faultgate.termination").unwrap().as_text().unwrap(),
                   b"step limit: Sorry, need more steps to process this request.");
    }
}
