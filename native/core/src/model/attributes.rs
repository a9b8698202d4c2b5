//! A record's kept attributes: what `read` kept of a span's attributes, in the span's
//! order, keys unique. They are owned once and shared by every holder (the binding's
//! mapping that Python reads them through, the core's records and runs): a copy is a
//! reference count, never a conversion.

use std::ops::Deref;
use std::sync::Arc;

use super::record::Str;
use super::value::Value;

// Past this many attributes a key is found by binary search of the keys in order: a span
// may keep thousands (offline every attribute but content is kept), and a key is looked
// for on each read.
const INDEXED_PAST: usize = 32;

#[derive(Debug)]
struct Shared {
    items: Box<[(Str, Value<'static>)]>,
    /// positions of `items` in key order, when there are more than INDEXED_PAST
    sorted: Option<Box<[u32]>>,
}

/// Insertion-ordered attributes, keys unique, shared (`clone` is a reference count). No
/// attributes hold nothing at all: most records keep none.
#[derive(Clone, Debug, Default)]
pub struct Attributes(Option<Arc<Shared>>);

impl Attributes {
    /// `items` in their order; keys must be unique (a repeated key is never found again).
    pub fn new(items: Vec<(Str, Value<'static>)>) -> Attributes {
        if items.is_empty() {
            return Attributes(None);
        }
        let items = items.into_boxed_slice();
        let sorted = (items.len() > INDEXED_PAST).then(|| {
            let mut order: Vec<u32> = (0..items.len() as u32).collect();
            order.sort_by(|&a, &b| items[a as usize].0.cmp(&items[b as usize].0));
            order.into_boxed_slice()
        });
        Attributes(Some(Arc::new(Shared { items, sorted })))
    }

    pub fn as_slice(&self) -> &[(Str, Value<'static>)] {
        match &self.0 {
            Some(s) => &s.items,
            None => &[],
        }
    }

    /// Where `key` is in the order, if it is there.
    pub fn position(&self, key: &[u8]) -> Option<usize> {
        let s = self.0.as_ref()?;
        match &s.sorted {
            Some(order) => order.binary_search_by(|&i| (*s.items[i as usize].0).cmp(key)).ok().map(|at| order[at] as usize),
            None => s.items.iter().position(|(k, _)| &**k == key),
        }
    }

    /// `attrs.get(key)`: the value, None included.
    pub fn get(&self, key: &[u8]) -> Option<&Value<'static>> {
        self.position(key).map(|i| &self.as_slice()[i].1)
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
        let items = self.as_slice();
        if items.iter().all(|(k, _)| keep(k)) {
            return self.clone();
        }
        Attributes::new(items.iter().filter(|(k, _)| keep(k)).cloned().collect())
    }

    /// The bytes these hold on the heap, shared or not: the shared block, the items, the
    /// index, and every key's and value's own allocations (at their capacity; the
    /// allocator's rounding aside). For memory accounting (bench/held_memory.py).
    pub fn heap_bytes(&self) -> usize {
        let Some(s) = &self.0 else { return 0 };
        let items = s.items.iter().map(|(k, v)| k.len() + value_heap_bytes(v)).sum::<usize>();
        // the Arc's block: two counts and `Shared`
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Shared>()
            + std::mem::size_of_val::<[(Str, Value<'static>)]>(&s.items)
            + s.sorted.as_ref().map_or(0, |o| std::mem::size_of_val::<[u32]>(o))
            + items
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

impl Deref for Attributes {
    type Target = [(Str, Value<'static>)];

    fn deref(&self) -> &Self::Target {
        self.as_slice()
    }
}

/// Equal when they hold equal items in the same order.
impl PartialEq for Attributes {
    fn eq(&self, other: &Attributes) -> bool {
        self.same(other) || self.as_slice() == other.as_slice()
    }
}

impl FromIterator<(Str, Value<'static>)> for Attributes {
    fn from_iter<I: IntoIterator<Item = (Str, Value<'static>)>>(items: I) -> Attributes {
        Attributes::new(items.into_iter().collect())
    }
}

impl From<Vec<(Str, Value<'static>)>> for Attributes {
    fn from(items: Vec<(Str, Value<'static>)>) -> Attributes {
        Attributes::new(items)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn item(k: &str, v: Value<'static>) -> (Str, Value<'static>) {
        (k.as_bytes().into(), v)
    }

    fn text(s: &str) -> Value<'static> {
        Value::Str(Cow::Owned(s.as_bytes().to_vec()))
    }

    #[test]
    fn attributes_keep_their_order_and_find_each_key() {
        let a = Attributes::new(vec![item("b", Value::Int(1)), item("a", text("x")), item("c", Value::Null)]);
        let keys: Vec<&[u8]> = a.iter().map(|(k, _)| &**k).collect();
        assert_eq!(keys, [&b"b"[..], b"a", b"c"]);
        assert_eq!(a.get(b"a"), Some(&text("x")));
        assert_eq!(a.get(b"c"), Some(&Value::Null));
        assert_eq!(a.get(b"d"), None);
        assert_eq!(a.position(b"c"), Some(2));
    }

    #[test]
    fn many_attributes_are_found_through_the_index_as_without_it() {
        // past INDEXED_PAST, in an order that is not the keys' own
        let items: Vec<_> = (0..200).rev().map(|i| item(&format!("k{i}"), Value::Int(i))).collect();
        let a = Attributes::new(items);
        assert!(a.0.as_ref().is_some_and(|s| s.sorted.is_some()));
        for i in 0..200 {
            let at = a.position(format!("k{i}").as_bytes()).expect("found");
            assert_eq!(a[at].1, Value::Int(i));
            assert_eq!(at, 199 - i as usize);
        }
        assert_eq!(a.get(b"k200"), None);
        assert_eq!(a.get(b""), None);
    }

    #[test]
    fn no_attributes_hold_nothing_and_equal_each_other() {
        let a = Attributes::new(Vec::new());
        assert!(a.is_empty() && a.0.is_none());
        assert_eq!(a.heap_bytes(), 0);
        assert_eq!(a, Attributes::default());
        assert!(a.same(&Attributes::default()));
    }

    #[test]
    fn a_copy_shares_the_attributes_and_equal_ones_made_apart_are_not_the_same() {
        let a = Attributes::new(vec![item("k", text("v"))]);
        let b = a.clone();
        assert!(a.same(&b));
        assert!(std::ptr::eq(a.as_slice(), b.as_slice()));
        let c = Attributes::new(vec![item("k", text("v"))]);
        assert!(!a.same(&c));
        assert_eq!(a, c);
        assert_ne!(a, Attributes::new(vec![item("k", text("w"))]));
    }

    #[test]
    fn only_shares_the_attributes_when_every_key_is_kept_and_copies_the_kept_ones_otherwise() {
        let a = Attributes::new(vec![item("a", Value::Int(1)), item("b", Value::Int(2)), item("c", Value::Int(3))]);
        assert!(a.only(|_| true).same(&a));
        let some = a.only(|k| k != b"b");
        assert!(!some.same(&a));
        assert_eq!(some, Attributes::new(vec![item("a", Value::Int(1)), item("c", Value::Int(3))]));
        assert!(a.only(|_| false).is_empty());
    }

    #[test]
    fn heap_bytes_count_the_keys_and_the_values_held() {
        let small = Attributes::new(vec![item("k", Value::Int(1))]);
        let long = Attributes::new(vec![item("k", text(&"x".repeat(1000)))]);
        assert!(small.heap_bytes() > std::mem::size_of::<(Str, Value<'static>)>());
        assert_eq!(long.heap_bytes() - small.heap_bytes(), 1000);
        let nested = Attributes::new(vec![item("k", Value::List(vec![text(&"y".repeat(100)), Value::Int(2)]))]);
        assert!(nested.heap_bytes() >= small.heap_bytes() + 100 + 2 * std::mem::size_of::<Value<'static>>());
    }
}
