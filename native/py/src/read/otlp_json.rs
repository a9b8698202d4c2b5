//! OTLP/JSON (`{"resourceSpans": [...]}`) -> its spans' records (conventions.rs builds them,
//! as for the protobuf reader).
//!
//! Why it exists: the Python reader built the whole document as Python objects (json) and
//! then read every span's attributes through them, most of `check`'s read (bench/README.md).
//! Here the file's bytes are lexed by serde_json into a borrowed tree and only what a record
//! holds becomes Python objects.
//!
//! What it accepts and refuses, and every message, are the Python reader's (tests/read/
//! test_otlp_json_compiled.py keeps that reader as the oracle). Python's own conversions are
//! called wherever their rules are long (`int()` of a string that is not plain digits,
//! `float()` of a string, base64, an id that is not lowercase hex, `repr` in messages): only
//! uncommon input takes them. A document serde_json refuses but Python reads (NaN, Infinity,
//! lone surrogates, a byte order mark, nesting past 128) is parsed by Python and read from
//! its objects (`OtlpJson.read_doc`), through the same walk.

use pyo3::create_exception;
use pyo3::exceptions::{
    PyAttributeError, PyKeyError, PyOverflowError, PyRecursionError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use faultgate_core::model::value::{DictBuilder, Text, Value};
use faultgate_core::read::attrs::{Attr, Attrs};
use faultgate_core::read::content_events::{self, Event};
use faultgate_core::read::conventions::{self, Kept, SpanHead};
use faultgate_core::read::otlp_proto::{evaluation, EVALUATIONS};
use crate::convert::{text_of, value_of, OrRaise, Strings};
use crate::read::json::{parse, Input};
use crate::records::{from_built, Head};
use serde::de::{DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

create_exception!(_native, OtlpJsonError, PyValueError, "OTLP/JSON the reader refuses; the message says where and why.");

// Python's value() recursion gives out about here on documents Python parsed (serde_json
// stops at 128 levels of JSON, far fewer AnyValues)
const MAX_VALUE_DEPTH: u32 = 300;
// Python's values are copied this deep at most (more than MAX_VALUE_DEPTH AnyValues take),
// which keeps the stack bounded whatever Python parsed.
const MAX_FROM_PYTHON: u32 = 1500;
// Short string values are shared within a document, as lib.rs shares them in a request.
const SHARED_VALUE_CHARS: usize = 32;
const STATUS_NAMES: [(&str, i64); 3] = [("STATUS_CODE_UNSET", 0), ("STATUS_CODE_OK", 1), ("STATUS_CODE_ERROR", 2)];

/// A JSON value as json.loads would give it, borrowed from the file's bytes where it can be.
/// Its lists, objects and unescaped strings are in one arena per read (`Arena`): allocating,
/// growing and freeing each of them was 7 M of the 81 M instructions of reading the four
/// gate files (callgrind), and the arena frees the whole tree at once, with no walk.
#[derive(Clone, Copy)]
enum Node<'a> {
    Null,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Big(&'a str), // an integer literal outside 64 bits
    Str(&'a str),
    PyStr(&'a PyObject), // from Python: a str Rust cannot hold (a lone surrogate)
    PyInt(&'a PyObject), // from Python: an int outside 64 bits
    Deep(&'a PyObject),  // from Python: a value nested deeper than MAX_FROM_PYTHON, left as it is
    Arr(&'a [Node<'a>]),
    Obj(&'a [(Node<'a>, Node<'a>)]),
}

/// Where one read's tree lives: its slices and unescaped strings in a bump arena, freed
/// whole when the read is over; the Python objects a tree from Python holds, in an arena
/// that releases them then.
#[derive(Default)]
struct Arena {
    bump: bumpalo::Bump,
    objects: typed_arena::Arena<PyObject>,
}

impl<'a> Node<'a> {
    fn get(&self, key: &str) -> Option<&Node<'a>> {
        // a key written twice: the last wins, as in a dict json.loads builds
        match self {
            Node::Obj(items) => items.iter().rev().find(|(k, _)| k.text() == Some(key)).map(|(_, v)| v),
            _ => None,
        }
    }

    fn text(&self) -> Option<&str> {
        match self {
            Node::Str(s) => Some(s),
            _ => None,
        }
    }

    fn is_str(&self) -> bool {
        matches!(self, Node::Str(_) | Node::PyStr(_))
    }

    /// Python's truth value of the object.
    fn truthy(&self) -> bool {
        match self {
            Node::Null => false,
            Node::Bool(b) => *b,
            Node::Int(x) => *x != 0,
            Node::UInt(x) => *x != 0,
            Node::Float(x) => *x != 0.0, // NaN is true
            Node::Big(_) | Node::PyStr(_) | Node::PyInt(_) => true,
            Node::Deep(o) => Python::with_gil(|py| o.bind(py).is_truthy().unwrap_or(true)),
            Node::Str(s) => !s.is_empty(),
            Node::Arr(v) => !v.is_empty(),
            Node::Obj(v) => !v.is_empty(),
        }
    }

    fn type_name(&self) -> Cow<'static, str> {
        Cow::Borrowed(match self {
            Node::Null => "NoneType",
            Node::Bool(_) => "bool",
            Node::Int(_) | Node::UInt(_) | Node::Big(_) | Node::PyInt(_) => "int",
            Node::Float(_) => "float",
            Node::Str(_) | Node::PyStr(_) => "str",
            Node::Arr(_) => "list",
            Node::Obj(_) => "dict",
            Node::Deep(o) => {
                return Python::with_gil(|py| o.bind(py).get_type().name().map_or(Cow::Borrowed("object"), |n| Cow::Owned(n.to_string())))
            }
        })
    }
}

/// The input's address range (serde_json's number marker is a key it makes up, outside
/// it) and the arena the tree is built in.
#[derive(Clone, Copy)]
struct NodeVisitor<'a>(Input, &'a bumpalo::Bump);

impl<'de: 'a, 'a> DeserializeSeed<'de> for NodeVisitor<'a> {
    type Value = Node<'a>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Node<'a>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for NodeVisitor<'a> {
    type Value = Node<'a>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Node<'a>, E> {
        Ok(Node::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Node<'a>, E> {
        Ok(Node::Bool(b))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Node<'a>, E> {
        Ok(Node::Int(x))
    }
    fn visit_u64<E>(self, x: u64) -> Result<Node<'a>, E> {
        Ok(Node::UInt(x))
    }
    fn visit_f64<E>(self, x: f64) -> Result<Node<'a>, E> {
        Ok(Node::Float(x))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Node<'a>, E> {
        Ok(Node::Str(s))
    }
    fn visit_str<E>(self, s: &str) -> Result<Node<'a>, E> {
        Ok(Node::Str(self.1.alloc_str(s)))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Node<'a>, A::Error> {
        let mut out = bumpalo::collections::Vec::with_capacity_in(seq.size_hint().unwrap_or(0), self.1);
        while let Some(v) = seq.next_element_seed(self)? {
            out.push(v);
        }
        Ok(Node::Arr(out.into_bump_slice()))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Node<'a>, A::Error> {
        let mut out = bumpalo::collections::Vec::new_in(self.1);
        while let Some((k, marker)) = map.next_key_seed(KeySeed(self))? {
            if out.is_empty() && marker {
                // a number serde_json kept as text: a float, or an integer outside 64 bits
                let text: String = map.next_value()?;
                return Ok(if text.contains(['.', 'e', 'E']) {
                    // Rust's and Python's float() both round correctly: the same value
                    Node::Float(text.parse().unwrap_or(f64::NAN))
                } else if text == "-0" {
                    Node::Int(0)
                } else {
                    Node::Big(self.1.alloc_str(&text))
                });
            }
            out.push((k, map.next_value_seed(self)?));
        }
        Ok(Node::Obj(out.into_bump_slice()))
    }
}

/// An object's key, and whether it is serde_json's number marker: the marker's own text,
/// not borrowed from the input. An escaped key is unescaped into the arena, outside the
/// input too, but it is an ordinary key whatever its text.
struct KeySeed<'a>(NodeVisitor<'a>);

impl<'de: 'a, 'a> DeserializeSeed<'de> for KeySeed<'a> {
    type Value = (Node<'a>, bool);

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de: 'a, 'a> Visitor<'de> for KeySeed<'a> {
    type Value = (Node<'a>, bool);

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok((Node::Str(s), self.0 .0.is_marker(s)))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok((Node::Str(self.0 .1.alloc_str(s)), false))
    }
}

/// The tree of objects json.loads (or msgspec) made, for documents serde_json refuses.
fn from_python<'a>(obj: &Bound<'_, PyAny>, depth: u32, arena: &'a Arena) -> PyResult<Node<'a>> {
    let keep = |o: &Bound<'_, PyAny>| &*arena.objects.alloc(o.clone().unbind());
    if depth > MAX_FROM_PYTHON {
        return Ok(Node::Deep(keep(obj)));
    }
    if obj.is_none() {
        return Ok(Node::Null);
    }
    if let Ok(b) = obj.downcast_exact::<PyBool>() {
        return Ok(Node::Bool(b.is_true()));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(match s.to_str() {
            Ok(t) => Node::Str(arena.bump.alloc_str(t)),
            Err(_) => Node::PyStr(keep(obj)),
        });
    }
    if obj.is_instance_of::<PyInt>() {
        return Ok(if let Ok(x) = obj.extract::<i64>() {
            Node::Int(x)
        } else if let Ok(x) = obj.extract::<u64>() {
            Node::UInt(x)
        } else {
            Node::PyInt(keep(obj))
        });
    }
    if let Ok(f) = obj.downcast::<PyFloat>() {
        return Ok(Node::Float(f.value()));
    }
    if let Ok(l) = obj.downcast::<PyList>() {
        let items = l.iter().map(|x| from_python(&x, depth + 1, arena)).collect::<PyResult<Vec<_>>>()?;
        return Ok(Node::Arr(arena.bump.alloc_slice_copy(&items)));
    }
    if let Ok(d) = obj.downcast::<PyDict>() {
        let mut out = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            out.push((from_python(&k, depth + 1, arena)?, from_python(&v, depth + 1, arena)?));
        }
        return Ok(Node::Obj(arena.bump.alloc_slice_copy(&out)));
    }
    Err(PyTypeError::new_err(format!("not a JSON value: {}", obj.get_type().name()?)))
}

/// Why a step failed: a refusal with its message, or a Python exception to pass on.
enum Fail {
    Input(String),
    Py(PyErr),
}

impl From<std::convert::Infallible> for Fail {
    fn from(e: std::convert::Infallible) -> Fail {
        match e {}
    }
}

impl From<PyErr> for Fail {
    fn from(e: PyErr) -> Fail {
        Fail::Py(e)
    }
}

type Res<T> = Result<T, Fail>;

/// A failure inside `value()` as Python's `except (...) as e` saw it: (type name, message).
fn caught_in_value(py: Python<'_>, f: Fail) -> Res<(String, String)> {
    match f {
        Fail::Input(m) => Ok(("InputError".to_owned(), m)),
        Fail::Py(e) => {
            let t = e.get_type(py);
            let caught = [
                t.is_subclass_of::<PyTypeError>()?,
                t.is_subclass_of::<PyValueError>()?, // binascii.Error and UnicodeError among them
                t.is_subclass_of::<PyKeyError>()?,
                t.is_subclass_of::<PyAttributeError>()?,
                t.is_subclass_of::<PyOverflowError>()?,
                t.is_subclass_of::<PyRecursionError>()?,
            ];
            if !caught.iter().any(|&c| c) {
                return Err(Fail::Py(e));
            }
            Ok((t.name()?.to_string(), e.value(py).str()?.to_string()))
        }
    }
}

/// Python's ``s[:n]`` of a str: ``n`` code points.
fn head(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// The reader, with the Python functions whose rules it follows rather than repeats.
#[pyclass(frozen)]
pub struct OtlpJson {
    version_key: String,
    event_name: String,
    hex_id: PyObject,    // read/ids.py's hex_id, for ids that are not lowercase hex already
    b64decode: PyObject, // base64.b64decode, for bytesValue
}

/// One read's state: the Python strings made so far, shared (keys, ids, short values).
struct Walk<'t, 'py> {
    py: Python<'py>,
    r: &'t OtlpJson,
    strings: FastMap<&'t str, Bound<'py, PyString>>,
}

impl<'t, 'py> Walk<'t, 'py> {
    fn shared(&mut self, s: &'t str) -> Bound<'py, PyString> {
        let py = self.py;
        self.strings.entry(s).or_insert_with(|| PyString::new(py, s)).clone()
    }

    /// The object json.loads would have made of ``n``.
    fn obj(&mut self, n: &'t Node) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        Ok(match n {
            Node::Null => py.None().into_bound(py),
            Node::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
            Node::Int(x) => x.into_pyobject(py)?.into_any(),
            Node::UInt(x) => x.into_pyobject(py)?.into_any(),
            Node::Float(x) => PyFloat::new(py, *x).into_any(),
            Node::Big(t) => py.get_type::<PyInt>().call1((*t,))?,
            Node::Str(s) if s.chars().nth(SHARED_VALUE_CHARS).is_none() => self.shared(s).into_any(),
            Node::Str(s) => PyString::new(py, s).into_any(),
            Node::PyStr(o) | Node::PyInt(o) | Node::Deep(o) => o.bind(py).clone(),
            Node::Arr(items) => {
                let out = PyList::empty(py);
                for x in items.iter() {
                    out.append(self.obj(x)?)?;
                }
                out.into_any()
            }
            Node::Obj(items) => {
                let out = PyDict::new(py);
                for (k, v) in items.iter() {
                    out.set_item(self.obj(k)?, self.obj(v)?)?;
                }
                out.into_any()
            }
        })
    }

    /// ``repr(x)`` of an optional node (absent: None).
    fn repr(&mut self, n: Option<&'t Node>) -> PyResult<String> {
        Ok(match n {
            Some(n) => self.obj(n)?.repr()?.to_string(),
            None => "None".to_owned(),
        })
    }

    /// ``str(x)`` of a node, as the reader takes names and messages.
    fn str(&mut self, n: &'t Node) -> PyResult<Bound<'py, PyString>> {
        match n {
            Node::Str(s) => Ok(PyString::new(self.py, s)),
            _ => self.obj(n)?.str(),
        }
    }

    /// read/ids.py's ``hex_id(str(raw), nbytes)``: the common case here, the rest there.
    fn hex_id(&mut self, raw: Option<&'t Node>, nbytes: usize) -> PyResult<Option<Bound<'py, PyString>>> {
        if let Some(Node::Str(s)) = raw {
            let b = s.as_bytes();
            if b.len() == 2 * nbytes && b.iter().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')) {
                return Ok(if b.iter().all(|&c| c == b'0') { None } else { Some(self.shared(s)) });
            }
        }
        let text = match raw {
            None => PyString::new(self.py, ""),
            Some(n) => self.str(n)?,
        };
        let h = self.r.hex_id.bind(self.py).call1((text, nbytes))?;
        Ok(if h.is_none() { None } else { Some(h.downcast_into::<PyString>()?) })
    }

    /// ``int(x)``, plain digits here and anything else by Python's rules.
    fn int(&mut self, n: &'t Node) -> PyResult<Bound<'py, PyAny>> {
        let py = self.py;
        match n {
            Node::Int(x) => Ok(x.into_pyobject(py)?.into_any()),
            Node::UInt(x) => Ok(x.into_pyobject(py)?.into_any()),
            // nanosecond times have 19 digits, and a u64 holds any 19 (20 may overflow)
            Node::Str(s) if !s.is_empty() && s.len() <= 19 && s.bytes().all(|c| c.is_ascii_digit()) => {
                Ok(s.parse::<u64>().expect("19 digits").into_pyobject(py)?.into_any())
            }
            _ => {
                let o = self.obj(n)?;
                py.get_type::<PyInt>().call1((o,))
            }
        }
    }

    /// read/otlp_json.py's ``value()``: an AnyValue as a plain value.
    fn value(&mut self, v: Option<&'t Node>, depth: u32) -> Res<Bound<'py, PyAny>> {
        let v = match v {
            Some(v @ Node::Obj(_)) => v,
            Some(v) => return Ok(self.obj(v)?),
            None => return Ok(self.py.None().into_bound(self.py)),
        };
        match self.any_value(v, depth) {
            Ok(x) => Ok(x),
            Err(f) => {
                let (t, m) = caught_in_value(self.py, f)?;
                Err(Fail::Input(head(&format!("not an AnyValue ({t}: {m})"), 200)))
            }
        }
    }

    fn any_value(&mut self, v: &'t Node, depth: u32) -> Res<Bound<'py, PyAny>> {
        let py = self.py;
        if depth > MAX_VALUE_DEPTH {
            return Err(PyRecursionError::new_err("maximum recursion depth exceeded").into());
        }
        if let Some(x) = v.get("stringValue") {
            return Ok(self.obj(x)?);
        }
        if let Some(x) = v.get("intValue") {
            return Ok(self.int(x)?);
        }
        if let Some(x) = v.get("doubleValue") {
            return Ok(match x {
                Node::Int(i) => PyFloat::new(py, *i as f64).into_any(),
                Node::UInt(u) => PyFloat::new(py, *u as f64).into_any(),
                Node::Float(f) => PyFloat::new(py, *f).into_any(),
                _ => {
                    let o = self.obj(x)?;
                    py.get_type::<PyFloat>().call1((o,))?
                }
            });
        }
        if let Some(x) = v.get("boolValue") {
            return Ok(PyBool::new(py, x.truthy()).to_owned().into_any());
        }
        if let Some(x) = v.get("arrayValue") {
            let out = PyList::empty(py);
            for item in self.values(x)? {
                out.append(self.value(Some(item), depth + 1)?)?;
            }
            return Ok(out.into_any());
        }
        if let Some(x) = v.get("kvlistValue") {
            let out = PyDict::new(py);
            for kv in self.values(x)? {
                let key = match (kv, kv.get("key")) {
                    (Node::Obj(_), Some(k)) if k.is_str() => self.obj(k)?,
                    _ => return Err(PyTypeError::new_err("a kvlist entry is not a {key, value} object").into()),
                };
                out.set_item(key, self.value(kv.get("value"), depth + 1)?)?;
            }
            return Ok(out.into_any());
        }
        if let Some(x) = v.get("bytesValue") {
            let o = self.obj(x)?;
            return Ok(self.r.b64decode.bind(py).call1((o,))?);
        }
        Ok(py.None().into_bound(py))
    }

    /// ``(container or {}).get("values", [])``, which must be a list.
    fn values(&mut self, container: &'t Node) -> Res<&'t [Node<'t>]> {
        if !container.truthy() {
            return Ok(&[]);
        }
        if !matches!(container, Node::Obj(_)) {
            let t = container.type_name();
            return Err(PyAttributeError::new_err(format!("'{t}' object has no attribute 'get'")).into());
        }
        match container.get("values") {
            None => Ok(&[]),
            Some(Node::Arr(items)) => Ok(items),
            Some(_) => Err(PyTypeError::new_err("values is not a list").into()),
        }
    }

    /// A span's attributes: the common ``stringValue`` read where it lies, the rest by value().
    /// The records hold the core's values (`SpanAttributes`), made Python's again when read.
    fn attributes(&mut self, kvs: &'t [Node<'t>], where_: &dyn Fn() -> String) -> Res<Attrs<'t>> {
        let mut out = Attrs::with_capacity(kvs.len());
        for kv in kvs {
            let key = match (kv, kv.get("key")) {
                (Node::Obj(_), Some(k)) if k.is_str() => k,
                _ => return Err(Fail::Input(format!("{}.attributes: expected {{key, value}} objects", where_()))),
            };
            let (key, key_py): (Text<'t>, Option<Bound<'py, PyAny>>) = match key {
                Node::Str(s) => (Cow::Borrowed(s.as_bytes()), None),
                _ => {
                    let k = self.obj(key)?;
                    (Cow::Owned(text_of(k.downcast::<PyString>().map_err(PyErr::from)?)?.into_owned()), Some(k))
                }
            };
            let v = kv.get("value");
            let val = match v.and_then(|v| v.get("stringValue")) {
                Some(s) => self.node_value(s)?,
                None => match self.value(v, 0) {
                    Ok(x) => value_of(&x, 0)?.into_owned(),
                    Err(Fail::Input(m)) => {
                        let k = match &key_py {
                            Some(k) => k.clone(),
                            None => self.obj(kv.get("key").expect("checked"))?,
                        };
                        let r = k.repr()?;
                        return Err(Fail::Input(format!("{}.attributes[{r}]: {m}", where_())));
                    }
                    Err(e) => return Err(e),
                },
            };
            out.set(Attr { key, val, origin: None });
        }
        Ok(out)
    }

    /// A node as the conventions read it, strings borrowed from the document.
    fn node_value(&mut self, n: &'t Node) -> PyResult<Value<'t>> {
        Ok(match n {
            Node::Null => Value::Null,
            Node::Bool(b) => Value::Bool(*b),
            Node::Int(x) => Value::Int(*x),
            Node::UInt(x) => match i64::try_from(*x) {
                Ok(x) => Value::Int(x),
                Err(_) => Value::BigInt(Cow::Owned(x.to_string())),
            },
            Node::Float(x) => Value::Float(*x),
            Node::Str(s) => Value::Str(Cow::Borrowed(s.as_bytes())),
            Node::Big(t) => Value::BigInt(Cow::Borrowed(t)),
            Node::PyStr(_) | Node::PyInt(_) | Node::Deep(_) => value_of(&self.obj(n)?, 0)?.into_owned(),
            Node::Arr(items) => Value::List(items.iter().map(|x| self.node_value(x)).collect::<PyResult<_>>()?),
            Node::Obj(items) => {
                let mut d = DictBuilder::default();
                for (k, v) in items.iter() {
                    let key = match k {
                        Node::Str(s) => Cow::Borrowed(s.as_bytes()),
                        _ => Cow::Owned(text_of(self.obj(k)?.downcast::<PyString>().map_err(PyErr::from)?)?.into_owned()),
                    };
                    let v = self.node_value(v)?;
                    d.insert(key, v);
                }
                Value::Dict(d.items)
            }
        })
    }

    /// ``str(x)`` of a node as text and as the Python str.
    fn str_text(&mut self, n: Option<&'t Node>) -> PyResult<(Text<'t>, Bound<'py, PyString>)> {
        Ok(match n {
            None => (Cow::Borrowed(b""), PyString::new(self.py, "")),
            Some(Node::Str(s)) => (Cow::Borrowed(s.as_bytes()), self.shared(s)),
            Some(n) => {
                let s = self.str(n)?;
                (Cow::Owned(text_of(&s)?.into_owned()), s)
            }
        })
    }

    /// The attributes of the span's events named ``event_name`` (events.py's ``from_json``
    /// reads the same ones), or None when there are none.
    fn evaluations(&mut self, events: Option<&'t Node>) -> Res<Option<Value<'static>>> {
        let items = match events {
            Some(Node::Arr(items)) => items,
            _ => return Ok(None),
        };
        let mut out: Vec<Value<'static>> = Vec::new();
        for e in items.iter() {
            let attrs = match (e, e.get("name"), e.get("attributes")) {
                (Node::Obj(_), Some(Node::Str(n)), Some(Node::Arr(a))) if n.as_ref() == self.r.event_name => a,
                _ => continue,
            };
            let d = self.event_attributes(attrs)?;
            if let Some(r) = evaluation(&value_of(d.as_any(), 0)?) {
                out.push(r);
            }
        }
        Ok(if out.is_empty() { None } else { Some(Value::Tuple(out)) })
    }

    /// An event's attributes as a dict, entries that are not ``{key, value}`` left out.
    fn event_attributes(&mut self, attrs: &'t [Node<'t>]) -> Res<Bound<'py, PyDict>> {
        let d = PyDict::new(self.py);
        for kv in attrs.iter() {
            match (kv, kv.get("key")) {
                (Node::Obj(_), Some(k)) if k.is_str() => {
                    let key = self.obj(k)?;
                    d.set_item(key, self.value(kv.get("value"), 0)?)?;
                }
                _ => {}
            }
        }
        Ok(d)
    }

    /// ``(name, attributes)`` of the span's events that may carry GenAI content (the core's
    /// read/content_events.rs), or None when there are none.
    fn content_events(&mut self, events: Option<&'t Node>) -> Res<Option<Vec<Event<'static>>>> {
        let items = match events {
            Some(Node::Arr(items)) => items,
            _ => return Ok(None),
        };
        let mut out: Option<Vec<Event<'static>>> = None;
        for e in items.iter() {
            let (name, attrs) = match (e, e.get("name"), e.get("attributes")) {
                (Node::Obj(_), Some(Node::Str(n)), Some(Node::Arr(a))) if content_events::is_content_event(n.as_bytes()) => {
                    (n, a)
                }
                _ => continue,
            };
            let d = self.event_attributes(attrs)?;
            let attrs = value_of(d.as_any(), 0)?.into_owned();
            out.get_or_insert_with(Vec::new).push((Cow::Owned(name.as_bytes().to_vec()), attrs));
        }
        Ok(out)
    }

    /// A time field: ``int(x or 0)``, refused when it is not an integer; with whether it is
    /// known to be a nanosecond time already (plain digits, or a JSON number in u64), which
    /// spares the caller converting it back to check.
    fn time(&mut self, s: &'t Node, field: &str, where_: &dyn Fn() -> String) -> Res<(Bound<'py, PyAny>, bool)> {
        let py = self.py;
        let raw = s.get(field);
        match raw {
            Some(n) if n.truthy() => {
                let known = match n {
                    Node::UInt(_) => true,
                    Node::Int(x) => *x >= 0,
                    Node::Str(t) => !t.is_empty() && t.len() <= 19 && t.bytes().all(|c| c.is_ascii_digit()),
                    _ => false,
                };
                match self.int(n) {
                    Ok(x) => Ok((x, known)),
                    Err(e) if e.is_instance_of::<PyTypeError>(py) || e.is_instance_of::<PyValueError>(py)
                        || e.is_instance_of::<PyOverflowError>(py) => {
                        Err(Fail::Input(format!("{}.{field}: {} is not an integer", where_(), self.repr(raw)?)))
                    }
                    Err(e) => Err(e.into()),
                }
            }
            _ => Ok((0i64.into_pyobject(py)?.into_any(), true)),
        }
    }

    /// The status code: an int as it is, a name or decimal digits read, else refused.
    fn status_code(&mut self, st: Option<&'t Node>, where_: &dyn Fn() -> String) -> Res<Bound<'py, PyAny>> {
        let py = self.py;
        let raw = st.and_then(|st| st.get("code"));
        Ok(match raw {
            None | Some(Node::Null) => 0i64.into_pyobject(py)?.into_any(),
            Some(n @ (Node::Int(_) | Node::UInt(_) | Node::Big(_) | Node::PyInt(_))) => self.obj(n)?,
            Some(Node::Str(s)) if STATUS_NAMES.iter().any(|(k, _)| k == s) => {
                let code = STATUS_NAMES.iter().find(|(k, _)| k == s).expect("found").1;
                code.into_pyobject(py)?.into_any()
            }
            Some(Node::Str(s)) if !s.is_empty() && s.len() <= 10 && s.bytes().all(|c| c.is_ascii_digit()) => {
                s.parse::<i64>().expect("10 digits").into_pyobject(py)?.into_any()
            }
            _ => return Err(Fail::Input(format!("{}.status.code: {} is not a status code", where_(), self.repr(raw)?))),
        })
    }

    /// One span object -> its row (read/otlp_json.py's ``_span`` before ``build_span``),
    /// its checks in that function's order, so the first problem named is the same.
    fn span(&mut self, s: &'t Node, i: usize, j: usize, k: usize) -> Res<Row<'t, 'py>> {
        let py = self.py;
        let where_ = || format!("resourceSpans[{i}].scopeSpans[{j}].spans[{k}]");
        if !matches!(s, Node::Obj(_)) {
            return Err(Fail::Input(format!("{}: expected an object", where_())));
        }
        let Some(tid) = self.hex_id(s.get("traceId"), 16)? else {
            let r = self.repr(s.get("traceId"))?;
            return Err(Fail::Input(format!("{}.traceId: {r} is not a 32-digit hex trace id", where_())));
        };
        let Some(sid) = self.hex_id(s.get("spanId"), 8)? else {
            let r = self.repr(s.get("spanId"))?;
            return Err(Fail::Input(format!("{}.spanId: {r} is not a 16-digit hex span id", where_())));
        };
        let parent = match s.get("parentSpanId") {
            Some(p) if p.truthy() => match self.hex_id(Some(p), 8)? {
                Some(h) => Some(h.into_any()),
                None => {
                    let r = self.repr(Some(p))?;
                    return Err(Fail::Input(format!("{}.parentSpanId: {r} is not a 16-digit hex span id", where_())));
                }
            },
            _ => None,
        };
        let kvs: &[Node] = match s.get("attributes") {
            Some(a) if !a.truthy() => &[],
            None => &[],
            Some(Node::Arr(items)) => items,
            Some(_) => {
                return Err(Fail::Input(format!("{}.attributes: expected a list of {{key, value}} objects", where_())))
            }
        };
        let attrs = self.attributes(kvs, &where_)?;
        let (evaluations, content) = match s.get("events") {
            Some(e) if e.truthy() => (self.evaluations(Some(e))?, self.content_events(Some(e))?),
            _ => (None, None),
        };
        let st = match s.get("status") {
            Some(st) if !st.truthy() => None,
            None => None,
            Some(st @ Node::Obj(_)) => Some(st),
            Some(_) => return Err(Fail::Input(format!("{}.status: expected an object", where_()))),
        };
        let name = self.str_text(s.get("name"))?;
        let (start, start_known) = self.time(s, "startTimeUnixNano", &where_)?;
        let (end, end_known) = self.time(s, "endTimeUnixNano", &where_)?;
        for (field, t, known) in [("startTimeUnixNano", &start, start_known), ("endTimeUnixNano", &end, end_known)] {
            if !known && t.extract::<u64>().is_err() {
                let r = self.repr(s.get(field))?;
                return Err(Fail::Input(format!("{}.{field}: {r} is not a nanosecond time (0 to 2^64-1)", where_())));
            }
        }
        let code = self.status_code(st, &where_)?;
        let message = self.str_text(st.and_then(|st| st.get("message")))?;
        let failed = code.eq(2)?;
        let has_parent = parent.is_some();
        let instant = start.eq(&end)?;
        Ok(Row {
            resource: i,
            head: Head {
                trace_id: tid.into_any(),
                span_id: sid.into_any(),
                parent: parent.unwrap_or_else(|| py.None().into_bound(py)),
                name: name.1.into_any(),
                start,
                end,
                status_code: code,
                message: message.1.into_any(),
            },
            span: SpanHead { name: name.0, has_parent, failed, message: message.0, instant },
            attrs,
            evaluations,
            content,
        })
    }

    /// ``obj[key]`` as a list (absent or null: none), else refused naming ``where_``.
    fn list_in(obj: &'t Node, key: &str, where_: &dyn Fn() -> String) -> Res<&'t [Node<'t>]> {
        match obj {
            Node::Null => return Ok(&[]),
            Node::Obj(_) => {}
            _ => return Err(Fail::Input(format!("{}: expected an object", where_()))),
        }
        match obj.get(key) {
            None | Some(Node::Null) => Ok(&[]),
            Some(Node::Arr(items)) => Ok(items),
            Some(_) => Err(Fail::Input(format!("{}.{key}: expected a list", where_()))),
        }
    }

    /// Each resource's ``version_key`` value (the last such attribute, None when absent),
    /// then every span's row, in document order.
    #[allow(clippy::type_complexity)]
    fn document(&mut self, doc: &'t Node) -> Res<(Vec<Value<'static>>, Vec<Row<'t, 'py>>)> {
        let py = self.py;
        let mut versions = Vec::new();
        let rss = doc.get("resourceSpans");
        if let Some(Node::Arr(rss)) = rss {
            for rs in rss.iter() {
                let mut version = py.None().into_bound(py);
                if let Some(Node::Arr(kvs)) = rs.get("resource").and_then(|r| r.get("attributes")) {
                    for kv in kvs.iter() {
                        if kv.get("key").and_then(Node::text) == Some(self.r.version_key.as_str()) {
                            version = self.value(kv.get("value"), 0)?;
                        }
                    }
                }
                versions.push(value_of(&version, 0)?.into_owned());
            }
        }
        let Some(Node::Arr(rss)) = rss else {
            return Err(Fail::Input("resourceSpans: expected a list".to_owned()));
        };
        let mut rows = Vec::new();
        for (i, rs) in rss.iter().enumerate() {
            let scope_list = Self::list_in(rs, "scopeSpans", &|| format!("resourceSpans[{i}]"))?;
            for (j, ss) in scope_list.iter().enumerate() {
                let spans = Self::list_in(ss, "spans", &|| format!("resourceSpans[{i}].scopeSpans[{j}]"))?;
                for (k, s) in spans.iter().enumerate() {
                    rows.push(self.span(s, i, j, k)?);
                }
            }
        }
        Ok((versions, rows))
    }
}

/// One span of the document, read and checked, before the conventions.
struct Row<'t, 'py> {
    resource: usize,
    head: Head<'py>,
    span: SpanHead<'t>,
    attrs: Attrs<'t>,
    evaluations: Option<Value<'static>>,
    /// its events that may carry GenAI content
    content: Option<Vec<Event<'static>>>,
}

impl OtlpJson {
    fn run<'py>(&self, py: Python<'py>, doc: &Node) -> PyResult<Bound<'py, PyList>> {
        let mut walk = Walk { py, r: self, strings: FastMap::default() };
        let (versions, rows) = walk.document(doc).map_err(|f| match f {
            Fail::Input(m) => OtlpJsonError::new_err(m),
            Fail::Py(e) => e,
        })?;
        // every span read and checked first: a document is refused whole, naming its first
        // problem, before any record is built
        let mut strings = Strings::default();
        let out = PyList::empty(py);
        for row in rows {
            let mut attrs = row.attrs;
            let version = &versions[row.resource];
            if version.truthy()
                && (!row.span.has_parent
                    || attrs.get("gen_ai.operation.name").is_some_and(|op| op.eq_str("invoke_agent")))
                && !attrs.has(&self.version_key)
            {
                attrs.set(Attr { key: Cow::Owned(self.version_key.as_bytes().to_vec()), val: version.clone(), origin: None });
            }
            if let Some(evaluations) = row.evaluations {
                attrs.set(Attr { key: Cow::Borrowed(EVALUATIONS.as_bytes()), val: evaluations, origin: None });
            }
            if let Some(events) = &row.content {
                content_events::add_to(&row.span.name, &mut attrs, events).or_raise()?;
            }
            let built = conventions::build(&row.span, attrs).or_raise()?;
            out.append(from_built(py, &mut strings, row.head, &built, &Kept::All, &[])?)?;
        }
        Ok(out)
    }
}

/// Runs `f`; a panic is an ordinary error (python/guard.rs).
fn guarded<T>(f: impl FnOnce() -> PyResult<T>) -> PyResult<T> {
    crate::python::guard::guarded("the compiled OTLP/JSON reader", f)
}

#[pymethods]
impl OtlpJson {
    #[new]
    fn new(version_key: String, event_name: String, hex_id: PyObject, b64decode: PyObject) -> Self {
        OtlpJson { version_key, event_name, hex_id, b64decode }
    }

    /// ``read_bytes(data) -> records | None``: None when ``data`` is not one JSON object
    /// with ``resourceSpans`` and without ``resourceLogs`` as serde_json reads JSON; the
    /// caller then parses it as Python does and calls ``read_doc``. Raises ``OtlpJsonError``
    /// naming the first problem.
    fn read_bytes<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Option<Bound<'py, PyList>>> {
        guarded(|| {
            let arena = Arena::default();
            let doc = match parse(data, NodeVisitor(Input::of(data), &arena.bump)) {
                Ok(doc) => doc,
                Err(_) => return Ok(None),
            };
            if !matches!(doc, Node::Obj(_)) || doc.get("resourceSpans").is_none() || doc.get("resourceLogs").is_some() {
                return Ok(None);
            }
            self.run(py, &doc).map(Some)
        })
    }

    /// ``read_doc(doc) -> records``: the same from a parsed document.
    fn read_doc<'py>(&self, py: Python<'py>, doc: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyList>> {
        guarded(|| {
            let arena = Arena::default();
            let doc = from_python(doc, 0, &arena)?;
            self.run(py, &doc)
        })
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<OtlpJson>()?;
    m.add("OtlpJsonError", m.py().get_type::<OtlpJsonError>())
}
