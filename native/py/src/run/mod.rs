//! A completed run's facts for Python (model/run.py): the core's (native/core/src/run)
//! worked out once per run and written into the run's `__dict__`, where Python reads them
//! from then on; and the core run the built-in checks read, kept beside it.
//!
//! A `Run` built in Python from `SpanRecord`s has its records copied into the core's once,
//! on the first use of any fact or check, and kept in `run.derived` (`CoreRun`).

use std::sync::{Arc, Mutex, OnceLock};

use faultgate_core::checks::Derived;
use faultgate_core::model::ids::{SpanId, TraceId};
use faultgate_core::model::run::{Completion, Run};
use faultgate_core::run::facts::{compute, steps_not_captured, Facts, Settings, Step};
use faultgate_core::run::measure::FloatSum;
use pyo3::exceptions::PyAttributeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFrozenSet, PyString, PyTuple};

use crate::convert::{py_text, text_of, OrRaise};
use crate::records::{new_tuple, to_core};
use crate::types::types;

const CORE_KEY: &str = "native.run"; // where a run keeps its core run, in Run.derived

type ByHand = Option<(Py<PyTuple>, Arc<(Facts, Derived)>)>;

/// A run as the core holds it, its facts once worked out, and what its checks derive.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct CoreRun {
    pub run: Run,
    facts: OnceLock<Facts>,
    pub derived: Derived,
    /// the `steps` tuple made of the facts: a run whose `steps` are another (a test sets
    /// them by hand) is judged on those
    steps: OnceLock<Py<PyTuple>>,
    /// facts with hand-set steps, and what the checks derive from those
    hand: Mutex<ByHand>,
}

fn settings(py: Python<'_>) -> Settings {
    Settings { float_sum: if py.version_info() >= (3, 12) { FloatSum::Neumaier } else { FloatSum::Plain } }
}

impl CoreRun {
    pub fn new(run: Run) -> CoreRun {
        CoreRun { run, facts: OnceLock::new(), derived: Derived::default(), steps: OnceLock::new(),
                  hand: Mutex::new(None) }
    }

    pub fn facts(&self, py: Python<'_>) -> PyResult<&Facts> {
        if let Some(f) = self.facts.get() {
            return Ok(f);
        }
        let f = compute(&self.run, settings(py)).or_raise()?;
        Ok(self.facts.get_or_init(|| f))
    }
}

fn id_text(o: &Bound<'_, PyAny>) -> PyResult<String> {
    Ok(String::from_utf8_lossy(&text_of(o.downcast::<PyString>()?)?).into_owned())
}

/// The core run of a Python `Run`: kept in its `derived`, else made from its spans.
pub fn core_of<'py>(run: &Bound<'py, PyAny>) -> PyResult<Bound<'py, CoreRun>> {
    let py = run.py();
    let derived = run.getattr(intern!(py, "derived"))?.downcast_into::<PyDict>()?;
    if let Some(c) = derived.get_item(intern!(py, CORE_KEY))? {
        if let Ok(c) = c.downcast_into::<CoreRun>() {
            return Ok(c);
        }
    }
    let spans = run.getattr(intern!(py, "spans"))?.downcast_into::<PyTuple>()?;
    let root = run.getattr(intern!(py, "root"))?;
    let mut records = Vec::with_capacity(spans.len());
    let mut root_record = None;
    for s in spans.iter() {
        let r = Arc::new(to_core(s.downcast::<PyTuple>()?)?);
        if s.is(&root) {
            root_record = Some(r.clone());
        }
        records.push(r);
    }
    if root_record.is_none() && !root.is_none() {
        root_record = Some(Arc::new(to_core(root.downcast::<PyTuple>()?)?));
    }
    let key = run.getattr(intern!(py, "key"))?.downcast_into::<PyTuple>()?;
    let root_span_id = id_text(&key.get_item(1)?)?;
    // the member's own `_value_` (what Enum's `value` property returns): the property is
    // two Python calls, one a run for every built-in check's first look
    let completion = run.getattr(intern!(py, "completion"))?.getattr(intern!(py, "_value_"))?.extract::<String>()?;
    let core = Run {
        trace_id: TraceId::parse(&id_text(&key.get_item(0)?)?),
        root_span_id: if root_span_id.is_empty() { None } else { Some(SpanId::parse(&root_span_id)) },
        spans: records,
        root: root_record,
        completion: Completion::from_value(&completion).unwrap_or(Completion::Complete),
        root_arrival_ns: run.getattr(intern!(py, "root_arrival_ns"))?.extract().unwrap_or(0),
        closed_ns: run.getattr(intern!(py, "closed_ns"))?.extract().unwrap_or(0),
        outside_span_ids: Vec::new(),
    };
    let c = Bound::new(py, CoreRun::new(core))?;
    derived.set_item(intern!(py, CORE_KEY), &c)?;
    Ok(c)
}

/// A Python `Step` as the core's (steps set by hand).
fn step_of(st: &Bound<'_, PyAny>) -> PyResult<Step> {
    let t = st.downcast::<PyTuple>()?;
    let text = |i: usize| -> PyResult<Box<[u8]>> { Ok(text_of(t.get_item(i)?.downcast::<PyString>()?)?.as_ref().into()) };
    Ok(Step {
        index: t.get_item(0)?.extract()?,
        tool: text(1)?,
        arguments: text(2)?,
        result: text(3)?,
        span_id: SpanId::parse(&id_text(&t.get_item(4)?)?),
        span: usize::MAX,
        call_id: text(5)?,
        start_ns: t.get_item(6)?.extract().unwrap_or(0),
        ok: t.get_item(7)?.is_truthy()?,
        missing: t.get_item(8)?.extract()?,
    })
}

/// What the built-in checks read of a Python `Run`: its core run with the facts its
/// `steps` say (the core's own, or those set by hand), and what is derived from them.
pub fn judged<T>(run: &Bound<'_, PyAny>, f: impl FnOnce(&Run, &Facts, &Derived) -> PyResult<T>) -> PyResult<T> {
    let py = run.py();
    let core = core_of(run)?;
    let c = core.get();
    let facts = c.facts(py)?;
    let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
    let steps = match dict.get_item(intern!(py, "steps"))? {
        Some(s) => s,
        None => return f(&c.run, facts, &c.derived),
    };
    if c.steps.get().is_some_and(|own| own.bind(py).is(&steps)) {
        return f(&c.run, facts, &c.derived);
    }
    let steps = steps.downcast_into::<PyTuple>()?;
    let held = {
        let hand = c.hand.lock().unwrap_or_else(|e| e.into_inner());
        hand.as_ref().filter(|(t, _)| t.bind(py).is(&steps)).map(|(_, h)| h.clone())
    };
    let held = match held {
        Some(h) => h,
        None => {
            let mut by_hand = facts.clone();
            by_hand.steps = steps.iter().map(|st| step_of(&st)).collect::<PyResult<_>>()?;
            let h = Arc::new((by_hand, Derived::default()));
            *c.hand.lock().unwrap_or_else(|e| e.into_inner()) = Some((steps.unbind(), h.clone()));
            h
        }
    };
    f(&c.run, &held.0, &held.1)
}

/// The core's own steps of a Python `Run`, unless its `steps` were set by hand (None: read
/// those): what the run rules read without the steps made Python objects.
pub fn own_steps<T>(run: &Bound<'_, PyAny>, f: impl FnOnce(&[Step]) -> PyResult<T>) -> PyResult<Option<T>> {
    let py = run.py();
    let core = core_of(run)?;
    let c = core.get();
    let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
    if let Some(steps) = dict.get_item(intern!(py, "steps"))? {
        if !c.steps.get().is_some_and(|own| own.bind(py).is(&steps)) {
            return Ok(None);
        }
    }
    f(&c.facts(py)?.steps).map(Some)
}

/// An int as Python's: 64 bits the quick way (pyo3 makes a 128-bit one through Python's
/// own calls under abi3).
fn int_to_py(py: Python<'_>, x: i128) -> PyResult<Bound<'_, PyAny>> {
    Ok(match i64::try_from(x) {
        Ok(v) => v.into_pyobject(py)?.into_any(),
        Err(_) => x.into_pyobject(py)?.into_any(),
    })
}

fn opt_float(py: Python<'_>, x: Option<f64>) -> PyResult<Bound<'_, PyAny>> {
    Ok(x.into_pyobject(py)?.into_any())
}

/// Every fact of the run into its `__dict__`, the steps only when `with_steps` (the read
/// was of `steps`); a fact already there is kept (a test may set `steps` by hand), and one
/// is made only when it is not there. The steps as Python objects are the costliest fact
/// (a tuple of 9 fields a step, ~1,200 instructions a span on bench/hot_path.py's
/// workload), and the live path reads none of them: the built-in checks judge the core's
/// own and the verdict counts them (`step_count`).
fn write_facts(run: &Bound<'_, PyAny>, with_steps: bool) -> PyResult<()> {
    let py = run.py();
    let core = core_of(run)?;
    let c = core.get();
    let f = c.facts(py)?;
    let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
    let t = types(py)?;
    let spans = run.getattr(intern!(py, "spans"))?.downcast_into::<PyTuple>()?;
    if with_steps && !dict.contains(intern!(py, "steps"))? {
        let mut steps = Vec::with_capacity(f.steps.len());
        for st in &f.steps {
            // its span's own objects, as the Python steps carried them: its id, its start, and
            // the tool's strings where the step's are the tool span's own (most steps)
            let span = spans.get_item(st.span).ok().and_then(|s| s.downcast_into::<PyTuple>().ok());
            let (span_id, start) = match &span {
                Some(s) => (s.get_item(1)?, s.get_item(4)?),
                None => (PyString::new(py, &st.span_id.to_string()).into_any(), int_to_py(py, st.start_ns)?),
            };
            let tool = span.as_ref().and_then(|s| s.get_item(12).ok()).and_then(|t| t.downcast_into::<PyTuple>().ok());
            let same = |i: usize, text: &[u8]| -> PyResult<Bound<'_, PyAny>> {
                if let Some(t) = &tool {
                    let o = t.get_item(i)?;
                    if let Ok(s) = o.downcast::<PyString>() {
                        if text_of(s)?.as_ref() == text {
                            return Ok(o);
                        }
                    }
                }
                Ok(py_text(py, text)?.into_any())
            };
            steps.push(new_tuple(py, &t.step, [
                st.index.into_pyobject(py)?.into_any(), same(0, &st.tool)?, same(1, &st.arguments)?,
                same(2, &st.result)?, span_id, same(3, &st.call_id)?, start,
                PyBool::new(py, st.ok).to_owned().into_any(), st.missing.into_pyobject(py)?.into_any(),
            ])?);
        }
        let steps = PyTuple::new(py, steps)?;
        let _ = c.steps.set(steps.clone().unbind());
        dict.set_item(intern!(py, "steps"), steps)?;
    }
    // the value is made only for a fact not there yet: a later read of `steps` calls this
    // again, with the others written
    macro_rules! put {
        ($k:literal, $v:expr) => {
            if !dict.contains(intern!(py, $k))? {
                dict.set_item(intern!(py, $k), $v)?;
            }
        };
    }
    put!("prompt", py_text(py, &f.prompt)?);
    put!("answer", py_text(py, &f.answer)?);
    put!("agent", py_text(py, &f.agent)?);
    put!("scenario", py_text(py, &f.scenario)?);
    put!("agent_version", py_text(py, &f.agent_version)?);
    put!("termination", py_text(py, &f.termination)?);
    put!("usage_tokens", opt_float(py, f.usage_tokens)?);
    put!("latency_ms", opt_float(py, f.latency_ms)?);
    put!("cost_usd", opt_float(py, f.cost_usd)?);
    put!("missing", f.missing.into_pyobject(py)?);
    put!("has_content", PyBool::new(py, f.has_content).to_owned());
    put!("answer_not_captured", PyString::new(py, &f.answer_not_captured));
    put!("calls_not_captured", PyString::new(py, &f.calls_not_captured));
    put!("last_end_ns", int_to_py(py, f.last_end_ns)?);
    put!("span_ids", {
        let ids: Vec<Bound<'_, PyAny>> = spans.iter().map(|s| s.get_item(1)).collect::<PyResult<_>>()?;
        PyFrozenSet::new(py, ids.iter())?
    });
    Ok(())
}

/// `Run.<fact>`: a non-data descriptor, so once the facts are in the run's `__dict__`,
/// Python reads them there and never calls it again for that run.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct RunFact {
    name: Py<PyString>,
}

#[pymethods]
impl RunFact {
    #[new]
    fn new(name: Bound<'_, PyString>) -> Self {
        RunFact { name: name.unbind() }
    }

    fn __get__(slf: Bound<'_, Self>, run: Option<Bound<'_, PyAny>>, _owner: Option<Bound<'_, PyAny>>) -> PyResult<PyObject> {
        let py = slf.py();
        let Some(run) = run else { return Ok(slf.into_any().unbind()) };
        let name = slf.get().name.bind(py);
        let with_steps = name.to_str()? == "steps";
        crate::python::guard::guarded("the compiled run facts", || write_facts(&run, with_steps))?;
        let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
        match dict.get_item(name)? {
            Some(v) => Ok(v.unbind()),
            None => Err(PyAttributeError::new_err(name.to_string())),
        }
    }
}

/// `Run.step_count`: how many steps the run has (its `steps` set by hand, else the core's
/// own), without making the steps Python objects.
#[pyfunction(name = "step_count")]
pub fn step_count_py(run: &Bound<'_, PyAny>) -> PyResult<usize> {
    crate::python::guard::guarded("the compiled run facts", || judged(run, |_, f, _| Ok(f.steps.len())))
}

/// `Run.steps_not_captured(flags)`: why some steps' arguments or results cannot be read.
#[pyfunction(name = "steps_not_captured")]
pub fn steps_not_captured_py(run: &Bound<'_, PyAny>, flags: u32) -> PyResult<String> {
    crate::python::guard::guarded("the compiled run facts", || {
        judged(run, |_, f, _| Ok(steps_not_captured(&f.steps, flags)))
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<RunFact>()?;
    m.add_class::<CoreRun>()?;
    m.add_function(wrap_pyfunction!(steps_not_captured_py, m)?)?;
    m.add_function(wrap_pyfunction!(step_count_py, m)?)?;
    Ok(())
}
