//! Python's `str` rules, exactly, on the bytes of a text: `isspace`, `strip()`,
//! `" ".join(s.split())`, `re.sub(r"\s+", " ", s)`, `len`, `repr`, what `lower()` and
//! `upper()` make of a text when that is ASCII, and `int()` of digits in any script.
//!
//! Text is WTF-8: UTF-8, except that a lone surrogate (a Python str may hold one; JSON can
//! write one as an escape) is its three bytes, as Python's `surrogatepass` error handler
//! encodes it. Comparisons, prefixes, lengths and white space work on those bytes
//! unchanged, and the binding makes a Python str back with the same handler.

use super::unicode_tables::{ALNUM, DIGIT_ZEROS, LOWER_TO_ASCII, NOT_PRINTABLE, UPPER_TO_ASCII};

/// The code point starting at `b[i]` and its length in bytes. The input is WTF-8, so the
/// lead byte gives the length; a truncated sequence (which WTF-8 cannot hold) reads as one
/// byte, never past the end.
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

/// The code points of a text.
pub fn code_points(b: &[u8]) -> impl Iterator<Item = u32> + '_ {
    let mut i = 0;
    std::iter::from_fn(move || {
        if i >= b.len() {
            return None;
        }
        let (cp, n) = code_point(b, i);
        i += n;
        Some(cp)
    })
}

/// A code point as WTF-8 (a surrogate as its three bytes).
pub fn push_code_point(out: &mut Vec<u8>, cp: u32) {
    match cp {
        0..=0x7F => out.push(cp as u8),
        0x80..=0x7FF => out.extend_from_slice(&[0xC0 | (cp >> 6) as u8, 0x80 | (cp & 0x3F) as u8]),
        0x800..=0xFFFF => out.extend_from_slice(&[
            0xE0 | (cp >> 12) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
        _ => out.extend_from_slice(&[
            0xF0 | (cp >> 18) as u8,
            0x80 | ((cp >> 12) & 0x3F) as u8,
            0x80 | ((cp >> 6) & 0x3F) as u8,
            0x80 | (cp & 0x3F) as u8,
        ]),
    }
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

fn in_ranges(table: &[(u32, u32)], cp: u32) -> bool {
    match table.binary_search_by(|&(lo, hi)| {
        if hi < cp {
            std::cmp::Ordering::Less
        } else if lo > cp {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        }
    }) {
        Ok(_) => true,
        Err(_) => false,
    }
}

/// `str.isspace()` of one character: what `str.split()`, `str.strip()` and the `\s` of a
/// str pattern take as white space (bidirectional class WS, B or S, or category Zs).
#[inline]
pub fn is_space(cp: u32) -> bool {
    matches!(cp, 0x09..=0x0D | 0x1C..=0x20 | 0x85 | 0xA0 | 0x1680 | 0x2000..=0x200A | 0x2028 | 0x2029 | 0x202F
        | 0x205F | 0x3000)
}

/// `str.isprintable()` of one character: `repr` shows it as it is.
pub fn is_printable(cp: u32) -> bool {
    !in_ranges(&NOT_PRINTABLE, cp)
}

/// `str.isalnum()` of one character (`re`'s `\w` is this and `_`).
pub fn is_alnum(cp: u32) -> bool {
    if cp < 0x80 {
        return (cp as u8).is_ascii_alphanumeric();
    }
    in_ranges(&ALNUM, cp)
}

/// The value of a decimal digit of any script (`str.isdecimal()`), else None.
pub fn decimal(cp: u32) -> Option<u32> {
    if (0x30..=0x39).contains(&cp) {
        return Some(cp - 0x30);
    }
    let i = DIGIT_ZEROS.partition_point(|&z| z <= cp);
    if i == 0 {
        return None;
    }
    let zero = DIGIT_ZEROS[i - 1];
    (cp - zero < 10).then_some(cp - zero)
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

/// `len(s)`: code points (a lone surrogate's three bytes are one).
pub fn char_len(s: &[u8]) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// `s[:n]`: the first `n` code points.
pub fn prefix(s: &[u8], n: usize) -> &[u8] {
    if s.len() <= n {
        return s;
    }
    let mut seen = 0;
    let mut i = 0;
    while i < s.len() {
        if seen == n {
            return &s[..i];
        }
        let (_, len) = code_point(s, i);
        i += len;
        seen += 1;
    }
    s
}

/// `(s[:1], s[-1:])` is `(open, close)` (both ASCII, so a byte test is the same).
pub fn bracketed(s: &[u8]) -> bool {
    s.len() >= 2 && matches!((s[0], s[s.len() - 1]), (b'[', b']') | (b'{', b'}'))
}

pub fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
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
        $crate::pyfmt::strs::Needle::new(|| memchr::memmem::Finder::new($text))
    };
}

/// `s.upper()` when it is all ASCII (what it is compared with), else None.
pub fn ascii_upper(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_ascii() {
        return Some(s.to_ascii_uppercase());
    }
    recased(s, &UPPER_TO_ASCII, u8::to_ascii_uppercase)
}

/// `s.lower()` when it is all ASCII, else None.
pub fn ascii_lower(s: &[u8]) -> Option<Vec<u8>> {
    if s.is_ascii() {
        return Some(s.to_ascii_lowercase());
    }
    recased(s, &LOWER_TO_ASCII, u8::to_ascii_lowercase)
}

fn recased(s: &[u8], special: &[(u32, &str)], ascii: fn(&u8) -> u8) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    for cp in code_points(s) {
        if cp < 0x80 {
            out.push(ascii(&(cp as u8)));
        } else {
            let (_, to) = special.iter().find(|(c, _)| *c == cp)?;
            out.extend_from_slice(to.as_bytes());
        }
    }
    Some(out)
}

/// An index as `(\d{1,9})` then `int()` read it: 1-9 decimal characters (any script's, as
/// Python's `\d` and `int` take them), None otherwise.
pub fn small_index(s: &[u8]) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let mut n: i64 = 0;
    let mut count = 0;
    for cp in code_points(s) {
        count += 1;
        if count > 9 {
            return None;
        }
        n = n * 10 + i64::from(decimal(cp)?);
    }
    Some(n)
}

/// What `int(text)` makes of a text, base 10: its sign and its digits (ASCII, leading
/// zeros kept), or None where `int()` raises ValueError. White space of any kind around
/// it, digits of any script, and single underscores between digits are taken, as Python
/// takes them; more than 4,300 digits is Python's own refusal (`sys.int_info`).
pub fn int_text(s: &[u8]) -> Option<(bool, Vec<u8>)> {
    let t = strip(s);
    let (negative, body) = match t.first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut digits = Vec::with_capacity(body.len());
    let mut after_digit = false;
    let mut after_underscore = false;
    for cp in code_points(body) {
        if cp == u32::from(b'_') {
            if !after_digit {
                return None;
            }
            after_digit = false;
            after_underscore = true;
            continue;
        }
        digits.push(b'0' + decimal(cp)? as u8);
        after_digit = true;
        after_underscore = false;
    }
    if digits.is_empty() || after_underscore || digits.len() > 4300 {
        return None;
    }
    Some((negative, digits))
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// `repr(s)` of a str: quoted with `'` unless it holds `'` and no `"`; the quote, `\`, tab,
/// line feed and carriage return escaped, other characters that are not printable as
/// `\xhh`, `\uhhhh` or `\Uhhhhhhhh`.
pub fn repr_str(s: &[u8], out: &mut Vec<u8>) {
    let quote = if s.contains(&b'\'') && !s.contains(&b'"') { b'"' } else { b'\'' };
    out.push(quote);
    let mut i = 0;
    while i < s.len() {
        let (cp, n) = code_point(s, i);
        match cp {
            _ if cp == u32::from(quote) || cp == u32::from(b'\\') => {
                out.push(b'\\');
                out.push(cp as u8);
            }
            0x09 => out.extend_from_slice(b"\\t"),
            0x0A => out.extend_from_slice(b"\\n"),
            0x0D => out.extend_from_slice(b"\\r"),
            0..=0x1F | 0x7F => hex_escape(out, b'x', cp, 2),
            0x20..=0x7E => out.push(cp as u8),
            _ if is_printable(cp) => out.extend_from_slice(&s[i..i + n]),
            0x80..=0xFF => hex_escape(out, b'x', cp, 2),
            0x100..=0xFFFF => hex_escape(out, b'u', cp, 4),
            _ => hex_escape(out, b'U', cp, 8),
        }
        i += n;
    }
    out.push(quote);
}

fn hex_escape(out: &mut Vec<u8>, kind: u8, cp: u32, width: u32) {
    out.push(b'\\');
    out.push(kind);
    for k in (0..width).rev() {
        out.push(HEX[((cp >> (4 * k)) & 15) as usize]);
    }
}

/// `repr(s)` as a String (of WTF-8 text: a lone surrogate is escaped, so it is UTF-8).
pub fn repr_string(s: &[u8]) -> String {
    let mut out = Vec::with_capacity(s.len() + 2);
    repr_str(s, &mut out);
    String::from_utf8(out).expect("repr escapes every surrogate")
}

/// `repr(b)` of bytes: `b'...'`, quoted as a str is, every byte outside printable ASCII
/// as `\xhh`.
pub fn repr_bytes(b: &[u8], out: &mut Vec<u8>) {
    let quote = if b.contains(&b'\'') && !b.contains(&b'"') { b'"' } else { b'\'' };
    out.push(b'b');
    out.push(quote);
    for &c in b {
        match c {
            _ if c == quote || c == b'\\' => {
                out.push(b'\\');
                out.push(c);
            }
            b'\t' => out.extend_from_slice(b"\\t"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            0x20..=0x7E => out.push(c),
            _ => hex_escape(out, b'x', u32::from(c), 2),
        }
    }
    out.push(quote);
}

/// `word in t.lower()` for a lower-case ASCII word. Besides ASCII capitals, only two
/// characters lower to something holding ASCII: the Kelvin sign to `k`, and `İ` to `i`
/// followed by a combining dot.
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
    for cp in code_points(t) {
        match cp {
            0..=0x7F => out.push((cp as u8).to_ascii_lowercase()),
            0x212A => out.push(b'k'),
            0x130 => out.extend_from_slice(&[b'i', 0x80]),
            _ => out.push(0x80),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn repr(s: &str) -> String {
        repr_string(s.as_bytes())
    }

    #[test]
    fn white_space_is_pythons() {
        assert_eq!(strip(" \t\u{85}a b\u{3000}\x1c".as_bytes()), b"a b");
        assert_eq!(squash("  a \n\u{a0} b  ".as_bytes()), b"a b");
        assert_eq!(fold_spaces("  a \n b  ".as_bytes()), b" a b ");
        // U+200B is no white space to Python, U+180E no longer either
        assert_eq!(strip("\u{200b}x\u{180e}".as_bytes()), "\u{200b}x\u{180e}".as_bytes());
    }

    #[test]
    fn repr_quotes_and_escapes_as_python_does() {
        assert_eq!(repr("a"), "'a'");
        assert_eq!(repr("it's"), "\"it's\"");
        assert_eq!(repr("'\""), "'\\'\"'");
        assert_eq!(repr("\t\n\r\x00\x7f\\"), "'\\t\\n\\r\\x00\\x7f\\\\'");
        assert_eq!(repr("é😀\u{a0}\u{2028}\u{ad}"), "'é😀\\xa0\\u2028\\xad'");
        assert_eq!(repr("\u{e000}\u{10ffff}"), "'\\ue000\\U0010ffff'");
        let mut lone = Vec::new();
        push_code_point(&mut lone, 0xD800);
        assert_eq!(repr_string(&lone), "'\\ud800'");
        let mut b = Vec::new();
        repr_bytes(b"\x00'a\xff", &mut b);
        assert_eq!(b, b"b\"\\x00'a\\xff\"");
    }

    #[test]
    fn digits_of_any_script_are_read_as_int_reads_them() {
        assert_eq!(small_index("٣".as_bytes()), Some(3));
        assert_eq!(small_index(b"0123456789"), None);
        assert_eq!(small_index(b"x"), None);
        assert_eq!(int_text(" -1_000 ".as_bytes()), Some((true, b"1000".to_vec())));
        assert_eq!(int_text("٣".as_bytes()), Some((false, b"3".to_vec())));
        for bad in ["", "1__0", "_1", "1_", "1.0", "0x1", "²"] {
            assert_eq!(int_text(bad.as_bytes()), None, "{bad}");
        }
    }

    #[test]
    fn upper_and_lower_are_known_where_they_are_ascii() {
        assert_eq!(ascii_upper("ıLM".as_bytes()), Some(b"ILM".to_vec()));
        assert_eq!(ascii_upper("ſtraße".as_bytes()), Some(b"STRASSE".to_vec()));
        assert_eq!(ascii_upper("é".as_bytes()), None);
        assert_eq!(ascii_lower("\u{212a}IND".as_bytes()), Some(b"kind".to_vec()));
        assert!(lower_contains("Max \u{212a}eys".as_bytes(), b"max keys"));
        assert!(!lower_equals("\u{130}".as_bytes(), b"i"));
    }

    #[test]
    fn prefixes_count_code_points() {
        assert_eq!(prefix("éabc".as_bytes(), 2), "éa".as_bytes());
        assert_eq!(char_len("é😀a".as_bytes()), 3);
    }
}
