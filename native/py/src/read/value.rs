//! A span attribute's value, or a value decoded from the JSON one holds, as the conventions
//! (conventions.rs, payload.rs) read it: what Python's objects were to read/conventions.py,
//! without making them. Strings borrow the request's (or the file's, or the Python
//! string's) bytes; only what a record keeps becomes a Python object.
//!
//! Exactness is the point: a record's strings are compared byte for byte downstream, so
//! every rule is Python's: ``str()`` of a value and truth values here, ``repr`` of a float
//! and ``json.dumps`` (dumps.rs), ``json.loads`` (loads.rs), ``str``'s methods (text.rs).
//! What is rare and long to get right is handed to Python itself (fallback.rs): values that
//! are none of JSON's types (a tuple, a big int, a set: `V::Py`), JSON that serde_json
//! refuses (NaN, lone surrogates, nesting past 128: json.loads), ``str()`` of a container.
//!
//! Text is WTF-8: UTF-8, except that a lone surrogate (Python's str may hold one; OTLP/JSON
//! can write one as an escape) is encoded as its three bytes, as Python's ``surrogatepass``
//! error handler does. Comparisons, prefixes, lengths and white space work on those bytes
//! unchanged; a Python string is made back with the same handler.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};
use std::borrow::Cow;
use std::collections::HashMap;

use crate::read::dumps::float_repr;

/// WTF-8 text (see the module's doc).
pub type Text<'a> = Cow<'a, [u8]>;

/// A value as Python held it. `Dict` keeps insertion order; its keys are unique.
#[derive(Clone)]
pub enum V<'a, 'py> {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(Text<'a>),
    Bytes(Cow<'a, [u8]>),
    List(Vec<V<'a, 'py>>),
    Dict(Vec<(V<'a, 'py>, V<'a, 'py>)>),
    /// Anything else (an int outside 64 bits, a tuple, a set, an object): Python's own
    /// functions answer for it.
    Py(Bound<'py, PyAny>),
}

// Values are read at most this deep; deeper ones (only Python can make them: json.loads
// past serde_json's 128 levels, or a caller's objects) stay Python objects.
const MAX_DEPTH: u32 = 1000;

impl<'a, 'py> V<'a, 'py> {
    pub fn as_text(&self) -> Option<&[u8]> {
        match self {
            V::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_str(&self) -> bool {
        matches!(self, V::Str(_))
    }

    pub fn is_dict(&self) -> bool {
        matches!(self, V::Dict(_))
    }

    pub fn is_none(&self) -> bool {
        matches!(self, V::Null)
    }

    /// ``d.get(key)`` of a dict (None for any other value).
    pub fn get(&self, key: &str) -> Option<&V<'a, 'py>> {
        match self {
            V::Dict(items) => items.iter().find(|(k, _)| k.as_text() == Some(key.as_bytes())).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// ``v == s`` for a str ``s``: only a str equals one.
    pub fn eq_str(&self, s: &str) -> bool {
        self.as_text() == Some(s.as_bytes())
    }

    /// ``v == 1``: an int, True, or a float equal to it.
    pub fn eq_one(&self) -> PyResult<bool> {
        Ok(match self {
            V::Int(x) => *x == 1,
            V::Bool(b) => *b,
            V::Float(x) => *x == 1.0,
            V::Py(o) => o.eq(1)?,
            _ => false,
        })
    }

    /// Python's truth value.
    pub fn truthy(&self) -> PyResult<bool> {
        Ok(match self {
            V::Null => false,
            V::Bool(b) => *b,
            V::Int(x) => *x != 0,
            V::Float(x) => *x != 0.0, // NaN is true
            V::Str(s) => !s.is_empty(),
            V::Bytes(b) => !b.is_empty(),
            V::List(v) => !v.is_empty(),
            V::Dict(v) => !v.is_empty(),
            V::Py(o) => o.is_truthy()?,
        })
    }

    /// ``len(d)`` of a dict.
    pub fn dict_len(&self) -> usize {
        match self {
            V::Dict(items) => items.len(),
            _ => 0,
        }
    }

    /// ``str(v)``.
    pub fn py_str(&self, py: Python<'py>) -> PyResult<Text<'a>> {
        Ok(match self {
            V::Str(s) => s.clone(),
            V::Null => Cow::Borrowed(b"None"),
            V::Bool(true) => Cow::Borrowed(b"True"),
            V::Bool(false) => Cow::Borrowed(b"False"),
            V::Int(x) => Cow::Owned(x.to_string().into_bytes()),
            V::Float(x) => {
                let mut out = Vec::new();
                float_repr(*x, &mut out, false);
                Cow::Owned(out)
            }
            _ => Cow::Owned(text_of_py(&self.to_py(py, None)?.str()?)?),
        })
    }

    /// The Python object this value was (a new one: lists and dicts are built again).
    pub fn to_py(&self, py: Python<'py>, mut cache: Option<&mut Strings<'py>>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            V::Null => py.None().into_bound(py),
            V::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            V::Int(x) => x.into_pyobject(py)?.into_any(),
            V::Float(x) => PyFloat::new(py, *x).into_any(),
            V::Str(s) => match cache {
                Some(c) => c.text(py, s)?.into_any(),
                None => py_text(py, s)?.into_any(),
            },
            V::Bytes(b) => PyBytes::new(py, b).into_any(),
            V::List(items) => {
                let out = PyList::empty(py);
                for x in items {
                    out.append(x.to_py(py, cache.as_deref_mut())?)?;
                }
                out.into_any()
            }
            V::Dict(items) => {
                let out = PyDict::new(py);
                for (k, v) in items {
                    let k = k.to_py(py, cache.as_deref_mut())?;
                    out.set_item(k, v.to_py(py, cache.as_deref_mut())?)?;
                }
                out.into_any()
            }
            V::Py(o) => o.clone(),
        })
    }
}

/// A Python object as a value (strings copied: see `borrowed_text` for a top-level one).
pub fn from_py<'py>(obj: &Bound<'py, PyAny>, depth: u32) -> PyResult<V<'static, 'py>> {
    if depth > MAX_DEPTH {
        return Ok(V::Py(obj.clone()));
    }
    if obj.is_none() {
        return Ok(V::Null);
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(V::Str(Cow::Owned(text_of_py(s)?)));
    }
    if let Ok(b) = obj.downcast_exact::<PyBool>() {
        return Ok(V::Bool(b.is_true()));
    }
    if obj.is_exact_instance_of::<PyInt>() {
        return Ok(match obj.extract::<i64>() {
            Ok(x) => V::Int(x),
            Err(_) => V::Py(obj.clone()),
        });
    }
    if let Ok(f) = obj.downcast_exact::<PyFloat>() {
        return Ok(V::Float(f.value()));
    }
    if let Ok(b) = obj.downcast_exact::<PyBytes>() {
        return Ok(V::Bytes(Cow::Owned(b.as_bytes().to_vec())));
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        let mut out = Vec::with_capacity(l.len());
        for x in l.iter() {
            out.push(from_py(&x, depth + 1)?);
        }
        return Ok(V::List(out));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            out.push((from_py(&k, depth + 1)?, from_py(&v, depth + 1)?));
        }
        return Ok(V::Dict(out));
    }
    Ok(V::Py(obj.clone()))
}

/// A Python str's text, borrowed when it is UTF-8 (almost always), else its WTF-8 copy.
pub fn borrowed_text<'b>(s: &'b Bound<'_, PyString>) -> PyResult<Text<'b>> {
    match s.to_str() {
        Ok(t) => Ok(Cow::Borrowed(t.as_bytes())),
        Err(_) => Ok(Cow::Owned(surrogate_bytes(s)?)),
    }
}

pub fn text_of_py(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    match s.to_str() {
        Ok(t) => Ok(t.as_bytes().to_vec()),
        Err(_) => surrogate_bytes(s),
    }
}

fn surrogate_bytes(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
    Ok(b.downcast::<PyBytes>()?.as_bytes().to_vec())
}

/// The Python str of WTF-8 text: ``bytes.decode("utf-8", "surrogatepass")`` in one pass,
/// where validating in Rust first and then decoding read every byte twice.
pub fn py_text<'py>(py: Python<'py>, s: &[u8]) -> PyResult<Bound<'py, PyString>> {
    // SAFETY: the pointer and length are the slice's; the result is a new reference or
    // NULL with an exception set, which from_owned_ptr_or_err turns into PyErr
    unsafe {
        let obj = pyo3::ffi::PyUnicode_DecodeUTF8(s.as_ptr().cast(), s.len() as pyo3::ffi::Py_ssize_t,
                                                   c"surrogatepass".as_ptr());
        Ok(Bound::from_owned_ptr_or_err(py, obj)?.downcast_into_unchecked::<PyString>())
    }
}

/// A map keyed per process with foldhash: see native/Cargo.toml.
pub type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

// Short strings repeat (keys, names, roles, finish reasons): one Python object each per
// request, as the readers always shared them.
const SHARED_BYTES: usize = 32;

/// Python strings made so far within one request or file, shared when short.
pub struct Strings<'py> {
    seen: FastMap<Vec<u8>, Bound<'py, PyString>>,
    empty: Option<Bound<'py, PyString>>,
}

impl<'py> Strings<'py> {
    pub fn new() -> Self {
        Strings { seen: FastMap::default(), empty: None }
    }

    pub fn text(&mut self, py: Python<'py>, s: &[u8]) -> PyResult<Bound<'py, PyString>> {
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

/// A dict built key by key as Python builds one: a key given twice keeps its first place
/// and takes the last value. Past a few keys, an index (a repeated key is looked for on
/// every insert, and a hostile document may hold a million).
#[derive(Default)]
pub struct DictBuilder<'a, 'py> {
    pub items: Vec<(V<'a, 'py>, V<'a, 'py>)>,
    index: Option<FastMap<Vec<u8>, usize>>,
}

impl<'a, 'py> DictBuilder<'a, 'py> {
    pub fn insert(&mut self, k: Text<'a>, v: V<'a, 'py>) {
        let at = match &self.index {
            Some(ix) => ix.get(k.as_ref()).copied(),
            None => self.items.iter().position(|(x, _)| x.as_text() == Some(&k)),
        };
        match at {
            Some(i) => self.items[i].1 = v,
            None => {
                if let Some(ix) = self.index.as_mut() {
                    ix.insert(k.to_vec(), self.items.len());
                }
                self.items.push((V::Str(k), v));
                if self.index.is_none() && self.items.len() > 16 {
                    self.index = Some(self.items.iter().enumerate()
                        .map(|(i, (x, _))| (x.as_text().unwrap_or(b"").to_vec(), i)).collect());
                }
            }
        }
    }
}
