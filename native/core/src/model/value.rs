//! A value as the readers and checks hold it: a span attribute's (an OTLP `AnyValue`), what
//! a JSON text decodes to, or a value a Python caller passed in. Strings borrow the bytes
//! they were read from (a request, a file, a caller's string) until a record keeps them.
//!
//! Exactness is the point: records' strings are compared byte for byte downstream, and the
//! rules are the Python the core replaced: `str()` and `repr()` of a value, its truth
//! value, `==` with a str or with 1 (here), `json.dumps` and `json.loads` (json.rs),
//! `ast.literal_eval` (literal.rs). Text is WTF-8 (pyfmt/strs.rs).

use std::borrow::Cow;

use crate::pyfmt::float;
use crate::pyfmt::strs::{repr_bytes, repr_str};

/// WTF-8 text, borrowed where it lies or owned.
pub type Text<'a> = Cow<'a, [u8]>;

/// A value as Python held it. `Dict` keeps insertion order; its keys are unique.
#[derive(Clone, Debug, PartialEq)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// An integer outside 64 bits, as its decimal digits (and sign).
    BigInt(Cow<'a, str>),
    Float(f64),
    Str(Text<'a>),
    Bytes(Cow<'a, [u8]>),
    List(Vec<Value<'a>>),
    Tuple(Vec<Value<'a>>),
    Dict(Vec<(Value<'a>, Value<'a>)>),
    /// Anything else a caller handed in (a set, an object): what Python said of it.
    Other(Box<Other<'a>>),
}

/// A value of none of the kinds above, as the binding found it: all the core ever does with
/// one is print it, test its truth, or walk its items.
#[derive(Clone, Debug, PartialEq)]
pub struct Other<'a> {
    pub type_name: Cow<'a, str>,
    pub str_: Text<'a>,
    pub repr: Text<'a>,
    pub truthy: bool,
    /// Its items in iteration order, when it can be iterated.
    pub items: Option<Vec<Value<'a>>>,
}

// str() and repr() of values nested deeper than this write `...` there: Python would raise
// RecursionError, and no reader keeps values this deep (wire and JSON limits are lower).
const MAX_REPR_DEPTH: u32 = 2000;

impl<'a> Value<'a> {
    pub fn str(s: &'a str) -> Value<'a> {
        Value::Str(Cow::Borrowed(s.as_bytes()))
    }

    pub fn as_text(&self) -> Option<&[u8]> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn is_str(&self) -> bool {
        matches!(self, Value::Str(_))
    }

    pub fn is_dict(&self) -> bool {
        matches!(self, Value::Dict(_))
    }

    pub fn is_none(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// `d.get(key)` of a dict (None for any other value).
    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        match self {
            Value::Dict(items) => items.iter().find(|(k, _)| k.as_text() == Some(key.as_bytes())).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }

    /// `v == s` for a str `s`: only a str equals one.
    pub fn eq_str(&self, s: &str) -> bool {
        self.as_text() == Some(s.as_bytes())
    }

    /// `v == 1`: an int, True, or a float equal to it.
    pub fn eq_one(&self) -> bool {
        match self {
            Value::Int(x) => *x == 1,
            Value::Bool(b) => *b,
            Value::Float(x) => *x == 1.0,
            _ => false,
        }
    }

    /// Python's truth value.
    pub fn truthy(&self) -> bool {
        match self {
            Value::Null => false,
            Value::Bool(b) => *b,
            Value::Int(x) => *x != 0,
            Value::BigInt(_) => true, // outside 64 bits: never zero
            Value::Float(x) => *x != 0.0, // NaN is true
            Value::Str(s) => !s.is_empty(),
            Value::Bytes(b) => !b.is_empty(),
            Value::List(v) | Value::Tuple(v) => !v.is_empty(),
            Value::Dict(v) => !v.is_empty(),
            Value::Other(o) => o.truthy,
        }
    }

    /// `len(d)` of a dict (0 for anything else).
    pub fn dict_len(&self) -> usize {
        match self {
            Value::Dict(items) => items.len(),
            _ => 0,
        }
    }

    /// The type's name, as a TypeError names it.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Null => "NoneType",
            Value::Bool(_) => "bool",
            Value::Int(_) | Value::BigInt(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Bytes(_) => "bytes",
            Value::List(_) => "list",
            Value::Tuple(_) => "tuple",
            Value::Dict(_) => "dict",
            Value::Other(o) => &o.type_name,
        }
    }

    /// `str(v)`: a str is itself (borrowed as long as it is).
    pub fn py_str(&self) -> Text<'a> {
        match self {
            Value::Str(s) => s.clone(),
            Value::Null => Cow::Borrowed(b"None"),
            Value::Bool(true) => Cow::Borrowed(b"True"),
            Value::Bool(false) => Cow::Borrowed(b"False"),
            Value::Other(o) => o.str_.clone(),
            _ => {
                let mut out = Vec::new();
                self.write_repr(&mut out, 0);
                Cow::Owned(out)
            }
        }
    }

    /// `repr(v)`.
    pub fn repr(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_repr(&mut out, 0);
        out
    }

    fn write_repr(&self, out: &mut Vec<u8>, depth: u32) {
        if depth > MAX_REPR_DEPTH {
            out.extend_from_slice(b"...");
            return;
        }
        match self {
            Value::Null => out.extend_from_slice(b"None"),
            Value::Bool(true) => out.extend_from_slice(b"True"),
            Value::Bool(false) => out.extend_from_slice(b"False"),
            Value::Int(x) => out.extend_from_slice(x.to_string().as_bytes()),
            Value::BigInt(t) => out.extend_from_slice(t.as_bytes()),
            Value::Float(x) => float::repr(*x, out),
            Value::Str(s) => repr_str(s, out),
            Value::Bytes(b) => repr_bytes(b, out),
            Value::List(items) => {
                out.push(b'[');
                join_repr(items, out, depth);
                out.push(b']');
            }
            Value::Tuple(items) => {
                out.push(b'(');
                join_repr(items, out, depth);
                if items.len() == 1 {
                    out.push(b',');
                }
                out.push(b')');
            }
            Value::Dict(items) => {
                out.push(b'{');
                for (i, (k, v)) in items.iter().enumerate() {
                    if i > 0 {
                        out.extend_from_slice(b", ");
                    }
                    k.write_repr(out, depth + 1);
                    out.extend_from_slice(b": ");
                    v.write_repr(out, depth + 1);
                }
                out.push(b'}');
            }
            Value::Other(o) => out.extend_from_slice(&o.repr),
        }
    }

    /// The same value owning all it holds.
    pub fn into_owned(self) -> Value<'static> {
        match self {
            Value::Null => Value::Null,
            Value::Bool(b) => Value::Bool(b),
            Value::Int(x) => Value::Int(x),
            Value::BigInt(t) => Value::BigInt(Cow::Owned(t.into_owned())),
            Value::Float(x) => Value::Float(x),
            Value::Str(s) => Value::Str(Cow::Owned(s.into_owned())),
            Value::Bytes(s) => Value::Bytes(Cow::Owned(s.into_owned())),
            Value::List(items) => Value::List(items.into_iter().map(Value::into_owned).collect()),
            Value::Tuple(items) => Value::Tuple(items.into_iter().map(Value::into_owned).collect()),
            Value::Dict(items) => Value::Dict(items.into_iter().map(|(k, v)| (k.into_owned(), v.into_owned())).collect()),
            Value::Other(o) => Value::Other(Box::new(Other {
                type_name: Cow::Owned(o.type_name.into_owned()),
                str_: Cow::Owned(o.str_.into_owned()),
                repr: Cow::Owned(o.repr.into_owned()),
                truthy: o.truthy,
                items: o.items.map(|v| v.into_iter().map(Value::into_owned).collect()),
            })),
        }
    }
}

fn join_repr(items: &[Value<'_>], out: &mut Vec<u8>, depth: u32) {
    for (i, x) in items.iter().enumerate() {
        if i > 0 {
            out.extend_from_slice(b", ");
        }
        x.write_repr(out, depth + 1);
    }
}

/// A dict of string keys, as the conventions build messages and parts.
pub fn dict<'a>(items: Vec<(&'static str, Value<'a>)>) -> Value<'a> {
    Value::Dict(items.into_iter().map(|(k, v)| (Value::Str(Cow::Borrowed(k.as_bytes())), v)).collect())
}

/// A dict built key by key as Python builds one: a key given twice keeps its first place
/// and takes the last value. Past a few keys, an index (a repeated key is looked for on
/// every insert, and a hostile document may hold a million).
#[derive(Default)]
pub struct DictBuilder<'a> {
    pub items: Vec<(Value<'a>, Value<'a>)>,
    index: Option<std::collections::HashMap<Vec<u8>, usize, foldhash::fast::RandomState>>,
}

impl<'a> DictBuilder<'a> {
    pub fn insert(&mut self, k: Text<'a>, v: Value<'a>) {
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
                self.items.push((Value::Str(k), v));
                if self.index.is_none() && self.items.len() > 16 {
                    self.index = Some(
                        self.items.iter().enumerate().map(|(i, (x, _))| (x.as_text().unwrap_or(b"").to_vec(), i)).collect(),
                    );
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(t: &str) -> Value<'_> {
        Value::str(t)
    }

    #[test]
    fn str_of_a_value_is_pythons() {
        assert_eq!(&*s("x").py_str(), b"x");
        assert_eq!(&*Value::Null.py_str(), b"None");
        assert_eq!(&*Value::Float(1e16).py_str(), b"1e+16");
        let v = Value::List(vec![s("it's"), Value::Int(-3), Value::Tuple(vec![Value::Bool(true)]), Value::Null]);
        assert_eq!(&*v.py_str(), b"[\"it's\", -3, (True,), None]");
        let d = dict(vec![("a", Value::Bytes(Cow::Borrowed(b"\x00"))), ("b", Value::Dict(vec![]))]);
        assert_eq!(&*d.py_str(), b"{'a': b'\\x00', 'b': {}}");
        assert_eq!(&*Value::Tuple(vec![]).py_str(), b"()");
    }

    #[test]
    fn truth_is_pythons() {
        assert!(!Value::Float(0.0).truthy());
        assert!(Value::Float(f64::NAN).truthy());
        assert!(!s("").truthy());
        assert!(Value::Tuple(vec![Value::Null]).truthy());
        assert!(Value::Bool(true).eq_one() && Value::Float(1.0).eq_one() && !s("1").eq_one());
    }

    #[test]
    fn a_key_given_twice_keeps_its_place_and_takes_the_last_value() {
        let mut d = DictBuilder::default();
        for (k, v) in [("a", 1), ("b", 2), ("a", 3)] {
            d.insert(Cow::Borrowed(k.as_bytes()), Value::Int(v));
        }
        assert_eq!(Value::Dict(d.items).py_str().as_ref(), b"{'a': 3, 'b': 2}");
    }
}
