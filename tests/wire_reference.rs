//! The book's wire reference lists every HTTP status and JSON-RPC error code the
//! workbook's servers answer. This test holds the table to the transcripts: each
//! (status, code) pair some transcript proves must have a row, and each row must be
//! proven by some transcript.

use std::collections::BTreeSet;
use std::fs;

use mcp_workbook::chapters::{CHAPTERS, workbook_root};
use mcp_workbook::transcript::{self, Exchange};
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
fn body_json(exchange: &Exchange) -> Value {
    let body = &exchange.expected.body;
    let json = body.lines().find_map(|line| line.strip_prefix("data:")).unwrap_or(body);
    serde_json::from_str(json.trim()).unwrap_or(Value::Null)
}

fn proven_by_transcripts() -> BTreeSet<(u16, String)> {
    let mut kinds = BTreeSet::new();
    for chapter in CHAPTERS {
        let text = fs::read_to_string(chapter.transcript_path()).unwrap();
        for exchange in transcript::parse(&text).unwrap().exchanges {
            kinds.insert(kind(exchange.expected.status, &body_json(&exchange)));
        }
    }
    kinds
}

/// Rows of the reference table: `| 200 | -32601 | ...` (code `-` for none).
fn listed_in_the_book() -> BTreeSet<(u16, String)> {
    let page = fs::read_to_string(workbook_root().join("book/src/appendix-wire.md")).unwrap();
    page.lines()
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
    let listed = listed_in_the_book();
    let missing: Vec<_> = proven.difference(&listed).collect();
    let unproven: Vec<_> = listed.difference(&proven).collect();
    assert!(
        missing.is_empty() && unproven.is_empty(),
        "book/src/appendix-wire.md and the transcripts disagree.\n\
         answered by a server but not in the table: {missing:?}\n\
         in the table but in no transcript: {unproven:?}"
    );
}
