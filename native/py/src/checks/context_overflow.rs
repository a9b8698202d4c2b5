//! context_overflow (checks/context_overflow.py): the run hit the model's context window or
//! output token limit: a finish reason that says the output was cut, or a provider error
//! naming the limit in a span's status message, its `error.type`, a tool result that is
//! an error, or the root's `faultgate.termination`. The phrases are the error forms
//! providers return, matched as Python's `re` matches them (pattern.rs).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;
use pyo3::types::{PyString, PyTuple};
use rustc_hash::FxHashMap as HashMap;

use super::outcome::Outcomes;
use super::pattern::{self, PyPattern, S};
use super::text;
use crate::run::record::{self, FINISH_REASONS, MISSING_FINISH, NAME, SPAN_ID, STATUS_MESSAGE};
use crate::run::steps::StepsView;

const CUTOFF_REASONS: [&str; 5] = ["length", "max_tokens", "max_output_tokens", "model_length",
                                   "model_context_window_exceeded"];

/// faultgate-stream's OVERFLOW, with re.I:
/// `context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)`
/// `|exceeds?\s+the\s+(?:model'?s\s+)?(?:context|token)\s+(?:window|limit)|prompt is too long`
/// `|too many (?:input )?tokens|token limit (?:reached|exceeded)|max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)`
/// `|exceeds?\s+the\s+maximum\s+number\s+of\s+tokens|input is too long for (?:the )?requested model`
fn overflow() -> PyPattern {
    PyPattern::new(&format!(
        "(context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)\
         |exceeds?[{S}]+the[{S}]+(?:model'?s[{S}]+)?(?:context|token)[{S}]+(?:window|limit)|prompt is too long\
         |too many (?:input )?tokens|token limit (?:reached|exceeded)\
         |max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)\
         |exceeds?[{S}]+the[{S}]+maximum[{S}]+number[{S}]+of[{S}]+tokens|input is too long for (?:the )?requested model)"))
}

static OVERFLOW: GILOnceCell<PyPattern> = GILOnceCell::new();

/// Whether an ASCII text may name a limit: every phrase of the pattern holds "context",
/// "token" or "too long", in any case, and each has its first `o` second. So a text with
/// none of them at any `o` is cleared without a search (the common tool result, ~200
/// bytes, in a tenth of the regex's time). A text with other characters is searched: the
/// Kelvin sign is a `k` to Python's `re.I`.
fn may_name_limit(t: &[u8]) -> bool {
    memchr::memchr2_iter(b'o', b'O', t).any(|at| {
        at > 0 && [b"context".as_slice(), b"token", b"too long"].iter()
            .any(|w| t.get(at - 1..at - 1 + w.len()).is_some_and(|x| x.eq_ignore_ascii_case(w)))
    })
}

/// The limit a text names (`OVERFLOW.search(text).group(0)`), as a byte range.
pub fn search(py: Python<'_>, t: &[u8]) -> PyResult<Option<(usize, usize)>> {
    if t.is_empty() || (t.is_ascii() && !may_name_limit(t)) {
        return Ok(None);
    }
    OVERFLOW.get_or_init(py, overflow).search(py, t)
}

fn found<'a>(py: Python<'_>, t: &'a [u8]) -> PyResult<Option<&'a [u8]>> {
    Ok(search(py, t)?.map(|(a, b)| &t[a..b]))
}

/// What one span says of a cut-off ("" for nothing): a finish reason that says so, else a
/// limit named in its status message, else in its `error.type`. Asked of every span twice
/// (as it arrives, and again over the run): the common span, with no such finish reason
/// and no error text, is cleared by a few reads.
fn signal(py: Python<'_>, reasons: &Bound<'_, PyTuple>, message: &Bound<'_, PyString>,
          error_type: Option<&Bound<'_, PyString>>) -> PyResult<Option<String>> {
    for r in reasons.iter() {
        let r = r.downcast_into::<PyString>()?;
        let t = text::read(&r)?;
        if CUTOFF_REASONS.iter().any(|w| pattern::lower_equals(t.bytes(), w.as_bytes())) {
            return Ok(Some(format!("stopped on finish reason {}: output cut at the token limit",
                                   text::repr(py, t.bytes())?)));
        }
    }
    let message = text::read(message)?;
    if let Some(f) = found(py, message.bytes())? {
        return Ok(Some(format!("status: {}", text::repr(py, f)?)));
    }
    if let Some(t) = error_type {
        let t = text::read(t)?;
        if let Some(f) = found(py, t.bytes())? {
            return Ok(Some(format!("error.type: {}", text::repr(py, f)?)));
        }
    }
    Ok(None)
}

fn span_signal(py: Python<'_>, s: &Bound<'_, PyTuple>) -> PyResult<Option<String>> {
    signal(py, &record::tuple_item(s, FINISH_REASONS)?, &record::str_item(s, STATUS_MESSAGE)?,
           record::error_type(s)?.as_ref())
}

/// `observe`: a cut-off is final the moment its span arrives.
pub fn observe<'py>(py: Python<'py>, span: &Bound<'py, PyTuple>) -> PyResult<Option<Bound<'py, PyString>>> {
    let Some(signal) = span_signal(py, span)? else { return Ok(None) };
    let mut out = b"span ".to_vec();
    out.extend_from_slice(text::read(&record::str_item(span, SPAN_ID)?)?.bytes());
    out.extend_from_slice(b" (");
    out.extend_from_slice(text::read(&record::str_item(span, NAME)?)?.bytes());
    out.extend_from_slice(b") ");
    out.extend_from_slice(signal.as_bytes());
    Ok(Some(text::to_py(py, &out)?))
}

pub fn finish(py: Python<'_>, run: &Bound<'_, PyAny>, out: &Outcomes) -> PyResult<PyObject> {
    let view = StepsView::of(run)?;
    let spans = view.get().spans(run)?;
    for (i, s) in spans.iter().enumerate() {
        let signal = signal(py, s.finish_reasons.bind(py), s.status_message.bind(py),
                            s.error_type.as_ref().map(|t| t.bind(py)))?;
        if let Some(signal) = signal {
            let mut r = format!("span {} (", i + 1).into_bytes();
            r.extend_from_slice(text::read(s.name.bind(py))?.bytes());
            r.extend_from_slice(b") ");
            r.extend_from_slice(signal.as_bytes());
            return out.fired(py, &text::to_py(py, &r)?);
        }
    }
    // Whether a result is an error is asked only of results that name a limit; when a check
    // before this one has read the step errors already, a result that is no error and does
    // not start with "Error" is not searched at all (the same answer, and nothing raised
    // that would not have been: the errors were worked out without raising).
    let known = view.get().errors_known(py);
    let mut overflows: HashMap<&[u8], Option<Vec<u8>>> = HashMap::default(); // a run repeats its results
    let results = view.get().items.iter().map(|st| text::read(st.result.bind(py))).collect::<PyResult<Vec<_>>>()?;
    for (i, st) in view.get().items.iter().enumerate() {
        let result = results[i].bytes();
        let error_text = text::lstrip(result).starts_with(b"Error");
        if !error_text && known.is_some_and(|e| e[i].is_none()) {
            continue;
        }
        let f = match overflows.get(result) {
            Some(f) => f.clone(),
            None => {
                let f = found(py, result)?.map(<[u8]>::to_vec);
                overflows.insert(result, f.clone());
                f
            }
        };
        // only results that are errors: a search hit quoting the error text is not an overflow
        let Some(f) = f else { continue };
        if error_text || view.get().errors(py)?[i].is_some() {
            let mut r = format!("step {} (", st.index).into_bytes();
            r.extend_from_slice(text::read(st.tool.bind(py))?.bytes());
            r.extend_from_slice(format!(") result: {}", text::repr(py, &f)?).as_bytes());
            return out.fired(py, &text::to_py(py, &r)?);
        }
    }
    let termination = run.getattr(intern!(py, "termination"))?.downcast_into::<PyString>()?;
    let termination = text::read(&termination)?;
    if let Some(f) = found(py, termination.bytes())? {
        return out.fired(py, &PyString::new(py, &format!("run terminated: {}", text::repr(py, f)?)));
    }
    let n = spans.iter().filter(|s| s.missing & MISSING_FINISH != 0).count();
    if n > 0 {
        return out.undecided(py, format!("finish reasons not recorded on {n} model span(s)"));
    }
    out.passed(py, "no context overflow or token cutoff")
}
