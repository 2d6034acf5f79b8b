//! The book's wire reference lists every HTTP status and JSON-RPC error code the
//! workbook's servers answer. This test holds its first table to the transcripts: each
//! (status, code) pair some transcript proves must have a row, and each row must be
//! proven by some transcript. Its second table lists what only the base answers (a
//! deadline missed, too many connections): each status the base's code answers with
//! must be in one table or the other, and the second holds nothing else.

use std::collections::BTreeSet;
use std::fs;

use mcp_workbook::chapters::{CHAPTERS, workbook_root};
use mcp_workbook::transcript::{self, During, Interruption};
use serde_json::Value;

/// A response's kind: its status and what its body says. `-` for a body that is
/// neither a JSON-RPC error nor a failed tool call.
fn kind(status: u16, body: &Value) -> (u16, String) {
    let code = if let Some(code) = body.pointer("/error/code") {
        code.to_string()
    } else if body.pointer("/result/isError") == Some(&Value::Bool(true)) {
        "isError".to_string()
    } else {
        "-".to_string()
    };
    (status, code)
}

/// The JSON a response body carries: the body itself, or the `data:` of an SSE event.
fn body_json(body: &str) -> Value {
    let json = body.lines().find_map(|line| line.strip_prefix("data:")).unwrap_or(body);
    serde_json::from_str(json.trim()).unwrap_or(Value::Null)
}

fn proven_by_transcripts() -> BTreeSet<(u16, String)> {
    let mut kinds = BTreeSet::new();
    for chapter in CHAPTERS {
        let text = fs::read_to_string(chapter.transcript_path()).unwrap();
        for exchange in transcript::parse(&text).unwrap().exchanges {
            kinds.insert(kind(exchange.expected.status, &body_json(&exchange.expected.body)));
            // A request sent while a response streams in has an answer of its own.
            for during in &exchange.during {
                if let During { action: Interruption::Send { expected, .. }, .. } = during {
                    kinds.insert(kind(expected.status, &body_json(&expected.body)));
                }
            }
        }
    }
    kinds
}

/// Rows of a table of the page: `| 200 | -32601 | ...` (code `-` for none). The first
/// table is the one before the heading `## Answered by the base alone`, the second the
/// one after it.
fn listed_in_the_book(second: bool) -> BTreeSet<(u16, String)> {
    let page = fs::read_to_string(workbook_root().join("book/src/appendix-wire.md")).unwrap();
    let (first_part, second_part) = page.split_once("## Answered by the base alone").expect("the base's heading");
    let part = if second { second_part } else { first_part };
    part.lines()
        .filter_map(|line| {
            let mut cells = line.split('|').map(str::trim).skip(1);
            let status = cells.next()?.trim_matches('`').parse().ok()?;
            let code = cells.next()?.trim_matches('`').to_string();
            Some((status, code))
        })
        .collect()
}

#[test]
fn the_wire_reference_lists_exactly_what_the_transcripts_prove() {
    let proven = proven_by_transcripts();
    let listed = listed_in_the_book(false);
    let missing: Vec<_> = proven.difference(&listed).collect();
    let unproven: Vec<_> = listed.difference(&proven).collect();
    assert!(
        missing.is_empty() && unproven.is_empty(),
        "book/src/appendix-wire.md and the transcripts disagree.\n\
         answered by a server but not in the table: {missing:?}\n\
         in the table but in no transcript: {unproven:?}"
    );
}

/// The statuses `src/http.rs` answers with itself: its refusals (`Refusal::new(413, ..`),
/// and the `500` for a handler that panicked (`Response::empty(500)`).
fn answered_by_the_base() -> BTreeSet<u16> {
    let base = fs::read_to_string(workbook_root().join("src/http.rs")).unwrap();
    ["Refusal::new(", "Response::empty("]
        .iter()
        .flat_map(|call| base.split(call).skip(1))
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next()?.parse().ok())
        .filter(|&status: &u16| status >= 100)
        .collect()
}

#[test]
fn the_base_table_lists_what_only_the_base_answers() {
    let in_transcripts: BTreeSet<u16> = proven_by_transcripts().into_iter().map(|(status, _)| status).collect();
    let base_table = listed_in_the_book(true);
    let base_statuses: BTreeSet<u16> = base_table.iter().map(|(status, _)| *status).collect();
    let base = answered_by_the_base();
    let missing: Vec<_> = base.iter().filter(|s| !in_transcripts.contains(s) && !base_statuses.contains(s)).collect();
    let not_the_base: Vec<_> = base_statuses.difference(&base).collect();
    // A status may be both (503: the base's, too many connections; chapter 14's, too
    // many long calls), but not with the same code.
    let proven = proven_by_transcripts();
    let in_both: Vec<_> = base_table.intersection(&proven).collect();
    assert!(
        missing.is_empty() && not_the_base.is_empty() && in_both.is_empty(),
        "book/src/appendix-wire.md's second table and src/http.rs disagree.\n\
         answered by the base, in no transcript and not in the table: {missing:?}\n\
         in the table but not answered by the base: {not_the_base:?}\n\
         in the table but proven by a transcript (move it to the first table): {in_both:?}"
    );
}
