//! A record's kept attributes: what `read` kept of a span's attributes, in the span's
//! order, keys unique. They are owned once and shared by every holder (the binding's
//! mapping that Python reads them through, the core's records and runs): a copy is a
//! reference count, never a conversion.
//!
//! Every key's bytes and every str, int and float value's lie in one block of text, each
//! attribute an item of three `u32`s into it, other values beside: a record's attributes
//! are three allocations however many there are (four with a list, a bool or a None; a span
//! keeps up to twenty as a plug-in reads them), freed together, often on another thread
//! than the reader's.

use std::borrow::Cow;
use std::sync::Arc;

use super::record::Str;
use super::value::Value;
use crate::pyfmt::strs::char_len;

// Past this many attributes a key is found by binary search of the keys in order: a span
// may keep thousands (offline every attribute but content is kept), and a key is looked
// for on each read.
const INDEXED_PAST: usize = 32;

// An item's `val` is a kind in its top two bits, and below them: the end of its str value
// in the text (which starts where its key ends); the end of the 8 bytes of an int's or a
// float's there (a span's token counts: no allocation of their own); or its place in
// `others`.
const KIND: u32 = 3 << 30;
const STR: u32 = 0;
const INT: u32 = 1 << 30;
const FLOAT: u32 = 2 << 30;
const OTHER: u32 = 3 << 30;
// So the text of a record's kept attributes is shorter than 2^30: what would pass it (never
// in a record, but a file read offline may hold anything) is kept in `others` instead. The
// tests make it short, to reach that path.
const TEXT_LIMIT: usize = if cfg!(test) { 4096 } else { 1 << 30 };
// An item's `key_end` when its key is in `others` (at `key`).
const FAR_KEY: u32 = u32::MAX;

/// An attribute in 12 bytes, where one in ranges of `usize` and a `Value` took 48: a
/// record's attributes cost mostly their items (a span keeps a few, each a short key and
/// value).
#[derive(Clone, Copy, Debug)]
struct Item {
    /// where the key starts in `text`; a place in `others` if `key_end` is FAR_KEY
    key: u32,
    key_end: u32,
    /// STR, INT or FLOAT + where the value ends in `text` (it starts at `key_end`), or
    /// OTHER + its place in `others`
    val: u32,
}

#[derive(Debug)]
struct Shared {
    /// every key's bytes and every str value's (and int's and float's), one after another
    text: Box<[u8]>,
    items: Box<[Item]>,
    /// values other than a str (and what would not fit in `text`), in order
    others: Box<[Value<'static>]>,
    /// positions of `items` in key order, when there are more than INDEXED_PAST
    sorted: Option<Box<[u32]>>,
}

impl Shared {
    #[inline]
    fn key(&self, i: usize) -> &[u8] {
        let it = self.items[i];
        if it.key_end == FAR_KEY {
            return self.others[it.key as usize].as_text().unwrap_or_else(|| unreachable!("a far key is a str"));
        }
        &self.text[it.key as usize..it.key_end as usize]
    }

    #[inline]
    fn value(&self, i: usize) -> Cow<'_, Value<'_>> {
        let it = self.items[i];
        let at = (it.val & !KIND) as usize;
        // a far key's value is never in the text
        let bytes = |t: &[u8]| <[u8; 8]>::try_from(t).unwrap_or_else(|_| unreachable!("8 bytes"));
        match it.val & KIND {
            STR => Cow::Owned(Value::Str(Cow::Borrowed(&self.text[it.key_end as usize..at]))),
            INT => Cow::Owned(Value::Int(i64::from_le_bytes(bytes(&self.text[it.key_end as usize..at])))),
            FLOAT => Cow::Owned(Value::Float(f64::from_le_bytes(bytes(&self.text[it.key_end as usize..at])))),
            _ => Cow::Borrowed(&self.others[at]),
        }
    }

    /// What `size` counts for item `i`: its key's and str value's code points, 8 for an
    /// int or a float, VALUE_BYTES for any other value.
    fn size_of(&self, i: usize) -> usize {
        let it = self.items[i];
        let key = char_len(self.key(i));
        key + match it.val & KIND {
            STR => char_len(&self.text[it.key_end as usize..(it.val & !KIND) as usize]),
            INT | FLOAT => SCALAR_BYTES,
            _ => match &self.others[(it.val & !KIND) as usize] {
                Value::Str(t) => char_len(t),
                _ => VALUE_BYTES,
            },
        }
    }
}

/// What a record's size estimate counts for the attributes it keeps (read/attrs.rs counts
/// those read, as the fields the record makes of them; the kept ones are a copy besides):
/// their keys' and str values' text, in code points, as Python's `len`; their block, made
/// once a record keeps any (the `Arc`'s counts and `Shared`)...
pub const ATTRIBUTES_BYTES: usize = 80;
/// ... an item each ...
pub const ATTRIBUTE_BYTES: usize = 12;
/// ... 8 bytes for an int (of 64 bits) or a float, in the text ...
pub const SCALAR_BYTES: usize = 8;
/// ... and a `Value` for any other value that is not a str (what such a value holds beyond
/// it, a list's items, is not counted: a span's are a few short strings when there are any).
pub const VALUE_BYTES: usize = 32;

/// What a record's size estimate counts for kept attributes not made yet (`Attributes::size`
/// for those made): `items` of them, whose keys and str values are `text` code points,
/// `scalars` of whose values are an int or a float, `others` neither nor a str.
pub fn size(items: usize, text: usize, scalars: usize, others: usize) -> usize {
    if items == 0 {
        return 0;
    }
    ATTRIBUTES_BYTES + ATTRIBUTE_BYTES * items + text + SCALAR_BYTES * scalars + VALUE_BYTES * others
}

/// Insertion-ordered attributes, keys unique, shared (`clone` is a reference count). No
/// attributes hold nothing at all: most records keep none.
#[derive(Clone, Default)]
pub struct Attributes(Option<Arc<Shared>>);

/// Attributes made one at a time, their keys unique.
pub struct Builder {
    text: Vec<u8>,
    items: Vec<Item>,
    others: Vec<Value<'static>>,
}

impl Builder {
    /// For `items` attributes whose keys and str values are `text` bytes in all (what the
    /// one block of text is made with: a guess short of it costs a reallocation).
    pub fn with_capacity(items: usize, text: usize) -> Builder {
        Builder { text: Vec::with_capacity(text), items: Vec::with_capacity(items), others: Vec::new() }
    }

    /// What `push` puts in the text of `key` and `val`.
    pub fn text_len(key: &[u8], val: &Value<'_>) -> usize {
        key.len() + match val {
            Value::Str(t) => t.len(),
            Value::Int(_) | Value::Float(_) => 8,
            _ => 0,
        }
    }

    /// `key` set to a copy of `val`, after the others; `key` must be new.
    pub fn push(&mut self, key: &[u8], val: &Value<'_>) {
        let fits = |text: &[u8], n: usize| text.len() + n < TEXT_LIMIT;
        let item = if !fits(&self.text, key.len()) {
            let at = self.other(Value::Str(Cow::Owned(key.to_vec())));
            let val = OTHER + self.other(val.clone().into_owned());
            Item { key: at, key_end: FAR_KEY, val }
        } else {
            let at = self.text.len() as u32;
            self.text.extend_from_slice(key);
            let key_end = self.text.len() as u32;
            let val = match val {
                Value::Str(t) if fits(&self.text, t.len()) => {
                    self.text.extend_from_slice(t);
                    STR + self.text.len() as u32
                }
                Value::Int(n) if fits(&self.text, 8) => {
                    self.text.extend_from_slice(&n.to_le_bytes());
                    INT + self.text.len() as u32
                }
                Value::Float(x) if fits(&self.text, 8) => {
                    self.text.extend_from_slice(&x.to_le_bytes());
                    FLOAT + self.text.len() as u32
                }
                other => OTHER + self.other(other.clone().into_owned()),
            };
            Item { key: at, key_end, val }
        };
        self.items.push(item);
    }

    fn other(&mut self, v: Value<'static>) -> u32 {
        self.others.push(v);
        (self.others.len() - 1) as u32
    }

    pub fn finish(self) -> Attributes {
        if self.items.is_empty() {
            return Attributes(None);
        }
        let shared = Shared {
            text: self.text.into_boxed_slice(),
            items: self.items.into_boxed_slice(),
            others: self.others.into_boxed_slice(),
            sorted: None,
        };
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

    /// What a record's size estimate counts for these (ATTRIBUTES_BYTES and the rest).
    pub fn size(&self) -> usize {
        let Some(s) = &self.0 else { return 0 };
        if s.others.is_empty() && s.text.is_ascii() {
            // then every key and str value is ASCII, a code point a byte, and every other
            // value is an int's or a float's 8 bytes: no walk of the items' text (a plug-in
            // keeps a few a span, and this is on every span)
            let scalars = s.items.iter().filter(|it| it.val & KIND != STR).count();
            return size(s.items.len(), s.text.len() - 8 * scalars, scalars, 0);
        }
        ATTRIBUTES_BYTES + (0..s.items.len()).map(|i| ATTRIBUTE_BYTES + s.size_of(i)).sum::<usize>()
    }

    /// The bytes these hold on the heap, shared or not: the shared block, the text, the
    /// items, the index, and what values other than a str hold (at their capacity; the
    /// allocator's rounding aside). For memory accounting (bench/held_memory.py).
    pub fn heap_bytes(&self) -> usize {
        let Some(s) = &self.0 else { return 0 };
        let values = s.others.iter().map(value_heap_bytes).sum::<usize>();
        // the Arc's block: two counts and `Shared`
        2 * std::mem::size_of::<usize>() + std::mem::size_of::<Shared>() + s.text.len()
            + std::mem::size_of_val::<[Item]>(&s.items)
            + std::mem::size_of_val::<[Value<'static>]>(&s.others)
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
    fn keys_str_values_and_ints_lie_in_one_block_of_text() {
        let a = of(vec![item("k1", text("v1")), item("k2", Value::Int(2)), item("k3", text("v3"))]);
        let s = a.0.as_ref().expect("some");
        assert_eq!(&*s.text, [&b"k1v1k2"[..], &2i64.to_le_bytes(), b"k3v3"].concat());
        assert!(s.others.is_empty());
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
        let short = of(vec![item("k", text(""))]);
        let long = of(vec![item("k", text(&"x".repeat(1000)))]);
        assert!(short.heap_bytes() > 1 + std::mem::size_of::<Shared>());
        assert_eq!(long.heap_bytes() - short.heap_bytes(), 1000);
        let int = of(vec![item("k", Value::Int(1))]);
        assert_eq!(int.heap_bytes() - short.heap_bytes(), 8);
        let none = of(vec![item("k", Value::Null)]);
        assert_eq!(none.heap_bytes() - short.heap_bytes(), std::mem::size_of::<Value<'static>>());
        let nested = of(vec![item("k", Value::List(vec![text(&"y".repeat(100)), Value::Int(2)]))]);
        assert!(nested.heap_bytes() >= none.heap_bytes() + 100 + 2 * std::mem::size_of::<Value<'static>>());
    }

    #[test]
    fn an_attribute_with_a_str_value_holds_twelve_bytes_beside_its_text() {
        assert_eq!(std::mem::size_of::<Item>(), 12);
        let one = of(vec![item("gen_ai.system", text("openai"))]);
        let three = of(vec![item("gen_ai.system", text("openai")), item("gen_ai.request.model", text("gpt-4o")),
                            item("gen_ai.operation.name", text("chat"))]);
        let text_of = |a: &Attributes| a.iter().map(|(k, v)| k.len() + v.as_text().map_or(0, <[u8]>::len)).sum::<usize>();
        let block = 2 * std::mem::size_of::<usize>() + std::mem::size_of::<Shared>();
        assert_eq!(one.heap_bytes(), block + text_of(&one) + 12);
        assert_eq!(three.heap_bytes(), block + text_of(&three) + 3 * 12);
    }

    #[test]
    fn the_size_estimate_is_what_keys_and_scalar_values_hold_counting_text_in_code_points() {
        assert_eq!(ATTRIBUTES_BYTES, 2 * std::mem::size_of::<usize>() + std::mem::size_of::<Shared>());
        assert_eq!(ATTRIBUTE_BYTES, std::mem::size_of::<Item>());
        assert_eq!(VALUE_BYTES, std::mem::size_of::<Value<'static>>());
        let a = of(vec![item("gen_ai.system", text("openai")), item("gen_ai.usage.input_tokens", Value::Int(12)),
                        item("gen_ai.request.temperature", Value::Float(0.5)), item("ok", Value::Bool(true))]);
        assert_eq!(a.size(), ATTRIBUTES_BYTES + 4 * ATTRIBUTE_BYTES + 2 * SCALAR_BYTES + VALUE_BYTES
                   + "gen_ai.systemopenai".len() + "gen_ai.usage.input_tokens".len()
                   + "gen_ai.request.temperature".len() + 2);
        assert_eq!(a.0.as_ref().map(|s| s.others.len()), Some(1), "the int and the float are in the text");
        assert_eq!(a.heap_bytes(), a.size());
        // "é" is two bytes held, one code point counted
        let e = of(vec![item("é", text("éé"))]);
        assert_eq!(e.heap_bytes() - e.size(), 3);
        assert_eq!(Attributes::default().size(), 0);
    }

    #[test]
    fn the_size_estimate_counts_the_text_kept_beside_the_block_past_its_limit() {
        let long = "v".repeat(TEXT_LIMIT);
        let a = of(vec![item("k", text(&long)), item("n", Value::Bool(true))]);
        assert_eq!(a.size(), ATTRIBUTES_BYTES + 2 * ATTRIBUTE_BYTES + VALUE_BYTES + 2 + TEXT_LIMIT);
    }

    #[test]
    fn the_size_estimate_is_the_same_whether_the_text_is_ascii_or_not() {
        let items = |k: &str, v: &str, n: i64| vec![item(k, text(v)), item("n", Value::Int(n)), item("f", Value::Float(2.0))];
        let ascii = of(items("key", "value", 90));
        assert!(ascii.0.as_ref().is_some_and(|s| s.text.is_ascii()));
        let by_item = |a: &Attributes| {
            let s = a.0.as_ref().expect("some");
            ATTRIBUTES_BYTES + (0..s.items.len()).map(|i| ATTRIBUTE_BYTES + s.size_of(i)).sum::<usize>()
        };
        assert_eq!(ascii.size(), by_item(&ascii));
        assert_eq!(ascii.size(), ATTRIBUTES_BYTES + 3 * ATTRIBUTE_BYTES + 8 + 2 * SCALAR_BYTES + 2);
        // an int's bytes that are not ASCII, or a key that is not, take the walk
        let negative = of(items("key", "value", -1));
        assert_eq!(negative.size(), ascii.size());
        let wide = of(items("kéy", "valué", 90));
        assert_eq!(wide.size(), ascii.size());
        assert_eq!(wide.heap_bytes() - wide.size(), 2);
    }

    #[test]
    fn ints_and_floats_held_in_the_text_come_back_exactly() {
        let values = [Value::Int(0), Value::Int(-1), Value::Int(i64::MIN), Value::Int(i64::MAX), Value::Float(-0.0),
                      Value::Float(f64::MAX), Value::Float(f64::INFINITY), Value::Float(1e-300), Value::Bool(false)];
        let items: Vec<_> = values.iter().enumerate().map(|(i, v)| item(&format!("k{i}"), v.clone())).collect();
        let a = of(items);
        for (i, v) in values.iter().enumerate() {
            let got = a.value(i).expect("there");
            assert_eq!(&*got, v);
            if let (Value::Float(x), Value::Float(y)) = (&*got, v) {
                assert_eq!(x.to_bits(), y.to_bits(), "the sign of -0.0 too");
            }
        }
        assert_eq!(a.0.as_ref().map(|s| s.others.len()), Some(1), "only the bool is beside the text");
        let nan = of(vec![item("n", Value::Float(f64::NAN))]);
        assert!(matches!(nan.get(b"n").as_deref(), Some(Value::Float(x)) if x.is_nan()));
    }

    #[test]
    fn keys_and_values_that_would_pass_the_texts_limit_are_kept_whole_beside_it() {
        // TEXT_LIMIT is short under test: a long value, then a long key, then short ones
        let long_value = "v".repeat(TEXT_LIMIT);
        let long_key = "k".repeat(TEXT_LIMIT - 10);
        let items = vec![item("a", text("1")), item("b", text(&long_value)), item(&long_key, text("2")),
                         item("c", text(&"w".repeat(TEXT_LIMIT - 20))), item("d", text("3")), item("e", Value::Int(4)),
                         item(&format!("{long_key}!"), Value::Int(5))];
        let a = of(items.clone());
        let s = a.0.as_ref().expect("some");
        assert!(s.text.len() < TEXT_LIMIT, "{}", s.text.len());
        assert!(s.items.iter().any(|it| it.key_end == FAR_KEY));
        assert_eq!(a, of(items.clone()));
        assert_eq!(a.iter().map(|(k, v)| (k.to_vec(), v.into_owned())).collect::<Vec<_>>(),
                   items.iter().map(|(k, v)| (k.to_vec(), v.clone())).collect::<Vec<_>>());
        for (k, v) in &items {
            assert_eq!(a.get(k).as_deref(), Some(v));
        }
    }
}
