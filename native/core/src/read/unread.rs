//! What no convention read: a span that carries agent work (a model call, a tool call) or
//! an answer, written in a vocabulary none of the readers here knows.
//!
//! A run whose tool calls the reader did not see has no steps, and a run whose answer it did
//! not see has none: without this, both read as "nothing happened" and were passed (issue
//! 40: the Vercel AI SDK's ``ai.toolCall`` spans, before that convention was read). The
//! record says what it saw instead (``SpanRecord.missing``'s ``UNREAD_*`` bits), and the
//! run decides what that leaves unread (model/unread.py): a check whose input is among it
//! is undecided, never passed.
//!
//! Agent work is recognised by the words of the span's name and attribute keys, never by a
//! list of vendors: keys and names are split into words (at dots, underscores, dashes and
//! case changes: ``ai.toolCall.args`` is ``ai tool call args``). Only a span no convention
//! claimed is looked at for work (a claimed span was read as what its convention says);
//! an answer is looked for also on a claimed root or agent span that gave none.
//!
//! Deliberately words, not values: a value says nothing of what a span is (an argument
//! may be any text), and reading every value of every unclaimed span would cost the hot
//! path what reading the span costs.

use crate::model::record::INVOKE_AGENT;
use crate::model::value::Value;
use crate::pyfmt::strs::strip;

// model/records.py's UNREAD_* flags (``SpanRecord.missing``; model/record.rs's MISSING_* beside them)
pub const UNREAD_TOOL: u32 = 32;
pub const UNREAD_MODEL: u32 = 64;
pub const UNREAD_OUTPUT: u32 = 128;
/// The attribute that names the key an unread answer is in (for the reason that says so).
pub const UNREAD_OUTPUT_KEY: &str = "faultgate.unread_output";

/// Words that make a span a tool call: in its name, or in a key where a field of the call
/// follows (``tool.name``, ``ai.toolCall.args``; not ``ai.prompt.tools``, a model's list of
/// the tools it may call).
const TOOL_WORDS: [&str; 4] = ["tool", "tools", "toolcall", "toolcalls"];
const CALL_FIELDS: [&str; 12] = ["call", "name", "id", "args", "arguments", "input", "output", "result",
                                 "parameters", "params", "error", "execution"];
/// Words of a model call's name (``chat``, ``ai.generateText.doGenerate``, ``llm``).
const MODEL_NAME_WORDS: [&str; 7] = ["llm", "chat", "completion", "completions", "generate", "generation",
                                     "inference"];
/// Words of a model call's keys: the model's name, its usage, its prompt and finish reason.
const MODEL_KEY_WORDS: [&str; 9] = ["model", "usage", "prompt", "prompts", "completion", "finish", "messages",
                                    "tokens", "llm"];
/// Words of a key that holds output: the run's answer may be in it.
const OUTPUT_WORDS: [&str; 7] = ["output", "outputs", "completion", "answer", "result", "results", "response"];
/// A key ending in one of these holds a fact about the output (its id, size, model, why it
/// stopped), not the output.
const NOT_CONTENT: [&str; 29] = ["id", "ids", "code", "status", "size", "count", "type", "model", "time",
                                 "timestamp", "duration", "ms", "tokens", "token", "length", "reason", "reasons",
                                 "name", "metadata", "headers", "header", "format", "schema", "mime", "encoding",
                                 "index", "version", "cost", "provider"];

/// The words of a name or key: runs of letters and digits, split where a lower-case letter
/// or digit meets an upper-case one (bytes past ASCII belong to words).
pub fn words(s: &[u8]) -> impl Iterator<Item = &[u8]> {
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < s.len() && !is_word_byte(s[at]) {
            at += 1;
        }
        if at >= s.len() {
            return None;
        }
        let start = at;
        at += 1;
        while at < s.len() && is_word_byte(s[at]) && !(s[at].is_ascii_uppercase() && !s[at - 1].is_ascii_uppercase()) {
            at += 1;
        }
        Some(&s[start..at])
    })
}

/// A key with an output word whose last word is not a fact about the output, and no tool
/// word: ``ai.response.toolCalls`` holds calls, not an answer.
fn output_key(key: &[u8]) -> bool {
    let (mut last, mut output, mut tool): (&[u8], bool, bool) = (b"", false, false);
    for w in words(key) {
        output |= is(w, &OUTPUT_WORDS);
        tool |= is(w, &TOOL_WORDS);
        last = w;
    }
    output && !tool && !is(last, &NOT_CONTENT)
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b >= 0x80
}

fn is(word: &[u8], set: &[&str]) -> bool {
    set.iter().any(|w| word.eq_ignore_ascii_case(w.as_bytes()))
}

/// What a span's name and keys say of it, gathered key by key.
#[derive(Default)]
pub struct Sniff {
    tool_name: bool,
    model_name: bool,
    tool_key: bool,
    model_key: bool,
    output: Option<Vec<u8>>,
    /// Whether output is looked for (the span gave no answer and is no tool call).
    wants_output: bool,
    /// Whether work is looked for (no convention claimed the span).
    wants_work: bool,
}

impl Sniff {
    pub fn name(&mut self, name: &[u8]) {
        if !self.wants_work {
            return;
        }
        let mut prev: &[u8] = b"";
        for w in words(name) {
            if is(w, &TOOL_WORDS) || (w.eq_ignore_ascii_case(b"call") && prev.eq_ignore_ascii_case(b"function")) {
                self.tool_name = true;
            } else if is(w, &MODEL_NAME_WORDS)
                || (w.eq_ignore_ascii_case(b"stream") && prev.eq_ignore_ascii_case(b"do"))
            {
                self.model_name = true;
            }
            prev = w;
        }
    }

    /// Whether ``key``'s value is worth decoding for ``key``: it may hold the answer.
    pub fn needs_value(&self, key: &[u8]) -> bool {
        self.wants_output && self.output.is_none() && output_key(key)
    }

    /// One attribute: its key, and its value (needed only where ``needs_value``). ``read``:
    /// a convention reads the key, so what it holds was read, whatever it made of it.
    pub fn key(&mut self, key: &[u8], value: Option<&Value<'_>>, read: bool) {
        if self.wants_work {
            let (mut prev, mut after_tool, mut of_tool, mut model) = (&b""[..], false, false, false);
            for w in words(key) {
                if after_tool && is(w, &CALL_FIELDS) {
                    self.tool_key = true;
                }
                after_tool = w.eq_ignore_ascii_case(b"tool") || w.eq_ignore_ascii_case(b"toolcall")
                    || (w.eq_ignore_ascii_case(b"call") && prev.eq_ignore_ascii_case(b"function"));
                of_tool |= after_tool || is(w, &TOOL_WORDS);
                model |= is(w, &MODEL_KEY_WORDS);
                prev = w;
            }
            if prev.eq_ignore_ascii_case(b"tool") {
                self.tool_key = true; // ``mcp.tool``: the key names the tool
            }
            // a key about a tool is no model's: ``tool.current_usage_count``, ``ai.prompt.tools``
            self.model_key |= model && !of_tool;
        }
        if !read && self.needs_value(key) {
            if let Some(Value::Str(s)) = value {
                if !strip(s).is_empty() {
                    self.output = Some(key.to_vec());
                }
            }
        }
    }

    /// The ``UNREAD_*`` flags, and the key an unread answer is in.
    pub fn finish(self) -> (u32, Option<Vec<u8>>) {
        let tool = self.tool_name || (self.tool_key && !self.model_name && !self.model_key);
        let model = !tool && (self.model_name || self.model_key);
        // a tool call's result is not the run's answer
        let output = if tool { None } else { self.output };
        let flags = if tool { UNREAD_TOOL } else { 0 } | if model { UNREAD_MODEL } else { 0 }
            | if output.is_some() { UNREAD_OUTPUT } else { 0 };
        (flags, output)
    }
}

/// What to look for on a span the conventions made ``operation``, ``is_tool`` and
/// ``answer`` of: work when no convention ``claimed`` it, output when it gave no answer
/// and is a tool call of none (on a claimed span, only a root's or an agent's: a claimed
/// model span's output is its convention's to read). None: nothing to look for.
pub fn sniff(claimed: bool, has_parent: bool, operation: Option<&[u8]>, is_tool: bool, answer: &[u8]) -> Option<Sniff> {
    let wants_work = !claimed;
    let no_answer = !is_tool && strip(answer).is_empty();
    let wants_output = no_answer && (!claimed || !has_parent || operation == Some(INVOKE_AGENT.as_bytes()));
    if !wants_work && !wants_output {
        return None;
    }
    Some(Sniff { wants_work, wants_output, ..Sniff::default() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::borrow::Cow;

    fn split(s: &str) -> Vec<String> {
        words(s.as_bytes()).map(|w| String::from_utf8_lossy(w).into_owned()).collect()
    }

    fn flags(name: &str, keys: &[(&str, &str)]) -> (u32, Option<String>) {
        let mut s = sniff(false, true, None, false, b"").unwrap();
        s.name(name.as_bytes());
        for (k, v) in keys {
            s.key(k.as_bytes(), Some(&Value::Str(Cow::Borrowed(v.as_bytes()))), false);
        }
        let (f, key) = s.finish();
        (f, key.map(|k| String::from_utf8(k).unwrap()))
    }

    #[test]
    fn words_split_at_separators_and_case_changes() {
        assert_eq!(split("ai.toolCall.args"), ["ai", "tool", "Call", "args"]);
        assert_eq!(split("ai.generateText.doGenerate"), ["ai", "generate", "Text", "do", "Generate"]);
        assert_eq!(split("gen_ai.usage.input_tokens"), ["gen", "ai", "usage", "input", "tokens"]);
        assert_eq!(split("HTTP POST"), ["HTTP", "POST"]);
        assert_eq!(split("..."), Vec::<String>::new());
    }

    #[test]
    fn a_tool_call_in_an_unknown_vocabulary_is_seen_by_its_name_or_its_keys() {
        assert_eq!(flags("ai.toolCall", &[]).0, UNREAD_TOOL);
        assert_eq!(flags("ai.toolCall", &[("ai.toolCall.result", "18C")]), (UNREAD_TOOL, None));
        assert_eq!(flags("step", &[("acme.tool.name", "get_weather")]).0, UNREAD_TOOL);
        assert_eq!(flags("mcp", &[("mcp.tool", "x")]).0, UNREAD_TOOL);
        assert_eq!(flags("x", &[("acme.function_call.arguments", "{}")]).0, UNREAD_TOOL);
        assert_eq!(flags("get_weather.run", &[("tool.name", "w"), ("tool.current_usage_count", "1")]).0, UNREAD_TOOL);
    }

    #[test]
    fn a_model_call_is_seen_by_its_name_or_its_keys_and_a_list_of_tools_does_not_make_it_a_tool_call() {
        assert_eq!(flags("ai.streamText.doStream", &[]).0, UNREAD_MODEL);
        assert_eq!(flags("ai.generateText", &[("ai.model.id", "m"), ("ai.prompt.tools", "[]")]).0, UNREAD_MODEL);
        assert_eq!(flags("x", &[("acme.usage.promptTokens", "1")]).0, UNREAD_MODEL);
    }

    #[test]
    fn a_span_of_no_agent_work_is_not_flagged() {
        assert_eq!(flags("POST", &[("http.request.method", "POST"), ("http.response.status_code", "200")]).0, 0);
        assert_eq!(flags("SELECT orders", &[("db.statement", "select 1")]).0, 0);
    }

    #[test]
    fn output_is_a_non_blank_text_under_an_output_word_not_a_fact_about_it() {
        assert_eq!(flags("x", &[("ai.response.text", "It is sunny.")]).1.as_deref(), Some("ai.response.text"));
        assert_eq!(flags("x", &[("ai.response.finishReason", "stop")]).1, None);
        assert_eq!(flags("x", &[("ai.response.id", "r-1"), ("ai.response.model", "m")]).1, None);
        assert_eq!(flags("x", &[("ai.response.toolCalls", "[{}]")]).1, None);
        assert_eq!(flags("x", &[("acme.output", "  ")]).1, None);
    }

    #[test]
    fn a_claimed_span_is_looked_at_for_an_answer_only_as_a_root_or_an_agent() {
        assert!(sniff(true, true, Some(b"chat"), false, b"").is_none());
        assert!(sniff(true, false, Some(b"chat"), false, b"").is_some());
        assert!(sniff(true, true, Some(b"invoke_agent"), false, b"").is_some());
        assert!(sniff(true, false, Some(b"invoke_agent"), false, b"an answer").is_none());
        assert!(sniff(false, true, Some(b"execute_tool"), true, b"").is_some_and(|s| !s.wants_output));
    }
}
