//! ``json.loads(text)`` as a value (value.rs) borrowing the text's bytes: what the
//! conventions decode content with. json.rs's ``loads`` makes Python objects instead, for
//! payload.loads; both read numbers and keys as json.loads does.

use pyo3::exceptions::{PyRecursionError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyInt;
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

use crate::read::fallback::python;
use crate::read::json::{parse, Input};
use crate::read::value::{from_py, py_text, DictBuilder, Text, V};

/// ``json.loads(text)`` as a value, or None where json.loads raises ValueError (payload.loads
/// turns its RecursionError into one too). What serde_json refuses is Python's to read.
pub fn loads<'a, 'py>(py: Python<'py>, text: &'a [u8]) -> PyResult<Option<V<'a, 'py>>> {
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        parse(text, Seed(py, Input::of(text))).ok()
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
