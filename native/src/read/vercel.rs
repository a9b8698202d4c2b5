//! The Vercel AI SDK's own telemetry (``experimental_telemetry``, ``ai`` 3.3 to 6; in 7,
//! ``@ai-sdk/otel``'s ``LegacyOpenTelemetry``) mapped onto GenAI attributes; only what is
//! missing is filled, as openllmetry.rs does. Every span names its operation in
//! ``ai.operationId``:
//!
//! - ``ai.generateText`` / ``ai.streamText`` / ``ai.generateObject`` / ``ai.streamObject``:
//!   one call of the SDK, its tool loop included: the agent (``invoke_agent``, named by
//!   ``ai.telemetry.functionId``). Its input is ``ai.prompt`` (``{"system", "prompt" |
//!   "messages"}``), its answer ``ai.response.text`` (``ai.result.text`` before 4.0) or the
//!   object generated (``ai.response.object``).
//! - ``….doGenerate`` / ``….doStream``: one model call (``chat``): ``ai.prompt.messages`` (the
//!   SDK's messages: parts ``text``, ``tool-call``, ``tool-result`` whose ``output`` is
//!   ``{"type": "text" | "json" | "error-text" | "error-json", "value"}``, ``result`` and
//!   ``isError`` before 5.0), ``ai.response.text`` and ``ai.response.toolCalls`` (a JSON list
//!   of ``{toolCallId, toolName, input | args}``, ``input`` a JSON string from generateText and
//!   an object from streamText), ``ai.response.finishReason`` when the provider wrote no
//!   ``gen_ai.response.finish_reasons``.
//! - ``ai.toolCall``: a tool's execution (``execute_tool``): ``ai.toolCall.name`` / ``.id`` /
//!   ``.args`` / ``.result`` (``input`` / ``output`` in later versions). The result is the
//!   tool's return value ``JSON.stringify``-ed: a string comes back quoted, which the GenAI
//!   reader unwraps (conventions.rs, ``tool_result``). A tool that throws ends its span in
//!   error, with no result.
//! - ``ai.embed`` / ``ai.embedMany`` and their ``doEmbed``: ``embeddings``.
//!
//! An operation not listed is left unmapped: read/unread.rs judges what it is.

use pyo3::prelude::*;
use std::borrow::Cow;

use crate::read::attrs::Attrs;
use crate::read::dumps::{dumps, Default};
use crate::read::payload::{dict, lit, load_json};
use crate::read::value::{Text, V};

pub const AI_OPERATION: &str = "ai.operationId";
const AGENT_CALLS: [&str; 4] = ["ai.generateText", "ai.streamText", "ai.generateObject", "ai.streamObject"];
const MODEL_CALLS: [&str; 4] = ["ai.generateText.doGenerate", "ai.streamText.doStream", "ai.generateObject.doGenerate",
                                "ai.streamObject.doStream"];
const EMBED_CALLS: [&str; 4] = ["ai.embed", "ai.embedMany", "ai.embed.doEmbed", "ai.embedMany.doEmbed"];
const TOOL_CALL: &str = "ai.toolCall";
/// Where each version writes the output text: the first one present is read.
const OUTPUT_TEXT: [&str; 4] = ["ai.response.text", "ai.result.text", "ai.response.object", "ai.result.object"];
const OUTPUT_CALLS: [&str; 2] = ["ai.response.toolCalls", "ai.result.toolCalls"];
const FINISH: [&str; 2] = ["ai.response.finishReason", "ai.finishReason"];

/// The first of ``keys`` present, its value.
fn first<'x, 'a, 'py>(a: &'x Attrs<'a, 'py>, keys: &[&str]) -> Option<&'x V<'a, 'py>> {
    keys.iter().find_map(|k| a.get(k))
}

fn text_of<'a, 'py>(py: Python<'py>, v: &V<'a, 'py>) -> PyResult<Text<'a>> {
    match v {
        V::Str(s) => Ok(s.clone()),
        V::Null => Ok(Cow::Borrowed(b"")),
        other => Ok(Cow::Owned(dumps(py, other, Default::Plain)?)),
    }
}

/// The attributes with the SDK's mapped onto GenAI's (a copy of ``attrs``).
pub fn map<'a, 'py>(py: Python<'py>, attrs: &Attrs<'a, 'py>) -> PyResult<Attrs<'a, 'py>> {
    let mut a = attrs.clone();
    let op = match a.get(AI_OPERATION) {
        Some(V::Str(s)) => s.clone(),
        _ => return Ok(a),
    };
    let is = |names: &[&str]| names.iter().any(|n| n.as_bytes() == &*op);
    if is(&AGENT_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("invoke_agent"));
        if let Some(f) = a.get("ai.telemetry.functionId").cloned() {
            if f.truthy()? {
                a.setdefault("gen_ai.agent.name", V::Str(f.py_str(py)?));
            }
        }
        if let (Some(p), false) = (a.get("ai.prompt").cloned(), a.has("gen_ai.input.messages")) {
            let msgs = prompt_messages(py, &load_json(py, &p)?)?;
            a.set_value("gen_ai.input.messages", V::Str(Cow::Owned(dumps(py, &V::List(msgs), Default::Plain)?)));
        }
        if let (Some(out), false) = (first(&a, &OUTPUT_TEXT).cloned(), a.has("gen_ai.completion")) {
            let t = text_of(py, &out)?;
            a.set_value("gen_ai.completion", V::Str(t));
        }
    } else if is(&MODEL_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("chat"));
        if let (Some(p), false) = (a.get("ai.prompt.messages").cloned(), a.has("gen_ai.input.messages")) {
            let msgs = match load_json(py, &p)? {
                V::List(items) => items.iter().map(|m| message(py, m)).collect::<PyResult<Vec<_>>>()?,
                _ => Vec::new(),
            };
            a.set_value("gen_ai.input.messages", V::Str(Cow::Owned(dumps(py, &V::List(msgs), Default::Plain)?)));
        }
        let text = first(&a, &OUTPUT_TEXT).cloned();
        let calls = first(&a, &OUTPUT_CALLS).cloned();
        if (text.is_some() || calls.is_some()) && !a.has("gen_ai.output.messages") {
            let mut parts = Vec::new();
            if let Some(t) = &text {
                let t = text_of(py, t)?;
                if !t.is_empty() {
                    parts.push(dict(vec![("type", lit("text")), ("content", V::Str(t))]));
                }
            }
            if let Some(c) = &calls {
                if let V::List(items) = load_json(py, c)? {
                    for call in &items {
                        parts.push(tool_call(py, call)?);
                    }
                }
            }
            let msg = dict(vec![("role", lit("assistant")), ("parts", V::List(parts))]);
            a.set_value("gen_ai.output.messages", V::Str(Cow::Owned(dumps(py, &V::List(vec![msg]), Default::Plain)?)));
        }
        if let (Some(r), false) = (first(&a, &FINISH).cloned(), a.has("gen_ai.response.finish_reasons")) {
            if r.truthy()? {
                a.set_value("gen_ai.response.finish_reasons", V::List(vec![V::Str(r.py_str(py)?)]));
            }
        }
    } else if &*op == TOOL_CALL.as_bytes() {
        a.setdefault("gen_ai.operation.name", lit("execute_tool"));
        for (from, to) in [(&["ai.toolCall.name"][..], "gen_ai.tool.name"), (&["ai.toolCall.id"][..], "gen_ai.tool.call.id"),
                           (&["ai.toolCall.args", "ai.toolCall.input"][..], "gen_ai.tool.call.arguments"),
                           (&["ai.toolCall.result", "ai.toolCall.output"][..], "gen_ai.tool.call.result")] {
            if let (Some(v), false) = (first(&a, from).cloned(), a.has(to)) {
                let t = text_of(py, &v)?;
                a.set_value(to, V::Str(t));
            }
        }
    } else if is(&EMBED_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("embeddings"));
    }
    Ok(a)
}

/// ``ai.prompt`` (``{"system", "prompt", "messages"}``) as GenAI messages.
fn prompt_messages<'a, 'py>(py: Python<'py>, p: &V<'a, 'py>) -> PyResult<Vec<V<'a, 'py>>> {
    let mut out = Vec::new();
    if let Some(V::Str(s)) = p.get("system") {
        out.push(dict(vec![("role", lit("system")), ("parts", V::List(vec![text_part(s.clone())]))]));
    }
    for key in ["messages", "prompt"] {
        match p.get(key) {
            Some(V::List(items)) => {
                for m in items {
                    out.push(message(py, m)?);
                }
            }
            Some(V::Str(s)) => out.push(dict(vec![("role", lit("user")), ("parts", V::List(vec![text_part(s.clone())]))])),
            _ => {}
        }
    }
    if out.is_empty() {
        if let V::Str(s) = p {
            out.push(dict(vec![("role", lit("user")), ("parts", V::List(vec![text_part(s.clone())]))]));
        }
    }
    Ok(out)
}

fn text_part<'a, 'py>(s: Text<'a>) -> V<'a, 'py> {
    dict(vec![("type", lit("text")), ("content", V::Str(s))])
}

/// One of the SDK's messages (``{role, content}``, content a string or a list of parts) as
/// a GenAI message.
fn message<'a, 'py>(py: Python<'py>, m: &V<'a, 'py>) -> PyResult<V<'a, 'py>> {
    let role = match m.get("role") {
        Some(V::Str(r)) => V::Str(r.clone()),
        _ => lit("user"),
    };
    let mut parts = Vec::new();
    match m.get("content") {
        Some(V::Str(s)) => parts.push(text_part(s.clone())),
        Some(V::List(items)) => {
            for p in items {
                let kind = match p.get("type") {
                    Some(V::Str(t)) => &**t,
                    _ => b"",
                };
                match kind {
                    b"text" => {
                        if let Some(V::Str(t)) = p.get("text") {
                            parts.push(text_part(t.clone()));
                        }
                    }
                    b"tool-call" => parts.push(tool_call(py, p)?),
                    b"tool-result" => parts.push(tool_result(py, p)?),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(dict(vec![("role", role), ("parts", V::List(parts))]))
}

fn str_field<'a, 'py>(py: Python<'py>, v: &V<'a, 'py>, key: &str) -> PyResult<V<'a, 'py>> {
    Ok(match v.get(key) {
        Some(V::Null) | None => lit(""),
        Some(x) => V::Str(x.py_str(py)?),
    })
}

/// A tool call (``{toolCallId, toolName, input | args}``) as a ``tool_call`` part.
fn tool_call<'a, 'py>(py: Python<'py>, c: &V<'a, 'py>) -> PyResult<V<'a, 'py>> {
    let arguments = c.get("input").or_else(|| c.get("args")).cloned().unwrap_or(lit(""));
    Ok(dict(vec![("type", lit("tool_call")), ("id", str_field(py, c, "toolCallId")?),
                 ("name", str_field(py, c, "toolName")?), ("arguments", arguments)]))
}

/// A tool result (``output: {type, value}``, or ``result`` with ``isError``) as a
/// ``tool_call_response`` part, failed when the SDK says it is an error.
fn tool_result<'a, 'py>(py: Python<'py>, r: &V<'a, 'py>) -> PyResult<V<'a, 'py>> {
    let (payload, failed) = match r.get("output") {
        Some(o @ V::Dict(_)) => {
            let kind = match o.get("type") {
                Some(V::Str(t)) => t.clone(),
                _ => Cow::Borrowed(&b""[..]),
            };
            (o.get("value").cloned().unwrap_or(V::Null), kind.starts_with(b"error"))
        }
        Some(o) => (o.clone(), false),
        None => (r.get("result").cloned().unwrap_or(V::Null), matches!(r.get("isError"), Some(V::Bool(true)))),
    };
    let mut part = vec![("type", lit("tool_call_response")), ("id", str_field(py, r, "toolCallId")?),
                        ("result", payload)];
    if failed {
        part.push(("is_error", V::Bool(true)));
    }
    Ok(dict(part))
}
