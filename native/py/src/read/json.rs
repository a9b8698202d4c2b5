//! ``loads(text)``: JSON text -> the Python objects json.loads makes of it, for
//! read/payload.py, which hands whatever this refuses to json.loads (and so gives its value
//! or its error).
//!
//! Why it exists: payload.loads decoded with msgspec, whose import alone was ~16 ms of the
//! `check` command's ~170 (bench/README.md); this module is loaded by every reader anyway.
//! Numbers are read as json.loads reads them: integers of any size (serde_json keeps those
//! outside 64 bits as their text, feature arbitrary_precision) and floats rounded
//! correctly from their text (as Python's float() does), so ``1e400`` is infinity.

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::fmt;

// serde_json's marker for a number kept as its text (feature arbitrary_precision)
pub(crate) const NUMBER_TOKEN: &str = "$serde_json::private::Number";

/// ``seed`` over the whole of ``data`` (nothing but whitespace after it). UTF-8 is checked
/// once for the whole input, so serde_json reads it as text and does not check each string
/// again (that was 8% of reading a gate file, callgrind). Bytes that are not UTF-8 are
/// refused as serde_json refused them, and every caller hands them to Python as before.
pub(crate) fn parse<'de, S: DeserializeSeed<'de>>(data: &'de [u8], seed: S) -> serde_json::Result<S::Value> {
    let text = std::str::from_utf8(data).map_err(de::Error::custom)?;
    let mut d = serde_json::Deserializer::from_str(text);
    let v = seed.deserialize(&mut d)?;
    d.end().map(|_| v)
}

/// The decoder's state: the input's address range, which tells serde_json's number marker
/// (a key it makes up, outside the input) from a key a document writes with the same text.
#[derive(Clone, Copy)]
struct Value<'py>(Python<'py>, Input);

#[derive(Clone, Copy)]
pub(crate) struct Input(usize, usize);

impl Input {
    pub(crate) fn of(data: &[u8]) -> Input {
        let start = data.as_ptr() as usize;
        Input(start, start + data.len())
    }

    /// Whether ``key`` is serde_json's marker: its text, not borrowed from the input.
    pub(crate) fn is_marker(self, key: &str) -> bool {
        let at = key.as_ptr() as usize;
        key == NUMBER_TOKEN && !(self.0..self.1).contains(&at)
    }
}

impl<'de, 'py> DeserializeSeed<'de> for Value<'py> {
    type Value = Bound<'py, PyAny>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

fn py_err<E: de::Error>(e: PyErr) -> E {
    E::custom(e)
}

/// A number serde_json kept as text: a float, or an integer outside 64 bits.
fn number<'py, E: de::Error>(py: Python<'py>, text: &str) -> Result<Bound<'py, PyAny>, E> {
    if text.contains(['.', 'e', 'E']) {
        let x: f64 = text.parse().map_err(E::custom)?;
        return Ok(PyFloat::new(py, x).into_any());
    }
    // int() refuses past 4,300 digits as json.loads does; that error goes back to it
    py.get_type::<PyInt>().call1((text,)).map_err(py_err)
}

impl<'de, 'py> Visitor<'de> for Value<'py> {
    type Value = Bound<'py, PyAny>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(self.0.None().into_bound(self.0))
    }
    fn visit_bool<E>(self, b: bool) -> Result<Self::Value, E> {
        Ok(PyBool::new(self.0, b).to_owned().into_any())
    }
    fn visit_i64<E: de::Error>(self, x: i64) -> Result<Self::Value, E> {
        x.into_pyobject(self.0).map(|o| o.into_any()).map_err(|e| match e {})
    }
    fn visit_u64<E: de::Error>(self, x: u64) -> Result<Self::Value, E> {
        x.into_pyobject(self.0).map(|o| o.into_any()).map_err(|e| match e {})
    }
    fn visit_f64<E>(self, x: f64) -> Result<Self::Value, E> {
        Ok(PyFloat::new(self.0, x).into_any())
    }
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(PyString::new(self.0, s).into_any())
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(4));
        while let Some(v) = seq.next_element_seed(self)? {
            items.push(v);
        }
        PyList::new(self.0, items).map(|l| l.into_any()).map_err(py_err)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let out = PyDict::new(self.0);
        let mut first = true;
        while let Some(k) = map.next_key_seed(Key(self.0, self.1))? {
            if first && k.is_none() {
                let text: String = map.next_value()?;
                return number(self.0, &text);
            }
            first = false;
            let v = map.next_value_seed(self)?;
            // a key written twice: the last value, in the first one's place, as json.loads
            out.set_item(k.unwrap_or_else(|| PyString::new(self.0, NUMBER_TOKEN)), v).map_err(py_err)?;
        }
        Ok(out.into_any())
    }
}

/// An object's key as a Python str; None for serde_json's number marker.
struct Key<'py>(Python<'py>, Input);

impl<'de, 'py> DeserializeSeed<'de> for Key<'py> {
    type Value = Option<Bound<'py, PyString>>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, 'py> Visitor<'de> for Key<'py> {
    type Value = Option<Bound<'py, PyString>>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an object key")
    }
    fn visit_borrowed_str<E>(self, s: &'de str) -> Result<Self::Value, E> {
        Ok(if self.1.is_marker(s) { None } else { Some(PyString::new(self.0, s)) })
    }
    // an escaped key, unescaped into serde_json's scratch: never the marker
    fn visit_str<E>(self, s: &str) -> Result<Self::Value, E> {
        Ok(Some(PyString::new(self.0, s)))
    }
}

/// ``loads(text, refused)``: the value of JSON serde_json reads, else ``refused``, and the
/// caller asks json.loads. ``text`` is str or bytes.
#[pyfunction]
pub fn loads<'py>(py: Python<'py>, text: &Bound<'py, PyAny>, refused: Bound<'py, PyAny>) -> Bound<'py, PyAny> {
    let bytes: &[u8] = if let Ok(s) = text.downcast::<PyString>() {
        match s.to_str() {
            Ok(s) => s.as_bytes(),
            Err(_) => return refused, // lone surrogates: json.loads reads them
        }
    } else if let Ok(b) = text.downcast::<pyo3::types::PyBytes>() {
        b.as_bytes()
    } else {
        return refused;
    };
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse(bytes, Value(py, Input::of(bytes))).ok()
    }));
    match outcome {
        Ok(Some(v)) => v,
        _ => refused,
    }
}
