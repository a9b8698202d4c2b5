//! The assembler's compiled half: the trace table (`table.rs`: per-trace, per-span
//! bookkeeping, partition into runs, the due index) and the decision cache (`decided.rs`),
//! driven by `assemble/assembler.py`.

pub mod ids;
pub mod partition;
pub mod table;

use faultgate_core::assemble::decided::{self, DecidedRun, DecisionCache as Cache, Kind};
use faultgate_core::model::ids::{SpanId, TraceId};
use ids::IdToPy;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyString, PyTuple};

type OwnedMember = (SpanId, Option<SpanId>);

/// A decision cache on its own, as the trace table keeps one: for tests of its forms and
/// bounds, and for anything else that needs to remember decided spans.
#[pyclass(module = "faultgate_stream._native")]
struct DecisionCache(Cache);

fn root_span_id<'py>(py: Python<'py>, id: Option<SpanId>) -> Option<Bound<'py, PyString>> {
    id.map(|r| r.to_py(py))
}

#[pymethods]
impl DecisionCache {
    #[new]
    fn new(max_traces: usize, max_bytes: i128) -> Self {
        DecisionCache(Cache::new(max_traces, max_bytes))
    }

    fn __len__(&self) -> usize {
        self.0.len()
    }

    #[getter]
    fn bytes(&self) -> i128 {
        self.0.bytes
    }

    #[getter]
    fn evictions(&self) -> u64 {
        self.0.evictions
    }

    /// The root span id of the run this span was decided in, or None.
    fn run_of<'py>(&self, py: Python<'py>, trace_id: &str, span_id: &str) -> Option<Bound<'py, PyString>> {
        root_span_id(py, self.0.lookup(&TraceId::parse(trace_id), &SpanId::parse(span_id), Kind::Span))
    }

    /// The run whose decided spans named this span as their parent (it never came).
    fn named_by<'py>(&self, py: Python<'py>, trace_id: &str, span_id: &str) -> Option<Bound<'py, PyString>> {
        root_span_id(py, self.0.lookup(&TraceId::parse(trace_id), &SpanId::parse(span_id), Kind::Parent))
    }

    /// Remember the spans of runs just decided: ``[(root span id, records)]``.
    fn decide(&mut self, trace_id: &str, runs: &Bound<'_, PyList>) -> PyResult<()> {
        // (root, [(span id, parent id)]), owned; then borrowed as the cache takes them
        let mut owned: Vec<(SpanId, Vec<OwnedMember>)> = Vec::new();
        for run in runs.iter() {
            let (root, members): (String, Bound<'_, PyList>) = run.extract()?;
            let mut ids = Vec::new();
            for s in members.iter() {
                let t = s.downcast::<PyTuple>()?;
                let sid: String = t.get_item(table::SPAN_ID)?.extract()?;
                let parent: Option<String> = t.get_item(table::PARENT_ID)?.extract()?;
                ids.push((SpanId::parse(&sid), parent.filter(|p| !p.is_empty()).map(|p| SpanId::parse(&p))));
            }
            owned.push((SpanId::parse(&root), ids));
        }
        let runs: Vec<DecidedRun<'_>> =
            owned.iter().map(|(r, m)| (r.clone(), m.iter().map(|(s, p)| (s, p.as_ref())).collect())).collect();
        self.0.decide(&TraceId::parse(trace_id), &runs);
        Ok(())
    }

    /// Remember a late span of a decided run.
    fn late(&mut self, trace_id: &str, span_id: &str, root: &str) {
        self.0.late(&TraceId::parse(trace_id), SpanId::parse(span_id), SpanId::parse(root));
    }

    /// "packed", "wide" or None: the form a trace is kept in.
    fn form(&self, trace_id: &str) -> Option<&'static str> {
        self.0.form(&TraceId::parse(trace_id))
    }

    /// The decided trace ids, oldest first.
    fn trace_ids<'py>(&self, py: Python<'py>) -> Vec<Bound<'py, PyString>> {
        self.0.order().into_iter().map(|t| t.to_py(py)).collect()
    }
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled assembler", f)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<table::TraceTable>()?;
    m.add_class::<DecisionCache>()?;
    m.add("DECISION_CACHE_PACKED_MAX", decided::PACKED_MAX)?;
    Ok(())
}
