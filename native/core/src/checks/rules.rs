//! A rules file's CEL expressions, evaluated (checks/rules/): the programs of one file over
//! a span's map or a run's, with the `cel` crate.
//!
//! The expressions were compiled and type-checked by cel-cpp when the file loaded (engine.py
//! says why it stays the judge of what a file may say); they are compiled here once more,
//! for evaluating. One root context per file holds the standard library's environment
//! (building it costs ~33 us, against ~0.25 us an evaluation) and the function literal
//! `matches` patterns are run by; each evaluation binds its variable in a scope of its own.
//!
//! `x.matches("literal")` reaches here as `x._fg_re2_search("literal")` (engine.py rewrites
//! it): the crate's own `matches` compiles its pattern on every call (~100 us), this one
//! runs the file's literal patterns compiled when it loaded. The `regex` crate is linear
//! time, and of RE2's syntax.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use cel::extractors::This;
use cel::common::ast::{operators, Expr, IdedExpr, LiteralValue};
use cel::common::types::{CelBool, CelDouble, CelInt, CelList, CelMap, CelMapKey, CelNull, CelString};
use cel::{Context, ExecutionError, Program, Value};
use regex::Regex;

/// The member function literal `matches` patterns are rewritten to (engine.py's `_SEARCH`).
pub const SEARCH: &str = "_fg_re2_search";
/// What one rule gave on one map.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Outcome {
    Matched,
    NotMatched,
    /// the expression failed (a missing key, no such overload) or was not true or false
    Failed(String),
}

/// The file's literal patterns, compiled when it loads and never added to: what a file
/// can make it hold is bounded by the file (`MAX_RULES` expressions of at most
/// `MAX_EXPRESSION_CHARS`, load.py). A pattern not among them (only an expression naming
/// `_fg_re2_search` itself with a computed pattern reaches here with one) is compiled for
/// its call alone.
struct Patterns {
    literal: HashMap<String, Regex>,
}

impl Patterns {
    fn search(&self, text: &str, pattern: &str) -> Result<bool, ExecutionError> {
        if let Some(re) = self.literal.get(pattern) {
            return Ok(re.is_match(text));
        }
        let re = Regex::new(pattern).map_err(|e| {
            ExecutionError::function_error("matches", format!("invalid pattern {pattern:?}: {e}"))
        })?;
        Ok(re.is_match(text))
    }
}

/// A file's rules of one level, compiled for evaluating.
pub struct Rules {
    root: Context<'static, 'static>,
    programs: Vec<Program>,
}

impl Rules {
    /// The programs of `sources` (as engine.py passes them: literal `matches` rewritten) and
    /// the literal patterns they use, compiled. A source the crate cannot parse, or a
    /// pattern the `regex` crate refuses, is `Err((index, cause))`: the source's index, or
    /// `sources.len()` plus the pattern's.
    pub fn compile(sources: &[&str], patterns: &[&str]) -> Result<Rules, (usize, String)> {
        let programs = sources.iter().enumerate()
            .map(|(i, s)| Program::compile(s).map_err(|e| (i, first_line(&e.to_string()))))
            .collect::<Result<Vec<_>, _>>()?;
        let mut literal = HashMap::new();
        for (i, p) in patterns.iter().enumerate() {
            let re = Regex::new(p).map_err(|e| (sources.len() + i, first_line(&e.to_string())))?;
            literal.insert((*p).to_owned(), re);
        }
        let patterns = Patterns { literal };
        let mut root = Context::default();
        root.add_function(SEARCH, move |This(text): This<Arc<String>>, pattern: Arc<String>| {
            patterns.search(&text, &pattern)
        }).map_err(|e| (0, e.to_string()))?;
        Ok(Rules { root, programs })
    }

    pub fn len(&self) -> usize {
        self.programs.len()
    }

    /// The tools whose spans rule `rule` can match, when its expression says so itself: a
    /// conjunct of its top-level `&&`s is `variable.tool == "name"` (either way round) or
    /// `variable.tool in ["name", ...]`. On any other span that conjunct is false, and so
    /// is the rule (CEL's `&&` is false beside false whatever the other side gives, an
    /// error included), so it need not be evaluated there. None: any tool's.
    pub fn implied_tools(&self, rule: usize, variable: &str) -> Option<Vec<String>> {
        implied(self.programs[rule].expression(), variable).map(|t| t.into_iter().collect())
    }

    /// The keys of `variable.args` rule `rule` reads, when it reads that map only through
    /// literal fields (`variable.args.key`, `has(variable.args.key)`): its outcome on a span
    /// is then a function of those keys' values alone (and of the other fields it reads),
    /// whatever else the arguments hold. None where it reads the map otherwise (whole, by
    /// a computed index, `variable` itself whole) or a comprehension binds `variable`.
    pub fn arg_keys(&self, rule: usize, variable: &str) -> Option<Vec<String>> {
        let mut keys = BTreeSet::new();
        reads_args_by_key(self.programs[rule].expression(), variable, &mut keys).then(|| keys.into_iter().collect())
    }

    pub fn is_empty(&self) -> bool {
        self.programs.is_empty()
    }

    /// `variable` bound to `value`, for evaluating several rules on it.
    pub fn bind(&self, variable: &str, value: Val) -> Bound<'_> {
        let mut scope = self.root.new_inner_scope();
        scope.add_variable_as_val(variable, value);
        Bound { scope, programs: &self.programs }
    }
}

fn implied(e: &IdedExpr, variable: &str) -> Option<BTreeSet<String>> {
    let Expr::Call(call) = &e.expr else { return None };
    if call.target.is_some() || call.args.len() != 2 {
        return None;
    }
    let (a, b) = (&call.args[0], &call.args[1]);
    match call.func_name.as_str() {
        operators::LOGICAL_AND => match (implied(a, variable), implied(b, variable)) {
            (Some(x), Some(y)) => Some(x.intersection(&y).cloned().collect()),
            (Some(x), None) | (None, Some(x)) => Some(x),
            (None, None) => None,
        },
        operators::EQUALS if is_tool(a, variable) => literal(b).map(|t| BTreeSet::from([t])),
        operators::EQUALS if is_tool(b, variable) => literal(a).map(|t| BTreeSet::from([t])),
        operators::IN if is_tool(a, variable) => match &b.expr {
            Expr::List(l) if l.optional_indices.is_empty() => l.elements.iter().map(literal).collect(),
            _ => None,
        },
        _ => None,
    }
}

/// Whether `e` reads `variable.args` only through literal fields, each added to `keys`.
fn reads_args_by_key(e: &IdedExpr, variable: &str, keys: &mut BTreeSet<String>) -> bool {
    let ok = |x: &IdedExpr, keys: &mut BTreeSet<String>| reads_args_by_key(x, variable, keys);
    match &e.expr {
        Expr::Select(s) => {
            let on_variable = matches!(&s.operand.expr, Expr::Ident(v) if v == variable);
            if on_variable {
                return s.field != "args";  // `variable.args` itself, not under a field: the map whole
            }
            if let Expr::Select(inner) = &s.operand.expr {
                if !inner.test && inner.field == "args" && matches!(&inner.operand.expr, Expr::Ident(v) if v == variable) {
                    keys.insert(s.field.clone());
                    return true;
                }
            }
            ok(&s.operand, keys)
        }
        Expr::Ident(v) => v != variable,
        Expr::Call(c) => c.target.as_deref().is_none_or(|t| ok(t, keys)) && c.args.iter().all(|a| ok(a, keys)),
        Expr::Comprehension(c) => {
            c.iter_var != variable && c.accu_var != variable && c.iter_var2.as_deref() != Some(variable)
                && [&c.iter_range, &c.accu_init, &c.loop_cond, &c.loop_step, &c.result].iter().all(|x| ok(x, keys))
        }
        Expr::List(l) => l.elements.iter().all(|x| ok(x, keys)),
        Expr::Map(m) => m.entries.iter().all(|x| entry_ok(&x.expr, variable, keys)),
        Expr::Struct(st) => st.entries.iter().all(|x| entry_ok(&x.expr, variable, keys)),
        Expr::Literal(_) | Expr::Unspecified => true,
    }
}

fn entry_ok(e: &cel::common::ast::EntryExpr, variable: &str, keys: &mut BTreeSet<String>) -> bool {
    match e {
        cel::common::ast::EntryExpr::StructField(f) => reads_args_by_key(&f.value, variable, keys),
        cel::common::ast::EntryExpr::MapEntry(m) => {
            reads_args_by_key(&m.key, variable, keys) && reads_args_by_key(&m.value, variable, keys)
        }
    }
}

/// `variable.tool`: always a string in a span's map (empty on a span that is no tool call).
fn is_tool(e: &IdedExpr, variable: &str) -> bool {
    matches!(&e.expr, Expr::Select(s) if !s.test && s.field == "tool"
             && matches!(&s.operand.expr, Expr::Ident(v) if v == variable))
}

/// A string literal, but not one with U+FFFD (a tool name the map read lossily could
/// equal it while its text does not).
fn literal(e: &IdedExpr) -> Option<String> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) if !s.inner().contains('\u{fffd}') => Some(s.inner().to_owned()),
        _ => None,
    }
}

/// One map bound, for the rules of a file.
pub struct Bound<'a> {
    scope: Context<'a, 'static>,
    programs: &'a [Program],
}

impl Bound<'_> {
    /// What rule `rule` gives here.
    pub fn evaluate(&self, rule: usize) -> Outcome {
        match self.programs[rule].execute(&self.scope) {
            Ok(Value::Bool(true)) => Outcome::Matched,
            Ok(Value::Bool(false)) => Outcome::NotMatched,
            Ok(other) => Outcome::Failed(format!("the expression gave {}, not true or false", kind(&other))),
            Err(e) => Outcome::Failed(describe(&e)),
        }
    }
}

/// A scalar as CEL writes it (the crate's own errors print Rust's `Int(5)`).
fn shown(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => format!("{u}u"),
        Value::Float(f) => f.to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Bool(b) => b.to_string(),
        other => kind(other),
    }
}

fn kind(v: &Value) -> String {
    format!("{}", v.type_of())
}

/// An execution error as a reason says it: the crate's text, values by their CEL type
/// rather than Rust's debug print, and a missing key named as such.
fn describe(e: &ExecutionError) -> String {
    let text = match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::ValuesNotComparable(a, b) => format!("{} cannot be compared with {}", kind(a), kind(b)),
        ExecutionError::UnsupportedBinaryOperator(op, a, b) => {
            format!("no operator '{op}' for {} and {}", kind(a), kind(b))
        }
        ExecutionError::DivisionByZero(_) => "division by zero".to_owned(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".to_owned(),
        ExecutionError::Overflow(op, _, _) => format!("integer overflow in '{op}'"),
        ExecutionError::IndexOutOfBounds(i) => format!("index {} out of bounds", shown(i)),
        other => other.to_string(),
    };
    first_line(&text)
}

/// A message on one line: its first, and its last where it runs on (the regex crate's
/// errors print the pattern with a caret between the two).
fn first_line(text: &str) -> String {
    let mut lines = text.trim().lines().map(str::trim).filter(|l| !l.is_empty());
    let first = lines.next().unwrap_or("");
    let line = match lines.last() {
        Some(last) if first.ends_with(':') => format!("{first} {last}"),
        _ => first.to_owned(),
    };
    if line.chars().count() > 200 {
        line.chars().take(200).collect::<String>() + "..."
    } else {
        line
    }
}

// ------------------------------------------------------------------ values
// Built as the crate's own values (`Val`), moved into an evaluation's scope: its `Value`
// enum would be converted, and copied twice, on binding (~5 us a run of 16 steps).

/// A value as the crate evaluates it.
pub type Val = Box<dyn cel::common::value::Val>;

pub fn text(s: impl Into<String>) -> Val {
    Box::new(CelString::from(s.into()))
}

pub fn int(i: i64) -> Val {
    Box::new(CelInt::from(i))
}

pub fn double(f: f64) -> Val {
    Box::new(CelDouble::from(f))
}

pub fn boolean(b: bool) -> Val {
    Box::new(CelBool::from(b))
}

pub fn null() -> Val {
    Box::new(CelNull)
}

pub fn list(items: Vec<Val>) -> Val {
    Box::new(CelList::from(items))
}

/// A map of string keys (a key given twice: the last value, as a Python dict keeps).
pub fn map(entries: impl IntoIterator<Item = (String, Val)>) -> Val {
    let m: HashMap<CelMapKey<'static>, Val> = entries.into_iter().map(|(k, v)| (CelMapKey::from(k), v)).collect();
    Box::new(CelMap::from(m))
}

/// A map of keys known when compiling (a record's field names): borrowed, so the map and
/// each copy the evaluator makes of it (a comprehension copies every element) allocate none.
pub fn fields(entries: impl IntoIterator<Item = (&'static str, Val)>) -> Val {
    let m: HashMap<CelMapKey<'static>, Val> = entries.into_iter().map(|(k, v)| (CelMapKey::from(k), v)).collect();
    Box::new(CelMap::from(m))
}

/// A string known when compiling, borrowed.
pub fn constant(s: &'static str) -> Val {
    Box::new(CelString::from(s))
}

pub fn empty_map() -> Val {
    Box::new(CelMap::from(HashMap::new()))
}

/// A value as the crate's `Value` enum (for reading one back: the tests, the binding's).
pub fn value_of(v: &Val) -> Option<Value> {
    Value::try_from(v.as_ref()).ok()
}

/// A tool call's arguments as a span's `args`: the JSON object's values, integers past 64
/// bits as doubles (as adapt.py's `plain_args`). `None` where serde_json and Python's json
/// may differ (text it refuses: Python's json reads NaN, Infinity and deeper nesting), for
/// the caller to ask Python; a document that is no object is an empty map.
pub fn args_value(arguments: &str) -> Option<Val> {
    if arguments.is_empty() {
        return Some(empty_map());
    }
    Some(args_of(args_document(arguments)?))
}

/// The arguments' JSON document, as `args_value` reads it (None: for Python to read).
pub fn args_document(arguments: &str) -> Option<serde_json::Value> {
    serde_json::from_str(arguments).ok()
}

/// `args_value` of a document `args_document` read.
pub fn args_of(doc: serde_json::Value) -> Val {
    match doc {
        serde_json::Value::Object(_) => json_value(doc),
        _ => empty_map(),
    }
}

fn json_value(v: serde_json::Value) -> Val {
    match v {
        serde_json::Value::Null => null(),
        serde_json::Value::Bool(b) => boolean(b),
        serde_json::Value::Number(n) => number(&n),
        serde_json::Value::String(s) => text(s),
        serde_json::Value::Array(a) => list(a.into_iter().map(json_value).collect()),
        serde_json::Value::Object(o) => map(o.into_iter().map(|(k, v)| (k, json_value(v)))),
    }
}

/// A JSON number as Python's json reads it: an integer when written as one (a double past
/// 64 bits, as `plain` makes it), else a double.
fn number(n: &serde_json::Number) -> Val {
    if let Some(i) = n.as_i64() {
        return int(i);
    }
    let written = n.to_string();
    double(written.parse::<f64>().unwrap_or_else(|_| n.as_f64().unwrap_or(f64::NAN)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(fields: Vec<(&str, Val)>) -> Val {
        map(fields.into_iter().map(|(k, v)| (k.to_owned(), v)))
    }

    fn one(source: &str, value: Val) -> Outcome {
        let rules = Rules::compile(&[source], &[]).unwrap();
        let b = rules.bind("span", value);
        b.evaluate(0)
    }

    #[test]
    fn a_rule_fires_on_a_span_it_matches_and_not_on_another() {
        let rules = Rules::compile(&[r#"span.status == "error" && span.tool == "calculator""#], &[]).unwrap();
        let failed = span(vec![("status", text("error")), ("tool", text("calculator"))]);
        let fine = span(vec![("status", text("ok")), ("tool", text("calculator"))]);
        assert_eq!(rules.bind("span", failed).evaluate(0), Outcome::Matched);
        assert_eq!(rules.bind("span", fine).evaluate(0), Outcome::NotMatched);
    }

    #[test]
    fn a_missing_key_is_an_error_naming_it_and_has_guards_it() {
        let s = || span(vec![("args", args_value(r#"{"order": "A"}"#).unwrap())]);
        assert_eq!(one("span.args.amount > 500", s()), Outcome::Failed("no such key: amount".into()));
        assert_eq!(one("has(span.args.amount) && span.args.amount > 500", s()), Outcome::NotMatched);
    }

    #[test]
    fn a_literal_pattern_is_compiled_once_and_searched() {
        let source = format!(r#"span.args.query.{SEARCH}("(?i)drop\\s+table")"#);
        let rules = Rules::compile(&[&source], &[r"(?i)drop\s+table"]).unwrap();
        let drop = span(vec![("args", args_value(r#"{"query": "x; DROP  TABLE users"}"#).unwrap())]);
        let select = span(vec![("args", args_value(r#"{"query": "select 1"}"#).unwrap())]);
        assert_eq!(rules.bind("span", drop).evaluate(0), Outcome::Matched);
        assert_eq!(rules.bind("span", select).evaluate(0), Outcome::NotMatched);
        // a pattern that is not the file's (the function named with a computed one) is
        // compiled for its call
        let computed = format!(r#"span.args.query.{SEARCH}(span.args.p)"#);
        let rules = Rules::compile(&[&computed], &[]).unwrap();
        let s = span(vec![("args", args_value(r#"{"query": "abc", "p": "b+c$"}"#).unwrap())]);
        assert_eq!(rules.bind("span", s).evaluate(0), Outcome::Matched);
    }

    #[test]
    fn a_pattern_the_regex_crate_refuses_is_refused_at_compile_naming_it() {
        let e = Rules::compile(&["true"], &["("]).err().unwrap();
        assert_eq!(e.0, 1);
        assert_eq!(e.1, "regex parse error: error: unclosed group");
    }

    #[test]
    fn in_on_a_map_and_filter_size_over_a_list_of_maps() {
        let calls = map([("search_docs".to_owned(), int(6))]);
        let steps = [true, false, false, false, false].iter().map(|ok| map([("ok".to_owned(), boolean(*ok))]));
        let steps = list(steps.collect());
        let run = map([("calls".to_owned(), calls), ("steps".to_owned(), steps)]);
        let rules = Rules::compile(
            &[r#""search_docs" in run.calls && run.calls["search_docs"] > 5"#,
              "run.steps.filter(s, !s.ok).size() > 3",
              r#""retrieve" in run.calls"#],
            &[],
        ).unwrap();
        let b = rules.bind("run", run);
        assert_eq!((b.evaluate(0), b.evaluate(1), b.evaluate(2)),
                   (Outcome::Matched, Outcome::Matched, Outcome::NotMatched));
    }

    #[test]
    fn the_tools_an_expression_itself_requires_are_read_from_its_top_level_conjuncts() {
        let rules = Rules::compile(&[
            r#"span.status == "error" && span.tool == "calculator""#,
            r#""a" == span.tool && (span.args.x > 1 && span.tool in ["a", "b"])"#,
            r#"span.tool in ["a", "b"] && span.tool == "c""#,
            r#"span.tool == "a" || span.status == "error""#,
            r#"!(span.tool == "a") && true"#,
            r#"span.tool in ["a", span.name]"#,
            r#"span.name == "a" && other.tool == "b""#,
        ], &[]).unwrap();
        let got: Vec<_> = (0..rules.len()).map(|i| rules.implied_tools(i, "span")).collect();
        let v = |t: &[&str]| Some(t.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(got, vec![v(&["calculator"]), v(&["a"]), v(&[]), None, None, None, None]);
    }

    #[test]
    fn the_argument_keys_a_rule_reads_are_known_only_where_it_reads_the_map_by_literal_fields() {
        let rules = Rules::compile(&[
            "span.args.limit > 100 && has(span.args.q) && span.args.q.x == 1",
            r#"span.args.query.matches("a") || span.tool == "t""#,
            "size(span.args) > 1",
            r#"span.args["limit"] > 1"#,
            "span.args.exists(k, k == 'a')",
            "[1].exists(span, span.args.x == 1)",
            "span.status == 'error'",
            "has(span.args)",
            "{'a': span}.a.args.b == 1",
        ], &[]).unwrap();
        let got: Vec<_> = (0..rules.len()).map(|i| rules.arg_keys(i, "span")).collect();
        let v = |t: &[&str]| Some(t.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(got, vec![v(&["limit", "q"]), v(&["query"]), None, None, None, None, v(&[]), None, None]);
    }

    #[test]
    fn a_rule_is_false_on_a_span_of_another_tool_whatever_its_other_conjuncts_give() {
        // what `implied_tools` rests on: an error beside the false conjunct is absorbed
        let rules = Rules::compile(&[r#"span.args.missing > 1 && span.tool == "a""#], &[]).unwrap();
        let other = span(vec![("tool", text("b")), ("args", empty_map())]);
        assert_eq!(rules.bind("span", other).evaluate(0), Outcome::NotMatched);
        let same = span(vec![("tool", text("a")), ("args", empty_map())]);
        assert_eq!(rules.bind("span", same).evaluate(0), Outcome::Failed("no such key: missing".into()));
    }

    #[test]
    fn an_expression_that_is_not_true_or_false_fails_saying_what_it_gave() {
        assert_eq!(one("span.n", span(vec![("n", int(3))])),
                   Outcome::Failed("the expression gave int, not true or false".into()));
    }

    #[test]
    fn arithmetic_errors_say_what_went_wrong_without_rusts_debug_print() {
        let s = || span(vec![("n", int(100)), ("l", list(vec![int(1)]))]);
        assert_eq!(one("span.n / 0 == 1", s()), Outcome::Failed("division by zero".into()));
        assert_eq!(one("span.n % 0 == 1", s()), Outcome::Failed("modulus by zero".into()));
        assert_eq!(one("span.l[5] == 1", s()), Outcome::Failed("index 5 out of bounds".into()));
        assert_eq!(one("9223372036854775807 + span.n > 0", s()), Outcome::Failed("integer overflow in 'add'".into()));
    }

    #[test]
    fn ints_and_doubles_compare_by_value() {
        let s = || span(vec![("limit", double(100.5)), ("n", int(100))]);
        assert_eq!(one("span.limit > 100", s()), Outcome::Matched);
        assert_eq!(one("span.n == 100.0", s()), Outcome::Matched);
    }

    #[test]
    fn arguments_read_as_python_reads_them() {
        let big = args_value(r#"{"a": 18446744073709551616, "b": 9223372036854775807, "c": 1.5, "d": [1, "x"]}"#)
            .unwrap();
        let rules = Rules::compile(
            &["span.args.a == 18446744073709551616.0 && span.args.b == 9223372036854775807 \
               && span.args.c == 1.5 && span.args.d[1] == 'x'"],
            &[],
        ).unwrap();
        assert_eq!(rules.bind("span", span(vec![("args", big)])).evaluate(0), Outcome::Matched);
        let read = |t: &str| args_value(t).map(|v| value_of(&v).unwrap());
        assert_eq!(read("[1, 2]"), Some(value_of(&empty_map()).unwrap()));
        assert_eq!(read(""), Some(value_of(&empty_map()).unwrap()));
        assert_eq!(read("{\"a\": NaN}"), None); // Python's json reads it: the caller asks Python
        assert_eq!(read("{oops"), None);
    }
}
