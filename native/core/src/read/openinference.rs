//! OpenInference spans (``openinference.span.kind``) -> a record's fields: a TOOL span's
//! arguments are in ``input.value``; LLM messages are flattened into
//! ``llm.{input,output}_messages.N.message.*``; a parentless span is its trace's agent run.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::attrs::{Attr, Attrs};
use super::conventions::{
    budget_ended, calls, finish_reasons, model_missing, responses, str_or_empty, tool_missing, Built, SpanHead,
    OI_KIND, USER_KEYS,
};
use super::payload::{agent_text, call_arguments, is_parameter_schema, lc_tool_result, lit, load_json, role_text_of,
                     tool_payload};
use super::rest_of_line;
use crate::error::Result;
use crate::model::record::{sub_text, INVOKE_AGENT, MISSING_TOOL_ARGUMENTS};
use crate::model::value::{dict, Text, Value};
use crate::pyfmt::float::int_text;
use crate::pyfmt::strs::{ascii_upper, contains, small_index};

/// OpenInference kinds onto GenAI operations, as the collector's genainormalizer maps them.
/// A CHAIN is not an agent: LangGraph writes every graph node (``agent``, ``tools``,
/// ``call_model``, ``should_continue``) as one, and taking each for an agent split one run
/// into a view per node. A parentless CHAIN is still its trace's run (below).
const OI_OPERATION: [(&str, &str); 8] = [
    ("AGENT", INVOKE_AGENT), ("CHAIN", "invoke_workflow"), ("LLM", "chat"), ("TOOL", "execute_tool"),
    ("EMBEDDING", "embeddings"), ("RETRIEVER", "retrieval"), ("RERANKER", "retrieval"), ("PROMPT", "text_completion"),
];

pub const OI_MESSAGES: [&str; 2] = ["llm.input_messages.", "llm.output_messages."];

/// ``^llm\.(input|output)_messages\.(\d{1,9})\.message\.(.+)$``: (direction, index, rest).
fn message_key(key: &[u8]) -> Option<(&'static str, i64, &[u8])> {
    let (direction, rest) = if let Some(r) = key.strip_prefix(b"llm.input_messages.") {
        ("input", r)
    } else if let Some(r) = key.strip_prefix(b"llm.output_messages.") {
        ("output", r)
    } else {
        return None;
    };
    let dot = rest.iter().position(|&c| c == b'.')?;
    let tail = rest_of_line(rest[dot..].strip_prefix(b".message.")?)?;
    small_index(&rest[..dot]).map(|i| (direction, i, tail))
}

/// ``^tool_calls\.(\d{1,9})\.tool_call\.(.+)$`` of a message's key: (index, rest).
fn call_key(key: &[u8]) -> Option<(i64, &[u8])> {
    let rest = key.strip_prefix(b"tool_calls.")?;
    let dot = rest.iter().position(|&c| c == b'.')?;
    let tail = rest_of_line(rest[dot..].strip_prefix(b".tool_call.")?)?;
    small_index(&rest[..dot]).map(|i| (i, tail))
}

type Fieldset<'a> = Vec<(Text<'a>, Value<'a>)>;

/// ``d[key] = v`` on a small insertion-ordered map.
fn put<'a>(d: &mut Fieldset<'a>, key: Text<'a>, v: Value<'a>) {
    match d.iter_mut().find(|(k, _)| *k == key) {
        Some(slot) => slot.1 = v,
        None => d.push((key, v)),
    }
}

fn field<'x, 'a>(d: &'x Fieldset<'a>, key: &str) -> Option<&'x Value<'a>> {
    d.iter().find(|(k, _)| &**k == key.as_bytes()).map(|(_, v)| v)
}

/// One flattened message: its fields, and its tool calls by index, kept apart so that no
/// attribute name (``...message.calls``, say) can stand for the calls.
#[derive(Default)]
struct Message<'a> {
    fields: Fieldset<'a>,
    calls: BTreeMap<i64, Fieldset<'a>>,
}

/// Rebuild flattened ``llm.<direction>_messages.N.message.*`` into GenAI messages.
fn messages<'a>(a: &Attrs<'a>, direction: &str) -> Vec<Value<'a>> {
    let mut msgs: BTreeMap<i64, Message<'a>> = BTreeMap::new();
    for attr in &a.items {
        let Some((dir, i, rest)) = message_key(&attr.key) else { continue };
        if dir != direction {
            continue;
        }
        let msg = msgs.entry(i).or_default();
        let rest_text = sub_text(&attr.key, rest);
        if let Some((c, sub)) = call_key(rest) {
            put(msg.calls.entry(c).or_default(), sub_text(&attr.key, sub), attr.val.clone());
        } else {
            put(&mut msg.fields, rest_text, attr.val.clone());
        }
    }
    let mut out = Vec::with_capacity(msgs.len());
    for (_, msg) in msgs {
        let role = match field(&msg.fields, "role") {
            Some(r) => r.py_str(),
            None => Cow::Borrowed(&b"assistant"[..]),
        };
        let mut parts = Vec::new();
        let call_id = field(&msg.fields, "tool_call_id");
        let content = field(&msg.fields, "content");
        if &*role == b"tool" && call_id.is_some_and(Value::truthy) {
            parts.push(dict(vec![
                ("type", lit("tool_call_response")),
                ("id", Value::Str(call_id.expect("truthy").py_str())),
                ("result", content.cloned().unwrap_or(lit(""))),
            ]));
        } else if let Some(c) = content {
            if c.truthy() {
                parts.push(dict(vec![("type", lit("text")), ("content", Value::Str(c.py_str()))]));
            }
        }
        for call in msg.calls.into_values() {
            parts.push(dict(vec![
                ("type", lit("tool_call")),
                ("id", Value::Str(match field(&call, "id") { Some(v) => v.py_str(), None => Cow::Borrowed(&b""[..]) })),
                ("name", Value::Str(match field(&call, "function.name") {
                    Some(v) => v.py_str(),
                    None => Cow::Borrowed(&b"unknown"[..]),
                })),
                ("arguments", field(&call, "function.arguments").cloned().unwrap_or(lit(""))),
            ]));
        }
        out.push(dict(vec![("role", Value::Str(role)), ("parts", Value::List(parts))]));
    }
    out
}

fn graph_node(a: &Attrs<'_>) -> bool {
    matches!(a.get("metadata"), Some(Value::Str(md)) if contains(md, b"\"langgraph_node\""))
}

/// `int(v)` of a token count that is an int or a finite float; None for anything else
/// (inf and NaN are no count).
fn token_count<'a>(v: &Value<'a>) -> Option<Value<'a>> {
    match v {
        Value::Int(x) => Some(Value::Int(*x)),
        Value::BigInt(t) => Some(Value::BigInt(t.clone())),
        Value::Float(x) if x.is_finite() => Some(if x.abs() < 9.0e18 {
            Value::Int(x.trunc() as i64)
        } else {
            Value::BigInt(Cow::Owned(int_text(*x)))
        }),
        _ => None,
    }
}

pub fn build<'a>(span: &SpanHead<'a>, attrs: Attrs<'a>) -> Result<Built<'a>> {
    let size = attrs.size(&span.name);
    let mut a = attrs;
    let kind = ascii_upper(&match a.get(OI_KIND) {
        Some(k) => k.py_str(),
        None => Cow::Borrowed(&b""[..]),
    }).unwrap_or_default();
    let (mut prompt, mut answer): (Text<'a>, Text<'a>) = (Cow::Borrowed(b""), Cow::Borrowed(b""));
    let mut tool = None;
    let (mut calls_, mut responses_) = (Vec::new(), Vec::new());
    let mut operation: Option<Text<'a>> =
        OI_OPERATION.iter().find(|(k, _)| k.as_bytes() == &*kind).map(|(_, op)| Cow::Borrowed(op.as_bytes()));
    if !span.has_parent {
        // The trace's root is the agent run, whatever kind it was given; a native GenAI
        // root keeps its own attributes and the mapping only fills what is missing.
        operation = Some(match a.get("gen_ai.operation.name") {
            Some(op) if op.truthy() => op.py_str(),
            _ => Cow::Borrowed(INVOKE_AGENT.as_bytes()),
        });
        let md = load_json(a.value("metadata"));
        let md = if md.is_dict() { md } else { Value::Dict(Vec::new()) };
        if !a.has("gen_ai.agent.name") {
            a.set(Attr { key: Cow::Borrowed(b"gen_ai.agent.name"), val: Value::Str(span.name.clone()), origin: None });
        }
        if let Some(s) = md.get("scenario") {
            if s.truthy() {
                let s = s.py_str();
                a.setdefault("faultgate.scenario", Value::Str(s));
            }
        }
        let mut user = match a.get("user.id") {
            Some(u) if u.truthy() => Some(u.clone()),
            _ => None,
        };
        if user.is_none() {
            for k in USER_KEYS {
                if let Some(u) = md.get(k) {
                    if u.truthy() {
                        user = Some(u.clone());
                        break;
                    }
                }
            }
        }
        if let Some(u) = user {
            let u = u.py_str();
            a.setdefault("enduser.id", Value::Str(u));
        }
        prompt = agent_text(a.value("input.value"), "user")?;
        answer = agent_text(a.value("output.value"), "assistant")?;
    } else if &*kind == b"AGENT" && graph_node(&a) {
        // openinference-instrumentation-langchain marks LangGraph's `agent` node AGENT on
        // every model turn: a node of the run's graph, not an agent of its own.
        operation = Some(Cow::Borrowed(b"invoke_workflow"));
    } else if &*kind == b"AGENT" {
        // An AGENT under a server, function or harness span is still the run's agent: its
        // input and output are the run's prompt and answer, as a root's are.
        prompt = agent_text(a.value("input.value"), "user")?;
        answer = agent_text(a.value("output.value"), "assistant")?;
    } else if &*kind == b"TOOL" {
        // Arguments are in input.value (the spec); tool.parameters is the parameter
        // definition (a JSON schema), read only when an exporter put the arguments there.
        let mut args = a.value("input.value").clone();
        if args.is_none() && !is_parameter_schema(&load_json(a.value("tool.parameters"))) {
            args = a.value("tool.parameters").clone();
        }
        let decoded = load_json(&args);
        if let Some(unwrapped) = call_arguments(&decoded)? {
            args = Value::Str(Cow::Owned(unwrapped.into_owned()));
        }
        let out = load_json(a.value("output.value"));
        let mut result = match lc_tool_result(&out)? {
            Some(lc) => Cow::Owned(lc.into_owned()),
            None => tool_payload(a.value("output.value"))?,
        };
        if !span.message.is_empty() {
            let mut r = b"Error: ".to_vec();
            r.extend_from_slice(&span.message);
            if !result.is_empty() {
                r.push(b' ');
                r.extend_from_slice(&result);
            }
            result = Cow::Owned(r);
        }
        let name = match a.get("tool.name") {
            Some(n) if n.truthy() => n.py_str(),
            _ => span.name.clone(),
        };
        let call_id = match a.get("tool.id") {
            Some(i) if i.truthy() => i.py_str(),
            _ => str_or_empty(a.get("tool_call.id")),
        };
        let arguments = Cow::Owned(tool_payload(&args)?.into_owned());
        tool = Some([name, arguments, result, call_id]);
    }
    if &*kind == b"LLM" {
        let ins = messages(&a, "input");
        let outs = messages(&a, "output");
        calls_ = calls(&outs)?;
        responses_ = responses(&ins)?;
        if prompt.is_empty() {
            prompt = role_text_of(&ins, "user");
        }
        if answer.is_empty() {
            answer = role_text_of(&outs, "assistant");
        }
    }
    for (src, dst) in [("llm.token_count.prompt", "gen_ai.usage.input_tokens"),
                       ("llm.token_count.completion", "gen_ai.usage.output_tokens")] {
        if let Some(n) = token_count(a.value(src)) {
            a.set_value(dst, n);
        }
    }
    budget_ended(&mut a, &mut answer);
    let mut finish = finish_reasons(a.value("gen_ai.response.finish_reasons"));
    if let Some(r) = a.get("llm.finish_reason") {
        if r.truthy() {
            finish = vec![r.py_str()];
        }
    }
    let mut missing = 0;
    if tool.is_some() {
        missing = tool_missing(&a, "input.value", "output.value", span.failed);
        if missing & MISSING_TOOL_ARGUMENTS != 0 && a.has("tool.parameters") {
            missing &= !MISSING_TOOL_ARGUMENTS;
        }
    } else if &*kind == b"LLM" {
        // OpenInference names the finish reason `llm.finish_reason`: an LLM span without it
        // (openai-agents, CrewAI and smolagents instrumentations write none) did not record
        // whether the model was cut off, so context_overflow cannot pass it.
        missing = model_missing(a.has("input.value") || a.any_key_starting(&OI_MESSAGES[..1]),
                                a.has("output.value") || a.any_key_starting(&OI_MESSAGES[1..]), !finish.is_empty());
    }
    Ok(Built {
        operation,
        is_tool: tool.is_some(),
        attrs: a,
        prompt,
        answer,
        tool,
        calls: calls_,
        responses: responses_,
        finish,
        shadowed: &*kind == b"LLM",
        size,
        missing,
    })
}
