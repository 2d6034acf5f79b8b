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

/// Each `tools/call` exchange of a transcript: the tool's name, the arguments sent,
/// and the JSON-RPC response expected.
fn calls(transcript: &Transcript) -> Vec<(String, Value, Value)> {
    let mut calls = Vec::new();
    for exchange in &transcript.exchanges {
        let Ok(request) = serde_json::from_str::<Value>(&exchange.request.body) else { continue };
        let Ok(response) = serde_json::from_str::<Value>(&exchange.expected.body) else { continue };
        if request["method"] != "tools/call" {
            continue;
        }
        let Some(name) = request["params"]["name"].as_str() else { continue };
        let arguments = request["params"].get("arguments").cloned().unwrap_or_else(|| serde_json::json!({}));
        calls.push((name.to_string(), arguments, response));
    }
    calls
}

fn definition<'a>(tools: &'a [Value], name: &str) -> Option<&'a Value> {
    tools.iter().find(|tool| tool["name"] == name)
}

/// Every `structuredContent` a transcript shows conforms to its tool's `outputSchema`
/// (as `tools/list` in the same transcript sends it), checked by a real JSON Schema
/// validator; the text block holds the same JSON; and a tool with an output schema
/// never answers a successful call without structured content.
#[test]
fn structured_results_conform_to_the_output_schema() {
    let mut validated = 0;
    let mut problems = Vec::new();
    for (chapter, transcript) in transcripts() {
        let tools = listed_tools(&transcript);
        for (name, _, response) in calls(&transcript) {
            let Some(result) = response.get("result") else { continue };
            let Some(tool) = definition(&tools, &name) else { continue };
            let failed = result["isError"] == true;
            match (tool.get("outputSchema"), result.get("structuredContent")) {
                (Some(schema), Some(structured)) => {
                    let validator = jsonschema::validator_for(schema).expect("the outputSchema is a valid schema");
                    for error in validator.iter_errors(structured) {
                        problems.push(format!("{chapter}: {name}: structuredContent breaks the outputSchema: {error}"));
                    }
                    let texts: Vec<Value> = result["content"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter(|block| block["type"] == "text")
                        .filter_map(|block| serde_json::from_str(block["text"].as_str()?).ok())
                        .collect();
                    if !texts.contains(structured) {
                        problems.push(format!("{chapter}: {name}: no text block holds the structuredContent as JSON"));
                    }
                    validated += 1;
                }
                (Some(_), None) if !failed => {
                    problems.push(format!("{chapter}: {name}: a successful result without structuredContent"));
                }
                (None, Some(_)) => {
                    problems.push(format!("{chapter}: {name}: structuredContent without an outputSchema"))
                }
                _ => {}
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(validated >= 3, "expected structured results to validate, found {validated}");
}

/// Chapter 5's argument checker and a real JSON Schema validator agree on every call
/// in the transcripts: a call is refused as invalid arguments exactly when the
/// validator rejects its arguments against the tool's `inputSchema`.
#[test]
fn the_argument_checker_agrees_with_a_json_schema_validator() {
    let mut compared = 0;
    let mut problems = Vec::new();
    for (chapter, transcript) in transcripts() {
        let tools = listed_tools(&transcript);
        for (name, arguments, response) in calls(&transcript) {
            let Some(tool) = definition(&tools, &name) else { continue };
            let refused = response["result"]["isError"] == true
                && response["result"]["content"][0]["text"]
                    .as_str()
                    .is_some_and(|t| t.starts_with("Invalid arguments"));
            let ran = response.get("result").is_some() || response["error"]["code"] == -32603;
            if !ran || !arguments.is_object() {
                continue;
            }
            let validator = jsonschema::validator_for(&tool["inputSchema"]).expect("the inputSchema is a valid schema");
            if validator.is_valid(&arguments) == refused {
                problems.push(format!(
                    "{chapter}: {name} {arguments}: the server {} it, the validator {}",
                    if refused { "refused" } else { "accepted" },
                    if refused { "accepts" } else { "rejects" }
                ));
            }
            compared += 1;
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(compared >= 10, "expected calls to compare, found {compared}");
}

/// JSON Schema keywords chapter 5's argument checker does not know. It checks
/// `required`, `additionalProperties: false` and, per property, `type`, `enum`,
/// `minimum` and `maximum`, and passes over every other keyword: one of these in an
/// `inputSchema` would go unchecked, silently (chapter 5, *The tool layer*).
#[rustfmt::skip]
const UNCHECKED_KEYWORDS: &[&str] = &[
    "maxLength", "minLength", "pattern", "format", "items", "prefixItems", "minItems", "maxItems", "uniqueItems",
    "contains", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "const", "oneOf", "anyOf", "allOf", "not",
    "if", "then", "else", "$ref", "$defs", "minProperties", "maxProperties", "patternProperties", "propertyNames",
    "dependentRequired", "dependentSchemas", "unevaluatedProperties",
];

/// Chapter 5's page says the checker is sound because no schema the server writes uses a
/// keyword it does not know. Every `inputSchema` in every chapter's source from chapter
/// 5 on, read as text (a schema may name the chapter's constants, so it is not JSON).
#[test]
fn no_input_schema_uses_a_keyword_the_checker_does_not_know() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.number >= 5) {
        for file in chapter.source_files().unwrap() {
            let source = std::fs::read_to_string(chapter.folder().join(&file)).unwrap();
            for (at, _) in source.match_indices("\"inputSchema\": {") {
                let block = braced(&source[at + "\"inputSchema\": ".len()..]);
                for keyword in UNCHECKED_KEYWORDS {
                    if block.contains(&format!("\"{keyword}\":")) {
                        problems.push(format!("{}/{file}: an inputSchema uses `{keyword}`", chapter.name));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The text from `text`'s first `{` to the brace that closes it.
fn braced(text: &str) -> &str {
    let mut depth = 0;
    for (at, character) in text.char_indices() {
        match character {
            '{' => depth += 1,
            '}' if depth == 1 => return &text[..=at],
            '}' => depth -= 1,
            _ => {}
        }
    }
    text
}
