//! The Python functions the rare paths call: json.dumps where a value is none of JSON's
//! types or nested past what dumps.rs writes, json.loads where serde_json refuses the text,
//! ast.literal_eval for Python reprs. Looked up once.

use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyString};

use crate::read::dumps::Default;

/// The Python functions the rare paths call, looked up once.
pub struct Python_ {
    pub json_loads: Py<PyAny>,
    plain_dumps: Py<PyAny>,
    strict_dumps: Py<PyAny>,
    pub literal_eval: Py<PyAny>,
    pub str_dumps: Py<PyAny>,
}

impl Python_ {
    pub fn dumps<'py>(&self, py: Python<'py>, default: Default) -> PyResult<Bound<'py, PyAny>> {
        Ok(match default {
            Default::Plain => self.plain_dumps.bind(py).clone(),
            Default::Strict => self.strict_dumps.bind(py).clone(),
        })
    }
}

static PYTHON: GILOnceCell<Python_> = GILOnceCell::new();

/// ``functools.partial(json.dumps, ensure_ascii=False, ...)`` and friends.
pub fn python(py: Python<'_>) -> PyResult<&'static Python_> {
    PYTHON.get_or_try_init(py, || -> PyResult<Python_> {
        let json = py.import("json")?;
        let partial = py.import("functools")?.getattr("partial")?;
        let dumps = json.getattr("dumps")?;
        let kw = |default: Option<Bound<'_, PyAny>>| -> PyResult<Py<PyAny>> {
            let d = PyDict::new(py);
            d.set_item("ensure_ascii", false)?;
            if let Some(f) = default {
                d.set_item("default", f)?;
            }
            Ok(partial.call((dumps.clone(),), Some(&d))?.unbind())
        };
        // payload._plain: bytes as OTLP/JSON writes them, anything else str()
        let plain = py.import("faultgate_stream.read.payload")?.getattr("_plain")?;
        Ok(Python_ {
            json_loads: json.getattr("loads")?.unbind(),
            plain_dumps: kw(Some(plain))?,
            strict_dumps: kw(None)?,
            str_dumps: kw(Some(py.get_type::<PyString>().into_any()))?,
            literal_eval: py.import("ast")?.getattr("literal_eval")?.unbind(),
        })
    })
}
