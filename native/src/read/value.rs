//! A span attribute's value, or a value decoded from the JSON one holds, as the conventions
//! (conventions.rs, payload.rs) read it: what Python's objects were to read/conventions.py,
//! without making them. Strings borrow the request's (or the file's, or the Python
//! string's) bytes; only what a record keeps becomes a Python object.
//!
//! Exactness is the point: a record's strings are compared byte for byte downstream, so
//! every rule below is Python's: ``str()`` of a value (``repr`` of a float), ``json.dumps``
//! with ``ensure_ascii=False`` and the default separators, ``json.loads`` (duplicate keys:
//! the first one's place, the last one's value), ``str.strip()``'s white space, truth
//! values. What is rare and long to get right is handed to Python itself: values that are
//! none of JSON's types (a tuple, a big int, a set: `V::Py`), JSON that serde_json refuses
//! (NaN, lone surrogates, nesting past 128: json.loads), ``str()`` of a container.
//!
//! Text is WTF-8: UTF-8, except that a lone surrogate (Python's str may hold one; OTLP/JSON
//! can write one as an escape) is encoded as its three bytes, as Python's ``surrogatepass``
//! error handler does. Comparisons, prefixes, lengths and white space work on those bytes
//! unchanged; a Python string is made back with the same handler.

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;

use crate::read::json::Input;

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
// json.dumps is written here for values at most this deep and left to Python beyond,
// where its RecursionError is its own to raise (payload.dumps turns it into a marker).
const MAX_DUMPS_DEPTH: u32 = 200;

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

// ------------------------------------------------------------------ text (WTF-8 bytes)

/// ``len(s)``: code points (a lone surrogate's three bytes are one).
pub fn char_len(s: &[u8]) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// ``str.isspace()`` of one code point: Unicode white space and the four ASCII separators
/// (0x1C-0x1F) Python counts too.
fn is_py_space(c: u32) -> bool {
    matches!(c, 0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F
        | 0x205F | 0x3000)
}

fn seq_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

fn code_point(s: &[u8]) -> u32 {
    let lead = s[0] as u32;
    let cont = |i: usize| s.get(i).map_or(0, |&b| (b & 0x3F) as u32);
    match s.len() {
        1 => lead,
        2 => ((lead & 0x1F) << 6) | cont(1),
        3 => ((lead & 0x0F) << 12) | (cont(1) << 6) | cont(2),
        _ => ((lead & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
    }
}

/// ``s.strip()``.
pub fn strip(s: &[u8]) -> &[u8] {
    let (mut a, mut b) = (0, s.len());
    while a < b {
        let n = seq_len(s[a]).min(b - a);
        if !is_py_space(code_point(&s[a..a + n])) {
            break;
        }
        a += n;
    }
    while b > a {
        let mut lead = b - 1;
        while lead > a && (s[lead] & 0xC0) == 0x80 && b - lead < 4 {
            lead -= 1;
        }
        if !is_py_space(code_point(&s[lead..b])) {
            break;
        }
        b = lead;
    }
    &s[a..b]
}

/// ``(s[:1], s[-1:])`` is ``(open, close)`` (both ASCII, so a byte test is the same).
pub fn bracketed(s: &[u8]) -> bool {
    s.len() >= 2 && matches!((s[0], s[s.len() - 1]), (b'[', b']') | (b'{', b'}'))
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// ``s.lower()`` / ``s.upper()``: ASCII here, anything else by Python's Unicode rules.
pub fn lower<'a>(py: Python<'_>, s: Text<'a>) -> PyResult<Text<'a>> {
    recase(py, s, "lower", |b| b.to_ascii_lowercase())
}

pub fn upper<'a>(py: Python<'_>, s: Text<'a>) -> PyResult<Text<'a>> {
    recase(py, s, "upper", |b| b.to_ascii_uppercase())
}

fn recase<'a>(py: Python<'_>, s: Text<'a>, method: &str, ascii: fn(&[u8]) -> Vec<u8>) -> PyResult<Text<'a>> {
    if s.is_ascii() {
        return Ok(Cow::Owned(ascii(&s)));
    }
    Ok(Cow::Owned(text_of_py(&py_text(py, &s)?.call_method0(method)?.downcast_into::<PyString>()?)?))
}

/// An index as ``(\d{1,9})`` then ``int()`` read it: 1-9 decimal characters (any script's,
/// as Python's ``\d`` and ``int`` take them), None otherwise.
pub fn small_index(py: Python<'_>, s: &[u8]) -> PyResult<Option<i64>> {
    if s.is_empty() {
        return Ok(None);
    }
    if s.is_ascii() {
        if s.len() > 9 || !s.iter().all(u8::is_ascii_digit) {
            return Ok(None);
        }
        return Ok(Some(s.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64)));
    }
    if char_len(s) > 9 {
        return Ok(None);
    }
    let t = py_text(py, s)?;
    if !t.call_method0("isdecimal")?.is_truthy()? {
        return Ok(None);
    }
    py.get_type::<PyInt>().call1((t,))?.extract()
}

/// The rest of a key after a pattern's prefix as ``(.+)$`` takes it: no line break but one
/// final one (``$`` matches before it), at least one character.
pub fn rest_of_line(s: &[u8]) -> Option<&[u8]> {
    let body = match memchr::memchr(b'\n', s) {
        None => s,
        Some(i) if i + 1 == s.len() => &s[..i],
        Some(_) => return None,
    };
    if body.is_empty() {
        None
    } else {
        Some(body)
    }
}

// ------------------------------------------------------------------ repr(float)

/// ``repr(x)`` (``json``: json.dumps's spelling of the non-finite ones).
pub fn float_repr(x: f64, out: &mut Vec<u8>, json: bool) {
    if x.is_nan() {
        out.extend_from_slice(if json { b"NaN" } else { b"nan" });
        return;
    }
    if x.is_infinite() {
        let s: &[u8] = match (x > 0.0, json) {
            (true, true) => b"Infinity",
            (false, true) => b"-Infinity",
            (true, false) => b"inf",
            (false, false) => b"-inf",
        };
        out.extend_from_slice(s);
        return;
    }
    if x == 0.0 {
        out.extend_from_slice(if x.is_sign_negative() { b"-0.0" } else { b"0.0" });
        return;
    }
    // Rust's `{:e}` is the shortest decimal that reads back to x, the closest of those, as
    // Python's repr ('r', David Gay's mode 0); only the layout differs
    let s = format!("{:e}", x);
    let (mantissa, exp) = s.split_once('e').unwrap_or((&s, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: Vec<u8> = mantissa.bytes().filter(|&c| c != b'.').collect();
    let n = digits.len() as i32;
    let decpt = exp + 1;
    if neg {
        out.push(b'-');
    }
    if decpt > -4 && decpt <= 16 {
        if decpt <= 0 {
            out.extend_from_slice(b"0.");
            out.extend(std::iter::repeat(b'0').take((-decpt) as usize));
            out.extend_from_slice(&digits);
        } else if decpt >= n {
            out.extend_from_slice(&digits);
            out.extend(std::iter::repeat(b'0').take((decpt - n) as usize));
            out.extend_from_slice(b".0");
        } else {
            out.extend_from_slice(&digits[..decpt as usize]);
            out.push(b'.');
            out.extend_from_slice(&digits[decpt as usize..]);
        }
    } else {
        out.push(digits[0]);
        if n > 1 {
            out.push(b'.');
            out.extend_from_slice(&digits[1..]);
        }
        let e = decpt - 1;
        out.push(b'e');
        out.push(if e < 0 { b'-' } else { b'+' });
        let e = e.unsigned_abs();
        if e < 10 {
            out.push(b'0');
        }
        out.extend_from_slice(e.to_string().as_bytes());
    }
}

// ------------------------------------------------------------------ json.dumps

/// Whether ``json.dumps`` runs with ``default=payload._plain`` (bytes as base64, anything
/// else ``str()``) or with no default (a value JSON cannot hold is a TypeError).
#[derive(Clone, Copy, PartialEq)]
pub enum Default {
    Plain,
    Strict,
}

/// Writing a value here would not be json.dumps's answer: Python writes it.
struct Unwritable;

/// ``json.dumps(v, ensure_ascii=False[, default=_plain])``; with ``Plain``, a value nested
/// too deep for Python is the marker payload.dumps gives.
pub fn dumps<'py>(py: Python<'py>, v: &V<'_, 'py>, default: Default) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    if write_json(v, &mut out, default, 0).is_ok() {
        return Ok(out);
    }
    let obj = v.to_py(py, None)?;
    let fallback = python(py)?.dumps(py, default)?;
    match fallback.call1((obj,)) {
        Ok(s) => text_of_py(s.downcast::<PyString>()?),
        Err(e) if default == Default::Plain && e.is_instance_of::<PyRecursionError>(py) => {
            Ok(b"[unreadable: nested too deep]".to_vec())
        }
        Err(e) => Err(e),
    }
}

fn write_json(v: &V, out: &mut Vec<u8>, default: Default, depth: u32) -> Result<(), Unwritable> {
    if depth > MAX_DUMPS_DEPTH {
        return Err(Unwritable);
    }
    match v {
        V::Null => out.extend_from_slice(b"null"),
        V::Bool(true) => out.extend_from_slice(b"true"),
        V::Bool(false) => out.extend_from_slice(b"false"),
        V::Int(x) => out.extend_from_slice(x.to_string().as_bytes()),
        V::Float(x) => float_repr(*x, out, true),
        V::Str(s) => json_string(s, out),
        V::Bytes(b) if default == Default::Plain => {
            out.push(b'"');
            base64(b, out);
            out.push(b'"');
        }
        V::List(items) => {
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                write_json(x, out, default, depth + 1)?;
            }
            out.push(b']');
        }
        V::Dict(items) => {
            out.push(b'{');
            for (i, (k, x)) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(b", ");
                }
                match k {
                    V::Str(s) => json_string(s, out),
                    _ => return Err(Unwritable),
                }
                out.extend_from_slice(b": ");
                write_json(x, out, default, depth + 1)?;
            }
            out.push(b'}');
        }
        _ => return Err(Unwritable),
    }
    Ok(())
}

/// A JSON string as json.dumps writes it with ensure_ascii=False: only the quote, the
/// backslash and control characters escaped (lowercase hex).
fn json_string(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(c >> 4) as usize]);
            out.push(HEX[(c & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// ``base64.b64encode(b)`` (payload._plain's spelling of bytes).
fn base64(b: &[u8], out: &mut Vec<u8>) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | (x as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
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

// ------------------------------------------------------------------ json.loads

/// ``json.loads(text)`` as a value, or None where json.loads raises ValueError (payload.loads
/// turns its RecursionError into one too). What serde_json refuses is Python's to read.
pub fn loads<'a, 'py>(py: Python<'py>, text: &'a [u8]) -> PyResult<Option<V<'a, 'py>>> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let mut d = serde_json::Deserializer::from_slice(text);
        let v = Seed(py, Input::of(text)).deserialize(&mut d).ok()?;
        d.end().ok()?;
        Some(v)
    }));
    if let Ok(Some(v)) = outcome {
        return Ok(Some(v));
    }
    let s = py_text(py, text)?;
    match python(py)?.json_loads.bind(py).call1((s,)) {
        Ok(obj) => Ok(Some(from_py(&obj, 0)?)),
        Err(e) if e.is_instance_of::<PyValueError>(py) || e.is_instance_of::<PyRecursionError>(py) => Ok(None),
        Err(e) => Err(e),
    }
}

#[derive(Clone, Copy)]
struct Seed<'py>(Python<'py>, Input);

impl<'de, 'py> DeserializeSeed<'de> for Seed<'py> {
    type Value = V<'de, 'py>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de, 'py> Visitor<'de> for Seed<'py> {
    type Value = V<'de, 'py>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(V::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(V::Bool(b))
    }
    fn visit_i64<E>(self, x: i64) -> Result<Self::Value, E> {
        Ok(V::Int(x))
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> Result<Self::Value, E> {
        Ok(match i64::try_from(x) {
            Ok(x) => V::Int(x),
            Err(_) => V::Py(x.into_pyobject(self.0).map_err(|e| match e {})?.into_any()),
        })
    }
    fn visit_f64<E>(self, x: f64) -> Result<Self::Value, E> {
        Ok(V::Float(x))
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(V::Str(Cow::Borrowed(s.as_bytes())))
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(V::Str(Cow::Owned(s.as_bytes().to_vec())))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(V::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut d = DictBuilder::default();
        while let Some(k) = map.next_key_seed(Key(self.1))? {
            let k = match k {
                None if d.items.is_empty() => {
                    let text: String = map.next_value()?;
                    return number(self.0, &text);
                }
                None => Cow::Borrowed(crate::read::json::NUMBER_TOKEN.as_bytes()),
                Some(k) => k,
            };
            let v = map.next_value_seed(self)?;
            d.insert(k, v);
        }
        Ok(V::Dict(d.items))
    }
}

/// A number serde_json kept as text: a float, or an integer outside 64 bits.
fn number<'de, 'py, E: de::Error>(py: Python<'py>, text: &str) -> Result<V<'de, 'py>, E> {
    if text.contains(['.', 'e', 'E']) {
        return text.parse::<f64>().map(V::Float).map_err(E::custom);
    }
    if text == "-0" {
        return Ok(V::Int(0));
    }
    // int() refuses past 4,300 digits as json.loads does; that refusal goes back to it
    py.get_type::<PyInt>().call1((text,)).map(V::Py).map_err(E::custom)
}

/// An object's key; None for serde_json's number marker.
struct Key(Input);

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Option<Text<'de>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Option<Text<'de>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(if self.0.is_marker(s) { None } else { Some(Cow::Borrowed(s.as_bytes())) })
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(Cow::Owned(s.as_bytes().to_vec())))
    }
}

// ------------------------------------------------------------------ Python's own functions

/// The Python functions the rare paths call, looked up once.
pub struct Python_ {
    pub json_loads: Py<PyAny>,
    plain_dumps: Py<PyAny>,
    strict_dumps: Py<PyAny>,
    pub literal_eval: Py<PyAny>,
    pub str_dumps: Py<PyAny>,
}

impl Python_ {
    fn dumps<'py>(&self, py: Python<'py>, default: Default) -> PyResult<Bound<'py, PyAny>> {
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
