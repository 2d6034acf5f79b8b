//! An answer held to the transcript's: [`compare`] exactly (the status, each listed
//! header, the body as JSON, text or events), and [`compare_with`] and
//! [`compare_answer`] with the differences [`Strictness::Learner`] lets through as
//! [`Note`]s (free words, optional members), the rules [`Strictness`] writes down.

use serde_json::Value;

use super::Strictness;
use super::events::events;
use super::show::shown_like;
use crate::transcript::HttpResponse;

/// One way an actual response differs from the expected one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mismatch {
    Status {
        expected: u16,
        actual: u16,
    },
    Header {
        name: String,
        expected: String,
        actual: Option<String>,
    },
    /// Both sides pretty-printed (JSON in the expected message's key order), ready to diff.
    Body {
        expected: String,
        actual: String,
    },
}

// ANCHOR: compare
/// Compare a response with the transcript's: the status, each listed header, and
/// the body (as JSON when the expected body is JSON, else as text).
pub fn compare(expected: &HttpResponse, actual: &HttpResponse) -> Vec<Mismatch> {
    let mut mismatches = Vec::new();
    if expected.status != actual.status {
        mismatches.push(Mismatch::Status { expected: expected.status, actual: actual.status });
    }
    for (name, value) in &expected.headers {
        let found = actual.header(name);
        if found != Some(value.as_str()) {
            mismatches.push(Mismatch::Header {
                name: name.clone(),
                expected: value.clone(),
                actual: found.map(str::to_string),
            });
        }
    }
    if !bodies_match(&expected.body, &actual.body) {
        let (wanted, given) = (shown_like(&expected.body, None), shown_like(&actual.body, Some(&expected.body)));
        mismatches.push(Mismatch::Body { expected: wanted, actual: given });
    }
    mismatches
}

pub(super) fn bodies_match(expected: &str, actual: &str) -> bool {
    if let Some(wanted) = events(expected) {
        return events(actual).is_some_and(|given| {
            given.len() == wanted.len()
                && wanted.iter().zip(&given).all(|(w, g)| w.name == g.name && bodies_match(&w.data, &g.data))
        });
    }
    match (serde_json::from_str::<Value>(expected), serde_json::from_str::<Value>(actual)) {
        (Ok(expected), Ok(actual)) => expected == actual,
        _ => expected.trim_end() == actual.trim_end(),
    }
}
// ANCHOR_END: compare

/// Something a learner's answer does differently from the chapter's, which
/// [`Strictness::Learner`] looks at before comparing the rest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    /// Where, as a learner reads it: `error.message`, `result.content[0].text`; for a
    /// stdio exchange, `line 2: result.isError`.
    pub path: String,
    /// Where, as a JSON pointer into the message (for stdio, after the line's number
    /// and a `#`: `1#/result/isError`), to find the lines it explains.
    pub pointer: String,
    pub kind: NoteKind,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NoteKind {
    /// Free words, worded differently: fine.
    Reworded { expected: String, actual: String },
    /// A failed call's text that does not name every argument the chapter's names.
    Unnamed { missing: Vec<String> },
    /// Free words that quote more of the client's input than the chapter's, which cut it
    /// after `quote`.
    Overquoted { quote: String },
    /// Free words that repeat more than 80 characters of something the client sent, where
    /// the chapter's words do not: `quote` is how the run starts.
    Repeated { quote: String },
    /// A member the chapter does not send and the protocol defines as optional: fine.
    Optional { reason: &'static str },
    /// A member the chapter does not send, and not an optional one.
    Unexpected,
}

impl Note {
    /// Whether this difference fails the exchange.
    pub fn counts(&self) -> bool {
        matches!(
            self.kind,
            NoteKind::Unnamed { .. } | NoteKind::Overquoted { .. } | NoteKind::Repeated { .. } | NoteKind::Unexpected
        )
    }
}

/// [`compare`], with the differences [`Strictness`] allows let through as notes.
pub fn compare_with(
    expected: &HttpResponse,
    actual: &HttpResponse,
    strictness: Strictness,
) -> (Vec<Mismatch>, Vec<Note>) {
    compare_answer("", expected, actual, strictness)
}

/// [`compare_with`] for the answer to `sent`, the body of the request: the rules of
/// [`Strictness`] that depend on what the client sent (its method, its strings) use it.
pub fn compare_answer(
    sent: &str,
    expected: &HttpResponse,
    actual: &HttpResponse,
    strictness: Strictness,
) -> (Vec<Mismatch>, Vec<Note>) {
    let sent: Option<Value> = serde_json::from_str(sent).ok();
    if strictness == Strictness::Learner
        && let Some((notes, forgiven)) = forgive(&expected.body, &actual.body, sent.as_ref())
    {
        let mut mismatches = compare(expected, &HttpResponse { body: forgiven, ..actual.clone() });
        // The difference shown is the learner's own answer, not the forgiven one.
        for mismatch in &mut mismatches {
            if let Mismatch::Body { actual: shown, .. } = mismatch {
                *shown = shown_like(&actual.body, Some(&expected.body));
            }
        }
        return (mismatches, notes);
    }
    (compare(expected, actual), Vec::new())
}

/// The `actual` message as [`Strictness::Learner`] compares it, and the notes on it:
/// each free text (see [`Strictness`]) that differs but names what the chapter's names
/// is replaced by the expected words; a JSON text block equal as JSON to the expected
/// one is replaced by it; an optional member is taken out. `None` when the messages
/// are not JSON. `sent` is the message the answer answers, when known.
pub(super) fn forgive(expected: &str, actual: &str, sent: Option<&Value>) -> Option<(Vec<Note>, String)> {
    let expected: Value = serde_json::from_str(expected).ok()?;
    let mut forgiven: Value = serde_json::from_str(actual).ok()?;
    let failed = |body: &Value| body.pointer("/result/isError") == Some(&Value::Bool(true));
    let tool_failed = failed(&expected) && failed(&forgiven);
    let invalid_params = |body: &Value| body.pointer("/error/code") == Some(&Value::from(-32602));
    let prompt_refused = sent.and_then(|s| s.get("method")) == Some(&Value::from("prompts/get"))
        && invalid_params(&expected)
        && invalid_params(&forgiven);
    let blocks = expected.pointer("/result/content").and_then(Value::as_array).map_or(0, Vec::len);
    let mut inputs = Vec::new();
    if let Some(sent) = sent {
        long_strings_in(sent, &mut inputs);
    }
    // Each place as a JSON pointer, as the learner reads it, and how free its words are.
    let message_words = if prompt_refused { Words::Naming } else { Words::Free };
    let mut places = vec![("/error/message".to_string(), "error.message".to_string(), message_words)];
    let block_words = if tool_failed { Words::Naming } else { Words::Exact };
    places.extend(
        (0..blocks).map(|i| (format!("/result/content/{i}/text"), format!("result.content[{i}].text"), block_words)),
    );
    if let Some(Value::Array(tools)) = expected.pointer("/result/tools") {
        for (i, tool) in tools.iter().enumerate() {
            prose_in(tool, &format!("/result/tools/{i}"), &format!("result.tools[{i}]"), &mut places);
        }
    }
    // The server's `instructions` (`initialize`, `server/discover`) are its author's words,
    // as a tool's description is: a copy of the starter writes its own.
    places.push(("/result/instructions".to_string(), "result.instructions".to_string(), Words::Free));
    let mut notes = Vec::new();
    for (place, path, words) in places {
        let (Some(Value::String(wanted)), Some(Value::String(given))) =
            (expected.pointer(&place), forgiven.pointer(&place))
        else {
            continue;
        };
        if wanted == given {
            continue;
        }
        let same_json = matches!(
            (serde_json::from_str::<Value>(wanted), serde_json::from_str::<Value>(given)),
            (Ok(a), Ok(b)) if a == b
        );
        if !same_json {
            if words != Words::Exact
                && let Some(quote) = overquoted(wanted, given)
            {
                notes.push(Note { path, pointer: place, kind: NoteKind::Overquoted { quote } });
                continue;
            }
            if words != Words::Exact
                && let Some(quote) = repeated(wanted, given, &inputs)
            {
                notes.push(Note { path, pointer: place, kind: NoteKind::Repeated { quote } });
                continue;
            }
            match words {
                Words::Exact => continue,
                Words::Naming => {
                    let missing: Vec<String> =
                        quoted_names(wanted).into_iter().filter(|name| !names(given, name)).collect();
                    if !missing.is_empty() {
                        notes.push(Note { path, pointer: place, kind: NoteKind::Unnamed { missing } });
                        continue;
                    }
                }
                Words::Free => {}
            }
            let kind = NoteKind::Reworded { expected: wanted.clone(), actual: given.clone() };
            notes.push(Note { path, pointer: place.clone(), kind });
        }
        *forgiven.pointer_mut(&place).expect("just read") = Value::String(wanted.clone());
    }
    let mut extra = Vec::new();
    members_not_in(&expected, &forgiven, &mut Vec::new(), &mut extra);
    for Extra { at, value, added_only } in extra {
        let keys: Vec<&str> = at.iter().map(|s| s.key.as_str()).collect();
        let (path, pointer) = (display_path(&at), json_pointer(&at));
        match optional_member(&keys, &value, &expected) {
            Some(reason) => {
                remove_member(&mut forgiven, &at);
                notes.push(Note { path, pointer, kind: NoteKind::Optional { reason } });
            }
            None if added_only => notes.push(Note { path, pointer, kind: NoteKind::Unexpected }),
            None => {}
        }
    }
    Some((notes, forgiven.to_string()))
}

/// How free the words at one place are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Words {
    /// Compared exactly (a successful tool's output).
    Exact,
    /// Free, as long as they name what the chapter's words quote in backticks.
    Naming,
    /// Free.
    Free,
}

/// Every string `title` or `description` member inside `value` (found at `pointer`,
/// shown as `path`), at any depth, as a free place for [`forgive`].
fn prose_in(value: &Value, pointer: &str, path: &str, places: &mut Vec<(String, String, Words)>) {
    let Value::Object(members) = value else { return };
    for (key, member) in members {
        // A JSON pointer escapes `~` and `/` in a key.
        let (pointer, path) =
            (format!("{pointer}/{}", key.replace('~', "~0").replace('/', "~1")), format!("{path}.{key}"));
        match member {
            Value::String(_) if key == "title" || key == "description" => places.push((pointer, path, Words::Free)),
            Value::Object(_) => prose_in(member, &pointer, &path, places),
            _ => {}
        }
    }
}

/// The names a text quotes in backticks: "`rate` is missing; `hours` must be ..." ->
/// `rate`, `hours`.
fn quoted_names(text: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    for name in text.split('`').skip(1).step_by(2) {
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_string());
        }
    }
    names
}

/// The start of client input the chapter's words quote cut short (`echo`: at most 80
/// characters, then `…`) and the learner's words quote further: `Some(that start)`.
/// Further means the same characters followed by a letter or digit, not by an end.
fn overquoted(wanted: &str, given: &str) -> Option<String> {
    wanted.match_indices('…').find_map(|(at, _)| {
        let quote: String = {
            let before: Vec<char> = wanted[..at].chars().collect();
            before[before.len().saturating_sub(80)..].iter().collect()
        };
        let long_enough = quote.chars().count() >= 40;
        let further = given
            .match_indices(quote.as_str())
            .any(|(start, _)| given[start + quote.len()..].chars().next().is_some_and(char::is_alphanumeric));
        (long_enough && further).then_some(quote)
    })
}

/// How many characters of client input an answer may repeat: `echo`'s 80.
const ECHOED: usize = 80;

/// Every string in `value` (keys too) longer than [`ECHOED`] characters.
fn long_strings_in<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    let long = |text: &str| text.chars().nth(ECHOED).is_some();
    match value {
        Value::String(text) if long(text) => found.push(text),
        Value::Array(items) => items.iter().for_each(|item| long_strings_in(item, found)),
        Value::Object(members) => {
            for (key, member) in members {
                if long(key) {
                    found.push(key);
                }
                long_strings_in(member, found);
            }
        }
        _ => {}
    }
}

/// Every run of [`ECHOED`] + 1 characters in `text`.
fn runs(text: &str) -> impl Iterator<Item = &str> {
    let bounds: Vec<usize> = text.char_indices().map(|(at, _)| at).chain([text.len()]).collect();
    (0..bounds.len().saturating_sub(ECHOED + 1)).map(move |i| &text[bounds[i]..bounds[i + ECHOED + 1]])
}

/// A run of more than [`ECHOED`] characters of one of `inputs` (strings the client sent)
/// that the learner's words repeat and the chapter's do not: `Some(its first 40
/// characters)`.
fn repeated(wanted: &str, given: &str, inputs: &[&str]) -> Option<String> {
    if inputs.is_empty() || given.chars().nth(ECHOED).is_none() {
        return None;
    }
    let sent: std::collections::HashSet<&str> = inputs.iter().flat_map(|input| runs(input)).collect();
    let run = runs(given).find(|run| sent.contains(run) && !wanted.contains(run))?;
    Some(run.chars().take(40).collect())
}

/// Does `text` name `name`, as a word of its own (`rate`, not `generate`)?
fn names(text: &str, name: &str) -> bool {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + name.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// One step into a JSON value: an object's key, or an array's index.
#[derive(Debug, Clone)]
struct Segment {
    key: String,
    index: bool,
}

/// Members of `actual` that `expected` lacks, where both have the object that would
/// hold them: their path, their value, and whether they are all that differs in that
/// object's list of members (none of the expected ones is missing). Arrays of the same
/// length are walked item by item.
fn members_not_in(expected: &Value, actual: &Value, at: &mut Vec<Segment>, found: &mut Vec<Extra>) {
    match (expected, actual) {
        (Value::Object(wanted), Value::Object(given)) => {
            let added_only = wanted.keys().all(|key| given.contains_key(key));
            for (key, value) in given {
                at.push(Segment { key: key.clone(), index: false });
                match wanted.get(key) {
                    Some(inner) => members_not_in(inner, value, at, found),
                    None => found.push(Extra { at: at.clone(), value: value.clone(), added_only }),
                }
                at.pop();
            }
        }
        (Value::Array(wanted), Value::Array(given)) if wanted.len() == given.len() => {
            for (i, (inner, value)) in wanted.iter().zip(given).enumerate() {
                at.push(Segment { key: i.to_string(), index: true });
                members_not_in(inner, value, at, found);
                at.pop();
            }
        }
        _ => {}
    }
}

/// A member the learner's answer has and the chapter's lacks.
struct Extra {
    at: Vec<Segment>,
    value: Value,
    /// The object holding it has every member the chapter's has: the learner added
    /// something, rather than sent another shape (`error` for `result`, which the
    /// side-by-side shows well enough).
    added_only: bool,
}

fn display_path(segments: &[Segment]) -> String {
    let mut path = String::new();
    for segment in segments {
        if segment.index {
            path.push_str(&format!("[{}]", segment.key));
        } else {
            if !path.is_empty() {
                path.push('.');
            }
            path.push_str(&segment.key);
        }
    }
    path
}

fn json_pointer(segments: &[Segment]) -> String {
    segments.iter().map(|s| format!("/{}", s.key.replace('~', "~0").replace('/', "~1"))).collect()
}

fn remove_member(value: &mut Value, segments: &[Segment]) {
    let Some((last, parent)) = segments.split_last() else { return };
    if let Some(Value::Object(members)) = value.pointer_mut(&json_pointer(parent)) {
        members.shift_remove(&last.key);
    }
}

// ANCHOR: optional_member
/// Why a member the chapter's answer lacks may stand in a learner's: `Some(reason)`
/// when the protocol defines it as optional there (`schema/2025-11-25/schema.ts`) and
/// its value says nothing its absence would not, or only describes the server.
/// `keys` is its path, `value` its value, `expected` the chapter's whole message.
pub fn optional_member(keys: &[&str], value: &Value, expected: &Value) -> Option<&'static str> {
    const ABSENT_MEANS_FALSE: &str = "false is what a client assumes when it is left out";
    const DESCRIBES_THE_SERVER: &str = "it describes the server, and a client needs none of it to go on";
    let (is_false, is_text) = (value == &Value::Bool(false), value.is_string());
    // The answers that introduce a server: `initialize`'s and `server/discover`'s.
    let introduces =
        ["/result/protocolVersion", "/result/supportedVersions"].iter().any(|p| expected.pointer(p).is_some());
    match keys {
        ["result", "isError"] if is_false => Some(ABSENT_MEANS_FALSE),
        ["result", "capabilities", _, "listChanged" | "subscribe"] if is_false => Some(ABSENT_MEANS_FALSE),
        ["result", "instructions"] if is_text && introduces => Some(DESCRIBES_THE_SERVER),
        ["result", "serverInfo" | "_meta", .., "title" | "description" | "websiteUrl"] if is_text => {
            Some(DESCRIBES_THE_SERVER)
        }
        ["result", "serverInfo" | "_meta", .., "icons"] if value.is_array() => Some(DESCRIBES_THE_SERVER),
        _ => None,
    }
}
// ANCHOR_END: optional_member

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn response(status: u16, body: &str) -> HttpResponse {
        HttpResponse { status, headers: vec![("Content-Type".into(), "application/json".into())], body: body.into() }
    }

    #[test]
    fn json_bodies_compare_as_json() {
        let expected = response(200, r#"{"id": 1, "jsonrpc": "2.0"}"#);
        assert!(compare(&expected, &response(200, r#"{"jsonrpc":"2.0","id":1}"#)).is_empty());
        // The id's type is part of the value: "1" is not 1.
        let mismatches = compare(&expected, &response(200, r#"{"jsonrpc":"2.0","id":"1"}"#));
        assert!(matches!(mismatches.as_slice(), [Mismatch::Body { .. }]), "{mismatches:?}");
    }

    #[test]
    fn a_learner_may_word_error_messages_freely() {
        let expected =
            response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found: ping"}}"#);
        let reworded = response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no such method"}}"#);
        let (mismatches, notes) = compare_with(&expected, &reworded, Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let kind = NoteKind::Reworded { expected: "Method not found: ping".into(), actual: "no such method".into() };
        assert_eq!(notes, [Note { path: "error.message".into(), pointer: "/error/message".into(), kind }]);
        // The code still counts, and the cargo tests still want the exact words.
        let wrong_code =
            response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"no such method"}}"#);
        assert_eq!(compare_with(&expected, &wrong_code, Strictness::Learner).0.len(), 1);
        assert_eq!(compare_with(&expected, &reworded, Strictness::Exact).0.len(), 1);
        // A message that is not a string is not a message.
        let no_message = response(200, r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601}}"#);
        assert_eq!(compare_with(&expected, &no_message, Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_learner_may_word_a_failed_tool_result_freely() {
        let result = |is_error: bool, text: &str| {
            response(
                200,
                &format!(
                    r#"{{"jsonrpc":"2.0","id":1,"result":{{"isError":{is_error},"content":[{{"type":"text","text":"{text}"}}]}}}}"#
                ),
            )
        };
        let expected = result(true, "Invalid arguments: `hours` is missing");
        let (mismatches, notes) = compare_with(&expected, &result(true, "hours?"), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert_eq!(notes[0].path, "result.content[0].text");
        assert!(!notes[0].counts());
        // isError itself counts, and a successful tool's text is its output, not prose.
        assert_eq!(compare_with(&expected, &result(false, "hours?"), Strictness::Learner).0.len(), 1);
        let success = result(false, "BISMILLAH");
        assert_eq!(compare_with(&success, &result(false, "bismillah"), Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_failed_call_must_name_each_argument_the_chapter_names() {
        let result = |text: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": {
                "content": [{"type": "text", "text": text}], "isError": true}});
            response(200, &body.to_string())
        };
        let expected = result("Invalid arguments: `rate` is missing; `hours` must be at most 24, not 30");
        let named = result("fix hours (too many) and give a rate");
        let (mismatches, notes) = compare_with(&expected, &named, Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert!(matches!(notes[0].kind, NoteKind::Reworded { .. }));
        // "bad" names nothing; "generate" is not `rate`: both fail, and say which names are missing.
        for (text, missing) in [("bad", vec!["rate", "hours"]), ("generate 30 hours", vec!["rate"])] {
            let (mismatches, notes) = compare_with(&expected, &result(text), Strictness::Learner);
            assert_eq!(mismatches.len(), 1, "{text}");
            let missing: Vec<String> = missing.into_iter().map(String::from).collect();
            assert_eq!(notes[0].kind, NoteKind::Unnamed { missing }, "{text}");
            assert!(notes[0].counts());
        }
    }

    #[test]
    fn free_words_quote_no_more_of_the_input_than_the_chapters() {
        let method = "tools/call".repeat(12);
        let cut: String = method.chars().take(80).collect();
        let error = |message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32601, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error(&format!("Method not found: {cut}…"));
        for fine in [format!("no method {cut}..."), format!("unknown: {}…", &cut[..40]), "unknown method".into()] {
            let (mismatches, _) = compare_with(&expected, &error(&fine), Strictness::Learner);
            assert!(mismatches.is_empty(), "{fine}: {mismatches:?}");
        }
        let (mismatches, notes) = compare_with(&expected, &error(&format!("no method {method}")), Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Overquoted { quote: cut });
    }

    #[test]
    fn free_words_repeat_no_long_run_of_what_the_client_sent() {
        let uri = format!("docs://{}", "pay rules ".repeat(20));
        let sent = json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": uri}}).to_string();
        let error = |message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error("Invalid params: `uri` must be a URI");
        let cut: String = uri.chars().take(80).collect();
        for fine in ["not a URI".to_string(), format!("not a URI: {cut}…")] {
            let (mismatches, _) = compare_answer(&sent, &expected, &error(&fine), Strictness::Learner);
            assert!(mismatches.is_empty(), "{fine}: {mismatches:?}");
        }
        let whole = error(&format!("{uri} is not a URI"));
        let (mismatches, notes) = compare_answer(&sent, &expected, &whole, Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Repeated { quote: uri.chars().take(40).collect() });
        // Without the request, nothing is known of what the client sent.
        assert!(compare_with(&expected, &whole, Strictness::Learner).0.is_empty());
    }

    #[test]
    fn a_prompts_invalid_params_error_must_name_each_argument_the_chapter_names() {
        let sent = r#"{"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "explain"}}"#;
        let error = |code: i64, message: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": message}});
            response(200, &body.to_string())
        };
        let expected = error(-32602, "Invalid params: missing required argument `question`");
        let named = error(-32602, "the question is missing");
        assert!(compare_answer(sent, &expected, &named, Strictness::Learner).0.is_empty());
        let (mismatches, notes) = compare_answer(sent, &expected, &error(-32602, "bad"), Strictness::Learner);
        assert_eq!(mismatches.len(), 1);
        assert_eq!(notes[0].kind, NoteKind::Unnamed { missing: vec!["question".into()] });
        // Another method's invalid params, and another code, keep their words free.
        let other = sent.replace("prompts/get", "tools/call");
        assert!(compare_answer(&other, &expected, &error(-32602, "bad"), Strictness::Learner).0.is_empty());
        let internal = error(-32603, "Internal error: `question` failed");
        assert!(compare_answer(sent, &internal, &error(-32603, "bad"), Strictness::Learner).0.is_empty());
    }

    #[test]
    fn an_optional_member_passes_with_a_note_and_another_member_fails() {
        let expected = response(200, r#"{"jsonrpc":"2.0","id":1,"result":{"content":[],"structuredContent":{}}}"#);
        let with = |member: &str| {
            response(
                200,
                &format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"content":[],{member},"structuredContent":{{}}}}}}"#),
            )
        };
        let (mismatches, notes) = compare_with(&expected, &with(r#""isError":false"#), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert_eq!(notes[0].path, "result.isError");
        assert!(matches!(notes[0].kind, NoteKind::Optional { .. }) && !notes[0].counts());
        // `true` says something: it is a difference. So is a member the protocol does not make optional.
        for member in [r#""isError":true"#, r#""structured":null"#] {
            let (mismatches, notes) = compare_with(&expected, &with(member), Strictness::Learner);
            assert_eq!(mismatches.len(), 1, "{member}");
            assert_eq!(notes[0].kind, NoteKind::Unexpected, "{member}");
        }
        // The cargo tests still want the chapter's answer exactly.
        assert_eq!(compare_with(&expected, &with(r#""isError":false"#), Strictness::Exact).0.len(), 1);
    }

    #[test]
    fn instructions_and_server_details_are_optional_where_a_server_introduces_itself() {
        let init = json!({"jsonrpc": "2.0", "id": 1, "result": {"protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}}, "serverInfo": {"name": "pingme", "version": "0.2.0"}}});
        let mut richer = init.clone();
        richer["result"]["instructions"] = json!("Call PingME to test the connection.");
        richer["result"]["serverInfo"]["title"] = json!("Ping me");
        richer["result"]["capabilities"]["tools"]["listChanged"] = json!(false);
        let (mismatches, notes) =
            compare_with(&response(200, &init.to_string()), &response(200, &richer.to_string()), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let paths: Vec<&str> = notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(paths, ["result.capabilities.tools.listChanged", "result.serverInfo.title", "result.instructions"]);
        // `instructions` in a tool's result is not the server introducing itself.
        let call = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": []}});
        let mut with_instructions = call.clone();
        with_instructions["result"]["instructions"] = json!("x");
        let (mismatches, _) = compare_with(
            &response(200, &call.to_string()),
            &response(200, &with_instructions.to_string()),
            Strictness::Learner,
        );
        assert_eq!(mismatches.len(), 1);
    }

    #[test]
    fn a_difference_shows_the_keys_in_the_transcripts_order() {
        let expected = response(200, r#"{"jsonrpc":"2.0","id":1,"result":{"protocolVersion":"x","capabilities":{}}}"#);
        let actual = response(200, r#"{"result":{"capabilities":{},"protocolVersion":"y"},"id":1,"jsonrpc":"2.0"}"#);
        let mismatches = compare(&expected, &actual);
        let [Mismatch::Body { expected, actual }] = mismatches.as_slice() else { panic!("{mismatches:?}") };
        assert_eq!(
            expected,
            "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 1,\n  \"result\": {\n    \"protocolVersion\": \"x\",\n    \"capabilities\": {}\n  }\n}"
        );
        assert_eq!(actual, &expected.replace("\"x\"", "\"y\""));
    }

    #[test]
    fn a_learner_may_word_tool_titles_and_descriptions_freely() {
        let list = |description: &str, property: &str, kind: &str| {
            let tool = json!({"name": "lookup_order", "title": "Look up", "description": description,
                "inputSchema": {"type": "object", "properties": {"orderId": {"type": kind, "description": property}}}});
            response(200, &json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": [tool]}}).to_string())
        };
        let expected = list("Looks up one order.", "The order's id.", "string");
        let (mismatches, notes) =
            compare_with(&expected, &list("Finds an order by id.", "Its id.", "string"), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        let paths: Vec<&str> = notes.iter().map(|n| n.path.as_str()).collect();
        assert_eq!(
            paths,
            ["result.tools[0].description", "result.tools[0].inputSchema.properties.orderId.description"]
        );
        // The schema itself still counts.
        let wrong_type = list("Looks up one order.", "The order's id.", "number");
        assert_eq!(compare_with(&expected, &wrong_type, Strictness::Learner).0.len(), 1);
    }

    #[test]
    fn a_learner_may_word_the_instructions_freely() {
        let answer = |instructions: &str| {
            let result = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "instructions": instructions});
            response(200, &json!({"jsonrpc": "2.0", "id": 1, "result": result}).to_string())
        };
        let expected = answer("These pay rules are one employer's.");
        let (mismatches, notes) = compare_with(&expected, &answer("Orders only."), Strictness::Learner);
        assert!(mismatches.is_empty(), "{mismatches:?}");
        assert!(matches!(notes[..], [Note { kind: NoteKind::Reworded { .. }, .. }]), "{notes:?}");
        assert_eq!(compare_with(&expected, &answer("Orders only."), Strictness::Exact).0.len(), 1);
    }

    #[test]
    fn a_json_text_block_compares_as_json_for_a_learner() {
        let result = |text: &str| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": text}]}});
            response(200, &body.to_string())
        };
        let expected = result(r#"{"hours":10.0,"rate":20.0}"#);
        let (mismatches, notes) =
            compare_with(&expected, &result(r#"{"rate": 20.0, "hours": 10.0}"#), Strictness::Learner);
        assert!(mismatches.is_empty() && notes.is_empty(), "{mismatches:?} {notes:?}");
        assert_eq!(compare_with(&expected, &result(r#"{"rate":20.0,"hours":11.0}"#), Strictness::Learner).0.len(), 1);
        assert_eq!(compare_with(&expected, &result(r#"{"rate":20.0,"hours":10.0}"#), Strictness::Exact).0.len(), 1);
    }

    #[test]
    fn status_and_listed_headers_are_compared() {
        let expected = response(405, "").clone();
        let mut expected = expected;
        expected.headers.push(("Allow".into(), "POST".into()));
        let actual = HttpResponse { status: 404, headers: vec![], body: String::new() };
        let mismatches = compare(&expected, &actual);
        assert_eq!(mismatches.len(), 3, "{mismatches:?}");
        assert_eq!(mismatches[0], Mismatch::Status { expected: 405, actual: 404 });
    }

    #[test]
    fn an_empty_expected_body_requires_an_empty_body() {
        let expected = HttpResponse { status: 202, headers: vec![], body: String::new() };
        assert!(compare(&expected, &HttpResponse { body: String::new(), ..expected.clone() }).is_empty());
        assert_eq!(compare(&expected, &HttpResponse { body: "{}".into(), ..expected.clone() }).len(), 1);
    }
}
