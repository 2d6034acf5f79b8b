//! What every tool definition in every transcript must satisfy. The transcripts are
//! proven equal to the wire by `tests/transcripts.rs`, so checking the definitions
//! they record checks the definitions the servers send.

use mcp_workbook::chapters::CHAPTERS;
use mcp_workbook::transcript::{self, Transcript};
use serde_json::Value;

fn transcripts() -> Vec<(&'static str, Transcript)> {
    CHAPTERS
        .iter()
        .map(|chapter| {
            let text = std::fs::read_to_string(chapter.transcript_path()).unwrap();
            (chapter.name, transcript::parse(&text).unwrap())
        })
        .collect()
}

/// Every tool definition a `tools/list` response in the transcript carries.
fn listed_tools(transcript: &Transcript) -> Vec<Value> {
    let mut tools = Vec::new();
    for exchange in &transcript.exchanges {
        let Ok(body) = serde_json::from_str::<Value>(&exchange.expected.body) else { continue };
        if let Some(Value::Array(listed)) = body.pointer("/result/tools") {
            tools.extend(listed.iter().cloned());
        }
    }
    tools
}

/// `^[a-zA-Z0-9_-]{1,64}$`: what the model APIs behind hosts accept, stricter than
/// the specification's 1 to 128 characters with dots.
fn portable_name(name: &str) -> bool {
    (1..=64).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

#[test]
fn every_listed_tool_is_well_described() {
    let mut problems = Vec::new();
    for (chapter, transcript) in transcripts() {
        for tool in listed_tools(&transcript) {
            let name = tool["name"].as_str().unwrap_or("");
            if !portable_name(name) {
                problems.push(format!("{chapter}: tool name {name:?} is outside ^[a-zA-Z0-9_-]{{1,64}}$"));
            }
            if tool["description"].as_str().is_none_or(|d| d.trim().is_empty()) {
                problems.push(format!("{chapter}: {name} has no description"));
            }
            let schema = &tool["inputSchema"];
            if schema["type"] != "object" {
                problems.push(format!("{chapter}: {name}: inputSchema root is not type object"));
            }
            if let Some(Value::Object(properties)) = schema.get("properties") {
                for (property, definition) in properties {
                    if definition["description"].as_str().is_none_or(|d| d.trim().is_empty()) {
                        problems.push(format!("{chapter}: {name}.{property} has no description"));
                    }
                }
            }
            if let Some(output) = tool.get("outputSchema")
                && output["type"] != "object"
            {
                problems.push(format!("{chapter}: {name}: outputSchema root is not type object (2025-11-25)"));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_name_check_is_the_portable_pattern() {
    assert!(portable_name("PingME"));
    assert!(portable_name("calculate_overtime"));
    assert!(!portable_name("admin.tools.list"));
    assert!(!portable_name(""));
    assert!(!portable_name(&"a".repeat(65)));
}
