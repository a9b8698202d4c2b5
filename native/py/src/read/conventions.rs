//! `build_span` (read/conventions.py's name): the record of one span whose attributes are a
//! Python dict, built by the core's conventions (native/core/src/read/conventions.rs), for
//! the vendor formats, the log events and tests; and the conventions' names for Python.

use faultgate_core::model::attributes::{ATTRIBUTES_BYTES, ATTRIBUTE_BYTES, SCALAR_BYTES, VALUE_BYTES};
use faultgate_core::read::attrs::{Attr, Attrs, RECORD_BYTES};
use faultgate_core::read::conventions::{self as core, Kept, SpanHead, BUDGET_ANSWERS, CONTENT_KEYS, MODEL_OPERATIONS,
                                        OI_KIND, TL_KIND, TOOL_CONTENT_KEYS, USER_KEYS};
use faultgate_core::read::key_set::KeySet;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyFrozenSet, PyString, PyTuple};

use crate::convert::{text_of, value_of, OrRaise, Strings};
use crate::records::{from_built, Head};

/// `build_span(trace_id, span_id, parent_id, name, start_ns, end_ns, status_code,
/// status_message, attrs, *, owned=False, kept=None) -> SpanRecord`: the record for one
/// span whose attributes are a dict of plain values (str, int, float, bool, list, dict).
/// `kept`: the only attributes the record keeps (read/projection.py); every one but
/// content without it. `owned` is accepted for the callers that said the dict was the
/// record's to keep: the record's attributes are always a dict of their own.
#[pyfunction]
#[pyo3(signature = (trace_id, span_id, parent_id, name, start_ns, end_ns, status_code, status_message, attrs, *,
                    owned=false, kept=None))]
#[allow(clippy::too_many_arguments)]
pub fn build_span<'py>(py: Python<'py>, trace_id: Bound<'py, PyAny>, span_id: Bound<'py, PyAny>,
                       parent_id: Bound<'py, PyAny>, name: Bound<'py, PyString>, start_ns: Bound<'py, PyAny>,
                       end_ns: Bound<'py, PyAny>, status_code: Bound<'py, PyAny>,
                       status_message: Bound<'py, PyString>, attrs: Bound<'py, PyDict>, owned: bool,
                       kept: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
    let _ = owned;
    guarded(|| {
        let items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)> = attrs.iter().collect();
        let mut a = Attrs::with_capacity(items.len());
        for (i, (k, v)) in items.iter().enumerate() {
            let key = k.downcast::<PyString>()?;
            a.set(Attr { key: text_of(key)?, val: value_of(v, 0)?, origin: Some(i as u32) });
        }
        let has_parent = parent_id.is_truthy()?;
        let head = SpanHead {
            name: text_of(&name)?,
            has_parent,
            failed: status_code.eq(2)?,
            message: text_of(&status_message)?,
            instant: start_ns.eq(&end_ns)?,
        };
        let built = core::build(&head, a).or_raise()?;
        let names: Option<KeySet> = match &kept {
            Some(k) if !k.is_none() => {
                let mut out = KeySet::default();
                for key in k.try_iter()? {
                    if let Ok(s) = key?.downcast::<PyString>() {
                        out.insert(text_of(s)?.into_owned());
                    }
                }
                Some(out)
            }
            _ => None,
        };
        let kept = match &names {
            Some(n) => Kept::Names(n),
            None => Kept::All,
        };
        let head = Head {
            trace_id,
            span_id,
            parent: if has_parent { parent_id } else { py.None().into_bound(py) },
            name: name.clone().into_any(),
            start: start_ns,
            end: end_ns,
            status_code,
            message: status_message.clone().into_any(),
        };
        from_built(py, &mut Strings::default(), head, &built, &kept, &items)
    })
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
pub fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled conventions", f)
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add_function(wrap_pyfunction!(build_span, m)?)?;
    m.add("OI_KIND", OI_KIND)?;
    m.add("TL_KIND", TL_KIND)?;
    m.add("CONTENT_KEYS", PyFrozenSet::new(py, CONTENT_KEYS)?)?;
    m.add("TOOL_CONTENT_KEYS", PyFrozenSet::new(py, TOOL_CONTENT_KEYS)?)?;
    m.add("USER_KEYS", PyTuple::new(py, USER_KEYS)?)?;
    m.add("MODEL_OPERATIONS", PyFrozenSet::new(py, MODEL_OPERATIONS)?)?;
    m.add("READ_NAMES", PyFrozenSet::new(py, core::read_names().collect::<Vec<_>>())?)?;
    m.add("READ_PREFIXES", PyTuple::new(py, core::read_prefixes().collect::<Vec<_>>())?)?;
    m.add("BUDGET_ANSWERS", PyFrozenSet::new(py, BUDGET_ANSWERS)?)?;
    m.add("RECORD_BYTES", RECORD_BYTES)?;
    m.add("ATTRIBUTES_BYTES", ATTRIBUTES_BYTES)?;
    m.add("ATTRIBUTE_BYTES", ATTRIBUTE_BYTES)?;
    m.add("SCALAR_BYTES", SCALAR_BYTES)?;
    m.add("VALUE_BYTES", VALUE_BYTES)
}
