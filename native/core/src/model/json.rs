//! `json.loads` and `json.dumps` as CPython's `json` module does them, byte for byte, on
//! WTF-8 text: what a reader decodes content with and writes payloads back as, and the
//! canonical form of a call's arguments.
//!
//! `loads` takes exactly what `json.loads` takes (its C scanner, strict): `NaN`, `Infinity`
//! and `-Infinity`; integers of any size up to Python's 4,300 digits; floats correctly
//! rounded from their text (`1e400` is infinity); `\uXXXX` escapes, a surrogate pair
//! joined and a lone surrogate kept; a key given twice keeps its first place and its last
//! value; only ` \t\n\r` as white space; nothing after the value but white space. Nesting
//! past `MAX_DEPTH` is refused, as Python refuses it with a RecursionError.

use std::borrow::Cow;

use super::value::{DictBuilder, Text, Value};
use crate::error::{Error, Result};
use crate::pyfmt::float;
use crate::pyfmt::strs::push_code_point;

/// Containers nested deeper than this are refused by `loads` and not written by `dumps`:
/// CPython's recursion limit (1,000 frames, less those below the call) refuses them there.
pub const MAX_DEPTH: u32 = 900;
/// Python's limit on the digits of an integer read from text (`sys.int_info`).
const MAX_INT_DIGITS: usize = 4300;

/// `json.loads(text)`, or None where it raises (ValueError, RecursionError). Strings borrow
/// `text` where they hold no escape.
pub fn loads(text: &[u8]) -> Option<Value<'_>> {
    let mut p = Parser { b: text, i: 0 };
    p.ws();
    let v = p.value(0)?;
    p.ws();
    (p.i == text.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Parser<'a> {
    #[inline]
    fn ws(&mut self) {
        while self.i < self.b.len() && matches!(self.b[self.i], b' ' | b'\t' | b'\n' | b'\r') {
            self.i += 1;
        }
    }

    #[inline]
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Some(())
        } else {
            None
        }
    }

    fn value(&mut self, depth: u32) -> Option<Value<'a>> {
        match self.peek()? {
            b'"' => {
                self.i += 1;
                self.string().map(Value::Str)
            }
            b'{' => self.object(depth + 1),
            b'[' => self.array(depth + 1),
            b'n' => self.literal(b"null").map(|_| Value::Null),
            b't' => self.literal(b"true").map(|_| Value::Bool(true)),
            b'f' => self.literal(b"false").map(|_| Value::Bool(false)),
            b'N' => self.literal(b"NaN").map(|_| Value::Float(f64::NAN)),
            b'I' => self.literal(b"Infinity").map(|_| Value::Float(f64::INFINITY)),
            b'-' if self.b.get(self.i + 1) == Some(&b'I') => {
                self.literal(b"-Infinity").map(|_| Value::Float(f64::NEG_INFINITY))
            }
            _ => self.number(),
        }
    }

    fn object(&mut self, depth: u32) -> Option<Value<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        let mut d = DictBuilder::default();
        if self.peek()? == b'}' {
            self.i += 1;
            return Some(Value::Dict(d.items));
        }
        loop {
            if self.peek()? != b'"' {
                return None; // a property name, or a trailing comma
            }
            self.i += 1;
            let key = self.string()?;
            self.ws();
            if self.peek()? != b':' {
                return None;
            }
            self.i += 1;
            self.ws();
            let v = self.value(depth)?;
            d.insert(key, v);
            self.ws();
            match self.peek()? {
                b'}' => {
                    self.i += 1;
                    return Some(Value::Dict(d.items));
                }
                b',' => {
                    self.i += 1;
                    self.ws();
                }
                _ => return None,
            }
        }
    }

    fn array(&mut self, depth: u32) -> Option<Value<'a>> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.i += 1;
        self.ws();
        let mut items = Vec::new();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(Value::List(items));
        }
        loop {
            items.push(self.value(depth)?);
            self.ws();
            match self.peek()? {
                b']' => {
                    self.i += 1;
                    return Some(Value::List(items));
                }
                b',' => {
                    self.i += 1;
                    self.ws();
                    if self.peek()? == b']' {
                        return None; // a trailing comma
                    }
                }
                _ => return None,
            }
        }
    }

    fn hex4(&self, at: usize) -> Option<u32> {
        let digits = self.b.get(at..at + 4)?;
        let mut n = 0u32;
        for &d in digits {
            n = n << 4 | (d as char).to_digit(16)?;
        }
        Some(n)
    }

    /// A string's text, from after its opening quote: borrowed when it holds no escape.
    fn string(&mut self) -> Option<Text<'a>> {
        let start = self.i;
        let mut owned: Option<Vec<u8>> = None;
        let mut run = start; // the start of the bytes not yet copied into `owned`
        loop {
            let c = *self.b.get(self.i)?;
            match c {
                b'"' => {
                    let end = self.i;
                    self.i += 1;
                    return Some(match owned {
                        None => Cow::Borrowed(&self.b[start..end]),
                        Some(mut o) => {
                            o.extend_from_slice(&self.b[run..end]);
                            Cow::Owned(o)
                        }
                    });
                }
                0..=0x1F => return None, // a control character (strict)
                b'\\' => {
                    let o = owned.get_or_insert_with(Vec::new);
                    o.extend_from_slice(&self.b[run..self.i]);
                    let e = *self.b.get(self.i + 1)?;
                    self.i += 2;
                    match e {
                        b'"' | b'\\' | b'/' => o.push(e),
                        b'b' => o.push(0x08),
                        b'f' => o.push(0x0C),
                        b'n' => o.push(b'\n'),
                        b'r' => o.push(b'\r'),
                        b't' => o.push(b'\t'),
                        b'u' => {
                            let mut cp = self.hex4(self.i)?;
                            self.i += 4;
                            // a high surrogate, a `\u` escape after it (and a character
                            // after that): read as its pair when it is a low surrogate
                            if (0xD800..=0xDBFF).contains(&cp) && self.i + 6 < self.b.len()
                                && self.b[self.i] == b'\\' && self.b[self.i + 1] == b'u'
                            {
                                let low = self.hex4(self.i + 2)?;
                                if (0xDC00..=0xDFFF).contains(&low) {
                                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
                                    self.i += 6;
                                }
                            }
                            push_code_point(o, cp);
                        }
                        _ => return None,
                    }
                    run = self.i;
                }
                _ => self.i += 1,
            }
        }
    }

    fn digits(&mut self) -> usize {
        let from = self.i;
        while self.i < self.b.len() && self.b[self.i].is_ascii_digit() {
            self.i += 1;
        }
        self.i - from
    }

    fn number(&mut self) -> Option<Value<'a>> {
        let start = self.i;
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'1'..=b'9' => {
                self.digits();
            }
            b'0' => self.i += 1,
            _ => return None,
        }
        let mut is_float = false;
        if self.peek() == Some(b'.') && self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
            self.digits();
            is_float = true;
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            let e_start = self.i;
            self.i += 1;
            if matches!(self.peek(), Some(b'-' | b'+')) {
                self.i += 1;
            }
            if self.digits() > 0 {
                is_float = true;
            } else {
                self.i = e_start;
            }
        }
        let text = std::str::from_utf8(&self.b[start..self.i]).expect("ASCII");
        if is_float {
            return text.parse::<f64>().ok().map(Value::Float);
        }
        int_value(text)
    }
}

/// `int(text)` of JSON's integer text (an optional `-`, no leading zeros): a 64-bit int, or
/// the text itself when outside; None past Python's digit limit.
fn int_value(text: &str) -> Option<Value<'_>> {
    if let Ok(x) = text.parse::<i64>() {
        return Some(Value::Int(x));
    }
    if text.trim_start_matches('-').len() > MAX_INT_DIGITS {
        return None;
    }
    Some(Value::BigInt(Cow::Borrowed(text)))
}

// ------------------------------------------------------------------ json.dumps

/// What `json.dumps` does with a value that is none of JSON's types (bytes, a set, an
/// object): its `default`.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Default {
    /// `payload._plain`: bytes as base64, anything else `str()`.
    Plain,
    /// `default=str`.
    Str,
    /// None: a TypeError.
    Strict,
}

/// How `json.dumps` lays a document out.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Layout {
    pub sort_keys: bool,
    /// `separators=(",", ":")` rather than `(", ", ": ")`
    pub compact: bool,
}

pub const PLAIN: Layout = Layout { sort_keys: false, compact: false };
/// `json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)`
pub const CANONICAL: Layout = Layout { sort_keys: true, compact: true };

/// `json.dumps(v, ensure_ascii=False, default=...)`: Python's TypeError for what it cannot
/// write, its RecursionError past `MAX_DEPTH`.
pub fn dumps(v: &Value<'_>, default: Default, layout: Layout) -> Result<Vec<u8>> {
    let mut out = Vec::with_capacity(64);
    write(v, &mut out, default, layout, 0)?;
    Ok(out)
}

/// `payload.dumps(v)`: with `Default::Plain`, and a value nested too deep to write as the
/// marker the Python gave instead of its RecursionError.
pub fn dumps_plain(v: &Value<'_>) -> Result<Vec<u8>> {
    match dumps(v, Default::Plain, PLAIN) {
        Err(Error::Recursion(_)) => Ok(b"[unreadable: nested too deep]".to_vec()),
        other => other,
    }
}

fn too_deep() -> Error {
    Error::Recursion("maximum recursion depth exceeded while encoding a JSON object".into())
}

fn write(v: &Value<'_>, out: &mut Vec<u8>, default: Default, layout: Layout, depth: u32) -> Result<()> {
    match v {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Int(x) => out.extend_from_slice(x.to_string().as_bytes()),
        Value::BigInt(t) => out.extend_from_slice(t.as_bytes()),
        Value::Float(x) => json_float(*x, out),
        Value::Str(s) => json_string(s, out),
        Value::List(items) | Value::Tuple(items) => {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            out.push(b'[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(if layout.compact { b"," } else { b", " });
                }
                write(x, out, default, layout, depth + 1)?;
            }
            out.push(b']');
        }
        Value::Dict(items) => {
            if depth >= MAX_DEPTH {
                return Err(too_deep());
            }
            let mut keyed = Vec::with_capacity(items.len());
            for (k, x) in items {
                keyed.push((key_text(k)?, x));
            }
            if layout.sort_keys {
                if items.iter().any(|(k, _)| !k.is_str()) && items.iter().any(|(k, _)| k.is_str()) {
                    return Err(Error::Type("'<' not supported between instances of 'str' and another type".into()));
                }
                keyed.sort_by(|a, b| a.0.cmp(&b.0));
            }
            out.push(b'{');
            for (i, (k, x)) in keyed.iter().enumerate() {
                if i > 0 {
                    out.extend_from_slice(if layout.compact { b"," } else { b", " });
                }
                json_string(k, out);
                out.extend_from_slice(if layout.compact { b":" } else { b": " });
                write(x, out, default, layout, depth + 1)?;
            }
            out.push(b'}');
        }
        Value::Bytes(b) => match default {
            Default::Plain => {
                out.push(b'"');
                base64(b, out);
                out.push(b'"');
            }
            Default::Str => json_string(&v.py_str(), out),
            Default::Strict => return Err(not_serializable(v)),
        },
        Value::Other(_) => match default {
            Default::Plain | Default::Str => json_string(&v.py_str(), out),
            Default::Strict => return Err(not_serializable(v)),
        },
    }
    Ok(())
}

fn not_serializable(v: &Value<'_>) -> Error {
    Error::Type(format!("Object of type {} is not JSON serializable", v.type_name()))
}

/// A dict key as json.dumps writes it: a str as it is; an int, float, bool or None as its
/// JSON spelling; anything else a TypeError.
fn key_text<'x>(k: &'x Value<'_>) -> Result<Cow<'x, [u8]>> {
    Ok(match k {
        Value::Str(s) => Cow::Borrowed(&s[..]),
        Value::Null => Cow::Borrowed(b"null"),
        Value::Bool(true) => Cow::Borrowed(b"true"),
        Value::Bool(false) => Cow::Borrowed(b"false"),
        Value::Int(x) => Cow::Owned(x.to_string().into_bytes()),
        Value::BigInt(t) => Cow::Borrowed(t.as_bytes()),
        Value::Float(x) => {
            let mut out = Vec::new();
            json_float(*x, &mut out);
            Cow::Owned(out)
        }
        other => {
            return Err(Error::Type(format!("keys must be str, int, float, bool or None, not {}", other.type_name())))
        }
    })
}

/// A float as json.dumps writes it: its repr, and NaN and the infinities as JavaScript
/// spells them.
pub fn json_float(x: f64, out: &mut Vec<u8>) {
    if x.is_nan() {
        out.extend_from_slice(b"NaN");
    } else if x.is_infinite() {
        out.extend_from_slice(if x > 0.0 { b"Infinity".as_slice() } else { b"-Infinity" });
    } else {
        float::repr(x, out);
    }
}

/// A JSON string as json.dumps writes it with ensure_ascii=False: only the quote, the
/// backslash and control characters escaped (lowercase hex).
pub fn json_string(s: &[u8], out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let mut start = 0;
    for (i, &c) in s.iter().enumerate() {
        let esc: &[u8] = match c {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0x08 => b"\\b",
            0x0C => b"\\f",
            0x00..=0x1F => b"",
            _ => continue,
        };
        out.extend_from_slice(&s[start..i]);
        if esc.is_empty() {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[(c >> 4) as usize]);
            out.push(HEX[(c & 15) as usize]);
        } else {
            out.extend_from_slice(esc);
        }
        start = i + 1;
    }
    out.extend_from_slice(&s[start..]);
    out.push(b'"');
}

/// `base64.b64encode(b)`.
pub fn base64(b: &[u8], out: &mut Vec<u8>) {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for chunk in b.chunks(3) {
        let n = chunk.iter().enumerate().fold(0u32, |n, (i, &x)| n | (x as u32) << (16 - 8 * i));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize]);
            } else {
                out.push(b'=');
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plain(v: &Value<'_>) -> String {
        String::from_utf8(dumps(v, Default::Plain, PLAIN).unwrap()).unwrap()
    }

    #[test]
    fn loads_reads_what_python_reads() {
        let v = loads(br#" {"a": [1, -0, 2.5e0, 1e400, NaN, -Infinity, true, null], "a": "x\u00e9\ud83d\ude00"} "#).unwrap();
        assert_eq!(plain(&v), r#"{"a": "xé😀"}"#);
        let v = loads(br#"[1, -0, 2.5e0, 1e400, -Infinity, 123456789012345678901234567890]"#).unwrap();
        assert_eq!(plain(&v), "[1, 0, 2.5, Infinity, -Infinity, 123456789012345678901234567890]");
        // a lone surrogate is kept, as its three bytes
        assert_eq!(loads(br#""\ud800x""#).unwrap(), Value::Str(Cow::Owned(vec![0xED, 0xA0, 0x80, b'x'])));
    }

    #[test]
    fn loads_refuses_what_python_refuses() {
        for bad in ["", "[1,]", "{\"a\":1,}", "01", "1.", ".5", "1e", "[1] x", "'a'", "{1: 2}", "\"\t\"", "\u{feff}1",
                    "nan", "[", "\"\\x\"", "\"\\u12\"", "+1"] {
            assert!(loads(bad.as_bytes()).is_none(), "{bad:?}");
        }
        let deep = "[".repeat(MAX_DEPTH as usize + 1) + &"]".repeat(MAX_DEPTH as usize + 1);
        assert!(loads(deep.as_bytes()).is_none());
        let ok = "[".repeat(MAX_DEPTH as usize) + &"]".repeat(MAX_DEPTH as usize);
        assert!(loads(ok.as_bytes()).is_some());
        assert!(loads(("1".repeat(4301)).as_bytes()).is_none());
    }

    #[test]
    fn strings_without_escapes_are_borrowed() {
        let text = br#"{"key": "value"}"#;
        let Some(Value::Dict(items)) = loads(text) else { panic!() };
        assert!(matches!(items[0].1, Value::Str(Cow::Borrowed(_))));
    }

    #[test]
    fn dumps_writes_what_python_writes() {
        let v = loads(br#"{"b": [1.0, "q\"\n\u0001"], "a": {}}"#).unwrap();
        assert_eq!(plain(&v), r#"{"b": [1.0, "q\"\n\u0001"], "a": {}}"#);
        assert_eq!(String::from_utf8(dumps(&v, Default::Strict, CANONICAL).unwrap()).unwrap(),
                   r#"{"a":{},"b":[1.0,"q\"\n\u0001"]}"#);
        let bytes = Value::List(vec![Value::Bytes(Cow::Borrowed(b"hi"))]);
        assert_eq!(plain(&bytes), r#"["aGk="]"#);
        assert_eq!(dumps(&bytes, Default::Str, PLAIN).unwrap(), br#"["b'hi'"]"#);
        assert_eq!(dumps(&bytes, Default::Strict, PLAIN).unwrap_err(),
                   Error::Type("Object of type bytes is not JSON serializable".into()));
        let keys = Value::Dict(vec![(Value::Int(1), Value::Null), (Value::Float(f64::INFINITY), Value::Null),
                                    (Value::Bool(false), Value::Null)]);
        assert_eq!(plain(&keys), r#"{"1": null, "Infinity": null, "false": null}"#);
    }

    #[test]
    fn too_deep_to_write_is_the_marker() {
        let mut v = Value::List(vec![]);
        for _ in 0..5000 {
            v = Value::List(vec![v]);
        }
        assert_eq!(dumps_plain(&v).unwrap(), b"[unreadable: nested too deep]");
        assert!(matches!(dumps(&v, Default::Strict, PLAIN), Err(Error::Recursion(_))));
    }
}
