//! A span's attributes as the conventions read them: an ordered map of key -> value. An
//! attribute a caller handed in carries where it came from (`origin`), so that the binding
//! gives a record the caller's own object back, not a copy, while the value is unchanged.

use std::borrow::Cow;

use crate::model::value::{Text, Value};
use crate::pyfmt::strs::char_len;

/// What a record in flight costs before its attributes: the record, its id, its times and
/// the assembler's and evaluator's entries for it. Measured with bench/held_memory.py
/// (tracemalloc, and the core's attributes) on bench/live.py's workload: 520 puts the
/// estimate within 1% of the measured bytes with the default checks' attributes kept and
/// with a plug-in's standard ones (`--attributes standard`), where 200 made it about half.
/// (650 until the kept attributes were counted as what they hold, model/attributes.rs.)
pub const RECORD_BYTES: usize = 520;

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

/// A key's bit among 64: from its length and two of its bytes (keys of one vocabulary
/// share a prefix, and often a last word, but seldom all three).
fn signature(key: &[u8]) -> u64 {
    let n = key.len();
    if n == 0 {
        return 1;
    }
    1 << ((n as u32).wrapping_mul(7).wrapping_add(u32::from(key[n - 1])).wrapping_add(u32::from(key[n / 2]) * 3) & 63)
}

/// Insertion-ordered, keys unique: a key set again keeps its place and takes the new
/// value, as a dict does.
#[derive(Clone, Debug, Default)]
pub struct Attrs<'a> {
    pub items: Vec<Attr<'a>>,
    /// A bit per key held (`signature`): most keys looked for are absent (the conventions
    /// ask for each vocabulary's keys), and a bit that is not set says so without a scan.
    seen: u64,
    index: Option<std::collections::HashMap<Vec<u8>, usize, foldhash::fast::RandomState>>,
}

impl<'a> Attrs<'a> {
    pub fn with_capacity(n: usize) -> Self {
        Attrs { items: Vec::with_capacity(n), seen: 0, index: None }
    }

    fn find(&self, key: &[u8]) -> Option<usize> {
        match &self.index {
            Some(ix) => ix.get(key).copied(),
            None if self.seen & signature(key) == 0 => None,
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
                self.seen |= signature(&attr.key);
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
        self.seen = self.items.iter().fold(0, |m, a| m | signature(&a.key));
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
    /// The record adds what the attributes it keeps hold, a copy besides the fields made
    /// of those read (`model::attributes::size`, in conventions.rs's `into_fields`).
    pub fn size(&self, name: &[u8]) -> usize {
        RECORD_BYTES + char_len(name) + self.items.iter().map(|a| char_len(&a.key) + match &a.val {
            Value::Str(s) => char_len(s),
            _ => 8,
        }).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(s: &str) -> Value<'static> {
        Value::Str(Cow::Owned(s.as_bytes().to_vec()))
    }

    #[test]
    fn every_key_set_is_found_and_no_other_before_or_after_a_retain_or_an_index() {
        let mut attrs = Attrs::with_capacity(4);
        let keys: Vec<String> = (0..40).map(|i| format!("gen_ai.key.{i}")).collect();
        for (i, k) in keys.iter().enumerate() {
            attrs.set(Attr { key: Cow::Owned(k.as_bytes().to_vec()), val: text(k), origin: None });
            for (j, other) in keys.iter().enumerate() {
                assert_eq!(attrs.has(other), j <= i, "{other} after {i} keys");
            }
            assert!(!attrs.has("gen_ai.key.") && !attrs.has("") && !attrs.has("gen_ai.key.99"));
        }
        // a key set again keeps its place and takes the new value
        attrs.set_value("gen_ai.key.3", text("again"));
        assert_eq!(attrs.items[3].val, text("again"));
        assert_eq!(attrs.items.len(), 40);
        attrs.retain(|k| k.ends_with(b"7"));
        assert_eq!(attrs.items.len(), 4);
        for k in &keys {
            assert_eq!(attrs.has(k), k.ends_with('7'), "{k}");
        }
        let mut empty_key = Attrs::default();
        assert!(!empty_key.has(""));
        empty_key.set_value("", text("x"));
        assert!(empty_key.has("") && !empty_key.has("a"));
    }
}
