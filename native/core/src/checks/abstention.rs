//! abstention (checks/abstention.py): the final answer says, in so many words, that the
//! information could not be found. The phrases, and why they are these, are the Python
//! module's docstring; the pattern is faultgate's, matched as Python's `re` matches it
//! (pattern.rs).

use std::sync::LazyLock;

use super::pattern::{PyPattern, S, W};
use super::{Judged, Outcome};
use crate::pyfmt::strs::{repr_string, strip};

pub const ID: &str = "abstention";

const INABILITY: &str = "couldn.t|could not|cannot|can.t|unable to|not able to|wasn.t able to|was not able to\
                         |did not|didn.t|failed to";

/// faultgate's ABSTAIN, with re.I:
/// `\b(?:INABILITY)\s+(?:\w+\s+){0,2}?(?:find|locate|retrieve|identify|determine|look\s?up|discover)\b`
/// `|\bno (?:matching |relevant )?(?:document|information|record|result|source|data)s?\b`
/// `|\b(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\b`
/// `|\bnot found\b`
/// `|\b(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\b`
static ABSTAIN: LazyLock<PyPattern> = LazyLock::new(|| {
    let finding = format!("find|locate|retrieve|identify|determine|look[{S}]?up|discover");
    PyPattern::new(&format!(
        "(?:^|[^{W}])(\
         (?:{INABILITY})[{S}]+(?:[{W}]+[{S}]+){{0,2}}?(?:{finding})\
         |no (?:matching |relevant )?(?:document|information|record|result|source|data)s?\
         |(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\
         |not found\
         |(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\
         )(?:$|[^{W}])"))
});

/// The phrase a text abstains with (`ABSTAIN.search(text).group(0)`), as a byte range.
pub fn search(t: &[u8]) -> Option<(usize, usize)> {
    ABSTAIN.search(t)
}

pub fn finish(j: &Judged<'_>) -> Outcome {
    let answer = strip(&j.facts.answer);
    if answer.is_empty() {
        if !j.facts.answer_not_captured.is_empty() {
            return Outcome::undecided(&j.facts.answer_not_captured);
        }
        return Outcome::passed("no answer");
    }
    match search(answer) {
        Some((a, b)) => Outcome::fired(format!("answer says {}", repr_string(&answer[a..b]))),
        None => Outcome::passed("answer does not abstain"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{run_of, said, simple_run, tool_loop};

    fn on(answer: &str) -> (bool, bool, String) {
        let (run, facts) = run_of(simple_run(&[], "question?", answer, vec![]));
        said(&finish(&Judged::new(&run, &facts)))
    }

    #[test]
    fn fires_on_an_inability_to_find() {
        assert_eq!(on("I couldn't locate the payment method."), (true, false, "answer says \"couldn't locate\"".into()));
        assert!(on("No matching records were found.").0);
        assert!(on("The information is not available.").0);
    }

    #[test]
    fn does_not_fire_on_a_refusal_or_a_policy_reminder() {
        assert_eq!(on("I cannot modify the order again, per policy."), (false, false, "answer does not abstain".into()));
        assert_eq!(on("   "), (false, false, "no answer".into()));
    }

    #[test]
    fn a_word_runs_on_past_the_phrase_as_python_reads_a_word() {
        // `\b` after "found": a letter in any script continues the word
        assert!(!on("It was not foundé here").0);
        assert!(on("It was not found, sorry").0);
    }

    #[test]
    fn is_undecided_when_the_answer_was_not_captured() {
        let (run, facts) = run_of(tool_loop(false, "", true, 1, "{}"));
        assert_eq!(said(&finish(&Judged::new(&run, &facts))), (false, true,
            "undecided: the final answer was not captured (no output messages on 2 model span(s))".into()));
    }
}
