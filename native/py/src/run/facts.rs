//! A run's facts (model/run.py): one pass over `run.spans`, on the first use of any fact,
//! and every fact is written into the run's `__dict__`, where Python finds it from then on
//! without a call (the class attributes are non-data descriptors, `RunFact`).
//!
//! The facts, as model/run.py documents them: `steps` (tool spans, or the model's calls in
//! a chat-only run), `prompt`, `answer` (not counting what a failed nested agent said),
//! `agent`, `agent_version`, `scenario`, `termination`, `usage_tokens`, `latency_ms`, `cost_usd`,
//! `missing`, `has_content`, `answer_not_captured`, `calls_not_captured`, `last_end_ns`,
//! `span_ids`. A fact already
//! in the run's `__dict__` is kept (a test may set `steps` by hand).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyFrozenSet, PyInt, PyList, PyString, PyTuple};
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};

use super::record::*;
use super::steps::{StepItem, StepsView};
use crate::checks::text;

const AGENT_VERSION: &str = "gen_ai.agent.version";
const SERVICE_VERSION: &str = "service.version";
const TERMINATION: &str = "faultgate.termination";
const STEP_MISSING: i64 = MISSING_TOOL_ARGUMENTS | MISSING_TOOL_RESULT;
// Counts and costs are what senders wrote: doubles may be inf or NaN, JSON integers may
// have thousands of digits. None of those is a measure (issue 9, defect 1); a count is
// capped where a float still holds it.
const MAX_COUNT: i128 = 1 << 53;

/// One span's fields the facts read.
struct Span<'py> {
    span_id: Bound<'py, PyString>,
    parent_id: Bound<'py, PyAny>,
    start_ns: Bound<'py, PyAny>,
    status_code: i64,
    is_agent: bool,
    attrs: Attrs<'py>,
    tool: Option<Bound<'py, PyTuple>>,
    calls: Bound<'py, PyTuple>,
    missing: i64,
}

/// A span's fields for the facts, and what the checks keep of it.
fn read_span<'py>(s: &Bound<'py, PyTuple>) -> PyResult<(Span<'py>, SpanItem)> {
    let tool = item(s, TOOL)?;
    let operation = item(s, OPERATION)?;
    let span = Span {
        span_id: str_item(s, SPAN_ID)?,
        parent_id: item(s, PARENT_ID)?,
        start_ns: item(s, START_NS)?,
        status_code: int_item(s, STATUS_CODE)?,
        is_agent: operation.downcast::<PyString>().map_or(Ok(false), |o| o.to_str().map(|o| o == INVOKE_AGENT))?,
        attrs: Attrs::of(&item(s, ATTRS)?)?,
        tool: if tool.is_none() { None } else { Some(tool.downcast_into::<PyTuple>()?) },
        calls: tuple_item(s, CALLS)?,
        missing: int_item(s, MISSING)?,
    };
    let kept = SpanItem {
        span_id: span.span_id.clone().unbind(),
        name: str_item(s, NAME)?.unbind(),
        tool_name: span.tool.as_ref().map(|t| str_item(t, TOOL_NAME).map(Bound::unbind)).transpose()?,
        status_error: span.status_code == 2,
        error_type: match &span.attrs.error_type {
            Some(v) if v.is_truthy()? => Some(py_str(v)?.unbind()),
            _ => None,
        },
        status_message: str_item(s, STATUS_MESSAGE)?.unbind(),
        finish_reasons: tuple_item(s, FINISH_REASONS)?.unbind(),
        missing: span.missing,
    };
    Ok((span, kept))
}

fn bytes_of(s: &Bound<'_, PyString>) -> PyResult<Vec<u8>> {
    Ok(text::read(s)?.0.into_owned())
}

fn is_blank(s: &Bound<'_, PyString>) -> PyResult<bool> {
    Ok(text::strip(text::read(s)?.bytes()).is_empty())
}

/// `_finite(v)`: a number that is a measure, as a float; None for anything else.
fn finite(v: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
    if v.downcast::<PyBool>().is_ok() {
        return Ok(None);
    }
    if v.downcast::<PyInt>().is_ok() {
        if let Ok(n) = v.extract::<i64>() {
            return Ok(if (-(MAX_COUNT as i64)..=MAX_COUNT as i64).contains(&n) { Some(n as f64) } else { None });
        }
        return Ok(match v.extract::<i128>() {
            Ok(n) if (-MAX_COUNT..=MAX_COUNT).contains(&n) => Some(n as f64),
            _ => None,
        });
    }
    if let Ok(f) = v.downcast::<PyFloat>() {
        let x = f.value();
        return Ok(if x.is_finite() { Some(x) } else { None });
    }
    Ok(None)
}

/// A sum of token counts as Python adds `int(f)` of each: exact integers, whatever the
/// size a sender wrote (a double of 1e300 is a 301-digit int there).
enum Tokens<'py> {
    Small(i128),
    Big(Bound<'py, PyAny>),
}

impl<'py> Tokens<'py> {
    fn add(&mut self, py: Python<'py>, f: f64) -> PyResult<()> {
        if let Tokens::Small(n) = self {
            if f.abs() < 1e30 && n.abs() < 1i128 << 120 {
                *n += f as i128; // int(f): toward zero, exact below 2**127
                return Ok(());
            }
            let sum = *n;
            *self = Tokens::Big(sum.into_pyobject(py)?.into_any());
        }
        if let Tokens::Big(total) = self {
            let whole = py.get_type::<PyInt>().call1((f,))?;
            *total = total.add(whole)?;
        }
        Ok(())
    }

    fn float(&self, py: Python<'py>) -> PyResult<f64> {
        let _ = py;
        match self {
            Tokens::Small(n) => Ok(*n as f64), // nearest, ties to even, as float(int)
            Tokens::Big(total) => total.extract::<f64>(),
        }
    }
}

/// The tool span id -> the call id of the model's call it executed, for spans that carry
/// no call id of their own: the k-th such span of a tool is the k-th call of that tool the
/// messages name that no span claims by id (both in start order).
fn pair_id_less_spans<'py>(spans: &[Span<'py>], tool_spans: &[usize])
                           -> PyResult<HashMap<Vec<u8>, Bound<'py, PyString>>> {
    let mut claimed: HashSet<Vec<u8>> = HashSet::default();
    for &i in tool_spans {
        let cid = str_item(spans[i].tool.as_ref().unwrap(), TOOL_CALL_ID)?;
        if !cid.to_str().map_or(false, str::is_empty) {
            claimed.insert(bytes_of(&cid)?);
        }
    }
    let mut calls: HashMap<Vec<u8>, Vec<Bound<'py, PyString>>> = HashMap::default();
    for s in spans {
        for c in s.calls.iter() {
            let c = c.downcast_into::<PyTuple>()?;
            let cid = str_item(&c, CALL_ID)?;
            if text::read(&cid)?.bytes().is_empty() {
                continue;
            }
            if !claimed.contains(text::read(&cid)?.bytes()) {
                calls.entry(bytes_of(&str_item(&c, CALL_NAME)?)?).or_default().push(cid);
            }
        }
    }
    let mut out = HashMap::default();
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::default();
    for &i in tool_spans {
        let t = spans[i].tool.as_ref().unwrap();
        if !text::read(&str_item(t, TOOL_CALL_ID)?)?.bytes().is_empty() {
            continue;
        }
        let name = bytes_of(&str_item(t, TOOL_NAME)?)?;
        let k = seen.get(&name).copied().unwrap_or(0);
        if let Some(ids) = calls.get(&name) {
            if k < ids.len() {
                out.insert(bytes_of(&spans[i].span_id)?, ids[k].clone());
            }
        }
        seen.insert(name, k + 1);
    }
    Ok(out)
}

/// The steps and their view: one step per tool span when the run has tool spans, else
/// one per call its model spans name.
fn steps<'py>(py: Python<'py>, rows: &[Bound<'py, PyTuple>], spans: &[Span<'py>])
              -> PyResult<(Bound<'py, PyTuple>, Vec<StepItem>)> {
    // A call's result is the last tool_call_response carrying its id.
    let mut responses: HashMap<Vec<u8>, Bound<'py, PyString>> = HashMap::default();
    for r in rows {
        for pair in tuple_item(r, RESPONSES)?.iter() {
            let pair = pair.downcast_into::<PyTuple>()?;
            responses.insert(bytes_of(&str_item(&pair, 0)?)?, str_item(&pair, 1)?);
        }
    }
    let tool_spans: Vec<usize> = (0..spans.len()).filter(|&i| spans[i].tool.is_some()).collect();
    let mut out = Vec::with_capacity(spans.len());
    let mut items = Vec::with_capacity(spans.len());
    let empty = PyString::new(py, "");
    if !tool_spans.is_empty() {
        // What a tool span did not record, the model's messages may hold under its call
        // id (content only in the messages, or in log events: util-genai's event_only).
        let mut named: HashMap<Vec<u8>, Bound<'py, PyTuple>> = HashMap::default();
        for s in spans {
            for c in s.calls.iter() {
                let c = c.downcast_into::<PyTuple>()?;
                let cid = bytes_of(&str_item(&c, CALL_ID)?)?;
                if !cid.is_empty() {
                    named.insert(cid, c);
                }
            }
        }
        let paired = if named.is_empty() { HashMap::default() } else { pair_id_less_spans(spans, &tool_spans)? };
        for (n, &i) in tool_spans.iter().enumerate() {
            let s = &spans[i];
            let t = s.tool.as_ref().unwrap();
            let own = str_item(t, TOOL_CALL_ID)?;
            let call_id = if !text::read(&own)?.bytes().is_empty() {
                own
            } else {
                paired.get(text::read(&s.span_id)?.bytes()).cloned().unwrap_or_else(|| empty.clone())
            };
            let mut args = str_item(t, TOOL_ARGUMENTS)?;
            let mut result = str_item(t, TOOL_RESULT)?;
            let mut missing = s.missing & STEP_MISSING;
            let cid = bytes_of(&call_id)?;
            if !cid.is_empty() {
                if missing & MISSING_TOOL_ARGUMENTS != 0 || text::read(&args)?.bytes().is_empty() {
                    if let Some(c) = named.get(&cid) {
                        args = str_item(c, CALL_ARGUMENTS)?;
                        missing &= !MISSING_TOOL_ARGUMENTS;
                    }
                }
                if missing & MISSING_TOOL_RESULT != 0 || text::read(&result)?.bytes().is_empty() {
                    if let Some(r) = responses.get(&cid) {
                        result = r.clone();
                        missing &= !MISSING_TOOL_RESULT;
                    }
                }
            }
            let index = (n + 1) as i64;
            let name = str_item(t, TOOL_NAME)?;
            let ok = s.status_code != 2;
            items.push(StepItem { index, tool: name.clone().unbind(), arguments: args.clone().unbind(),
                                  result: result.clone().unbind(), span_id: s.span_id.clone().unbind(), missing });
            out.push(new_step(py, [index.into_pyobject(py)?.into_any(), name.into_any(), args.into_any(),
                                   result.into_any(), s.span_id.clone().into_any(), call_id.into_any(),
                                   s.start_ns.clone(), PyBool::new(py, ok).to_owned().into_any(),
                                   missing.into_pyobject(py)?.into_any()])?);
        }
        return Ok((PyTuple::new(py, out)?, items));
    }
    // A chat-only run: each call its model spans name, with the result that carries its id.
    // Ordered by (start, span id, the call's place in its span): spans are in (start, span
    // id) order already, so only spans sharing both interleave their calls.
    let mut i = 0;
    while i < spans.len() {
        let mut j = i + 1;
        while j < spans.len() && spans[j].span_id.as_any().eq(spans[i].span_id.as_any())? && spans[j].start_ns.eq(&spans[i].start_ns)? {
            j += 1;
        }
        let mut group: Vec<(usize, usize, Bound<'py, PyTuple>, &Span<'py>)> = Vec::new();
        for (k, s) in spans[i..j].iter().enumerate() {
            for (n, c) in s.calls.iter().enumerate() {
                group.push((n, k, c.downcast_into::<PyTuple>()?, s));
            }
        }
        group.sort_by_key(|g| (g.0, g.1));
        for (_, _, c, s) in group {
            let cid = str_item(&c, CALL_ID)?;
            let result = responses.get(text::read(&cid)?.bytes()).cloned().unwrap_or_else(|| empty.clone());
            let ok = !text::read(&result)?.bytes().starts_with(b"Error: ");
            let index = (out.len() + 1) as i64;
            let name = str_item(&c, CALL_NAME)?;
            let args = str_item(&c, CALL_ARGUMENTS)?;
            items.push(StepItem { index, tool: name.clone().unbind(), arguments: args.clone().unbind(),
                                  result: result.clone().unbind(), span_id: s.span_id.clone().unbind(), missing: 0 });
            out.push(new_step(py, [index.into_pyobject(py)?.into_any(), name.into_any(), args.into_any(),
                                   result.into_any(), s.span_id.clone().into_any(), cid.into_any(),
                                   s.start_ns.clone(), PyBool::new(py, ok).to_owned().into_any(),
                                   0i64.into_pyobject(py)?.into_any()])?);
        }
        i = j;
    }
    Ok((PyTuple::new(py, out)?, items))
}

/// The final answer: the root's, else the last span's that has one, not counting what was
/// said inside an agent that ended in error (a nested `invoke_agent` that failed did not
/// answer, whatever its model said last).
fn answer<'py>(py: Python<'py>, rows: &[Bound<'py, PyTuple>], spans: &[Span<'py>], root: Option<&Bound<'py, PyTuple>>)
               -> PyResult<Bound<'py, PyString>> {
    if let Some(r) = root {
        let a = str_item(r, ANSWER)?;
        if !is_blank(&a)? {
            return Ok(a);
        }
    }
    let mut failed: HashSet<Vec<u8>> = HashSet::default();
    for s in spans {
        if s.is_agent && s.status_code == 2 {
            failed.insert(bytes_of(&s.span_id)?);
        }
    }
    let mut parent_of: HashMap<Vec<u8>, Option<Vec<u8>>> = HashMap::default();
    if !failed.is_empty() {
        for s in spans {
            let parent = if s.parent_id.is_none() { None } else { Some(bytes_of(s.parent_id.downcast::<PyString>()?)?) };
            parent_of.insert(bytes_of(&s.span_id)?, parent);
        }
    }
    let inside_failed = |sid: Vec<u8>| -> bool {
        let mut sid = Some(sid);
        for _ in 0..parent_of.len() + 1 {
            let Some(id) = sid else { return false };
            if failed.contains(&id) {
                return true;
            }
            sid = parent_of.get(&id).cloned().flatten();
        }
        false
    };
    for (row, s) in rows.iter().zip(spans).rev() {
        let a = str_item(row, ANSWER)?;
        if is_blank(&a)? {
            continue;
        }
        if failed.is_empty() || !inside_failed(bytes_of(&s.span_id)?) {
            return Ok(a);
        }
    }
    Ok(PyString::new(py, ""))
}

/// `Run.latency_ms`: the root's duration, else from the first start to the last end, in
/// Python's own integer arithmetic (times are what senders wrote, of any size).
fn latency_ms<'py>(py: Python<'py>, rows: &[Bound<'py, PyTuple>], root: Option<&Bound<'py, PyTuple>>)
                   -> PyResult<Option<f64>> {
    if let Some(r) = root {
        let (start, end) = (item(r, START_NS)?, item(r, END_NS)?);
        if end.is_truthy()? && start.is_truthy()? && end.ge(&start)? {
            return Ok(Some(end.sub(&start)?.extract::<f64>()? / 1e6));
        }
    }
    let (mut first, mut last): (Option<Bound<'py, PyAny>>, Option<Bound<'py, PyAny>>) = (None, None);
    for r in rows {
        let (start, end) = (item(r, START_NS)?, item(r, END_NS)?);
        if end.is_truthy()? && last.as_ref().map_or(Ok(true), |l| end.gt(l))? {
            last = Some(end);
        }
        if start.is_truthy()? && first.as_ref().map_or(Ok(true), |f| start.lt(f))? {
            first = Some(start);
        }
    }
    match (first, last) {
        (Some(f), Some(l)) if l.ge(&f)? => Ok(Some(l.sub(&f)?.extract::<f64>()? / 1e6)),
        _ => {
            let _ = py;
            Ok(None)
        }
    }
}

fn root_attr<'py>(root: Option<&Bound<'py, PyTuple>>, key: &Bound<'py, PyString>) -> PyResult<Option<Bound<'py, PyAny>>> {
    match root {
        Some(r) => attr(&item(r, ATTRS)?, key),
        None => Ok(None),
    }
}

/// `Run.scenario`: the root's explicit scenario, else its agent id, else "p-" and 12 hex
/// digits of the prompt's SHA-256 (faultgate's key), a lone surrogate encoded with
/// ``surrogatepass`` (plain UTF-8 refuses it, and the run got no verdict).
fn scenario<'py>(py: Python<'py>, root: Option<&Bound<'py, PyTuple>>, prompt: &Bound<'py, PyString>)
    -> PyResult<Bound<'py, PyString>> {
    for key in [intern!(py, "faultgate.scenario"), intern!(py, "gen_ai.agent.id")] {
        if let Some(v) = root_attr(root, key)? {
            if v.is_truthy()? {
                return py_str(&v);
            }
        }
    }
    let bytes = prompt.call_method1(intern!(py, "encode"), ("utf-8", "surrogatepass"))?;
    let hex: String = py.import("hashlib")?.call_method1(intern!(py, "sha256"), (bytes,))?
        .call_method0(intern!(py, "hexdigest"))?.extract()?;
    Ok(PyString::new(py, &format!("p-{}", &hex[..12])))
}

/// Every fact of the run, into its `__dict__`.
pub fn compute(run: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = run.py();
    let rows: Vec<Bound<'_, PyTuple>> = run.getattr(intern!(py, "spans"))?.downcast_into::<PyTuple>()?.iter()
        .map(|s| s.downcast_into::<PyTuple>().map_err(PyErr::from)).collect::<PyResult<_>>()?;
    let root_obj = run.getattr(intern!(py, "root"))?;
    let root = if root_obj.is_none() { None } else { Some(root_obj.downcast_into::<PyTuple>()?) };
    let mut spans: Vec<Span<'_>> = Vec::with_capacity(rows.len());
    let mut span_items = Vec::with_capacity(rows.len());
    for r in &rows {
        let (s, kept) = read_span(r)?;
        span_items.push(kept);
        spans.push(s);
    }
    let (steps, items) = steps(py, &rows, &spans)?;
    let derived = run.getattr(intern!(py, "derived"))?.downcast_into::<PyDict>()?;

    // prompt: the root's, else the first span's that has one
    let mut prompt = None;
    if let Some(r) = &root {
        let p = str_item(r, PROMPT)?;
        if !is_blank(&p)? {
            prompt = Some(p);
        }
    }
    if prompt.is_none() {
        for r in &rows {
            let p = str_item(r, PROMPT)?;
            if !is_blank(&p)? {
                prompt = Some(p);
                break;
            }
        }
    }
    let prompt = prompt.unwrap_or_else(|| PyString::new(py, ""));
    let scenario = scenario(py, root.as_ref(), &prompt)?;
    let answer = answer(py, &rows, &spans, root.as_ref())?;

    // agent: the root's name attribute, else the first span's, else the root span's name
    let agent_key = intern!(py, super::record::AGENT_NAME);
    let mut agent = match root_attr(root.as_ref(), agent_key)? {
        Some(v) if v.is_truthy()? => Some(py_str(&v)?),
        _ => None,
    };
    if agent.is_none() {
        for s in &spans {
            if let Some(v) = &s.attrs.agent_name {
                if v.is_truthy()? {
                    agent = Some(py_str(v)?);
                    break;
                }
            }
        }
    }
    let agent = match agent {
        Some(a) => a,
        None => match &root {
            Some(r) if !str_item(r, NAME)?.to_str().map_or(false, str::is_empty) => {
                let name = str_item(r, NAME)?;
                let t = text::read(&name)?;
                let rest = t.bytes().strip_prefix(b"invoke_agent ".as_slice()).unwrap_or(t.bytes());
                let rest = text::strip(rest);
                text::to_py(py, if rest.is_empty() { b"agent".as_slice() } else { rest })?
            }
            _ => PyString::new(py, "agent"),
        },
    };
    let version = root_attr(root.as_ref(), intern!(py, AGENT_VERSION))?;
    let version = match version {
        Some(v) if v.is_truthy()? => Some(v),
        _ => root_attr(root.as_ref(), intern!(py, SERVICE_VERSION))?,
    };
    let agent_version = match version {
        Some(v) if v.is_truthy()? => py_str(&v)?,
        _ => PyString::new(py, ""),
    };
    let termination = match root_attr(root.as_ref(), intern!(py, TERMINATION))? {
        Some(v) => py_str(&v)?,
        None => PyString::new(py, ""),
    };

    // usage, cost, what was not captured
    let mut tokens = Tokens::Small(0);
    let mut counted = false;
    let costs = PyList::empty(py);
    let mut missing = 0i64;
    let (mut no_output, mut any_tool) = (0usize, false);
    for s in &spans {
        missing |= s.missing;
        if s.missing & MISSING_OUTPUT != 0 {
            no_output += 1;
        }
        any_tool |= s.tool.is_some();
        for v in [&s.attrs.usage_in, &s.attrs.usage_out].into_iter().flatten() {
            if let Some(f) = finite(v)? {
                tokens.add(py, f)?;
                counted = true;
            }
        }
        if let Some(v) = &s.attrs.cost {
            if let Some(f) = finite(v)? {
                costs.append(f)?;
            }
        }
    }
    let usage_tokens = if counted { Some(tokens.float(py)?) } else { None };
    // sum() as Python adds floats (3.12 compensates rounding, 3.11 does not): its own
    let cost_usd = if costs.is_empty() {
        None
    } else {
        Some(py.import("builtins")?.getattr("sum")?.call1((costs,))?.extract::<f64>()?)
    };
    let latency = latency_ms(py, &rows, root.as_ref())?;

    let has_content = !text::read(&prompt)?.bytes().is_empty() || !text::read(&answer)?.bytes().is_empty()
        || items.iter().map(|st| -> PyResult<bool> {
            Ok(!text::read(st.arguments.bind(py))?.bytes().is_empty() || !text::read(st.result.bind(py))?.bytes().is_empty())
        }).collect::<PyResult<Vec<bool>>>()?.into_iter().any(|x| x);
    let answer_blank = is_blank(&answer)?;
    let answer_not_captured = if answer_blank && missing & MISSING_OUTPUT != 0 {
        format!("the final answer was not captured (no output messages on {no_output} model span(s))")
    } else {
        String::new()
    };
    let calls_not_captured = if missing & MISSING_OUTPUT != 0 && !any_tool {
        format!("tool calls not captured (no tool spans, and no output messages on {no_output} model span(s))")
    } else {
        String::new()
    };

    // the last end (max's: the first of the largest) and the members' ids, which the verdict
    // records: read here, in the pass over every span, not by a Python loop per run
    let mut last_end: Option<Bound<'_, PyAny>> = None;
    let mut span_ids = Vec::with_capacity(rows.len());
    for r in &rows {
        let end = item(r, END_NS)?;
        if last_end.as_ref().map_or(Ok(true), |m| end.gt(m))? {
            last_end = Some(end);
        }
        span_ids.push(item(r, SPAN_ID)?);
    }
    let last_end_ns = match last_end {
        Some(e) => e,
        None => 0i64.into_pyobject(py)?.into_any(),
    };
    let span_ids = PyFrozenSet::new(py, span_ids.iter())?;

    // into the run's __dict__, each fact unless one is there already (a test may set steps)
    let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
    let steps_set_by_hand = dict.contains(intern!(py, "steps"))?;
    let put = |k: &Bound<'_, PyString>, v: Bound<'_, PyAny>| -> PyResult<()> {
        if dict.contains(k)? {
            return Ok(());
        }
        dict.set_item(k, v)
    };
    if !steps_set_by_hand {
        dict.set_item(intern!(py, "steps"), &steps)?;
    }
    put(intern!(py, "prompt"), prompt.into_any())?;
    put(intern!(py, "answer"), answer.into_any())?;
    put(intern!(py, "agent"), agent.into_any())?;
    put(intern!(py, "scenario"), scenario.into_any())?;
    put(intern!(py, "agent_version"), agent_version.into_any())?;
    put(intern!(py, "termination"), termination.into_any())?;
    put(intern!(py, "usage_tokens"), usage_tokens.into_pyobject(py)?.into_any())?;
    put(intern!(py, "latency_ms"), latency.into_pyobject(py)?.into_any())?;
    put(intern!(py, "cost_usd"), cost_usd.into_pyobject(py)?.into_any())?;
    put(intern!(py, "missing"), missing.into_pyobject(py)?.into_any())?;
    put(intern!(py, "has_content"), PyBool::new(py, has_content).to_owned().into_any())?;
    put(intern!(py, "answer_not_captured"), PyString::new(py, &answer_not_captured).into_any())?;
    put(intern!(py, "calls_not_captured"), PyString::new(py, &calls_not_captured).into_any())?;
    put(intern!(py, "last_end_ns"), last_end_ns)?;
    put(intern!(py, "span_ids"), span_ids.into_any())?;
    if !steps_set_by_hand {
        StepsView::keep(py, &derived, StepsView::new(py, steps.unbind(), items, Some(span_items)))?;
    }
    Ok(())
}

/// `Run.<fact>`: a non-data descriptor, so once the facts are in the run's `__dict__`,
/// Python reads them there and never calls it again for that run.
#[pyclass(frozen, module = "faultgate_stream._native")]
pub struct RunFact {
    name: Py<PyString>,
}

#[pymethods]
impl RunFact {
    #[new]
    fn new(name: Bound<'_, PyString>) -> Self {
        RunFact { name: name.unbind() }
    }

    fn __get__(slf: Bound<'_, Self>, run: Option<Bound<'_, PyAny>>, _owner: Option<Bound<'_, PyAny>>) -> PyResult<PyObject> {
        let py = slf.py();
        let Some(run) = run else { return Ok(slf.into_any().unbind()) };
        let name = slf.get().name.bind(py);
        crate::checks::guarded(|| compute(&run))?;
        let dict = run.getattr(intern!(py, "__dict__"))?.downcast_into::<PyDict>()?;
        match dict.get_item(name)? {
            Some(v) => Ok(v.unbind()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(name.to_string())),
        }
    }
}
