//! What every tool definition in every transcript must satisfy. The transcripts are
//! proven equal to the wire by `tests/transcripts.rs`, so checking the definitions
//! they record checks the definitions the servers send. One test asks the servers
//! themselves, for the tools a transcript does not list.

use std::io::Write;

#[macro_use]
mod common;

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

/// What chapter 5's argument checker reads of an `inputSchema` (`check_arguments`): at
/// the top, `required` and `additionalProperties: false`; in each property, `type`,
/// `enum`, `minimum` and `maximum`. It passes over every other keyword, so any other
/// would go unchecked, silently (chapter 5, *The tool layer*).
const CHECKED_AT_THE_TOP: &[&str] = &["type", "properties", "required", "additionalProperties"];
const CHECKED_IN_A_PROPERTY: &[&str] = &["type", "enum", "minimum", "maximum"];
/// Words for the model, which no validator checks: these may stand anywhere.
const ANNOTATIONS: &[&str] = &["title", "description", "default", "examples"];
/// The types `has_type` knows; another would pass every value.
const KNOWN_TYPES: &[&str] = &["number", "integer", "string", "boolean", "object", "array", "null"];

/// What of `schema` the checker would not check: a keyword it does not read, at the top
/// or in a property (a nested object's `properties` among them), a `type` given as a
/// list or not one it knows, `additionalProperties` given a schema, and values of the
/// keywords it reads that are not of the form it reads.
fn unchecked_parts(schema: &Value) -> Vec<String> {
    let mut unchecked = Vec::new();
    let Some(root) = schema.as_object() else { return vec!["the schema is not an object".to_string()] };
    for key in
        root.keys().filter(|key| !CHECKED_AT_THE_TOP.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()))
    {
        unchecked.push(format!("`{key}` at the top"));
    }
    if root.get("type") != Some(&Value::from("object")) {
        unchecked.push("the top is not `\"type\": \"object\"`".to_string());
    }
    if root.get("additionalProperties").is_some_and(|value| !value.is_boolean()) {
        unchecked.push("`additionalProperties` is a schema, not `false`".to_string());
    }
    if root
        .get("required")
        .is_some_and(|required| !required.as_array().is_some_and(|names| names.iter().all(Value::is_string)))
    {
        unchecked.push("`required` is not a list of names".to_string());
    }
    let properties = match root.get("properties") {
        None => return unchecked,
        Some(Value::Object(properties)) => properties,
        Some(_) => {
            unchecked.push("`properties` is not an object".to_string());
            return unchecked;
        }
    };
    for (name, property) in properties {
        let Some(property) = property.as_object() else {
            unchecked.push(format!("`{name}` is not a schema object"));
            continue;
        };
        for key in property
            .keys()
            .filter(|key| !CHECKED_IN_A_PROPERTY.contains(&key.as_str()) && !ANNOTATIONS.contains(&key.as_str()))
        {
            unchecked.push(format!("`{name}`: `{key}`"));
        }
        if property.get("type").is_some_and(|kind| !kind.as_str().is_some_and(|kind| KNOWN_TYPES.contains(&kind))) {
            unchecked.push(format!("`{name}`: a `type` that is not one type name"));
        }
        if property.get("enum").is_some_and(|allowed| !allowed.is_array()) {
            unchecked.push(format!("`{name}`: `enum` is not a list"));
        }
        for bound in ["minimum", "maximum"] {
            if property.get(bound).is_some_and(|value| !value.is_number()) {
                unchecked.push(format!("`{name}`: `{bound}` is not a number"));
            }
        }
    }
    unchecked
}

/// Every tool a chapter's server lists, asked on the wire with every tool switched on
/// (`--demo-faults`), all pages of the list.
fn tools_served(binary: &str) -> Vec<Value> {
    let server = common::start(binary, &["--demo-faults"]);
    let mut stream = common::raw::connect(server.address);
    let (mut tools, mut cursor) = (Vec::new(), None::<Value>);
    loop {
        let params = match &cursor {
            Some(cursor) => serde_json::json!({ "cursor": cursor }),
            None => serde_json::json!({}),
        };
        let body =
            serde_json::json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": params }).to_string();
        let head = format!(
            "POST /mcp HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n\
             Accept: application/json, text/event-stream\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(format!("{head}{body}").as_bytes()).unwrap();
        let answer: Value = serde_json::from_str(&common::raw::read_answer(&mut stream).body).unwrap();
        tools.extend(
            answer["result"]["tools"].as_array().unwrap_or_else(|| panic!("{binary}: {answer}")).iter().cloned(),
        );
        cursor = answer["result"].get("nextCursor").cloned();
        if cursor.is_none() {
            return tools;
        }
    }
}

/// Chapter 5's page says the checker is sound because no schema the server writes uses
/// anything it does not check. Every `inputSchema` every chapter from 5 on serves, walked
/// as JSON: each keyword, at the top and in each property, must be one the checker
/// reads, or an annotation. And the server must list as many tools as its source writes
/// input schemas, so that none escapes the walk.
#[test]
fn every_input_schema_uses_only_what_the_checker_checks() {
    let mut problems = Vec::new();
    let chapters = CHAPTERS.iter().filter(|chapter| chapter.number >= 5 && chapter.in_this_build());
    for (chapter, binary) in chapters.zip(common::chapter_binaries_from(5)) {
        let tools = tools_served(&binary);
        for tool in &tools {
            let name = tool["name"].as_str().unwrap_or("");
            for part in unchecked_parts(&tool["inputSchema"]) {
                problems.push(format!("{}: {name}: {part}", chapter.name));
            }
        }
        let written: usize = chapter
            .source_files()
            .unwrap()
            .iter()
            .map(|file| {
                std::fs::read_to_string(chapter.folder().join(file)).unwrap().matches("\"inputSchema\":").count()
            })
            .sum();
        if tools.len() != written {
            problems.push(format!(
                "{}: its source writes {written} input schemas, it lists {} tools",
                chapter.name,
                tools.len()
            ));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_walk_finds_what_the_checker_would_pass_over() {
    let flat = serde_json::json!({
        "type": "object",
        "properties": {"hours": {"type": "number", "minimum": 0, "maximum": 24, "description": "Hours"}},
        "required": ["hours"],
        "additionalProperties": false
    });
    assert!(unchecked_parts(&flat).is_empty(), "{:?}", unchecked_parts(&flat));
    let nested = serde_json::json!({
        "type": "object",
        "properties": {"shift": {"type": "object", "properties": {"start": {"type": "string"}}, "required": ["start"]}}
    });
    assert_eq!(unchecked_parts(&nested), ["`shift`: `properties`", "`shift`: `required`"]);
    let listed_type = serde_json::json!({"type": "object", "properties": {"rate": {"type": ["number", "null"]}}});
    assert_eq!(unchecked_parts(&listed_type), ["`rate`: a `type` that is not one type name"]);
    let open =
        serde_json::json!({"type": "object", "additionalProperties": {"type": "string"}, "dependentRequired": {}});
    assert_eq!(
        unchecked_parts(&open),
        ["`dependentRequired` at the top", "`additionalProperties` is a schema, not `false`"]
    );
    let pattern =
        serde_json::json!({"type": "object", "properties": {"id": {"type": "string", "pattern": "^[0-9]+$"}}});
    assert_eq!(unchecked_parts(&pattern), ["`id`: `pattern`"]);
}
