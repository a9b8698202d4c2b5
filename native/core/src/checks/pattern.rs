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
//! group 1. Which characters are word characters is pyfmt's table (CPython 3.11's
//! `str.isalnum`).

use regex::bytes::{Regex, RegexBuilder};

use crate::pyfmt::strs::{code_point, is_alnum, is_space};

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
    pub fn search(&self, t: &[u8]) -> Option<(usize, usize)> {
        if t.is_ascii() {
            return self.re.captures(t).and_then(|c| c.get(1)).map(|m| (m.start(), m.end()));
        }
        let mut shadow = Vec::with_capacity(t.len());
        let mut at = Vec::with_capacity(t.len() + 1); // each character's byte offset in t
        let mut i = 0;
        while i < t.len() {
            let (cp, n) = code_point(t, i);
            at.push(i);
            shadow.push(if cp < 0x80 { cp as u8 } else { shadow_of(cp) });
            i += n;
        }
        at.push(t.len());
        self.re.captures(&shadow).and_then(|c| c.get(1)).map(|m| (at[m.start()], at[m.end()]))
    }
}

/// The ASCII byte a non-ASCII character stands for in a shadow.
pub fn shadow_of(cp: u32) -> u8 {
    match cp {
        // the non-ASCII characters Python's re.I matches to an ASCII letter
        0x130 | 0x131 => b'i',
        0x17F => b's',
        0x212A => b'k',
        _ if is_space(cp) => 0x1F,
        _ if is_alnum(cp) => b'0',
        _ => b'#',
    }
}
