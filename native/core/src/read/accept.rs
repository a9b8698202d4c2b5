//! Which bytes are an `ExportTraceServiceRequest`: upb's acceptance, without its parse.
//!
//! Why it exists: the receivers had upb parse every request only to learn whether it was
//! one (the compiled reader builds the records, and export forwards the received bytes),
//! and that parse was ~7,000 instructions of a span's ~75,000 on the live bench's workload
//! (bench/README.md). This walk accepts exactly what upb's decoder accepts for the schema
//! of opentelemetry-proto's trace service (tests/read/test_accept.py holds it to upb on
//! generated, hand-written and byte-mutated requests), and names what it refuses and where:
//!
//! - a tag is a varint of at most 5 bytes whose value fits 32 bits; its field number is
//!   not 0 (inside an unknown group upb does not look); its wire type is not 6 or 7;
//! - a varint value has at most 10 bytes; a length at most 5, fitting 32 bits and the
//!   bytes left; fixed64 and fixed32 values have their 8 and 4 bytes;
//! - a known field of its declared wire type is read: a message is walked, a string must
//!   be UTF-8; of another wire type it is an unknown field, skipped, not read;
//! - an unknown group ends with its own end tag; an end tag without a start is refused;
//! - messages and groups nest at most 100 deep below the request (upb's default limit).

const MAX_DEPTH: u32 = 100;

#[derive(Clone, Copy)]
enum Msg {
    Request,
    ResourceSpans,
    Resource,
    EntityRef,
    KeyValue,
    AnyValue,
    ArrayValue,
    KeyValueList,
    ScopeSpans,
    Scope,
    Span,
    Event,
    Link,
    Status,
}

#[derive(Clone, Copy)]
enum Kind {
    Message(Msg),
    Str,
    Bytes,
    Varint,
    Fixed64,
    Fixed32,
}

impl Kind {
    fn wire_type(self) -> u8 {
        match self {
            Kind::Varint => 0,
            Kind::Fixed64 => 1,
            Kind::Message(_) | Kind::Str | Kind::Bytes => 2,
            Kind::Fixed32 => 5,
        }
    }
}

/// The schema: a message's field ``n``, by name, kind and whether it is repeated
/// (opentelemetry-proto 1.x: collector/trace/v1, trace/v1, resource/v1, common/v1).
fn field(m: Msg, n: u64) -> Option<(&'static str, Kind, bool)> {
    use Kind::*;
    Some(match (m, n) {
        (Msg::Request, 1) => ("resource_spans", Message(Msg::ResourceSpans), true),
        (Msg::ResourceSpans, 1) => ("resource", Message(Msg::Resource), false),
        (Msg::ResourceSpans, 2) => ("scope_spans", Message(Msg::ScopeSpans), true),
        (Msg::ResourceSpans, 3) => ("schema_url", Str, false),
        (Msg::Resource, 1) => ("attributes", Message(Msg::KeyValue), true),
        (Msg::Resource, 2) => ("dropped_attributes_count", Varint, false),
        (Msg::Resource, 3) => ("entity_refs", Message(Msg::EntityRef), true),
        (Msg::EntityRef, 1) => ("schema_url", Str, false),
        (Msg::EntityRef, 2) => ("type", Str, false),
        (Msg::EntityRef, 3) => ("id_keys", Str, true),
        (Msg::EntityRef, 4) => ("description_keys", Str, true),
        (Msg::KeyValue, 1) => ("key", Str, false),
        (Msg::KeyValue, 2) => ("value", Message(Msg::AnyValue), false),
        (Msg::KeyValue, 3) => ("key_strindex", Varint, false),
        (Msg::AnyValue, 1) => ("string_value", Str, false),
        (Msg::AnyValue, 2) => ("bool_value", Varint, false),
        (Msg::AnyValue, 3) => ("int_value", Varint, false),
        (Msg::AnyValue, 4) => ("double_value", Fixed64, false),
        (Msg::AnyValue, 5) => ("array_value", Message(Msg::ArrayValue), false),
        (Msg::AnyValue, 6) => ("kvlist_value", Message(Msg::KeyValueList), false),
        (Msg::AnyValue, 7) => ("bytes_value", Bytes, false),
        (Msg::AnyValue, 8) => ("string_value_strindex", Varint, false),
        (Msg::ArrayValue, 1) => ("values", Message(Msg::AnyValue), true),
        (Msg::KeyValueList, 1) => ("values", Message(Msg::KeyValue), true),
        (Msg::ScopeSpans, 1) => ("scope", Message(Msg::Scope), false),
        (Msg::ScopeSpans, 2) => ("spans", Message(Msg::Span), true),
        (Msg::ScopeSpans, 3) => ("schema_url", Str, false),
        (Msg::Scope, 1) => ("name", Str, false),
        (Msg::Scope, 2) => ("version", Str, false),
        (Msg::Scope, 3) => ("attributes", Message(Msg::KeyValue), true),
        (Msg::Scope, 4) => ("dropped_attributes_count", Varint, false),
        (Msg::Span, 1) => ("trace_id", Bytes, false),
        (Msg::Span, 2) => ("span_id", Bytes, false),
        (Msg::Span, 3) => ("trace_state", Str, false),
        (Msg::Span, 4) => ("parent_span_id", Bytes, false),
        (Msg::Span, 5) => ("name", Str, false),
        (Msg::Span, 6) => ("kind", Varint, false),
        (Msg::Span, 7) => ("start_time_unix_nano", Fixed64, false),
        (Msg::Span, 8) => ("end_time_unix_nano", Fixed64, false),
        (Msg::Span, 9) => ("attributes", Message(Msg::KeyValue), true),
        (Msg::Span, 10) => ("dropped_attributes_count", Varint, false),
        (Msg::Span, 11) => ("events", Message(Msg::Event), true),
        (Msg::Span, 12) => ("dropped_events_count", Varint, false),
        (Msg::Span, 13) => ("links", Message(Msg::Link), true),
        (Msg::Span, 14) => ("dropped_links_count", Varint, false),
        (Msg::Span, 15) => ("status", Message(Msg::Status), false),
        (Msg::Span, 16) => ("flags", Fixed32, false),
        (Msg::Event, 1) => ("time_unix_nano", Fixed64, false),
        (Msg::Event, 2) => ("name", Str, false),
        (Msg::Event, 3) => ("attributes", Message(Msg::KeyValue), true),
        (Msg::Event, 4) => ("dropped_attributes_count", Varint, false),
        (Msg::Link, 1) => ("trace_id", Bytes, false),
        (Msg::Link, 2) => ("span_id", Bytes, false),
        (Msg::Link, 3) => ("trace_state", Str, false),
        (Msg::Link, 4) => ("attributes", Message(Msg::KeyValue), true),
        (Msg::Link, 5) => ("dropped_attributes_count", Varint, false),
        (Msg::Link, 6) => ("flags", Fixed32, false),
        (Msg::Status, 2) => ("message", Str, false),
        (Msg::Status, 3) => ("code", Varint, false),
        _ => return None,
    })
}

/// What was refused, and where: the fields from the request down, innermost last.
struct Refused {
    what: &'static str,
    path: Vec<String>,
}

type Checked<T> = std::result::Result<T, Refused>;

fn refused<T>(what: &'static str) -> Checked<T> {
    Err(Refused { what, path: Vec::new() })
}

struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn varint(&mut self, max_bytes: usize) -> Checked<u64> {
        // most tags and lengths are one byte
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                return Ok(u64::from(b));
            }
        }
        let mut out: u64 = 0;
        for i in 0..max_bytes {
            let Some(&b) = self.buf.get(self.pos) else { return refused("a varint is cut short") };
            self.pos += 1;
            out |= u64::from(b & 0x7f).checked_shl(7 * i as u32).unwrap_or(0);
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        refused("a varint is too long")
    }

    /// A tag or a length: at most 5 bytes, fitting 32 bits.
    fn varint32(&mut self, what: &'static str) -> Checked<u64> {
        let Ok(v) = self.varint(5) else { return refused(what) };
        if v > u64::from(u32::MAX) {
            return refused(what);
        }
        Ok(v)
    }

    fn skip(&mut self, n: usize) -> Checked<&'a [u8]> {
        match self.pos.checked_add(n).filter(|&end| end <= self.buf.len()) {
            Some(end) => {
                let out = &self.buf[self.pos..end];
                self.pos = end;
                Ok(out)
            }
            None => refused("a field is cut short"),
        }
    }

    /// A value of wire type ``wt`` but a group: its bytes when length-delimited.
    fn value(&mut self, wt: u8) -> Checked<Option<&'a [u8]>> {
        match wt {
            0 => self.varint(10).map(|_| None),
            1 => self.skip(8).map(|_| None),
            2 => {
                let n = self.varint32("a length is malformed")?;
                self.skip(n as usize).map(Some)
            }
            5 => self.skip(4).map(|_| None),
            _ => refused("a field has an invalid wire type"),
        }
    }

    /// An unknown group's fields up to its end tag, nested groups included.
    fn skip_group(&mut self, number: u64, depth: u32) -> Checked<()> {
        if depth > MAX_DEPTH {
            return refused("messages are nested more than 100 deep");
        }
        loop {
            if self.pos >= self.buf.len() {
                return refused("a group has no end");
            }
            let tag = self.varint32("a tag is malformed")?;
            let (n, wt) = (tag >> 3, (tag & 7) as u8);
            match wt {
                4 if n == number => return Ok(()),
                4 => return refused("a group ends with another group's end"),
                3 => self.skip_group(n, depth + 1)?,
                _ => {
                    self.value(wt)?;
                }
            }
        }
    }
}

/// Walks message ``m`` in ``buf``, ``depth`` below the request.
fn check(buf: &[u8], m: Msg, depth: u32) -> Checked<()> {
    let mut c = Cursor { buf, pos: 0 };
    while c.pos < buf.len() {
        let at = c.pos;
        let tag = c.varint32("a tag is malformed")?;
        let (n, wt) = (tag >> 3, (tag & 7) as u8);
        if n == 0 {
            return refused("a field is numbered 0");
        }
        let known = field(m, n).filter(|(_, kind, _)| kind.wire_type() == wt);
        let inner = match wt {
            3 => c.skip_group(n, depth + 1),
            4 => refused("a group ends that never started"),
            _ => match (c.value(wt)?, known) {
                (Some(body), Some((_, Kind::Message(sub), _))) => {
                    // the fast walks do not count levels: they are taken only where every
                    // message they pass over (a KeyValue's AnyValue one below it, a span's
                    // attributes' values two below) lies within upb's limit; nearer the
                    // limit the general walk counts, and refuses as upb does
                    let d = depth + 1;
                    if d > MAX_DEPTH {
                        refused("messages are nested more than 100 deep")
                    } else if (matches!(sub, Msg::KeyValue) && d < MAX_DEPTH && plain_key_value(body))
                        || (matches!(sub, Msg::Span) && d + 2 <= MAX_DEPTH && plain_span(body, d)) {
                        Ok(())
                    } else {
                        check(body, sub, depth + 1)
                    }
                }
                // keys and names are ASCII: word at a time, before the general check
                (Some(body), Some((_, Kind::Str, _))) if !body.is_ascii() && std::str::from_utf8(body).is_err() => {
                    refused("a string is not UTF-8")
                }
                _ => Ok(()),
            },
        };
        if let Err(mut e) = inner {
            match known {
                Some((name, _, true)) => e.path.push(format!("{name}[{}]", occurrence(buf, at, n))),
                Some((name, _, false)) => e.path.push(name.to_owned()),
                None => {}
            }
            return Err(e);
        }
    }
    Ok(())
}

fn utf8_ok(s: &[u8]) -> bool {
    s.is_ascii() || std::str::from_utf8(s).is_ok()
}

impl<'a> Cursor<'a> {
    /// A length-delimited value's bytes, or None (malformed: the general walk names it).
    fn body(&mut self) -> Option<&'a [u8]> {
        let n = self.varint32("").ok()?;
        self.skip(n as usize).ok()
    }
}

/// Whether ``b`` is a `Span` upb accepts (``depth`` below the request), its fields told by
/// their one-byte tags instead of the schema's lookup, its attributes by `plain_key_value`
/// and its events, links and status by the general walk. False says nothing: the general
/// walk of the span decides, and names what is wrong (an unknown field, a known one of
/// another wire type, anything refused).
fn plain_span(b: &[u8], depth: u32) -> bool {
    let message = |m: Option<&[u8]>, sub: Msg| m.is_some_and(|m| depth < MAX_DEPTH && check(m, sub, depth + 1).is_ok());
    let mut c = Cursor { buf: b, pos: 0 };
    while let Some(&tag) = b.get(c.pos) {
        c.pos += 1;
        let ok = match tag {
            0x0a | 0x12 | 0x22 => c.body().is_some(),             // trace_id, span_id, parent_span_id
            0x1a | 0x2a => c.body().is_some_and(utf8_ok),           // trace_state, name
            0x30 | 0x50 | 0x60 | 0x70 => c.varint(10).is_ok(),      // kind, the dropped counts
            0x39 | 0x41 => c.skip(8).is_ok(),                       // start, end
            0x4a => c.body().is_some_and(plain_key_value),          // attributes
            0x5a => message(c.body(), Msg::Event),
            0x6a => message(c.body(), Msg::Link),
            0x7a => message(c.body(), Msg::Status),
            0x85 if b.get(c.pos) == Some(&0x01) => {                // flags (16, fixed32)
                c.pos += 1;
                c.skip(4).is_ok()
            }
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    true
}

/// Whether ``b`` is a `KeyValue` of the usual shape, which upb accepts: a UTF-8 key, then
/// (or not) a value holding one string, bool, int or double, each field once, in order.
/// False says nothing: the general walk decides, and names what is wrong. Attributes are
/// most of a span's fields, and the general walk of one (its key, its value's message, the
/// value) cost ~3 times this.
fn plain_key_value(b: &[u8]) -> bool {
    let mut c = Cursor { buf: b, pos: 1 };
    if b.first() != Some(&(1 << 3 | 2)) {
        return false;
    }
    let Some(key) = c.varint32("").ok().and_then(|n| c.skip(n as usize).ok()) else { return false };
    if !key.is_ascii() && std::str::from_utf8(key).is_err() {
        return false;
    }
    if c.pos == b.len() {
        return true;
    }
    if b[c.pos] != (2 << 3 | 2) {
        return false;
    }
    c.pos += 1;
    let Some(value) = c.varint32("").ok().and_then(|n| c.skip(n as usize).ok()) else { return false };
    c.pos == b.len() && plain_any_value(value)
}

/// Whether ``v`` is an `AnyValue` holding nothing, or one string, bool, int or double.
fn plain_any_value(v: &[u8]) -> bool {
    let Some(&tag) = v.first() else { return true };
    let mut c = Cursor { buf: v, pos: 1 };
    let ok = match tag {
        t if t == (1 << 3 | 2) => match c.varint32("").ok().and_then(|n| c.skip(n as usize).ok()) {
            Some(s) => s.is_ascii() || std::str::from_utf8(s).is_ok(),
            None => false,
        },
        t if t == (2 << 3) || t == (3 << 3) => c.varint(10).is_ok(),
        t if t == (4 << 3 | 1) => c.skip(8).is_ok(),
        _ => false,
    };
    ok && c.pos == v.len()
}

/// How many fields numbered ``n`` come before offset ``at`` of a message that was walked
/// up to there: which of a repeated field's values was refused (only ever on refusal).
fn occurrence(buf: &[u8], at: usize, n: u64) -> usize {
    let mut c = Cursor { buf, pos: 0 };
    let mut seen = 0;
    while c.pos < at {
        let Ok(tag) = c.varint32("") else { break };
        let wt = (tag & 7) as u8;
        let skipped = if wt == 3 { c.skip_group(tag >> 3, 0).map(|_| None) } else { c.value(wt) };
        if skipped.is_err() {
            break;
        }
        seen += usize::from(tag >> 3 == n);
    }
    seen
}

/// ``Ok`` when upb accepts ``data`` as an `ExportTraceServiceRequest`; else what it
/// refuses and where (``resource_spans[0].scope_spans[1].spans[3].name: a string is not
/// UTF-8``).
pub fn check_traces(data: &[u8]) -> Result<(), String> {
    check(data, Msg::Request, 0).map_err(|e| {
        let mut path = e.path;
        path.reverse();
        let place = if path.is_empty() { "the request".to_owned() } else { path.join(".") };
        format!("{place}: {}", e.what)
    })
}

#[cfg(test)]
mod tests {
    use super::check_traces;

    /// A length-delimited field: its tag (wire type 2), length and body.
    fn field(n: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![n << 3 | 2];
        crate::wire::put_varint(&mut out, body.len() as u64);
        out.extend_from_slice(body);
        out
    }

    fn request_with_span(span: &[u8]) -> Vec<u8> {
        field(1, &field(2, &field(2, span)))
    }

    #[test]
    fn an_empty_request_and_a_span_with_its_ids_are_accepted() {
        assert_eq!(check_traces(b""), Ok(()));
        let mut span = field(1, &[7; 16]);
        span.extend(field(2, &[9; 8]));
        span.extend(field(5, b"chat"));
        assert_eq!(check_traces(&request_with_span(&span)), Ok(()));
    }

    #[test]
    fn a_name_that_is_not_utf8_is_refused_where_it_lies() {
        let span = field(5, &[0xff, 0xfe]);
        assert_eq!(check_traces(&request_with_span(&span)).unwrap_err(),
                   "resource_spans[0].scope_spans[0].spans[0].name: a string is not UTF-8");
    }

    #[test]
    fn a_length_past_the_end_is_refused() {
        let err = check_traces(&[1 << 3 | 2, 5, 0]).unwrap_err();
        assert!(err.starts_with("the request") || err.starts_with("resource_spans[0]"), "{err}");
    }

    fn kv(body: &[u8]) -> Vec<u8> {
        request_with_span(&field(9, body))
    }

    #[test]
    fn attributes_of_the_usual_shape_and_of_every_other_are_judged_alike() {
        let key = field(1, b"gen_ai.tool.name");
        let ok = |value: &[u8]| {
            let mut b = key.clone();
            b.extend(field(2, value));
            check_traces(&kv(&b))
        };
        // the usual shapes: a string, a bool, an int, a double, an empty value, no value
        assert_eq!(ok(&field(1, "caf\u{e9}".as_bytes())), Ok(()));
        assert_eq!(ok(&[2 << 3, 1]), Ok(()));
        assert_eq!(ok(&[3 << 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01]), Ok(()));
        assert_eq!(ok(&[4 << 3 | 1, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f]), Ok(()));
        assert_eq!(ok(b""), Ok(()));
        assert_eq!(check_traces(&kv(&key)), Ok(()));
        // others the general walk takes: a value set twice, an array, the value before the key
        let mut twice = field(1, b"a");
        twice.extend(field(1, b"b"));
        assert_eq!(ok(&twice), Ok(()));
        assert_eq!(ok(&field(5, &field(1, &field(1, b"x")))), Ok(()));
        let mut reversed = field(2, &field(1, b"v"));
        reversed.extend(key.clone());
        assert_eq!(check_traces(&kv(&reversed)), Ok(()));
        // refused, and named, as before: a value that is not UTF-8, in a key or a value; an
        // int cut short; a double cut short
        let at = "resource_spans[0].scope_spans[0].spans[0].attributes[0]";
        assert_eq!(ok(&field(1, &[0xff])).unwrap_err(), format!("{at}.value.string_value: a string is not UTF-8"));
        assert_eq!(check_traces(&kv(&field(1, &[0xc3]))).unwrap_err(), format!("{at}.key: a string is not UTF-8"));
        assert_eq!(ok(&[3 << 3, 0x80]).unwrap_err(), format!("{at}.value: a varint is cut short"));
        assert!(ok(&[4 << 3 | 1, 0, 0]).unwrap_err().starts_with(&format!("{at}.value")));
    }

    #[test]
    fn a_span_of_every_field_is_accepted_and_one_refused_anywhere_is_named_as_before() {
        let mut span = field(1, &[7; 16]);
        span.extend(field(2, &[9; 8]));
        span.extend(field(3, b"k=v"));
        span.extend(field(4, &[8; 8]));
        span.extend(field(5, "chat caf\u{e9}".as_bytes()));
        span.extend([6 << 3, 3, 7 << 3 | 1, 1, 0, 0, 0, 0, 0, 0, 0, 8 << 3 | 1, 2, 0, 0, 0, 0, 0, 0, 0]);
        span.extend(field(9, &[field(1, b"a"), field(2, &field(1, b"b"))].concat()));
        span.extend([10 << 3, 1, 12 << 3, 1, 14 << 3, 1]);
        span.extend(field(11, &[field(2, b"event"), field(3, &field(1, b"x"))].concat()));
        span.extend(field(13, &[field(1, &[1; 16]), field(2, &[2; 8])].concat()));
        span.extend(field(15, &[field(2, b"boom"), vec![3 << 3, 2]].concat()));
        span.extend([0x85, 0x01, 1, 0, 0, 0]);
        assert_eq!(check_traces(&request_with_span(&span)), Ok(()));
        // unknown fields and known ones of another wire type: skipped, as upb skips them
        let mut odd = span.clone();
        odd.extend([1 << 3, 5, 99 << 3 | 2, 0, 0x98, 0x06, 0x01]);
        assert_eq!(check_traces(&request_with_span(&odd)), Ok(()));
        let at = "resource_spans[0].scope_spans[0].spans[0]";
        for (bad, named) in [
            (field(5, &[0xff]), format!("{at}.name: a string is not UTF-8")),
            (field(11, &field(2, &[0xc0])), format!("{at}.events[1].name: a string is not UTF-8")),
            (field(15, &field(2, &[0xc0])), format!("{at}.status.message: a string is not UTF-8")),
            (field(13, &field(3, &[0xc0])), format!("{at}.links[1].trace_state: a string is not UTF-8")),
            (vec![0x85, 0x01, 1], format!("{at}: a field is cut short")),
        ] {
            let mut s = span.clone();
            s.extend(bad);
            assert_eq!(check_traces(&request_with_span(&s)).unwrap_err(), named);
        }
    }

    #[test]
    fn a_plain_attribute_nested_past_the_limit_in_key_value_lists_is_refused() {
        // an attribute whose value is a kvlist of a kvlist ... of a plain attribute: each
        // level is three messages (AnyValue, KeyValueList, KeyValue)
        // in an event's attributes the innermost (plain) attribute lies at 5 + 3 x levels:
        // 32 levels put it at 101, one past upb's limit, with every level above it within
        let nest = |levels: usize| {
            let mut kv = [field(1, b"k"), field(2, &field(1, b"v"))].concat();
            for _ in 0..levels {
                kv = [field(1, b"k"), field(2, &field(6, &field(1, &kv)))].concat();
            }
            request_with_span(&field(11, &field(3, &kv)))
        };
        assert_eq!(check_traces(&nest(31)), Ok(()));
        let err = check_traces(&nest(32)).unwrap_err();
        assert!(err.ends_with("messages are nested more than 100 deep"), "{err}");
    }

    #[test]
    fn a_plain_attribute_at_the_limit_is_accepted_only_when_its_value_is_within_it() {
        // in a span's attributes the innermost attribute lies at 4 + 3 x levels: 32 levels
        // put it at 100, upb's limit, and its value's AnyValue at 101, past it (the fast
        // walk of a plain attribute does not count levels: it must not be taken there)
        let nest = |levels: usize, inner: Vec<u8>| {
            let mut kv = inner;
            for _ in 0..levels {
                kv = [field(1, b"k"), field(2, &field(6, &field(1, &kv)))].concat();
            }
            request_with_span(&field(9, &kv))
        };
        let with_value = [field(1, b"k"), field(2, &field(1, b"v"))].concat();
        let empty_value = [field(1, b"k"), field(2, b"")].concat();
        let key_only = field(1, b"k");
        assert_eq!(check_traces(&nest(31, with_value.clone())), Ok(()));
        assert_eq!(check_traces(&nest(32, key_only)), Ok(()));
        for inner in [with_value, empty_value] {
            let err = check_traces(&nest(32, inner)).unwrap_err();
            assert!(err.ends_with("value: messages are nested more than 100 deep"), "{err}");
        }
    }

    #[test]
    fn an_unknown_field_of_any_wire_type_is_skipped() {
        // field 99 as a varint, then a valid entry
        let mut data = vec![0x98, 0x06, 0x01];
        data.extend(request_with_span(&field(5, b"x")));
        assert_eq!(check_traces(&data), Ok(()));
    }
}
