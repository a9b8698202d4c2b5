//! Builders for the core's tests: spans of an agent run, as faultgate_stream/testing.py
//! builds them for the Python tests (through the same conventions), and a run of them as
//! the assembler would complete it.

use std::borrow::Cow;
use std::cell::Cell;
use std::sync::Arc;

use crate::model::ids::{SpanId, TraceId};
use crate::model::json::{dumps, Default, PLAIN};
use crate::model::record::SpanRecord;
use crate::model::run::{Completion, Run};
use crate::model::value::{dict, Value};
use crate::read::attrs::{Attr, Attrs};
use crate::read::conventions::{build, Kept, SpanHead};
use crate::run::facts::{compute, Facts, Settings};
use crate::run::measure::FloatSum;

thread_local! {
    static NEXT: Cell<u64> = const { Cell::new(1) };
}

fn next_id() -> u64 {
    NEXT.with(|n| {
        let v = n.get();
        n.set(v + 1);
        v
    })
}

pub fn trace_id() -> TraceId {
    TraceId::Hex(0, next_id())
}

pub fn span_id() -> SpanId {
    SpanId::Hex(next_id())
}

pub fn s(t: &str) -> Value<'static> {
    Value::Str(Cow::Owned(t.as_bytes().to_vec()))
}

/// A span whose attributes are `attrs`, read by the conventions.
pub fn span(trace: &TraceId, name: &str, parent: Option<&SpanId>, start_s: f64, status: i64, message: &str,
            attrs: Vec<(&str, Value<'static>)>) -> SpanRecord {
    let mut a = Attrs::default();
    for (k, v) in attrs {
        a.set(Attr { key: Cow::Owned(k.as_bytes().to_vec()), val: v, origin: None });
    }
    let head = SpanHead {
        name: Cow::Owned(name.as_bytes().to_vec()),
        has_parent: parent.is_some(),
        failed: status == 2,
        message: Cow::Owned(message.as_bytes().to_vec()),
        instant: false, // every span here lasts 100 ms
    };
    let fields = build(&head, a).expect("built").into_fields(&Kept::All);
    let start = 1_700_000_000_000_000_000i128 + (start_s * 1e9) as i128;
    SpanRecord {
        trace_id: trace.clone(),
        span_id: span_id(),
        parent_id: parent.cloned(),
        name: name.as_bytes().into(),
        start_ns: start,
        end_ns: start + 100_000_000,
        status_code: status,
        status_message: message.as_bytes().into(),
        fields,
    }
}

/// `[{"role": role, "parts": [part]}]` as JSON text.
pub fn messages(role: &str, part: Value<'static>) -> Value<'static> {
    let m = Value::List(vec![dict(vec![("role", s(role)), ("parts", Value::List(vec![part]))])]);
    Value::Str(Cow::Owned(dumps(&m, Default::Plain, PLAIN).expect("JSON")))
}

pub fn text_part(content: &str) -> Value<'static> {
    dict(vec![("type", s("text")), ("content", s(content))])
}

/// An `invoke_agent` span with the prompt and answer in its messages.
pub fn agent(trace: &TraceId, name: &str, prompt: &str, answer: &str, parent: Option<&SpanId>, start_s: f64,
             extra: Vec<(&str, Value<'static>)>) -> SpanRecord {
    let mut a = vec![("gen_ai.operation.name", s("invoke_agent")), ("gen_ai.agent.name", s(name))];
    if !prompt.is_empty() {
        a.push(("gen_ai.input.messages", messages("user", text_part(prompt))));
    }
    if !answer.is_empty() {
        a.push(("gen_ai.output.messages", messages("assistant", text_part(answer))));
    }
    a.extend(extra);
    span(trace, &format!("invoke_agent {name}"), parent, start_s, 0, "", a)
}

/// An `execute_tool` span with its arguments and result.
pub fn tool(trace: &TraceId, parent: &SpanId, name: &str, arguments: &str, result: &str, start_s: f64,
            status: i64) -> SpanRecord {
    span(trace, &format!("execute_tool {name}"), Some(parent), start_s, status, "", vec![
        ("gen_ai.operation.name", s("execute_tool")), ("gen_ai.tool.name", s(name)),
        ("gen_ai.tool.call.arguments", s(arguments)), ("gen_ai.tool.call.result", s(result)),
    ])
}

/// A root and one tool span per (name, arguments, result), a second apart.
pub fn simple_run(tools: &[(&str, &str, &str)], prompt: &str, answer: &str, root_attrs: Vec<(&str, Value<'static>)>)
    -> Vec<SpanRecord> {
    let t = trace_id();
    let root = agent(&t, "agent", prompt, answer, None, 0.0, root_attrs);
    let root_id = root.span_id.clone();
    let mut out = vec![root];
    for (i, (n, a, r)) in tools.iter().enumerate() {
        out.push(tool(&t, &root_id, n, a, r, 1.0 + i as f64, 0));
    }
    out
}

/// The run of `spans` as the assembler completes it: its root the top-most agent span
/// (else the parentless one), its facts worked out.
pub fn run_of(spans: Vec<SpanRecord>) -> (Run, Facts) {
    let root = spans.iter().find(|s| s.is_agent() && s.parent_id.is_none())
        .or_else(|| spans.iter().find(|s| s.is_agent()))
        .or_else(|| spans.iter().find(|s| s.parent_id.is_none()))
        .map(|s| s.span_id.clone());
    let trace = spans[0].trace_id.clone();
    let run = Run::new(trace, spans.into_iter().map(Arc::new).collect(), root, Completion::Complete);
    let facts = compute(&run, Settings { float_sum: FloatSum::Plain }).expect("facts");
    (run, facts)
}

/// An openai-v2 style tool loop (tests/checks/test_undecided.py's): invoke_agent > chat (a
/// tool call) > execute_tool > chat (the answer), `repeats` times. With `content` off, as
/// the instrumentation records it by default: no messages on the chat spans, no arguments
/// or result on the tool span.
pub fn tool_loop(content: bool, answer: &str, finish: bool, repeats: usize, result: &str) -> Vec<SpanRecord> {
    let t = trace_id();
    let root = span(&t, "invoke_agent weather", None, 0.0, 0, "",
                    vec![("gen_ai.operation.name", s("invoke_agent")), ("gen_ai.agent.name", s("weather"))]);
    let root_id = root.span_id.clone();
    let mut out = vec![root];
    let mut at = 0.5;
    for i in 0..repeats {
        let call = dict(vec![("type", s("tool_call")), ("id", s(&format!("call_{i}"))), ("name", s("get_weather")),
                             ("arguments", dict(vec![("city", s("Paris"))]))]);
        let mut chat = vec![("gen_ai.operation.name", s("chat")), ("gen_ai.request.model", s("m"))];
        if finish {
            chat.push(("gen_ai.response.finish_reasons", Value::List(vec![s("tool_calls")])));
        }
        if content {
            chat.push(("gen_ai.input.messages", messages("user", text_part("Weather in Paris?"))));
            chat.push(("gen_ai.output.messages", messages("assistant", call)));
        }
        out.push(span(&t, "chat m", Some(&root_id), at, 0, "", chat));
        let mut tool = vec![("gen_ai.operation.name", s("execute_tool")), ("gen_ai.tool.name", s("get_weather")),
                            ("gen_ai.tool.call.id", s(&format!("call_{i}")))];
        if content {
            tool.push(("gen_ai.tool.call.arguments", s(r#"{"city": "Paris"}"#)));
            tool.push(("gen_ai.tool.call.result", s(result)));
        }
        out.push(span(&t, "execute_tool get_weather", Some(&root_id), at + 0.2, 0, "", tool));
        at += 1.0;
    }
    let mut chat = vec![("gen_ai.operation.name", s("chat")), ("gen_ai.request.model", s("m"))];
    if finish {
        chat.push(("gen_ai.response.finish_reasons", Value::List(vec![s("stop")])));
    }
    if content {
        chat.push(("gen_ai.output.messages", messages("assistant", text_part(answer))));
    }
    out.push(span(&t, "chat m", Some(&root_id), at, 0, "", chat));
    out
}

/// `(fired, undecided, reason as it reads)` of an outcome, for assertions.
pub fn said(o: &crate::checks::Outcome) -> (bool, bool, String) {
    (o.fired, o.undecided, String::from_utf8(o.reason.cut()).expect("UTF-8"))
}
