//! Python's text rules, exactly, on the bytes of a str: `str.isspace`, `str.strip()`,
//! `" ".join(s.split())`, `re.sub(r"\s+", " ", s)`.
//!
//! A str is read as its UTF-8 (`PyString::to_str`, no copy); the rare str holding a lone
//! surrogate (JSON's `"\ud800"` decodes to one) has no UTF-8, and is read as its
//! 'surrogatepass' encoding instead: the same bytes, where each surrogate is three bytes
//! as a code point in 0xD800..0xDFFF would be. Every function here takes either, and what
//! it returns goes back to Python through `to_py`, which decodes it the same way.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};
use std::borrow::Cow;

/// A str's text: borrowed UTF-8, or the 'surrogatepass' bytes of a str that has surrogates.
pub struct Text<'a>(pub Cow<'a, [u8]>);

impl<'a> Text<'a> {
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

pub fn read<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    match s.to_str() {
        Ok(t) => Ok(Text(Cow::Borrowed(t.as_bytes()))),
        Err(_) => {
            let b = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(Text(Cow::Owned(b.downcast::<PyBytes>()?.as_bytes().to_vec())))
        }
    }
}

/// Any object's text when it is a str (a str subclass too); a TypeError otherwise, as
/// Python's own str methods would raise on it.
pub fn read_any<'a, 'py>(o: &'a Bound<'py, PyAny>) -> PyResult<Text<'a>> {
    read(o.downcast::<PyString>()?)
}

/// Bytes made by this module back into a str.
pub fn to_py<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyString>> {
    match std::str::from_utf8(b) {
        Ok(s) => Ok(PyString::new(py, s)),
        Err(_) => Ok(PyBytes::new(py, b).call_method1("decode", ("utf-8", "surrogatepass"))?.downcast_into::<PyString>()?),
    }
}

/// The code point starting at `b[i]` and its length in bytes. The input is UTF-8 or its
/// surrogatepass form, so the lead byte gives the length; a truncated sequence (which
/// neither can hold) reads as one byte, never past the end.
#[inline]
pub fn code_point(b: &[u8], i: usize) -> (u32, usize) {
    let c = b[i];
    if c < 0x80 {
        return (c as u32, 1);
    }
    let (len, init) = if c >= 0xF0 {
        (4, (c & 0x07) as u32)
    } else if c >= 0xE0 {
        (3, (c & 0x0F) as u32)
    } else {
        (2, (c & 0x1F) as u32)
    };
    if i + len > b.len() {
        return (0xFFFD, 1);
    }
    let mut cp = init;
    for k in 1..len {
        cp = (cp << 6) | (b[i + k] & 0x3F) as u32;
    }
    (cp, len)
}

/// Where the code point that ends at `end` (exclusive) starts.
#[inline]
fn start_of_last(b: &[u8], end: usize) -> usize {
    let mut i = end - 1;
    while i > 0 && (b[i] & 0xC0) == 0x80 && end - i < 4 {
        i -= 1;
    }
    i
}

/// `str.isspace()` of one character: what `str.split()`, `str.strip()` and the `\s` of a
/// str pattern take as white space (bidirectional class WS, B or S, or category Zs).
/// A test holds it to Python for every code point.
#[inline]
pub fn is_space(cp: u32) -> bool {
    matches!(cp, 0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F
        | 0x205F | 0x3000)
}

/// White space among ASCII bytes (0x09-0x0D, 0x1C-0x20); a non-ASCII byte is `false` here
/// and decoded by the caller.
const ASCII_SPACE: [bool; 256] = {
    let mut t = [false; 256];
    let mut c = 0x09;
    while c <= 0x0D {
        t[c] = true;
        c += 1;
    }
    c = 0x1C;
    while c <= 0x20 {
        t[c] = true;
        c += 1;
    }
    t
};

/// Whether the character at `b[i]` is white space, and its length in bytes.
#[inline]
fn space_at(b: &[u8], i: usize) -> (bool, usize) {
    let c = b[i];
    if c < 0x80 {
        return (ASCII_SPACE[c as usize], 1);
    }
    let (cp, n) = code_point(b, i);
    (is_space(cp), n)
}

/// The end of the run of non-space characters that starts at `i`.
#[inline]
fn word_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        let c = b[i];
        if c < 0x80 {
            if ASCII_SPACE[c as usize] {
                return i;
            }
            i += 1;
        } else {
            let (cp, n) = code_point(b, i);
            if is_space(cp) {
                return i;
            }
            i += n;
        }
    }
    i
}

/// The end of the run of space characters that starts at `i`.
#[inline]
fn gap_end(b: &[u8], mut i: usize) -> usize {
    while i < b.len() {
        let (sp, n) = space_at(b, i);
        if !sp {
            return i;
        }
        i += n;
    }
    i
}

/// `str.strip()`: the slice without leading and trailing white space.
pub fn strip(b: &[u8]) -> &[u8] {
    let start = gap_end(b, 0);
    let mut end = b.len();
    while end > start {
        let last = b[end - 1];
        if last < 0x80 {
            if ASCII_SPACE[last as usize] {
                end -= 1;
                continue;
            }
            break;
        }
        let at = start_of_last(b, end);
        let (cp, _) = code_point(b, at);
        if !is_space(cp) {
            break;
        }
        end = at;
    }
    &b[start..end]
}

/// `str.lstrip()`.
pub fn lstrip(b: &[u8]) -> &[u8] {
    &b[gap_end(b, 0)..]
}

/// `" ".join(s.split())`: white space folded, and none at either end.
pub fn squash(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = gap_end(b, 0);
    while i < b.len() {
        let end = word_end(b, i);
        out.extend_from_slice(&b[i..end]);
        i = gap_end(b, end);
        if i < b.len() {
            out.push(b' ');
        }
    }
    out
}

/// `re.sub(r"\s+", " ", s)`: each run of white space one blank, the ends kept.
pub fn fold_spaces(b: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let end = word_end(b, i);
        out.extend_from_slice(&b[i..end]);
        if end < b.len() {
            out.push(b' ');
        }
        i = gap_end(b, end);
    }
    out
}

/// A fixed ASCII needle, its searcher built once: occurring byte for byte is occurring
/// character for character, since no byte of a multi-byte sequence is ASCII.
pub struct Needle(std::sync::LazyLock<memchr::memmem::Finder<'static>>);

impl Needle {
    pub const fn new(f: fn() -> memchr::memmem::Finder<'static>) -> Needle {
        Needle(std::sync::LazyLock::new(f))
    }

    #[inline]
    pub fn within(&self, hay: &[u8]) -> bool {
        self.0.find(hay).is_some()
    }
}

/// `static NAME: Needle = needle!(b"text");`
#[macro_export]
macro_rules! needle {
    ($text:expr) => {
        $crate::checks::text::Needle::new(|| memchr::memmem::Finder::new($text))
    };
}

/// Python's `repr()` of a str (the reasons quote matched text as Python writes it). Only
/// on the fired path.
pub fn repr(py: Python<'_>, b: &[u8]) -> PyResult<String> {
    Ok(to_py(py, b)?.repr()?.to_str()?.to_owned())
}
