//! repeated_call (checks/repeated_call.py): the same tool with the same arguments called
//! three times in a row of its own calls, with identical results: the agent repeated
//! itself without progress.

use pyo3::prelude::*;
use pyo3::types::PyString;
use rustc_hash::{FxHashMap, FxHashSet};

use super::outcome::Outcomes;
use super::signals::{self, CallKey};
use super::text;
use crate::run::record::{MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT};
use crate::run::steps::StepsView;

const MIN_REPEATS: usize = 3;

/// Tools with three calls that may share their arguments and their result. Only these can
/// fire, so only their steps need canonical arguments.
fn tools_that_may_repeat<'a>(py: Python<'_>, tools: &[&'a [u8]], args: &[&[u8]], squashed: &[Vec<u8>])
                             -> PyResult<FxHashSet<&'a [u8]>> {
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
            *counts.entry(signals::call_key(py, args[i])?).or_default() += 1;
        }
        if counts.contains_key(&CallKey::Unsure) || counts.values().any(|&n| n >= MIN_REPEATS) {
            out.insert(tool);
        }
    }
    Ok(out)
}

pub fn finish(py: Python<'_>, run: &Bound<'_, PyAny>, out: &Outcomes) -> PyResult<PyObject> {
    let view = StepsView::of(run)?;
    let all = &view.get().items;
    if all.len() < MIN_REPEATS {
        let gap = run.getattr(pyo3::intern!(py, "calls_not_captured"))?.extract::<String>()?;
        if !gap.is_empty() {
            return out.undecided(py, gap); // three calls may have been made, unseen
        }
        return out.passed(py, "fewer than 3 tool calls");
    }
    let tools_of = all.iter().map(|st| text::read(st.tool.bind(py))).collect::<PyResult<Vec<_>>>()?;
    // A step whose arguments or result were not recorded reads as "" and would repeat any
    // other such step: its tool is judged only when all its calls were recorded.
    let blind: FxHashSet<&[u8]> = all.iter().zip(&tools_of).filter(|(st, _)| st.missing != 0).map(|(_, t)| t.bytes())
        .collect();
    // Only a tool with three recorded calls can repeat: the others' results are never
    // folded, nor their arguments read.
    let mut calls: FxHashMap<&[u8], usize> = FxHashMap::default();
    for (i, t) in tools_of.iter().enumerate() {
        if !blind.contains(tools_of[i].bytes()) {
            *calls.entry(t.bytes()).or_default() += 1;
        }
    }
    if calls.values().all(|&n| n < MIN_REPEATS) && blind.is_empty() {
        return out.passed(py, "no repeated calls without progress");
    }
    let kept: Vec<usize> = (0..all.len())
        .filter(|&i| calls.get(tools_of[i].bytes()).is_some_and(|&n| n >= MIN_REPEATS)).collect();
    let tools: Vec<&[u8]> = kept.iter().map(|&i| tools_of[i].bytes()).collect();
    let args_of = kept.iter().map(|&i| text::read(all[i].arguments.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let args: Vec<&[u8]> = args_of.iter().map(|a| a.bytes()).collect();
    let results = kept.iter().map(|&i| text::read(all[i].result.bind(py))).collect::<PyResult<Vec<_>>>()?;
    let mut folded: FxHashMap<&[u8], Vec<u8>> = FxHashMap::default();
    let squashed: Vec<Vec<u8>> = results.iter()
        .map(|r| folded.entry(r.bytes()).or_insert_with(|| text::squash(r.bytes())).clone()).collect();
    // Only those tools are grouped: the other tools' groups hold no triple, so leaving
    // them out cannot change which group fires first.
    let may = tools_that_may_repeat(py, &tools, &args, &squashed)?;
    let mut canonical: FxHashMap<&[u8], Vec<u8>> = FxHashMap::default(); // one round trip per distinct text
    let mut order: Vec<(&[u8], Vec<u8>)> = Vec::new(); // groups in first-seen order, as a dict keeps them
    let mut same_call: FxHashMap<(&[u8], Vec<u8>), Vec<usize>> = FxHashMap::default();
    for i in 0..kept.len() {
        if !may.contains(tools[i]) {
            continue;
        }
        let a = match canonical.get(args[i]) {
            Some(a) => a.clone(),
            None => {
                let a = signals::canonical_arguments(py, args[i])?;
                canonical.insert(args[i], a.clone());
                a
            }
        };
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
                let tail = format!(" issued >= 3 times (steps {}, {}, {}) where all 3 responses are identical after \
                                    whitespace normalization.", all[kept[a]].index, all[kept[b]].index, all[kept[c]].index);
                let reason = signals::joined_reason(py, vec![
                    text::to_py(py, &head)?.into_any(),
                    signals::quoted(py, text::to_py(py, &key.1)?.as_any(), 60)?,
                    PyString::new(py, &tail).into_any(),
                ])?;
                return out.fired(py, &reason);
            }
        }
    }
    if !blind.is_empty() {
        let mut calls: FxHashMap<&[u8], usize> = FxHashMap::default();
        for t in &tools_of {
            *calls.entry(t.bytes()).or_default() += 1;
        }
        if blind.iter().any(|t| calls.get(t).copied().unwrap_or(0) >= MIN_REPEATS) {
            return out.undecided(py, view.get().not_captured(MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT));
        }
    }
    out.passed(py, "no repeated calls without progress")
}
