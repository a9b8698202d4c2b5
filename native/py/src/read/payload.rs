//! Message and tool payloads -> the strings checks compare (read/payload.py's names, one
//! implementation: the Python module exports these functions).
//!
//! The rules match faultgate 0.4.1's, so a step reads to the same text in both tools: JSON
//! held in a string is decoded once and re-rendered, a list of ``{"text": ...}`` parts is
//! joined, a ``{"type": "text"}`` part is its text. Framework serialisations are unwrapped:
//! LangChain writes a message either as ``{"type": "tool", "data": {"content": ...}}``
//! (``messages_to_dict``) or as ``{"lc": 1, "type": "constructor", "id": [...,
//! "ToolMessage"], "kwargs": {"content": ...}}`` (its ``dumpd``); callback handlers wrap a
//! tool's input as ``{"input_str": "{'city': 'Paris'}", "tags": ..., "metadata": ...}``;
//! smolagents and the traceloop decorators as ``{"args": [], "kwargs": {...}}``.
//!
//! Every function reads a `V` and returns text borrowed from it where Python returned the
//! same object (tests/read/payload_oracle.py is the Python they replaced).

use pyo3::exceptions::{PyMemoryError, PyRecursionError, PySyntaxError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyString;
use std::borrow::Cow;

use crate::read::conventions::guarded;
use crate::read::dumps::{dumps, Default};
use crate::read::fallback::python;
use crate::read::loads::loads;
use crate::read::text::{bracketed, char_len, contains, strip};
use crate::read::value::{borrowed_text, from_py, py_text, text_of_py, Text, V};

// A Python-literal payload longer than this (code points) is left as text: literal_eval's
// cost grows with it, and no call's arguments are that long.
const REPR_LIMIT: usize = 100_000;

const LC_ROLES: [(&str, &str); 9] = [
    ("human", "user"), ("ai", "assistant"), ("tool", "tool"), ("system", "system"), ("HumanMessage", "user"),
    ("AIMessage", "assistant"), ("ToolMessage", "tool"), ("SystemMessage", "system"), ("AIMessageChunk", "assistant"),
];

// plain_text's wrappers, in the order a key is taken
const TEXT_KEYS: [&str; 9] = ["input", "output", "query", "question", "prompt", "answer", "content", "text", "result"];

pub fn lit(s: &'static str) -> V<'static, 'static> {
    V::Str(Cow::Borrowed(s.as_bytes()))
}

/// A dict of string keys, as the conventions build messages and parts.
pub fn dict<'r, 'py>(items: Vec<(&'static str, V<'r, 'py>)>) -> V<'r, 'py> {
    V::Dict(items.into_iter().map(|(k, v)| (V::Str(Cow::Borrowed(k.as_bytes())), v)).collect())
}

/// ``s.strip()`` of text, borrowed as long as the text is.
pub fn strip_text<'r>(s: &Text<'r>) -> Text<'r> {
    match s {
        Cow::Borrowed(b) => Cow::Borrowed(strip(b)),
        Cow::Owned(v) => Cow::Owned(strip(v).to_vec()),
    }
}

/// ``json.loads(s)`` as a value borrowing ``s``'s bytes (copied when ``s`` owns them); None
/// where json.loads raises ValueError.
pub fn decode<'r, 'py>(py: Python<'py>, s: &Text<'r>) -> PyResult<Option<V<'r, 'py>>> {
    match s {
        Cow::Borrowed(b) => loads(py, b),
        Cow::Owned(v) => Ok(loads(py, v)?.map(into_owned)),
    }
}

pub fn into_owned<'py>(v: V<'_, 'py>) -> V<'static, 'py> {
    match v {
        V::Null => V::Null,
        V::Bool(b) => V::Bool(b),
        V::Int(x) => V::Int(x),
        V::Float(x) => V::Float(x),
        V::Str(s) => V::Str(Cow::Owned(s.into_owned())),
        V::Bytes(s) => V::Bytes(Cow::Owned(s.into_owned())),
        V::List(items) => V::List(items.into_iter().map(into_owned).collect()),
        V::Dict(items) => V::Dict(items.into_iter().map(|(k, v)| (into_owned(k), into_owned(v))).collect()),
        V::Py(o) => V::Py(o),
    }
}

fn join<'r>(texts: Vec<Text<'r>>, sep: &[u8]) -> Text<'r> {
    if texts.len() == 1 {
        return texts.into_iter().next().expect("one");
    }
    Cow::Owned(texts.join(sep))
}

/// ``str(d.get(key, default))``.
pub fn str_get<'r, 'py>(py: Python<'py>, d: &V<'r, 'py>, key: &str, default: &'static str) -> PyResult<Text<'r>> {
    match d.get(key) {
        Some(v) => v.py_str(py),
        None => Ok(Cow::Borrowed(default.as_bytes())),
    }
}

/// A message's ``parts``, when they are a list (anything else has none to read).
pub fn parts<'x, 'r, 'py>(m: &'x V<'r, 'py>) -> &'x [V<'r, 'py>] {
    match m.get("parts") {
        Some(V::List(items)) => items,
        _ => &[],
    }
}

/// ``raw`` decoded when it is a string holding JSON, else ``raw`` itself.
pub fn load_json<'r, 'py>(py: Python<'py>, raw: &V<'r, 'py>) -> PyResult<V<'r, 'py>> {
    if let V::Str(s) = raw {
        if let Some(v) = decode(py, s)? {
            return Ok(v);
        }
    }
    Ok(raw.clone())
}

/// A tool argument or result as a step's text.
pub fn render<'r, 'py>(py: Python<'py>, val: &V<'r, 'py>) -> PyResult<Text<'r>> {
    Ok(match val {
        V::Null => Cow::Borrowed(b""),
        V::Str(s) => {
            let t = strip_text(s);
            if bracketed(&t) {
                if let Some(v) = decode(py, &t)? {
                    return render(py, &v);
                }
            }
            s.clone()
        }
        V::List(items) => {
            if !items.is_empty() && items.iter().all(|x| x.is_dict() && x.has("text")) {
                let texts = items.iter().map(|x| x.get("text").expect("has").py_str(py)).collect::<PyResult<Vec<_>>>()?;
                join(texts, b" ")
            } else {
                Cow::Owned(dumps(py, val, Default::Plain)?)
            }
        }
        V::Dict(_) => match val.get("text") {
            Some(t) if val.get("type").is_some_and(|x| x.eq_str("text")) => t.py_str(py)?,
            _ => Cow::Owned(dumps(py, val, Default::Plain)?),
        },
        _ => val.py_str(py)?,
    })
}

/// ``(messages(raw), role_text(raw, role))`` with one decode of ``raw``: the message
/// objects of a ``gen_ai.*.messages`` value (a JSON string or a list) and the text of those
/// of ``role``. A string that is not JSON is taken as the text itself, since some
/// instrumentations put a bare string where messages belong.
pub fn messages_and_text<'r, 'py>(py: Python<'py>, raw: &V<'r, 'py>, role: &str)
    -> PyResult<(Vec<V<'r, 'py>>, Text<'r>)> {
    let items = match raw {
        V::Null => return Ok((Vec::new(), Cow::Borrowed(b""))),
        V::Str(s) => match decode(py, s)? {
            None => return Ok((Vec::new(), s.clone())),
            Some(V::List(items)) => items,
            Some(_) => return Ok((Vec::new(), Cow::Borrowed(b""))),
        },
        V::List(items) => items.clone(),
        _ => return Ok((Vec::new(), Cow::Borrowed(b""))),
    };
    let text = role_text_of(py, &items, role)?;
    Ok((items.into_iter().filter(V::is_dict).collect(), text))
}

/// The text that messages of ``role`` carry (a value that is not JSON is the text).
pub fn role_text<'r, 'py>(py: Python<'py>, raw: &V<'r, 'py>, role: &str) -> PyResult<Text<'r>> {
    match raw {
        V::Str(s) => match decode(py, s)? {
            None => Ok(s.clone()),
            Some(V::List(items)) => role_text_of(py, &items, role),
            Some(_) => Ok(Cow::Borrowed(b"")),
        },
        V::List(items) => role_text_of(py, items, role),
        _ => Ok(Cow::Borrowed(b"")),
    }
}

/// The text parts (and bare ``content``) of the messages of ``role``, a line each.
pub fn role_text_of<'r, 'py>(py: Python<'py>, messages: &[V<'r, 'py>], role: &str) -> PyResult<Text<'r>> {
    let mut out = Vec::new();
    for m in messages {
        if !m.is_dict() || !m.get("role").is_some_and(|r| r.eq_str(role)) {
            continue;
        }
        for p in parts(m) {
            if p.is_dict() && p.get("type").is_some_and(|t| t.eq_str("text")) {
                out.push(match p.get("content") {
                    Some(c) => c.py_str(py)?,
                    None => str_get(py, p, "text", "")?,
                });
            }
        }
        if let Some(c) = m.get("content") {
            if !m.get("parts").map_or(Ok(false), V::truthy)? {
                out.push(c.py_str(py)?);
            }
        }
    }
    Ok(if out.is_empty() { Cow::Borrowed(b"") } else { join(out, b"\n") })
}

/// Plain text from a prompt or answer payload of a vendor export: a string, a
/// ``{input|output|...: str}`` wrapper, or chat messages (the last of ``role``).
pub fn plain_text<'r, 'py>(py: Python<'py>, v: &V<'r, 'py>, role: &str) -> PyResult<Text<'r>> {
    match v {
        V::Null => return Ok(Cow::Borrowed(b"")),
        V::Str(s) => return Ok(s.clone()),
        V::Dict(items) => {
            for k in TEXT_KEYS {
                if let Some(V::Str(s)) = v.get(k) {
                    return Ok(s.clone());
                }
            }
            if let Some(m @ V::List(_)) = v.get("messages") {
                return plain_text(py, m, role);
            }
            if items.len() == 1 {
                return plain_text(py, &items[0].1, role);
            }
        }
        V::List(items) if !items.is_empty() && items.iter().all(V::is_dict) => {
            // LangChain's serialised messages (a graph state's ``messages``) read as chat messages
            let roles: [&str; 2] = if role == "user" { ["user", "human"] } else { ["assistant", "ai"] };
            let (mut mine, mut any) = (None, None);
            for m in items {
                let converted = lc_message(py, m)?;
                let m = converted.as_ref().unwrap_or(m);
                if let Some(V::Str(c)) = m.get("content") {
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
    Ok(Cow::Owned(dumps(py, v, Default::Plain)?))
}

/// An agent span's prompt or answer from its ``input.value`` / ``output.value``: JSON held
/// in the string is read as a payload (a graph state's messages, a wrapper), and a bare
/// ``None`` / ``null`` (an agent that returned nothing) is no text.
pub fn agent_text<'r, 'py>(py: Python<'py>, raw: &V<'r, 'py>, role: &str) -> PyResult<Text<'r>> {
    if let V::Str(s) = raw {
        let t = strip_text(s);
        if &*t == b"None" || &*t == b"null" {
            return Ok(Cow::Borrowed(b""));
        }
        if bracketed(&t) {
            if let Some(mut v) = decode(py, &t)? {
                if v.is_dict() {
                    if let (Some(V::Str(r)), true) = (v.get("raw"), v.has("tasks_output")) {
                        return Ok(r.clone()); // CrewAI's CrewOutput: the crew's answer is its raw text
                    }
                    if let Some(V::Str(task)) = v.get("task") {
                        return Ok(task.clone()); // smolagents' run(task=...)
                    }
                    pairs_as_messages(&mut v);
                }
                if !v.is_str() {
                    return plain_text(py, &v, role);
                }
            }
        }
    }
    plain_text(py, raw, role)
}

/// LangGraph's input: ``messages`` as ("user", "text") pairs beside dicts, made dicts.
fn pairs_as_messages(v: &mut V<'_, '_>) {
    let V::Dict(items) = v else { return };
    for (k, m) in items.iter_mut() {
        if !k.eq_str("messages") {
            continue;
        }
        if let V::List(msgs) = m {
            for x in msgs.iter_mut() {
                if let V::List(pair) = x {
                    if pair.len() == 2 && pair.iter().all(V::is_str) {
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
/// a lone ``{"input": x}`` / ``{"output": x}`` wrapper unwrapped.
pub fn tool_payload<'r, 'py>(py: Python<'py>, v: &V<'r, 'py>) -> PyResult<Text<'r>> {
    match v {
        V::Null => Ok(Cow::Borrowed(b"")),
        V::Str(s) => Ok(s.clone()),
        V::Dict(items) if items.len() == 1 && (items[0].0.eq_str("input") || items[0].0.eq_str("output")) => {
            tool_payload(py, &items[0].1)
        }
        _ => Ok(Cow::Owned(dumps(py, v, Default::Plain)?)),
    }
}

fn lc_role(kind: &[u8]) -> Option<&'static str> {
    LC_ROLES.iter().find(|(k, _)| k.as_bytes() == kind).map(|(_, r)| *r)
}

/// ``{"role", "content", "status"}`` of a serialised LangChain message, else None.
pub fn lc_message<'r, 'py>(py: Python<'py>, v: &V<'r, 'py>) -> PyResult<Option<V<'r, 'py>>> {
    if !v.is_dict() {
        return Ok(None);
    }
    let (body, role) = match v.get("kwargs") {
        Some(body @ V::Dict(_))
            if v.get("lc").map_or(Ok(false), V::eq_one)? && v.get("type").is_some_and(|t| t.eq_str("constructor")) =>
        {
            let kind = match v.get("id") {
                Some(V::List(ident)) if !ident.is_empty() => ident[ident.len() - 1].py_str(py)?,
                _ => Cow::Borrowed(&b""[..]),
            };
            let role = match lc_role(&kind) {
                Some(r) => Some(r),
                None => lc_role(&str_get(py, body, "type", "")?),
            };
            (body, role)
        }
        _ => match v.get("data") {
            Some(body @ V::Dict(_)) => match lc_role(&str_get(py, v, "type", "")?) {
                Some(r) => (body, Some(r)),
                None => return Ok(None),
            },
            _ => return Ok(None),
        },
    };
    let (Some(role), Some(content)) = (role, body.get("content")) else { return Ok(None) };
    let status = match body.get("status") {
        Some(s) if s.truthy()? => s.py_str(py)?,
        _ => Cow::Borrowed(&b""[..]),
    };
    Ok(Some(dict(vec![("role", lit(role)), ("content", V::Str(lc_content(py, content)?)), ("status", V::Str(status))])))
}

fn lc_content<'r, 'py>(py: Python<'py>, c: &V<'r, 'py>) -> PyResult<Text<'r>> {
    match c {
        V::Str(s) => Ok(s.clone()),
        V::List(blocks) => {
            // content blocks
            let mut texts = Vec::with_capacity(blocks.len());
            for b in blocks {
                texts.push(if b.is_dict() { str_get(py, b, "text", "")? } else { b.py_str(py)? });
            }
            Ok(Cow::Owned(strip(&texts.join(&b" "[..])).to_vec()))
        }
        _ => render(py, c),
    }
}

/// A tool result that is a serialised ``ToolMessage`` (alone, under ``output``, or as the
/// one message of a node's ``{"messages": [...]}``): its content, marked as an error when
/// the message says so. None when ``v`` is not one.
pub fn lc_tool_result<'r, 'py>(py: Python<'py>, v: &V<'r, 'py>) -> PyResult<Option<Text<'r>>> {
    let mut v = v;
    if let V::Dict(items) = v {
        if v.has("output") && items.iter().all(|(k, _)| k.eq_str("output") || k.eq_str("kwargs")) {
            v = v.get("output").expect("has");
        }
    }
    if let Some(V::List(msgs)) = v.get("messages") {
        if msgs.len() == 1 {
            v = &msgs[0];
        }
    }
    let Some(m) = lc_message(py, v)? else { return Ok(None) };
    if !m.get("role").is_some_and(|r| r.eq_str("tool")) {
        return Ok(None);
    }
    let content: Text<'r> = match m.get("content") {
        Some(V::Str(c)) => c.clone(),
        _ => Cow::Borrowed(&b""[..]),
    };
    if m.get("status").is_some_and(|s| s.eq_str("error")) && !content.starts_with(b"Error") {
        let mut out = b"Error: ".to_vec();
        out.extend_from_slice(&content);
        return Ok(Some(Cow::Owned(out)));
    }
    Ok(Some(content))
}

/// A Python repr of a dict or list (what ``str()`` of a payload writes) as a value, or None
/// when ``text`` is not one. Only literals: ``ast.literal_eval`` runs no code.
pub fn python_literal<'py>(py: Python<'py>, text: &[u8]) -> PyResult<Option<Bound<'py, PyAny>>> {
    let s = strip(text);
    if !bracketed(s) || char_len(s) > REPR_LIMIT {
        return Ok(None);
    }
    match python(py)?.literal_eval.bind(py).call1((py_text(py, s)?,)) {
        Ok(v) => Ok(Some(v)),
        Err(e) if e.is_instance_of::<PyValueError>(py) || e.is_instance_of::<PySyntaxError>(py)
            || e.is_instance_of::<PyMemoryError>(py) || e.is_instance_of::<PyRecursionError>(py)
            || e.is_instance_of::<PyTypeError>(py) => Ok(None),
        Err(e) => Err(e),
    }
}

/// A tool's own arguments out of the payload a framework's callback recorded, or None when
/// ``v`` is not such a payload: ``{"args": [], "kwargs": {...}}`` (smolagents, the traceloop
/// decorators) and ``{"input_str": "{'k': 'v'}", "tags", "metadata"}`` (LangChain's
/// ``on_tool_start``).
pub fn call_arguments<'r, 'py>(py: Python<'py>, v: &V<'r, 'py>) -> PyResult<Option<Text<'r>>> {
    let V::Dict(items) = v else { return Ok(None) };
    if let (Some(kwargs @ V::Dict(_)), Some(args)) = (v.get("kwargs"), v.get("args")) {
        if !args.truthy()? {
            return Ok(Some(Cow::Owned(dumps(py, kwargs, Default::Strict)?)));
        }
    }
    if let Some(V::Str(raw)) = v.get("input_str") {
        let others = ["input_str", "tags", "metadata", "inputs", "kwargs"];
        if items.iter().all(|(k, _)| others.iter().any(|o| k.eq_str(o))) {
            if let Some(lit) = python_literal(py, raw)? {
                if lit.is_instance_of::<pyo3::types::PyDict>() {
                    let s = python(py)?.str_dumps.bind(py).call1((lit,))?;
                    return Ok(Some(Cow::Owned(text_of_py(s.downcast::<PyString>()?)?)));
                }
            }
            return Ok(Some(raw.clone()));
        }
    }
    Ok(None)
}

/// A JSON schema of a tool's parameters (``{"type": "object", "properties": ...}``, maybe
/// under ``parameters``), not the arguments of a call.
pub fn is_parameter_schema(v: &V<'_, '_>) -> bool {
    let v = match v.get("parameters") {
        Some(p @ V::Dict(_)) => p,
        _ => v,
    };
    v.is_dict() && v.get("type").is_some_and(|t| t.eq_str("object")) && v.get("properties").is_some_and(V::is_dict)
}

/// The parts of an assistant message written as a Python repr in a text part
/// (``"{'content': None, 'role': 'assistant', 'tool_calls': [...]}"``, as
/// opentelemetry-instrumentation-openai-agents-v2 0.1 writes it): its text, if any, and its
/// tool calls. None when ``text`` is not such a repr.
fn repr_message<'r, 'py>(py: Python<'py>, text: &[u8]) -> PyResult<Option<Vec<V<'r, 'py>>>> {
    if !text.starts_with(b"{'") || !contains(text, b"'role': 'assistant'") {
        return Ok(None);
    }
    let Some(obj) = python_literal(py, text)? else { return Ok(None) };
    let v = from_py(&obj, 0)?;
    if !v.is_dict() || !v.get("role").is_some_and(|r| r.eq_str("assistant")) {
        return Ok(None);
    }
    let mut parts = Vec::new();
    if let Some(V::Str(c)) = v.get("content") {
        if !c.is_empty() {
            parts.push(dict(vec![("type", lit("text")), ("content", V::Str(Cow::Owned(c.to_vec())))]));
        }
    }
    // ``for c in v.get("tool_calls") or ()``: whatever it is iterated as Python would
    let calls: Vec<V<'static, 'py>> = match v.get("tool_calls") {
        None => Vec::new(),
        Some(t) if !t.truthy()? => Vec::new(),
        Some(V::List(items)) => items.clone(),
        Some(V::Py(o)) => o.try_iter()?.map(|x| from_py(&x?, 0)).collect::<PyResult<_>>()?,
        Some(V::Str(_) | V::Dict(_) | V::Bytes(_)) => Vec::new(), // characters, keys, ints: never dicts
        Some(other) => {
            let name = other.to_py(py, None)?.get_type().name()?.to_string();
            return Err(PyTypeError::new_err(format!("'{name}' object is not iterable")));
        }
    };
    for c in &calls {
        if let Some(f @ V::Dict(_)) = c.get("function") {
            parts.push(dict(vec![
                ("type", lit("tool_call")),
                ("id", V::Str(str_get(py, c, "id", "")?)),
                ("name", V::Str(str_get(py, f, "name", "unknown")?)),
                ("arguments", f.get("arguments").cloned().unwrap_or(lit(""))),
            ]));
        }
    }
    Ok(Some(parts.into_iter().map(into_owned).collect()))
}

/// ``messages`` with each text part that is an assistant message's repr replaced by what
/// that message holds.
pub fn unrepr_messages<'r, 'py>(py: Python<'py>, messages: Vec<V<'r, 'py>>) -> PyResult<Vec<V<'r, 'py>>> {
    let mut out = Vec::with_capacity(messages.len());
    for mut m in messages {
        if let V::Dict(items) = &mut m {
            if let Some((_, V::List(ps))) = items.iter_mut().find(|(k, _)| k.eq_str("parts")) {
                let mut new = Vec::with_capacity(ps.len());
                for p in ps.drain(..) {
                    let inner = match p.get("content") {
                        Some(V::Str(text)) if p.get("type").is_some_and(|t| t.eq_str("text")) => repr_message(py, text)?,
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

// ------------------------------------------------------------------ read/payload.py's names

/// A Python argument as a value; a str's text borrowed.
fn arg<'b, 'py>(obj: &'b Bound<'py, PyAny>) -> PyResult<V<'b, 'py>> {
    match obj.downcast::<PyString>() {
        Ok(s) => Ok(V::Str(borrowed_text(s)?)),
        Err(_) => from_py(obj, 0),
    }
}

fn out<'py>(py: Python<'py>, t: &[u8]) -> PyResult<Bound<'py, PyString>> {
    py_text(py, t)
}

#[pyfunction(name = "render")]
fn render_py<'py>(py: Python<'py>, val: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &render(py, &arg(val)?)?))
}

#[pyfunction(name = "load_json")]
fn load_json_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| {
        if let Ok(s) = raw.downcast::<PyString>() {
            if let Some(v) = decode(py, &borrowed_text(s)?)? {
                return v.to_py(py, None);
            }
        }
        Ok(raw.clone())
    })
}

#[pyfunction(name = "plain_text")]
#[pyo3(signature = (v, role="user"))]
fn plain_text_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &plain_text(py, &arg(v)?, role)?))
}

#[pyfunction(name = "agent_text")]
fn agent_text_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &agent_text(py, &arg(raw)?, role)?))
}

#[pyfunction(name = "tool_payload")]
fn tool_payload_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &tool_payload(py, &arg(v)?)?))
}

#[pyfunction(name = "role_text")]
fn role_text_py<'py>(py: Python<'py>, raw: &Bound<'py, PyAny>, role: &str) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &role_text(py, &arg(raw)?, role)?))
}

#[pyfunction(name = "lc_message")]
fn lc_message_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    guarded(|| match lc_message(py, &arg(v)?)? {
        Some(m) => m.to_py(py, None),
        None => Ok(py.None().into_bound(py)),
    })
}

#[pyfunction(name = "lc_tool_result")]
fn lc_tool_result_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| lc_tool_result(py, &arg(v)?)?.map(|t| out(py, &t)).transpose())
}

#[pyfunction(name = "call_arguments")]
fn call_arguments_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyString>>> {
    guarded(|| call_arguments(py, &arg(v)?)?.map(|t| out(py, &t)).transpose())
}

#[pyfunction(name = "is_parameter_schema")]
fn is_parameter_schema_py(v: &Bound<'_, PyAny>) -> PyResult<bool> {
    guarded(|| Ok(is_parameter_schema(&arg(v)?)))
}

/// ``json.dumps(v, ensure_ascii=False)`` for any value a reader may hold: bytes (an OTLP
/// ``bytesValue``) as OTLP/JSON writes them, base64; a structure nested too deep to write
/// as a marker instead of a RecursionError (issue 9, defect 2).
#[pyfunction(name = "dumps")]
fn dumps_py<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyString>> {
    guarded(|| out(py, &dumps(py, &arg(v)?, Default::Plain)?))
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(render_py, m)?)?;
    m.add_function(wrap_pyfunction!(load_json_py, m)?)?;
    m.add_function(wrap_pyfunction!(plain_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(agent_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(tool_payload_py, m)?)?;
    m.add_function(wrap_pyfunction!(role_text_py, m)?)?;
    m.add_function(wrap_pyfunction!(lc_message_py, m)?)?;
    m.add_function(wrap_pyfunction!(lc_tool_result_py, m)?)?;
    m.add_function(wrap_pyfunction!(call_arguments_py, m)?)?;
    m.add_function(wrap_pyfunction!(is_parameter_schema_py, m)?)?;
    m.add_function(wrap_pyfunction!(dumps_py, m)?)
}
