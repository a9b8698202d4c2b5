//! What tool results and spans say about failure, shared by several checks
//! (checks/signals.py names them): faultgate 0.4.1's heuristics, so the two tools agree on
//! what an error or an empty result is. JSON is read as `json.loads` reads it
//! (model/json.rs).

use std::borrow::Cow;

use crate::error::{Error, Result};
use crate::model::json::{self, dumps, Default, CANONICAL};
use crate::model::reason::Reason;
use crate::model::record::SpanRecord;
use crate::model::value::Value;
use crate::pyfmt::strs::{fold_spaces, int_text, strip, Needle};
use crate::run::facts::error_type;

// How a tool result announces a failure in plain text.
const ERROR_PREFIXES: [&str; 4] = ["Error:", "ERROR:", "Traceback (most recent call last)",
                                   "An error occurred while parsing tool arguments"];
const EXIT_CODE_KEYS: [&str; 5] = ["exit_code", "return_code", "exitcode", "returncode", "exit_status"];
const COUNT_KEYS: [&str; 4] = ["n_candidates", "count", "n_results", "total"];

/// Whether a stripped text looks like a JSON object or array (its first and last
/// characters).
pub fn jsonish(s: &[u8]) -> bool {
    matches!((s.first(), s.last()), (Some(b'{'), Some(b'}')) | (Some(b'['), Some(b']'))) && s.len() > 1
}

/// `int(value) != 0`; None where `int()` raises TypeError or ValueError (the rule skips
/// the key); an infinite float raises OverflowError, which the rule does not catch.
fn int_nonzero(v: &Value<'_>) -> Result<Option<bool>> {
    Ok(match v {
        Value::Bool(b) => Some(*b),
        Value::Int(x) => Some(*x != 0),
        Value::BigInt(_) => Some(true),
        Value::Float(f) if f.is_nan() => None,
        Value::Float(f) if f.is_infinite() => {
            return Err(Error::Overflow("cannot convert float infinity to integer".into()))
        }
        Value::Float(f) => Some(f.trunc() != 0.0),
        Value::Str(s) => int_text(s).map(|(_, digits)| digits.iter().any(|&d| d != b'0')),
        _ => None,
    })
}

/// What a JSON object of a result says of an error: a true `error` member, else the first
/// exit code key whose value is a non-zero integer.
fn object_error(obj: &Value<'_>) -> Result<Option<Reason>> {
    if let Some(e) = obj.get("error") {
        if e.truthy() {
            let mut r = Reason::text(*b"JSON top-level error: ");
            r.push_quote(&e.py_str(), 80);
            return Ok(Some(r));
        }
    }
    for k in EXIT_CODE_KEYS {
        if let Some(v) = obj.get(k) {
            if int_nonzero(v)? == Some(true) {
                let mut out = format!("Non-zero {k}: ").into_bytes();
                out.extend_from_slice(&v.py_str());
                return Ok(Some(Reason::text(out)));
            }
        }
    }
    Ok(None)
}

/// Whether a text may hold one of the JSON members a structural error is read from: a
/// member named `error` or an exit code key has its name in the text, unless the name is
/// written with `\u` escapes. Most results name none, and are not decoded at all.
fn may_name_error_members(s: &[u8]) -> bool {
    static ERROR: Needle = crate::needle!(b"error");
    static EXIT: Needle = crate::needle!(b"exit");
    static RETURN: Needle = crate::needle!(b"return");
    static ESCAPE: Needle = crate::needle!(b"\\u");
    ERROR.within(s) || EXIT.within(s) || RETURN.within(s) || ESCAPE.within(s)
}

/// Whether a result is no error at all, decided without decoding it: most results are
/// read this far only.
pub fn plainly_clean(result: &[u8]) -> bool {
    let s = strip(result);
    s.is_empty() || (!may_name_error_members(s) && !ERROR_PREFIXES.iter().any(|p| s.starts_with(p.as_bytes())))
}

/// Why a tool result is an error (None when it is not): a JSON `error` field, a non-zero
/// exit code, a `<tool_use_error>` tag, or an error prefix. The JSON is the result's own
/// object, or for a list of `{"text": "{...}"}` parts (MCP content), each part's text.
pub fn structural_error(result: &[u8]) -> Result<Option<Reason>> {
    let s = strip(result);
    if s.is_empty() {
        return Ok(None);
    }
    let (first, last) = (s[0], s[s.len() - 1]);
    if s.len() >= 2 && may_name_error_members(s) {
        if first == b'{' && last == b'}' {
            if let Some(obj @ Value::Dict(_)) = json::loads(s) {
                if let Some(e) = object_error(&obj)? {
                    return Ok(Some(e));
                }
            }
        } else if first == b'[' && last == b']' {
            if let Some(Value::List(items)) = json::loads(s) {
                for item in &items {
                    let Some(Value::Str(t)) = item.get("text") else { continue };
                    let t = strip(t);
                    if t.len() >= 2 && t[0] == b'{' && t[t.len() - 1] == b'}' {
                        if let Some(obj @ Value::Dict(_)) = json::loads(t) {
                            if let Some(e) = object_error(&obj)? {
                                return Ok(Some(e));
                            }
                        }
                    }
                }
            }
        }
    }
    static TAG: Needle = crate::needle!(b"<tool_use_error>");
    static END_TAG: Needle = crate::needle!(b"</tool_use_error>");
    if TAG.within(s) && END_TAG.within(s) {
        return Ok(Some(Reason::text(*b"<tool_use_error> tag present")));
    }
    for p in ERROR_PREFIXES {
        if s.starts_with(p.as_bytes()) {
            return Ok(Some(Reason::from(format!("Response starts with '{p}'"))));
        }
    }
    Ok(None)
}

/// `value == 0` in Python (so `False == 0` and `0.0 == 0` are true).
fn equals_zero(v: &Value<'_>) -> bool {
    match v {
        Value::Bool(b) => !*b,
        Value::Int(x) => *x == 0,
        Value::Float(x) => *x == 0.0,
        _ => false,
    }
}

/// A tool result that carried nothing back: empty, [], {}, or a JSON body whose count is
/// 0 or whose lists are all empty. Only an array or an object can be either, so other
/// text (a JSON scalar too) is not decoded.
pub fn empty_result(result: &[u8]) -> bool {
    let s = strip(result);
    if matches!(s, b"" | b"[]" | b"{}" | b"null" | b"None") {
        return true;
    }
    if !matches!(s[0], b'[' | b'{') {
        return false;
    }
    match json::loads(s) {
        Some(Value::List(v)) => v.is_empty(),
        Some(d @ Value::Dict(_)) => {
            for k in COUNT_KEYS {
                if let Some(v) = d.get(k) {
                    return equals_zero(v);
                }
            }
            let Value::Dict(items) = &d else { unreachable!() };
            let lists: Vec<bool> = items.iter().filter_map(|(_, v)| match v {
                Value::List(l) => Some(l.is_empty()),
                _ => None,
            }).collect();
            !lists.is_empty() && lists.iter().all(|&empty| empty)
        }
        _ => false,
    }
}

/// Arguments in one canonical form, so the same call written twice compares equal: JSON
/// re-encoded with sorted keys and no spaces (`json.JSONEncoder(sort_keys=True,
/// separators=(",", ":"), ensure_ascii=False)`), other text with its white space folded.
pub fn canonical_arguments(args: &[u8]) -> Vec<u8> {
    let s = strip(args);
    if jsonish(s) {
        if let Some(v) = json::loads(s) {
            if let Ok(out) = dumps(&v, Default::Strict, CANONICAL) {
                return out;
            }
        }
    }
    fold_spaces(s)
}

/// repeated_call's key for a call's arguments: equal for two argument texts whenever
/// their canonical forms are, and cheaper to get (one decode instead of a decode and a
/// sorted re-encode). Equal canonical JSON means equal decoded values, type for type, so
/// an object's string members are the same; a text that is not JSON is compared in its
/// canonical form itself. `Unsure` when it cannot tell.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CallKey {
    Text(Vec<u8>),
    Members(Vec<(Vec<u8>, Vec<u8>)>),
    Len(usize),
    // its canonical form is its text, which may read like someone's JSON
    Unsure,
}

pub fn call_key(args: &[u8]) -> CallKey {
    let s = strip(args);
    if !jsonish(s) {
        return CallKey::Text(fold_spaces(s));
    }
    match json::loads(s) {
        Some(Value::Dict(items)) => {
            let mut members: Vec<(Vec<u8>, Vec<u8>)> = items.iter().filter_map(|(k, v)| match (k, v) {
                (Value::Str(k), Value::Str(x)) => Some((k.to_vec(), x.to_vec())),
                _ => None,
            }).collect();
            members.sort();
            CallKey::Members(members)
        }
        Some(Value::List(v)) => CallKey::Len(v.len()),
        _ => CallKey::Unsure,
    }
}

/// Why the span itself says it failed (None when it does not), as text.
pub fn span_error(span: &SpanRecord) -> Option<Vec<u8>> {
    if span.status_code == 2 {
        return Some(b"Span status error: Code 2".to_vec());
    }
    error_type(span).map(|t| {
        let mut out = b"Span error: ".to_vec();
        out.extend_from_slice(&t);
        out
    })
}

/// `" ".join(s.split())`.
pub fn squash(s: &[u8]) -> Cow<'_, [u8]> {
    Cow::Owned(crate::pyfmt::strs::squash(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(s: &str) -> Option<String> {
        structural_error(s.as_bytes()).unwrap().map(|r| String::from_utf8(r.cut()).unwrap())
    }

    #[test]
    fn a_result_says_it_failed_in_faultgates_ways() {
        assert_eq!(err(r#"{"error": "boom"}"#).as_deref(), Some("JSON top-level error: boom"));
        assert_eq!(err(r#"{"exit_code": "2"}"#).as_deref(), Some("Non-zero exit_code: 2"));
        assert_eq!(err(r#"{"exit_code": 0, "error": ""}"#), None);
        assert_eq!(err(r#"[{"type": "text", "text": "{\"error\": {\"code\": 1}}"}]"#).as_deref(),
                   Some("JSON top-level error: {'code': 1}"));
        assert_eq!(err("Error: nope").as_deref(), Some("Response starts with 'Error:'"));
        assert_eq!(err("<tool_use_error>x</tool_use_error>").as_deref(), Some("<tool_use_error> tag present"));
        assert_eq!(err("fine"), None);
        assert!(structural_error(br#"{"exit_code": Infinity}"#).is_err());
        assert!(plainly_clean(b" 42 results ") && !plainly_clean(b"Error: x"));
    }

    #[test]
    fn an_error_member_is_quoted_whole_for_masking() {
        let long = format!(r#"{{"error": "{}"}}"#, "x".repeat(100));
        let r = structural_error(long.as_bytes()).unwrap().unwrap();
        assert_eq!(r.cut().len(), "JSON top-level error: ".len() + 80);
        assert!(r.quotes());
    }

    #[test]
    fn an_empty_result_carried_nothing_back() {
        for e in ["", " [] ", "{}", "null", "None", r#"{"count": 0, "items": [1]}"#, r#"{"a": [], "b": []}"#,
                  r#"{"total": false}"#] {
            assert!(empty_result(e.as_bytes()), "{e}");
        }
        for full in ["x", "[1]", r#"{"a": [1], "b": []}"#, r#"{"count": 2}"#, r#"{"a": 1}"#, "[oops"] {
            assert!(!empty_result(full.as_bytes()), "{full}");
        }
    }

    #[test]
    fn the_same_call_written_twice_has_one_canonical_form() {
        assert_eq!(canonical_arguments(br#" {"b": 1, "a": [1.0, "x"]} "#), br#"{"a":[1.0,"x"],"b":1}"#);
        assert_eq!(canonical_arguments(b"  find   cats "), b"find cats");
        assert_eq!(call_key(br#"{"q": "x", "n": 1}"#), CallKey::Members(vec![(b"q".to_vec(), b"x".to_vec())]));
        assert_eq!(call_key(b"[1, 2]"), CallKey::Len(2));
        assert_eq!(call_key(b"[1, 2,]"), CallKey::Unsure);
        assert_eq!(call_key(b"[1, 2"), CallKey::Text(b"[1, 2".to_vec()));
    }
}
