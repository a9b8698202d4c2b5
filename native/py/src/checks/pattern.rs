//! The checks' own phrase patterns (abstention's, context_overflow's), matched as Python's
//! `re` matches them on a str with `re.I`: the same match, to the character.
//!
//! Python's `\w`, `\s`, `\b` and case-insensitive letters are Unicode-aware, each by its
//! own definition (`str.isalnum`, `str.isspace`, and a letter table of its own: `ı` and `İ`
//! are an `i` to it, not to Unicode's case folding), and Rust's `regex` defines them
//! differently. So the patterns are written over ASCII with those classes spelled out, and
//! run on an ASCII *shadow* of the text: one byte per character, the character itself when
//! it is ASCII, else the ASCII letter Python's `re.I` takes it for (`ſ` is an `s`, the
//! Kelvin sign a `k`), else a blank-like control character (0x1F) when Python counts it
//! as white space, else `0` when Python counts it as a word character, else `#`. Every
//! pattern here is made of ASCII letters, blanks, `'`, `_`, `-`, `.` and those classes, so
//! it cannot tell a character from its shadow, and the shadow's match is Python's match at
//! the same character offsets. `\b` has no lookaround to stand on in `regex`: a pattern
//! that starts and ends on a letter is written `(?:^|[^W])(...)(?:$|[^W])`, the match being
//! group 1 (tests/checks/test_native_patterns.py holds both patterns to Python's `re`).
//!
//! Which non-ASCII characters are word characters is asked of the Python that runs us
//! (`str.isalnum`, 256 code points at a time, once per process): its Unicode version is the
//! one Python's `re` uses.

use pyo3::prelude::*;
use pyo3::types::PyString;
use regex::bytes::{Regex, RegexBuilder};
use std::sync::Mutex;

use super::text;

/// Python's `\w` and `\s` over ASCII (and over a shadow).
pub const W: &str = "0-9A-Za-z_";
pub const S: &str = r"\t\n\x0B\x0C\r\x1C-\x1F ";

pub struct PyPattern {
    re: Regex,
}

impl PyPattern {
    /// A pattern over the shadow alphabet, case-insensitive; group 1 is the match.
    pub fn new(source: &str) -> PyPattern {
        let re = RegexBuilder::new(source).unicode(false).case_insensitive(true).build()
            .expect("the checks' patterns compile");
        PyPattern { re }
    }

    /// `pattern.search(text)`'s span, in bytes of `text`.
    pub fn search(&self, py: Python<'_>, t: &[u8]) -> PyResult<Option<(usize, usize)>> {
        if t.is_ascii() {
            return Ok(self.re.captures(t).and_then(|c| c.get(1)).map(|m| (m.start(), m.end())));
        }
        let mut shadow = Vec::with_capacity(t.len());
        let mut at = Vec::with_capacity(t.len() + 1); // each character's byte offset in t
        let mut i = 0;
        while i < t.len() {
            let (cp, n) = text::code_point(t, i);
            at.push(i);
            shadow.push(if cp < 0x80 { cp as u8 } else { shadow_of(py, cp)? });
            i += n;
        }
        at.push(t.len());
        Ok(self.re.captures(&shadow).and_then(|c| c.get(1)).map(|m| (at[m.start()], at[m.end()])))
    }
}

// 0x110000 code points in blocks of 256: which are word characters to Python, filled a
// block at a time on first sight
const BLOCKS: usize = 0x1100;
static WORD: Mutex<Vec<Option<Box<[u64; 4]>>>> = Mutex::new(Vec::new());

fn is_word(py: Python<'_>, cp: u32) -> PyResult<bool> {
    let block = (cp >> 8) as usize;
    let bit = (cp & 0xFF) as usize;
    {
        let table = WORD.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(Some(b)) = table.get(block) {
            return Ok(b[bit / 64] >> (bit % 64) & 1 == 1);
        }
    }
    let mut bits = [0u64; 4];
    for k in 0..256u32 {
        let c = ((block as u32) << 8) | k;
        // surrogates are neither letters nor digits to Python
        if let Some(ch) = char::from_u32(c) {
            let mut buf = [0u8; 4];
            if PyString::new(py, ch.encode_utf8(&mut buf)).call_method0("isalnum")?.is_truthy()? {
                bits[(k / 64) as usize] |= 1 << (k % 64);
            }
        }
    }
    let mut table = WORD.lock().unwrap_or_else(|e| e.into_inner());
    if table.len() < BLOCKS {
        table.resize(BLOCKS, None);
    }
    table[block] = Some(Box::new(bits));
    Ok(bits[bit / 64] >> (bit % 64) & 1 == 1)
}

/// The ASCII byte a non-ASCII character stands for in a shadow.
fn shadow_of(py: Python<'_>, cp: u32) -> PyResult<u8> {
    Ok(match cp {
        // the non-ASCII characters Python's re.I matches to an ASCII letter
        0x130 | 0x131 => b'i',
        0x17F => b's',
        0x212A => b'k',
        _ if text::is_space(cp) => 0x1F,
        _ if is_word(py, cp)? => b'0',
        _ => b'#',
    })
}

/// `str.lower()` as far as an ASCII word can tell: whether `word` (lower-case ASCII) occurs
/// in `t.lower()`. Besides ASCII capitals, only two characters lower to ASCII: the Kelvin
/// sign to `k`, and `İ` to `i` followed by a combining dot (a test checks every code point).
pub fn lower_contains(t: &[u8], word: &[u8]) -> bool {
    if t.is_ascii() {
        return t.windows(word.len()).any(|w| w.eq_ignore_ascii_case(word));
    }
    lower_shadow(t).windows(word.len()).any(|w| w == word)
}

/// `t.lower() == word` for a lower-case ASCII word, with the same reading of `lower()`.
pub fn lower_equals(t: &[u8], word: &[u8]) -> bool {
    if t.is_ascii() {
        return t.eq_ignore_ascii_case(word);
    }
    lower_shadow(t) == word
}

fn lower_shadow(t: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(t.len());
    let mut i = 0;
    while i < t.len() {
        let (cp, n) = text::code_point(t, i);
        match cp {
            0..=0x7F => out.push((cp as u8).to_ascii_lowercase()),
            0x212A => out.push(b'k'),
            0x130 => out.extend_from_slice(&[b'i', 0x80]),
            _ => out.push(0x80),
        }
        i += n;
    }
    out
}
