//! OpenInference spans (``openinference.span.kind``) -> a record's fields: a TOOL span's
//! arguments are in ``input.value``; LLM messages are flattened into
//! ``llm.{input,output}_messages.N.message.*``; a parentless span is its trace's agent run.

use std::borrow::Cow;
use std::collections::BTreeMap;

use super::attrs::{Attr, Attrs};
use super::conventions::{
    budget_ended, calls, finish_reasons, limit_ended, model_missing, responses, str_or_empty, tool_missing, Built,
    SpanHead, OI_KIND, USER_KEYS,
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

/// LlamaIndex's LLM methods are each traced as an LLM span, so one model call is three:
/// `_prepare_chat_with_tools` (builds the call's arguments), the method the agent called
/// (`astream_chat`: its reply is a stream, which it does not record) and, inside it, the
/// call itself, with its messages and `llm.finish_reason`. The first two made no call, so
/// what they did not record is not missing: a span that recorded neither messages nor a
/// reply nor a finish reason nor token counts, and did not fail, is such a method (a call
/// whose content was hidden keeps its token counts, or `input.value`'s redaction marker,
/// and its messages' absence counted).
fn made_no_call(span: &SpanHead<'_>, a: &Attrs<'_>) -> bool {
    span.name.ends_with(b"._prepare_chat_with_tools")
        || (!span.failed && !a.has("output.value") && !a.has("llm.finish_reason")
            && !a.any_key_starting(&OI_MESSAGES) && !a.any_key_starting(&["llm.token_count."])
            && !a.value("input.value").eq_str(REDACTED))
}

/// A LlamaIndex `ToolOutput` (`{"blocks", "tool_name", "raw_input", "raw_output",
/// "is_error"}`: what a FunctionTool returns, as OpenInference writes it in `output.value`)
/// as the tool's result: its `raw_output`, an error when `is_error` says so; None for any
/// other value.
pub fn llama_tool_output<'a>(out: &Value<'a>) -> Result<Option<Text<'a>>> {
    let (Some(raw), Some(Value::Bool(failed)), true) = (out.get("raw_output"), out.get("is_error"), out.has("tool_name"))
    else { return Ok(None) };
    let raw = tool_payload(raw)?;
    Ok(Some(if *failed && !raw.starts_with(b"Error: ") {
        let mut r = b"Error: ".to_vec();
        r.extend_from_slice(&raw);
        Cow::Owned(r)
    } else {
        raw
    }))
}

/// `<Name>Error(<module>): <message>`: a framework's error as its `str()` writes it
/// (BeeAI's `FrameworkError`).
fn is_error_repr(t: &[u8]) -> bool {
    let Some(open) = t.iter().position(|&c| c == b'(') else { return false };
    let name = &t[..open];
    name.ends_with(b"Error") && name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_')
        && t[open..].windows(3).any(|w| w == b"): ")
}

/// openinference-instrumentation-beeai writes the events of a tool's run (its error, each
/// retry) as child spans of the tool's span, of its kind, named after the event, with no
/// `tool.name` and no duration: records of the parent's call, not calls of their own.
const BEEAI_TOOL_EVENTS: [&str; 2] = ["error", "retry"];

fn beeai_tool_event(span: &SpanHead<'_>, a: &Attrs<'_>) -> bool {
    span.has_parent && !a.has("tool.name") && BEEAI_TOOL_EVENTS.iter().any(|e| &*span.name == e.as_bytes())
        && span.instant
}

/// A TOOL span's name as the tool's when no `tool.name` says it: openinference-
/// instrumentation-dspy names a DSPy `Tool`'s span after the method it wraps
/// (`fetch_invoice.__call__`, `fetch_invoice.acall`).
fn dspy_tool_name<'a>(name: &Text<'a>) -> Text<'a> {
    for method in [&b".__call__"[..], b".acall"] {
        if let Some(bare) = name.strip_suffix(method).filter(|b| !b.is_empty()) {
            return match name {
                Cow::Borrowed(n) => Cow::Borrowed(&n[..bare.len()]),
                Cow::Owned(_) => Cow::Owned(bare.to_vec()),
            };
        }
    }
    name.clone()
}

/// What OpenInference writes in place of a hidden input or output.
const REDACTED: &str = "__REDACTED__";

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
    } else if &*kind == b"TOOL" && beeai_tool_event(span, &a) {
        // an event of its parent tool's run, not a call
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
            None => match llama_tool_output(&out)? {
                Some(r) => Cow::Owned(r.into_owned()),
                None => match (&out, a.value("output.value")) {
                    // a JSON output that is one string (DSPy's tools: "\"18C, sunny\""): the string
                    (Value::Str(text), Value::Str(raw)) if raw.first() == Some(&b'"')
                        && a.value("output.mime_type").eq_str("application/json") => Cow::Owned(text.to_vec()),
                    _ => tool_payload(a.value("output.value"))?,
                },
            },
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
            _ => dspy_tool_name(&span.name),
        };
        let call_id = match a.get("tool.id") {
            Some(i) if i.truthy() => i.py_str(),
            _ => str_or_empty(a.get("tool_call.id")),
        };
        // DSPy's ReAct ends a trajectory by calling its own `finish` tool (no arguments,
        // "Completed."): the agent's signal that it will answer, not a call of the user's tools
        if !(&*name == b"finish" && &*result == b"Completed.") {
            let arguments = Cow::Owned(tool_payload(&args)?.into_owned());
            tool = Some([name, arguments, result, call_id]);
        }
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
    let mut error: Text<'a> = Cow::Borrowed(b"");
    if span.failed && operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) && is_error_repr(&answer) {
        // a failed agent's output is its error (BeeAI writes `AgentError(module): message`
        // there and no status message): not an answer
        error = std::mem::replace(&mut answer, Cow::Borrowed(b""));
    }
    if operation.as_deref() == Some(INVOKE_AGENT.as_bytes()) {
        limit_ended(span, &mut a, &error);
    }
    let mut finish = finish_reasons(a.value("gen_ai.response.finish_reasons"));
    if let Some(r) = a.get("llm.finish_reason") {
        if r.truthy() {
            finish = vec![r.py_str()];
        }
    }
    if finish.is_empty() && &*kind == b"LLM" {
        // openinference-instrumentation-autogen-agentchat writes no llm.finish_reason: the
        // model's result, finish reason included, is the JSON of output.value
        if let Some(Value::Str(r)) = load_json(a.value("output.value")).get("finish_reason") {
            if !r.is_empty() {
                finish = vec![Cow::Owned(r.to_vec())];
            }
        }
    }
    let mut missing = 0;
    if tool.is_some() {
        missing = tool_missing(&a, "input.value", "output.value", span.failed);
        if missing & MISSING_TOOL_ARGUMENTS != 0 && a.has("tool.parameters") {
            missing &= !MISSING_TOOL_ARGUMENTS;
        }
    } else if &*kind == b"LLM" && !made_no_call(span, &a) {
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
