//! A message as a reader sees it: pretty-printed with its keys in the transcript's
//! order, line by line with each line's JSON pointer ([`shown_lines`], which the check
//! lays side by side), a line diff ([`line_diff`]), and an answer as a blessed
//! transcript records it ([`as_recorded`]).

use serde_json::{Map, Value};

use crate::transcript::HttpResponse;

/// One line of a message as the check shows it, and the JSON pointer of the member
/// it belongs to (the prefix alone for a line of text that is not JSON).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub pointer: String,
}

/// A message pretty-printed, JSON with its keys in the order of `like` (the chapter's
/// message, so that the two sides line up in the order the transcript shows) and the
/// others after them; anything else as it is.
pub fn shown_like(body: &str, like: Option<&str>) -> String {
    shown_lines(body, like, "").iter().map(|line| line.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// [`shown_like`], line by line, each with its pointer after `prefix`.
pub fn shown_lines(body: &str, like: Option<&str>, prefix: &str) -> Vec<Line> {
    let Ok(json) = serde_json::from_str::<Value>(body) else {
        let pointer = prefix.to_string();
        return body.trim_end().lines().map(|text| Line { text: text.to_string(), pointer: pointer.clone() }).collect();
    };
    let like = like.and_then(|like| serde_json::from_str::<Value>(like).ok()).unwrap_or(Value::Null);
    let mut lines = Vec::new();
    pretty_lines(&ordered_like(json, &like), 0, "", &mut prefix.to_string(), false, &mut lines);
    lines
}

/// `value` with each object's keys in the order `like` has them, its other keys after.
fn ordered_like(value: Value, like: &Value) -> Value {
    match (value, like) {
        (Value::Object(mut members), Value::Object(order)) => {
            let mut ordered = Map::new();
            for (key, inner) in order {
                if let Some(value) = members.shift_remove(key) {
                    ordered.insert(key.clone(), ordered_like(value, inner));
                }
            }
            ordered.extend(members);
            Value::Object(ordered)
        }
        (Value::Array(items), Value::Array(order)) => Value::Array(
            items
                .into_iter()
                .enumerate()
                .map(|(i, item)| ordered_like(item, order.get(i).unwrap_or(&Value::Null)))
                .collect(),
        ),
        (value, _) => value,
    }
}

/// Pretty-print `value` as `serde_json::to_string_pretty` does, one [`Line`] at a time.
fn pretty_lines(value: &Value, depth: usize, key: &str, pointer: &mut String, comma: bool, lines: &mut Vec<Line>) {
    let indent = "  ".repeat(depth);
    let comma = if comma { "," } else { "" };
    let mut push = |text: String, pointer: &str| lines.push(Line { text, pointer: pointer.to_string() });
    let (open, close, items): (&str, &str, Vec<(String, &Value)>) = match value {
        Value::Object(members) if !members.is_empty() => {
            ("{", "}", members.iter().map(|(k, v)| (k.clone(), v)).collect())
        }
        Value::Array(items) if !items.is_empty() => {
            ("[", "]", items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect())
        }
        _ => {
            let text = serde_json::to_string(value).expect("a Value always serializes");
            push(format!("{indent}{key}{text}{comma}"), pointer);
            return;
        }
    };
    push(format!("{indent}{key}{open}"), pointer);
    let last = items.len() - 1;
    for (i, (name, item)) in items.into_iter().enumerate() {
        let before = pointer.len();
        pointer.push('/');
        pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
        let key = if value.is_object() {
            format!("{}: ", serde_json::to_string(&name).expect("a string"))
        } else {
            String::new()
        };
        pretty_lines(item, depth + 1, &key, pointer, i < last, lines);
        pointer.truncate(before);
    }
    lines.push(Line { text: format!("{indent}{close}{comma}"), pointer: pointer.clone() });
}

/// Lines written over stdio as the check shows them: each message pretty-printed (in
/// the key order of the same line of `like`), one after the other.
pub fn shown_stdio(lines: &[String], like: Option<&[String]>) -> String {
    shown_stdio_lines(lines, like).iter().map(|line| line.text.as_str()).collect::<Vec<_>>().join("\n")
}

/// [`shown_stdio`], line by line, each pointer after its message's number and a `#`.
pub fn shown_stdio_lines(lines: &[String], like: Option<&[String]>) -> Vec<Line> {
    let like_line = |i: usize| like.and_then(|like| like.get(i)).map(String::as_str);
    lines.iter().enumerate().flat_map(|(i, line)| shown_lines(line, like_line(i), &format!("{i}#"))).collect()
}

/// A minimal line diff (longest common subsequence): ` ` kept, `-` only in `old`,
/// `+` only in `new`.
pub fn line_diff(old: &str, new: &str) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    diff_steps(&a, &b)
        .into_iter()
        .map(|step| match step {
            (Some(i), Some(_)) => format!("  {}", a[i]),
            (Some(i), None) => format!("- {}", a[i]),
            (_, Some(j)) => format!("+ {}", b[j]),
            (None, None) => unreachable!("every step takes a line"),
        })
        .collect()
}

/// The steps of a minimal diff of `a` and `b` (longest common subsequence): `(Some(i),
/// Some(j))` keeps `a[i]`, equal to `b[j]`; `(Some(i), None)` removes `a[i]`;
/// `(None, Some(j))` adds `b[j]`.
pub fn diff_steps<T: PartialEq>(a: &[T], b: &[T]) -> Vec<(Option<usize>, Option<usize>)> {
    // common[i][j]: length of the longest common subsequence of a[i..] and b[j..].
    let mut common = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            common[i][j] = if a[i] == b[j] { common[i + 1][j + 1] + 1 } else { common[i + 1][j].max(common[i][j + 1]) };
        }
    }
    let (mut i, mut j, mut steps) = (0, 0, Vec::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            steps.push((Some(i), Some(j)));
            (i, j) = (i + 1, j + 1);
        } else if i < a.len() && (j == b.len() || common[i + 1][j] >= common[i][j + 1]) {
            steps.push((Some(i), None));
            i += 1;
        } else {
            steps.push((None, Some(j)));
            j += 1;
        }
    }
    steps
}

/// Response headers worth keeping when a transcript is blessed, besides the ones
/// the transcript already lists.
const HEADERS_THAT_MATTER: &[&str] = &["content-type", "allow", "www-authenticate", "mcp-session-id"];

/// The response as a transcript should record it: the headers that matter (those
/// the transcript already listed, and a few always worth showing) and the body
/// pretty-printed in the server's own key order.
pub fn as_recorded(actual: &HttpResponse, expected: &HttpResponse) -> HttpResponse {
    let headers = actual
        .headers
        .iter()
        .filter(|(name, _)| {
            expected.header(name).is_some() || HEADERS_THAT_MATTER.iter().any(|h| h.eq_ignore_ascii_case(name))
        })
        .cloned()
        .collect();
    let body = pretty_json(&actual.body).unwrap_or_else(|| actual.body.trim_end().to_string());
    HttpResponse { status: actual.status, headers, body }
}

/// Pretty-print JSON text keeping its key order (two-space indent, as
/// `serde_json::to_string_pretty`). `None` when the text is not JSON.
pub fn pretty_json(text: &str) -> Option<String> {
    serde_json::from_str::<Value>(text).ok()?;
    let mut out = String::new();
    let mut depth = 0;
    let mut chars = text.trim().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                out.push('"');
                while let Some(c) = chars.next() {
                    out.push(c);
                    match c {
                        '\\' => out.extend(chars.next()),
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '{' | '[' => {
                while chars.peek().is_some_and(|c| c.is_whitespace()) {
                    chars.next();
                }
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(c);
                    out.extend(chars.next());
                } else {
                    out.push(c);
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth -= 1;
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c if c.is_whitespace() => {}
            c => out.push(c),
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pretty_lines_match_serde_json_and_carry_pointers() {
        let text = r#"{"a":[1,{"b/c":"x","d":[]}],"e":{},"f":null,"g":10.0}"#;
        let lines = shown_lines(text, None, "");
        let joined: Vec<&str> = lines.iter().map(|l| l.text.as_str()).collect();
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(joined.join("\n"), serde_json::to_string_pretty(&value).unwrap());
        let x = lines.iter().find(|l| l.text.contains("\"x\"")).unwrap();
        assert_eq!(x.pointer, "/a/1/b~1c");
    }
    #[test]
    fn pretty_json_keeps_key_order() {
        let pretty = pretty_json(r#"{"jsonrpc":"2.0","id":"a,b","result":{},"list":[1,{"k":"\"x\""}]}"#).unwrap();
        assert_eq!(
            pretty,
            "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": \"a,b\",\n  \"result\": {},\n  \"list\": [\n    1,\n    {\n      \"k\": \"\\\"x\\\"\"\n    }\n  ]\n}"
        );
        assert_eq!(pretty_json("not json"), None);
    }

    #[test]
    fn line_diff_marks_changes() {
        assert_eq!(line_diff("a\nb\nc", "a\nx\nc"), ["  a", "- b", "+ x", "  c"]);
    }
}
