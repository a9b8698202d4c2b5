//! A span's attributes as the conventions read them: an ordered map of key -> value. An
//! attribute a caller handed in carries where it came from (`origin`), so that the binding
//! gives a record the caller's own object back, not a copy, while the value is unchanged.

use std::borrow::Cow;

use crate::model::value::{Text, Value};
use crate::pyfmt::strs::char_len;

/// What a record in flight costs before its attributes: the record, its id, its times and
/// the assembler's and evaluator's entries for it. Measured with bench/held_memory.py
/// (tracemalloc) on bench/live.py's workload: 650 puts the estimate within a few percent of
/// the measured bytes, where 200 made it about half.
pub const RECORD_BYTES: usize = 650;

// Past this many attributes a key is found through an index: a span may carry thousands
// (flattened messages, or a hostile sender), and a repeated key is looked for on each one.
const INDEXED_PAST: usize = 32;

#[derive(Clone, Debug)]
pub struct Attr<'a> {
    pub key: Text<'a>,
    pub val: Value<'a>,
    /// The caller's item this is, unchanged (the binding's own business).
    pub origin: Option<u32>,
}

/// Insertion-ordered, keys unique: a key set again keeps its place and takes the new
/// value, as a dict does.
#[derive(Clone, Debug, Default)]
pub struct Attrs<'a> {
    pub items: Vec<Attr<'a>>,
    index: Option<std::collections::HashMap<Vec<u8>, usize, foldhash::fast::RandomState>>,
}

impl<'a> Attrs<'a> {
    pub fn with_capacity(n: usize) -> Self {
        Attrs { items: Vec::with_capacity(n), index: None }
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(key).copied(),
            None => self.items.iter().position(|a| &*a.key == key),
        }
    }

    pub fn get(&self, key: &str) -> Option<&Value<'a>> {
        self.find(key.as_bytes()).map(|i| &self.items[i].val)
    }

    /// `attrs.get(key)` with Python's None for an absent key.
    pub fn value(&self, key: &str) -> &Value<'a> {
        self.get(key).unwrap_or(&Value::Null)
    }

    pub fn has(&self, key: &str) -> bool {
        self.find(key.as_bytes()).is_some()
    }

    /// `attrs[key] = val`.
    pub fn set(&mut self, attr: Attr<'a>) {
        match self.find(&attr.key) {
            Some(i) => {
                let it = &mut self.items[i];
                it.val = attr.val;
                it.origin = attr.origin;
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

    pub fn set_value(&mut self, key: &'static str, val: Value<'a>) {
        self.set(Attr { key: Cow::Borrowed(key.as_bytes()), val, origin: None });
    }

    /// `attrs.setdefault(key, val)`.
    pub fn setdefault(&mut self, key: &'static str, val: Value<'a>) {
        if !self.has(key) {
            self.set_value(key, val);
        }
    }

    pub fn retain(&mut self, mut keep: impl FnMut(&[u8]) -> bool) {
        self.items.retain(|a| keep(&a.key));
        self.index = None;
        if self.items.len() > INDEXED_PAST {
            self.index = Some(self.items.iter().enumerate().map(|(i, a)| (a.key.to_vec(), i)).collect());
        }
    }

    pub fn any_key_starting(&self, prefixes: &[&str]) -> bool {
        self.items.iter().any(|a| prefixes.iter().any(|p| a.key.starts_with(p.as_bytes())))
    }

    /// The record's approximate size: `RECORD_BYTES` + the name's length + every key's,
    /// and every string value's, other values 8; lengths in code points, as Python's `len`.
    pub fn size(&self, name: &[u8]) -> usize {
        RECORD_BYTES + char_len(name) + self.items.iter().map(|a| char_len(&a.key) + match &a.val {
            Value::Str(s) => char_len(s),
            _ => 8,
        }).sum::<usize>()
    }
}
