//! Span and trace ids as the assembler keeps them.
//!
//! OTLP ids are lowercase hex (`read/ids.py`): kept as the number they spell, they hash and
//! compare as one machine word and cost no allocation. Other ids (offline formats name spans
//! as they like) are kept as text. The form is canonical (a string that is 16 lowercase hex
//! digits is always a number), so equal ids are always equal values.

use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, PartialEq, Eq, Debug)]
pub enum SpanId {
    Hex(u64),
    Text(Box<str>),
}

// a hex trace id as two words, not one u128: the enum stays 24 bytes (a u128 would align
// it to 16 and make it 32), and there is one in every map entry keyed by a trace
#[derive(Clone, PartialEq, Eq, Debug)]
pub enum TraceId {
    Hex(u64, u64),
    Text(Box<str>),
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// Eight lowercase hex digits (the first in the low byte) as the number they spell, eight
/// bytes at a time: every id of every span is parsed, and a byte at a time cost ~8
/// instructions a digit. A byte's high bit is set when it is in a range by adding the
/// range's distance from 0x80 (no byte carries: each is below 0x80 and the sum below 0x100).
fn hex8(x: u64) -> Option<u32> {
    if x & HIGH != 0 {
        return None;
    }
    let at_least = |lo: u64| x.wrapping_add(ONES * (0x80 - lo));
    let digit = at_least(0x30) & !at_least(0x3a);
    let letter = at_least(0x61) & !at_least(0x67);
    if (digit | letter) & HIGH != HIGH {
        return None;
    }
    // each byte's value: its low nibble, plus 9 for a letter
    let mut v = (x & (ONES * 0x0f)) + ((letter & HIGH) >> 7) * 9;
    // pairs of nibbles, then pairs of bytes, then pairs of 16 bits, the first most significant
    v = ((v << 4) | (v >> 8)) & 0x00ff_00ff_00ff_00ff;
    v = ((v << 8) | (v >> 16)) & 0x0000_ffff_0000_ffff;
    v = ((v << 16) | (v >> 32)) & 0xffff_ffff;
    Some(v as u32)
}

/// Sixteen lowercase hex digits as the number they spell.
fn hex64(b: &[u8]) -> Option<u64> {
    let word = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    Some((u64::from(hex8(word(0))?) << 32) | u64::from(hex8(word(8))?))
}

/// ``v`` as 16 lowercase hex digits, most significant first. Not `write!("{v:016x}")`:
/// formatting went through `fmt`'s padding and a `write_char` a digit, ~800 instructions
/// an id, and every span's id and parent id are written for Python.
pub fn hex16(v: u64) -> [u8; 16] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = [0u8; 16];
    for (i, d) in out.iter_mut().enumerate() {
        *d = DIGITS[((v >> (60 - 4 * i)) & 0xf) as usize];
    }
    out
}

fn hex_str(b: &[u8]) -> &str {
    std::str::from_utf8(b).expect("hex digits are ASCII")
}

// The maps keyed by ids use `IdHash`: a folded multiply of each word with a key drawn once
// per process. std's SipHash cost ~100 instructions an id, and a span has several; this
// costs a few, and an id's hash still cannot be foreseen from outside (ids are the
// senders'), so a sender cannot aim many ids at one bucket.
#[derive(Clone, Copy)]
pub struct IdHash(u64);

impl Default for IdHash {
    fn default() -> IdHash {
        static KEY: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        IdHash(*KEY.get_or_init(|| {
            use std::hash::BuildHasher;
            std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64) | 1
        }))
    }
}

pub struct IdHasher {
    key: u64,
    state: u64,
}

const MIX: u64 = 0x9e37_79b9_7f4a_7c15;

fn fold(a: u64, b: u64) -> u64 {
    let p = u128::from(a).wrapping_mul(u128::from(b));
    (p as u64) ^ ((p >> 64) as u64)
}

impl std::hash::BuildHasher for IdHash {
    type Hasher = IdHasher;
    fn build_hasher(&self) -> IdHasher {
        IdHasher { key: self.0, state: self.0 }
    }
}

impl std::hash::Hasher for IdHasher {
    fn write_u64(&mut self, v: u64) {
        self.state = fold(self.state ^ v, MIX ^ self.key);
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            self.write_u64(u64::from_le_bytes(c.try_into().expect("8 bytes")));
        }
        let mut tail = [0u8; 8];
        tail[..chunks.remainder().len()].copy_from_slice(chunks.remainder());
        self.write_u64(u64::from_le_bytes(tail) ^ ((bytes.len() as u64) << 56));
    }

    fn write_u8(&mut self, v: u8) {
        self.write_u64(u64::from(v));
    }

    fn write_u32(&mut self, v: u32) {
        self.write_u64(u64::from(v));
    }

    fn write_usize(&mut self, v: usize) {
        self.write_u64(v as u64);
    }

    fn finish(&self) -> u64 {
        fold(self.state, self.key)
    }
}

pub type IdMap<K, V> = std::collections::HashMap<K, V, IdHash>;
pub type IdSet<K> = std::collections::HashSet<K, IdHash>;

impl std::hash::Hash for SpanId {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            SpanId::Hex(v) => h.write_u64(*v),
            SpanId::Text(t) => h.write(t.as_bytes()),
        }
    }
}

impl std::hash::Hash for TraceId {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        match self {
            TraceId::Hex(hi, lo) => {
                h.write_u64(*hi);
                h.write_u64(*lo);
            }
            TraceId::Text(t) => h.write(t.as_bytes()),
        }
    }
}

impl SpanId {
    pub fn parse(s: &str) -> SpanId {
        let b = s.as_bytes();
        match if b.len() == 16 { hex64(b) } else { None } {
            Some(v) => SpanId::Hex(v),
            None => SpanId::Text(s.into()),
        }
    }

    /// The empty id: the root of a run whose root never arrived.
    pub fn empty() -> SpanId {
        SpanId::Text("".into())
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, SpanId::Text(t) if t.is_empty())
    }

    /// The id as its text: 16 lowercase hex digits, or the text it was.
    pub fn text(&self) -> std::borrow::Cow<'_, str> {
        match self {
            SpanId::Hex(v) => hex_str(&hex16(*v)).to_owned().into(),
            SpanId::Text(t) => std::borrow::Cow::Borrowed(t),
        }
    }

    /// ``f`` of the id's text, made on the stack.
    pub fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            SpanId::Hex(v) => f(hex_str(&hex16(*v))),
            SpanId::Text(t) => f(t),
        }
    }
}

/// Python's order of the id strings: by code point, which UTF-8's byte order keeps, and for
/// two hex ids of one width the order of the numbers they spell.
impl Ord for SpanId {
    fn cmp(&self, other: &SpanId) -> Ordering {
        match (self, other) {
            (SpanId::Hex(a), SpanId::Hex(b)) => a.cmp(b),
            _ => self.text().as_bytes().cmp(other.text().as_bytes()),
        }
    }
}

impl PartialOrd for SpanId {
    fn partial_cmp(&self, other: &SpanId) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl TraceId {
    pub fn parse(s: &str) -> TraceId {
        let b = s.as_bytes();
        if b.len() == 32 {
            if let (Some(hi), Some(lo)) = (hex64(&b[..16]), hex64(&b[16..])) {
                return TraceId::Hex(hi, lo);
            }
        }
        TraceId::Text(s.into())
    }

    /// ``f`` of the id's text (32 lowercase hex digits, or the text it was), made on the stack.
    pub fn with_text<R>(&self, f: impl FnOnce(&str) -> R) -> R {
        match self {
            TraceId::Hex(hi, lo) => {
                let mut b = [0u8; 32];
                b[..16].copy_from_slice(&hex16(*hi));
                b[16..].copy_from_slice(&hex16(*lo));
                f(hex_str(&b))
            }
            TraceId::Text(t) => f(t),
        }
    }

}

impl fmt::Display for SpanId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SpanId::Hex(v) => f.write_str(hex_str(&hex16(*v))),
            SpanId::Text(t) => f.write_str(t),
        }
    }
}

impl fmt::Display for TraceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TraceId::Hex(..) => self.with_text(|t| f.write_str(t)),
            TraceId::Text(t) => f.write_str(t),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_ids_are_read_as_python_reads_them() {
        for s in ["0123456789abcdef", "ffffffffffffffff", "0000000000000000", "a0b1c2d3e4f50617"] {
            assert_eq!(SpanId::parse(s), SpanId::Hex(u64::from_str_radix(s, 16).unwrap()));
        }
        // one byte out of every range, in every position
        for bad in ["/", ":", "`", "g", "A", "F", "\u{7f}", " "] {
            for at in 0..16 {
                let mut s = "0123456789abcdef".to_string();
                s.replace_range(at..at + 1, bad);
                assert!(matches!(SpanId::parse(&s), SpanId::Text(_)), "{s}");
            }
        }
        assert!(matches!(SpanId::parse("0123456789abcdeé"), SpanId::Text(_)));
        let ab = u64::from_str_radix(&"ab".repeat(8), 16).unwrap();
        assert_eq!(TraceId::parse(&"ab".repeat(16)), TraceId::Hex(ab, ab));
    }

    #[test]
    fn hex_ids_are_written_as_python_writes_them_and_read_back() {
        for v in [0u64, 1, 0xf, 0x10, 0x0123_4567_89ab_cdef, u64::MAX, 0x8000_0000_0000_0000] {
            let s = SpanId::Hex(v);
            assert_eq!(s.to_string(), format!("{v:016x}"));
            assert_eq!(s.with_text(str::to_owned), format!("{v:016x}"));
            assert_eq!(SpanId::parse(&s.text()), s);
            let t = TraceId::Hex(v, !v);
            assert_eq!(t.to_string(), format!("{v:016x}{:016x}", !v));
            assert_eq!(TraceId::parse(&t.with_text(str::to_owned)), t);
        }
        assert_eq!(SpanId::Text("x y".into()).with_text(str::to_owned), "x y");
        assert_eq!(TraceId::Text("trace-1".into()).to_string(), "trace-1");
    }
}
