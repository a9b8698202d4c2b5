//! A rules file's rules for Python (checks/rules/check.py): the core's evaluator
//! (native/core/src/checks/rules.rs) over a batch's span records, every span in one call,
//! its map built here straight from the record with the fields the rules name; and over a
//! run's map, which Python builds once a run (adapt.py's `PlainRun`).
//!
//! A span's map holds the values adapt.py's `PlainSpans` gives (tests/checks/
//! test_cel_rules.py compares them on many records): what a field reads is `SPAN_FIELDS`'.

use std::sync::Mutex;

use faultgate_core::checks::rules::{args_document, args_of, args_value, boolean, constant, double, empty_map, fields,
                                     int as cel_int, list, map, null, text, value_of, Outcome, Rules, Val};
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyMapping, PySet, PyString, PyTuple};
use rustc_hash::FxHashMap;

use super::guarded;
use crate::attributes::SpanAttributes;
use crate::convert::{py_text, text_of};
use faultgate_core::run::facts::Step;
use crate::records::field;


/// `SPAN_FIELDS` (checks/plugins/adapt.py), in its order: a field's bit is its place here.
const SPAN_FIELDS: [&str; 23] = [
    "trace_id", "span_id", "parent_id", "name", "operation", "start_ns", "end_ns", "duration_ms", "status",
    "status_message", "tool", "arguments", "args", "result", "call_id", "prompt", "answer", "error_type", "model",
    "input_tokens", "output_tokens", "is_tool", "is_agent",
];
const ATTRIBUTES: u32 = 1 << SPAN_FIELDS.len();
const ALL: u32 = (ATTRIBUTES << 1) - 1;

fn compiled(sources: Vec<String>, patterns: Vec<String>) -> PyResult<Rules> {
    let s: Vec<&str> = sources.iter().map(String::as_str).collect();
    let p: Vec<&str> = patterns.iter().map(String::as_str).collect();
    Rules::compile(&s, &p).map_err(|(i, cause)| PyValueError::new_err((i, cause)))
}

fn outcome_pair(o: Outcome) -> (bool, String) {
    match o {
        Outcome::Matched => (true, String::new()),
        Outcome::NotMatched => (false, String::new()),
        Outcome::Failed(why) => (false, why),
    }
}

/// A file's span rules: `SpanRules(sources, patterns, tools, fields, attributes, plain_args)`,
/// per rule its source as engine.py runs it, its tools (None: every span) and the fields it
/// names (empty: all); the attributes any names; `plain_args`, adapt.py's reading of
/// arguments, for the texts serde_json and Python's json may read differently.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct SpanRules {
    rules: Rules,
    tools: Vec<Option<Vec<String>>>,
    fields: Vec<u32>,
    /// per rule, the argument keys it reads when it reads `args` only by them (`arg_keys`):
    /// it is keyed by their values rather than by the arguments' text
    arg_keys: Vec<Option<Vec<String>>>,
    attributes: Vec<Py<PyString>>,
    plain_args: Py<PyAny>,
}

#[pymethods]
impl SpanRules {
    #[new]
    fn new(py: Python<'_>, sources: Vec<String>, patterns: Vec<String>, tools: Vec<Option<Vec<String>>>,
           fields: Vec<Vec<String>>, attributes: Vec<String>, plain_args: Py<PyAny>) -> PyResult<Self> {
        let rules = compiled(sources, patterns)?;
        if tools.len() != rules.len() || fields.len() != rules.len() {
            return Err(PyValueError::new_err("one tools and one fields entry per rule"));
        }
        // a rule whose expression itself requires a tool (`span.tool == "x" && ...`) is
        // false on every other span: looked at only on that tool's, as with `tools`
        let tools = tools.into_iter().enumerate().map(|(i, given)| match (given, rules.implied_tools(i, "span")) {
            (Some(given), Some(implied)) => Some(given.into_iter().filter(|t| implied.contains(t)).collect()),
            (given, None) => given,
            (None, implied) => implied,
        }).collect();
        let fields: Vec<u32> = fields.iter().map(|names| {
            if names.is_empty() {
                return ALL;
            }
            names.iter().fold(0, |m, n| {
                m | match SPAN_FIELDS.iter().position(|f| f == n) {
                    Some(i) => 1 << i,
                    None if n == "attributes" => ATTRIBUTES,
                    None => 0,
                }
            })
        }).collect();
        let attributes = attributes.iter().map(|a| PyString::new(py, a).unbind()).collect();
        let arg_keys = fields.iter().enumerate().map(|(i, f): (usize, &u32)| {
            if f & bit("args") != 0 && f & bit("arguments") == 0 { rules.arg_keys(i, "span") } else { None }
        }).collect();
        Ok(SpanRules { rules, tools, fields, arg_keys, attributes, plain_args })
    }

    /// Every rule over every span of `spans` (a list or tuple of records): per rule, the
    /// positions it matched, ascending, and (position, error) where it failed.
    fn evaluate<'py>(&self, py: Python<'py>, spans: Bound<'py, PyAny>)
                     -> PyResult<(Vec<Vec<usize>>, Vec<Vec<(usize, String)>>)> {
        guarded(|| {
            let n = self.rules.len();
            let mut fired = vec![Vec::new(); n];
            let mut errors = vec![Vec::new(); n];
            let mut which = Vec::with_capacity(n);
            // a rule's outcome on spans alike in what the fields it reads are made of (its
            // key: the rule, the tool, those fields' sources), worked out once a batch
            let mut seen: FxHashMap<Vec<u8>, Outcome> = FxHashMap::default();
            let mut missed: Vec<(usize, Option<Vec<u8>>)> = Vec::with_capacity(n);
            let mut key: Vec<u8> = Vec::new();
            // per rule: its keyed looks that missed, and that hit
            let mut looks = vec![(0u32, 0u32); n];
            let items = seq(&spans)?;
            for (pos, s) in items.iter().enumerate() {
                let s = s.downcast::<PyTuple>()?;
                let tool = s.get_item(field::TOOL)?;
                let tool = if tool.is_none() { None } else { Some(tool.downcast_into::<PyTuple>()?) };
                let name = match &tool {
                    Some(t) => Some(t.get_item(0)?.downcast_into::<PyString>()?),
                    None => None,
                };
                let name_text = match &name {
                    Some(n) => Some(text_of(n)?),
                    None => None,
                };
                which.clear();
                for (i, tools) in self.tools.iter().enumerate() {
                    let applies = match tools {
                        None => true,
                        Some(ts) => {
                            let t = name_text.as_deref().unwrap_or(b"");
                            ts.iter().any(|x| x.as_bytes() == t)
                        }
                    };
                    if applies {
                        which.push(i);
                    }
                }
                missed.clear();
                let mut wanted = 0u32;
                // the arguments' document, read once a span for the keys and the map (None
                // inside: for Python to read)
                let mut doc: Option<Option<serde_json::Value>> = None;
                for &i in &which {
                    let mut k = None;
                    let (misses, hits) = looks[i];
                    if self.fields[i] & !KEYED == 0 && self.fields[i] & UNIQUE == 0 && worth_keying(misses, hits) {
                        key.clear();
                        key.extend_from_slice(&(i as u64).to_le_bytes());
                        match name_text.as_deref() {  // the tool's name (none: a byte no text holds)
                            Some(t) => {
                                key.extend_from_slice(&(t.len() as u64).to_le_bytes());
                                key.extend_from_slice(t);
                            }
                            None => key.push(0xff),
                        }
                        let by_keys = self.arg_keys[i].as_deref();
                        let sources = if by_keys.is_some() { self.fields[i] & !bit("args") } else { self.fields[i] };
                        let mut keyed = source_key(s, tool.as_ref(), sources, &mut key)?;
                        if let (true, Some(names)) = (keyed, by_keys) {
                            let d = match &doc {
                                Some(d) => d,
                                None => doc.insert(arguments_document(tool.as_ref())?),
                            };
                            keyed = d.as_ref().is_some_and(|d| {
                                arg_values_key(d, names, &mut key);
                                true
                            });
                        }
                        if keyed {
                            if let Some(o) = seen.get(key.as_slice()) {
                                record(&mut fired, &mut errors, i, pos, o);
                                looks[i].1 += 1;
                                continue;
                            }
                            looks[i].0 += 1;
                            k = Some(key.clone());
                        }
                    }
                    missed.push((i, k));
                    wanted |= self.fields[i];
                }
                if missed.is_empty() {
                    continue;
                }
                let value = self.span_map(py, s, tool.as_ref(), name.as_ref(), wanted, doc.flatten())?;
                let bound = self.rules.bind("span", value);
                for (i, k) in missed.drain(..) {
                    let o = bound.evaluate(i);
                    record(&mut fired, &mut errors, i, pos, &o);
                    if let Some(k) = k {
                        if seen.len() < MAX_KEYS {
                            seen.insert(k, o);
                        }
                    }
                }
            }
            Ok((fired, errors))
        })
    }

    /// Each span id of `spans[lo:hi]` (records) added to `seen`, a set: what a file's span
    /// rules saw of a trace (check.py's `_Shared.seen`), without a Python call a span.
    #[staticmethod]
    fn add_ids(seen: Bound<'_, PySet>, spans: Bound<'_, PyAny>, lo: usize, hi: usize) -> PyResult<()> {
        let id = |s: Bound<'_, PyAny>| -> PyResult<()> { seen.add(s.downcast::<PyTuple>()?.get_item(field::SPAN_ID)?) };
        if let Ok(l) = spans.downcast::<PyList>() {
            for i in lo..hi.min(l.len()) {
                id(l.get_item(i)?)?;
            }
        } else {
            for i in lo..hi.min(spans.len()?) {
                id(spans.get_item(i)?)?;
            }
        }
        Ok(())
    }

    /// `span`'s map as the rules would see it with `fields` (empty: all), in Python: for
    /// comparing with adapt.py's `PlainSpans` (the tests).
    fn map_of<'py>(&self, py: Python<'py>, span: Bound<'py, PyTuple>, fields: Vec<String>)
                     -> PyResult<Bound<'py, PyAny>> {
        let wanted = if fields.is_empty() {
            ALL
        } else {
            fields.iter().fold(0, |m, n| m | SPAN_FIELDS.iter().position(|f| f == n).map_or(
                if n == "attributes" { ATTRIBUTES } else { 0 }, |i| 1 << i))
        };
        let tool = span.get_item(field::TOOL)?;
        let tool = if tool.is_none() { None } else { Some(tool.downcast_into::<PyTuple>()?) };
        let name = match &tool {
            Some(t) => Some(t.get_item(0)?.downcast_into::<PyString>()?),
            None => None,
        };
        let v = self.span_map(py, &span, tool.as_ref(), name.as_ref(), wanted, None)?;
        to_python(py, &value_of(&v).ok_or_else(|| PyValueError::new_err("a value with no Value"))?)
    }
}

impl SpanRules {
    /// `doc`: the arguments' document when the caller read it already (`arguments_document`).
    fn span_map<'py>(&self, py: Python<'py>, s: &Bound<'py, PyTuple>, tool: Option<&Bound<'py, PyTuple>>,
                     name: Option<&Bound<'py, PyString>>, wanted: u32, mut doc: Option<serde_json::Value>)
                     -> PyResult<Val> {
        let mut out: Vec<(&'static str, Val)> = Vec::with_capacity(wanted.count_ones() as usize);
        let str_at = |i: usize| -> PyResult<Val> { string(&s.get_item(i)?) };
        let tool_str = |i: usize| -> PyResult<Val> {
            match tool {
                Some(t) => string(&t.get_item(i)?),
                None => Ok(text("")),
            }
        };
        let mut attrs: Option<Bound<'py, PyAny>> = None;
        let mut attr = |key: &Bound<'py, PyString>| -> PyResult<Option<Bound<'py, PyAny>>> {
            if attrs.is_none() {
                attrs = Some(s.get_item(field::ATTRS)?);
            }
            get(attrs.as_ref().unwrap_or_else(|| unreachable!()), key)
        };
        for (bit, f) in SPAN_FIELDS.iter().enumerate() {
            if wanted & (1 << bit) == 0 {
                continue;
            }
            let v = match *f {
                "trace_id" => str_at(field::TRACE_ID)?,
                "span_id" => str_at(field::SPAN_ID)?,
                "name" => str_at(field::NAME)?,
                "status_message" => str_at(field::STATUS_MESSAGE)?,
                "prompt" => str_at(field::PROMPT)?,
                "answer" => str_at(field::ANSWER)?,
                "parent_id" | "operation" => {
                    let o = s.get_item(if *f == "parent_id" { field::PARENT_ID } else { field::OPERATION })?;
                    if o.is_truthy()? { string(&o)? } else { text("") }
                }
                "start_ns" => int(&s.get_item(field::START_NS)?)?,
                "end_ns" => int(&s.get_item(field::END_NS)?)?,
                "duration_ms" => {
                    let (start, end) = (s.get_item(field::START_NS)?, s.get_item(field::END_NS)?);
                    if end.is_truthy()? && start.is_truthy()? {
                        let d = end.sub(&start)?;
                        double(d.extract::<f64>()? / 1e6)
                    } else {
                        null()
                    }
                }
                "status" => constant(match s.get_item(field::STATUS_CODE)?.extract::<i64>() {
                    Ok(1) => "ok",
                    Ok(2) => "error",
                    _ => "unset",
                }),
                "tool" => match name {
                    Some(n) => string(n.as_any())?,
                    None => constant(""),
                },
                "arguments" => tool_str(1)?,
                "result" => tool_str(2)?,
                "call_id" => tool_str(3)?,
                "args" => match tool {
                    None => empty_map(),
                    Some(_) if doc.is_some() => args_of(doc.take().unwrap_or_else(|| unreachable!())),
                    Some(t) => {
                        let a = t.get_item(1)?;
                        let parsed = match a.downcast::<PyString>() {
                            Ok(text) => match text.to_str() {
                                Ok(t) => args_value(t),
                                Err(_) => None,
                            },
                            Err(_) => None,
                        };
                        match parsed {
                            Some(v) => v,
                            None => plain(&self.plain_args.bind(py).call1((a,))?, 0)?,
                        }
                    }
                },
                "error_type" => match attr(intern!(py, "error.type"))? {
                    Some(v) if v.is_truthy()? => text(v.str()?.to_string_lossy()),
                    _ => text(""),
                },
                "model" => {
                    let mut got = text("");
                    for k in [intern!(py, "gen_ai.response.model"), intern!(py, "gen_ai.request.model")] {
                        if let Some(v) = attr(k)? {
                            if v.is_truthy()? {
                                got = text(v.str()?.to_string_lossy());
                                break;
                            }
                        }
                    }
                    got
                }
                "input_tokens" => count(attr(intern!(py, "gen_ai.usage.input_tokens"))?)?,
                "output_tokens" => count(attr(intern!(py, "gen_ai.usage.output_tokens"))?)?,
                "is_tool" => boolean(tool.is_some()),
                "is_agent" => {
                    let o = s.get_item(field::OPERATION)?;
                    boolean(o.downcast::<PyString>().is_ok_and(|t| t.to_str().is_ok_and(|t| t == "invoke_agent")))
                }
                _ => continue,
            };
            out.push((*f, v));
        }
        if wanted & ATTRIBUTES != 0 && !self.attributes.is_empty() {
            let mut kept = Vec::new();
            for k in &self.attributes {
                if let Some(v) = attr(k.bind(py))? {
                    kept.push((k.bind(py).to_str()?.to_owned(), plain(&v, 0)?));
                }
            }
            out.push(("attributes", map(kept)));
        } else if wanted & ATTRIBUTES != 0 {
            out.push(("attributes", empty_map()));
        }
        Ok(fields(out))
    }
}

/// The tool's arguments as `args_document` reads them: None where `args_value` would not
/// read them itself (no text, empty, or text serde_json refuses: Python reads those).
fn arguments_document(tool: Option<&Bound<'_, PyTuple>>) -> PyResult<Option<serde_json::Value>> {
    let Some(t) = tool else { return Ok(None) };
    let a = t.get_item(1)?;
    Ok(match a.downcast::<PyString>() {
        Ok(text) => text.to_str().ok().filter(|t| !t.is_empty()).and_then(args_document),
        Err(_) => None,
    })
}

/// The values of the argument keys `names` in `doc`, appended to `key`: each key's value
/// as JSON text (serde_json writes equal values alike, a number as it was written: `5` and
/// `5.0` are an int and a double to CEL, and two keys), or a byte for a key it lacks.
fn arg_values_key(doc: &serde_json::Value, names: &[String], key: &mut Vec<u8>) {
    for n in names {
        key.push(b'|');
        match doc.as_object().and_then(|m| m.get(n)) {
            Some(v) => {
                let t = v.to_string();
                key.push(1);
                key.extend_from_slice(&(t.len() as u64).to_le_bytes());
                key.extend_from_slice(t.as_bytes());
            }
            None => key.push(0),
        }
    }
}

/// Outcomes a batch keeps by key (a batch is bounded already; this bounds the keys' bytes).
const MAX_KEYS: usize = 4096;

/// Keyed looks a rule gets in a batch before its hits must pay for them: a rule reading
/// what spans rarely share (a tool call's arguments: on bench/live.py's workload every
/// call's differ) missed on every span, each miss a key built, copied and kept for nothing
/// (~600 instructions a span of five rules). Keying only ever saves an evaluation: an
/// outcome is the same kept or worked out.
const KEY_TRIES: u32 = 16;

fn worth_keying(misses: u32, hits: u32) -> bool {
    misses < KEY_TRIES || hits >= misses / 4
}

fn record(fired: &mut [Vec<usize>], errors: &mut [Vec<(usize, String)>], rule: usize, pos: usize, o: &Outcome) {
    match o {
        Outcome::Matched => fired[rule].push(pos),
        Outcome::NotMatched => {}
        Outcome::Failed(why) => errors[rule].push((pos, why.clone())),
    }
}

/// The fields read from the record's own items, not from its attributes: two spans alike
/// in what these are made of have equal maps.
const KEYED: u32 = !(ATTRIBUTES | bit("error_type") | bit("model") | bit("input_tokens") | bit("output_tokens"));

/// Fields no two spans share (a key of them is never met again): not worth keying.
const UNIQUE: u32 = bit("span_id") | bit("start_ns") | bit("end_ns") | bit("duration_ms");

const fn bit(name: &str) -> u32 {
    let mut i = 0;
    while i < SPAN_FIELDS.len() {
        if eq(SPAN_FIELDS[i].as_bytes(), name.as_bytes()) {
            return 1 << i;
        }
        i += 1;
    }
    panic!("no such span field")
}

const fn eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// What the `wanted` fields of `s`'s map are made of, appended to `key` (each item length-
/// prefixed): false when one is not what a record holds (the map is then built unkeyed).
fn source_key(s: &Bound<'_, PyTuple>, tool: Option<&Bound<'_, PyTuple>>, wanted: u32, key: &mut Vec<u8>)
              -> PyResult<bool> {
    let put = |o: &Bound<'_, PyAny>, key: &mut Vec<u8>| -> PyResult<bool> {
        if o.is_none() {
            key.push(0);
        } else if let Ok(t) = o.downcast::<PyString>() {
            let t = text_of(t)?;
            key.push(1);
            key.extend_from_slice(&(t.len() as u64).to_le_bytes());
            key.extend_from_slice(&t);
        } else if let Ok(i) = o.extract::<i64>() {
            key.push(2);
            key.extend_from_slice(&i.to_le_bytes());
        } else {
            return Ok(false);
        }
        Ok(true)
    };
    // the record's items each field is made of (`span_map` reads each field from these)
    const ITEMS: [(u32, &[usize]); 12] = [
        (bit("trace_id"), &[field::TRACE_ID]), (bit("span_id"), &[field::SPAN_ID]),
        (bit("parent_id"), &[field::PARENT_ID]), (bit("name"), &[field::NAME]),
        (bit("operation") | bit("is_agent"), &[field::OPERATION]), (bit("start_ns"), &[field::START_NS]),
        (bit("end_ns"), &[field::END_NS]), (bit("duration_ms"), &[field::START_NS, field::END_NS]),
        (bit("status"), &[field::STATUS_CODE]), (bit("status_message"), &[field::STATUS_MESSAGE]),
        (bit("prompt"), &[field::PROMPT]), (bit("answer"), &[field::ANSWER]),
    ];
    // the tool's name is the key's first item; its arguments, result and call id
    const TOOL_ITEMS: [(u32, usize); 3] =
        [(bit("arguments") | bit("args"), 1), (bit("result"), 2), (bit("call_id"), 3)];
    for (bits, items) in ITEMS {
        if wanted & bits != 0 {
            key.push(b'|');
            for &i in items {
                if !put(&s.get_item(i)?, key)? {
                    return Ok(false);
                }
            }
        }
    }
    for (bits, i) in TOOL_ITEMS {
        if wanted & bits != 0 {
            key.push(b'|');
            if let Some(t) = tool {
                if !put(&t.get_item(i)?, key)? {
                    return Ok(false);
                }
            }
        }
    }
    Ok(true)
}

/// `o` appended to `key`, tagged by its type (None, bool, str, a 64-bit int): false for
/// any other value.
fn tagged(o: &Bound<'_, PyAny>, key: &mut Vec<u8>) -> PyResult<bool> {
    if o.is_none() {
        key.push(0);
    } else if let Ok(b) = o.downcast::<PyBool>() {
        key.push(if b.is_true() { 3 } else { 4 });
    } else if let Ok(t) = o.downcast::<PyString>() {
        let t = text_of(t)?;
        key.push(1);
        key.extend_from_slice(&(t.len() as u64).to_le_bytes());
        key.extend_from_slice(&t);
    } else if let (true, Ok(i)) = (o.is_instance_of::<PyInt>(), o.extract::<i64>()) {
        key.push(2);
        key.extend_from_slice(&i.to_le_bytes());
    } else {
        return Ok(false);
    }
    Ok(true)
}

/// A mapping's value at `key` when it has the key (its value may be None), else None.
fn get<'py>(m: &Bound<'py, PyAny>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    if let Ok(a) = m.downcast::<SpanAttributes>() {
        return a.get().value(key);
    }
    match m.downcast::<PyDict>() {
        Ok(d) => d.get_item(key),
        Err(_) if m.len()? == 0 => Ok(None),
        Err(_) if m.contains(key)? => Ok(Some(m.get_item(key)?)),
        Err(_) => Ok(None),
    }
}

/// api.py's `_count`: a number that is a whole count, else null.
fn count(v: Option<Bound<'_, PyAny>>) -> PyResult<Val> {
    let Some(v) = v else { return Ok(null()) };
    if v.is_instance_of::<PyBool>() {
        return Ok(null());
    }
    if v.is_instance_of::<PyInt>() {
        return int(&v);
    }
    if v.is_instance_of::<PyFloat>() {
        let f: f64 = v.extract()?;
        if f.is_finite() && f.fract() == 0.0 {
            return int(&v.call_method0(intern!(v.py(), "__int__"))?);
        }
    }
    Ok(null())
}

fn string(o: &Bound<'_, PyAny>) -> PyResult<Val> {
    match o.downcast::<PyString>() {
        Ok(s) => Ok(text(s.to_string_lossy())),
        Err(_) => Ok(text(o.str()?.to_string_lossy())),
    }
}

/// A Python int as CEL's: 64 bits, else a double (adapt.py's `plain`).
fn int(o: &Bound<'_, PyAny>) -> PyResult<Val> {
    match o.extract::<i64>() {
        Ok(i) => Ok(cel_int(i)),
        Err(_) => Ok(double(o.extract::<f64>().unwrap_or(f64::INFINITY * sign(o)))),
    }
}

fn sign(o: &Bound<'_, PyAny>) -> f64 {
    if o.lt(0).unwrap_or(false) { -1.0 } else { 1.0 }
}

/// Past this depth a value is not walked further (Python's own recursion limit is lower).
const MAX_DEPTH: u32 = 1000;

/// adapt.py's `plain`: a Python value as CEL takes it.
fn plain(v: &Bound<'_, PyAny>, depth: u32) -> PyResult<Val> {
    if v.is_none() {
        return Ok(null());
    }
    if let Ok(b) = v.downcast::<PyBool>() {
        return Ok(boolean(b.is_true()));
    }
    if v.is_instance_of::<PyString>() {
        return string(v);
    }
    if v.is_instance_of::<PyFloat>() {
        return Ok(double(v.extract()?));
    }
    if v.is_instance_of::<PyInt>() {
        return int(v);
    }
    if depth > MAX_DEPTH {
        return string(v);
    }
    if let Ok(d) = v.downcast::<PyDict>() {
        let mut out = Vec::with_capacity(d.len());
        for (k, x) in d.iter() {
            out.push((k.str()?.to_string_lossy().into_owned(), plain(&x, depth + 1)?));
        }
        return Ok(map(out));
    }
    if let Ok(l) = v.downcast::<PyList>() {
        return Ok(list(l.iter().map(|x| plain(&x, depth + 1)).collect::<PyResult<_>>()?));
    }
    if let Ok(t) = v.downcast::<PyTuple>() {
        return Ok(list(t.iter().map(|x| plain(&x, depth + 1)).collect::<PyResult<_>>()?));
    }
    if v.get_type().name()?.to_str()? == "mappingproxy" {
        let m = v.downcast::<PyMapping>()?;
        let mut out = Vec::new();
        for item in m.items()?.iter() {
            let (k, x): (Bound<'_, PyAny>, Bound<'_, PyAny>) = item.extract()?;
            out.push((k.str()?.to_string_lossy().into_owned(), plain(&x, depth + 1)?));
        }
        return Ok(map(out));
    }
    string(v)
}

/// A CEL value as Python's (for the tests' comparisons with adapt.py's maps).
fn to_python<'py>(py: Python<'py>, v: &cel::Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        cel::Value::Null => py.None().into_bound(py),
        cel::Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        cel::Value::Int(i) => i.into_pyobject(py)?.into_any(),
        cel::Value::UInt(u) => u.into_pyobject(py)?.into_any(),
        cel::Value::Float(f) => f.into_pyobject(py)?.into_any(),
        cel::Value::String(s) => PyString::new(py, s).into_any(),
        cel::Value::List(l) => PyList::new(py, l.iter().map(|x| to_python(py, x)).collect::<PyResult<Vec<_>>>()?)?
            .into_any(),
        cel::Value::Map(m) => {
            let d = PyDict::new(py);
            for (k, x) in m.map.iter() {
                let key = match k {
                    cel::objects::Key::String(s) => PyString::new(py, s).into_any(),
                    cel::objects::Key::Int(i) => i.into_pyobject(py)?.into_any(),
                    cel::objects::Key::Uint(u) => u.into_pyobject(py)?.into_any(),
                    cel::objects::Key::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
                };
                d.set_item(key, to_python(py, x)?)?;
            }
            d.into_any()
        }
        other => PyString::new(py, &format!("{other:?}")).into_any(),
    })
}

fn seq<'py>(spans: &Bound<'py, PyAny>) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = spans.downcast::<PyList>() {
        return Ok(l.iter().collect());
    }
    if let Ok(t) = spans.downcast::<PyTuple>() {
        return Ok(t.iter().collect());
    }
    spans.try_iter()?.collect()
}

/// A file's run rules: `RunRules(sources, patterns, steps, calls)`. `evaluate(steps, rest)`
/// gives (matched, error) per rule on the run's map: `rest` (adapt.py's `PlainRun` of the
/// fields built in Python, or None) converted, with `steps` and `calls` built here from the
/// run's steps (`Step` records) when `steps` names their fields (None: Python built them)
/// and `calls` is true. `map_of(steps, rest)` is that map in Python (the tests').
///
/// A run's outcomes are kept by what its map is made of (`run_key`): runs alike in their
/// steps' fields the rules read are evaluated once. Not where the rules read a field no two
/// runs share (a step's span id, call id or start), nor where Python built part of the map.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct RunRules {
    rules: Rules,
    /// the step fields to build, by `STEP_FIELDS` bit
    steps: Option<u32>,
    calls: bool,
    /// MISSING_TOOL_ARGUMENTS, MISSING_TOOL_RESULT
    missing: (i64, i64),
    /// outcomes by `run_key`, and the bytes of their keys
    kept: Mutex<(FxHashMap<Vec<u8>, Py<PyTuple>>, usize)>,
}

/// Outcomes kept by run key, at most so many and so many bytes of keys (emptied when full:
/// a workload's runs mostly share a few shapes, so what refills it is what recurs), and
/// the longest key kept.
const MAX_RUN_KEYS: usize = 4096;
const MAX_RUN_KEPT_BYTES: usize = 1 << 20;
const MAX_RUN_KEY_BYTES: usize = 4096;

/// The step fields built here: those read off a `Step` record alone (adapt.py's `_STEP_PLAIN`).
const STEP_FIELDS: [&str; 12] = [
    "index", "tool", "arguments", "args", "result", "ok", "status", "span_id", "call_id", "start_ns",
    "arguments_captured", "result_captured",
];

/// `Step`'s items (model/records.py), by place.
mod step {
    pub const INDEX: usize = 0;
    pub const TOOL: usize = 1;
    pub const ARGUMENTS: usize = 2;
    pub const RESULT: usize = 3;
    pub const SPAN_ID: usize = 4;
    pub const CALL_ID: usize = 5;
    pub const START_NS: usize = 6;
    pub const OK: usize = 7;
    pub const MISSING: usize = 8;
}

#[pymethods]
impl RunRules {
    #[new]
    #[pyo3(signature = (sources, patterns, steps=None, calls=false, missing=(8, 16)))]
    fn new(sources: Vec<String>, patterns: Vec<String>, steps: Option<Vec<String>>, calls: bool,
           missing: (i64, i64)) -> PyResult<Self> {
        let steps = match steps {
            None => None,
            Some(names) => Some(names.iter().try_fold(0u32, |m, n| match STEP_FIELDS.iter().position(|f| f == n) {
                Some(i) => Ok(m | 1 << i),
                None => Err(PyValueError::new_err(format!("a step field built in Python: {n}"))),
            })?),
        };
        Ok(RunRules { rules: compiled(sources, patterns)?, steps, calls, missing, kept: Mutex::new((FxHashMap::default(), 0)) })
    }

    /// (matched, error) per rule, a tuple (shared by runs alike: never changed).
    fn evaluate(&self, py: Python<'_>, steps: Bound<'_, PyAny>, rest: Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
        guarded(|| {
            let key = if rest.is_none() { self.run_key(&steps)? } else { None };
            if let Some(k) = &key {
                if let Some(got) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).0.get(k) {
                    return Ok(got.clone_ref(py));
                }
            }
            let bound = self.rules.bind("run", self.run_map(py, &steps, &rest)?);
            let got = PyTuple::new(py, (0..self.rules.len()).map(|i| outcome_pair(bound.evaluate(i))))?.unbind();
            if let Some(k) = key {
                self.keep(py, k, &got);
            }
            Ok(got)
        })
    }

    /// `evaluate` on `run`'s steps: read from the core's own (`Step`s as facts.rs made
    /// them, never made Python objects) when Python built nothing of the map, the rules read
    /// only fields runs may share, and the steps were not set by hand; else `run.steps`.
    fn evaluate_run(&self, py: Python<'_>, run: Bound<'_, PyAny>, rest: Bound<'_, PyAny>) -> PyResult<Py<PyTuple>> {
        if rest.is_none() && self.steps.unwrap_or(0) & !SHARED == 0 {
            let got = guarded(|| crate::run::own_steps(&run, |steps| self.evaluate_core(py, steps)))?;
            if let Some(got) = got {
                return Ok(got);
            }
        }
        self.evaluate(py, run.getattr(intern!(py, "steps"))?, rest)
    }

    /// `run`'s map as `evaluate_run` builds it from the core's steps (None: they were set by
    /// hand), in Python: the tests compare it with `map_of` on the Python steps.
    fn core_map_of<'py>(&self, py: Python<'py>, run: Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyAny>>> {
        let v = crate::run::own_steps(&run, |steps| self.core_map(py, steps))?;
        v.map(|v| to_python(py, &value_of(&v).ok_or_else(|| PyValueError::new_err("a value with no Value"))?))
            .transpose()
    }

    fn map_of<'py>(&self, py: Python<'py>, steps: Bound<'py, PyAny>, rest: Bound<'py, PyAny>)
                   -> PyResult<Bound<'py, PyAny>> {
        let v = self.run_map(py, &steps, &rest)?;
        to_python(py, &value_of(&v).ok_or_else(|| PyValueError::new_err("a value with no Value"))?)
    }
}

/// The step fields two runs may share (not `span_id`, `call_id`, `start_ns`): runs are
/// keyed, and their maps built from the core's steps, only when the rules read no others.
const SHARED: u32 = !(1 << 7 | 1 << 8 | 1 << 9);

impl RunRules {
    /// The outcomes on a run whose steps are the core's: kept by `core_key`, as `evaluate`.
    fn evaluate_core(&self, py: Python<'_>, steps: &[Step]) -> PyResult<Py<PyTuple>> {
        let key = self.core_key(steps);
        if let Some(k) = &key {
            if let Some(got) = self.kept.lock().unwrap_or_else(|e| e.into_inner()).0.get(k) {
                return Ok(got.clone_ref(py));
            }
        }
        let bound = self.rules.bind("run", self.core_map(py, steps)?);
        let got = PyTuple::new(py, (0..self.rules.len()).map(|i| outcome_pair(bound.evaluate(i))))?.unbind();
        if let Some(k) = key {
            self.keep(py, k, &got);
        }
        Ok(got)
    }

    fn keep(&self, py: Python<'_>, k: Vec<u8>, got: &Py<PyTuple>) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let (keys, bytes) = &mut *kept;
        if keys.len() >= MAX_RUN_KEYS || *bytes + k.len() > MAX_RUN_KEPT_BYTES {
            keys.clear();
            *bytes = 0;
        }
        *bytes += k.len();
        keys.insert(k, got.clone_ref(py));
    }

    /// `run_key` of the core's steps: the same items, read off them, under a tag of its own
    /// (a key of either kind never equals one of the other).
    fn core_key(&self, steps: &[Step]) -> Option<Vec<u8>> {
        let wanted = self.steps.unwrap_or(0);
        let mut key = Vec::with_capacity(9 + steps.len() * 16);
        key.push(b'C');
        key.extend_from_slice(&(steps.len() as u64).to_le_bytes());
        let text = |t: &[u8], key: &mut Vec<u8>| {
            key.extend_from_slice(&(t.len() as u64).to_le_bytes());
            key.extend_from_slice(t);
        };
        for st in steps {
            key.push(b'|');
            if wanted & 1 << 0 != 0 {
                key.extend_from_slice(&(st.index as u64).to_le_bytes());
            }
            if wanted & 1 << 1 != 0 {
                text(&st.tool, &mut key);
            }
            if wanted & (1 << 2 | 1 << 3) != 0 {
                text(&st.arguments, &mut key);
            }
            if wanted & 1 << 4 != 0 {
                text(&st.result, &mut key);
            }
            if wanted & (1 << 5 | 1 << 6) != 0 {
                key.push(st.ok as u8);
            }
            if wanted & (1 << 10 | 1 << 11) != 0 {
                key.extend_from_slice(&st.missing.to_le_bytes());
            }
            if self.calls {
                text(&st.tool, &mut key);
            }
            if key.len() > MAX_RUN_KEY_BYTES {
                return None;
            }
        }
        Some(key)
    }

    /// `run_map` of the core's steps: each field as `step_map` reads it off the Python
    /// step write_facts (run/mod.rs) makes of it (texts lossily, as a Python str's), the
    /// fields runs may share only.
    fn core_map(&self, py: Python<'_>, steps: &[Step]) -> PyResult<Val> {
        let mut out: Vec<(String, Val)> = Vec::with_capacity(2);
        let lossy = |t: &[u8]| text(String::from_utf8_lossy(t));
        if let Some(wanted) = self.steps {
            let mut list_ = Vec::with_capacity(steps.len());
            for st in steps {
                let mut m = Vec::with_capacity(wanted.count_ones() as usize);
                for (b, f) in STEP_FIELDS.iter().enumerate() {
                    if wanted & (1 << b) == 0 {
                        continue;
                    }
                    let v = match *f {
                        "index" => cel_int(st.index as i64),
                        "tool" => lossy(&st.tool),
                        "arguments" => lossy(&st.arguments),
                        "args" => match std::str::from_utf8(&st.arguments).ok().and_then(args_value) {
                            Some(v) => v,
                            None => plain(&py.import("faultgate_stream.checks.plugins.adapt")?.getattr("plain_args")?
                                .call1((py_text(py, &st.arguments)?,))?, 0)?,
                        },
                        "result" => lossy(&st.result),
                        "ok" => boolean(st.ok),
                        "status" => constant(if st.ok { "ok" } else { "error" }),
                        "arguments_captured" => boolean(i64::from(st.missing) & self.missing.0 == 0),
                        "result_captured" => boolean(i64::from(st.missing) & self.missing.1 == 0),
                        _ => continue,  // span_id, call_id, start_ns: never asked for here (SHARED)
                    };
                    m.push((*f, v));
                }
                list_.push(fields(m));
            }
            out.push(("steps".to_owned(), list(list_)));
        }
        if self.calls {
            let mut counts: Vec<(String, i64)> = Vec::new();
            for st in steps {
                let tool = String::from_utf8_lossy(&st.tool);
                match counts.iter_mut().find(|(t, _)| *t == tool) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((tool.into_owned(), 1)),
                }
            }
            out.push(("calls".to_owned(), map(counts.into_iter().map(|(t, n)| (t, cel_int(n))))));
        }
        Ok(map(out))
    }

    fn run_map(&self, py: Python<'_>, steps: &Bound<'_, PyAny>, rest: &Bound<'_, PyAny>) -> PyResult<Val> {
        let mut out: Vec<(String, Val)> = Vec::new();
        if !rest.is_none() {
            for (k, v) in rest.downcast::<PyDict>()?.iter() {
                out.push((k.str()?.to_string_lossy().into_owned(), plain(&v, 0)?));
            }
        }
        if self.steps.is_none() && !self.calls {
            return Ok(map(out));
        }
        let items = seq(steps)?;
        if let Some(wanted) = self.steps {
            let mut list_ = Vec::with_capacity(items.len());
            for st in &items {
                list_.push(self.step_map(py, st.downcast::<PyTuple>()?, wanted)?);
            }
            out.push(("steps".to_owned(), list(list_)));
        }
        if self.calls {
            let mut counts: Vec<(String, i64)> = Vec::new();
            for st in &items {
                let tool = st.downcast::<PyTuple>()?.get_item(step::TOOL)?;
                let tool = tool.str()?;
                let tool = tool.to_string_lossy();
                match counts.iter_mut().find(|(t, _)| *t == tool) {
                    Some((_, n)) => *n += 1,
                    None => counts.push((tool.into_owned(), 1)),
                }
            }
            out.push(("calls".to_owned(), map(counts.into_iter().map(|(t, n)| (t, cel_int(n))))));
        }
        Ok(map(out))
    }

    /// What the run's map is made of, when the rules read only what runs may share: per
    /// step, the items each built field reads (each tagged by type: a value of another type
    /// makes no key), and for `calls` its tool. None: the run is evaluated unkept.
    fn run_key(&self, steps: &Bound<'_, PyAny>) -> PyResult<Option<Vec<u8>>> {
        let wanted = self.steps.unwrap_or(0);
        if wanted & !SHARED != 0 {
            return Ok(None);
        }
        let items = seq(steps)?;
        let mut key = Vec::with_capacity(9 + items.len() * 16);
        key.push(b'P');  // a key of Python steps (`core_key`'s are tagged C)
        key.extend_from_slice(&(items.len() as u64).to_le_bytes());
        // the step items each built field reads (`step_map`), in `STEP_FIELDS`' order
        const READS: [(u32, usize); 9] = [
            (1 << 0, step::INDEX), (1 << 1, step::TOOL), (1 << 2 | 1 << 3, step::ARGUMENTS), (1 << 4, step::RESULT),
            (1 << 5 | 1 << 6, step::OK), (1 << 7, step::SPAN_ID), (1 << 8, step::CALL_ID), (1 << 9, step::START_NS),
            (1 << 10 | 1 << 11, step::MISSING),
        ];
        for st in &items {
            let st = st.downcast::<PyTuple>()?;
            key.push(b'|');
            for (bits, item) in READS {
                if wanted & bits != 0 && !tagged(&st.get_item(item)?, &mut key)? {
                    return Ok(None);
                }
            }
            if self.calls && !tagged(&st.get_item(step::TOOL)?, &mut key)? {
                return Ok(None);
            }
            if key.len() > MAX_RUN_KEY_BYTES {
                return Ok(None);
            }
        }
        Ok(Some(key))
    }

    /// adapt.py's `_STEP_PLAIN`, field by field.
    fn step_map(&self, py: Python<'_>, st: &Bound<'_, PyTuple>, wanted: u32) -> PyResult<Val> {
        let mut out = Vec::with_capacity(wanted.count_ones() as usize);
        for (b, f) in STEP_FIELDS.iter().enumerate() {
            if wanted & (1 << b) == 0 {
                continue;
            }
            let v = match *f {
                "index" => int(&st.get_item(step::INDEX)?)?,
                "tool" => plain(&st.get_item(step::TOOL)?, 0)?,
                "arguments" => plain(&st.get_item(step::ARGUMENTS)?, 0)?,
                "args" => {
                    let a = st.get_item(step::ARGUMENTS)?;
                    let parsed = a.downcast::<PyString>().ok().and_then(|t| t.to_str().ok()).and_then(args_value);
                    match parsed {
                        Some(v) => v,
                        None => plain(&py.import("faultgate_stream.checks.plugins.adapt")?
                            .getattr("plain_args")?.call1((a,))?, 0)?,
                    }
                }
                "result" => plain(&st.get_item(step::RESULT)?, 0)?,
                "ok" => plain(&st.get_item(step::OK)?, 0)?,
                "status" => constant(if st.get_item(step::OK)?.is_truthy()? { "ok" } else { "error" }),
                "span_id" => plain(&st.get_item(step::SPAN_ID)?, 0)?,
                "call_id" => plain(&st.get_item(step::CALL_ID)?, 0)?,
                "start_ns" => plain(&st.get_item(step::START_NS)?, 0)?,
                "arguments_captured" | "result_captured" => {
                    let flag = if *f == "arguments_captured" { self.missing.0 } else { self.missing.1 };
                    boolean(st.get_item(step::MISSING)?.extract::<i64>()? & flag == 0)
                }
                _ => continue,
            };
            out.push((*f, v));
        }
        Ok(fields(out))
    }
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SpanRules>()?;
    m.add_class::<RunRules>()?;
    Ok(())
}
