//! search_loop (checks/search_loop.py): the run ended with no answer at its step budget,
//! and most tool calls came back empty.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyString;
use rustc_hash::FxHashMap as HashMap;

use super::outcome::Outcomes;
use super::{pattern, signals, text};
use crate::run::record::MISSING_TOOL_RESULT;
use crate::run::steps::StepsView;

const STEP_CAP: usize = 12;
const EMPTY_SHARE: f64 = 0.5;
const STEP_CAP_WORDS: [&str; 6] = ["step cap", "step limit", "max steps", "max_steps", "max iterations", "iteration limit"];

pub fn finish(py: Python<'_>, run: &Bound<'_, PyAny>, out: &Outcomes) -> PyResult<PyObject> {
    let view = StepsView::of(run)?;
    let steps = &view.get().items;
    let answer = run.getattr(intern!(py, "answer"))?.downcast_into::<PyString>()?;
    if !text::strip(text::read(&answer)?.bytes()).is_empty() {
        return out.passed(py, "answered");
    }
    if steps.is_empty() {
        return out.passed(py, "no tool calls");
    }
    let termination = run.getattr(intern!(py, "termination"))?.downcast_into::<PyString>()?;
    let termination = text::read(&termination)?;
    let capped = STEP_CAP_WORDS.iter().any(|w| pattern::lower_contains(termination.bytes(), w.as_bytes()))
        || steps.len() >= STEP_CAP;
    // a looping run repeats its results: each distinct one is decoded once
    let results = steps.iter().map(|st| text::read(st.result.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let mut known: HashMap<&[u8], bool> = HashMap::default();
    let (mut empties, mut unseen) = (0usize, 0usize);
    for (st, r) in steps.iter().zip(&results) {
        if st.missing & MISSING_TOOL_RESULT != 0 {
            unseen += 1;
            continue;
        }
        let e = match known.get(r.bytes()) {
            Some(&e) => e,
            None => {
                let e = signals::empty_result(py, r.bytes())?;
                known.insert(r.bytes(), e);
                e
            }
        };
        empties += e as usize;
    }
    let n = steps.len() as f64;
    let empty = empties as f64 / n;
    if capped {
        // at the cap, the verdict turns on an answer and results the run may not have
        // recorded; results it did not record decide nothing when, empty or not, they
        // cannot move the share across the line (the last call of a run cut off by its
        // budget, whose result no later message carries)
        let mut gap = run.getattr(intern!(py, "answer_not_captured"))?.extract::<String>()?;
        if gap.is_empty() && unseen > 0 {
            let at_most = empty + unseen as f64 / n;
            if empty < EMPTY_SHARE && EMPTY_SHARE <= at_most {
                gap = view.get().not_captured(MISSING_TOOL_RESULT);
            }
        }
        if !gap.is_empty() {
            return out.undecided(py, gap);
        }
    }
    // {empty:.0%}: the share times 100 in doubles, rounded half to even, as Python formats it
    let reason = format!("no answer, {} steps{}, {:.0}% empty results", steps.len(), if capped { " (cap)" } else { "" },
                         empty * 100.0);
    if capped && empty >= EMPTY_SHARE {
        return out.fired(py, &PyString::new(py, &reason));
    }
    out.passed(py, reason)
}
