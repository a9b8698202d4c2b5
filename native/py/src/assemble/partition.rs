//! The core's partition (native/core/src/assemble/partition.rs) over the table's trace:
//! its spans' times compared as Python compares them when they are not plain ints.

use faultgate_core::assemble::partition::Spans;
pub use faultgate_core::assemble::partition::{partition as core_partition, Partition};
use pyo3::prelude::*;

use super::ids::Time;
use super::table::Trace;

/// A trace of the table, read by the partition, with the interpreter for odd times.
pub struct Held<'t, 'py> {
    pub py: Python<'py>,
    pub trace: &'t Trace,
}

impl Spans for Held<'_, '_> {
    type Error = PyErr;

    fn live(&self) -> Vec<u32> {
        self.trace.live_slots().collect()
    }

    fn slot_count(&self) -> usize {
        self.trace.slot_count()
    }

    fn parent_slot(&self, s: u32) -> Option<u32> {
        self.trace.span(s).parent.as_ref().and_then(|p| self.trace.slot_of(p))
    }

    fn names_parent(&self, s: u32) -> bool {
        self.trace.span(s).parent.is_some()
    }

    fn agent(&self, s: u32) -> bool {
        self.trace.span(s).agent
    }

    fn has_end(&self, s: u32) -> PyResult<bool> {
        self.trace.span(s).end.truthy(self.py)
    }

    fn within(&self, root: u32, s: u32) -> PyResult<bool> {
        let (root, span) = (self.trace.span(root), self.trace.span(s));
        // evaluated as Python's `a <= b and (end or start) <= c` is, left to right
        Ok(Time::le(self.py, &root.start, &span.start)? && {
            let last: &Time = if span.end.truthy(self.py)? { &span.end } else { &span.start };
            Time::le(self.py, last, &root.end)?
        })
    }
}

/// The runs of a trace of the table; `steps` is increased by the steps the walk took.
pub fn partition(py: Python<'_>, t: &Trace, steps: &mut u64) -> PyResult<Partition> {
    core_partition(&Held { py, trace: t }, steps)
}
