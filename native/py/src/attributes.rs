//! `SpanAttributes`: a record's attributes as Python reads them (`SpanRecord.attrs`), a
//! read-only mapping over the core's own (faultgate_core::model::attributes). The reader
//! hands the core's attributes over as they are; a value becomes a Python object only when
//! Python reads it, made as the reader made it before (convert.rs's `to_py`), a new object
//! on each read; the core takes them back by sharing them (records.rs's `to_core`).
//!
//! It behaves as a dict that cannot change: `[k]`, `get`, `in`, iteration in the span's
//! order, `len`, `keys`/`items`/`values` (a dict's views, of a dict made for the call),
//! equal to any mapping with the same items, unhashable, pickled as a dict. Keys are str:
//! any other key is absent. model/records.py registers it as a `collections.abc.Mapping`.

use std::collections::HashSet;

use faultgate_core::model::attributes::Attributes;
use pyo3::basic::CompareOp;
use pyo3::exceptions::PyKeyError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString, PyTuple};

use crate::convert::{text_of, to_py, Strings};
use crate::types::types;

#[pyclass(frozen, mapping, module = "faultgate_stream._native")]
pub struct SpanAttributes {
    pub attrs: Attributes,
}

impl SpanAttributes {
    pub fn new(attrs: Attributes) -> SpanAttributes {
        SpanAttributes { attrs }
    }

    /// The value at a Python key, made now; None when it is absent (or not a str).
    pub fn value<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.position(key)?.and_then(|i| self.attrs.value(i)) {
            Some(v) => Ok(Some(to_py(key.py(), &v, &mut Strings::unshared())?)),
            None => Ok(None),
        }
    }

    fn position(&self, key: &Bound<'_, PyAny>) -> PyResult<Option<usize>> {
        match key.downcast::<PyString>() {
            Ok(k) => Ok(self.attrs.position(&text_of(k)?)),
            Err(_) => Ok(None),
        }
    }

    /// A dict of the items, in order, made now.
    pub fn dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let out = PyDict::new(py);
        let mut strings = Strings::default();
        for (k, v) in self.attrs.iter() {
            out.set_item(strings.text(py, k)?, to_py(py, &v, &mut strings)?)?;
        }
        Ok(out)
    }
}

#[pymethods]
impl SpanAttributes {
    fn __len__(&self) -> usize {
        self.attrs.len()
    }

    fn __getitem__<'py>(&self, key: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        match self.value(key)? {
            Some(v) => Ok(v),
            None => Err(PyKeyError::new_err(key.clone().unbind())),
        }
    }

    fn __contains__(&self, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        Ok(self.position(key)?.is_some())
    }

    fn __iter__(&self) -> SpanAttributeKeys {
        SpanAttributeKeys { attrs: self.attrs.clone(), at: 0 }
    }

    #[pyo3(signature = (key, default = None))]
    fn get<'py>(&self, key: &Bound<'py, PyAny>, default: Option<Bound<'py, PyAny>>) -> PyResult<Bound<'py, PyAny>> {
        match self.value(key)? {
            Some(v) => Ok(v),
            None => Ok(default.unwrap_or_else(|| key.py().None().into_bound(key.py()))),
        }
    }

    fn keys<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0(intern!(py, "keys"))
    }

    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0(intern!(py, "values"))
    }

    fn items<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        self.dict(py)?.call_method0(intern!(py, "items"))
    }

    /// `==` and `!=` with any mapping, as dicts compare; no order.
    fn __richcmp__(&self, py: Python<'_>, other: &Bound<'_, PyAny>, op: CompareOp) -> PyResult<PyObject> {
        let want = match op {
            CompareOp::Eq => true,
            CompareOp::Ne => false,
            _ => return Ok(py.NotImplemented()),
        };
        let equal = if let Ok(o) = other.downcast::<SpanAttributes>() {
            let o = o.get();
            self.attrs.same(&o.attrs) || self.dict(py)?.eq(o.dict(py)?)?
        } else if let Ok(d) = other.downcast::<PyDict>() {
            self.dict(py)?.eq(d)?
        } else if other.hasattr(intern!(py, "keys"))? && other.hasattr(intern!(py, "__getitem__"))? {
            // another mapping (a mappingproxy, a Mapping): its items as a dict's
            self.dict(py)?.eq(py.get_type::<PyDict>().call1((other,))?)?
        } else {
            return Ok(py.NotImplemented());
        };
        Ok((equal == want).into_pyobject(py)?.to_owned().into_any().unbind())
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!("SpanAttributes({})", self.dict(py)?.repr()?.to_str()?))
    }

    /// Pickled (and copied) as the dict of its items.
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, [py.get_type::<PyDict>().into_any(), PyTuple::new(py, [self.dict(py)?])?.into_any()])
    }

    /// The object and the core's attributes it holds (shared with the core's copies of the
    /// record, if any: counted whole here).
    fn __sizeof__(slf: &Bound<'_, Self>) -> PyResult<usize> {
        let own: usize = slf.get_type().getattr(intern!(slf.py(), "__basicsize__"))?.extract()?;
        Ok(own + slf.get().attrs.heap_bytes())
    }
}

/// Iteration over a `SpanAttributes`' keys, in order.
#[pyclass(module = "faultgate_stream._native")]
pub struct SpanAttributeKeys {
    attrs: Attributes,
    at: usize,
}

#[pymethods]
impl SpanAttributeKeys {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyString>>> {
        let Some(k) = self.attrs.key(self.at) else { return Ok(None) };
        self.at += 1;
        Ok(Some(crate::convert::py_text(py, k)?))
    }

    fn __length_hint__(&self) -> usize {
        self.attrs.len().saturating_sub(self.at)
    }
}

/// `AttributeSelection(names)`: called with a record's `SpanAttributes`, those of `names`
/// (a plug-in's view of a span: adapt.py), without a Python object made; the same mapping
/// when it holds no other (as the live reader, which keeps only these, makes them).
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct AttributeSelection {
    names: HashSet<Box<[u8]>, foldhash::fast::RandomState>,
}

#[pymethods]
impl AttributeSelection {
    #[new]
    fn new(names: &Bound<'_, PyAny>) -> PyResult<AttributeSelection> {
        let mut out = HashSet::default();
        for n in names.try_iter()? {
            out.insert(text_of(n?.downcast::<PyString>()?)?.as_ref().into());
        }
        Ok(AttributeSelection { names: out })
    }

    fn __call__<'py>(&self, attrs: Bound<'py, SpanAttributes>) -> PyResult<Bound<'py, PyAny>> {
        let a = &attrs.get().attrs;
        let only = a.only(|k| self.names.contains(k));
        if only.same(a) {
            return Ok(attrs.into_any());
        }
        let py = attrs.py();
        if only.is_empty() {
            return Ok(types(py)?.no_attrs.bind(py).clone());
        }
        Ok(Bound::new(py, SpanAttributes::new(only))?.into_any())
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SpanAttributes>()?;
    m.add_class::<AttributeSelection>()?;
    m.add_class::<SpanAttributeKeys>()
}
