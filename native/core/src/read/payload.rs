//! Message and tool payloads -> the strings checks compare (read/payload.py's names, one
//! implementation: the Python module exports the binding's wrappers of these).
//!
//! The rules match faultgate 0.4.1's, so a step reads to the same text in both tools: JSON
//! held in a string is decoded once and re-rendered, a list of `{"text": ...}` parts is
//! joined, a `{"type": "text"}` part is its text. Framework serialisations are unwrapped:
//! LangChain writes a message either as `{"type": "tool", "data": {"content": ...}}`
//! (`messages_to_dict`) or as `{"lc": 1, "type": "constructor", "id": [...,
//! "ToolMessage"], "kwargs": {"content": ...}}` (its `dumpd`); callback handlers wrap a
//! tool's input as `{"input_str": "{'city': 'Paris'}", "tags": ..., "metadata": ...}`;
//! smolagents and the traceloop decorators as `{"args": [], "kwargs": {...}}`.
//!
//! Every function reads a `Value` and returns text borrowed from it where Python returned
//! the same object (tests/read/payload_oracle.py is the Python they replaced). An error is
//! what the Python raised in the same place (a TypeError of json.dumps).

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::model::json::{self, dumps, dumps_plain, Default, PLAIN};
use crate::model::literal::literal_eval;
use crate::model::value::{dict, Text, Value};
use crate::pyfmt::strs::{bracketed, char_len, contains, strip};

// A Python-literal payload longer than this (code points) is left as text: literal_eval's
// cost grows with it, and no call's arguments are that long.
const REPR_LIMIT: usize = 100_000;

const LC_ROLES: [(&str, &str); 9] = [
    ("human", "user"), ("ai", "assistant"), ("tool", "tool"), ("system", "system"), ("HumanMessage", "user"),
    ("AIMessage", "assistant"), ("ToolMessage", "tool"), ("SystemMessage", "system"), ("AIMessageChunk", "assistant"),
];

// plain_text's wrappers, in the order a key is taken
const TEXT_KEYS: [&str; 9] = ["input", "output", "query", "question", "prompt", "answer", "content", "text", "result"];

pub fn lit(s: &'static str) -> Value<'static> {
    Value::Str(Cow::Borrowed(s.as_bytes()))
}

/// `s.strip()` of text, borrowed as long as the text is.
pub fn strip_text<'r>(s: &Text<'r>) -> Text<'r> {
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(strip(b)),
        Cow::Owned(v) => Cow::Owned(strip(v).to_vec()),
    }
}

/// `json.loads(s)` as a value borrowing `s`'s bytes (copied when `s` owns them); None
/// where json.loads raises.
pub fn decode<'r>(s: &Text<'r>) -> Option<Value<'r>> {
    match s {
        Cow::Borrowed(b) => json::loads(b),
        Cow::Owned(v) => json::loads(v).map(Value::into_owned),
    }
}

fn join<'r>(texts: Vec<Text<'r>>, sep: &[u8]) -> Text<'r> {
    if texts.len() == 1 {
        return texts.into_iter().next().expect("one");
    }
    Cow::Owned(texts.join(sep))
}

/// `str(d.get(key, default))`.
pub fn str_get<'r>(d: &Value<'r>, key: &str, default: &'static str) -> Text<'r> {
    match d.get(key) {
        Some(v) => v.py_str(),
        None => Cow::Borrowed(default.as_bytes()),
    }
}

/// A message's `parts`, when they are a list (anything else has none to read).
pub fn parts<'x, 'r>(m: &'x Value<'r>) -> &'x [Value<'r>] {
    match m.get("parts") {
        Some(Value::List(items)) => items,
        _ => &[],
    }
}

/// `raw` decoded when it is a string holding JSON, else `raw` itself.
pub fn load_json<'r>(raw: &Value<'r>) -> Value<'r> {
    if let Value::Str(s) = raw {
        if let Some(v) = decode(s) {
            return v;
        }
    }
    raw.clone()
}

/// A tool argument or result as a step's text.
pub fn render<'r>(val: &Value<'r>) -> Result<Text<'r>> {
    Ok(match val {
        Value::Null => Cow::Borrowed(b""),
        Value::Str(s) => {
            let t = strip_text(s);
            if bracketed(&t) {
                if let Some(v) = decode(&t) {
                    return render(&v);
                }
            }
            s.clone()
        }
        Value::List(items) => {
            if !items.is_empty() && items.iter().all(|x| x.is_dict() && x.has("text")) {
                join(items.iter().map(|x| x.get("text").expect("has").py_str()).collect(), b" ")
            } else {
                Cow::Owned(dumps_plain(val)?)
            }
        }
        Value::Dict(_) => match val.get("text") {
            Some(t) if val.get("type").is_some_and(|x| x.eq_str("text")) => t.py_str(),
            _ => Cow::Owned(dumps_plain(val)?),
        },
        _ => val.py_str(),
    })
}

/// `(messages(raw), role_text(raw, role))` with one decode of `raw`: the message objects
/// of a `gen_ai.*.messages` value (a JSON string or a list) and the text of those of
/// `role`. A string that is not JSON is taken as the text itself, since some
/// instrumentations put a bare string where messages belong.
pub fn messages_and_text<'r>(raw: &Value<'r>, role: &str) -> (Vec<Value<'r>>, Text<'r>) {
    let items = match raw {
        Value::Null => return (Vec::new(), Cow::Borrowed(b"")),
        Value::Str(s) => match decode(s) {
            None => return (Vec::new(), s.clone()),
            Some(Value::List(items)) => items,
            Some(_) => return (Vec::new(), Cow::Borrowed(b"")),
        },
        Value::List(items) => items.clone(),
        _ => return (Vec::new(), Cow::Borrowed(b"")),
    };
    let text = role_text_of(&items, role);
    (items.into_iter().filter(Value::is_dict).collect(), text)
}

/// The text that messages of `role` carry (a value that is not JSON is the text).
pub fn role_text<'r>(raw: &Value<'r>, role: &str) -> Text<'r> {
    match raw {
        Value::Str(s) => match decode(s) {
            None => s.clone(),
            Some(Value::List(items)) => role_text_of(&items, role),
            Some(_) => Cow::Borrowed(b""),
        },
        Value::List(items) => role_text_of(items, role),
        _ => Cow::Borrowed(b""),
    }
}

/// The text parts (and bare `content`) of the messages of `role`, a line each.
pub fn role_text_of<'r>(messages: &[Value<'r>], role: &str) -> Text<'r> {
    let mut out = Vec::new();
    for m in messages {
        if !m.is_dict() || !m.get("role").is_some_and(|r| r.eq_str(role)) {
            continue;
        }
        for p in parts(m) {
            if p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("text")) {
                out.push(match p.get("content") {
                    Some(c) => c.py_str(),
                    None => str_get(p, "text", ""),
                });
            }
        }
        if let Some(c) = m.get("content") {
            if !m.get("parts").is_some_and(Value::truthy) {
                out.push(c.py_str());
            }
        }
    }
    if out.is_empty() {
        Cow::Borrowed(b"")
    } else {
        join(out, b"\n")
    }
}

/// Plain text from a prompt or answer payload of a vendor export: a string, a
/// `{input|output|...: str}` wrapper, or chat messages (the last of `role`).
pub fn plain_text<'r>(v: &Value<'r>, role: &str) -> Result<Text<'r>> {
    match v {
        Value::Null => return Ok(Cow::Borrowed(b"")),
        Value::Str(s) => return Ok(s.clone()),
        Value::Dict(items) => {
            for k in TEXT_KEYS {
                if let Some(Value::Str(s)) = v.get(k) {
                    return Ok(s.clone());
                }
            }
            if let Some(m @ Value::List(_)) = v.get("messages") {
                return plain_text(m, role);
            }
            if items.len() == 1 {
                return plain_text(&items[0].1, role);
            }
        }
        Value::List(items) if !items.is_empty() && items.iter().all(Value::is_dict) => {
            // LangChain's serialised messages (a graph state's `messages`) read as chat messages
            let roles: [&str; 2] = if role == "user" { ["user", "human"] } else { ["assistant", "ai"] };
            let (mut mine, mut any) = (None, None);
            for m in items {
                let converted = lc_message(m)?;
                let m = converted.as_ref().unwrap_or(m);
                if let Some(Value::Str(c)) = m.get("content") {
                    any = Some(c.clone());
                    if m.get("role").is_some_and(|r| roles.iter().any(|x| r.eq_str(x))) {
                        mine = Some(c.clone());
                    }
                }
            }
            return Ok(mine.or(any).unwrap_or(Cow::Borrowed(b"")));
        }
        _ => {}
    }
    Ok(Cow::Owned(dumps_plain(v)?))
}

/// An agent span's prompt or answer from its `input.value` / `output.value`: JSON held in
/// the string is read as a payload (a graph state's messages, a wrapper), and a bare
/// `None` / `null` (an agent that returned nothing) is no text.
pub fn agent_text<'r>(raw: &Value<'r>, role: &str) -> Result<Text<'r>> {
    if let Value::Str(s) = raw {
        let t = strip_text(s);
        if &*t == b"None" || &*t == b"null" {
            return Ok(Cow::Borrowed(b""));
        }
        if bracketed(&t) {
            if let Some(mut v) = decode(&t) {
                if v.is_dict() {
                    if let (Some(Value::Str(r)), true) = (v.get("raw"), v.has("tasks_output")) {
                        return Ok(r.clone()); // CrewAI's CrewOutput: the crew's answer is its raw text
                    }
                    if let Some(Value::Str(task)) = v.get("task") {
                        return Ok(task.clone()); // smolagents' run(task=...)
                    }
                    pairs_as_messages(&mut v);
                }
                if !v.is_str() {
                    return plain_text(&v, role);
                }
            }
        }
    }
    plain_text(raw, role)
}

/// LangGraph's input: `messages` as ("user", "text") pairs beside dicts, made dicts.
fn pairs_as_messages(v: &mut Value<'_>) {
    let Value::Dict(items) = v else { return };
    for (k, m) in items.iter_mut() {
        if !k.eq_str("messages") {
            continue;
        }
        if let Value::List(msgs) = m {
            for x in msgs.iter_mut() {
                if let Value::List(pair) = x {
                    if pair.len() == 2 && pair.iter().all(Value::is_str) {
                        let content = pair.pop().expect("two");
                        let role = pair.pop().expect("two");
                        *x = dict(vec![("role", role), ("content", content)]);
                    }
                }
            }
        }
    }
}

/// Tool arguments or result from a vendor export: strings as they are, structures as JSON,
/// a lone `{"input": x}` / `{"output": x}` wrapper unwrapped.
pub fn tool_payload<'r>(v: &Value<'r>) -> Result<Text<'r>> {
    match v {
        Value::Null => Ok(Cow::Borrowed(b"")),
        Value::Str(s) => Ok(s.clone()),
        Value::Dict(items) if items.len() == 1 && (items[0].0.eq_str("input") || items[0].0.eq_str("output")) => {
            tool_payload(&items[0].1)
        }
        _ => Ok(Cow::Owned(dumps_plain(v)?)),
    }
}

fn lc_role(kind: &[u8]) -> Option<&'static str> {
    LC_ROLES.iter().find(|(k, _)| k.as_bytes() == kind).map(|(_, r)| *r)
}

/// `{"role", "content", "status"}` of a serialised LangChain message, else None.
pub fn lc_message<'r>(v: &Value<'r>) -> Result<Option<Value<'r>>> {
    if !v.is_dict() {
        return Ok(None);
    }
    let (body, role) = match v.get("kwargs") {
        Some(body @ Value::Dict(_))
            if v.get("lc").is_some_and(Value::eq_one) && v.get("type").is_some_and(|t| t.eq_str("constructor")) =>
        {
            let kind = match v.get("id") {
                Some(Value::List(ident)) if !ident.is_empty() => ident[ident.len() - 1].py_str(),
                _ => Cow::Borrowed(&b""[..]),
            };
            let role = match lc_role(&kind) {
                Some(r) => Some(r),
                None => lc_role(&str_get(body, "type", "")),
            };
            (body, role)
        }
        _ => match v.get("data") {
            Some(body @ Value::Dict(_)) => match lc_role(&str_get(v, "type", "")) {
                Some(r) => (body, Some(r)),
                None => return Ok(None),
            },
            _ => return Ok(None),
        },
    };
    let (Some(role), Some(content)) = (role, body.get("content")) else { return Ok(None) };
    let status = match body.get("status") {
        Some(s) if s.truthy() => s.py_str(),
        _ => Cow::Borrowed(&b""[..]),
    };
    let content = lc_content(content)?;
    Ok(Some(dict(vec![("role", lit(role)), ("content", Value::Str(content)), ("status", Value::Str(status))])))
}

fn lc_content<'r>(c: &Value<'r>) -> Result<Text<'r>> {
    match c {
        Value::Str(s) => Ok(s.clone()),
        Value::List(blocks) => {
            // content blocks
            let texts: Vec<Text<'r>> = blocks.iter().map(|b| if b.is_dict() { str_get(b, "text", "") } else { b.py_str() }).collect();
            Ok(Cow::Owned(strip(&texts.join(&b" "[..])).to_vec()))
        }
        _ => render(c),
    }
}

/// A tool result that is a serialised `ToolMessage` (alone, under `output`, or as the one
/// message of a node's `{"messages": [...]}`): its content, marked as an error when the
/// message says so. None when `v` is not one.
pub fn lc_tool_result<'r>(v: &Value<'r>) -> Result<Option<Text<'r>>> {
    let mut v = v;
    if let Value::Dict(items) = v {
        if v.has("output") && items.iter().all(|(k, _)| k.eq_str("output") || k.eq_str("kwargs")) {
            v = v.get("output").expect("has");
        }
    }
    if let Some(Value::List(msgs)) = v.get("messages") {
        if msgs.len() == 1 {
            v = &msgs[0];
        }
    }
    let Some(m) = lc_message(v)? else { return Ok(None) };
    if !m.get("role").is_some_and(|r| r.eq_str("tool")) {
        return Ok(None);
    }
    let content: Text<'r> = match m.get("content") {
        Some(Value::Str(c)) => c.clone(),
        _ => Cow::Borrowed(&b""[..]),
    };
    if m.get("status").is_some_and(|s| s.eq_str("error")) && !content.starts_with(b"Error") {
        let mut out = b"Error: ".to_vec();
        out.extend_from_slice(&content);
        return Ok(Some(Cow::Owned(out)));
    }
    Ok(Some(content))
}

/// A Python repr of a dict or list (what `str()` of a payload writes) as a value, or None
/// when `text` is not one. Only literals: `ast.literal_eval` runs no code.
pub fn python_literal(text: &[u8]) -> Option<Value<'static>> {
    let s = strip(text);
    if !bracketed(s) || char_len(s) > REPR_LIMIT {
        return None;
    }
    literal_eval(s)
}

/// A tool's own arguments out of the payload a framework's callback recorded, or None when
/// `v` is not such a payload: `{"args": [], "kwargs": {...}}` (smolagents, the traceloop
/// decorators) and `{"input_str": "{'k': 'v'}", "tags", "metadata"}` (LangChain's
/// `on_tool_start`).
pub fn call_arguments<'r>(v: &Value<'r>) -> Result<Option<Text<'r>>> {
    let Value::Dict(items) = v else { return Ok(None) };
    if let (Some(kwargs @ Value::Dict(_)), Some(args)) = (v.get("kwargs"), v.get("args")) {
        if !args.truthy() {
            return Ok(Some(Cow::Owned(dumps(kwargs, Default::Strict, PLAIN)?)));
        }
    }
    if let Some(Value::Str(raw)) = v.get("input_str") {
        let others = ["input_str", "tags", "metadata", "inputs", "kwargs"];
        if items.iter().all(|(k, _)| others.iter().any(|o| k.eq_str(o))) {
            if let Some(lit @ Value::Dict(_)) = python_literal(raw) {
                return Ok(Some(Cow::Owned(dumps(&lit, Default::Str, PLAIN)?)));
            }
            return Ok(Some(raw.clone()));
        }
    }
    Ok(None)
}

/// A JSON schema of a tool's parameters (`{"type": "object", "properties": ...}`, maybe
/// under `parameters`), not the arguments of a call.
pub fn is_parameter_schema(v: &Value<'_>) -> bool {
    let v = match v.get("parameters") {
        Some(p @ Value::Dict(_)) => p,
        _ => v,
    };
    v.is_dict() && v.get("type").is_some_and(|t| t.eq_str("object")) && v.get("properties").is_some_and(Value::is_dict)
}

/// The parts of an assistant message written as a Python repr in a text part
/// (`"{'content': None, 'role': 'assistant', 'tool_calls': [...]}"`, as
/// opentelemetry-instrumentation-openai-agents-v2 0.1 writes it): its text, if any, and its
/// tool calls. None when `text` is not such a repr.
fn repr_message(text: &[u8]) -> Result<Option<Vec<Value<'static>>>> {
    if !text.starts_with(b"{'") || !contains(text, b"'role': 'assistant'") {
        return Ok(None);
    }
    let Some(v) = python_literal(text) else { return Ok(None) };
    if !v.is_dict() || !v.get("role").is_some_and(|r| r.eq_str("assistant")) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    if let Some(Value::Str(c)) = v.get("content") {
        if !c.is_empty() {
            parts.push(dict(vec![("type", lit("text")), ("content", Value::Str(c.clone()))]));
        }
    }
    // `for c in v.get("tool_calls") or ()`: whatever it is, iterated as Python would
    let calls: Vec<Value<'static>> = match v.get("tool_calls") {
        None => Vec::new(),
        Some(t) if !t.truthy() => Vec::new(),
        Some(Value::List(items) | Value::Tuple(items)) => items.clone(),
        // characters, keys, ints: never dicts
        Some(Value::Str(_) | Value::Dict(_) | Value::Bytes(_)) => Vec::new(),
        Some(Value::Other(o)) if o.items.is_some() => o.items.clone().expect("items"),
        Some(other) => return Err(Error::Type(format!("'{}' object is not iterable", other.type_name()))),
    };
    for c in &calls {
        if let Some(f @ Value::Dict(_)) = c.get("function") {
            parts.push(dict(vec![
                ("type", lit("tool_call")),
                ("id", Value::Str(str_get(c, "id", ""))),
                ("name", Value::Str(str_get(f, "name", "unknown"))),
                ("arguments", f.get("arguments").cloned().unwrap_or(lit(""))),
            ]));
        }
    }
    Ok(Some(parts.into_iter().map(Value::into_owned).collect()))
}

/// `messages` with each text part that is an assistant message's repr replaced by what
/// that message holds.
pub fn unrepr_messages<'r>(messages: Vec<Value<'r>>) -> Result<Vec<Value<'r>>> {
    let mut out = Vec::with_capacity(messages.len());
    for mut m in messages {
        if let Value::Dict(items) = &mut m {
            if let Some((_, Value::List(ps))) = items.iter_mut().find(|(k, _)| k.eq_str("parts")) {
                let mut new = Vec::with_capacity(ps.len());
                for p in ps.drain(..) {
                    let inner = match p.get("content") {
                        Some(Value::Str(text)) if p.get("type").is_some_and(|t| t.eq_str("text")) => repr_message(text)?,
                        _ => None,
                    };
                    match inner {
                        Some(parts) => new.extend(parts),
                        None => new.push(p),
                    }
                }
                *ps = new;
            }
        }
        out.push(m);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Value<'_> {
        Value::str(t)
    }

    fn text(t: Result<Text<'_>>) -> String {
        String::from_utf8(t.unwrap().into_owned()).unwrap()
    }

    #[test]
    fn render_decodes_json_in_a_string_and_joins_text_parts() {
        assert_eq!(text(render(&s(" {\"b\": [1, 2.0]} "))), r#"{"b": [1, 2.0]}"#);
        assert_eq!(text(render(&s(r#"[{"text": "a"}, {"text": "b"}]"#))), "a b");
        assert_eq!(text(render(&s(r#"{"type": "text", "text": "hi"}"#))), "hi");
        assert_eq!(text(render(&s("plain"))), "plain");
        assert_eq!(text(render(&Value::Tuple(vec![Value::Int(1)]))), "(1,)");
    }

    #[test]
    fn a_langchain_tool_message_reads_to_its_content_marked_when_it_failed() {
        let v = json::loads(br#"{"lc": 1, "type": "constructor", "id": ["x", "ToolMessage"],
                                 "kwargs": {"content": "boom", "status": "error"}}"#).unwrap();
        assert_eq!(lc_tool_result(&v).unwrap().as_deref(), Some(&b"Error: boom"[..]));
        let v = json::loads(br#"{"type": "tool", "data": {"content": "ok"}}"#).unwrap();
        assert_eq!(lc_tool_result(&v).unwrap().as_deref(), Some(&b"ok"[..]));
    }

    #[test]
    fn a_callback_payload_gives_the_tools_own_arguments() {
        let v = json::loads(br#"{"input_str": "{'city': 'Paris', 'n': (1, 2)}", "tags": []}"#).unwrap();
        assert_eq!(text(call_arguments(&v).map(Option::unwrap)), r#"{"city": "Paris", "n": [1, 2]}"#);
        let v = json::loads(br#"{"args": [], "kwargs": {"q": "x"}}"#).unwrap();
        assert_eq!(text(call_arguments(&v).map(Option::unwrap)), r#"{"q": "x"}"#);
    }

    #[test]
    fn an_assistant_message_written_as_a_repr_is_read_for_its_calls() {
        let m = json::loads(br#"[{"role": "assistant", "parts": [{"type": "text", "content":
            "{'content': 'hi', 'role': 'assistant', 'tool_calls': [{'id': 'c1', 'function': {'name': 'f', 'arguments': '{}'}}]}"}]}]"#)
            .unwrap();
        let Value::List(msgs) = m else { panic!() };
        let out = unrepr_messages(msgs).unwrap();
        assert_eq!(String::from_utf8(out[0].repr()).unwrap(),
                   "{'role': 'assistant', 'parts': [{'type': 'text', 'content': 'hi'}, {'type': 'tool_call', 'id': 'c1', \
                    'name': 'f', 'arguments': '{}'}]}");
        let bad = s("{'role': 'assistant', 'tool_calls': 3}");
        let msgs = vec![dict(vec![("parts", Value::List(vec![dict(vec![("type", lit("text")), ("content", bad)])]))])];
        assert_eq!(unrepr_messages(msgs).unwrap_err(), Error::Type("'int' object is not iterable".into()));
    }

    #[test]
    fn plain_text_takes_the_last_message_of_the_role() {
        let v = json::loads(br#"[{"role": "user", "content": "q"}, {"type": "ai", "data": {"content": "a"}}]"#).unwrap();
        assert_eq!(text(plain_text(&v, "assistant")), "a");
        assert_eq!(text(plain_text(&v, "user")), "q");
        assert_eq!(text(agent_text(&s("null"), "user")), "");
        assert_eq!(text(agent_text(&s(r#"{"raw": "done", "tasks_output": []}"#), "assistant")), "done");
    }
}
