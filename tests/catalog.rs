//! What every resource, prompt and completion in every transcript must satisfy, as
//! `tests/tools.rs` does for tools. The transcripts are proven equal to the wire by
//! `tests/transcripts.rs`, so checking what they record checks what the servers send:
//! the shapes the schema gives (`schema/2025-11-25/schema.ts`: `Resource`,
//! `ReadResourceResult`, `Prompt`, `GetPromptResult`, `CompleteResult`), and the facts
//! that tie them together (a listed `size` is the size of what a read answers).

use mcp_workbook::chapters::CHAPTERS;
use mcp_workbook::transcript;
use serde_json::Value;

/// Every JSON-RPC result in every transcript, HTTP and stdio, with where it came from.
fn results() -> Vec<(String, Value)> {
    let mut found = Vec::new();
    for chapter in CHAPTERS {
        let text = std::fs::read_to_string(chapter.transcript_path()).unwrap();
        let transcript = transcript::parse(&text).unwrap();
        let http = transcript.exchanges.iter().map(|e| (e.title.clone(), e.expected.body.clone()));
        let stdio = transcript.stdio.iter().flat_map(|e| e.expected.iter().map(|line| (e.title.clone(), line.clone())));
        for (title, body) in http.chain(stdio) {
            let Ok(body) = serde_json::from_str::<Value>(&body) else { continue };
            if let Some(result) = body.get("result") {
                found.push((format!("{}: {title}", chapter.name), result.clone()));
            }
        }
    }
    found
}

fn is_text(value: &Value) -> bool {
    value.as_str().is_some_and(|text| !text.trim().is_empty())
}

/// Standard base64 with padding (RFC 4648), or `None`.
fn base64_decode(text: &str) -> Option<Vec<u8>> {
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if !text.len().is_multiple_of(4) {
        return None;
    }
    let digits = text.trim_end_matches('=');
    if text.len() - digits.len() > 2 {
        return None;
    }
    let (mut bytes, mut bits, mut count) = (Vec::new(), 0u32, 0);
    for c in digits.bytes() {
        bits = (bits << 6) | ALPHABET.iter().position(|&a| a == c)? as u32;
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
        }
    }
    Some(bytes)
}

/// One entry of `contents`, or the `resource` of an embedded resource: a `uri`, a
/// `mimeType` (which embedded resources MUST have), and exactly one of `text` and a
/// `blob` in base64. Gives the decoded size.
fn check_contents(place: &str, entry: &Value, problems: &mut Vec<String>) -> Option<usize> {
    if !is_text(&entry["uri"]) || !is_text(&entry["mimeType"]) {
        problems.push(format!("{place}: an entry without `uri` or `mimeType`: {entry}"));
    }
    match (entry.get("text"), entry.get("blob")) {
        (Some(Value::String(text)), None) => Some(text.len()),
        (None, Some(Value::String(blob))) => {
            let decoded = base64_decode(blob);
            if decoded.is_none() {
                problems.push(format!("{place}: `blob` is not base64"));
            }
            decoded.map(|bytes| bytes.len())
        }
        _ => {
            problems.push(format!("{place}: an entry needs exactly one of `text` and `blob`: {entry}"));
            None
        }
    }
}

#[test]
fn resources_are_listed_and_read_as_the_schema_says() {
    let mut problems = Vec::new();
    let mut listed_sizes = Vec::new();
    let mut read_sizes = Vec::new();
    let mut checked = 0;
    for (place, result) in results() {
        for resource in result["resources"].as_array().into_iter().flatten() {
            // The suite's `resources-list` wants a description too; a host shows it.
            for field in ["uri", "name", "title", "description", "mimeType"] {
                if !is_text(&resource[field]) {
                    problems.push(format!("{place}: resource without `{field}`: {resource}"));
                }
            }
            if let Some(size) = resource["size"].as_u64() {
                listed_sizes.push((resource["uri"].clone(), size as usize));
            }
            checked += 1;
        }
        for template in result["resourceTemplates"].as_array().into_iter().flatten() {
            for field in ["uriTemplate", "name", "title", "description", "mimeType"] {
                if !is_text(&template[field]) {
                    problems.push(format!("{place}: template without `{field}`: {template}"));
                }
            }
            checked += 1;
        }
        for entry in result["contents"].as_array().into_iter().flatten() {
            if let Some(size) = check_contents(&place, entry, &mut problems) {
                read_sizes.push((entry["uri"].clone(), size));
            }
            checked += 1;
        }
    }
    // A listed `size` is "the size of the raw resource content, in bytes (i.e., before
    // base64 encoding ...)": what a read of it decodes to.
    for (uri, size) in &listed_sizes {
        let reads: Vec<usize> = read_sizes.iter().filter(|(read, _)| read == uri).map(|(_, size)| *size).collect();
        if reads.is_empty() || reads.iter().any(|read| read != size) {
            problems.push(format!("{uri}: listed with size {size}, read as {reads:?} bytes"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 10, "expected resources to check, found {checked}");
}

#[test]
fn prompts_are_listed_and_got_as_the_schema_says() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (place, result) in results() {
        for prompt in result["prompts"].as_array().into_iter().flatten() {
            for field in ["name", "title", "description"] {
                if !is_text(&prompt[field]) {
                    problems.push(format!("{place}: prompt without `{field}`: {prompt}"));
                }
            }
            for argument in prompt["arguments"].as_array().into_iter().flatten() {
                if !is_text(&argument["name"])
                    || !is_text(&argument["description"])
                    || !argument["required"].is_boolean()
                {
                    problems.push(format!("{place}: an argument needs `name`, `description`, `required`: {argument}"));
                }
            }
            checked += 1;
        }
        for message in result["messages"].as_array().into_iter().flatten() {
            if !matches!(message["role"].as_str(), Some("user" | "assistant")) {
                problems.push(format!("{place}: a message's `role` is `user` or `assistant`: {message}"));
            }
            // One content block per message (`PromptMessage.content: ContentBlock`).
            let content = &message["content"];
            match content["type"].as_str() {
                Some("text") if is_text(&content["text"]) => {}
                Some("image") if is_text(&content["mimeType"]) => {
                    if content["data"].as_str().and_then(base64_decode).is_none() {
                        problems.push(format!("{place}: an image's `data` is not base64"));
                    }
                }
                Some("resource") => {
                    check_contents(&place, &content["resource"], &mut problems);
                }
                _ => problems.push(format!("{place}: a message with no content this server sends: {content}")),
            }
            checked += 1;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 10, "expected prompts to check, found {checked}");
}

#[test]
fn completions_keep_to_the_limits() {
    let mut problems = Vec::new();
    let mut checked = 0;
    for (place, result) in results() {
        let Some(completion) = result.get("completion") else { continue };
        let values = completion["values"].as_array().map(Vec::len);
        let total = completion["total"].as_u64().map(|total| total as usize);
        match (values, total, completion["hasMore"].as_bool()) {
            // "Must not exceed 100 items"; `total` may exceed what was sent, and
            // `hasMore` says whether it does.
            (Some(values), Some(total), Some(has_more)) if values <= 100 && total >= values => {
                if has_more != (total > values) {
                    problems.push(format!("{place}: `hasMore` {has_more} with {values} of {total} values"));
                }
            }
            _ => problems.push(format!("{place}: a completion needs `values` (at most 100), `total`, `hasMore`")),
        }
        checked += 1;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked >= 5, "expected completions to check, found {checked}");
}

#[test]
fn the_base64_decoder_is_right() {
    assert_eq!(base64_decode("TWFu"), Some(b"Man".to_vec()));
    assert_eq!(base64_decode("TWE="), Some(b"Ma".to_vec()));
    assert_eq!(base64_decode("TQ=="), Some(b"M".to_vec()));
    assert_eq!(base64_decode("TQ="), None);
    assert_eq!(base64_decode("T!=="), None);
}
