//! One span's attributes, in whichever convention wrote them, -> ``SpanRecord``.
//!
//! Three conventions meet here (see ../shared/reference/telemetry-conventions.md):
//!
//! - OTel GenAI: ``gen_ai.operation.name``; content in ``gen_ai.input.messages`` /
//!   ``gen_ai.output.messages`` with ``parts`` (``text``, ``tool_call``, ``tool_call_response``
//!   whose payload is under ``response`` in the schema and ``result`` in older examples), or
//!   the legacy ``gen_ai.prompt`` / ``gen_ai.completion``; tool spans carry
//!   ``gen_ai.tool.call.arguments`` / ``.result``. Here.
//! - OpenInference (openinference.rs) and OpenLLMetry (openllmetry.rs).
//!
//! Every reader builds its records here: the protobuf and OTLP/JSON readers from the bytes
//! (only the attributes a record keeps become Python objects), and ``build_span`` (read/
//! conventions.py's name) from a dict, for the vendor formats, the log events and tests.
//! tests/read/conventions_oracle.py is the Python this replaced; tests/read/
//! test_conventions_parity.py holds the two equal on every recorded trace and on generated
//! attributes.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyFrozenSet, PyList, PyString, PyTuple};
use std::borrow::Cow;
use std::collections::HashSet;

use crate::python::collector;
use crate::read::attrs::{Attr, Attrs, RECORD_BYTES};
use crate::read::openinference::{self, OI_MESSAGES};
use crate::read::openllmetry::{self, TL_INDEXED};
use crate::read::payload::{
    call_arguments, decode, lc_tool_result, load_json, messages_and_text, parts, plain_text, python_literal,
    render, role_text_of, str_get, unrepr_messages,
};
use crate::read::text::{lower, strip};
use crate::read::unread::{self, Sniff, UNREAD_OUTPUT_KEY};
use crate::read::vercel::{self, AI_OPERATION};
use crate::read::value::{borrowed_text, from_py, text_of_py, Strings, Text, V};

pub const OI_KIND: &str = "openinference.span.kind";
pub const TL_KIND: &str = "traceloop.span.kind";
pub const INVOKE_AGENT: &str = "invoke_agent";
pub const EXECUTE_TOOL: &str = "execute_tool";

// model/records.py's MISSING_* flags
pub const MISSING_INPUT: u32 = 1;
pub const MISSING_OUTPUT: u32 = 2;
pub const MISSING_FINISH: u32 = 4;
pub const MISSING_TOOL_ARGUMENTS: u32 = 8;
pub const MISSING_TOOL_RESULT: u32 = 16;

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
/// without an operation (read/unread.rs).
const GENAI_MESSAGES: [&str; 4] = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.prompt", "gen_ai.completion"];
/// Operations of a model call: the spans whose messages and finish reasons checks read.
const MODEL_OPERATIONS: [&str; 3] = ["chat", "text_completion", "generate_content"];
/// Every other attribute a record is built from (with CONTENT_KEYS, TOOL_CONTENT_KEYS,
/// USER_KEYS and the prefixes of indexed and flattened messages): a reader may leave any
/// other out (read/projection.py). A name read here and missing from these is an attribute
/// the live service never sees (tests/read/test_projection.py reads every recorded trace
/// both ways).
const TOOL_STATUS_KEYS: [&str; 2] = ["gen_ai.tool.status", "tool.status"];
const READ_OTHERS: [&str; 27] = [
    OI_KIND, TL_KIND, "gen_ai.operation.name", "gen_ai.tool.name", "gen_ai.tool.call.id",
    "gen_ai.response.finish_reasons", "gen_ai.response.finish_reason", "gen_ai.agent.name", "error.type", "metadata", "tool.name", "tool.id",
    "tool.arguments", "output.mime_type",
    "tool_call.id", "llm.token_count.prompt", "llm.token_count.completion", "llm.finish_reason",
    "llm.response.finish_reason", "traceloop.entity.name",
    AI_OPERATION, "ai.telemetry.functionId", "ai.toolCall.name", "ai.toolCall.id", "ai.response.finishReason",
    TOOL_STATUS_KEYS[0], TOOL_STATUS_KEYS[1],
];

/// What a framework writes as the answer when its own step budget ended the run: the run
/// ended at its step limit without an answer (LangGraph's prebuilt agent at recursion_limit).
const BUDGET_ANSWERS: [&str; 1] = ["Sorry, need more steps to process this request."];

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

/// Whether a convention reads ``key`` (a name of ``read_names`` or one of its prefixes).
fn is_read(key: &[u8]) -> bool {
    read_names().any(|n| n.as_bytes() == key) || read_prefixes().any(|p| key.starts_with(p.as_bytes()))
}

/// The span's own fields, which the record takes as they are.
pub struct Span<'a, 'py> {
    pub trace_id: Bound<'py, PyAny>,
    pub span_id: Bound<'py, PyAny>,
    /// ``parent_id or None``
    pub parent: Bound<'py, PyAny>,
    pub has_parent: bool,
    pub name: Text<'a>,
    pub name_py: Bound<'py, PyAny>,
    pub start: Bound<'py, PyAny>,
    pub end: Bound<'py, PyAny>,
    pub status_code: Bound<'py, PyAny>,
    /// ``status_code == 2``
    pub failed: bool,
    pub message: Text<'a>,
    pub message_py: Bound<'py, PyAny>,
}

/// What the conventions make of a span: the record's other fields.
pub struct Fields<'a, 'py> {
    pub operation: Option<Text<'a>>,
    pub attrs: Attrs<'a, 'py>,
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

/// ``"" if v is None else str(v)``.
pub fn str_or_empty<'a, 'py>(py: Python<'py>, v: Option<&V<'a, 'py>>) -> PyResult<Text<'a>> {
    match v {
        None | Some(V::Null) => Ok(Cow::Borrowed(b"")),
        Some(v) => v.py_str(py),
    }
}

/// What a tool span did not record: an absent attribute, not an empty one (a tool may take
/// no arguments or return nothing). A tool that failed (status error, ``error.type``)
/// returned no result: its error is what was recorded, so no result is missing.
pub fn tool_missing(_py: Python<'_>, a: &Attrs<'_, '_>, arguments: &str, result: &str, failed_status: bool)
    -> PyResult<u32> {
    let failed = failed_status || a.get("error.type").map_or(Ok(false), V::truthy)?;
    Ok((if a.has(arguments) { 0 } else { MISSING_TOOL_ARGUMENTS })
        | (if a.has(result) || failed { 0 } else { MISSING_TOOL_RESULT }))
}

pub fn model_missing(has_input: bool, has_output: bool, has_finish: bool) -> u32 {
    (if has_input { 0 } else { MISSING_INPUT }) | (if has_output { 0 } else { MISSING_OUTPUT })
        | (if has_finish { 0 } else { MISSING_FINISH })
}

/// The operations of a multi-agent orchestration (Strands Agents' ``invoke_swarm`` around
/// the agents that hand off to each other, ``invoke_graph``): the agent of the run they hold,
/// read as ``invoke_agent``, so that the agents inside are its sub-agents, in one run.
const ORCHESTRATIONS: [&str; 2] = ["invoke_swarm", "invoke_graph"];

/// Why a run ended whose agent's last output was a tool call: the framework's step or
/// tool-call budget stopped it before the call's result came back (Semantic Kernel at
/// ``maximum_auto_invoke_attempts`` returns that call as the agent's output).
pub const ENDED_ON_A_CALL: &str = "step limit: the agent's last output was a tool call, not an answer";

/// Whether the last output message is the assistant's and calls a tool (OpenAI's
/// ``tool_calls`` or GenAI ``tool_call`` parts).
fn ended_on_a_call(outputs: &[V<'_, '_>]) -> bool {
    let Some(last) = outputs.last() else { return false };
    last.get("role").is_some_and(|r| r.eq_str("assistant"))
        && (matches!(last.get("tool_calls"), Some(V::List(c)) if !c.is_empty())
            || parts(last).iter().any(|p| p.get("type").is_some_and(|t| t.eq_str("tool_call"))))
}

/// What a framework's error says when its own step or model-call budget ended the run
/// (Google ADK's ``LlmCallsLimitExceededError: Max number of llm calls limit of `12`
/// exceeded``, LlamaIndex's ``Max iterations of 12 reached!``, LangGraph's ``Recursion limit
/// of 25 reached``, the OpenAI Agents SDK's ``Max turns (12) exceeded``, BeeAI's ``Agent was
/// not able to resolve the task in 13 iterations.``), lowercase.
pub const LIMIT_ERRORS: [&str; 6] = ["llm calls limit", "max iterations", "recursion limit", "max turns", "max steps",
                                     "not able to resolve the task in"];

/// An agent span that failed with its framework's budget error ended at its step limit; the
/// error is its status message, else ``error`` (what the span wrote as its output).
pub fn limit_ended<'a, 'py>(span: &Span<'a, 'py>, a: &mut Attrs<'a, 'py>, error: &[u8]) {
    let message: &[u8] = if span.message.is_empty() { error } else { &span.message };
    if span.failed && LIMIT_ERRORS.iter().any(|w| crate::checks::pattern::lower_contains(message, w.as_bytes())) {
        let mut why = b"step limit: ".to_vec();
        why.extend_from_slice(strip(message));
        a.setdefault("faultgate.termination", V::Str(Cow::Owned(why)));
    }
}

/// A budget answer is no answer: the attributes say the step limit ended the run instead.
pub fn budget_ended<'a, 'py>(a: &mut Attrs<'a, 'py>, answer: &mut Text<'a>) {
    if answer.is_empty() {
        return;
    }
    let s = strip(answer);
    if BUDGET_ANSWERS.iter().any(|b| b.as_bytes() == s) {
        let mut why = b"step limit: ".to_vec();
        why.extend_from_slice(s);
        a.setdefault("faultgate.termination", V::Str(Cow::Owned(why)));
        *answer = Cow::Borrowed(b"");
    }
}

/// Semantic Kernel 1.45 writes one finish reason, under the singular name, as its Python
/// enum's text (``FinishReason.LENGTH``): the reason is the member, as the API said it.
fn singular_finish_reason<'a, 'py>(raw: Option<&V<'a, 'py>>) -> Option<V<'a, 'py>> {
    let Some(V::Str(r)) = raw else { return None };
    let member = r.strip_prefix(b"FinishReason.".as_slice()).filter(|m| m.is_ascii());
    Some(V::List(vec![V::Str(match member {
        Some(m) => Cow::Owned(m.to_ascii_lowercase()),
        None => r.clone(),
    })]))
}

/// The ``finish_reason`` each output message carries (the GenAI output message schema's
/// field), when no ``gen_ai.response.finish_reasons`` says them: Strands' latest conventions
/// write them there alone.
fn message_finish_reasons<'a, 'py>(outputs: &[V<'a, 'py>]) -> Option<V<'a, 'py>> {
    let reasons: Vec<V<'a, 'py>> = outputs.iter()
        .filter_map(|m| m.get("finish_reason").filter(|r| matches!(r, V::Str(t) if !t.is_empty())).cloned())
        .collect();
    if reasons.is_empty() { None } else { Some(V::List(reasons)) }
}

pub fn finish_reasons<'a, 'py>(py: Python<'py>, raw: &V<'a, 'py>) -> PyResult<Vec<Text<'a>>> {
    Ok(match raw {
        V::Null => Vec::new(),
        V::List(items) => items.iter().map(|r| r.py_str(py)).collect::<PyResult<_>>()?,
        V::Py(o) if o.is_instance_of::<PyTuple>() => {
            let mut out = Vec::new();
            for r in o.try_iter()? {
                out.push(from_py(&r?, 0)?.py_str(py).map(|t| Cow::Owned(t.into_owned()))?);
            }
            out
        }
        // one JSON-encoded string (``json.dumps(reasons)``: AG2's instrumentation): its items
        V::Str(s) if s.first() == Some(&b'[') => match decode(py, s)? {
            Some(V::List(items)) if items.iter().all(V::is_str) => {
                items.iter().map(|r| r.py_str(py)).collect::<PyResult<_>>()?
            }
            _ => vec![raw.py_str(py)?],
        },
        other => vec![other.py_str(py)?],
    })
}

/// The tool_call parts of output messages.
pub fn calls<'a, 'py>(py: Python<'py>, outputs: &[V<'a, 'py>]) -> PyResult<Vec<[Text<'a>; 3]>> {
    let mut out = Vec::new();
    for m in outputs {
        for p in parts(m) {
            if p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call")) {
                out.push([str_get(py, p, "id", "")?, str_get(py, p, "name", "unknown")?,
                          render(py, p.get("arguments").unwrap_or(&V::Null))?]);
            }
        }
    }
    Ok(out)
}

/// (call id, result) of the tool_call_response parts of input messages; a result the part
/// says failed reads as an error.
pub fn responses<'a, 'py>(py: Python<'py>, inputs: &[V<'a, 'py>]) -> PyResult<Vec<[Text<'a>; 2]>> {
    let mut out = Vec::new();
    for m in inputs {
        for p in parts(m) {
            if !(p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("tool_call_response"))) {
                continue;
            }
            let Some(id) = p.get("id") else { continue };
            if !id.truthy()? {
                continue;
            }
            // The schema names the field ``response``; attribute-table examples say ``result``.
            let payload = match p.get("result") {
                Some(r) => r,
                None => p.get("response").unwrap_or(&V::Null),
            };
            let mut res = match text_blocks(payload) {
                Some(t) => t,
                None => render(py, payload)?,
            };
            let failed = matches!(p.get("is_error"), Some(V::Bool(true)))
                || p.get("error").map_or(Ok(false), V::truthy)?
                || {
                    let status = lower(py, str_get(py, p, "status", "")?)?;
                    &*status == b"error" || &*status == b"failed"
                };
            if failed && !res.starts_with(b"Error: ") {
                let mut r = b"Error: ".to_vec();
                r.extend_from_slice(&res);
                res = Cow::Owned(r);
            }
            out.push([id.py_str(py)?, res]);
        }
    }
    Ok(out)
}

/// Whether the tool span says, in an attribute, that the tool failed when its status does
/// not: Strands records a handled tool exception as ``gen_ai.tool.status`` (``tool.status``
/// before 1.0) ``error`` with the span's status OK, the exception's text as the result.
fn tool_status_failed(py: Python<'_>, a: &Attrs<'_, '_>) -> PyResult<bool> {
    for key in TOOL_STATUS_KEYS {
        if let Some(V::Str(s)) = a.get(key) {
            let s = lower(py, s.clone())?;
            return Ok(&*s == b"error" || &*s == b"failed");
        }
    }
    Ok(false)
}

/// Arguments as the tool got them, when the span holds a framework's callback payload, or
/// JSON when it holds a Python dict's repr (``str(args)``: ``{'path': '../x'}``), which
/// checks that read arguments as JSON could not read.
fn tool_arguments<'a, 'py>(py: Python<'py>, raw: Text<'a>) -> PyResult<Text<'a>> {
    if raw.first() == Some(&b'{') && markers()[0].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(unwrapped) = call_arguments(py, &load_json(py, &V::Str(raw.clone()))?)? {
            return Ok(unwrapped);
        }
    }
    if raw.starts_with(b"{'") {
        if let Some(lit) = python_literal(py, &raw)? {
            if lit.is_instance_of::<PyDict>() {
                let s = crate::read::fallback::python(py)?.str_dumps.bind(py).call1((lit,))?;
                return Ok(Cow::Owned(crate::read::value::text_of_py(s.downcast::<PyString>()?)?));
            }
        }
    }
    Ok(raw)
}

/// A result as the tool returned it: the string inside when the span holds it JSON-encoded
/// once more (``JSON.stringify`` of a string: ``"\"Error: ...\""``), and the content when it
/// holds a serialised LangChain message.
fn tool_result<'a, 'py>(py: Python<'py>, raw: Text<'a>) -> PyResult<Text<'a>> {
    let raw = match raw.first() {
        Some(b'"') if raw.len() >= 2 && raw.last() == Some(&b'"') => match decode(py, &raw)? {
            Some(V::Str(inner)) => inner,
            _ => raw,
        },
        _ => raw,
    };
    if raw.first() == Some(&b'{') && markers()[1].iter().any(|m| m.find(&raw).is_some()) {
        if let Some(content) = lc_tool_result(py, &load_json(py, &V::Str(raw.clone()))?)? {
            return Ok(content);
        }
    }
    if raw.starts_with(TEXT_BLOCKS) {
        if let Some(t) = text_blocks(&load_json(py, &V::Str(raw.clone()))?) {
            return Ok(t);
        }
    }
    if raw.starts_with(ADK_RESULT) {
        // Google ADK wraps a tool's return value that is not an object as {"result": value}
        let v = load_json(py, &V::Str(raw.clone()))?;
        if v.dict_len() == 1 {
            if let Some(inner) = v.get("result") {
                return render(py, inner);
            }
        }
    }
    Ok(raw)
}

/// A list of Strands' text content blocks (``[{"text": "..."}, ...]``: a tool's result as
/// its tracer serialises it) as the text the tool returned, one line a block; None for any
/// other value (read/content_events.py's ``blocks_text``).
pub fn text_blocks<'a, 'py>(v: &V<'a, 'py>) -> Option<Text<'a>> {
    let V::List(items) = v else { return None };
    if items.is_empty() {
        return None;
    }
    let mut out: Vec<u8> = Vec::new();
    for (i, b) in items.iter().enumerate() {
        let (1, Some(V::Str(t))) = (b.dict_len(), b.get("text")) else { return None };
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
pub fn build<'a, 'py>(py: Python<'py>, span: &Span<'a, 'py>, attrs: Attrs<'a, 'py>) -> PyResult<Fields<'a, 'py>> {
    build_seen(py, span, attrs, |_| Ok(()))
}

/// ``build``, where ``skipped`` tells the sniff of the attributes a reader left out of
/// ``attrs`` (a projection's: what no convention reads may still say what a span is).
pub fn build_seen<'a, 'py>(py: Python<'py>, span: &Span<'a, 'py>, attrs: Attrs<'a, 'py>,
                           skipped: impl FnOnce(&mut Sniff) -> PyResult<()>) -> PyResult<Fields<'a, 'py>> {
    let mut f = convention(py, span, attrs)?;
    // claimed: a convention read the span as what it is (tested in this order: a span
    // read as an operation or a tool call, the common case, costs no lookup)
    let claimed = f.operation.is_some() || f.tool.is_some() || f.attrs.has(OI_KIND) || f.attrs.has(TL_KIND)
        || f.attrs.any_key_starting(&TL_INDEXED) || GENAI_MESSAGES.iter().any(|k| f.attrs.has(k));
    let Some(mut sniff) = unread::sniff(claimed, span.has_parent, f.operation.as_deref(), f.tool.is_some(), &f.answer)
    else {
        return Ok(f);
    };
    sniff.name(&span.name);
    for a in &f.attrs.items {
        sniff.key(&a.key, Some(&a.val), is_read(&a.key));
    }
    skipped(&mut sniff)?;
    let (flags, output) = sniff.finish();
    f.missing |= flags;
    if let Some(key) = output {
        f.attrs.set_value(UNREAD_OUTPUT_KEY, V::Str(Cow::Owned(key)));
    }
    Ok(f)
}

fn convention<'a, 'py>(py: Python<'py>, span: &Span<'a, 'py>, attrs: Attrs<'a, 'py>) -> PyResult<Fields<'a, 'py>> {
    if attrs.has(OI_KIND) {
        return openinference::build(py, span, attrs);
    }
    let mut attrs = if attrs.has(TL_KIND) || attrs.any_key_starting(&TL_INDEXED) {
        openllmetry::map(py, &attrs)?
    } else if attrs.has(AI_OPERATION) {
        vercel::map(py, &attrs)?
    } else {
        attrs
    };
    let operation = match attrs.get("gen_ai.operation.name") {
        None | Some(V::Null) => None,
        Some(op) if ORCHESTRATIONS.iter().any(|o| op.eq_str(o)) => Some(Cow::Borrowed(INVOKE_AGENT.as_bytes())),
        Some(op) => Some(op.py_str(py)?),
    };
    let name: &[u8] = &span.name;
    // A tool span: the operation says so, or, when the exporter left it out, the semconv
    // span name does (``execute_tool`` / ``execute_tool {gen_ai.tool.name}``).
    let is_tool = match &operation {
        Some(op) => &**op == EXECUTE_TOOL.as_bytes(),
        None => name == EXECUTE_TOOL.as_bytes() || name.starts_with(b"execute_tool "),
    };
    // Google ADK's span around a batch of parallel calls, beside each call's own: not a call
    let is_tool = is_tool && !attrs.get("gen_ai.tool.name").is_some_and(|t| t.eq_str(ADK_MERGED));
    let tool = if is_tool {
        let tool_name = match attrs.get("gen_ai.tool.name") {
            Some(t) if t.truthy()? => t.py_str(py)?,
            _ => {
                let bare = strip(name.strip_prefix(EXECUTE_TOOL.as_bytes()).unwrap_or(name));
                if bare.is_empty() {
                    span.name.clone()
                } else {
                    sub(&span.name, bare)
                }
            }
        };
        let mut result = tool_result(py, str_or_empty(py, attrs.get("gen_ai.tool.call.result"))?)?;
        if tool_status_failed(py, &attrs)? && !result.starts_with(b"Error: ") {
            let mut r = b"Error: ".to_vec();
            r.extend_from_slice(&result);
            result = Cow::Owned(r);
        }
        Some([
            tool_name,
            tool_arguments(py, str_or_empty(py, attrs.get("gen_ai.tool.call.arguments"))?)?,
            result,
            str_or_empty(py, attrs.get("gen_ai.tool.call.id"))?,
        ])
    } else {
        None
    };
    let raw_in = attrs.get("gen_ai.input.messages").filter(|v| !v.is_none());
    let raw_out = attrs.get("gen_ai.output.messages").filter(|v| !v.is_none());
    let (inputs, mut prompt) = messages_and_text(py, raw_in.unwrap_or(&V::Null), "user")?;
    let (mut outputs, mut answer) = messages_and_text(py, raw_out.unwrap_or(&V::Null), "assistant")?;
    if answer.starts_with(b"{'") {
        // a Python repr of the whole assistant message is not an answer: read what it holds
        outputs = unrepr_messages(py, outputs)?;
        answer = role_text_of(py, &outputs, "assistant")?;
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
        missing = tool_missing(py, &attrs, "gen_ai.tool.call.arguments", "gen_ai.tool.call.result",
                               span.failed || tool_status_failed(py, &attrs)?)?;
    } else if operation.as_deref().is_some_and(|op| MODEL_OPERATIONS.iter().any(|m| m.as_bytes() == op)) {
        missing = model_missing(raw_in.is_some() || attrs.has("gen_ai.prompt"),
                                raw_out.is_some() || attrs.has("gen_ai.completion"), finish.is_some());
    }
    let finish = match &finish {
        Some(f) => finish_reasons(py, f)?,
        None => Vec::new(),
    };
    budget_ended(&mut attrs, &mut answer);
    if operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) {
        if strip(&answer).is_empty() && ended_on_a_call(&outputs) {
            attrs.setdefault("faultgate.termination", V::Str(Cow::Borrowed(ENDED_ON_A_CALL.as_bytes())));
        }
        limit_ended(span, &mut attrs, b"");
    }
    if prompt.is_empty() {
        prompt = str_or_empty(py, attrs.get("gen_ai.prompt"))?;
    }
    if answer.is_empty() {
        answer = str_or_empty(py, attrs.get("gen_ai.completion"))?;
    }
    if operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) {
        // Mastra's OTel bridge writes its agent run's input and output under its own keys
        // (``{"text": ..., "files": [...]}``), beside GenAI's operation and agent names
        if let (true, Some(v)) = (prompt.is_empty(), attrs.get(MASTRA_RUN[0])) {
            prompt = plain_text(py, &load_json(py, v)?, "user")?;
        }
        if let (true, Some(v)) = (answer.is_empty(), attrs.get(MASTRA_RUN[1])) {
            answer = plain_text(py, &load_json(py, v)?, "assistant")?;
        }
    }
    Ok(Fields {
        operation,
        size: attrs.size(name),
        calls: calls(py, &outputs)?,
        responses: responses(py, &inputs)?,
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

/// ``part`` (a slice of ``whole``'s bytes) as text borrowed as long as ``whole`` is.
fn sub<'a>(whole: &Text<'a>, part: &[u8]) -> Text<'a> {
    match whole {
        Cow::Borrowed(w) => {
            let start = part.as_ptr() as usize - w.as_ptr() as usize;
            Cow::Borrowed(&w[start..start + part.len()])
        }
        Cow::Owned(_) => Cow::Owned(part.to_vec()),
    }
}

// ------------------------------------------------------------------ the record

/// model/records.py's classes and the values records share, looked up once.
pub struct Records {
    span_record: Py<PyAny>,
    tool_execution: Py<PyAny>,
    tool_call: Py<PyAny>,
    no_attrs: Py<PyAny>,
    empty: Py<PyTuple>,
    pub from_attributes: Py<PyAny>,
    pub evaluations_key: String,
    /// read/content_events.py's ``content_attributes`` and the event names it reads
    content_attributes: Py<PyAny>,
    content_events: Vec<Vec<u8>>,
}

static RECORDS: GILOnceCell<Records> = GILOnceCell::new();

pub fn records(py: Python<'_>) -> PyResult<&'static Records> {
    RECORDS.get_or_try_init(py, || -> PyResult<Records> {
        let m = py.import("faultgate_stream.model.records")?;
        let events = py.import("faultgate_stream.read.events")?;
        let content = py.import("faultgate_stream.read.content_events")?;
        for cls in ["SpanRecord", "ToolExecution", "ToolCall"] {
            // new_tuple allocates them as tuples: they must be tuple subclasses
            if !m.getattr(cls)?.downcast::<pyo3::types::PyType>()?.is_subclass_of::<PyTuple>()? {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!("{cls} is not a tuple")));
            }
        }
        Ok(Records {
            span_record: m.getattr("SpanRecord")?.unbind(),
            tool_execution: m.getattr("ToolExecution")?.unbind(),
            tool_call: m.getattr("ToolCall")?.unbind(),
            no_attrs: m.getattr("NO_ATTRS")?.unbind(),
            empty: PyTuple::empty(py).unbind(),
            from_attributes: events.getattr("from_attributes")?.unbind(),
            evaluations_key: events.getattr("EVALUATIONS")?.extract()?,
            content_attributes: content.getattr("content_attributes")?.unbind(),
            content_events: content.getattr("NAMES")?.try_iter()?
                .map(|n| Ok(n?.extract::<String>()?.into_bytes())).collect::<PyResult<_>>()?,
        })
    })
}

/// The only attributes a record keeps (read/projection.py), or all but content.
pub enum Kept<'k, 'py> {
    All,
    Names(&'k HashSet<Vec<u8>, foldhash::fast::RandomState>),
    PySet(Bound<'py, PyAny>),
}

impl Records {
    /// Whether a span event of this name may carry GenAI content (read/content_events.py).
    pub fn is_content_event(&self, name: &[u8]) -> bool {
        self.content_events.iter().any(|n| n == name)
    }

    /// The GenAI content a span's ``events`` (``(name, attributes)`` pairs, each named as
    /// ``is_content_event`` accepts) carry, set on its attributes where it has none of that
    /// name: the span's own attributes win (read/content_events.py).
    pub fn add_event_content<'a, 'py>(&self, py: Python<'py>, name: &Bound<'py, PyAny>, attrs: &mut Attrs<'a, 'py>,
                                      events: &Bound<'py, PyList>) -> PyResult<()> {
        let operation = match attrs.get("gen_ai.operation.name") {
            None => py.None().into_bound(py),
            Some(op) => op.to_py(py, None)?,
        };
        let found = self.content_attributes.bind(py).call1((name, operation, events))?;
        for (k, v) in found.downcast::<PyDict>()?.iter() {
            let key = text_of_py(k.downcast::<PyString>()?)?;
            if !attrs.has_bytes(&key) {
                attrs.set(Attr { key: Cow::Owned(key), key_py: Some(k), val: from_py(&v, 0)?, val_py: Some(v) });
            }
        }
        Ok(())
    }

    /// ``tuple.__new__(cls, fields)`` without the call: the class's own allocator (a
    /// NamedTuple is a tuple subclass of no other state), then the items, as tuple.__new__
    /// fills them. The call and its argument tuple were a tenth of reading a span.
    fn new_tuple<'py, const N: usize>(&self, py: Python<'py>, cls: &Py<PyAny>, fields: [Bound<'py, PyAny>; N])
        -> PyResult<Bound<'py, PyAny>> {
        let cls = cls.bind(py).downcast::<pyo3::types::PyType>()?;
        // SAFETY: `cls` is a tuple subclass (checked when the classes were looked up), whose
        // tp_alloc makes a tuple of N items, each NULL, owned by us alone; PyTuple_SetItem
        // steals one reference per item into it.
        unsafe {
            let tp = cls.as_type_ptr();
            let alloc: pyo3::ffi::allocfunc = std::mem::transmute(pyo3::ffi::PyType_GetSlot(tp, pyo3::ffi::Py_tp_alloc));
            let obj = alloc(tp, N as pyo3::ffi::Py_ssize_t);
            if obj.is_null() {
                return Err(PyErr::fetch(py));
            }
            let obj = Bound::from_owned_ptr(py, obj);
            for (i, item) in fields.into_iter().enumerate() {
                if pyo3::ffi::PyTuple_SetItem(obj.as_ptr(), i as pyo3::ffi::Py_ssize_t, item.into_ptr()) != 0 {
                    return Err(PyErr::fetch(py));
                }
            }
            Ok(untracked(obj))
        }
    }

    /// The ``SpanRecord`` of ``span`` and what the conventions made of it.
    pub fn record<'py>(&self, py: Python<'py>, strings: &mut Strings<'py>, span: &Span<'_, 'py>,
                       f: Fields<'_, 'py>, kept: &Kept<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
        let mut text = |t: &[u8]| -> PyResult<Bound<'py, PyAny>> { Ok(strings.text(py, t)?.into_any()) };
        let operation = match &f.operation {
            Some(op) => text(op)?,
            None => py.None().into_bound(py),
        };
        let prompt = text(&f.prompt)?;
        let answer = text(&f.answer)?;
        let tool = match &f.tool {
            Some([name, args, result, call_id]) => {
                self.new_tuple(py, &self.tool_execution, [text(name)?, text(args)?, text(result)?, text(call_id)?])?
            }
            None => py.None().into_bound(py),
        };
        let calls = self.tuple_of(py, f.calls.iter(), |c| {
            self.new_tuple(py, &self.tool_call, [text(&c[0])?, text(&c[1])?, text(&c[2])?])
        })?;
        let responses = self.tuple_of(py, f.responses.iter(), |r| {
            Ok(untracked(PyTuple::new(py, [text(&r[0])?, text(&r[1])?])?.into_any()))
        })?;
        let finish = self.tuple_of(py, f.finish.iter(), |r| text(r))?;
        let attrs = self.kept(py, strings, &f.attrs, f.is_tool, kept)?;
        self.new_tuple(py, &self.span_record, [
            span.trace_id.clone(), span.span_id.clone(), span.parent.clone(), span.name_py.clone(),
            span.start.clone(), span.end.clone(), span.status_code.clone(), span.message_py.clone(),
            operation, attrs, prompt, answer, tool, calls, responses, finish,
            pyo3::types::PyBool::new(py, f.shadowed).to_owned().into_any(),
            f.size.into_pyobject(py)?.into_any(), f.missing.into_pyobject(py)?.into_any(),
        ])
    }

    fn tuple_of<'py, T>(&self, py: Python<'py>, items: impl ExactSizeIterator<Item = T>,
                        mut one: impl FnMut(T) -> PyResult<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        if items.len() == 0 {
            return Ok(self.empty.bind(py).clone().into_any());
        }
        let out = items.map(&mut one).collect::<PyResult<Vec<_>>>()?;
        Ok(untracked(PyTuple::new(py, out)?.into_any()))
    }

    /// ``attrs`` without message content, or only its ``kept`` keys.
    fn kept<'py>(&self, py: Python<'py>, strings: &mut Strings<'py>, a: &Attrs<'_, 'py>, is_tool: bool,
                 kept: &Kept<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
        // made at the first attribute kept: most records keep none and share NO_ATTRS
        let mut out: Option<Bound<'py, PyDict>> = if matches!(kept, Kept::All) { Some(PyDict::new(py)) } else { None };
        for attr in &a.items {
            let key = &*attr.key;
            let keep = match kept {
                Kept::All => {
                    !(CONTENT_KEYS.iter().any(|k| k.as_bytes() == key)
                        || (is_tool && TOOL_CONTENT_KEYS.iter().any(|k| k.as_bytes() == key))
                        || OI_MESSAGES.iter().any(|p| key.starts_with(p.as_bytes())))
                }
                Kept::Names(names) => names.contains(key),
                Kept::PySet(set) => set.contains(key_object(py, strings, attr)?)?,
            };
            if keep {
                let v = match &attr.val_py {
                    Some(v) => v.clone(),
                    None => attr.val.to_py(py, Some(strings))?,
                };
                out.get_or_insert_with(|| PyDict::new(py)).set_item(key_object(py, strings, attr)?, v)?;
            }
        }
        // a new dict, not deletions: most records keep none (a tool span's attributes are
        // all read into its record's fields), and those share one empty mapping
        Ok(match out {
            Some(d) => d.into_any(),
            None => self.no_attrs.bind(py).clone(),
        })
    }
}

/// `obj`, a record or tuple of a record just made, out of the cyclic garbage collector's
/// lists. Every span in flight was two to four tracked objects (a tuple subclass stays tracked
/// for good; an exact tuple until its first collection), so every young and middle collection
/// walked the spans in flight, about a microsecond an object: 7.5 µs a span, 17% of the
/// service's CPU at its maximum (issue 12, bench/README.md). Nothing in a record can refer
/// back to it: its items are the strings, numbers, tuples and fresh dicts this reader made
/// from the request (or `build_span`'s caller's values, copied into a new dict), so no cycle
/// can pass through it (python/collector.rs: why that makes it sound).
fn untracked(obj: Bound<'_, PyAny>) -> Bound<'_, PyAny> {
    collector::untrack(&obj);
    obj
}

fn key_object<'py>(py: Python<'py>, strings: &mut Strings<'py>, attr: &Attr<'_, 'py>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match &attr.key_py {
        Some(k) => k.clone(),
        None => strings.text(py, &attr.key)?.into_any(),
    })
}

// ------------------------------------------------------------------ build_span, for Python

/// ``build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code,
/// status_message, attrs, *, owned=False, kept=None) -> SpanRecord``: the record for one
/// span whose attributes are a dict of plain values (str, int, float, bool, list, dict).
/// ``kept``: the only attributes the record keeps (read/projection.py); every one but
/// content without it. ``owned`` is accepted for the callers that said the dict was the
/// record's to keep: the record's attributes are always a dict of their own.
#[pyfunction]
#[pyo3(signature = (trace_id, span_id, parent_id, name, start_ns, end_ns, status_code, status_message, attrs, *,
                    owned=false, kept=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_span<'py>(py: Python<'py>, trace_id: Bound<'py, PyAny>, span_id: Bound<'py, PyAny>,
                       parent_id: Bound<'py, PyAny>, name: Bound<'py, PyString>, start_ns: Bound<'py, PyAny>,
                       end_ns: Bound<'py, PyAny>, status_code: Bound<'py, PyAny>,
                       status_message: Bound<'py, PyString>, attrs: Bound<'py, PyDict>, owned: bool,
                       kept: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let _ = owned;
    guarded(|| {
        let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = attrs.iter().collect();
        let mut a = Attrs::with_capacity(items.len());
        for (k, v) in &items {
            let key = k.downcast::<PyString>()?;
            let val = match v.downcast::<PyString>() {
                Ok(s) => V::Str(borrowed_text(s)?),
                Err(_) => from_py(v, 0)?,
            };
            a.set(Attr { key: borrowed_text(key)?, key_py: Some(k.clone()), val, val_py: Some(v.clone()) });
        }
        let has_parent = parent_id.is_truthy()?;
        let span = Span {
            trace_id,
            span_id,
            parent: if has_parent { parent_id } else { py.None().into_bound(py) },
            has_parent,
            name: borrowed_text(&name)?,
            name_py: name.clone().into_any(),
            start: start_ns,
            end: end_ns,
            failed: status_code.eq(2)?,
            status_code,
            message: borrowed_text(&status_message)?,
            message_py: status_message.clone().into_any(),
        };
        let fields = build(py, &span, a)?;
        let kept = match kept {
            None => Kept::All,
            Some(k) if k.is_none() => Kept::All,
            Some(k) => Kept::PySet(if k.is_instance_of::<PyFrozenSet>() { k } else { PyFrozenSet::new(py, k.try_iter()?.collect::<PyResult<Vec<_>>>()?)?.into_any() }),
        };
        records(py)?.record(py, &mut Strings::new(), &span, fields, &kept)
    })
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled conventions", f)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build_span, m)?)?;
    m.add("OI_KIND", OI_KIND)?;
    m.add("TL_KIND", TL_KIND)?;
    m.add("CONTENT_KEYS", PyFrozenSet::new(py, CONTENT_KEYS)?)?;
    m.add("TOOL_CONTENT_KEYS", PyFrozenSet::new(py, TOOL_CONTENT_KEYS)?)?;
    m.add("USER_KEYS", PyTuple::new(py, USER_KEYS)?)?;
    m.add("MODEL_OPERATIONS", PyFrozenSet::new(py, MODEL_OPERATIONS)?)?;
    m.add("READ_NAMES", PyFrozenSet::new(py, read_names().collect::<Vec<_>>())?)?;
    m.add("READ_PREFIXES", PyTuple::new(py, read_prefixes().collect::<Vec<_>>())?)?;
    m.add("BUDGET_ANSWERS", PyFrozenSet::new(py, BUDGET_ANSWERS)?)?;
    m.add("RECORD_BYTES", RECORD_BYTES)
}
