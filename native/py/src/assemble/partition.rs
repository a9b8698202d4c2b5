//! Which run each span of a trace belongs to, from the parent links known so far.
//!
//! A run is the subtree under a top-most `invoke_agent` span; a nested `invoke_agent` is a
//! sub-agent inside its parent's run. A trace with no `invoke_agent` at all is one run under
//! its parentless span, as faultgate treats it. A span whose chain of parents breaks at a
//! span not seen yet is *unattached*: its root may still arrive. A span above every agent
//! (an HTTP server span around the agent, say) belongs to no run.
//!
//! Work is linear in the trace: each span's answer is built from its parent's, once (a walk
//! from every span cost the depth each: 50 million steps for a 9,999-span chain; issue 9,
//! defect 12). `steps` counts the walk's steps, for the test that holds it linear.

use super::ids::Time;
use faultgate_core::model::ids::IdMap;
use super::table::Trace;
use pyo3::prelude::*;

pub struct Partition {
    /// (root slot, member slots), in the order each run's first member was seen
    pub runs: Vec<(u32, Vec<u32>)>,
    pub unattached: Vec<u32>,
    pub outside: Vec<u32>,
}

/// `steps` is increased by the number of steps the walk took.
pub fn partition(py: Python<'_>, t: &Trace, steps: &mut u64) -> PyResult<Partition> {
    let live: Vec<u32> = t.live_slots().collect();
    let n = t.slot_count();
    let mut parent: Vec<Option<u32>> = vec![None; n];
    let mut has_agent = false;
    for &s in &live {
        let span = t.span(s);
        has_agent |= span.agent;
        parent[s as usize] = span.parent.as_ref().and_then(|p| t.slot_of(p));
    }
    // per slot: (its top-most agent ancestor or itself, none when there is none; the
    // top-most span of its chain)
    let mut top: Vec<Option<(Option<u32>, u32)>> = vec![None; n];
    let mut on_path: Vec<u32> = vec![0; n]; // the walk that last put a slot on its path (1-based)
    let mut path: Vec<u32> = Vec::new();
    let mut walk: u32 = 0;
    for &s in &live {
        if top[s as usize].is_some() {
            continue;
        }
        walk += 1;
        path.clear();
        let mut cur = Some(s);
        let mut above: Option<(Option<u32>, u32)> = None;
        while let Some(c) = cur {
            *steps += 1;
            if let Some(known) = top[c as usize] {
                above = Some(known);
                break;
            }
            if on_path[c as usize] == walk {
                break; // a parent loop (malformed input): the chain ends at the span before it
            }
            path.push(c);
            on_path[c as usize] = walk;
            cur = parent[c as usize];
        }
        for &node in path.iter().rev() {
            let agent = t.span(node).agent;
            above = Some(match above {
                None => (if agent { Some(node) } else { None }, node),
                Some((a, end)) => (a.or(if agent { Some(node) } else { None }), end),
            });
            top[node as usize] = above;
        }
    }
    let mut out = Partition { runs: Vec::new(), unattached: Vec::new(), outside: Vec::new() };
    let mut run_of: IdMap<u32, usize> = IdMap::default();
    let mut join = |out: &mut Partition, root: u32, s: u32| {
        let at = *run_of.entry(root).or_insert_with(|| {
            out.runs.push((root, Vec::new()));
            out.runs.len() - 1
        });
        out.runs[at].1.push(s);
    };
    for &s in &live {
        let (agent, end) = top[s as usize].expect("every live slot was walked");
        if let Some(a) = agent {
            join(&mut out, a, s);
        } else if t.span(end).parent.is_some() && parent[end as usize].is_none() {
            out.unattached.push(s); // the chain breaks below any agent: its root may come
        } else if has_agent {
            out.outside.push(s);
        } else {
            join(&mut out, end, s);
        }
    }
    if !out.unattached.is_empty() && has_agent && out.runs.len() == 1 {
        adopt(py, t, &mut out)?;
    }
    Ok(out)
}

/// A fragment whose parent is missing from the export (a span the exporter dropped or
/// never sent), in a trace with exactly one agent run whose time window holds it, is part
/// of that run, not an orphan run beside it.
fn adopt(py: Python<'_>, t: &Trace, out: &mut Partition) -> PyResult<()> {
    let root = t.span(out.runs[0].0);
    if !root.end.truthy(py)? {
        return Ok(());
    }
    let mut inside = Vec::new();
    let mut rest = Vec::new();
    for &s in &out.unattached {
        let span = t.span(s);
        // evaluated as Python's `a <= b and (end or start) <= c` is, left to right
        let held = Time::le(py, &root.start, &span.start)? && {
            let last: &Time = if span.end.truthy(py)? { &span.end } else { &span.start };
            Time::le(py, last, &root.end)?
        };
        if held {
            inside.push(s);
        } else {
            rest.push(s);
        }
    }
    if !inside.is_empty() {
        out.runs[0].1.extend(inside);
        out.unattached = rest;
    }
    Ok(())
}
