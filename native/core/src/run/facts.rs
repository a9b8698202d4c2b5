//! A completed run's facts (model/run.py documents each): its steps, prompt, answer, agent,
//! measures and what was not captured, worked out in one pass over its spans, which are in
//! start order, so the order spans arrived in cannot change any of them.

use std::borrow::Cow;

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use sha2::{Digest, Sha256};

use super::measure::{finite, py_sum, FloatSum, TokenSum};
use crate::error::Result;
use crate::model::ids::SpanId;
use crate::model::record::{Str, SpanRecord, ToolCall, MISSING_OUTPUT, MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT,
                           MISSING_WHAT};
use crate::model::run::Run;
use crate::model::value::Value;
use crate::pyfmt::strs::{lower_equals, strip};
// what ended a run whose model last asked for a call
use crate::read::conventions::ENDED_ON_A_CALL;

pub const AGENT_NAME: &str = "gen_ai.agent.name";
pub const AGENT_VERSION: &str = "gen_ai.agent.version";
/// The resource's `service.version`, which readers copy onto the spans that can be a run's
/// root: the version a deployment carries when the agent does not name its own.
pub const SERVICE_VERSION: &str = "service.version";
/// faultgate's scenario key, in order: an explicit scenario, the agent id, else a prompt hash.
pub const SCENARIO_ATTRS: [&str; 2] = ["faultgate.scenario", "gen_ai.agent.id"];
pub const USAGE_IN: &str = "gen_ai.usage.input_tokens";
pub const USAGE_OUT: &str = "gen_ai.usage.output_tokens";
pub const COST: &str = "faultgate.cost_usd";
pub const TERMINATION: &str = "faultgate.termination";
pub const ERROR_TYPE: &str = "error.type";
const STEP_MISSING: u32 = MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT;

/// One tool call of a run, in start-time order (model/records.py's `Step`).
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// 1-based, as reasons print it
    pub index: usize,
    pub tool: Str,
    pub arguments: Str,
    pub result: Str,
    /// the span it was read from, and its place among the run's spans (`usize::MAX` for a
    /// step that came from elsewhere)
    pub span_id: SpanId,
    pub span: usize,
    pub call_id: Str,
    pub start_ns: i128,
    /// the span said it failed (status error); results may also say so in text
    pub ok: bool,
    /// MISSING_TOOL_ARGUMENTS / MISSING_TOOL_RESULT: its span did not record them
    pub missing: u32,
}

/// Everything model/run.py's `Run` computes from its spans.
#[derive(Clone, Debug, PartialEq)]
pub struct Facts {
    pub steps: Vec<Step>,
    pub prompt: Str,
    pub answer: Str,
    pub agent: Str,
    pub agent_version: Str,
    pub scenario: Str,
    pub termination: Str,
    pub usage_tokens: Option<f64>,
    pub latency_ms: Option<f64>,
    pub cost_usd: Option<f64>,
    pub missing: u32,
    pub has_content: bool,
    pub answer_not_captured: String,
    pub calls_not_captured: String,
    /// the latest end of its spans; 0 without spans
    pub last_end_ns: i128,
}

/// `span.attrs.get(key)`, a value of None as absent.
pub fn attr<'r>(s: &'r SpanRecord, key: &str) -> Option<Cow<'r, Value<'r>>> {
    s.fields.attrs.get(key.as_bytes()).filter(|v| !v.is_none())
}

/// `str(v)` of an attribute that is set and true.
fn truthy_str(v: Option<Cow<'_, Value<'_>>>) -> Option<Str> {
    v.filter(|v| v.truthy()).map(|v| v.py_str().into_owned().into())
}

fn blank(t: &[u8]) -> bool {
    strip(t).is_empty()
}

/// `span.error_type`: `str(attrs["error.type"])` when set and true, else None.
pub fn error_type(s: &SpanRecord) -> Option<Str> {
    truthy_str(attr(s, ERROR_TYPE))
}

/// The tool span -> the call id of the model's call it executed, for spans that carry no
/// call id of their own: the k-th such span of a tool is the k-th call of that tool the
/// messages name that no span claims by id (both in start order).
fn pair_id_less_spans<'r>(spans: &'r [std::sync::Arc<SpanRecord>], tool_spans: &[usize])
    -> HashMap<&'r SpanId, &'r [u8]> {
    let mut claimed: HashSet<&[u8]> = HashSet::default();
    for &i in tool_spans {
        let cid = &spans[i].fields.tool.as_ref().expect("a tool span").call_id;
        if !cid.is_empty() {
            claimed.insert(cid);
        }
    }
    let mut calls: HashMap<&[u8], Vec<&[u8]>> = HashMap::default();
    for s in spans {
        for c in &s.fields.calls {
            if !c.call_id.is_empty() && !claimed.contains(&*c.call_id) {
                calls.entry(&c.name).or_default().push(&c.call_id);
            }
        }
    }
    let mut out = HashMap::default();
    let mut seen: HashMap<&[u8], usize> = HashMap::default();
    for &i in tool_spans {
        let t = spans[i].fields.tool.as_ref().expect("a tool span");
        if !t.call_id.is_empty() {
            continue;
        }
        let k = seen.get(&*t.name).copied().unwrap_or(0);
        if let Some(ids) = calls.get(&*t.name) {
            if k < ids.len() {
                out.insert(&spans[i].span_id, ids[k]);
            }
        }
        seen.insert(&t.name, k + 1);
    }
    out
}

/// The tool spans that are steps, and the call id each took from an inner layer. A tool
/// span whose parent is a tool span of the same tool is that call again, one
/// instrumentation layer down (AutoGen's own `execute_tool` span inside OpenInference's TOOL
/// span, the content on the outer, the call id on the inner): one step, not two.
fn outer_tool_spans(spans: &[std::sync::Arc<SpanRecord>]) -> (Vec<usize>, HashMap<&SpanId, &[u8]>) {
    let all: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].fields.tool.is_some()).collect();
    let mut by_id: HashMap<&SpanId, usize> = HashMap::default();
    for &i in &all {
        by_id.insert(&spans[i].span_id, i);
    }
    let mut outer = Vec::with_capacity(all.len());
    let mut inner_ids: HashMap<&SpanId, &[u8]> = HashMap::default();
    for &i in &all {
        let s = &spans[i];
        let parent = s.parent_id.as_ref().and_then(|p| by_id.get(p).copied());
        let name = &s.fields.tool.as_ref().expect("a tool span").name;
        let same = match parent {
            Some(p) if p == i => false, // a span its own parent is no layer of itself
            Some(p) => spans[p].fields.tool.as_ref().expect("a tool span").name == *name,
            None => false,
        };
        if !same {
            outer.push(i);
            continue;
        }
        let cid = &s.fields.tool.as_ref().expect("a tool span").call_id;
        if !cid.is_empty() {
            inner_ids.entry(&spans[parent.expect("a parent")].span_id).or_insert(cid);
        }
    }
    (outer, inner_ids)
}

/// The steps: one per tool span when the run has tool spans, else one per call its model
/// spans name.
fn steps(run: &Run) -> Vec<Step> {
    let spans = &run.spans;
    // A call's result is the last tool_call_response carrying its id.
    let mut responses: HashMap<&[u8], &[u8]> = HashMap::default();
    for s in spans {
        for (id, result) in &s.fields.responses {
            responses.insert(id, result);
        }
    }
    let (tool_spans, inner_ids) = outer_tool_spans(spans);
    let mut out = Vec::with_capacity(spans.len());
    if !tool_spans.is_empty() {
        // What a tool span did not record, the model's messages may hold under its call
        // id (content only in the messages, or in log events: util-genai's event_only).
        let mut named: HashMap<&[u8], &ToolCall> = HashMap::default();
        for s in spans {
            for c in &s.fields.calls {
                if !c.call_id.is_empty() {
                    named.insert(&c.call_id, c);
                }
            }
        }
        let paired = if named.is_empty() { HashMap::default() } else { pair_id_less_spans(spans, &tool_spans) };
        for (n, &i) in tool_spans.iter().enumerate() {
            let s = &spans[i];
            let t = s.fields.tool.as_ref().expect("a tool span");
            let call_id: &[u8] = if !t.call_id.is_empty() {
                &t.call_id
            } else if let Some(inner) = inner_ids.get(&s.span_id) {
                inner
            } else {
                paired.get(&s.span_id).copied().unwrap_or(b"")
            };
            let (mut args, mut result): (&[u8], &[u8]) = (&t.arguments, &t.result);
            let mut missing = s.fields.missing & STEP_MISSING;
            if !call_id.is_empty() {
                if missing & MISSING_TOOL_ARGUMENTS != 0 || args.is_empty() {
                    if let Some(c) = named.get(call_id) {
                        args = &c.arguments;
                        missing &= !MISSING_TOOL_ARGUMENTS;
                    }
                }
                if missing & MISSING_TOOL_RESULT != 0 || result.is_empty() {
                    if let Some(r) = responses.get(call_id) {
                        result = r;
                        missing &= !MISSING_TOOL_RESULT;
                    }
                }
            }
            out.push(Step {
                index: n + 1,
                tool: t.name.clone(),
                arguments: args.into(),
                result: result.into(),
                span_id: s.span_id.clone(),
                span: i,
                call_id: call_id.into(),
                start_ns: s.start_ns,
                ok: s.status_code != 2,
                missing,
            });
        }
        return out;
    }
    // A chat-only run: each call its model spans name, with the result that carries its id.
    // Ordered by (start, span id, the call's place in its span): spans are in (start, span
    // id) order already, so only spans sharing both interleave their calls.
    let mut i = 0;
    while i < spans.len() {
        let mut j = i + 1;
        while j < spans.len() && spans[j].span_id == spans[i].span_id && spans[j].start_ns == spans[i].start_ns {
            j += 1;
        }
        let mut group: Vec<(usize, usize, &ToolCall)> = Vec::new();
        for k in i..j {
            for (n, c) in spans[k].fields.calls.iter().enumerate() {
                group.push((n, k, c));
            }
        }
        group.sort_by_key(|g| (g.0, g.1));
        for (_, k, c) in group {
            let found = responses.get(&*c.call_id).copied();
            // a call whose result no later model input carries (no response under its id, or
            // the instrumentation wrote the tool message without its content: Haystack's
            // OpenInference): what it returned was not captured
            let missing = if found.is_some() { 0 } else { MISSING_TOOL_RESULT };
            let result: &[u8] = found.unwrap_or(b"");
            out.push(Step {
                index: out.len() + 1,
                tool: c.name.clone(),
                arguments: c.arguments.clone(),
                result: result.into(),
                span_id: spans[k].span_id.clone(),
                span: k,
                call_id: c.call_id.clone(),
                start_ns: spans[k].start_ns,
                ok: !result.starts_with(b"Error: "),
                missing,
            });
        }
        i = j;
    }
    out
}

/// The final answer: the root's, else the last span's that has one, not counting what was
/// said inside an agent that ended in error (a nested `invoke_agent` that failed did not
/// answer, whatever its model said last).
fn answer(run: &Run) -> Str {
    if let Some(r) = run.root() {
        if !blank(&r.fields.answer) {
            return r.fields.answer.clone();
        }
    }
    let spans = &run.spans;
    let failed: HashSet<&SpanId> = spans.iter().filter(|s| s.is_agent() && s.status_code == 2).map(|s| &s.span_id)
        .collect();
    let mut parent_of: HashMap<&SpanId, Option<&SpanId>> = HashMap::default();
    if !failed.is_empty() {
        for s in spans {
            parent_of.insert(&s.span_id, s.parent_id.as_ref());
        }
    }
    let inside_failed = |sid: &SpanId| -> bool {
        let mut at = Some(sid);
        for _ in 0..parent_of.len() + 1 {
            let Some(id) = at else { return false };
            if failed.contains(id) {
                return true;
            }
            at = parent_of.get(id).copied().flatten();
        }
        false
    };
    for s in spans.iter().rev() {
        if blank(&s.fields.answer) {
            continue;
        }
        if failed.is_empty() || !inside_failed(&s.span_id) {
            return s.fields.answer.clone();
        }
    }
    Str::default()
}

/// The root's duration, else from the first start to the last end (of the times that are
/// set); None without them.
fn latency_ms(run: &Run) -> Option<f64> {
    if let Some(r) = run.root() {
        if r.end_ns != 0 && r.start_ns != 0 && r.end_ns >= r.start_ns {
            return Some((r.end_ns - r.start_ns) as f64 / 1e6);
        }
    }
    let first = run.spans.iter().map(|s| s.start_ns).filter(|&t| t != 0).min()?;
    let last = run.spans.iter().map(|s| s.end_ns).filter(|&t| t != 0).max()?;
    (last >= first).then(|| (last - first) as f64 / 1e6)
}

/// faultgate's scenario key: the root's explicit scenario, else its agent id, else "p-"
/// and 12 hex digits of the prompt's SHA-256 (a lone surrogate hashed as the
/// `surrogatepass` bytes it is held as).
fn scenario(run: &Run, prompt: &[u8]) -> Str {
    if let Some(r) = run.root() {
        for key in SCENARIO_ATTRS {
            if let Some(v) = truthy_str(attr(r, key)) {
                return v;
            }
        }
    }
    let digest = Sha256::digest(prompt);
    let mut out = b"p-".to_vec();
    for b in &digest[..6] {
        out.extend_from_slice(format!("{b:02x}").as_bytes());
    }
    out.into()
}

/// Finish reasons that say the model stopped to call tools.
const CALL_REASONS: [&str; 4] = ["tool_calls", "tool_call", "tool_use", "function_call"];

/// Whether the last model call of the run (the last span, in start order, with finish
/// reasons) stopped to call tools: a run that ends there, with no answer, was stopped by its
/// framework before the model saw the calls' results (LlamaIndex at `max_iterations`, whose
/// OpenLLMetry instrumentation records neither the exception nor a status).
fn ended_on_a_call(spans: &[std::sync::Arc<SpanRecord>]) -> bool {
    let Some(last) = spans.iter().rev().find(|s| !s.fields.finish_reasons.is_empty()) else { return false };
    last.fields.finish_reasons.iter().all(|r| CALL_REASONS.iter().any(|w| lower_equals(r, w.as_bytes())))
}

/// How Python's `sum()` adds the costs: 3.12 compensates rounding, 3.11 does not.
#[derive(Clone, Copy, Debug)]
pub struct Settings {
    pub float_sum: FloatSum,
}

/// Every fact of the run. Fails only where Python did: a token total past a double's
/// range (`float(total)` raised OverflowError).
pub fn compute(run: &Run, settings: Settings) -> Result<Facts> {
    let spans = &run.spans;
    let root = run.root();
    let steps = steps(run);
    let prompt: Str = match root.filter(|r| !blank(&r.fields.prompt)) {
        Some(r) => r.fields.prompt.clone(),
        None => spans.iter().find(|s| !blank(&s.fields.prompt)).map(|s| s.fields.prompt.clone()).unwrap_or_default(),
    };
    let scenario = scenario(run, &prompt);
    let answer = answer(run);
    // agent: the root's name attribute, else the first span's, else the root span's name
    let agent = root.and_then(|r| truthy_str(attr(r, AGENT_NAME)))
        .or_else(|| spans.iter().find_map(|s| truthy_str(attr(s, AGENT_NAME))))
        .unwrap_or_else(|| match root {
            Some(r) if !r.name.is_empty() => {
                let rest = strip(r.name.strip_prefix(b"invoke_agent ".as_slice()).unwrap_or(&r.name));
                if rest.is_empty() { (*b"agent").into() } else { rest.into() }
            }
            _ => (*b"agent").into(),
        });
    let agent_version = root.and_then(|r| truthy_str(attr(r, AGENT_VERSION)).or_else(|| truthy_str(attr(r, SERVICE_VERSION))))
        .unwrap_or_default();
    let termination: Str = match root.and_then(|r| attr(r, TERMINATION)) {
        Some(v) => v.py_str().into_owned().into(),
        None if blank(&answer) && ended_on_a_call(spans) => ENDED_ON_A_CALL.as_bytes().into(),
        None => Str::default(),
    };

    // usage, cost, what was not captured
    let mut tokens = TokenSum::default();
    let mut counted = false;
    let mut costs = Vec::new();
    let mut missing = 0u32;
    let (mut no_output, mut any_tool) = (0usize, false);
    for s in spans {
        missing |= s.fields.missing;
        if s.fields.missing & MISSING_OUTPUT != 0 {
            no_output += 1;
        }
        any_tool |= s.fields.tool.is_some();
        for key in [USAGE_IN, USAGE_OUT] {
            if let Some(f) = attr(s, key).and_then(|v| finite(&v)) {
                tokens.add(f);
                counted = true;
            }
        }
        if let Some(f) = attr(s, COST).and_then(|v| finite(&v)) {
            costs.push(f);
        }
    }
    let usage_tokens = if counted { Some(tokens.float()?) } else { None };
    let cost_usd = if costs.is_empty() { None } else { Some(py_sum(&costs, settings.float_sum)) };
    let has_content = !prompt.is_empty() || !answer.is_empty()
        || steps.iter().any(|st| !st.arguments.is_empty() || !st.result.is_empty());
    // a run its root says the framework ended (a step limit) did not answer: nothing unseen
    let ended = !termination.is_empty();
    let answer_not_captured = if blank(&answer) && !ended && missing & MISSING_OUTPUT != 0 {
        format!("the final answer was not captured (no output messages on {no_output} model span(s))")
    } else {
        String::new()
    };
    let calls_not_captured = if missing & MISSING_OUTPUT != 0 && !any_tool {
        format!("tool calls not captured (no tool spans, and no output messages on {no_output} model span(s))")
    } else {
        String::new()
    };
    let last_end_ns = spans.iter().map(|s| s.end_ns).max().unwrap_or(0);
    Ok(Facts {
        steps,
        prompt,
        answer,
        agent,
        agent_version,
        scenario,
        termination,
        usage_tokens,
        latency_ms: latency_ms(run),
        cost_usd,
        missing,
        has_content,
        answer_not_captured,
        calls_not_captured,
        last_end_ns,
    })
}

/// `Run.steps_not_captured(flags)`: why some steps' arguments or results (`flags`) cannot
/// be read; "" when all can.
pub fn steps_not_captured(steps: &[Step], flags: u32) -> String {
    let idx: Vec<usize> = steps.iter().filter(|st| st.missing & flags != 0).map(|st| st.index).collect();
    if idx.is_empty() {
        return String::new();
    }
    let what: Vec<&str> = MISSING_WHAT.iter().filter(|(f, _)| f & flags != 0).map(|(_, w)| *w).collect();
    let shown: Vec<String> = idx.iter().take(5).map(|i| i.to_string()).collect();
    let more = if idx.len() > 5 { format!(" and {} more", idx.len() - 5) } else { String::new() };
    format!("{} not captured on step(s) {}{}", what.join(" or "), shown.join(", "), more)
}

/// Text as a `Cow`, for callers that build on it.
pub fn text(t: &Str) -> Cow<'_, [u8]> {
    Cow::Borrowed(&t[..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::record::{Fields, ToolExecution};
    use crate::model::run::Completion;
    use crate::model::value::Value;
    use crate::testing::{agent, run_of, s, simple_run, span, tool, trace_id};
    use std::sync::Arc;

    fn bare(id: u64, start: i128, fields: Fields) -> SpanRecord {
        SpanRecord { trace_id: crate::model::ids::TraceId::Hex(0, 1), span_id: SpanId::Hex(id), parent_id: None,
                     name: (*b"chat").into(), start_ns: start, end_ns: 0, status_code: 0,
                     status_message: Str::default(), fields }
    }

    fn facts_of(spans: Vec<SpanRecord>) -> Facts {
        let run = Run::new(spans[0].trace_id.clone(), spans.into_iter().map(Arc::new).collect(), None,
                           Completion::Complete);
        compute(&run, Settings { float_sum: FloatSum::Plain }).unwrap()
    }

    #[test]
    fn a_run_with_tool_spans_has_a_step_per_tool_span_in_start_order() {
        let (_, f) = run_of(simple_run(&[("a", "{}", "1"), ("b", "[]", "2")], "q?", "done", vec![]));
        let steps: Vec<(usize, &[u8], &[u8])> = f.steps.iter().map(|s| (s.index, &*s.tool, &*s.result)).collect();
        assert_eq!(steps, vec![(1, &b"a"[..], &b"1"[..]), (2, &b"b"[..], &b"2"[..])]);
        assert_eq!((&*f.prompt, &*f.answer, &*f.agent), (&b"q?"[..], &b"done"[..], &b"agent"[..]));
        assert!(f.has_content && f.answer_not_captured.is_empty());
    }

    #[test]
    fn a_chat_only_run_orders_the_calls_of_spans_sharing_start_and_id_by_their_place() {
        let call = |id: &str, name: &str, args: &str| crate::model::record::ToolCall {
            call_id: id.as_bytes().into(), name: name.as_bytes().into(), arguments: args.as_bytes().into() };
        let a = bare(7, 5, Fields { calls: vec![call("1", "x", "a0"), call("2", "x", "a1")], ..Default::default() });
        let b = bare(7, 5, Fields { calls: vec![call("3", "y", "b0")], ..Default::default() });
        let f = facts_of(vec![a, b]);
        let args: Vec<&[u8]> = f.steps.iter().map(|s| &*s.arguments).collect();
        assert_eq!(args, vec![&b"a0"[..], b"b0", b"a1"]);
    }

    #[test]
    fn a_measure_too_large_for_any_machine_integer_is_added_as_python_adds_it() {
        let spans = (0..3).map(|i| bare(i + 1, i128::from(i), Fields {
            attrs: vec![((*b"gen_ai.usage.input_tokens").into(), Value::Float(1e300))].into(), ..Default::default() }))
            .collect();
        // float(int(1e300) * 3): the exact sum, rounded once
        assert_eq!(facts_of(spans).usage_tokens, Some(3e300));
    }

    #[test]
    fn a_tool_span_without_content_takes_its_arguments_and_result_from_the_messages() {
        let mut spans = crate::testing::tool_loop(true, "ok", true, 1, "{}");
        let tool_span = &mut spans[2];
        tool_span.fields.tool = Some(ToolExecution { arguments: Str::default(), result: Str::default(),
                                                      ..tool_span.fields.tool.clone().unwrap() });
        tool_span.fields.missing = MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT;
        let (_, f) = run_of(spans);
        assert_eq!(&*f.steps[0].arguments, br#"{"city": "Paris"}"#);
        assert_eq!(f.steps[0].missing, MISSING_TOOL_RESULT); // no response carries call_0
        assert_eq!(steps_not_captured(&f.steps, MISSING_TOOL_RESULT), "tool results not captured on step(s) 1");
    }

    #[test]
    fn what_a_failed_nested_agent_said_last_is_not_the_answer() {
        let t = trace_id();
        let root = agent(&t, "boss", "q", "", None, 0.0, vec![]);
        let helper = agent(&t, "helper", "", "", Some(&root.span_id), 1.0, vec![]);
        let mut helper_failed = helper.clone();
        helper_failed.status_code = 2;
        let said = span(&t, "chat", Some(&root.span_id), 0.5, 0, "", vec![
            ("gen_ai.operation.name", s("chat")),
            ("gen_ai.output.messages", crate::testing::messages("assistant", crate::testing::text_part("first")))]);
        let inner = span(&t, "chat", Some(&helper.span_id), 2.0, 0, "", vec![
            ("gen_ai.operation.name", s("chat")),
            ("gen_ai.output.messages", crate::testing::messages("assistant", crate::testing::text_part("Max turns")))]);
        let (_, f) = run_of(vec![root, helper_failed, said, inner]);
        assert_eq!(&*f.answer, b"first");
    }

    #[test]
    fn the_scenario_key_is_faultgates_prompt_hash_when_nothing_names_it() {
        let (_, f) = run_of(simple_run(&[], "Which firm is the external auditor of Aster Labs?", "x", vec![]));
        // hashlib.sha256(prompt).hexdigest()[:12]
        let digest = Sha256::digest(b"Which firm is the external auditor of Aster Labs?");
        let want: String = digest[..6].iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(f.scenario, format!("p-{want}").into_bytes().into());
        let (_, named) = run_of(simple_run(&[], "q", "x", vec![("faultgate.scenario", s("s-1"))]));
        assert_eq!(&*named.scenario, b"s-1");
    }

    #[test]
    fn latency_is_the_roots_duration_and_versions_fall_back_to_the_service() {
        let t = trace_id();
        let root = agent(&t, "a", "", "", None, 0.0, vec![("service.version", s("2.1"))]);
        let child = tool(&t, &root.span_id, "x", "{}", "y", 1.0, 0);
        let (_, f) = run_of(vec![root, child]);
        assert_eq!(f.latency_ms, Some(100.0));
        assert_eq!(&*f.agent_version, b"2.1");
        assert_eq!(f.last_end_ns, 1_700_000_001_100_000_000);
    }
}
