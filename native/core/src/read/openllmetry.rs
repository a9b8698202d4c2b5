//! OpenLLMetry attributes (``traceloop.span.kind``, ``traceloop.entity.*``, indexed legacy
//! content ``gen_ai.prompt.N.*`` / ``gen_ai.completion.N.*`` including ``tool_calls.M.*``)
//! mapped onto their GenAI equivalents; only what is missing is filled.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::attrs::Attrs;
use super::conventions::TL_KIND;
use super::openinference::llama_tool_output;
use super::payload::{lit, load_json, plain_text, tool_payload};
use super::rest_of_line;
use crate::error::Result;
use crate::model::json::dumps_plain;
use crate::model::record::{EXECUTE_TOOL, INVOKE_AGENT};
use crate::model::value::{dict, Text, Value};
use crate::pyfmt::strs::{ascii_lower, small_index};

// Deliberately not ``task -> invoke_agent`` (the collector's mapping): a traceloop task is a
// unit of work inside an agent, and making each one an agent would split one run into many.
const TL_OPERATION: [(&str, &str); 3] = [("agent", INVOKE_AGENT), ("tool", EXECUTE_TOOL), ("workflow", "invoke_workflow")];

pub const TL_INDEXED: [&str; 2] = ["gen_ai.prompt.", "gen_ai.completion."];

/// ``^gen_ai\.(prompt|completion)\.(\d{1,9})\.(.+)$``: (completion?, index, rest).
fn indexed_key(key: &[u8]) -> Option<(bool, i64, &[u8])> {
    let (completion, rest) = if let Some(r) = key.strip_prefix(b"gen_ai.prompt.") {
        (false, r)
    } else if let Some(r) = key.strip_prefix(b"gen_ai.completion.") {
        (true, r)
    } else {
        return None;
    };
    let dot = rest.iter().position(|&c| c == b'.')?;
    let tail = rest_of_line(&rest[dot + 1..])?;
    small_index(&rest[..dot]).map(|i| (completion, i, tail))
}

/// ``^tool_calls\.(\d{1,9})\.(.+)$`` of an indexed message's key.
fn call_key(key: &[u8]) -> Option<(i64, &[u8])> {
    let rest = key.strip_prefix(b"tool_calls.")?;
    let dot = rest.iter().position(|&c| c == b'.')?;
    let tail = rest_of_line(&rest[dot + 1..])?;
    small_index(&rest[..dot]).map(|i| (i, tail))
}

type Fieldset<'a> = Vec<(Vec<u8>, Value<'a>)>;

fn put<'a>(d: &mut Fieldset<'a>, key: &[u8], v: Value<'a>) {
    match d.iter_mut().find(|(k, _)| k == key) {
        Some(slot) => slot.1 = v,
        None => d.push((key.to_vec(), v)),
    }
}

fn field<'x, 'a>(d: &'x Fieldset<'a>, key: &str) -> Option<&'x Value<'a>> {
    d.iter().find(|(k, _)| k == key.as_bytes()).map(|(_, v)| v)
}

fn str_field<'a>(d: &Fieldset<'a>, key: &str, default: &'static str) -> Text<'a> {
    match field(d, key) {
        Some(v) => v.py_str(),
        None => Cow::Borrowed(default.as_bytes()),
    }
}

/// The attributes with OpenLLMetry's mapped onto GenAI's (a copy of ``attrs``).
pub fn map<'a>(attrs: &Attrs<'a>) -> Result<Attrs<'a>> {
    let mut a = attrs.clone();
    let kind = ascii_lower(&match a.get(TL_KIND) {
        Some(k) => k.py_str(),
        None => Cow::Borrowed(&b""[..]),
    }).unwrap_or_default();
    if let Some((_, op)) = TL_OPERATION.iter().find(|(k, _)| k.as_bytes() == &*kind) {
        a.setdefault("gen_ai.operation.name", Value::Str(Cow::Borrowed(op.as_bytes())));
    }
    let entity = a.get("traceloop.entity.name").cloned();
    let entity = match entity {
        Some(e) if e.truthy() => Some(e.py_str()),
        _ => None,
    };
    if &*kind == b"tool" {
        if let Some(e) = entity {
            a.setdefault("gen_ai.tool.name", Value::Str(e));
        }
        if let Some(input) = a.get("traceloop.entity.input") {
            let p = Cow::Owned(entity_payload(input)?.into_owned());
            a.setdefault("gen_ai.tool.call.arguments", Value::Str(p));
        }
        if let Some(output) = a.get("traceloop.entity.output") {
            let p = Cow::Owned(entity_payload(output)?.into_owned());
            a.setdefault("gen_ai.tool.call.result", Value::Str(p));
        }
    } else if &*kind == b"task" && a.get("tool.name").is_some_and(Value::truthy) && a.has("tool.arguments") {
        called_tool(&mut a)?;
    } else if &*kind == b"agent" || &*kind == b"workflow" {
        if let (Some(e), true) = (entity, &*kind == b"agent") {
            a.setdefault("gen_ai.agent.name", Value::Str(e));
        }
        if let (Some(input), false) = (a.get("traceloop.entity.input"), a.has("gen_ai.prompt")) {
            let t = Cow::Owned(entity_text(input, "user")?.into_owned());
            a.set_value("gen_ai.prompt", Value::Str(t));
        }
        if let (Some(output), false) = (a.get("traceloop.entity.output"), a.has("gen_ai.completion")) {
            let t = Cow::Owned(entity_text(output, "assistant")?.into_owned());
            a.set_value("gen_ai.completion", Value::Str(t));
        }
    }
    let mut prompts: BTreeMap<i64, Fieldset<'a>> = BTreeMap::new();
    let mut completions: BTreeMap<i64, Fieldset<'a>> = BTreeMap::new();
    for attr in &attrs.items {
        if let Some((completion, i, rest)) = indexed_key(&attr.key) {
            let m = if completion { &mut completions } else { &mut prompts };
            put(m.entry(i).or_default(), rest, attr.val.clone());
        }
    }
    if !prompts.is_empty() && !a.has("gen_ai.input.messages") {
        let msgs = prompts.values().map(|m| message(m, "user")).collect();
        a.set_value("gen_ai.input.messages", Value::Str(Cow::Owned(dumps_plain(&Value::List(msgs))?)));
    }
    if !completions.is_empty() && !a.has("gen_ai.output.messages") {
        let msgs = completions.values().map(|m| message(m, "assistant")).collect();
        a.set_value("gen_ai.output.messages", Value::Str(Cow::Owned(dumps_plain(&Value::List(msgs))?)));
        let mut reasons = Vec::new();
        for m in completions.values() {
            if let Some(r) = field(m, "finish_reason") {
                if r.truthy() {
                    reasons.push(Value::Str(r.py_str()));
                }
            }
        }
        if !reasons.is_empty() {
            a.setdefault("gen_ai.response.finish_reasons", Value::List(reasons));
        }
    }
    if let Some(r) = a.get("llm.response.finish_reason") {
        if r.truthy() {
            let r = r.py_str();
            a.setdefault("gen_ai.response.finish_reasons", Value::List(vec![Value::Str(r)]));
        }
    }
    a.retain(|k| indexed_key(k).is_none());
    Ok(a)
}

/// traceloop.entity.input/output wrap the call as ``{"args": [...], "kwargs": {...}}`` (or
/// ``{"inputs": ...}``); the tool's own arguments are what a step compares.
/// OpenLLMetry's LlamaIndex instrumentation writes an agent's tool call as a task span (its
/// `call_tool` step) with `tool.name` and `tool.arguments`, the result inside the
/// `ToolCallResult` of `traceloop.entity.output` (`tool_output.raw_output`, failed when
/// `is_error`) with the call's `tool_id`: a tool span, read as one.
fn called_tool(a: &mut Attrs<'_>) -> Result<()> {
    a.set_value("gen_ai.operation.name", Value::Str(Cow::Borrowed(EXECUTE_TOOL.as_bytes())));
    let name = a.value("tool.name").py_str();
    a.setdefault("gen_ai.tool.name", Value::Str(name));
    let args = a.value("tool.arguments").py_str();
    a.setdefault("gen_ai.tool.call.arguments", Value::Str(args));
    let Some(output) = a.get("traceloop.entity.output").cloned() else { return Ok(()) };
    let v = load_json(&output);
    let result = match v.get("tool_output").map(llama_tool_output).transpose()?.flatten() {
        Some(r) => Cow::Owned(r.into_owned()),
        None => Cow::Owned(entity_payload(&output)?.into_owned()),
    };
    if let Some(Value::Str(id)) = v.get("tool_id") {
        if !id.is_empty() {
            a.setdefault("gen_ai.tool.call.id", Value::Str(Cow::Owned(id.to_vec())));
        }
    }
    a.setdefault("gen_ai.tool.call.result", Value::Str(result));
    Ok(())
}

fn entity_payload<'a>(raw: &Value<'a>) -> Result<Text<'a>> {
    let v = load_json(raw);
    if v.is_dict() {
        if let Some(kwargs) = v.get("kwargs") {
            if kwargs.truthy() && !v.get("args").is_some_and(Value::truthy) {
                return Ok(Cow::Owned(dumps_plain(kwargs)?));
            }
        }
        for k in ["inputs", "output", "outputs"] {
            if let (Some(x), 1) = (v.get(k), v.dict_len()) {
                return Ok(Cow::Owned(tool_payload(x)?.into_owned()));
            }
        }
    }
    Ok(Cow::Owned(tool_payload(&v)?.into_owned()))
}

/// An agent's input or output text from its traceloop entity payload: the first string
/// among the call's ``args`` / ``kwargs``, else whatever text the payload holds.
fn entity_text<'a>(raw: &Value<'a>, role: &str) -> Result<Text<'a>> {
    let v = load_json(raw);
    if v.is_dict() && (v.has("args") || v.has("kwargs")) {
        let args: &[Value] = match v.get("args") {
            Some(Value::List(items)) => items,
            _ => &[],
        };
        let kwargs: &[(Value, Value)] = match v.get("kwargs") {
            Some(Value::Dict(items)) => items,
            _ => &[],
        };
        if let Some(Value::Str(first)) = args.iter().chain(kwargs.iter().map(|(_, x)| x)).find(|x| x.is_str()) {
            return Ok(Cow::Owned(first.to_vec()));
        }
    }
    Ok(Cow::Owned(plain_text(&v, role)?.into_owned()))
}

/// One indexed message as a GenAI message with parts.
fn message<'a>(m: &Fieldset<'a>, default_role: &'static str) -> Value<'a> {
    let mut parts = Vec::new();
    if let Some(c) = field(m, "content") {
        if c.truthy() {
            parts.push(dict(vec![("type", lit("text")), ("content", Value::Str(c.py_str()))]));
        }
    }
    let mut calls: BTreeMap<i64, Fieldset<'a>> = BTreeMap::new();
    for (k, v) in m {
        if let Some((i, rest)) = call_key(k) {
            put(calls.entry(i).or_default(), rest, v.clone());
        }
    }
    for c in calls.values() {
        parts.push(dict(vec![
            ("type", lit("tool_call")),
            ("id", Value::Str(str_field(c, "id", ""))),
            ("name", Value::Str(str_field(c, "name", "unknown"))),
            ("arguments", field(c, "arguments").cloned().unwrap_or(lit(""))),
        ]));
    }
    if let (Some(role), Some(call_id)) = (field(m, "role"), field(m, "tool_call_id")) {
        if role.eq_str("tool") && call_id.truthy() {
            parts = vec![dict(vec![
                ("type", lit("tool_call_response")),
                ("id", Value::Str(call_id.py_str())),
                ("result", field(m, "content").cloned().unwrap_or(lit(""))),
            ])];
        }
    }
    dict(vec![("role", Value::Str(str_field(m, "role", default_role))), ("parts", Value::List(parts))])
}
