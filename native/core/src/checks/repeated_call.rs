//! repeated_call (checks/repeated_call.py): the same tool with the same arguments called
//! three times in a row of its own calls, with identical results: the agent repeated
//! itself without progress.

use rustc_hash::{FxHashMap, FxHashSet};

use super::signals::{self, CallKey};
use super::{Judged, Outcome};
use crate::model::reason::Reason;
use crate::model::record::{MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT};
use crate::pyfmt::strs::squash;

pub const ID: &str = "repeated_call";

const MIN_REPEATS: usize = 3;

/// Tools with three calls that may share their arguments and their result. Only these can
/// fire, so only their steps need canonical arguments.
fn tools_that_may_repeat<'a>(tools: &[&'a [u8]], args: &[&[u8]], squashed: &[Vec<u8>]) -> FxHashSet<&'a [u8]> {
    let mut same_result: FxHashMap<(&[u8], &[u8]), Vec<usize>> = FxHashMap::default();
    for i in 0..tools.len() {
        same_result.entry((tools[i], &squashed[i])).or_default().push(i);
    }
    let mut out = FxHashSet::default();
    for ((tool, _), group) in same_result {
        if group.len() < MIN_REPEATS || out.contains(tool) {
            continue;
        }
        let mut counts: FxHashMap<CallKey, usize> = FxHashMap::default();
        for &i in &group {
            *counts.entry(signals::call_key(args[i])).or_default() += 1;
        }
        if counts.contains_key(&CallKey::Unsure) || counts.values().any(|&n| n >= MIN_REPEATS) {
            out.insert(tool);
        }
    }
    out
}

pub fn finish(j: &Judged<'_>) -> Outcome {
    let all = &j.facts.steps;
    if all.len() < MIN_REPEATS {
        if !j.facts.calls_not_captured.is_empty() {
            return Outcome::undecided(&j.facts.calls_not_captured); // three calls may have been made, unseen
        }
        return Outcome::passed("fewer than 3 tool calls");
    }
    let tools_of: Vec<&[u8]> = all.iter().map(|st| &*st.tool).collect();
    // A step whose arguments or result were not recorded reads as "" and would repeat any
    // other such step: its tool is judged only when all its calls were recorded.
    let blind: FxHashSet<&[u8]> = all.iter().zip(&tools_of).filter(|(st, _)| st.missing != 0).map(|(_, t)| *t).collect();
    // Only a tool with three recorded calls can repeat: the others' results are never
    // folded, nor their arguments read.
    let mut calls: FxHashMap<&[u8], usize> = FxHashMap::default();
    for t in &tools_of {
        if !blind.contains(t) {
            *calls.entry(t).or_default() += 1;
        }
    }
    if calls.values().all(|&n| n < MIN_REPEATS) && blind.is_empty() {
        return Outcome::passed("no repeated calls without progress");
    }
    let kept: Vec<usize> = (0..all.len()).filter(|&i| calls.get(tools_of[i]).is_some_and(|&n| n >= MIN_REPEATS)).collect();
    let tools: Vec<&[u8]> = kept.iter().map(|&i| tools_of[i]).collect();
    let args: Vec<&[u8]> = kept.iter().map(|&i| &*all[i].arguments).collect();
    let mut folded: FxHashMap<&[u8], Vec<u8>> = FxHashMap::default();
    let squashed: Vec<Vec<u8>> = kept.iter()
        .map(|&i| folded.entry(&all[i].result).or_insert_with(|| squash(&all[i].result)).clone()).collect();
    // Only those tools are grouped: the other tools' groups hold no triple, so leaving
    // them out cannot change which group fires first.
    let may = tools_that_may_repeat(&tools, &args, &squashed);
    let mut canonical: FxHashMap<&[u8], Vec<u8>> = FxHashMap::default(); // one round trip per distinct text
    let mut order: Vec<(&[u8], Vec<u8>)> = Vec::new(); // groups in first-seen order, as a dict keeps them
    let mut same_call: FxHashMap<(&[u8], Vec<u8>), Vec<usize>> = FxHashMap::default();
    for i in 0..kept.len() {
        if !may.contains(tools[i]) {
            continue;
        }
        let a = canonical.entry(args[i]).or_insert_with(|| signals::canonical_arguments(args[i])).clone();
        let key = (tools[i], a);
        if !same_call.contains_key(&key) {
            order.push(key.clone());
        }
        same_call.entry(key).or_default().push(i);
    }
    for key in &order {
        let idx = &same_call[key];
        for w in idx.windows(3) {
            let (a, b, c) = (w[0], w[1], w[2]);
            if squashed[a] == squashed[b] && squashed[b] == squashed[c] {
                // the arguments are masked whole before they are cut (model/reason.py)
                let mut head = b"Tool '".to_vec();
                head.extend_from_slice(key.0);
                head.extend_from_slice(b"' with arguments ");
                let mut r = Reason::text(head);
                r.push_quote(&key.1, 60);
                r.push_text(format!(" issued >= 3 times (steps {}, {}, {}) where all 3 responses are identical after \
                                     whitespace normalization.", all[kept[a]].index, all[kept[b]].index,
                                    all[kept[c]].index).as_bytes());
                return Outcome::fired(r);
            }
        }
    }
    if !blind.is_empty() {
        let mut calls: FxHashMap<&[u8], usize> = FxHashMap::default();
        for t in &tools_of {
            *calls.entry(t).or_default() += 1;
        }
        if blind.iter().any(|t| calls.get(t).copied().unwrap_or(0) >= MIN_REPEATS) {
            return Outcome::undecided(&j.not_captured(MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT));
        }
    }
    Outcome::passed("no repeated calls without progress")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{run_of, said, simple_run, tool_loop};

    fn on(tools: &[(&str, &str, &str)]) -> (bool, bool, String) {
        let (run, facts) = run_of(simple_run(tools, "question?", "answer.", vec![]));
        said(&finish(&Judged::new(&run, &facts)))
    }

    #[test]
    fn fires_on_three_identical_calls_with_identical_results_whatever_the_key_order() {
        let (fired, _, reason) = on(&[("get", r#"{"a": 1, "b": 2}"#, "x  y"), ("get", r#"{"b": 2, "a": 1}"#, "x y"),
                                      ("get", r#"{"a":1,"b":2}"#, " x y ")]);
        assert!(fired);
        assert_eq!(reason, "Tool 'get' with arguments {\"a\":1,\"b\":2} issued >= 3 times (steps 1, 2, 3) where all 3 \
                            responses are identical after whitespace normalization.");
    }

    #[test]
    fn does_not_fire_when_the_results_change() {
        assert!(!on(&[("get", r#"{"a": 1}"#, "page 1"), ("get", r#"{"a": 1}"#, "page 2"),
                      ("get", r#"{"a": 1}"#, "page 3")]).0);
        assert_eq!(on(&[("get", "{}", "x")]), (false, false, "fewer than 3 tool calls".into()));
    }

    #[test]
    fn the_arguments_are_quoted_whole_and_cut_at_sixty_characters() {
        let args = format!(r#"{{"q": "{}"}}"#, "z".repeat(100));
        let tools: Vec<(&str, &str, &str)> = (0..3).map(|_| ("get", args.as_str(), "same")).collect();
        let (run, facts) = run_of(simple_run(&tools, "q", "a", vec![]));
        let o = finish(&Judged::new(&run, &facts));
        assert!(o.fired && o.reason.quotes());
        assert!(String::from_utf8(o.reason.cut()).unwrap().contains(&format!("{{\"q\":\"{}", "z".repeat(53))));
    }

    #[test]
    fn repeated_calls_whose_results_were_not_recorded_are_undecided_not_a_repeat() {
        let (run, facts) = run_of(tool_loop(false, "x", true, 3, "{}"));
        let (fired, undecided, reason) = said(&finish(&Judged::new(&run, &facts)));
        assert!(!fired && undecided, "{reason}");
        let (run, facts) = run_of(tool_loop(true, "x", true, 3, r#"{"temp": 21}"#));
        assert!(finish(&Judged::new(&run, &facts)).fired);
    }
}
