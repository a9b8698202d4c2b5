//! A run's steps as the compiled checks read them, built once per run and kept in
//! `Run.derived`, with what several checks derive from them (the step errors) worked out
//! once for all.
//!
//! It is made from `run.steps`, whatever that holds: the facts fill it in when they build
//! the steps, and a run whose `steps` were set by hand (tests do) gets one made from those.

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use super::record::{Attrs, SpanItem, ATTRS, MISSING_WHAT};
use crate::checks::{signals, text};

/// One `Step`'s fields the checks read.
pub struct StepItem {
    pub index: i64,
    pub tool: Py<PyString>,
    pub arguments: Py<PyString>,
    pub result: Py<PyString>,
    pub span_id: Py<PyString>,
    pub missing: i64,
}

#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct StepsView {
    steps: Py<PyTuple>,
    pub items: Vec<StepItem>,
    /// `signals.structural_error` of each step's result (None: not an error)
    errors: GILOnceCell<Vec<Option<Py<PyString>>>>,
    /// the run's spans, in its order: filled by the facts, else read when first asked
    spans: GILOnceCell<Vec<SpanItem>>,
}

const VIEW_KEY: &str = "native.steps"; // where a run keeps its view, in Run.derived

impl StepsView {
    pub fn new(py: Python<'_>, steps: Py<PyTuple>, items: Vec<StepItem>, spans: Option<Vec<SpanItem>>) -> StepsView {
        let cell = GILOnceCell::new();
        if let Some(spans) = spans {
            let _ = cell.set(py, spans);
        }
        StepsView { steps, items, errors: GILOnceCell::new(), spans: cell }
    }

    /// What the checks read of the run's spans.
    pub fn spans(&self, run: &Bound<'_, PyAny>) -> PyResult<&Vec<SpanItem>> {
        let py = run.py();
        self.spans.get_or_try_init(py, || {
            let spans = run.getattr(intern!(py, "spans"))?.downcast_into::<PyTuple>()?;
            let mut out = Vec::with_capacity(spans.len());
            for s in spans.iter() {
                let s = s.downcast_into::<PyTuple>()?;
                out.push(SpanItem::read(&s, &Attrs::of(&s.get_item(ATTRS)?)?)?);
            }
            Ok(out)
        })
    }

    /// The step errors, when some check has asked for them already.
    pub fn errors_known(&self, py: Python<'_>) -> Option<&Vec<Option<Py<PyString>>>> {
        self.errors.get(py)
    }

    fn read(steps: &Bound<'_, PyTuple>) -> PyResult<StepsView> {
        let mut items = Vec::with_capacity(steps.len());
        for st in steps.iter() {
            let st = st.downcast_into::<PyTuple>()?;
            items.push(StepItem {
                index: st.get_item(0)?.extract()?,
                tool: st.get_item(1)?.downcast_into::<PyString>()?.unbind(),
                arguments: st.get_item(2)?.downcast_into::<PyString>()?.unbind(),
                result: st.get_item(3)?.downcast_into::<PyString>()?.unbind(),
                span_id: st.get_item(4)?.downcast_into::<PyString>()?.unbind(),
                missing: st.get_item(8)?.extract()?,
            });
        }
        Ok(StepsView::new(steps.py(), steps.clone().unbind(), items, None))
    }

    pub fn keep(py: Python<'_>, derived: &Bound<'_, PyDict>, view: StepsView) -> PyResult<()> {
        derived.set_item(intern!(py, VIEW_KEY), Bound::new(py, view)?)
    }

    /// The view of `run.steps`: the one kept in `run.derived` when it was made from them.
    pub fn of<'py>(run: &Bound<'py, PyAny>) -> PyResult<Bound<'py, StepsView>> {
        let py = run.py();
        let steps = run.getattr(intern!(py, "steps"))?.downcast_into::<PyTuple>()?;
        let derived = run.getattr(intern!(py, "derived"))?.downcast_into::<PyDict>()?;
        if let Some(v) = derived.get_item(intern!(py, VIEW_KEY))? {
            if let Ok(v) = v.downcast_into::<StepsView>() {
                if v.get().steps.is(&steps) {
                    return Ok(v);
                }
            }
        }
        let v = Bound::new(py, StepsView::read(&steps)?)?;
        derived.set_item(intern!(py, VIEW_KEY), &v)?;
        Ok(v)
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// `structural_error` of each step's result, each distinct result read once (a run
    /// repeats its results: the same empty search, the same error).
    pub fn errors(&self, py: Python<'_>) -> PyResult<&Vec<Option<Py<PyString>>>> {
        self.errors.get_or_try_init(py, || {
            let mut known: HashMap<&[u8], Option<Py<PyString>>> = HashMap::default();
            let texts = self.items.iter().map(|st| text::read(st.result.bind(py))).collect::<PyResult<Vec<_>>>()?;
            let mut out = Vec::with_capacity(texts.len());
            for t in &texts {
                if signals::plainly_clean(t.bytes()) {
                    out.push(None);
                    continue;
                }
                let e = match known.get(t.bytes()) {
                    Some(e) => e.as_ref().map(|e| e.clone_ref(py)),
                    None => {
                        let e = signals::structural_error(py, t.bytes())?.map(|e| e.unbind());
                        known.insert(t.bytes(), e.as_ref().map(|e| e.clone_ref(py)));
                        e
                    }
                };
                out.push(e);
            }
            Ok(out)
        })
    }

    /// `Run.steps_not_captured(flags)`: why some steps' arguments or results cannot be
    /// read, "" when all can.
    pub fn not_captured(&self, flags: i64) -> String {
        let idx: Vec<i64> = self.items.iter().filter(|st| st.missing & flags != 0).map(|st| st.index).collect();
        if idx.is_empty() {
            return String::new();
        }
        let what: Vec<&str> = MISSING_WHAT.iter().filter(|(f, _)| f & flags != 0).map(|(_, w)| *w).collect();
        let shown: Vec<String> = idx.iter().take(5).map(|i| i.to_string()).collect();
        let more = if idx.len() > 5 { format!(" and {} more", idx.len() - 5) } else { String::new() };
        format!("{} not captured on step(s) {}{}", what.join(" or "), shown.join(", "), more)
    }
}

/// `Run.steps_not_captured(flags)`.
#[pyfunction]
pub fn steps_not_captured(run: &Bound<'_, PyAny>, flags: i64) -> PyResult<String> {
    crate::checks::guarded(|| Ok(StepsView::of(run)?.get().not_captured(flags)))
}
