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

use std::borrow::Cow;

use super::attrs::Attrs;
use super::payload::{lit, load_json};
use crate::error::Result;
use crate::model::json::dumps_plain;
use crate::model::value::{dict, Text, Value};

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
fn first<'x, 'a>(a: &'x Attrs<'a>, keys: &[&str]) -> Option<&'x Value<'a>> {
    keys.iter().find_map(|k| a.get(k))
}

fn text_of<'a>(v: &Value<'a>) -> Result<Text<'a>> {
    match v {
        Value::Str(s) => Ok(s.clone()),
        Value::Null => Ok(Cow::Borrowed(b"")),
        other => Ok(Cow::Owned(dumps_plain(other)?)),
    }
}

/// The attributes with the SDK's mapped onto GenAI's (a copy of ``attrs``).
pub fn map<'a>(attrs: &Attrs<'a>) -> Result<Attrs<'a>> {
    let mut a = attrs.clone();
    let op = match a.get(AI_OPERATION) {
        Some(Value::Str(s)) => s.clone(),
        _ => return Ok(a),
    };
    let is = |names: &[&str]| names.iter().any(|n| n.as_bytes() == &*op);
    if is(&AGENT_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("invoke_agent"));
        if let Some(f) = a.get("ai.telemetry.functionId").cloned() {
            if f.truthy() {
                a.setdefault("gen_ai.agent.name", Value::Str(f.py_str()));
            }
        }
        if let (Some(p), false) = (a.get("ai.prompt").cloned(), a.has("gen_ai.input.messages")) {
            let msgs = prompt_messages(&load_json(&p))?;
            a.set_value("gen_ai.input.messages", Value::Str(Cow::Owned(dumps_plain(&Value::List(msgs))?)));
        }
        if let (Some(out), false) = (first(&a, &OUTPUT_TEXT).cloned(), a.has("gen_ai.completion")) {
            let t = text_of(&out)?;
            a.set_value("gen_ai.completion", Value::Str(t));
        }
    } else if is(&MODEL_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("chat"));
        if let (Some(p), false) = (a.get("ai.prompt.messages").cloned(), a.has("gen_ai.input.messages")) {
            let msgs = match load_json(&p) {
                Value::List(items) => items.iter().map(|m| message(m)).collect::<Result<Vec<_>>>()?,
                _ => Vec::new(),
            };
            a.set_value("gen_ai.input.messages", Value::Str(Cow::Owned(dumps_plain(&Value::List(msgs))?)));
        }
        let text = first(&a, &OUTPUT_TEXT).cloned();
        let calls = first(&a, &OUTPUT_CALLS).cloned();
        if (text.is_some() || calls.is_some()) && !a.has("gen_ai.output.messages") {
            let mut parts = Vec::new();
            if let Some(t) = &text {
                let t = text_of(t)?;
                if !t.is_empty() {
                    parts.push(dict(vec![("type", lit("text")), ("content", Value::Str(t))]));
                }
            }
            if let Some(c) = &calls {
                if let Value::List(items) = load_json(c) {
                    for call in &items {
                        parts.push(tool_call(call)?);
                    }
                }
            }
            let msg = dict(vec![("role", lit("assistant")), ("parts", Value::List(parts))]);
            a.set_value("gen_ai.output.messages", Value::Str(Cow::Owned(dumps_plain(&Value::List(vec![msg]))?)));
        }
        if let (Some(r), false) = (first(&a, &FINISH).cloned(), a.has("gen_ai.response.finish_reasons")) {
            if r.truthy() {
                a.set_value("gen_ai.response.finish_reasons", Value::List(vec![Value::Str(r.py_str())]));
            }
        }
    } else if &*op == TOOL_CALL.as_bytes() {
        a.setdefault("gen_ai.operation.name", lit("execute_tool"));
        for (from, to) in [(&["ai.toolCall.name"][..], "gen_ai.tool.name"), (&["ai.toolCall.id"][..], "gen_ai.tool.call.id"),
                           (&["ai.toolCall.args", "ai.toolCall.input"][..], "gen_ai.tool.call.arguments"),
                           (&["ai.toolCall.result", "ai.toolCall.output"][..], "gen_ai.tool.call.result")] {
            if let (Some(v), false) = (first(&a, from).cloned(), a.has(to)) {
                let t = text_of(&v)?;
                a.set_value(to, Value::Str(t));
            }
        }
    } else if is(&EMBED_CALLS) {
        a.setdefault("gen_ai.operation.name", lit("embeddings"));
    }
    Ok(a)
}

/// ``ai.prompt`` (``{"system", "prompt", "messages"}``) as GenAI messages.
fn prompt_messages<'a>(p: &Value<'a>) -> Result<Vec<Value<'a>>> {
    let mut out = Vec::new();
    if let Some(Value::Str(s)) = p.get("system") {
        out.push(dict(vec![("role", lit("system")), ("parts", Value::List(vec![text_part(s.clone())]))]));
    }
    for key in ["messages", "prompt"] {
        match p.get(key) {
            Some(Value::List(items)) => {
                for m in items {
                    out.push(message(m)?);
                }
            }
            Some(Value::Str(s)) => out.push(dict(vec![("role", lit("user")), ("parts", Value::List(vec![text_part(s.clone())]))])),
            _ => {}
        }
    }
    if out.is_empty() {
        if let Value::Str(s) = p {
            out.push(dict(vec![("role", lit("user")), ("parts", Value::List(vec![text_part(s.clone())]))]));
        }
    }
    Ok(out)
}

fn text_part<'a>(s: Text<'a>) -> Value<'a> {
    dict(vec![("type", lit("text")), ("content", Value::Str(s))])
}

/// One of the SDK's messages (``{role, content}``, content a string or a list of parts) as
/// a GenAI message.
fn message<'a>(m: &Value<'a>) -> Result<Value<'a>> {
    let role = match m.get("role") {
        Some(Value::Str(r)) => Value::Str(r.clone()),
        _ => lit("user"),
    };
    let mut parts = Vec::new();
    match m.get("content") {
        Some(Value::Str(s)) => parts.push(text_part(s.clone())),
        Some(Value::List(items)) => {
            for p in items {
                let kind = match p.get("type") {
                    Some(Value::Str(t)) => &**t,
                    _ => b"",
                };
                match kind {
                    b"text" => {
                        if let Some(Value::Str(t)) = p.get("text") {
                            parts.push(text_part(t.clone()));
                        }
                    }
                    b"tool-call" => parts.push(tool_call(p)?),
                    b"tool-result" => parts.push(tool_result(p)?),
                    _ => {}
                }
            }
        }
        _ => {}
    }
    Ok(dict(vec![("role", role), ("parts", Value::List(parts))]))
}

fn str_field<'a>(v: &Value<'a>, key: &str) -> Result<Value<'a>> {
    Ok(match v.get(key) {
        Some(Value::Null) | None => lit(""),
        Some(x) => Value::Str(x.py_str()),
    })
}

/// A tool call (``{toolCallId, toolName, input | args}``) as a ``tool_call`` part.
fn tool_call<'a>(c: &Value<'a>) -> Result<Value<'a>> {
    let arguments = c.get("input").or_else(|| c.get("args")).cloned().unwrap_or(lit(""));
    Ok(dict(vec![("type", lit("tool_call")), ("id", str_field(c, "toolCallId")?),
                 ("name", str_field(c, "toolName")?), ("arguments", arguments)]))
}

/// A tool result (``output: {type, value}``, or ``result`` with ``isError``) as a
/// ``tool_call_response`` part, failed when the SDK says it is an error.
fn tool_result<'a>(r: &Value<'a>) -> Result<Value<'a>> {
    let (payload, failed) = match r.get("output") {
        Some(o @ Value::Dict(_)) => {
            let kind = match o.get("type") {
                Some(Value::Str(t)) => t.clone(),
                _ => Cow::Borrowed(&b""[..]),
            };
            (o.get("value").cloned().unwrap_or(Value::Null), kind.starts_with(b"error"))
        }
        Some(o) => (o.clone(), false),
        None => (r.get("result").cloned().unwrap_or(Value::Null), matches!(r.get("isError"), Some(Value::Bool(true)))),
    };
    let mut part = vec![("type", lit("tool_call_response")), ("id", str_field(r, "toolCallId")?),
                        ("result", payload)];
    if failed {
        part.push(("is_error", Value::Bool(true)));
    }
    Ok(dict(part))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::attrs::Attr;
    use crate::read::conventions::{build, Kept, SpanHead};

    fn attrs<'a>(items: &[(&'a str, &'a str)]) -> Attrs<'a> {
        let mut a = Attrs::default();
        for (k, v) in items {
            a.set(Attr { key: Cow::Borrowed(k.as_bytes()), val: Value::str(v), origin: None });
        }
        a
    }

    fn head(name: &str, has_parent: bool) -> SpanHead<'_> {
        SpanHead { name: Cow::Borrowed(name.as_bytes()), has_parent, failed: false, message: Cow::Borrowed(b""),
                   instant: false }
    }

    #[test]
    fn a_generate_text_call_is_the_agent_with_its_prompt_and_answer() {
        let b = build(&head("ai.generateText", false), attrs(&[
            (AI_OPERATION, "ai.generateText"), ("ai.telemetry.functionId", "weather-agent"),
            ("ai.prompt", r#"{"system": "be brief", "prompt": "Weather in Paris?"}"#),
            ("ai.response.text", "It is sunny.")])).unwrap();
        assert_eq!(b.operation.as_deref(), Some(&b"invoke_agent"[..]));
        assert_eq!((&*b.prompt, &*b.answer), (&b"Weather in Paris?"[..], &b"It is sunny."[..]));
        assert_eq!(b.attrs.value("gen_ai.agent.name").as_text(), Some(&b"weather-agent"[..]));
        assert_eq!(b.missing, 0);
    }

    #[test]
    fn a_model_call_gives_its_tool_calls_and_finish_reason() {
        let b = build(&head("ai.generateText.doGenerate", true), attrs(&[
            (AI_OPERATION, "ai.generateText.doGenerate"),
            ("ai.prompt.messages", r#"[{"role": "user", "content": [{"type": "text", "text": "q"}]}]"#),
            ("ai.response.toolCalls", r#"[{"toolCallId": "c1", "toolName": "weather", "input": "{\"city\":\"Paris\"}"}]"#),
            ("ai.response.finishReason", "tool-calls")])).unwrap();
        let f = b.into_fields(&Kept::All);
        assert_eq!(f.operation.as_deref(), Some(&b"chat"[..]));
        assert_eq!((&*f.calls[0].call_id, &*f.calls[0].name, &*f.calls[0].arguments),
                   (&b"c1"[..], &b"weather"[..], &br#"{"city": "Paris"}"#[..])); // the JSON text rendered
        assert_eq!(f.finish_reasons, vec![(*b"tool-calls").into()]);
        assert_eq!(&*f.prompt, b"q");
    }

    #[test]
    fn a_tool_call_whose_result_is_a_quoted_string_reads_as_the_string() {
        let b = build(&head("ai.toolCall", true), attrs(&[
            (AI_OPERATION, "ai.toolCall"), ("ai.toolCall.name", "weather"), ("ai.toolCall.id", "c1"),
            ("ai.toolCall.args", r#"{"city":"Paris"}"#), ("ai.toolCall.result", r#""18C, sunny""#)])).unwrap();
        let t = b.tool.unwrap();
        assert_eq!((&*t[0], &*t[1], &*t[2], &*t[3]),
                   (&b"weather"[..], &br#"{"city":"Paris"}"#[..], &b"18C, sunny"[..], &b"c1"[..]));
    }

    #[test]
    fn an_unknown_operation_is_left_to_the_unread_sniff() {
        let b = build(&head("ai.somethingNew", true), attrs(&[(AI_OPERATION, "ai.somethingNew"),
                                                                ("ai.toolCall.name", "x")])).unwrap();
        assert!(b.operation.is_none());
        assert_eq!(b.missing, crate::read::unread::UNREAD_TOOL);
    }
}
