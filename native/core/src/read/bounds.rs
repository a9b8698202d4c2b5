//! The bounds on what a sender may nest in one span or log record, checked before any
//! reader walks it recursively (issue 42).
//!
//! An `AnyValue` may hold arrays and key-value lists of `AnyValue`s, nested without end in
//! the protocol. Every reader after this one (the conventions, `dumps`, redaction, a
//! check's walk over a tool's arguments) recurses over such a value, and OTLP/JSON nested a
//! thousand deep ran Python's own recursion out inside the receiver, where it was answered
//! as if it were capacity (retryable) though it can never succeed. So a span (or log
//! record) whose values nest deeper than `MAX_VALUE_DEPTH`, or hold more than `MAX_VALUES`
//! values in all, is rejected on its own (partial success naming the limit), and the other
//! spans of its request go on.
//!
//! Both walks here are iterative: their cost is one pass over the bytes, their memory one
//! entry per value still to visit, however deep the input nests.

use crate::wire::{Fields, Result, Value};

/// Arrays and key-value lists nested in one value, at most. GenAI content written as
/// structure (messages -> parts -> a tool call's arguments) nests five or six levels before
/// the arguments' own JSON; 24 leaves a tool's arguments 18 of their own. It is also under
/// what protobuf itself carries: upb (and so the receivers' request check, read/accept.rs)
/// refuses messages nested past 100, and a key-value list costs three message levels, an
/// array two, so 24 levels of lists in an event's attributes are 79 message levels.
pub const MAX_VALUE_DEPTH: usize = 24;

/// `AnyValue`s in one span's attributes, or one log record's body and attributes, counted
/// at every level. A conversation of a thousand messages written as structure is about six
/// thousand; a request of 64 MiB could otherwise make one span hold tens of millions, each
/// a Python object to a reader.
pub const MAX_VALUES: usize = 65_536;

/// What a value broke.
#[derive(Debug, PartialEq, Eq)]
pub enum Over {
    Depth,
    Values,
}

impl Over {
    /// The rejection's reason, naming the limit (a span's or record's place goes before it).
    pub fn message(&self) -> String {
        match self {
            Over::Depth => format!("values nested more than {MAX_VALUE_DEPTH} levels deep (arrays and \
                                    key-value lists), past the limit"),
            Over::Values => format!("more than {MAX_VALUES} values in its attributes, past the limit"),
        }
    }
}

/// Counts the `AnyValue`s of one value (the occurrences a field holds, merged as protobuf
/// merges them) into ``seen``, refusing past either bound. Every occurrence is walked, so a
/// member a later occurrence replaces still counts: a bound on the bytes, not on the reading.
#[inline(always)]
pub fn check_any_value(chunks: &[&[u8]], seen: &mut usize) -> Result<std::result::Result<(), Over>> {
    // most values are one scalar: counted where they are read, with no call
    if let [chunk] = chunks {
        if one_scalar(chunk) {
            *seen += 1;
            return Ok(if *seen > MAX_VALUES { Err(Over::Values) } else { Ok(()) });
        }
    }
    check_lists(chunks, seen)
}

#[inline(never)]
fn check_lists(chunks: &[&[u8]], seen: &mut usize) -> Result<std::result::Result<(), Over>> {
    if chunks.is_empty() {
        return Ok(Ok(()));
    }
    *seen += 1;
    if *seen > MAX_VALUES {
        return Ok(Err(Over::Values));
    }
    if !holds_lists(chunks)? {
        return Ok(Ok(()));
    }
    // (an AnyValue's bytes, its depth): the values still to visit
    let mut todo: Vec<(&[u8], usize)> = chunks.iter().map(|c| (*c, 0)).collect();
    while let Some((value, depth)) = todo.pop() {
        let mut f = Fields::new(value);
        while let Some((n, v)) = f.next()? {
            let list = match (n, v) {
                (5 | 6, Value::Bytes(b)) => b,
                _ => continue,
            };
            // ArrayValue.values and KeyValueList.values are both field 1
            let mut entries = Fields::new(list);
            while let Some((m, e)) = entries.next()? {
                let entry = match (m, e) {
                    (1, Value::Bytes(b)) => b,
                    _ => continue,
                };
                if depth + 1 > MAX_VALUE_DEPTH {
                    return Ok(Err(Over::Depth));
                }
                if n == 5 {
                    todo.push((entry, depth + 1));
                    *seen += 1;
                } else {
                    // a KeyValue: its value is field 2 (occurrences merged)
                    let mut kv = Fields::new(entry);
                    let mut any = false;
                    while let Some((k, x)) = kv.next()? {
                        if let (2, Value::Bytes(b)) = (k, x) {
                            todo.push((b, depth + 1));
                            any = true;
                        }
                    }
                    *seen += usize::from(any);
                }
                if *seen > MAX_VALUES {
                    return Ok(Err(Over::Values));
                }
            }
        }
    }
    Ok(Ok(()))
}

/// Whether an AnyValue's occurrences hold an array or a key-value list.
fn holds_lists(chunks: &[&[u8]]) -> Result<bool> {
    for chunk in chunks {
        if one_scalar(chunk) {
            continue;
        }
        let mut f = Fields::new(chunk);
        while let Some((n, v)) = f.next()? {
            if let (5 | 6, Value::Bytes(_)) = (n, v) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// Whether an AnyValue's bytes are one scalar member and nothing more: most attributes,
/// told from the first bytes without the general field walk, which was most of this
/// check's cost (callgrind: ~2,000 instructions a span of bench/live.py's workload, ~400
/// with this).
#[inline(always)]
fn one_scalar(chunk: &[u8]) -> bool {
    // a varint at ``at``: its value and the offset after it
    let varint = |at: usize| -> Option<(u64, usize)> {
        let mut out = 0u64;
        for i in 0..10 {
            let b = *chunk.get(at + i)?;
            out |= u64::from(b & 0x7f) << (7 * i);
            if b & 0x80 == 0 {
                return Some((out, at + i + 1));
            }
        }
        None
    };
    match chunk.first() {
        None => true,
        // string_value (1) and bytes_value (7): the tag, the length, the bytes
        Some(0x0a | 0x3a) => varint(1).is_some_and(|(len, end)| len.checked_add(end as u64) == Some(chunk.len() as u64)),
        // bool_value (2) and int_value (3): the tag and a varint
        Some(0x10 | 0x18) => varint(1).is_some_and(|(_, end)| end == chunk.len()),
        // double_value (4): the tag and 8 bytes
        Some(0x21) => chunk.len() == 9,
        _ => false,
    }
}

/// How deep JSON text nests (arrays and objects), counted without parsing it and without
/// recursing: ``limit + 1`` as soon as it is deeper than ``limit``. Text that is not JSON
/// gets a number too; parsing it is what refuses it.
pub fn json_depth(data: &[u8], limit: usize) -> usize {
    let (mut depth, mut deepest) = (0usize, 0usize);
    let mut i = 0;
    while i < data.len() {
        match data[i] {
            b'"' => {
                // to the closing quote, past escaped characters
                i += 1;
                while i < data.len() && data[i] != b'"' {
                    i += if data[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'[' | b'{' => {
                depth += 1;
                if depth > deepest {
                    deepest = depth;
                    if deepest > limit {
                        return limit + 1;
                    }
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    deepest
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::put_len_field;

    fn string(s: &str) -> Vec<u8> {
        let mut out = Vec::new();
        put_len_field(&mut out, 1, s.as_bytes());
        out
    }

    /// An AnyValue holding ``inner`` in an array (field 5) or a key-value list (field 6).
    fn wrap(inner: &[u8], kvlist: bool) -> Vec<u8> {
        let mut entry = inner.to_vec();
        if kvlist {
            let mut kv = Vec::new();
            put_len_field(&mut kv, 1, b"k");
            put_len_field(&mut kv, 2, inner);
            entry = kv;
        }
        let mut list = Vec::new();
        put_len_field(&mut list, 1, &entry);
        let mut out = Vec::new();
        put_len_field(&mut out, if kvlist { 6 } else { 5 }, &list);
        out
    }

    fn nested(depth: usize, kvlist: bool) -> Vec<u8> {
        (0..depth).fold(string("x"), |v, _| wrap(&v, kvlist))
    }

    #[test]
    fn values_nested_to_the_limit_pass_and_one_level_more_is_refused() {
        for kvlist in [false, true] {
            let mut seen = 0;
            assert_eq!(check_any_value(&[&nested(MAX_VALUE_DEPTH, kvlist)], &mut seen).ok(), Some(Ok(())));
            assert_eq!(seen, MAX_VALUE_DEPTH + 1);
            let mut seen = 0;
            assert_eq!(check_any_value(&[&nested(MAX_VALUE_DEPTH + 1, kvlist)], &mut seen).ok(), Some(Err(Over::Depth)));
        }
    }

    #[test]
    fn a_value_thousands_deep_is_refused_at_the_limit() {
        let mut seen = 0;
        assert_eq!(check_any_value(&[&nested(3000, true)], &mut seen).ok(), Some(Err(Over::Depth)));
        assert_eq!(seen, MAX_VALUE_DEPTH + 1); // nothing below the limit was visited
    }

    #[test]
    fn values_are_counted_across_the_attributes_of_one_span() {
        let mut list = Vec::new();
        for _ in 0..MAX_VALUES / 2 {
            put_len_field(&mut list, 1, &string("v"));
        }
        let mut array = Vec::new();
        put_len_field(&mut array, 5, &list);
        let mut seen = 0;
        assert_eq!(check_any_value(&[&array], &mut seen).ok(), Some(Ok(())));
        assert_eq!(seen, MAX_VALUES / 2 + 1);
        assert_eq!(check_any_value(&[&array], &mut seen).ok(), Some(Err(Over::Values)));
    }

    #[test]
    fn a_scalar_is_one_value_and_an_absent_one_none() {
        let mut seen = 0;
        assert_eq!(check_any_value(&[&string("x")], &mut seen).ok(), Some(Ok(())));
        assert_eq!(check_any_value(&[], &mut seen).ok(), Some(Ok(())));
        assert_eq!(seen, 1);
    }

    #[test]
    fn a_scalar_is_told_from_its_first_bytes_and_anything_else_walked() {
        let double = [0x21, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f];
        for scalar in [string("x"), string(&"y".repeat(300)), vec![0x10, 0x01], vec![0x18, 0xff, 0x01], double.to_vec(),
                       vec![]] {
            assert!(one_scalar(&scalar), "{scalar:?}");
        }
        let mut two = string("x");
        two.extend(wrap(&string("y"), false)); // a string, then an array: merged occurrences
        for other in [two, wrap(&string("x"), true), vec![0x0a, 0x05, b'x'], vec![0x18, 0xff]] {
            assert!(!one_scalar(&other), "{other:?}");
        }
        let mut seen = 0;
        let mut then_deep = string("x");
        then_deep.extend(nested(MAX_VALUE_DEPTH + 1, false));
        assert_eq!(check_any_value(&[&then_deep], &mut seen).ok(), Some(Err(Over::Depth)));
    }

    #[test]
    fn json_depth_counts_brackets_outside_strings() {
        assert_eq!(json_depth(b"{}", 10), 1);
        assert_eq!(json_depth(br#"{"a":[{"b":"[[[{{{\"]]"}]}"#, 10), 3);
        assert_eq!(json_depth(br#"["\\", [1]]"#, 10), 2);
        assert_eq!(json_depth(b"1", 10), 0);
        let deep = "[".repeat(5000);
        assert_eq!(json_depth(deep.as_bytes(), 128), 129);
        assert_eq!(json_depth(b"\"unterminated [[[", 1), 0);
    }
}
