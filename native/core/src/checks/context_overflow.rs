//! context_overflow (checks/context_overflow.py): the run hit the model's context window or
//! output token limit: a finish reason that says the output was cut, or a provider error
//! naming the limit in a span's status message, its `error.type`, a tool result that is
//! an error, or the root's `faultgate.termination`. The phrases are the error forms
//! providers return, matched as Python's `re` matches them (pattern.rs).

use std::sync::LazyLock;

use rustc_hash::FxHashMap as HashMap;

use super::pattern::{PyPattern, S};
use super::{Arrival, Judged, Outcome};
use crate::error::Result;
use crate::model::record::{SpanRecord, MISSING_FINISH};
use crate::pyfmt::strs::{lower_equals, lstrip, repr_string};
use crate::run::facts::error_type;

pub const ID: &str = "context_overflow";

const CUTOFF_REASONS: [&str; 5] = ["length", "max_tokens", "max_output_tokens", "model_length",
                                   "model_context_window_exceeded"];

/// faultgate-stream's OVERFLOW, with re.I:
/// `context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)`
/// `|exceeds?\s+the\s+(?:model'?s\s+)?(?:context|token)\s+(?:window|limit)|prompt is too long`
/// `|too many (?:input )?tokens|token limit (?:reached|exceeded)|max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)`
/// `|exceeds?\s+the\s+maximum\s+number\s+of\s+tokens|input is too long for (?:the )?requested model`
static OVERFLOW: LazyLock<PyPattern> = LazyLock::new(|| {
    PyPattern::new(&format!(
        "(context[ _-]?length[ _-]?exceeded|maximum context length|context[ _-]?window[ _-]?(?:exceeded|overflow)\
         |exceeds?[{S}]+the[{S}]+(?:model'?s[{S}]+)?(?:context|token)[{S}]+(?:window|limit)|prompt is too long\
         |too many (?:input )?tokens|token limit (?:reached|exceeded)\
         |max(?:imum)?[ _-]?tokens? (?:limit )?(?:reached|exceeded)\
         |exceeds?[{S}]+the[{S}]+maximum[{S}]+number[{S}]+of[{S}]+tokens|input is too long for (?:the )?requested model)"))
});

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
pub fn search(t: &[u8]) -> Option<(usize, usize)> {
    if t.is_empty() || (t.is_ascii() && !may_name_limit(t)) {
        return None;
    }
    OVERFLOW.search(t)
}

fn found(t: &[u8]) -> Option<&[u8]> {
    search(t).map(|(a, b)| &t[a..b])
}

/// What one span says of a cut-off: a finish reason that says so, else a limit named in
/// its status message, else in its `error.type`. Asked of every span twice (as it
/// arrives, and again over the run): the common span, with no such finish reason and no
/// error text, is cleared by a few reads.
fn signal<R: AsRef<[u8]>>(finish_reasons: &[R], status_message: &[u8], error_type: Option<&[u8]>) -> Option<String> {
    for r in finish_reasons {
        let r = r.as_ref();
        if CUTOFF_REASONS.iter().any(|w| lower_equals(r, w.as_bytes())) {
            return Some(format!("stopped on finish reason {}: output cut at the token limit", repr_string(r)));
        }
    }
    if let Some(f) = found(status_message) {
        return Some(format!("status: {}", repr_string(f)));
    }
    if let Some(f) = error_type.and_then(found) {
        return Some(format!("error.type: {}", repr_string(f)));
    }
    None
}

fn span_signal(s: &SpanRecord) -> Option<String> {
    signal(&s.fields.finish_reasons, &s.status_message, error_type(s).as_deref())
}

/// `observe`: a cut-off is final the moment its span arrives.
pub fn observe(a: &Arrival<'_>) -> Option<Vec<u8>> {
    let signal = signal(&a.finish_reasons, &a.status_message, a.error_type.as_deref())?;
    let mut out = b"span ".to_vec();
    out.extend_from_slice(&a.span_id);
    out.extend_from_slice(b" (");
    out.extend_from_slice(&a.name);
    out.extend_from_slice(b") ");
    out.extend_from_slice(signal.as_bytes());
    Some(out)
}

pub fn finish(j: &Judged<'_>) -> Result<Outcome> {
    let spans = &j.run.spans;
    for (i, s) in spans.iter().enumerate() {
        if let Some(signal) = span_signal(s) {
            let mut r = format!("span {} (", i + 1).into_bytes();
            r.extend_from_slice(&s.name);
            r.extend_from_slice(b") ");
            r.extend_from_slice(signal.as_bytes());
            return Ok(Outcome::fired(crate::model::reason::Reason::text(r)));
        }
    }
    // Whether a result is an error is asked only of results that name a limit; when a check
    // before this one has read the step errors already, a result that is no error and does
    // not start with "Error" is not searched at all (the same answer, and nothing raised
    // that would not have been: the errors were worked out without raising).
    let known = j.errors_known();
    let mut overflows: HashMap<&[u8], Option<Vec<u8>>> = HashMap::default(); // a run repeats its results
    for (i, st) in j.facts.steps.iter().enumerate() {
        let result: &[u8] = &st.result;
        let error_text = lstrip(result).starts_with(b"Error");
        if !error_text && known.is_some_and(|e| e[i].is_none()) {
            continue;
        }
        let f = overflows.entry(result).or_insert_with(|| found(result).map(<[u8]>::to_vec)).clone();
        // only results that are errors: a search hit quoting the error text is not an overflow
        let Some(f) = f else { continue };
        if error_text || j.errors()?[i].is_some() {
            let mut r = format!("step {} (", st.index).into_bytes();
            r.extend_from_slice(&st.tool);
            r.extend_from_slice(format!(") result: {}", repr_string(&f)).as_bytes());
            return Ok(Outcome::fired(crate::model::reason::Reason::text(r)));
        }
    }
    if let Some(f) = found(&j.facts.termination) {
        return Ok(Outcome::fired(format!("run terminated: {}", repr_string(f))));
    }
    let n = spans.iter().filter(|s| s.fields.missing & MISSING_FINISH != 0).count();
    if n > 0 {
        return Ok(Outcome::undecided(&format!("finish reasons not recorded on {n} model span(s)")));
    }
    Ok(Outcome::passed("no context overflow or token cutoff"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::value::Value;
    use crate::testing::{agent, run_of, s, said, simple_run, span, tool_loop, trace_id};

    #[test]
    fn reads_provider_errors_in_status_messages_as_the_span_arrives_and_in_the_verdict() {
        let t = trace_id();
        let root = agent(&t, "agent", "", "done", None, 0.0, vec![]);
        let chat = span(&t, "chat", Some(&root.span_id), 1.0, 2, "This model's maximum context length is 8192 tokens",
                        vec![]);
        let early = String::from_utf8(observe(&Arrival::of(&chat)).unwrap()).unwrap();
        assert!(early.ends_with("(chat) status: 'maximum context length'"), "{early}");
        let (run, facts) = run_of(vec![root, chat]);
        let (fired, _, reason) = said(&finish(&Judged::new(&run, &facts)).unwrap());
        assert!(fired && reason == "span 2 (chat) status: 'maximum context length'", "{reason}");
    }

    #[test]
    fn ignores_a_successful_search_result_that_quotes_the_error_text() {
        let (run, facts) = run_of(simple_run(&[("search", r#"{"q": "llm errors"}"#,
                                                "Top hit: 'context length exceeded' explained")], "q", "a", vec![]));
        assert!(!finish(&Judged::new(&run, &facts)).unwrap().fired);
    }

    #[test]
    fn reads_an_error_result_that_names_the_limit() {
        let (run, facts) = run_of(simple_run(&[("summarise", "{}", "Error: prompt is too long: 250000 tokens")],
                                             "q", "a", vec![]));
        assert_eq!(said(&finish(&Judged::new(&run, &facts)).unwrap()),
                   (true, false, "step 1 (summarise) result: 'prompt is too long'".into()));
    }

    #[test]
    fn a_cut_finish_reason_fires_whatever_its_case() {
        let t = trace_id();
        let root = agent(&t, "agent", "", "done", None, 0.0, vec![]);
        let chat = span(&t, "chat m", Some(&root.span_id), 1.0, 0, "", vec![
            ("gen_ai.operation.name", s("chat")), ("gen_ai.response.finish_reasons", Value::List(vec![s("LENGTH")]))]);
        let (run, facts) = run_of(vec![root, chat]);
        let (fired, _, reason) = said(&finish(&Judged::new(&run, &facts)).unwrap());
        assert!(fired && reason.contains("stopped on finish reason 'LENGTH'"), "{reason}");
    }

    #[test]
    fn is_undecided_when_no_model_span_recorded_finish_reasons() {
        let (run, facts) = run_of(tool_loop(true, "It is 21.", false, 1, "{}"));
        assert_eq!(said(&finish(&Judged::new(&run, &facts)).unwrap()),
                   (false, true, "undecided: finish reasons not recorded on 2 model span(s)".into()));
    }
}
