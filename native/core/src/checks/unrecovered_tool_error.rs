//! unrecovered_tool_error (checks/unrecovered_tool_error.py): a tool call failed and the
//! same tool (or a declared alternative) never succeeded afterwards; else a span whose
//! status says error with no later successful tool span.

use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::{context_overflow, Judged, Outcome};
use crate::error::Result;
use crate::model::ids::SpanId;
use crate::model::reason::Reason;
use crate::model::record::{SpanRecord, MISSING_TOOL_RESULT};
use crate::pyfmt::strs::lower_contains;
use crate::read::conventions::LIMIT_ERRORS;
use crate::run::facts::error_type;

pub const ID: &str = "unrecovered_tool_error";

/// A policy's interchangeable tools: a tool -> the tools whose success recovers it.
pub type Alternatives = HashMap<Vec<u8>, Vec<Vec<u8>>>;

/// The latest index `last` holds for the tool or any of its alternatives; -1 for none.
fn latest(alternatives: &Alternatives, last: &HashMap<&[u8], i64>, tool: &[u8]) -> i64 {
    let mut best = last.get(tool).copied().unwrap_or(-1);
    if let Some(alts) = alternatives.get(tool) {
        for t in alts {
            best = best.max(last.get(&t[..]).copied().unwrap_or(-1));
        }
    }
    best
}

pub fn finish(j: &Judged<'_>, alternatives: &Alternatives) -> Result<Outcome> {
    let steps = &j.facts.steps;
    let failed = j.errors()?;
    // A failed step is recovered when a later call to its tool succeeded, that is when the
    // tool's last successful step comes after it: one pass instead of a scan of every
    // later step for each failure.
    let mut last_ok: HashMap<&[u8], i64> = HashMap::default();
    for (k, st) in steps.iter().enumerate() {
        if failed[k].is_none() {
            last_ok.insert(&st.tool, k as i64);
        }
    }
    for (i, st) in steps.iter().enumerate() {
        if let Some(err) = &failed[i] {
            if latest(alternatives, &last_ok, &st.tool) < i as i64 {
                let mut head = b"Tool '".to_vec();
                head.extend_from_slice(&st.tool);
                head.extend_from_slice(format!("' failed at step {} (", st.index).as_bytes());
                let mut tail = b") and no subsequent call to '".to_vec();
                tail.extend_from_slice(&st.tool);
                tail.extend_from_slice(b"' succeeded.");
                let mut r = Reason::text(head);
                r.push_reason(err).push_text(&tail);
                return Ok(Outcome::fired(r));
            }
        }
    }
    let spans = &j.run.spans;
    let errors: Vec<(bool, Option<crate::model::record::Str>)> =
        spans.iter().map(|s| (s.status_code == 2, error_type(s))).collect();
    let failing: Vec<bool> = spans.iter().zip(&errors)
        .map(|(s, (status, t))| (*status || t.is_some()) && !limit_failure(s)).collect();
    if !failing.iter().any(|&f| f) {
        return Ok(clean(j));
    }
    // recovered: a later span that did not fail ran tool calls that all succeeded
    let mut ran_ok: HashSet<&SpanId> = steps.iter().map(|st| &st.span_id).collect();
    for (st, f) in steps.iter().zip(failed) {
        if f.is_some() {
            ran_ok.remove(&st.span_id);
        }
    }
    let mut last_good = -1i64;
    // A tool span that failed by its status alone is made good only by a later successful
    // call of the same tool (or a declared alternative): another tool working afterwards
    // leaves the call it failed undone.
    let mut last_good_of: HashMap<&[u8], i64> = HashMap::default();
    for (k, s) in spans.iter().enumerate() {
        if failing[k] || !ran_ok.contains(&s.span_id) {
            continue;
        }
        last_good = k as i64;
        if let Some(t) = &s.fields.tool {
            last_good_of.insert(&t.name, k as i64);
        }
    }
    for (i, s) in spans.iter().enumerate() {
        if !failing[i] {
            continue;
        }
        let good = match &s.fields.tool {
            None => last_good,
            Some(t) => latest(alternatives, &last_good_of, &t.name),
        };
        if good < i as i64 {
            let mut reason = format!("Unrecovered span error at span {} of {}: ", i + 1, spans.len()).into_bytes();
            if errors[i].0 {
                reason.extend_from_slice(b"Span status error: Code 2");
            } else if let Some(t) = &errors[i].1 {
                reason.extend_from_slice(b"Span error: ");
                reason.extend_from_slice(t);
            }
            return Ok(Outcome::fired(Reason::text(reason)));
        }
    }
    Ok(clean(j))
}

/// What a framework's error says when its own limit ended the run: a step or model-call
/// budget (read/conventions.rs's LIMIT_ERRORS: LlamaIndex's `Max iterations of 12
/// reached!`), or the model's output cut at its token limit (Strands Agents'
/// `MaxTokensReachedException`: `Model stopped generating due to maximum token limit`),
/// lowercase.
const CUTOFF_ERRORS: [&str; 1] = ["maximum token limit"];

/// A span other than a tool's that failed with its framework's own limit (the step budget:
/// search_loop's finding; the token limit or context window: context_overflow's): the run
/// stopped, no tool failed. faultgate 0.4.1 counts it as an unrecovered error
/// (PARITY_DEVIATIONS.md).
fn limit_failure(s: &SpanRecord) -> bool {
    if s.fields.tool.is_some() || s.status_code != 2 {
        return false;
    }
    let m = &s.status_message;
    LIMIT_ERRORS.iter().chain(CUTOFF_ERRORS.iter()).any(|w| lower_contains(m, w.as_bytes()))
        || context_overflow::search(m).is_some()
}

/// An error said only in a result's text is invisible when results were not recorded.
fn clean(j: &Judged<'_>) -> Outcome {
    let gap = j.not_captured(MISSING_TOOL_RESULT);
    if gap.is_empty() {
        Outcome::passed("no unrecovered tool errors")
    } else {
        Outcome::undecided(&gap)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{agent, run_of, said, simple_run, span, trace_id};

    fn on(tools: &[(&str, &str, &str)], alternatives: &Alternatives) -> (bool, bool, String) {
        let (run, facts) = run_of(simple_run(tools, "question?", "answer.", vec![]));
        said(&finish(&Judged::new(&run, &facts), alternatives).unwrap())
    }

    #[test]
    fn a_tool_error_followed_by_a_success_of_the_same_tool_is_recovered() {
        assert_eq!(on(&[("pay", "{}", "Error: card declined"), ("pay", "{}", r#"{"ok": true}"#)], &Alternatives::default()),
                   (false, false, "no unrecovered tool errors".into()));
    }

    #[test]
    fn a_tool_error_never_followed_by_a_success_is_unrecovered() {
        let (fired, _, reason) = on(&[("pay", "{}", r#"{"error": "declined"}"#), ("notify", "{}", "sent")],
                                    &Alternatives::default());
        assert!(fired);
        assert_eq!(reason, "Tool 'pay' failed at step 1 (JSON top-level error: declined) and no subsequent call to \
                            'pay' succeeded.");
    }

    #[test]
    fn a_declared_alternative_that_succeeded_recovers_the_failure() {
        let mut alts = Alternatives::default();
        alts.insert(b"pay".to_vec(), vec![b"pay_later".to_vec()]);
        assert!(!on(&[("pay", "{}", "Error: declined"), ("pay_later", "{}", "ok")], &alts).0);
    }

    #[test]
    fn a_span_status_error_with_no_later_successful_tool_span_is_unrecovered() {
        let t = trace_id();
        let root = agent(&t, "agent", "", "done", None, 0.0, vec![]);
        let chat = span(&t, "chat", Some(&root.span_id), 1.0, 2, "upstream 500", vec![]);
        let (run, facts) = run_of(vec![root, chat]);
        assert_eq!(said(&finish(&Judged::new(&run, &facts), &Alternatives::default()).unwrap()),
                   (true, false, "Unrecovered span error at span 2 of 2: Span status error: Code 2".into()));
    }
}
