//! GenAI content carried in span events -> the span's content attributes
//! (read/content_events.py documents the conventions and is the reference this follows).
//!
//! Some instrumentations record a span's messages as events of the span instead of its
//! attributes (AWS Strands Agents: the per-message `gen_ai.user.message` ... `gen_ai.choice`
//! events, or `gen_ai.client.inference.operation.details` events holding the message lists;
//! the older `gen_ai.content.prompt` / `.completion`). The readers hand `content_attributes`
//! a span's events of these names (`is_content_event`); what it returns is set on the span
//! where the span has no attribute of that name (`add_to`), so the conventions read
//! event-borne content as they read attributes (the span's own win).

use std::borrow::Cow;

use super::attrs::{Attr, Attrs};
use super::payload::decode;
use crate::error::Result;
use crate::model::json::{dumps, Default, PLAIN};
use crate::model::record::EXECUTE_TOOL;
use crate::model::value::{dict, Text, Value};
use crate::pyfmt::strs::code_points;

const DETAILS: &str = "gen_ai.client.inference.operation.details";
const MESSAGE_EVENTS: [(&str, &str); 3] = [("gen_ai.user.message", "user"), ("gen_ai.assistant.message", "assistant"),
                                           ("gen_ai.tool.message", "tool")];
const CHOICE: &str = "gen_ai.choice";
const LEGACY: [(&str, &str); 2] = [("gen_ai.content.prompt", "gen_ai.prompt"),
                                   ("gen_ai.content.completion", "gen_ai.completion")];
/// The message lists a details event may hold, each added up over the span's events.
const LISTS: [&str; 3] = ["gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.system_instructions"];
const FINISH_REASONS: &str = "gen_ai.response.finish_reasons";

/// Whether a span event of this name may carry GenAI content.
pub fn is_content_event(name: &[u8]) -> bool {
    name == DETAILS.as_bytes() || name == CHOICE.as_bytes() || MESSAGE_EVENTS.iter().any(|(n, _)| n.as_bytes() == name)
        || LEGACY.iter().any(|(n, _)| n.as_bytes() == name)
}

/// One event: its name and its attributes (a dict).
pub type Event<'a> = (Text<'a>, Value<'a>);

/// An insertion-ordered map of the keys this module writes.
type Out<'a> = Vec<(&'static str, Value<'a>)>;

fn setdefault<'a>(out: &mut Out<'a>, key: &'static str, v: Value<'a>) {
    if !out.iter().any(|(k, _)| *k == key) {
        out.push((key, v));
    }
}

/// A JSON text decoded (the value as it is when it is not JSON).
fn decoded<'a>(v: &Value<'a>) -> Value<'a> {
    if let Value::Str(s) = v {
        if matches!(s.first(), Some(b'[' | b'{')) {
            if let Some(d) = decode(s) {
                return d;
            }
        }
    }
    v.clone()
}

/// `json.dumps(v)` (`ensure_ascii=True`): every character past ASCII as its `\uXXXX`
/// escape, a surrogate pair past the BMP.
fn ascii_dumps(v: &Value<'_>) -> Result<Vec<u8>> {
    let text = dumps(v, Default::Strict, PLAIN)?;
    if text.is_ascii() {
        return Ok(text);
    }
    let mut out = Vec::with_capacity(text.len() + 16);
    for cp in code_points(&text) {
        if cp < 0x80 {
            out.push(cp as u8);
        } else if cp > 0xFFFF {
            let c = cp - 0x10000;
            out.extend_from_slice(format!("\\u{:04x}\\u{:04x}", 0xD800 + (c >> 10), 0xDC00 + (c & 0x3FF)).as_bytes());
        } else {
            out.extend_from_slice(format!("\\u{cp:04x}").as_bytes());
        }
    }
    Ok(out)
}

/// `str(x or "")`.
fn str_or<'a>(x: Option<&Value<'a>>, default: &'static str) -> Value<'a> {
    match x {
        Some(v) if v.truthy() => Value::Str(v.py_str()),
        _ => Value::Str(Cow::Borrowed(default.as_bytes())),
    }
}

/// The text of a list of Strands content blocks (`[{"text": ...}, {"json": ...}]`), one
/// line each; None when `v` is no such list.
pub fn blocks_text(v: &Value<'_>) -> Result<Option<Vec<u8>>> {
    let v = decoded(v);
    let Value::List(items) = &v else { return Ok(None) };
    if items.is_empty() || !items.iter().all(|b| b.is_dict() && b.dict_len() == 1) {
        return Ok(None);
    }
    let mut out = Vec::new();
    for (i, b) in items.iter().enumerate() {
        if i > 0 {
            out.push(b'\n');
        }
        if let Some(Value::Str(t)) = b.get("text") {
            out.extend_from_slice(t);
        } else if let Some(j) = b.get("json") {
            out.extend_from_slice(&ascii_dumps(j)?);
        } else {
            return Ok(None);
        }
    }
    Ok(Some(out))
}

/// A message's content as GenAI parts: Strands' content blocks, else one text part.
fn parts<'a>(content: Option<&Value<'a>>) -> Result<Vec<Value<'a>>> {
    let content = content.unwrap_or(&Value::Null);
    let blocks = decoded(content);
    let Value::List(blocks) = blocks else {
        return Ok(if content.is_none() || content.eq_str("") {
            Vec::new()
        } else {
            vec![dict(vec![("type", Value::str("text")), ("content", Value::Str(content.py_str()))])]
        });
    };
    let mut out = Vec::new();
    for b in &blocks {
        if !b.is_dict() {
            continue;
        }
        if let Some(Value::Str(t)) = b.get("text") {
            out.push(dict(vec![("type", Value::str("text")), ("content", Value::Str(t.clone()))]));
        } else if let Some(u @ Value::Dict(_)) = b.get("toolUse") {
            out.push(dict(vec![("type", Value::str("tool_call")), ("id", str_or(u.get("toolUseId"), "")),
                               ("name", str_or(u.get("name"), "unknown")),
                               ("arguments", u.get("input").cloned().unwrap_or(Value::Null))]));
        } else if let Some(r @ Value::Dict(_)) = b.get("toolResult") {
            let content = r.get("content").cloned().unwrap_or(Value::Null);
            let response = match blocks_text(&content)? {
                Some(t) => Value::Str(Cow::Owned(t)),
                None => content,
            };
            out.push(dict(vec![("type", Value::str("tool_call_response")), ("id", str_or(r.get("toolUseId"), "")),
                               ("response", response), ("status", str_or(r.get("status"), ""))]));
        }
    }
    Ok(out)
}

fn is_tool(name: &[u8], operation: Option<&Value<'_>>) -> bool {
    match operation {
        Some(op) if !op.is_none() => op.eq_str(EXECUTE_TOOL),
        _ => name == EXECUTE_TOOL.as_bytes() || name.starts_with(b"execute_tool "),
    }
}

fn openai_calls<'a>(calls: &[Value<'a>]) -> Vec<Value<'a>> {
    let mut out = Vec::new();
    for c in calls {
        if !c.is_dict() {
            continue;
        }
        let function = c.get("function").filter(|f| f.is_dict());
        out.push(dict(vec![("type", Value::str("tool_call")), ("id", str_or(c.get("id"), "")),
                           ("name", str_or(function.and_then(|f| f.get("name")), "unknown")),
                           ("arguments", function.and_then(|f| f.get("arguments")).cloned().unwrap_or(Value::Null))]));
    }
    out
}

/// A tool span's arguments and result from the `tool_call` and `tool_call_response` parts
/// of its details events (Strands' latest conventions), where no attribute has them.
fn tool_from_messages<'a>(lists: &mut Vec<(&'static str, Vec<Value<'a>>)>, out: &mut Out<'a>) -> Result<()> {
    for (key, part_type, field, attr) in [("gen_ai.input.messages", "tool_call", "arguments", "gen_ai.tool.call.arguments"),
                                          ("gen_ai.output.messages", "tool_call_response", "response",
                                           "gen_ai.tool.call.result")] {
        let Some(at) = lists.iter().position(|(k, _)| *k == key) else { continue };
        let (_, messages) = lists.remove(at);
        for m in &messages {
            let Some(Value::List(ps)) = m.get("parts") else { continue };
            for p in ps {
                let Some(v) = p.get(field).filter(|_| p.get("type").is_some_and(|t| t.eq_str(part_type))) else {
                    continue;
                };
                let text = if attr.ends_with("result") { blocks_text(v)? } else { None };
                let value = match (text, v) {
                    (Some(t), _) => Value::Str(Cow::Owned(t)),
                    (None, Value::Str(s)) => Value::Str(s.clone()),
                    (None, other) => Value::Str(Cow::Owned(ascii_dumps(other)?)),
                };
                setdefault(out, attr, value);
            }
        }
    }
    Ok(())
}

/// The content attributes the events (in order) of the span named `name` with
/// `gen_ai.operation.name` `operation` carry.
pub fn content_attributes<'a>(name: &[u8], operation: Option<&Value<'a>>, events: &[Event<'a>])
    -> Result<Vec<(&'static str, Value<'a>)>> {
    let tool = is_tool(name, operation);
    let mut lists: Vec<(&'static str, Vec<Value<'a>>)> = Vec::new();
    let mut out: Out<'a> = Vec::new();
    let (mut inputs, mut outputs, mut reasons) = (Vec::new(), Vec::new(), Vec::new());
    let extend = |lists: &mut Vec<(&'static str, Vec<Value<'a>>)>, key: &'static str, items: Vec<Value<'a>>| {
        match lists.iter_mut().find(|(k, _)| *k == key) {
            Some((_, l)) => l.extend(items),
            None => lists.push((key, items)),
        }
    };
    for (event, attrs) in events {
        let event: &[u8] = event;
        if event == DETAILS.as_bytes() {
            for key in LISTS {
                if let Some(v) = attrs.get(key) {
                    let items = match decoded(v) {
                        Value::List(items) => items,
                        other => vec![other],
                    };
                    extend(&mut lists, key, items);
                }
            }
            if let Some(r) = attrs.get(FINISH_REASONS) {
                setdefault(&mut out, FINISH_REASONS, r.clone());
            }
        } else if let Some((_, key)) = LEGACY.iter().find(|(n, _)| n.as_bytes() == event) {
            if let Some(v) = attrs.get(key) {
                setdefault(&mut out, key, v.clone());
            }
        } else if tool && event == b"gen_ai.tool.message" {
            // a tool span's own: the arguments it was called with
            if let Some(c) = attrs.get("content") {
                setdefault(&mut out, "gen_ai.tool.call.arguments", c.clone());
            }
            if let Some(id) = attrs.get("id").filter(|i| i.truthy()) {
                setdefault(&mut out, "gen_ai.tool.call.id", id.clone());
            }
        } else if tool && event == CHOICE.as_bytes() {
            if let Some(m) = attrs.get("message") {
                let v = match blocks_text(m)? {
                    Some(t) => Value::Str(Cow::Owned(t)),
                    None => m.clone(),
                };
                setdefault(&mut out, "gen_ai.tool.call.result", v);
            }
        } else if let Some((_, role)) = MESSAGE_EVENTS.iter().find(|(n, _)| n.as_bytes() == event) {
            let mut ps = parts(attrs.get("content"))?;
            if let Some(Value::List(calls)) = attrs.get("tool_calls") {
                ps.extend(openai_calls(calls));
            }
            inputs.push(dict(vec![("role", Value::str(role)), ("parts", Value::List(ps))]));
        } else if event == CHOICE.as_bytes() {
            let mut message = vec![("role", Value::str("assistant")), ("parts", Value::List(parts(attrs.get("message"))?))];
            if let Some(r) = attrs.get("finish_reason").filter(|r| r.truthy()) {
                message.push(("finish_reason", Value::Str(r.py_str())));
                reasons.push(Value::Str(r.py_str()));
            }
            outputs.push(dict(message));
        }
    }
    if tool {
        tool_from_messages(&mut lists, &mut out)?;
    }
    if !inputs.is_empty() {
        extend(&mut lists, "gen_ai.input.messages", inputs);
    }
    if !outputs.is_empty() {
        extend(&mut lists, "gen_ai.output.messages", outputs);
    }
    if !reasons.is_empty() {
        setdefault(&mut out, FINISH_REASONS, Value::List(reasons));
    }
    for (key, items) in lists {
        setdefault(&mut out, key, Value::List(items));
    }
    Ok(out)
}

/// The content the span's events carry, set on its attributes where it has none of that
/// name: the span's own attributes win.
pub fn add_to<'a>(name: &[u8], attrs: &mut Attrs<'a>, events: &[Event<'a>]) -> Result<()> {
    let found = content_attributes(name, attrs.get("gen_ai.operation.name"), events)?;
    for (key, val) in found {
        if !attrs.has(key) {
            attrs.set(Attr { key: Cow::Borrowed(key.as_bytes()), val, origin: None });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event<'a>(name: &'a str, items: Vec<(&'static str, Value<'a>)>) -> Event<'a> {
        (Cow::Borrowed(name.as_bytes()), dict(items))
    }

    fn text(v: &Value<'_>) -> String {
        String::from_utf8(v.py_str().into_owned()).unwrap()
    }

    #[test]
    fn strands_message_events_become_genai_messages_with_their_finish_reason() {
        let events = vec![
            event("gen_ai.user.message", vec![("content", Value::str(r#"[{"text": "What is 2+2?"}]"#))]),
            event("gen_ai.choice", vec![("message", Value::str(r#"[{"text": "4"}, {"toolUse": {"toolUseId": "t1", "name": "calc", "input": {"x": 1}}}]"#)),
                                        ("finish_reason", Value::str("end_turn"))]),
        ];
        let out = content_attributes(b"chat", Some(&Value::str("chat")), &events).unwrap();
        let keys: Vec<&str> = out.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ["gen_ai.response.finish_reasons", "gen_ai.input.messages", "gen_ai.output.messages"]);
        assert_eq!(text(&out[0].1), "['end_turn']");
        assert_eq!(text(&out[1].1), "[{'role': 'user', 'parts': [{'type': 'text', 'content': 'What is 2+2?'}]}]");
        assert_eq!(text(&out[2].1), "[{'role': 'assistant', 'parts': [{'type': 'text', 'content': '4'}, \
            {'type': 'tool_call', 'id': 't1', 'name': 'calc', 'arguments': {'x': 1}}], 'finish_reason': 'end_turn'}]");
    }

    #[test]
    fn a_tool_spans_events_give_its_arguments_id_and_result_the_blocks_as_text() {
        let events = vec![
            event("gen_ai.tool.message", vec![("content", Value::str(r#"{"city": "Paris"}"#)), ("id", Value::str("t1"))]),
            event("gen_ai.choice", vec![("message", Value::str(r#"[{"text": "18C"}, {"json": {"t": "caf\u00e9"}}]"#))]),
        ];
        let out = content_attributes(b"execute_tool weather", None, &events).unwrap();
        assert_eq!(out.iter().map(|(k, v)| (*k, text(v))).collect::<Vec<_>>(), vec![
            ("gen_ai.tool.call.arguments", r#"{"city": "Paris"}"#.to_string()),
            ("gen_ai.tool.call.id", "t1".to_string()),
            ("gen_ai.tool.call.result", "18C\n{\"t\": \"caf\\u00e9\"}".to_string()),
        ]);
    }

    #[test]
    fn details_events_add_up_and_a_tool_span_takes_its_call_from_their_parts() {
        let events = vec![
            event("gen_ai.client.inference.operation.details", vec![("gen_ai.input.messages", Value::str(
                r#"[{"role": "assistant", "parts": [{"type": "tool_call", "arguments": {"q": "x"}}]}]"#))]),
            event("gen_ai.client.inference.operation.details", vec![("gen_ai.output.messages", Value::str(
                r#"[{"role": "tool", "parts": [{"type": "tool_call_response", "response": [{"text": "found"}]}]}]"#))]),
        ];
        let out = content_attributes(b"execute_tool search", Some(&Value::str("execute_tool")), &events).unwrap();
        assert_eq!(out.iter().map(|(k, v)| (*k, text(v))).collect::<Vec<_>>(), vec![
            ("gen_ai.tool.call.arguments", r#"{"q": "x"}"#.to_string()),
            ("gen_ai.tool.call.result", "found".to_string()),
        ]);
    }

    #[test]
    fn the_spans_own_attributes_win_over_its_events() {
        let mut a = Attrs::default();
        a.set_value("gen_ai.prompt", Value::str("own"));
        let events = vec![event("gen_ai.content.prompt", vec![("gen_ai.prompt", Value::str("from the event"))]),
                          event("gen_ai.content.completion", vec![("gen_ai.completion", Value::str("done"))])];
        add_to(b"x", &mut a, &events).unwrap();
        assert_eq!(text(a.value("gen_ai.prompt")), "own");
        assert_eq!(text(a.value("gen_ai.completion")), "done");
        assert!(is_content_event(b"gen_ai.choice") && !is_content_event(b"gen_ai.evaluation.result"));
    }
}
