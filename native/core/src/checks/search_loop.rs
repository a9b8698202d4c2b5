//! search_loop (checks/search_loop.py): the run ended with no answer at its step budget,
//! and most tool calls came back empty.

use rustc_hash::FxHashMap as HashMap;

use super::{signals, Judged, Outcome};
use crate::model::record::MISSING_TOOL_RESULT;
use crate::pyfmt::strs::{lower_contains, strip};

pub const ID: &str = "search_loop";

const STEP_CAP: usize = 12;
const EMPTY_SHARE: f64 = 0.5;
const STEP_CAP_WORDS: [&str; 6] = ["step cap", "step limit", "max steps", "max_steps", "max iterations", "iteration limit"];

pub fn finish(j: &Judged<'_>) -> Outcome {
    let steps = &j.facts.steps;
    if !strip(&j.facts.answer).is_empty() {
        return Outcome::passed("answered");
    }
    if steps.is_empty() {
        return Outcome::passed("no tool calls");
    }
    let termination = &j.facts.termination;
    let capped = STEP_CAP_WORDS.iter().any(|w| lower_contains(termination, w.as_bytes())) || steps.len() >= STEP_CAP;
    // a looping run repeats its results: each distinct one is decoded once
    let mut known: HashMap<&[u8], bool> = HashMap::default();
    let (mut empties, mut unseen) = (0usize, 0usize);
    for st in steps {
        if st.missing & MISSING_TOOL_RESULT != 0 {
            unseen += 1;
            continue;
        }
        let e = *known.entry(&st.result).or_insert_with(|| signals::empty_result(&st.result));
        empties += e as usize;
    }
    let n = steps.len() as f64;
    let empty = empties as f64 / n;
    if capped {
        // at the cap, the verdict turns on an answer and results the run may not have
        // recorded; results it did not record decide nothing when, empty or not, they
        // cannot move the share across the line (the last call of a run cut off by its
        // budget, whose result no later message carries)
        let mut gap = j.facts.answer_not_captured.clone();
        if gap.is_empty() && unseen > 0 {
            let at_most = empty + unseen as f64 / n;
            if empty < EMPTY_SHARE && EMPTY_SHARE <= at_most {
                gap = j.not_captured(MISSING_TOOL_RESULT);
            }
        }
        if !gap.is_empty() {
            return Outcome::undecided(&gap);
        }
    }
    // {empty:.0%}: the share times 100 in doubles, rounded half to even, as Python formats it
    let reason = format!("no answer, {} steps{}, {:.0}% empty results", steps.len(), if capped { " (cap)" } else { "" },
                         empty * 100.0);
    if capped && empty >= EMPTY_SHARE {
        return Outcome::fired(reason);
    }
    Outcome::passed(reason)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{run_of, s, said, simple_run};

    fn searches(n: usize, result: &str) -> Vec<(String, String, String)> {
        (0..n).map(|i| ("search".to_owned(), format!(r#"{{"q": {i}}}"#), result.to_owned())).collect()
    }

    fn outcome(tools: &[(String, String, String)], answer: &str, attrs: Vec<(&str, crate::model::value::Value<'static>)>)
        -> (bool, bool, String) {
        let t: Vec<(&str, &str, &str)> = tools.iter().map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str())).collect();
        let (run, facts) = run_of(simple_run(&t, "question?", answer, attrs));
        said(&finish(&Judged::new(&run, &facts)))
    }

    #[test]
    fn fires_with_no_answer_at_the_step_cap_and_mostly_empty_results() {
        assert_eq!(outcome(&searches(12, "[]"), "", vec![]),
                   (true, false, "no answer, 12 steps (cap), 100% empty results".into()));
    }

    #[test]
    fn catches_a_named_cap_below_twelve_steps() {
        let (fired, _, _) = outcome(&searches(4, r#"{"count": 0}"#), "", vec![("faultgate.termination", s("max_steps reached"))]);
        assert!(fired);
    }

    #[test]
    fn does_not_fire_on_an_answered_run() {
        assert_eq!(outcome(&searches(12, "[]"), "Paris", vec![]), (false, false, "answered".into()));
    }

    #[test]
    fn does_not_fire_below_the_cap_or_with_results() {
        let (fired, _, reason) = outcome(&searches(12, r#"{"items": [1]}"#), "", vec![]);
        assert!(!fired && reason == "no answer, 12 steps (cap), 0% empty results", "{reason}");
        assert_eq!(outcome(&searches(3, "[]"), "", vec![]).0, false);
    }
}
