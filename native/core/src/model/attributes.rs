//! A record's kept attributes: what `read` kept of a span's attributes, in the span's
//! order, keys unique. They are owned once and shared by every holder (the binding's
//! mapping that Python reads them through, the core's records and runs): a copy is a
//! reference count, never a conversion.
//!
//! Every key's bytes and every str value's lie in one block of text: a record's
//! attributes are three allocations however many there are (a span keeps up to twenty
//! as a plug-in reads them), freed together, often on another thread than the reader's.

use std::borrow::Cow;
use std::sync::Arc;

use super::record::Str;
use super::value::Value;

// Past this many attributes a key is found by binary search of the keys in order: a span
// may keep thousands (offline every attribute but content is kept), and a key is looked
// for on each read.
const INDEXED_PAST: usize = 32;

#[derive(Debug)]
enum Held {
    /// a str, at this range of the text
    Text(usize, usize),
    /// any other value
    Value(Value<'static>),
}

#[derive(Debug)]
struct Shared {
    /// every key's bytes and every str value's, one after another
    text: Box<[u8]>,
    /// (the key's range in `text`, its value)
    items: Box<[((usize, usize), Held)]>,
    /// positions of `items` in key order, when there are more than INDEXED_PAST
    sorted: Option<Box<[u32]>>,
}

impl Shared {
    fn key(&self, i: usize) -> &[u8] {
        let (a, b) = self.items[i].0;
        &self.text[a..b]
    }

    fn value(&self, i: usize) -> Cow<'_, Value<'_>> {
        match &self.items[i].1 {
            Held::Text(a, b) => Cow::Owned(Value::Str(Cow::Borrowed(&self.text[*a..*b]))),
            Held::Value(v) => Cow::Borrowed(v),
        }
    }
}

/// Insertion-ordered attributes, keys unique, shared (`clone` is a reference count). No
/// attributes hold nothing at all: most records keep none.
#[derive(Clone, Default)]
pub struct Attributes(Option<Arc<Shared>>);

/// Attributes made one at a time, their keys unique.
pub struct Builder {
    text: Vec<u8>,
    items: Vec<((usize, usize), Held)>,
}

impl Builder {
    /// For `items` attributes whose keys and str values are `text` bytes in all (what the
    /// one block of text is made with: a guess short of it costs a reallocation).
    pub fn with_capacity(items: usize, text: usize) -> Builder {
        Builder { text: Vec::with_capacity(text), items: Vec::with_capacity(items) }
    }

    /// What `push` puts in the text of `key` and `val`.
    pub fn text_len(key: &[u8], val: &Value<'_>) -> usize {
        key.len() + val.as_text().map_or(0, <[u8]>::len)
    }

    /// `key` set to a copy of `val`, after the others; `key` must be new.
    pub fn push(&mut self, key: &[u8], val: &Value<'_>) {
        let k = self.put(key);
        let v = match val {
            Value::Str(t) => {
                let (a, b) = self.put(t);
                Held::Text(a, b)
            }
            other => Held::Value(other.clone().into_owned()),
        };
        self.items.push((k, v));
    }

    fn put(&mut self, t: &[u8]) -> (usize, usize) {
        let at = self.text.len();
        self.text.extend_from_slice(t);
        (at, self.text.len())
    }

    pub fn finish(self) -> Attributes {
        if self.items.is_empty() {
            return Attributes(None);
        }
        let shared = Shared { text: self.text.into_boxed_slice(), items: self.items.into_boxed_slice(), sorted: None };
        let sorted = (shared.items.len() > INDEXED_PAST).then(|| {
            let mut order: Vec<u32> = (0..shared.items.len() as u32).collect();
            order.sort_by(|&a, &b| shared.key(a as usize).cmp(shared.key(b as usize)));
            order.into_boxed_slice()
        });
        Attributes(Some(Arc::new(Shared { sorted, ..shared })))
    }
}

impl Attributes {
    /// `items` in their order, copied; keys must be unique (a repeated key is never found
    /// again).
    pub fn new<'v, K: AsRef<[u8]>>(items: &[(K, Value<'v>)]) -> Attributes {
        let text = items.iter().map(|(k, v)| Builder::text_len(k.as_ref(), v)).sum();
        let mut b = Builder::with_capacity(items.len(), text);
        for (k, v) in items {
            b.push(k.as_ref(), v);
        }
        b.finish()
    }

    pub fn len(&self) -> usize {
        self.0.as_ref().map_or(0, |s| s.items.len())
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_none()
    }

    /// The key at place `i` of the order.
    pub fn key(&self, i: usize) -> Option<&[u8]> {
        self.0.as_ref().filter(|s| i < s.items.len()).map(|s| s.key(i))
    }

    /// The value at place `i` of the order.
    pub fn value(&self, i: usize) -> Option<Cow<'_, Value<'_>>> {
        self.0.as_ref().filter(|s| i < s.items.len()).map(|s| s.value(i))
    }

    /// (key, value) in order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], Cow<'_, Value<'_>>)> {
        let s = self.0.as_deref();
        (0..self.len()).map(move |i| {
            let s = s.unwrap_or_else(|| unreachable!("a place of no attributes"));
            (s.key(i), s.value(i))
        })
    }

    /// Where `key` is in the order, if it is there.
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        let s = self.0.as_ref()?;
        match &s.sorted {
            Some(order) => order.binary_search_by(|&i| s.key(i as usize).cmp(key)).ok().map(|at| order[at] as usize),
            None => (0..s.items.len()).find(|&i| s.key(i) == key),
        }
    }

    /// `attrs.get(key)`: the value, None included.
    pub fn get(&self, key: &[u8]) -> Option<Cow<'_, Value<'_>>> {
        let i = self.position(key)?;
        self.value(i)
    }

    /// Whether both are the same shared attributes (not merely equal ones).
    pub fn same(&self, other: &Attributes) -> bool {
        match (&self.0, &other.0) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }

    /// Those whose key `keep` takes, in their order: these very attributes (shared) when it
    /// takes all.
    pub fn only(&self, mut keep: impl FnMut(&[u8]) -> bool) -> Attributes {
        if self.iter().all(|(k, _)| keep(k)) {
            return self.clone();
        }
        let kept: Vec<(&[u8], Cow<'_, Value<'_>>)> = self.iter().filter(|(k, _)| keep(k)).collect();
        let text = kept.iter().map(|(k, v)| Builder::text_len(k, v)).sum();
        let mut b = Builder::with_capacity(kept.len(), text);
        for (k, v) in &kept {
            b.push(k, v);
        }
        b.finish()
    }

    /// The bytes these hold on the heap, shared or not: the shared block, the text, the
    /// items, the index, and what values other than a str hold (at their capacity; the
    /// allocator's rounding aside). For memory accounting (bench/held_memory.py).
    pub fn heap_bytes(&self) -> usize {
        let Some(s) = &self.0 else { return 0 };
        let values = s.items.iter().map(|(_, v)| match v {
            Held::Text(..) => 0,
            Held::Value(v) => value_heap_bytes(v),
        }).sum::<usize>();
        // the Arc's block: two counts and `Shared`
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Shared>() + s.text.len()
            + std::mem::size_of_val::<[((usize, usize), Held)]>(&s.items)
            + s.sorted.as_ref().map_or(0, |o| std::mem::size_of_val::<[u32]>(o))
            + values
    }
}
/// What a value holds on the heap beyond itself.
fn value_heap_bytes(v: &Value<'_>) -> usize {
    use std::borrow::Cow;
    let cow = |c: &Cow<'_, [u8]>| match c {
        Cow::Owned(b) => b.capacity(),
        Cow::Borrowed(_) => 0,
    };
    let value = std::mem::size_of::<Value<'_>>();
    match v {
        Value::Null | Value::Bool(_) | Value::Int(_) | Value::Float(_) => 0,
        Value::BigInt(t) => match t {
            Cow::Owned(s) => s.capacity(),
            Cow::Borrowed(_) => 0,
        },
        Value::Str(t) | Value::Bytes(t) => cow(t),
        Value::List(items) | Value::Tuple(items) => {
            items.capacity() * value + items.iter().map(value_heap_bytes).sum::<usize>()
        }
        Value::Dict(items) => {
            items.capacity() * 2 * value + items.iter().map(|(k, x)| value_heap_bytes(k) + value_heap_bytes(x)).sum::<usize>()
        }
        Value::Other(o) => {
            let text = |t: &Cow<'_, [u8]>| cow(t);
            let name = match &o.type_name {
                Cow::Owned(s) => s.capacity(),
                Cow::Borrowed(_) => 0,
            };
            let items = o.items.as_ref().map_or(0, |xs| xs.capacity() * value + xs.iter().map(value_heap_bytes).sum::<usize>());
            std::mem::size_of_val(&**o) + name + text(&o.str_) + text(&o.repr) + items
        }
    }
}

/// Equal when they hold equal items in the same order.
impl PartialEq for Attributes {
    fn eq(&self, other: &Attributes) -> bool {
        self.same(other) || (self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b))
    }
}

impl std::fmt::Debug for Attributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter().map(|(k, v)| (String::from_utf8_lossy(k), v))).finish()
    }
}

impl From<Vec<(Str, Value<'static>)>> for Attributes {
    fn from(items: Vec<(Str, Value<'static>)>) -> Attributes {
        Attributes::new(&items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(k: &str, v: Value<'static>) -> (Str, Value<'static>) {
        (k.as_bytes().into(), v)
    }

    fn text(s: &str) -> Value<'static> {
        Value::Str(Cow::Owned(s.as_bytes().to_vec()))
    }

    fn of(items: Vec<(Str, Value<'static>)>) -> Attributes {
        items.into()
    }

    #[test]
    fn attributes_keep_their_order_and_find_each_key() {
        let a = of(vec![item("b", Value::Int(1)), item("a", text("x")), item("c", Value::Null),
                        item("d", Value::List(vec![text("y")]))]);
        let keys: Vec<&[u8]> = a.iter().map(|(k, _)| k).collect();
        assert_eq!(keys, [&b"b"[..], b"a", b"c", b"d"]);
        assert_eq!(a.get(b"a").as_deref(), Some(&text("x")));
        assert_eq!(a.get(b"b").as_deref(), Some(&Value::Int(1)));
        assert_eq!(a.get(b"c").as_deref(), Some(&Value::Null));
        assert_eq!(a.get(b"d").as_deref(), Some(&Value::List(vec![text("y")])));
        assert_eq!(a.get(b"e"), None);
        assert_eq!(a.position(b"c"), Some(2));
        assert_eq!((a.len(), a.key(3), a.key(4)), (4, Some(&b"d"[..]), None));
    }

    #[test]
    fn keys_and_str_values_lie_in_one_block_of_text() {
        let a = of(vec![item("k1", text("v1")), item("k2", Value::Int(2)), item("k3", text("v3"))]);
        let s = a.0.as_ref().expect("some");
        assert_eq!(&*s.text, b"k1v1k2k3v3");
        assert!(matches!(a.get(b"k3").expect("k3"), Cow::Owned(Value::Str(Cow::Borrowed(b"v3")))));
    }

    #[test]
    fn many_attributes_are_found_through_the_index_as_without_it() {
        // past INDEXED_PAST, in an order that is not the keys' own
        let a = of((0..200).rev().map(|i| item(&format!("k{i}"), Value::Int(i))).collect());
        assert!(a.0.as_ref().is_some_and(|s| s.sorted.is_some()));
        for i in 0..200 {
            let at = a.position(format!("k{i}").as_bytes()).expect("found");
            assert_eq!(a.value(at).as_deref(), Some(&Value::Int(i)));
            assert_eq!(at, 199 - i as usize);
        }
        assert_eq!(a.get(b"k200"), None);
        assert_eq!(a.get(b""), None);
    }

    #[test]
    fn no_attributes_hold_nothing_and_equal_each_other() {
        let a = of(Vec::new());
        assert!(a.is_empty() && a.0.is_none() && a.len() == 0 && a.iter().next().is_none());
        assert_eq!(a.heap_bytes(), 0);
        assert_eq!(a, Attributes::default());
        assert!(a.same(&Attributes::default()));
    }

    #[test]
    fn a_copy_shares_the_attributes_and_equal_ones_made_apart_are_not_the_same() {
        let a = of(vec![item("k", text("v"))]);
        let b = a.clone();
        assert!(a.same(&b));
        let c = of(vec![item("k", text("v"))]);
        assert!(!a.same(&c));
        assert_eq!(a, c);
        assert_ne!(a, of(vec![item("k", text("w"))]));
        assert_ne!(a, of(vec![item("k", text("v")), item("l", text("v"))]));
        assert_eq!(format!("{a:?}"), r#"{"k": Str([118])}"#);
    }

    #[test]
    fn only_shares_the_attributes_when_every_key_is_kept_and_copies_the_kept_ones_otherwise() {
        let a = of(vec![item("a", text("1")), item("b", Value::Int(2)), item("c", Value::Int(3))]);
        assert!(a.only(|_| true).same(&a));
        let some = a.only(|k| k != b"b");
        assert!(!some.same(&a));
        assert_eq!(some, of(vec![item("a", text("1")), item("c", Value::Int(3))]));
        assert!(a.only(|_| false).is_empty());
    }

    #[test]
    fn heap_bytes_count_the_keys_and_the_values_held() {
        let small = of(vec![item("k", Value::Int(1))]);
        let long = of(vec![item("k", text(&"x".repeat(1000)))]);
        assert!(small.heap_bytes() > 1 + std::mem::size_of::<Shared>());
        assert_eq!(long.heap_bytes() - small.heap_bytes(), 1000);
        let nested = of(vec![item("k", Value::List(vec![text(&"y".repeat(100)), Value::Int(2)]))]);
        assert!(nested.heap_bytes() >= small.heap_bytes() + 100 + 2 * std::mem::size_of::<Value<'static>>());
    }
}
