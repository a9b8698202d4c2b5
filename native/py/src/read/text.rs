//! Python's ``str`` rules on WTF-8 text (value.rs says why WTF-8): ``len``, ``strip``,
//! ``lower`` / ``upper``, and the pieces of read/conventions.py's key patterns (``\d{1,9}``,
//! ``(.+)$``) as Python's ``re`` reads them.

use pyo3::prelude::*;
use pyo3::types::{PyInt, PyString};
use std::borrow::Cow;

use crate::read::value::{py_text, text_of_py, Text};

/// ``len(s)``: code points (a lone surrogate's three bytes are one).
pub fn char_len(s: &[u8]) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// ``str.isspace()`` of one code point: Unicode white space and the four ASCII separators
/// (0x1C-0x1F) Python counts too.
fn is_py_space(c: u32) -> bool {
    matches!(c, 0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F
        | 0x205F | 0x3000)
}

fn seq_len(lead: u8) -> usize {
    match lead {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

fn code_point(s: &[u8]) -> u32 {
    let lead = s[0] as u32;
    let cont = |i: usize| s.get(i).map_or(0, |&b| (b & 0x3F) as u32);
    match s.len() {
        1 => lead,
        2 => ((lead & 0x1F) << 6) | cont(1),
        3 => ((lead & 0x0F) << 12) | (cont(1) << 6) | cont(2),
        _ => ((lead & 0x07) << 18) | (cont(1) << 12) | (cont(2) << 6) | cont(3),
    }
}

/// ``s.strip()``.
pub fn strip(s: &[u8]) -> &[u8] {
    let (mut a, mut b) = (0, s.len());
    while a < b {
        let n = seq_len(s[a]).min(b - a);
        if !is_py_space(code_point(&s[a..a + n])) {
            break;
        }
        a += n;
    }
    while b > a {
        let mut lead = b - 1;
        while lead > a && (s[lead] & 0xC0) == 0x80 && b - lead < 4 {
            lead -= 1;
        }
        if !is_py_space(code_point(&s[lead..b])) {
            break;
        }
        b = lead;
    }
    &s[a..b]
}

/// ``(s[:1], s[-1:])`` is ``(open, close)`` (both ASCII, so a byte test is the same).
pub fn bracketed(s: &[u8]) -> bool {
    s.len() >= 2 && matches!((s[0], s[s.len() - 1]), (b'[', b']') | (b'{', b'}'))
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// ``s.lower()`` / ``s.upper()``: ASCII here, anything else by Python's Unicode rules.
pub fn lower<'a>(py: Python<'_>, s: Text<'a>) -> PyResult<Text<'a>> {
    recase(py, s, "lower", |b| b.to_ascii_lowercase())
}

pub fn upper<'a>(py: Python<'_>, s: Text<'a>) -> PyResult<Text<'a>> {
    recase(py, s, "upper", |b| b.to_ascii_uppercase())
}

fn recase<'a>(py: Python<'_>, s: Text<'a>, method: &str, ascii: fn(&[u8]) -> Vec<u8>) -> PyResult<Text<'a>> {
    if s.is_ascii() {
        return Ok(Cow::Owned(ascii(&s)));
    }
    Ok(Cow::Owned(text_of_py(&py_text(py, &s)?.call_method0(method)?.downcast_into::<PyString>()?)?))
}

/// An index as ``(\d{1,9})`` then ``int()`` read it: 1-9 decimal characters (any script's,
/// as Python's ``\d`` and ``int`` take them), None otherwise.
pub fn small_index(py: Python<'_>, s: &[u8]) -> PyResult<Option<i64>> {
    if s.is_empty() {
        return Ok(None);
    }
    if s.is_ascii() {
        if s.len() > 9 || !s.iter().all(u8::is_ascii_digit) {
            return Ok(None);
        }
        return Ok(Some(s.iter().fold(0i64, |n, d| n * 10 + (d - b'0') as i64)));
    }
    if char_len(s) > 9 {
        return Ok(None);
    }
    let t = py_text(py, s)?;
    if !t.call_method0("isdecimal")?.is_truthy()? {
        return Ok(None);
    }
    py.get_type::<PyInt>().call1((t,))?.extract()
}

/// The rest of a key after a pattern's prefix as ``(.+)$`` takes it: no line break but one
/// final one (``$`` matches before it), at least one character.
pub fn rest_of_line(s: &[u8]) -> Option<&[u8]> {
    let body = match memchr::memchr(b'\n', s) {
        None => s,
        Some(i) if i + 1 == s.len() => &s[..i],
        Some(_) => return None,
    };
    if body.is_empty() {
        None
    } else {
        Some(body)
    }
}
