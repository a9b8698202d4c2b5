//! abstention (checks/abstention.py): the final answer says, in so many words, that the
//! information could not be found. The phrases, and why they are these, are the Python
//! module's docstring; the pattern is faultgate's, matched as Python's `re` matches it
//! (pattern.rs).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::PyString;

use super::outcome::Outcomes;
use super::pattern::{PyPattern, S, W};
use super::text;

const INABILITY: &str = "couldn.t|could not|cannot|can.t|unable to|not able to|wasn.t able to|was not able to\
                         |did not|didn.t|failed to";

/// faultgate's ABSTAIN, with re.I:
/// `\b(?:INABILITY)\s+(?:\w+\s+){0,2}?(?:find|locate|retrieve|identify|determine|look\s?up|discover)\b`
/// `|\bno (?:matching |relevant )?(?:document|information|record|result|source|data)s?\b`
/// `|\b(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\b`
/// `|\bnot found\b`
/// `|\b(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\b`
fn abstain() -> PyPattern {
    let finding = format!("find|locate|retrieve|identify|determine|look[{S}]?up|discover");
    PyPattern::new(&format!(
        "(?:^|[^{W}])(\
         (?:{INABILITY})[{S}]+(?:[{W}]+[{S}]+){{0,2}}?(?:{finding})\
         |no (?:matching |relevant )?(?:document|information|record|result|source|data)s?\
         |(?:information|answer|record|result|document|data)s? (?:(?:was|were|is|are) )?not (?:found|available)\
         |not found\
         |(?:don.t|do not) (?:know|have (?:that|this|any|enough|the) information)\
         )(?:$|[^{W}])"))
}

static ABSTAIN: GILOnceCell<PyPattern> = GILOnceCell::new();

/// The phrase a text abstains with (`ABSTAIN.search(text).group(0)`), as a byte range.
pub fn search(py: Python<'_>, t: &[u8]) -> PyResult<Option<(usize, usize)>> {
    ABSTAIN.get_or_init(py, abstain).search(py, t)
}

pub fn finish(py: Python<'_>, run: &Bound<'_, PyAny>, out: &Outcomes) -> PyResult<PyObject> {
    let answer = run.getattr(intern!(py, "answer"))?.downcast_into::<PyString>()?;
    let answer = text::read(&answer)?;
    let answer = text::strip(answer.bytes());
    if answer.is_empty() {
        let gap = run.getattr(intern!(py, "answer_not_captured"))?.extract::<String>()?;
        if !gap.is_empty() {
            return out.undecided(py, gap);
        }
        return out.passed(py, "no answer");
    }
    match search(py, answer)? {
        Some((a, b)) => {
            let reason = format!("answer says {}", text::repr(py, &answer[a..b])?);
            out.fired(py, &PyString::new(py, &reason))
        }
        None => out.passed(py, "answer does not abstain"),
    }
}
