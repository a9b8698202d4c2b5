//! The built-in checks: faultgate's default rules, each a file named for what it detects
//! with its id (`ID`), reading a completed run's facts (`Judged`) and giving an `Outcome`,
//! and the signals several share (`signals.rs`). A finding is data, never an error: an
//! error here is what the Python the check replaced raised (the evaluator then makes the
//! check's result undecided, as for any check that raises).
//!
//! checks/<name>.py keeps each check's class, name, description and severity; the binding
//! gives it this check's outcome.

pub mod abstention;
pub mod context_overflow;
pub mod pattern;
pub mod policy_deny;
pub mod repeated_call;
pub mod rules;
pub mod search_loop;
pub mod signals;
pub mod unrecovered_tool_error;

use std::borrow::Cow;
use std::sync::OnceLock;

use crate::error::Result;
use crate::model::reason::Reason;
use crate::model::run::Run;
use crate::model::record::SpanRecord;
use crate::run::facts::{error_type, steps_not_captured, Facts};

/// What the checks that look at spans as they arrive read of one (`observe`): borrowed
/// from a record, the core's or a Python one.
pub struct Arrival<'a> {
    pub span_id: Cow<'a, [u8]>,
    pub name: Cow<'a, [u8]>,
    pub status_message: Cow<'a, [u8]>,
    pub finish_reasons: Vec<Cow<'a, [u8]>>,
    /// `str(attrs["error.type"])` when set and true
    pub error_type: Option<Cow<'a, [u8]>>,
    /// the tool's arguments (a tool span), then each call's its messages name
    pub arguments: Vec<Cow<'a, [u8]>>,
}

impl<'a> Arrival<'a> {
    pub fn of(s: &'a SpanRecord) -> Arrival<'a> {
        Arrival {
            span_id: Cow::Owned(s.span_id.to_string().into_bytes()),
            name: Cow::Borrowed(&s.name),
            status_message: Cow::Borrowed(&s.status_message),
            finish_reasons: s.fields.finish_reasons.iter().map(|r| Cow::Borrowed(&**r)).collect(),
            error_type: error_type(s).map(|t| Cow::Owned(t.into_vec())),
            arguments: s.fields.tool.iter().map(|t| Cow::Borrowed(&*t.arguments))
                .chain(s.fields.calls.iter().map(|c| Cow::Borrowed(&*c.arguments))).collect(),
        }
    }
}

/// What a check says of a run: fired, passed, or undecided (it could not see its input).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outcome {
    pub fired: bool,
    pub undecided: bool,
    /// the reason as a result carries it ("undecided: " and what was missing, when undecided)
    pub reason: Reason,
}

impl Outcome {
    pub fn passed(reason: impl Into<Reason>) -> Outcome {
        Outcome { fired: false, undecided: false, reason: reason.into() }
    }

    pub fn fired(reason: impl Into<Reason>) -> Outcome {
        Outcome { fired: true, undecided: false, reason: reason.into() }
    }

    /// `check.undecided(missing)`: neither fired nor passed.
    pub fn undecided(missing: &str) -> Outcome {
        Outcome { fired: false, undecided: true, reason: Reason::from(format!("undecided: {missing}")) }
    }
}

/// What several checks derive from a run's steps, worked out once for all of them (the
/// step errors); kept beside the run when its checks are called one at a time.
#[derive(Default)]
pub struct Derived {
    /// `signals.structural_error` of each step's result (None: not an error)
    errors: OnceLock<Vec<Option<Reason>>>,
}

enum Held<'r> {
    Own(Derived),
    Lent(&'r Derived),
}

/// A completed run as the checks read it: its spans, its facts, and what they derive.
pub struct Judged<'r> {
    pub run: &'r Run,
    pub facts: &'r Facts,
    derived: Held<'r>,
}

impl<'r> Judged<'r> {
    pub fn new(run: &'r Run, facts: &'r Facts) -> Judged<'r> {
        Judged { run, facts, derived: Held::Own(Derived::default()) }
    }

    /// Reading (and filling) what `derived` keeps of the run.
    pub fn with(run: &'r Run, facts: &'r Facts, derived: &'r Derived) -> Judged<'r> {
        Judged { run, facts, derived: Held::Lent(derived) }
    }

    fn derived(&self) -> &Derived {
        match &self.derived {
            Held::Own(d) => d,
            Held::Lent(d) => d,
        }
    }

    /// The step errors, each distinct result read once (a run repeats its results: the
    /// same empty search, the same error).
    pub fn errors(&self) -> Result<&Vec<Option<Reason>>> {
        if let Some(e) = self.derived().errors.get() {
            return Ok(e);
        }
        let mut known: rustc_hash::FxHashMap<&[u8], Option<Reason>> = Default::default();
        let mut out = Vec::with_capacity(self.facts.steps.len());
        for st in &self.facts.steps {
            if signals::plainly_clean(&st.result) {
                out.push(None);
                continue;
            }
            let e = match known.get(&*st.result) {
                Some(e) => e.clone(),
                None => {
                    let e = signals::structural_error(&st.result)?;
                    known.insert(&st.result, e.clone());
                    e
                }
            };
            out.push(e);
        }
        Ok(self.derived().errors.get_or_init(|| out))
    }

    /// The step errors, when some check has asked for them already.
    pub fn errors_known(&self) -> Option<&Vec<Option<Reason>>> {
        self.derived().errors.get()
    }

    /// `Run.steps_not_captured(flags)`.
    pub fn not_captured(&self, flags: u32) -> String {
        steps_not_captured(&self.facts.steps, flags)
    }
}
