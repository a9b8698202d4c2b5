//! OpenLLMetry attributes (``traceloop.span.kind``, ``traceloop.entity.*``, indexed legacy
//! content ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` including ``tool_calls.M.*``)
//! mapped onto their GenAI equivalents; only what is missing is filled.

use pyo3::prelude::*;
use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::read::attrs::Attrs;
use crate::read::conventions::{EXECUTE_TOOL, INVOKE_AGENT, TL_KIND};
use crate::read::payload::{dict, lit, load_json, plain_text, tool_payload};
use crate::read::dumps::{dumps, Default};
use crate::read::text::{lower, rest_of_line, small_index};
use crate::read::value::{Text, V};

// Deliberately not ``task -> invoke_agent`` (the collector's mapping): a traceloop task is a
// unit of work inside an agent, and making each one an agent would split one run into many.
const TL_OPERATION: [(&str, &str); 3] = [("agent", INVOKE_AGENT), ("tool", EXECUTE_TOOL), ("workflow", "invoke_workflow")];

pub const TL_INDEXED: [&str; 2] = ["gen_ai.prompt.", "gen_ai.completion."];

/// ``^gen_ai\.(prompt|completion)\.(\d{1,9})\.(.+)$``: (completion?, index, rest).
fn indexed_key<'k>(py: Python<'_>, key: &'k [u8]) -> PyResult<Option<(bool, i64, &'k [u8])>> {
    let (completion, rest) = if let Some(r) = key.strip_prefix(b"gen_ai.prompt.") {
        (false, r)
    } else if let Some(r) = key.strip_prefix(b"gen_ai.completion.") {
        (true, r)
    } else {
        return Ok(None);
    };
    let Some(dot) = rest.iter().position(|&c| c == b'.') else { return Ok(None) };
    let Some(tail) = rest_of_line(&rest[dot + 1..]) else { return Ok(None) };
    Ok(small_index(py, &rest[..dot])?.map(|i| (completion, i, tail)))
}

/// ``^tool_calls\.(\d{1,9})\.(.+)$`` of an indexed message's key.
fn call_key<'k>(py: Python<'_>, key: &'k [u8]) -> PyResult<Option<(i64, &'k [u8])>> {
    let Some(rest) = key.strip_prefix(b"tool_calls.") else { return Ok(None) };
    let Some(dot) = rest.iter().position(|&c| c == b'.') else { return Ok(None) };
    let Some(tail) = rest_of_line(&rest[dot + 1..]) else { return Ok(None) };
    Ok(small_index(py, &rest[..dot])?.map(|i| (i, tail)))
}

type Fieldset<'a, 'py> = Vec<(Vec<u8>, V<'a, 'py>)>;

fn put<'a, 'py>(d: &mut Fieldset<'a, 'py>, key: &[u8], v: V<'a, 'py>) {
    match d.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = v,
        None => d.push((key.to_vec(), v)),
    }
}

fn field<'x, 'a, 'py>(d: &'x Fieldset<'a, 'py>, key: &str) -> Option<&'x V<'a, 'py>> {
    d.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v)
}

fn str_field<'a, 'py>(py: Python<'py>, d: &Fieldset<'a, 'py>, key: &str, default: &'static str) -> PyResult<Text<'a>> {
    match field(d, key) {
        Some(v) => v.py_str(py),
        None => Ok(Cow::Borrowed(default.as_bytes())),
    }
}

/// The attributes with OpenLLMetry's mapped onto GenAI's (a copy of ``attrs``).
pub fn map<'a, 'py>(py: Python<'py>, attrs: &Attrs<'a, 'py>) -> PyResult<Attrs<'a, 'py>> {
    let mut a = attrs.clone();
    let kind = lower(py, match a.get(TL_KIND) {
        Some(k) => k.py_str(py)?,
        None => Cow::Borrowed(&b""[..]),
    })?;
    if let Some((_, op)) = TL_OPERATION.iter().find(|(k, _)| k.as_bytes() == &*kind) {
        a.setdefault("gen_ai.operation.name", V::Str(Cow::Borrowed(op.as_bytes())));
    }
    let entity = a.get("traceloop.entity.name").cloned();
    let entity = match entity {
        Some(e) if e.truthy()? => Some(e.py_str(py)?),
        _ => None,
    };
    if &*kind == b"tool" {
        if let Some(e) = entity {
            a.setdefault("gen_ai.tool.name", V::Str(e));
        }
        if let Some(input) = a.get("traceloop.entity.input") {
            let p = entity_payload(py, input)?;
            a.setdefault("gen_ai.tool.call.arguments", V::Str(p));
        }
        if let Some(output) = a.get("traceloop.entity.output") {
            let p = entity_payload(py, output)?;
            a.setdefault("gen_ai.tool.call.result", V::Str(p));
        }
    } else if &*kind == b"agent" || &*kind == b"workflow" {
        if let (Some(e), true) = (entity, &*kind == b"agent") {
            a.setdefault("gen_ai.agent.name", V::Str(e));
        }
        if let (Some(input), false) = (a.get("traceloop.entity.input"), a.has("gen_ai.prompt")) {
            let t = entity_text(py, input, "user")?;
            a.set_value("gen_ai.prompt", V::Str(t));
        }
        if let (Some(output), false) = (a.get("traceloop.entity.output"), a.has("gen_ai.completion")) {
            let t = entity_text(py, output, "assistant")?;
            a.set_value("gen_ai.completion", V::Str(t));
        }
    }
    let mut prompts: BTreeMap<i64, Fieldset<'a, 'py>> = BTreeMap::new();
    let mut completions: BTreeMap<i64, Fieldset<'a, 'py>> = BTreeMap::new();
    for attr in &attrs.items {
        if let Some((completion, i, rest)) = indexed_key(py, &attr.key)? {
            let m = if completion { &mut completions } else { &mut prompts };
            put(m.entry(i).or_default(), rest, attr.val.clone());
        }
    }
    if !prompts.is_empty() && !a.has("gen_ai.input.messages") {
        let msgs = prompts.values().map(|m| message(py, m, "user")).collect::<PyResult<Vec<_>>>()?;
        a.set_value("gen_ai.input.messages", V::Str(Cow::Owned(dumps(py, &V::List(msgs), Default::Plain)?)));
    }
    if !completions.is_empty() && !a.has("gen_ai.output.messages") {
        let msgs = completions.values().map(|m| message(py, m, "assistant")).collect::<PyResult<Vec<_>>>()?;
        a.set_value("gen_ai.output.messages", V::Str(Cow::Owned(dumps(py, &V::List(msgs), Default::Plain)?)));
        let mut reasons = Vec::new();
        for m in completions.values() {
            if let Some(r) = field(m, "finish_reason") {
                if r.truthy()? {
                    reasons.push(V::Str(r.py_str(py)?));
                }
            }
        }
        if !reasons.is_empty() {
            a.setdefault("gen_ai.response.finish_reasons", V::List(reasons));
        }
    }
    if let Some(r) = a.get("llm.response.finish_reason") {
        if r.truthy()? {
            let r = r.py_str(py)?;
            a.setdefault("gen_ai.response.finish_reasons", V::List(vec![V::Str(r)]));
        }
    }
    a.retain(|k| Ok(indexed_key(py, k)?.is_none()))?;
    Ok(a)
}

/// traceloop.entity.input/output wrap the call as ``{"args": [...], "kwargs": {...}}`` (or
/// ``{"inputs": ...}``); the tool's own arguments are what a step compares.
fn entity_payload<'a, 'py>(py: Python<'py>, raw: &V<'a, 'py>) -> PyResult<Text<'a>> {
    let v = load_json(py, raw)?;
    if v.is_dict() {
        if let Some(kwargs) = v.get("kwargs") {
            if kwargs.truthy()? && !v.get("args").map_or(Ok(false), V::truthy)? {
                return Ok(Cow::Owned(dumps(py, kwargs, Default::Plain)?));
            }
        }
        for k in ["inputs", "output", "outputs"] {
            if let (Some(x), 1) = (v.get(k), v.dict_len()) {
                return tool_payload(py, x);
            }
        }
    }
    tool_payload(py, &v)
}

/// An agent's input or output text from its traceloop entity payload: the first string
/// among the call's ``args`` / ``kwargs``, else whatever text the payload holds.
fn entity_text<'a, 'py>(py: Python<'py>, raw: &V<'a, 'py>, role: &str) -> PyResult<Text<'a>> {
    let v = load_json(py, raw)?;
    if v.is_dict() && (v.has("args") || v.has("kwargs")) {
        let args: &[V] = match v.get("args") {
            Some(V::List(items)) => items,
            _ => &[],
        };
        let kwargs: &[(V, V)] = match v.get("kwargs") {
            Some(V::Dict(items)) => items,
            _ => &[],
        };
        if let Some(V::Str(first)) = args.iter().chain(kwargs.iter().map(|(_, x)| x)).find(|x| x.is_str()) {
            return Ok(first.clone());
        }
    }
    plain_text(py, &v, role)
}

/// One indexed message as a GenAI message with parts.
fn message<'a, 'py>(py: Python<'py>, m: &Fieldset<'a, 'py>, default_role: &'static str) -> PyResult<V<'a, 'py>> {
    let mut parts = Vec::new();
    if let Some(c) = field(m, "content") {
        if c.truthy()? {
            parts.push(dict(vec![("type", lit("text")), ("content", V::Str(c.py_str(py)?))]));
        }
    }
    let mut calls: BTreeMap<i64, Fieldset<'a, 'py>> = BTreeMap::new();
    for (k, v) in m {
        if let Some((i, rest)) = call_key(py, k)? {
            put(calls.entry(i).or_default(), rest, v.clone());
        }
    }
    for c in calls.values() {
        parts.push(dict(vec![
            ("type", lit("tool_call")),
            ("id", V::Str(str_field(py, c, "id", "")?)),
            ("name", V::Str(str_field(py, c, "name", "unknown")?)),
            ("arguments", field(c, "arguments").cloned().unwrap_or(lit(""))),
        ]));
    }
    if let (Some(role), Some(call_id)) = (field(m, "role"), field(m, "tool_call_id")) {
        if role.eq_str("tool") && call_id.truthy()? {
            parts = vec![dict(vec![
                ("type", lit("tool_call_response")),
                ("id", V::Str(call_id.py_str(py)?)),
                ("result", field(m, "content").cloned().unwrap_or(lit(""))),
            ])];
        }
    }
    Ok(dict(vec![("role", V::Str(str_field(py, m, "role", default_role)?)), ("parts", V::List(parts))]))
}
