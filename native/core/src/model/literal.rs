//! `ast.literal_eval(text)` for what a payload's Python repr holds: what `str()` of a dict
//! or a list writes (an agent framework's message, a callback's `input_str`), read back as a
//! value. None wherever `literal_eval` raises.
//!
//! Read as Python reads it: strings with any prefix (`r`, `b`, `u`, `rb`...) and quotes,
//! their escapes, adjacent strings joined; integers and floats in every spelling
//! (underscores, `0x`, `1.`, `.5`, `1e400`); a sign before a number; `True`, `False`,
//! `None`, `...`; lists, tuples, dicts, sets and `set()`, trailing commas; white space,
//! line breaks inside brackets, comments. Not read (None, where Python gives a value):
//! complex numbers (`1j`) and `\N{...}` escapes, which no repr of a message holds. A set
//! is kept in the order it was written (Python's is its hash order).

use std::borrow::Cow;

use super::value::{Other, Value};
use crate::pyfmt::strs::{code_point, push_code_point};

/// Brackets nested deeper than this are refused (CPython's tokenizer: "too many nested
/// parentheses").
const MAX_NESTING: u32 = 200;
const MAX_INT_DIGITS: usize = 4300;

/// `ast.literal_eval(text)`, or None where it raises.
pub fn literal_eval(text: &[u8]) -> Option<Value<'static>> {
    // the source must encode to UTF-8 (a lone surrogate cannot) and hold no NUL
    if text.contains(&0) || std::str::from_utf8(text).is_err() {
        return None;
    }
    let start = text.iter().position(|&c| c != b' ' && c != b'\t').unwrap_or(text.len());
    let mut p = Parser { b: text, i: start, depth: 0 };
    let v = p.expr()?;
    p.gap(false);
    (p.i == text.len()).then_some(v)
}

struct Parser<'a> {
    b: &'a [u8],
    i: usize,
    depth: u32,
}

enum Part {
    Text(Vec<u8>),
    Bytes(Vec<u8>),
}

impl<'a> Parser<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// White space, comments and backslash continuations; line breaks only inside brackets
    /// (`inside`).
    fn gap(&mut self, inside: bool) {
        while let Some(c) = self.peek() {
            match c {
                b' ' | b'\t' | 0x0C => self.i += 1,
                b'\n' | b'\r' if inside => self.i += 1,
                b'#' => {
                    while self.peek().is_some_and(|c| c != b'\n' && c != b'\r') {
                        self.i += 1;
                    }
                }
                b'\\' if matches!(self.b.get(self.i + 1), Some(b'\n' | b'\r')) => {
                    self.i += 2;
                    if self.b[self.i - 1] == b'\r' && self.peek() == Some(b'\n') {
                        self.i += 1;
                    }
                }
                _ => return,
            }
        }
    }

    fn inside(&self) -> bool {
        self.depth > 0
    }

    fn eat(&mut self, c: u8) -> bool {
        self.gap(self.inside());
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn expr(&mut self) -> Option<Value<'static>> {
        self.gap(self.inside());
        let c = self.peek()?;
        match c {
            b'[' => self.list(),
            b'(' => self.paren(),
            b'{' => self.brace(),
            b'+' | b'-' => {
                self.i += 1;
                self.gap(self.inside());
                let v = self.number()?;
                Some(if c == b'-' { negate(v)? } else { v })
            }
            b'0'..=b'9' => self.number(),
            b'.' if self.b.get(self.i + 1).is_some_and(u8::is_ascii_digit) => self.number(),
            b'.' => {
                if self.b[self.i..].starts_with(b"...") {
                    self.i += 3;
                    return Some(other("ellipsis", "Ellipsis", true, None));
                }
                None
            }
            _ if c == b'"' || c == b'\'' || c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => self.word_or_string(),
            _ => None,
        }
    }

    fn open(&mut self) -> Option<()> {
        self.i += 1;
        self.depth += 1;
        (self.depth <= MAX_NESTING).then_some(())
    }

    /// Items up to `close`, comma-separated, a trailing comma allowed; whether any comma
    /// was written.
    fn items(&mut self, close: u8) -> Option<(Vec<Value<'static>>, bool)> {
        let mut out = Vec::new();
        let mut comma = false;
        loop {
            if self.eat(close) {
                return Some((out, comma));
            }
            out.push(self.expr()?);
            if self.eat(close) {
                return Some((out, comma));
            }
            if !self.eat(b',') {
                return None;
            }
            comma = true;
        }
    }

    /// After an item of a dict or set: `Some(true)` at `close` (a trailing comma allowed),
    /// `Some(false)` when a comma says another item follows, None when neither does.
    fn item_end(&mut self, close: u8) -> Option<bool> {
        if self.eat(close) {
            return Some(true);
        }
        if !self.eat(b',') {
            return None;
        }
        Some(self.eat(close))
    }

    fn list(&mut self) -> Option<Value<'static>> {
        self.open()?;
        let (items, _) = self.items(b']')?;
        self.depth -= 1;
        Some(Value::List(items))
    }

    fn paren(&mut self) -> Option<Value<'static>> {
        self.open()?;
        let (mut items, comma) = self.items(b')')?;
        self.depth -= 1;
        Some(if items.len() == 1 && !comma { items.pop().expect("one") } else { Value::Tuple(items) })
    }

    fn brace(&mut self) -> Option<Value<'static>> {
        self.open()?;
        if self.eat(b'}') {
            self.depth -= 1;
            return Some(Value::Dict(Vec::new()));
        }
        let first = self.expr()?;
        if self.eat(b':') {
            let mut items: Vec<(Value<'static>, Value<'static>)> = Vec::new();
            let v = self.expr()?;
            put(&mut items, first, v)?;
            while !self.item_end(b'}')? {
                let k = self.expr()?;
                if !self.eat(b':') {
                    return None;
                }
                let v = self.expr()?;
                put(&mut items, k, v)?;
            }
            self.depth -= 1;
            return Some(Value::Dict(items));
        }
        let mut items = vec![first];
        while !self.item_end(b'}')? {
            items.push(self.expr()?);
        }
        self.depth -= 1;
        set_of(items)
    }

    fn word_or_string(&mut self) -> Option<Value<'static>> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80) {
            self.i += 1;
        }
        let word = &self.b[start..self.i];
        if matches!(self.peek(), Some(b'"' | b'\'')) {
            self.i = start;
            return self.strings();
        }
        match word {
            b"True" => Some(Value::Bool(true)),
            b"False" => Some(Value::Bool(false)),
            b"None" => Some(Value::Null),
            b"set" => {
                // set(): the one call literal_eval takes
                if self.eat(b'(') && self.eat(b')') {
                    Some(other("set", "set()", false, Some(Vec::new())))
                } else {
                    None
                }
            }
            _ => None,
        }
    }

    /// One or more adjacent string literals, joined (str with str, bytes with bytes).
    fn strings(&mut self) -> Option<Value<'static>> {
        let mut joined: Option<Part> = None;
        loop {
            self.gap(self.inside());
            let start = self.i;
            while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
                self.i += 1;
            }
            if !matches!(self.peek(), Some(b'"' | b'\'')) {
                self.i = start;
                break;
            }
            let prefix = self.b[start..self.i].to_ascii_lowercase();
            let (raw, bytes) = match prefix.as_slice() {
                b"" | b"u" => (false, false),
                b"r" => (true, false),
                b"b" => (false, true),
                b"br" | b"rb" => (true, true),
                _ => return None, // f-strings and the like are not literals
            };
            let part = self.string(raw, bytes)?;
            joined = Some(match (joined, part) {
                (None, p) => p,
                (Some(Part::Text(mut a)), Part::Text(b)) => {
                    a.extend(b);
                    Part::Text(a)
                }
                (Some(Part::Bytes(mut a)), Part::Bytes(b)) => {
                    a.extend(b);
                    Part::Bytes(a)
                }
                _ => return None,
            });
        }
        Some(match joined? {
            Part::Text(t) => Value::Str(Cow::Owned(t)),
            Part::Bytes(b) => Value::Bytes(Cow::Owned(b)),
        })
    }

    fn string(&mut self, raw: bool, bytes: bool) -> Option<Part> {
        let q = self.peek()?;
        let triple = self.b[self.i..].starts_with(&[q, q, q]);
        self.i += if triple { 3 } else { 1 };
        let mut out = Vec::new();
        loop {
            let c = self.peek()?;
            if c == q && (!triple || self.b[self.i..].starts_with(&[q, q, q])) {
                self.i += if triple { 3 } else { 1 };
                return Some(if bytes { Part::Bytes(out) } else { Part::Text(out) });
            }
            if (c == b'\n' || c == b'\r') && !triple {
                return None;
            }
            if bytes && c >= 0x80 {
                return None;
            }
            if c != b'\\' {
                let (_, n) = code_point(self.b, self.i);
                let unit = &self.b[self.i..self.i + n];
                // a line break in a triple-quoted string reads as "\n" whatever it was
                if c == b'\r' {
                    out.push(b'\n');
                    self.i += if self.b.get(self.i + 1) == Some(&b'\n') { 2 } else { 1 };
                    continue;
                }
                out.extend_from_slice(unit);
                self.i += n;
                continue;
            }
            let e = *self.b.get(self.i + 1)?;
            if raw {
                // a raw string keeps the backslash, and the quote after it does not end it
                out.push(b'\\');
                let (_, n) = code_point(self.b, self.i + 1);
                out.extend_from_slice(&self.b[self.i + 1..self.i + 1 + n]);
                self.i += 1 + n;
                continue;
            }
            self.i += 2;
            match e {
                b'\n' => {}
                b'\r' => {
                    if self.peek() == Some(b'\n') {
                        self.i += 1;
                    }
                }
                b'\\' | b'\'' | b'"' => out.push(e),
                b'a' => out.push(0x07),
                b'b' => out.push(0x08),
                b'f' => out.push(0x0C),
                b'n' => out.push(b'\n'),
                b'r' => out.push(b'\r'),
                b't' => out.push(b'\t'),
                b'v' => out.push(0x0B),
                b'0'..=b'7' => {
                    let mut n = u32::from(e - b'0');
                    for _ in 0..2 {
                        match self.peek() {
                            Some(d @ b'0'..=b'7') => {
                                n = n * 8 + u32::from(d - b'0');
                                self.i += 1;
                            }
                            _ => break,
                        }
                    }
                    if bytes {
                        out.push((n & 0xFF) as u8);
                    } else {
                        push_code_point(&mut out, n);
                    }
                }
                b'x' => {
                    let n = self.hex(2)?;
                    if bytes {
                        out.push(n as u8);
                    } else {
                        push_code_point(&mut out, n);
                    }
                }
                b'u' | b'U' if !bytes => {
                    let n = self.hex(if e == b'u' { 4 } else { 8 })?;
                    if n > 0x10FFFF {
                        return None;
                    }
                    push_code_point(&mut out, n);
                }
                b'N' if !bytes => return None,
                _ => {
                    // an unknown escape keeps its backslash (a warning, not an error)
                    out.push(b'\\');
                    self.i -= 1;
                }
            }
        }
    }

    fn hex(&mut self, n: usize) -> Option<u32> {
        let digits = self.b.get(self.i..self.i + n)?;
        let mut v = 0u32;
        for &d in digits {
            v = v * 16 + (d as char).to_digit(16)?;
        }
        self.i += n;
        Some(v)
    }

    fn number(&mut self) -> Option<Value<'static>> {
        let start = self.i;
        while self.peek().is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'.') {
            // an exponent's sign belongs to the number
            if matches!(self.peek(), Some(b'e' | b'E'))
                && matches!(self.b.get(self.i + 1), Some(b'+' | b'-'))
                && !self.b[start..self.i].starts_with(b"0x")
                && !self.b[start..self.i].starts_with(b"0X")
            {
                self.i += 1;
            }
            self.i += 1;
        }
        number_value(std::str::from_utf8(&self.b[start..self.i]).ok()?)
    }
}

/// A number token as Python's tokenizer and compiler read it.
fn number_value(tok: &str) -> Option<Value<'static>> {
    let lower = tok.to_ascii_lowercase();
    if lower.ends_with('j') {
        return None; // complex: not kept
    }
    let underscores_ok = |body: &str, digit: &dyn Fn(char) -> bool| {
        !body.is_empty() && !body.starts_with('_') && !body.ends_with('_') && !body.contains("__")
            && body.chars().all(|c| c == '_' || digit(c))
    };
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(body) = lower.strip_prefix(prefix) {
            let body = body.strip_prefix('_').unwrap_or(body);
            if !underscores_ok(body, &|c| c.is_digit(radix)) {
                return None;
            }
            let digits: String = body.chars().filter(|&c| c != '_').collect();
            return Some(match i64::from_str_radix(&digits, radix) {
                Ok(n) => Value::Int(n),
                Err(_) => Value::BigInt(Cow::Owned(big_from_radix(&digits, radix)?)),
            });
        }
    }
    let is_float = lower.contains('.') || lower.contains('e');
    if !is_float {
        if !underscores_ok(&lower, &|c| c.is_ascii_digit()) {
            return None;
        }
        let digits: String = lower.chars().filter(|&c| c != '_').collect();
        if digits.len() > 1 && digits.starts_with('0') && digits.bytes().any(|d| d != b'0') {
            return None; // leading zeros in a decimal integer
        }
        let digits = if digits.bytes().all(|d| d == b'0') { "0".to_owned() } else { digits };
        if digits.len() > MAX_INT_DIGITS {
            return None;
        }
        return Some(match digits.parse::<i64>() {
            Ok(n) => Value::Int(n),
            Err(_) => Value::BigInt(Cow::Owned(digits)),
        });
    }
    // a float: digits with underscores between them, one point, an exponent
    let (mantissa, exponent) = match lower.split_once('e') {
        Some((m, e)) => (m, Some(e)),
        None => (lower.as_str(), None),
    };
    let (whole, frac) = match mantissa.split_once('.') {
        Some((w, f)) => (w, Some(f)),
        None => (mantissa, None),
    };
    let digit: &dyn Fn(char) -> bool = &|c: char| c.is_ascii_digit();
    if !(whole.is_empty() || underscores_ok(whole, digit)) || frac.is_some_and(|f| !f.is_empty() && !underscores_ok(f, digit)) {
        return None;
    }
    if whole.is_empty() && frac.map_or(true, str::is_empty) {
        return None;
    }
    if let Some(e) = exponent {
        let e = e.strip_prefix(['+', '-']).unwrap_or(e);
        if !underscores_ok(e, digit) {
            return None;
        }
    }
    lower.replace('_', "").parse::<f64>().ok().map(Value::Float)
}

/// The decimal digits of a number written in another base, too long for 64 bits.
fn big_from_radix(digits: &str, radix: u32) -> Option<String> {
    // little-endian base 10^9 limbs
    let mut limbs: Vec<u64> = vec![0];
    for c in digits.chars() {
        let mut carry = u64::from(c.to_digit(radix)?);
        for limb in limbs.iter_mut() {
            let v = *limb * u64::from(radix) + carry;
            *limb = v % 1_000_000_000;
            carry = v / 1_000_000_000;
        }
        while carry > 0 {
            limbs.push(carry % 1_000_000_000);
            carry /= 1_000_000_000;
        }
    }
    let mut out = limbs.last().expect("a limb").to_string();
    for limb in limbs.iter().rev().skip(1) {
        out.push_str(&format!("{limb:09}"));
    }
    (out.len() <= MAX_INT_DIGITS).then_some(out)
}

fn negate(v: Value<'static>) -> Option<Value<'static>> {
    Some(match v {
        Value::Int(n) => match n.checked_neg() {
            Some(m) => Value::Int(m),
            None => Value::BigInt(Cow::Owned(format!("{}", -(n as i128)))),
        },
        Value::BigInt(t) => {
            if t.as_bytes() == b"9223372036854775808" {
                Value::Int(i64::MIN)
            } else {
                Value::BigInt(Cow::Owned(format!("-{t}")))
            }
        }
        Value::Float(x) => Value::Float(-x),
        _ => return None,
    })
}

/// `d[k] = v` as a dict display does it: a key that is not hashable is a TypeError.
fn put(items: &mut Vec<(Value<'static>, Value<'static>)>, k: Value<'static>, v: Value<'static>) -> Option<()> {
    if !hashable(&k) {
        return None;
    }
    match items.iter_mut().find(|(x, _)| same_key(x, &k)) {
        Some(slot) => slot.1 = v,
        None => items.push((k, v)),
    }
    Some(())
}

fn hashable(v: &Value<'_>) -> bool {
    match v {
        Value::List(_) | Value::Dict(_) => false,
        Value::Tuple(items) => items.iter().all(hashable),
        Value::Other(o) => o.type_name != "set",
        _ => true,
    }
}

/// Whether two keys are one key to a dict: equal values (1, 1.0 and True are one).
fn same_key(a: &Value<'_>, b: &Value<'_>) -> bool {
    let num = |v: &Value<'_>| match v {
        Value::Bool(x) => Some(f64::from(u8::from(*x))),
        Value::Int(x) => Some(*x as f64),
        Value::Float(x) => Some(*x),
        _ => None,
    };
    match (num(a), num(b)) {
        (Some(x), Some(y)) => {
            // exact for the ints a float cannot hold
            match (a, b) {
                (Value::Int(x), Value::Int(y)) => x == y,
                _ => x == y,
            }
        }
        _ => a == b,
    }
}

fn set_of(items: Vec<Value<'static>>) -> Option<Value<'static>> {
    let mut unique: Vec<Value<'static>> = Vec::new();
    for x in items {
        if !hashable(&x) {
            return None;
        }
        if !unique.iter().any(|u| same_key(u, &x)) {
            unique.push(x);
        }
    }
    let mut text = b"{".to_vec();
    for (i, x) in unique.iter().enumerate() {
        if i > 0 {
            text.extend_from_slice(b", ");
        }
        text.extend_from_slice(&x.repr());
    }
    text.push(b'}');
    let text = String::from_utf8(text).ok()?;
    Some(other("set", &text, !unique.is_empty(), Some(unique)))
}

fn other(type_name: &str, text: &str, truthy: bool, items: Option<Vec<Value<'static>>>) -> Value<'static> {
    Value::Other(Box::new(Other {
        type_name: Cow::Owned(type_name.to_owned()),
        str_: Cow::Owned(text.as_bytes().to_vec()),
        repr: Cow::Owned(text.as_bytes().to_vec()),
        truthy,
        items,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(s: &str) -> Option<String> {
        literal_eval(s.as_bytes()).map(|v| String::from_utf8(v.repr()).unwrap())
    }

    #[test]
    fn a_repr_reads_back_to_its_value() {
        assert_eq!(eval("{'content': None, 'role': 'assistant', 'tool_calls': [{'id': 'c1', 'n': -1.5e3}]}").unwrap(),
                   "{'content': None, 'role': 'assistant', 'tool_calls': [{'id': 'c1', 'n': -1500.0}]}");
        assert_eq!(eval("(1,)").unwrap(), "(1,)");
        assert_eq!(eval("((1))").unwrap(), "1");
        assert_eq!(eval("[b'\\x00\\'', \"it's\", 'a' 'b', r'\\d']").unwrap(), "[b\"\\x00'\", \"it's\", 'ab', '\\\\d']");
        assert_eq!(eval("  [1, 2,]").unwrap(), "[1, 2]");
        assert_eq!(eval("{'a': 1, 'a': 2}").unwrap(), "{'a': 2}");
        assert_eq!(eval("[0x1F, 0o7, 0b1, 1_000, 1., .5, 1e400, 123456789012345678901234567890]").unwrap(),
                   "[31, 7, 1, 1000, 1.0, 0.5, inf, 123456789012345678901234567890]");
        assert_eq!(eval("['\\u00e9\\U0001F600\\x41\\101\\n']").unwrap(), "['é😀AA\\n']");
        assert_eq!(eval("[\n 1, # one\n 2]").unwrap(), "[1, 2]");
        assert_eq!(eval("{1, 2, 1}").unwrap(), "{1, 2}");
        assert_eq!(eval("{'a': 1,}").unwrap(), "{'a': 1}");
        assert_eq!(eval("{1, 2,}").unwrap(), "{1, 2}");
    }

    #[test]
    fn what_literal_eval_refuses_is_none() {
        for bad in ["nan", "[inf]", "f'x'", "[1, 2", "{'a'}x", "[x]", "01", "1__0", "[{}: 1]", "{[1]: 2}", "1j",
                    "'a' b'b'", "'\\N{DASH}'", "[1,,]", "print(1)",
                    "{'a': 1 'b': 2}", "{'a': 1,,}", "{1 2}", "{1,,}", "{'a': 1, 'b'}"] {
            assert_eq!(eval(bad), None, "{bad}");
        }
        let deep = "[".repeat(201) + &"]".repeat(201);
        assert_eq!(eval(&deep), None);
    }
}
