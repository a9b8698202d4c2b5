//! A completed run: its spans in start order, its root, and why the assembler decided it
//! was over (model/run.py's `Run`, model/verdict.py's `Completion`).

use std::sync::Arc;

use super::ids::{SpanId, TraceId};
use super::record::SpanRecord;

/// Why the assembler decided a run was over. Part of every verdict.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Completion {
    /// end of input (offline): every span there was has been seen
    Complete,
    /// live: the root arrived and root_grace passed
    Grace,
    /// live: max_run_duration since the first span ran out first
    MaxDuration,
    /// no root span ever arrived for these spans
    Orphan,
    /// closed early to make room (a capacity bound)
    Evicted,
    /// the service stopped with the run in flight
    Shutdown,
}

impl Completion {
    /// The name verdicts carry.
    pub fn value(self) -> &'static str {
        match self {
            Completion::Complete => "complete",
            Completion::Grace => "grace",
            Completion::MaxDuration => "max-duration",
            Completion::Orphan => "orphan",
            Completion::Evicted => "evicted",
            Completion::Shutdown => "shutdown",
        }
    }

    pub fn from_value(v: &str) -> Option<Completion> {
        Some(match v {
            "complete" => Completion::Complete,
            "grace" => Completion::Grace,
            "max-duration" => Completion::MaxDuration,
            "orphan" => Completion::Orphan,
            "evicted" => Completion::Evicted,
            "shutdown" => Completion::Shutdown,
            _ => return None,
        })
    }
}

/// The spans of one run: the subtree under the top-most `invoke_agent` span of a trace (or,
/// in a trace without one, under its parentless span); an orphan fragment has no root.
#[derive(Clone, Debug)]
pub struct Run {
    pub trace_id: TraceId,
    /// the root's span id; None for an orphan fragment
    pub root_span_id: Option<SpanId>,
    /// in (start time, span id) order, so the order spans arrived in changes no answer
    pub spans: Vec<Arc<SpanRecord>>,
    /// the root, one of `spans`
    pub root: Option<Arc<SpanRecord>>,
    pub completion: Completion,
    /// on the assembler's clock; 0 when no root arrived
    pub root_arrival_ns: i128,
    pub closed_ns: i128,
    /// spans above every agent that leave the assembler with this run: not members, but
    /// span export releases them with its verdict
    pub outside_span_ids: Vec<SpanId>,
}

impl Run {
    /// A run of `spans` in any order: sorted here by (start time, span id); `root` names
    /// the root among them by span id.
    pub fn new(trace_id: TraceId, mut spans: Vec<Arc<SpanRecord>>, root_span_id: Option<SpanId>,
               completion: Completion) -> Run {
        sort_spans(&mut spans);
        let root = root_span_id.as_ref().and_then(|r| spans.iter().find(|s| &s.span_id == r)).cloned();
        Run { trace_id, root_span_id, spans, root, completion, root_arrival_ns: 0, closed_ns: 0,
              outside_span_ids: Vec::new() }
    }

    pub fn root(&self) -> Option<&SpanRecord> {
        self.root.as_deref()
    }
}

/// (start time, span id): the order of a run's spans.
pub fn sort_spans(spans: &mut [Arc<SpanRecord>]) {
    spans.sort_by(|a, b| a.start_ns.cmp(&b.start_ns).then_with(|| a.span_id.cmp(&b.span_id)));
}
