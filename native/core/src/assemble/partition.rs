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
//! defect 12). `steps` counts the walk's steps, for the tests that hold it linear.
//!
//! The trace is whatever holds its spans in slots (`Spans`): the table's, or a test's.

use crate::model::ids::IdMap;

/// A trace's spans as the partition reads them, by slot.
pub trait Spans {
    type Error;
    /// The slots that hold a span, in arrival order.
    fn live(&self) -> Vec<u32>;
    /// One more than the largest slot.
    fn slot_count(&self) -> usize;
    /// The slot of the span's parent, when the trace holds it.
    fn parent_slot(&self, s: u32) -> Option<u32>;
    /// Whether the span names a parent at all (held or not).
    fn names_parent(&self, s: u32) -> bool;
    fn agent(&self, s: u32) -> bool;
    /// Whether the span has an end time (`bool(end_ns)`).
    fn has_end(&self, s: u32) -> Result<bool, Self::Error>;
    /// `root.start <= s.start and (s.end or s.start) <= root.end`, evaluated in that order.
    fn within(&self, root: u32, s: u32) -> Result<bool, Self::Error>;
}

#[derive(Debug, PartialEq, Eq)]
pub struct Partition {
    /// (root slot, member slots), in the order each run's first member was seen
    pub runs: Vec<(u32, Vec<u32>)>,
    pub unattached: Vec<u32>,
    pub outside: Vec<u32>,
}

/// `steps` is increased by the number of steps the walk took.
pub fn partition<T: Spans>(t: &T, steps: &mut u64) -> Result<Partition, T::Error> {
    let live = t.live();
    let n = t.slot_count();
    let mut parent: Vec<Option<u32>> = vec![None; n];
    let mut has_agent = false;
    for &s in &live {
        has_agent |= t.agent(s);
        parent[s as usize] = t.parent_slot(s);
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
            let agent = t.agent(node);
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
        } else if t.names_parent(end) && parent[end as usize].is_none() {
            out.unattached.push(s); // the chain breaks below any agent: its root may come
        } else if has_agent {
            out.outside.push(s);
        } else {
            join(&mut out, end, s);
        }
    }
    if !out.unattached.is_empty() && has_agent {
        above_runs(&parent, &mut out, steps);
    }
    if !out.unattached.is_empty() && has_agent && out.runs.len() == 1 {
        adopt(t, &mut out)?;
    }
    Ok(out)
}

/// A span above a run's root whose own chain breaks (the trace's root span was never sent:
/// the OpenAI Agents SDK for JavaScript ends no trace whose run threw, MaxTurnsExceededError
/// say, and OpenInference's processor then never ends the root span) is above every agent,
/// as a span around the agent is: outside, not an orphan run of its own.
fn above_runs(parent: &[Option<u32>], out: &mut Partition, steps: &mut u64) {
    let mut above = vec![false; parent.len()];
    for &(root, _) in &out.runs {
        let mut cur = parent[root as usize];
        while let Some(c) = cur {
            *steps += 1;
            if above[c as usize] {
                break; // walked already (from another run, or a parent loop)
            }
            above[c as usize] = true;
            cur = parent[c as usize];
        }
    }
    let (up, rest): (Vec<u32>, Vec<u32>) = out.unattached.iter().partition(|&&s| above[s as usize]);
    out.outside.extend(up);
    out.unattached = rest;
}

/// A fragment whose parent is missing from the export (a span the exporter dropped or
/// never sent), in a trace with exactly one agent run whose time window holds it, is part
/// of that run, not an orphan run beside it.
fn adopt<T: Spans>(t: &T, out: &mut Partition) -> Result<(), T::Error> {
    let root = out.runs[0].0;
    if !t.has_end(root)? {
        return Ok(());
    }
    let mut inside = Vec::new();
    let mut rest = Vec::new();
    for &s in &out.unattached {
        if t.within(root, s)? {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Spans by slot: (parent slot or a missing one, names a parent, agent, start, end).
    struct Trace(Vec<(Option<u32>, bool, bool, i128, i128)>);

    impl Spans for Trace {
        type Error = ();
        fn live(&self) -> Vec<u32> {
            (0..self.0.len() as u32).collect()
        }
        fn slot_count(&self) -> usize {
            self.0.len()
        }
        fn parent_slot(&self, s: u32) -> Option<u32> {
            self.0[s as usize].0
        }
        fn names_parent(&self, s: u32) -> bool {
            self.0[s as usize].1
        }
        fn agent(&self, s: u32) -> bool {
            self.0[s as usize].2
        }
        fn has_end(&self, s: u32) -> Result<bool, ()> {
            Ok(self.0[s as usize].4 != 0)
        }
        fn within(&self, root: u32, s: u32) -> Result<bool, ()> {
            let (r, x) = (&self.0[root as usize], &self.0[s as usize]);
            let last = if x.4 != 0 { x.4 } else { x.3 };
            Ok(r.3 <= x.3 && last <= r.4)
        }
    }

    fn part(t: &Trace) -> Partition {
        partition(t, &mut 0).unwrap()
    }

    #[test]
    fn a_run_is_the_subtree_under_the_top_most_agent() {
        // 0 agent, 1 nested agent under it, 2 a tool under 1, 3 a span above the agent
        let t = Trace(vec![(Some(3), true, true, 1, 9), (Some(0), true, true, 2, 3), (Some(1), true, false, 2, 3),
                           (None, false, false, 0, 10)]);
        assert_eq!(part(&t), Partition { runs: vec![(0, vec![0, 1, 2])], unattached: vec![], outside: vec![3] });
    }

    #[test]
    fn a_trace_without_agents_is_one_run_under_its_parentless_span() {
        let t = Trace(vec![(Some(1), true, false, 2, 3), (None, false, false, 1, 9)]);
        assert_eq!(part(&t), Partition { runs: vec![(1, vec![0, 1])], unattached: vec![], outside: vec![] });
    }

    #[test]
    fn a_span_whose_parent_has_not_arrived_waits_unless_the_one_runs_window_holds_it() {
        // 1's parent is missing; its times fall inside the agent's window: adopted
        let t = Trace(vec![(None, false, true, 1, 9), (None, true, false, 2, 3), (None, true, false, 20, 30)]);
        assert_eq!(part(&t), Partition { runs: vec![(0, vec![0, 1])], unattached: vec![2], outside: vec![] });
    }

    #[test]
    fn a_span_above_a_runs_root_whose_own_parent_never_came_is_outside_the_run() {
        // 2 names a parent never sent; 1 (its child) is the parent of the agent 0; 3 is a
        // fragment whose parent never came, not above any run: it waits
        let t = Trace(vec![(Some(1), true, true, 5, 6), (Some(2), true, false, 1, 9), (None, true, false, 0, 10),
                           (None, true, false, 20, 30)]);
        assert_eq!(part(&t), Partition { runs: vec![(0, vec![0])], unattached: vec![3], outside: vec![1, 2] });
    }

    #[test]
    fn a_parent_loop_ends_the_chain_and_the_walk_stays_linear() {
        let t = Trace(vec![(Some(1), true, false, 0, 0), (Some(0), true, false, 0, 0)]);
        let p = part(&t);
        assert_eq!(p.runs.len() + p.unattached.len() + p.outside.len(), 1);
        // a chain of 10,000 spans: every span walked once
        let chain = Trace((0..10_000u32).map(|i| (i.checked_sub(1), i > 0, i == 0, 1, 9)).collect());
        let mut steps = 0;
        let p = partition(&chain, &mut steps).unwrap();
        assert_eq!(p.runs[0].1.len(), 10_000);
        assert!(steps < 20_001, "{steps}");
    }
}
