//! Tool results and arguments read as JSON exactly as `read.payload.loads` (that is,
//! `json.loads`) reads them, without making Python objects of them.
//!
//! serde_json reads the common text; what it refuses and `json.loads` may accept (NaN and
//! Infinity, lone surrogates, nesting past serde_json's 128 levels) goes to
//! `payload.loads`, as does an integer long enough that Python's digit limit may refuse
//! it (serde_json would read it). Text neither could read is `Refused`, and costs no call.
//! The differential tests (tests/checks/test_native_signals.py) hold the two readings equal.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyDict, PyFloat, PyList, PyString};
use rustc_hash::FxHashMap;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::value::RawValue;
use std::fmt;

use super::text;

/// A JSON value as `json.loads` would give it: integers as their text (any size), floats
/// as doubles (NaN and infinities included), strings as UTF-8 or surrogatepass bytes, an
/// object's keys in first-seen order with the last value written for each, as a dict.
#[derive(Debug, Clone, PartialEq)]
pub enum J {
    Null,
    Bool(bool),
    Int(String),
    Float(f64),
    Str(Vec<u8>),
    List(Vec<J>),
    Dict(Vec<(Vec<u8>, J)>),
}

// serde_json's marker key for a number kept as text (feature arbitrary_precision)
const NUMBER_TOKEN: &str = "$serde_json::private::Number";
// Python refuses integers longer than sys.get_int_max_str_digits() (4,300 by default; 640
// is the least it can be set to): a run of digits this long is left to Python.
const PYTHON_DIGIT_LIMIT: usize = 640;
// serde_json refuses nesting past 128 levels, Python reads deeper: text with this many
// brackets may be such a document, and is left to Python.
const DEEP_BRACKETS: usize = 100;

impl J {
    /// Python's truth value of the decoded value.
    pub fn truthy(&self) -> bool {
        match self {
            J::Null => false,
            J::Bool(b) => *b,
            J::Int(t) => t.bytes().any(|c| (b'1'..=b'9').contains(&c)),
            J::Float(f) => *f != 0.0,
            J::Str(s) => !s.is_empty(),
            J::List(v) => !v.is_empty(),
            J::Dict(v) => !v.is_empty(),
        }
    }

    /// `value == 0` in Python (so `False == 0` and `0.0 == 0` are true).
    pub fn equals_zero(&self) -> bool {
        match self {
            J::Bool(b) => !*b,
            J::Int(_) | J::Float(_) => !self.truthy() && !matches!(self, J::Float(f) if f.is_nan()),
            _ => false,
        }
    }

    /// The Python object `json.loads` made of it (for `str()` of a value a reason quotes).
    pub fn to_py<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(match self {
            J::Null => py.None().into_bound(py),
            J::Bool(b) => pyo3::types::PyBool::new(py, *b).to_owned().into_any(),
            J::Int(t) => py.get_type::<pyo3::types::PyInt>().call1((t.as_str(),))?,
            J::Float(f) => PyFloat::new(py, *f).into_any(),
            J::Str(s) => text::to_py(py, s)?.into_any(),
            J::List(v) => {
                let items = v.iter().map(|x| x.to_py(py)).collect::<PyResult<Vec<_>>>()?;
                PyList::new(py, items)?.into_any()
            }
            J::Dict(v) => {
                let d = PyDict::new(py);
                for (k, x) in v {
                    d.set_item(text::to_py(py, k)?, x.to_py(py)?)?;
                }
                d.into_any()
            }
        })
    }

    /// What `json.loads` gave, when serde_json could not read the text.
    fn from_py(o: &Bound<'_, PyAny>, depth: usize) -> PyResult<J> {
        if depth > 10_000 {
            return Err(PyValueError::new_err("JSON nested too deep to read"));
        }
        if o.is_none() {
            return Ok(J::Null);
        }
        if let Ok(b) = o.downcast::<pyo3::types::PyBool>() {
            return Ok(J::Bool(b.is_true()));
        }
        if o.downcast::<pyo3::types::PyInt>().is_ok() {
            return Ok(J::Int(o.str()?.to_str()?.to_owned()));
        }
        if let Ok(f) = o.downcast::<PyFloat>() {
            return Ok(J::Float(f.value()));
        }
        if let Ok(s) = o.downcast::<PyString>() {
            return Ok(J::Str(text::read(s)?.0.into_owned()));
        }
        if let Ok(l) = o.downcast::<PyList>() {
            return Ok(J::List(l.iter().map(|x| J::from_py(&x, depth + 1)).collect::<PyResult<_>>()?));
        }
        let d = o.downcast::<PyDict>()?;
        let mut items = Vec::with_capacity(d.len());
        for (k, v) in d.iter() {
            items.push((text::read_any(&k)?.0.into_owned(), J::from_py(&v, depth + 1)?));
        }
        Ok(J::Dict(items))
    }
}

/// What reading a text as JSON gave.
pub enum Loaded<'py> {
    Value(J),
    /// `json.loads`'s own value, for text serde_json could not read but Python did.
    Python(Bound<'py, PyAny>, J),
    /// `json.loads` raises ValueError on it.
    Refused,
}

static PAYLOAD_LOADS: GILOnceCell<PyObject> = GILOnceCell::new();

fn python_loads<'py>(py: Python<'py>, s: &[u8]) -> PyResult<Loaded<'py>> {
    let loads = PAYLOAD_LOADS.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import("faultgate_stream.read.payload")?.getattr("loads")?.unbind())
    })?;
    match loads.bind(py).call1((text::to_py(py, s)?,)) {
        Ok(v) => {
            let j = J::from_py(&v, 0)?;
            Ok(Loaded::Python(v, j))
        }
        Err(e) if e.is_instance_of::<PyValueError>(py) => Ok(Loaded::Refused),
        Err(e) => Err(e),
    }
}

/// Whether text serde_json refused may still be JSON to Python.
fn python_may_accept(s: &[u8]) -> bool {
    if std::str::from_utf8(s).is_err() {
        return true; // a lone surrogate inside a string: Python reads it
    }
    static NAN: text::Needle = crate::needle!(b"NaN");
    static INFINITY: text::Needle = crate::needle!(b"Infinity");
    if NAN.within(s) || INFINITY.within(s) {
        return true;
    }
    // a \uD800-\uDFFF escape: serde_json refuses a lone one
    if memchr::memmem::find_iter(s, b"\\u").any(|at| matches!(s.get(at + 2), Some(b'd' | b'D'))) {
        return true;
    }
    s.iter().filter(|&&c| c == b'[' || c == b'{').count() >= DEEP_BRACKETS
}

fn long_digit_run(s: &[u8]) -> bool {
    if s.len() < PYTHON_DIGIT_LIMIT {
        return false;
    }
    let mut run = 0;
    for &c in s {
        if c.is_ascii_digit() {
            run += 1;
            if run >= PYTHON_DIGIT_LIMIT {
                return true;
            }
        } else {
            run = 0;
        }
    }
    false
}

/// `payload.loads(s)`, as a value, Python's value, or a refusal (its ValueError).
pub fn loads<'py>(py: Python<'py>, s: &[u8]) -> PyResult<Loaded<'py>> {
    if long_digit_run(s) {
        return python_loads(py, s);
    }
    let outcome = std::panic::catch_unwind(|| {
        let mut d = serde_json::Deserializer::from_slice(s);
        let v = Seed(Input::of(s)).deserialize(&mut d).ok()?;
        d.end().ok()?;
        Some(v)
    });
    match outcome {
        Ok(Some(v)) => Ok(Loaded::Value(v)),
        _ if python_may_accept(s) => python_loads(py, s),
        _ => Ok(Loaded::Refused),
    }
}

impl<'py> Loaded<'py> {
    pub fn value(&self) -> Option<&J> {
        match self {
            Loaded::Value(j) | Loaded::Python(_, j) => Some(j),
            Loaded::Refused => None,
        }
    }
}

// ------------------------------------------------------------------ shallow reading

/// A text read only as deep as the signals look: the members of a top-level object (each
/// key once, with the last value written, in first-seen place, as a dict holds them) or the
/// items of a top-level array, each left as its JSON text until a rule asks for it.
pub enum Shallow<'a> {
    Dict(Vec<(Vec<u8>, Member<'a>)>),
    List(Vec<Member<'a>>),
    Scalar,
    /// `json.loads` raises ValueError on it
    Refused,
}

pub enum Member<'a> {
    Raw(&'a RawValue),
    /// a value only Python could read (what serde_json refused and `json.loads` did not)
    Decoded(J),
}

impl<'a> Shallow<'a> {
    pub fn get(&self, key: &[u8]) -> Option<&Member<'a>> {
        match self {
            Shallow::Dict(items) => items.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

impl Member<'_> {
    /// The value as `json.loads` gives it. serde_json skipped over it without decoding
    /// its strings, so a lone surrogate escape in it is read here, by Python.
    pub fn value(&self, py: Python<'_>) -> PyResult<J> {
        match self {
            Member::Decoded(j) => Ok(j.clone()),
            Member::Raw(r) => {
                let t = r.get().as_bytes();
                let mut d = serde_json::Deserializer::from_slice(t);
                match Seed(Input::of(t)).deserialize(&mut d) {
                    Ok(j) => Ok(j),
                    Err(_) => Ok(match python_loads(py, t)? {
                        Loaded::Python(_, j) | Loaded::Value(j) => j,
                        Loaded::Refused => J::Null,
                    }),
                }
            }
        }
    }

    /// `isinstance(v, list)`, and then whether it is empty.
    pub fn list_empty(&self) -> Option<bool> {
        match self {
            Member::Decoded(J::List(v)) => Some(v.is_empty()),
            Member::Decoded(_) => None,
            Member::Raw(r) => {
                let t = r.get().as_bytes();
                if t.first() != Some(&b'[') {
                    return None;
                }
                Some(t[1..t.len() - 1].iter().all(|c| matches!(c, b' ' | b'\t' | b'\n' | b'\r')))
            }
        }
    }
}

/// `payload.loads(s)`, read shallowly.
pub fn shallow<'a>(py: Python<'_>, s: &'a [u8]) -> PyResult<Shallow<'a>> {
    if !long_digit_run(s) {
        let outcome = std::panic::catch_unwind(|| {
            let mut d = serde_json::Deserializer::from_slice(s);
            let v = TopSeed(Input::of(s)).deserialize(&mut d).ok()?;
            d.end().ok()?;
            Some(v)
        });
        match outcome {
            Ok(Some(v)) => return Ok(v),
            _ if !python_may_accept(s) => return Ok(Shallow::Refused),
            _ => {}
        }
    }
    Ok(match python_loads(py, s)? {
        Loaded::Python(_, J::Dict(items)) => {
            Shallow::Dict(items.into_iter().map(|(k, v)| (k, Member::Decoded(v))).collect())
        }
        Loaded::Python(_, J::List(items)) => Shallow::List(items.into_iter().map(Member::Decoded).collect()),
        Loaded::Refused => Shallow::Refused,
        _ => Shallow::Scalar,
    })
}

#[derive(Clone, Copy)]
struct TopSeed(Input);

impl<'de> DeserializeSeed<'de> for TopSeed {
    type Value = Shallow<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Shallow<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TopSeed {
    type Value = Shallow<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_bool<E>(self, _: bool) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_str<E>(self, _: &str) -> Result<Shallow<'de>, E> {
        Ok(Shallow::Scalar)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Shallow<'de>, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element::<&'de RawValue>()? {
            items.push(Member::Raw(v));
        }
        Ok(Shallow::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Shallow<'de>, A::Error> {
        let mut items: Vec<(Vec<u8>, Member<'de>)> = Vec::new();
        let mut places: Option<FxHashMap<Vec<u8>, usize>> = None;
        let mut first = true;
        while let Some(k) = map.next_key_seed(KeySeed(self.0))? {
            let Some(k) = k else {
                if first {
                    map.next_value::<de::IgnoredAny>()?;
                    return Ok(Shallow::Scalar); // a number
                }
                return Err(de::Error::custom("number marker inside an object"));
            };
            first = false;
            let v = Member::Raw(map.next_value::<&'de RawValue>()?);
            if places.is_none() && items.len() >= 16 {
                places = Some(items.iter().enumerate().map(|(i, (x, _))| (x.clone(), i)).collect());
            }
            let at = match &places {
                Some(p) => p.get(&k).copied(),
                None => items.iter().position(|(x, _)| *x == k),
            };
            match at {
                Some(i) => items[i].1 = v,
                None => {
                    if let Some(p) = places.as_mut() {
                        p.insert(k.clone(), items.len());
                    }
                    items.push((k, v));
                }
            }
        }
        Ok(Shallow::Dict(items))
    }
}

// ------------------------------------------------------------------ serde_json -> J

/// The input's address range, which tells serde_json's number marker (a key it makes up)
/// from a key a document writes with the same text.
#[derive(Clone, Copy)]
struct Input(usize, usize);

impl Input {
    fn of(s: &[u8]) -> Input {
        let at = s.as_ptr() as usize;
        Input(at, at + s.len())
    }
}

#[derive(Clone, Copy)]
struct Seed(Input);

impl<'de> DeserializeSeed<'de> for Seed {
    type Value = J;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<J, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed {
    type Value = J;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<J, E> {
        Ok(J::Null)
    }
    fn visit_bool<E>(self, b: bool) -> Result<J, E> {
        Ok(J::Bool(b))
    }
    fn visit_i64<E>(self, x: i64) -> Result<J, E> {
        Ok(J::Int(x.to_string()))
    }
    fn visit_u64<E>(self, x: u64) -> Result<J, E> {
        Ok(J::Int(x.to_string()))
    }
    fn visit_f64<E>(self, x: f64) -> Result<J, E> {
        Ok(J::Float(x))
    }
    fn visit_str<E>(self, s: &str) -> Result<J, E> {
        Ok(J::Str(s.as_bytes().to_vec()))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<J, A::Error> {
        let mut items = Vec::new();
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        Ok(J::List(items))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<J, A::Error> {
        let mut items: Vec<(Vec<u8>, J)> = Vec::new();
        // where each key is, once an object is large enough that a scan per key would make
        // reading it quadratic
        let mut places: Option<FxHashMap<Vec<u8>, usize>> = None;
        let mut first = true;
        while let Some(k) = map.next_key_seed(KeySeed(self.0))? {
            let Some(k) = k else {
                if first {
                    let t: String = map.next_value()?;
                    return number(&t);
                }
                return Err(de::Error::custom("number marker inside an object"));
            };
            first = false;
            let v = map.next_value_seed(self)?;
            // a key written twice keeps its first place and its last value, as a dict does
            if places.is_none() && items.len() >= 16 {
                places = Some(items.iter().enumerate().map(|(i, (x, _))| (x.clone(), i)).collect());
            }
            let at = match &places {
                Some(p) => p.get(&k).copied(),
                None => items.iter().position(|(x, _)| *x == k),
            };
            match at {
                Some(i) => items[i].1 = v,
                None => {
                    if let Some(p) = places.as_mut() {
                        p.insert(k.clone(), items.len());
                    }
                    items.push((k, v));
                }
            }
        }
        Ok(J::Dict(items))
    }
}

/// A number serde_json kept as text: an int when it has no fraction or exponent (as
/// json.loads decides), else the double nearest to it (float() rounds the same way).
fn number<E: de::Error>(t: &str) -> Result<J, E> {
    if t.contains(['.', 'e', 'E']) {
        return t.parse::<f64>().map(J::Float).map_err(E::custom);
    }
    // int("-0") is 0
    let normal = if t.bytes().skip(1).all(|c| c == b'0') && t.starts_with('-') { "0".to_owned() } else { t.to_owned() };
    Ok(J::Int(normal))
}

/// An object's key, or None for serde_json's number marker.
#[derive(Clone, Copy)]
struct KeySeed(Input);

impl<'de> DeserializeSeed<'de> for KeySeed {
    type Value = Option<Vec<u8>>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed {
    type Value = Option<Vec<u8>>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        let at = s.as_ptr() as usize;
        if s == NUMBER_TOKEN && !(self.0 .0..self.0 .1).contains(&at) {
            return Ok(None);
        }
        Ok(Some(s.as_bytes().to_vec()))
    }
    // an escaped key, unescaped into serde_json's scratch: never the marker
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(s.as_bytes().to_vec()))
    }
}

// ------------------------------------------------------------------ canonical form

/// `json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode(v)`.
pub fn canonical(j: &J, out: &mut Vec<u8>) {
    match j {
        J::Null => out.extend_from_slice(b"null"),
        J::Bool(true) => out.extend_from_slice(b"true"),
        J::Bool(false) => out.extend_from_slice(b"false"),
        J::Int(t) => out.extend_from_slice(t.as_bytes()),
        J::Float(f) => out.extend_from_slice(json_float(*f).as_bytes()),
        J::Str(s) => quote(s, out),
        J::List(v) => {
            out.push(b'[');
            for (i, x) in v.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                canonical(x, out);
            }
            out.push(b']');
        }
        J::Dict(v) => {
            let mut items: Vec<&(Vec<u8>, J)> = v.iter().collect();
            // UTF-8 (and surrogatepass) byte order is code point order, as Python sorts str
            items.sort_by(|a, b| a.0.cmp(&b.0));
            out.push(b'{');
            for (i, (k, x)) in items.into_iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                quote(k, out);
                out.push(b':');
                canonical(x, out);
            }
            out.push(b'}');
        }
    }
}

/// The encoder's string form with ensure_ascii=False: only `"`, `\` and control
/// characters are escaped, these with lower-case hex.
fn quote(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &c in s {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0C => out.extend_from_slice(b"\\f"),
            0..=0x1F => out.extend_from_slice(format!("\\u{:04x}", c).as_bytes()),
            _ => out.push(c),
        }
    }
    out.push(b'"');
}

/// The encoder's float form: NaN and the infinities by their JavaScript names, every
/// other value as Python's `repr()` writes it.
fn json_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    faultgate_core::pyfmt::float::repr_string(f)
}

