//! Python values <-> the core's: what crosses the binding, converted once at the edge.
//!
//! Text is WTF-8 in the core (native/core/src/pyfmt/strs.rs): a Python str is read as its
//! UTF-8 (borrowed, no copy) or, holding a lone surrogate, as its `surrogatepass` bytes; a
//! Python str is made back with the same handler. A core error becomes the exception the
//! Python the core replaced raised there.

use std::borrow::Cow;
use std::collections::HashMap;

use faultgate_core::error::Error;
use faultgate_core::model::value::{Other, Text, Value};
use pyo3::exceptions::{PyOverflowError, PyRecursionError, PyTypeError, PyUnicodeEncodeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};

/// The exception the core's error stands for.
pub fn py_err(e: Error) -> PyErr {
    match e {
        Error::Type(m) => PyTypeError::new_err(m),
        Error::Value(m) => PyValueError::new_err(m),
        Error::Recursion(m) => PyRecursionError::new_err(m),
        Error::Overflow(m) => PyOverflowError::new_err(m),
        Error::Malformed(_) => PyValueError::new_err(e.to_string()),
        Error::UnicodeEncode(at) => {
            PyUnicodeEncodeError::new_err(("utf-8", "", at, at + 1, "surrogates not allowed"))
        }
        Error::Foreign(f) => match f.0.downcast_ref::<PyErr>() {
            Some(e) => Python::with_gil(|py| e.clone_ref(py)),
            None => PyValueError::new_err("an error of the caller's own code"),
        },
    }
}

/// A Python exception carried through the core (`Error::Foreign`).
pub fn foreign(e: PyErr) -> Error {
    Error::Foreign(faultgate_core::error::Foreign(std::sync::Arc::new(e)))
}

/// A core result as a Python one.
pub trait OrRaise<T> {
    fn or_raise(self) -> PyResult<T>;
}

impl<T> OrRaise<T> for faultgate_core::error::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(py_err)
    }
}

impl<T> OrRaise<T> for faultgate_core::wire::Result<T> {
    fn or_raise(self) -> PyResult<T> {
        self.map_err(|m| py_err(m.into()))
    }
}

/// A Python str's text, borrowed when it is UTF-8 (almost always), else its WTF-8 copy.
pub fn text_of<'b>(s: &'b Bound<'_, PyString>) -> PyResult<Text<'b>> {
    match s.to_str() {
        Ok(t) => Ok(Cow::Borrowed(t.as_bytes())),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(Cow::Owned(b.downcast::<PyBytes>()?.as_bytes().to_vec()))
        }
    }
}

/// The Python str of WTF-8 text: `bytes.decode("utf-8", "surrogatepass")` in one pass.
pub fn py_text<'py>(py: Python<'py>, s: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the pointer and length are the slice's; the result is a new reference or
    // NULL with an exception set, which from_owned_ptr_or_err turns into PyErr
    unsafe {
        let obj = pyo3::ffi::PyUnicode_DecodeUTF8(s.as_ptr().cast(), s.len() as pyo3::ffi::Py_ssize_t,
                                                   c"surrogatepass".as_ptr());
        Ok(Bound::from_owned_ptr_or_err(py, obj)?.downcast_into_unchecked::<PyString>())
    }
}

// Values are read at most this deep (well past what the core writes or reads: json.rs's
// MAX_DEPTH); a value deeper still is not asked for its str(), which Python could not give.
const MAX_DEPTH: u32 = 10_000;

/// A Python value as a core value, a str's text borrowed.
pub fn value_of<'b>(obj: &'b Bound<'_, PyAny>, depth: u32) -> PyResult<Value<'b>> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(Value::Str(text_of(s)?));
    }
    if depth > MAX_DEPTH {
        return Ok(Value::Other(Box::new(Other {
            type_name: Cow::Owned(obj.get_type().name()?.to_string()),
            str_: Cow::Borrowed(b"..."),
            repr: Cow::Borrowed(b"..."),
            truthy: true,
            items: None,
        })));
    }
    if let Ok(b) = obj.downcast_exact::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i64>() {
            Ok(x) => Value::Int(x),
            Err(_) => Value::BigInt(Cow::Owned(obj.str()?.to_str()?.to_owned())),
        });
    }
    if let Ok(f) = obj.downcast_exact::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    }
    if let Ok(b) = obj.downcast_exact::<PyBytes>() {
        return Ok(Value::Bytes(Cow::Borrowed(b.as_bytes())));
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for x in l.iter() {
            out.push(value_of(&x, depth + 1)?.into_owned());
        }
        return Ok(Value::List(out));
    }
    if obj.is_exact_instance_of::<PyTuple>() {
        let t = obj.downcast::<PyTuple>()?;
        let mut out = Vec::with_capacity(t.len());
        for x in t.iter() {
            out.push(value_of(&x, depth + 1)?.into_owned());
        }
        return Ok(Value::Tuple(out));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            out.push((value_of(&k, depth + 1)?.into_owned(), value_of(&v, depth + 1)?.into_owned()));
        }
        return Ok(Value::Dict(out));
    }
    other(obj)
}

/// A value of no kind the core has: what Python says of it.
fn other<'b>(obj: &Bound<'_, PyAny>) -> PyResult<Value<'b>> {
    let str_ = text_of(&obj.str()?)?.into_owned();
    let repr = text_of(&obj.repr()?)?.into_owned();
    Ok(Value::Other(Box::new(Other {
        type_name: Cow::Owned(obj.get_type().name()?.to_string()),
        str_: Cow::Owned(str_),
        repr: Cow::Owned(repr),
        truthy: obj.is_truthy()?,
        items: None,
    })))
}

// Short strings repeat (keys, names, roles, finish reasons): one Python object each per
// request or file, as the readers always shared them.
const SHARED_BYTES: usize = 32;

/// Python strings made so far within one request or file, shared when short.
#[derive(Default)]
pub struct Strings<'py> {
    seen: HashMap<Vec<u8>, Bound<'py, PyString>, foldhash::fast::RandomState>,
    empty: Option<Bound<'py, PyString>>,
    unshared: bool,
}

impl<'py> Strings<'py> {
    /// Strings made for one value read, shared with nothing: remembering them would cost
    /// more than making them.
    pub fn unshared() -> Strings<'py> {
        Strings { unshared: true, ..Strings::default() }
    }

    pub fn text(&mut self, py: Python<'py>, s: &[u8]) -> PyResult<Bound<'py, PyString>> {
        if self.unshared {
            return py_text(py, s);
        }
        if s.is_empty() {
            // most records' prompt, answer and status message
            return Ok(self.empty.get_or_insert_with(|| PyString::new(py, "")).clone());
        }
        if s.len() > SHARED_BYTES {
            return py_text(py, s);
        }
        if let Some(k) = self.seen.get(s) {
            return Ok(k.clone());
        }
        let k = py_text(py, s)?;
        self.seen.insert(s.to_vec(), k.clone());
        Ok(k)
    }
}

/// The Python object of a core value (a new one: lists and dicts are built again).
pub fn to_py<'py>(py: Python<'py>, v: &Value<'_>, strings: &mut Strings<'py>) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(x) => x.into_pyobject(py)?.into_any(),
        Value::BigInt(t) => py.get_type::<PyInt>().call1((t.as_ref(),))?,
        Value::Float(x) => PyFloat::new(py, *x).into_any(),
        Value::Str(s) => strings.text(py, s)?.into_any(),
        Value::Bytes(b) => PyBytes::new(py, b).into_any(),
        Value::List(items) => {
            let out = PyList::empty(py);
            for x in items {
                out.append(to_py(py, x, strings)?)?;
            }
            out.into_any()
        }
        Value::Tuple(items) => {
            let items = items.iter().map(|x| to_py(py, x, strings)).collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any()
        }
        Value::Dict(items) => {
            let out = PyDict::new(py);
            for (k, x) in items {
                out.set_item(to_py(py, k, strings)?, to_py(py, x, strings)?)?;
            }
            out.into_any()
        }
        // only a caller's value is one, and the caller's object is what goes back
        Value::Other(o) => py_text(py, &o.str_)?.into_any(),
    })
}
