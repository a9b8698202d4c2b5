//! A span's attributes as the conventions read them: an ordered map of key -> `V`, with the
//! Python objects a reader already has (the caller's dict's, for build_span called from
//! Python) kept beside them, so that what a record keeps is not made twice.

use pyo3::prelude::*;
use std::borrow::Cow;

use crate::read::text::char_len;
use crate::read::value::{FastMap, Text, V};

/// What a record in flight costs before its attributes: the record, its id, its times and
/// the assembler's and evaluator's entries for it. Measured with bench/held_memory.py
/// (tracemalloc) on bench/live.py's workload: 650 puts the estimate within a few percent of
/// the measured bytes, where 200 made it about half.
pub const RECORD_BYTES: usize = 650;

// Past this many attributes a key is found through an index: a span may carry thousands
// (flattened messages, or a hostile sender), and a repeated key is looked for on each one.
const INDEXED_PAST: usize = 32;

#[derive(Clone)]
pub struct Attr<'a, 'py> {
    pub key: Text<'a>,
    pub key_py: Option<Bound<'py, PyAny>>,
    pub val: V<'a, 'py>,
    /// The value's Python object when one exists (the caller's); else made from `val`.
    pub val_py: Option<Bound<'py, PyAny>>,
}

/// Insertion-ordered, keys unique: a key set again keeps its place and takes the new
/// value, as a dict does.
#[derive(Clone, Default)]
pub struct Attrs<'a, 'py> {
    pub items: Vec<Attr<'a, 'py>>,
    index: Option<FastMap<Vec<u8>, usize>>,
}

impl<'a, 'py> Attrs<'a, 'py> {
    pub fn with_capacity(n: usize) -> Self {
        Attrs { items: Vec::with_capacity(n), index: None }
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(key).copied(),
            None => self.items.iter().position(|a| &*a.key == key),
        }
    }

    pub fn get(&self, key: &str) -> Option<&V<'a, 'py>> {
        self.find(key.as_bytes()).map(|i| &self.items[i].val)
    }

    /// ``attrs.get(key)`` with Python's None for an absent key.
    pub fn value(&self, key: &str) -> &V<'a, 'py> {
        self.get(key).unwrap_or(&V::Null)
    }

    pub fn has(&self, key: &str) -> bool {
        self.find(key.as_bytes()).is_some()
    }

    /// ``attrs[key] = val`` (``val_py``: its Python object, when the caller has one).
    pub fn set(&mut self, attr: Attr<'a, 'py>) {
        match self.find(&attr.key) {
            Some(i) => {
                let it = &mut self.items[i];
                it.val = attr.val;
                it.val_py = attr.val_py;
            }
            None => {
                if let Some(ix) = self.index.as_mut() {
                    ix.insert(attr.key.to_vec(), self.items.len());
                }
                self.items.push(attr);
                if self.index.is_none() && self.items.len() > INDEXED_PAST {
                    self.index = Some(self.items.iter().enumerate().map(|(i, a)| (a.key.to_vec(), i)).collect());
                }
            }
        }
    }

    pub fn set_value(&mut self, key: &'static str, val: V<'a, 'py>) {
        self.set(Attr { key: Cow::Borrowed(key.as_bytes()), key_py: None, val, val_py: None });
    }

    /// ``attrs.setdefault(key, val)``.
    pub fn setdefault(&mut self, key: &'static str, val: V<'a, 'py>) {
        if !self.has(key) {
            self.set_value(key, val);
        }
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> PyResult<bool>) -> PyResult<()> {
        let mut out = Vec::with_capacity(self.items.len());
        for a in self.items.drain(..) {
            if keep(&a.key)? {
                out.push(a);
            }
        }
        self.items = out;
        self.index = None;
        if self.items.len() > INDEXED_PAST {
            self.index = Some(self.items.iter().enumerate().map(|(i, a)| (a.key.to_vec(), i)).collect());
        }
        Ok(())
    }

    pub fn any_key_starting(&self, prefixes: &[&str]) -> bool {
        self.items.iter().any(|a| prefixes.iter().any(|p| a.key.starts_with(p.as_bytes())))
    }

    /// The record's approximate size: ``RECORD_BYTES`` + the name's length + every key's,
    /// and every string value's, other values 8; lengths in code points, as Python's ``len``.
    pub fn size(&self, name: &[u8]) -> usize {
        RECORD_BYTES + char_len(name) + self.items.iter().map(|a| char_len(&a.key) + match &a.val {
            V::Str(s) => char_len(s),
            _ => 8,
        }).sum::<usize>()
    }
}
