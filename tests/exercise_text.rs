//! The exercises' words, held to what issue 21 asks of them. An exercise is the
//! chapter's decisions left to the participant: its TODOs say what to achieve and which
//! exchanges prove it, and the page's hints climb from where to look to the answer.
//! So, for every chapter:
//! - a TODO region says it in at most three lines (the file's opening block aside);
//! - every exchange a TODO or a hint names in double quotes is an exchange of the
//!   chapter's transcript, title for title;
//! - every name a TODO or a hint puts in backticks exists: as a name in the code the
//!   participant has (their file, and from chapter 11 the chapter's other files), or
//!   on the wire (a member or header the transcript shows). A TODO that names a helper
//!   the participant does not have sends them looking for something they deleted;
//! - on the page, only a hint whose summary says it is "the answer" shows code (a
//!   fenced block): the others point and explain;
//! - the page shows none of the code the exercise asks for above the exercise: an
//!   include of a function a TODO region sits in, and the step's diff, come after the
//!   `## Exercise` heading.

use std::collections::BTreeSet;
use std::fs;

use mcp_workbook::chapters::{CHAPTERS, Chapter, workbook_root};
use mcp_workbook::regions::{self, anchor_region};

/// The TODO regions of an exercise: (first line number, the region's lines).
fn todo_regions(exercise: &str) -> Vec<(usize, Vec<&str>)> {
    let lines: Vec<&str> = exercise.lines().collect();
    let regions = regions::todo_regions(exercise).unwrap_or_else(|problem| panic!("a TODO region: {problem}"));
    regions.into_iter().map(|region| (*region.start(), lines[region.start() - 1..*region.end()].to_vec())).collect()
}

/// The comment text of a region's lines: what a participant reads.
fn comment_text(lines: &[&str]) -> String {
    lines
        .iter()
        .filter_map(|line| line.trim().strip_prefix("//"))
        .map(|text| text.trim_start_matches('/').trim())
        .filter(|text| *text != "END TODO")
        .collect::<Vec<_>>()
        .join(" ")
}

/// Spans of `text` between two `delimiter`s.
fn spans(text: &str, delimiter: char) -> Vec<String> {
    text.split(delimiter).skip(1).step_by(2).map(str::to_string).collect()
}

/// The titles of a chapter's exchanges.
fn titles(chapter: &Chapter) -> BTreeSet<String> {
    let text = fs::read_to_string(chapter.transcript_path()).unwrap();
    text.lines().filter_map(|line| line.strip_prefix("### ")).map(|title| title.trim().to_string()).collect()
}

/// Every word that is a name somewhere the participant can see it: identifiers of the
/// code they have, the words of its string literals (JSON members), and the words of the
/// transcript (members and headers on the wire).
fn known_names(chapter: &Chapter) -> BTreeSet<String> {
    let mut texts = vec![fs::read_to_string(chapter.exercise_path()).unwrap()];
    if chapter.piece.is_some() {
        for file in chapter.source_files().unwrap() {
            texts.push(fs::read_to_string(chapter.folder().join(file)).unwrap());
        }
    }
    texts.push(fs::read_to_string(chapter.transcript_path()).unwrap());
    let mut names = BTreeSet::new();
    for text in texts {
        // Comments do not count: a name must be code, or on the wire.
        let code: String = text
            .lines()
            .map(|line| match line.find("//") {
                Some(at) if !line[..at].contains('"') => &line[..at],
                _ => line,
            })
            .collect::<Vec<_>>()
            .join("\n");
        for word in code.split(|c: char| !(c.is_alphanumeric() || c == '_')) {
            if !word.is_empty() {
                names.insert(word.to_string());
            }
        }
    }
    names
}

/// The names a backticked span asks the reader to find, if it is shaped like Rust (an
/// identifier, a path, a call): `handle`, `Sessions::find`, `call.ask(..)`. Spans of
/// another shape are wire text (`"id": null`, `notifications/cancelled`, `-32602`).
fn rust_names(span: &str) -> Vec<String> {
    let span = span.trim();
    let without_call = match span.find('(') {
        Some(at) if span.ends_with(')') => &span[..at],
        _ => span,
    };
    let shaped_like_rust = !without_call.is_empty()
        && without_call.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':' || c == '.')
        && without_call.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_');
    // `v2.ID.EXPIRES` describes a format, it names no code.
    let format_description = without_call.contains('.')
        && without_call.split('.').any(|part| part.len() > 1 && part.chars().all(|c| c.is_ascii_uppercase()));
    if !shaped_like_rust || format_description {
        return Vec::new();
    }
    without_call.split([':', '.']).filter(|part| !part.is_empty()).map(str::to_string).collect()
}

/// Keywords, and names from the standard library and `serde_json`, that a TODO or a hint
/// may use without the exercise defining them: the participant finds these in their
/// documentation, not in the workbook.
#[rustfmt::skip]
const STANDARD: &[&str] = &[
    "None", "Some", "Ok", "Err", "Option", "Result", "Vec", "String", "str", "true", "false", "match", "if", "let",
    "return", "self", "Self", "todo", "unwrap", "map", "map_err", "and_then", "ok_or", "ok_or_else", "is_some",
    "is_none", "iter", "find", "get", "as_str", "as_object", "as_object_mut", "contains", "u64", "i64", "f64", "usize",
    "bool", "fn", "impl", "struct", "enum", "mut", "ref", "loop", "for", "while", "break", "continue", "json", "format",
    "Value", "Map", "Null", "Number", "is_i64", "is_u64", "from_slice", "to_value", "serde_json", "std", "flush",
    "trim_ascii", "Duration", "Instant",
];

/// The page's Exercise section: the text after its `## Exercise` heading, to the next
/// `## ` heading.
fn exercise_section(page: &str) -> &str {
    let start = page.find("\n## Exercise").map_or(page.len(), |at| at + 1);
    let rest = &page[start..];
    let end = rest[3..].find("\n## ").map_or(rest.len(), |at| at + 4);
    &rest[..end]
}

/// The `<details>` blocks of a text: (summary, body).
fn details(text: &str) -> Vec<(String, String)> {
    let mut blocks = Vec::new();
    for block in text.split("<details>").skip(1) {
        let block = block.split("</details>").next().unwrap_or("");
        let summary = block.split("<summary>").nth(1).and_then(|s| s.split("</summary>").next()).unwrap_or("");
        let body = block.split("</summary>").nth(1).unwrap_or("");
        blocks.push((summary.trim().to_string(), body.to_string()));
    }
    blocks
}

fn page_of(chapter: &Chapter) -> String {
    fs::read_to_string(workbook_root().join("book/src").join(format!("{}.md", chapter.name))).unwrap()
}

/// What a TODO and a hint say, checked against what exists: problems, in words.
fn check_words(chapter: &Chapter, place: &str, text: &str, problems: &mut Vec<String>) {
    let (titles, names) = (titles(chapter), known_names(chapter));
    for quoted in spans(text, '"') {
        // A quoted sentence that looks like an exchange's title must be one.
        let looks_like_title = quoted.len() > 12
            && quoted.contains(' ')
            && quoted.chars().next().is_some_and(char::is_uppercase)
            && !quoted.trim_end().ends_with('.');
        if looks_like_title && !titles.contains(quoted.trim()) {
            problems.push(format!("{place}: \"{quoted}\" is not the title of an exchange of the transcript"));
        }
    }
    for span in spans(text, '`') {
        for name in rust_names(&span) {
            if !names.contains(&name) && !STANDARD.contains(&name.as_str()) {
                problems.push(format!(
                    "{place}: `{span}` names `{name}`, which is nowhere in the participant's code or on the wire"
                ));
            }
        }
    }
}

#[test]
fn todos_are_short_and_name_what_exists() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS {
        let exercise = fs::read_to_string(chapter.exercise_path()).unwrap();
        for (line, region) in todo_regions(&exercise).into_iter().skip(1) {
            let place = format!("{}/exercise.rs line {line}", chapter.name);
            let comments = region.iter().filter(|l| l.trim().starts_with("//") && l.trim() != "// END TODO").count();
            if comments > 3 {
                problems.push(format!(
                    "{place}: a TODO of {comments} lines; say what, and which exchanges prove it, in at most three"
                ));
            }
            check_words(chapter, &place, &comment_text(&region), &mut problems);
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn hints_name_what_exists_and_only_the_answer_shows_code() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS {
        let page = page_of(chapter);
        for (summary, body) in details(exercise_section(&page)) {
            let place = format!("{}.md, hint \"{summary}\"", chapter.name);
            if body.contains("```") && !summary.to_lowercase().contains("the answer") {
                problems
                    .push(format!("{place}: shows code, but it is not the answer (its summary says so when it is)"));
            }
            check_words(chapter, &place, &body, &mut problems);
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

#[test]
fn the_page_shows_no_exercised_code_above_the_exercise() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS {
        let page = page_of(chapter);
        let exercise_at = page.find("\n## Exercise").unwrap_or(page.len());
        let exercise = fs::read_to_string(chapter.exercise_path()).unwrap();
        let counterpart = fs::read_to_string(chapter.exercise_counterpart()).unwrap();
        // The functions the TODO regions sit in: the nearest `fn NAME` above each.
        let lines: Vec<&str> = exercise.lines().collect();
        let mut exercised = BTreeSet::new();
        for (line, _) in todo_regions(&exercise).into_iter().skip(1) {
            if let Some(name) = lines[..line - 1].iter().rev().find_map(|l| function_name(l)) {
                exercised.insert(name);
            }
        }
        // The step's diff holds the whole answer: it too comes after the exercise.
        if page[..exercise_at].contains("changes.diff}}") {
            problems.push(format!("{}.md: shows the step's diff (changes.diff) above the exercise", chapter.name));
        }
        let file = chapter.exercise_counterpart().file_name().unwrap().to_string_lossy().into_owned();
        let include = format!("{{{{#include ../../chapters/{}/{file}:", chapter.name);
        for (at, _) in page[..exercise_at].match_indices(&include) {
            let anchor = page[at + include.len()..].split("}}").next().unwrap_or("");
            let shown = anchor_region(&counterpart, anchor).unwrap_or_default();
            for name in shown.iter().filter_map(|l| function_name(l)) {
                if exercised.contains(&name) {
                    problems.push(format!(
                        "{}.md: includes `{anchor}` above the exercise, and it shows `{name}`, which the exercise asks for",
                        chapter.name
                    ));
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}

/// `NAME` of a line that opens a function: `fn NAME(`, `pub fn NAME<`.
fn function_name(line: &str) -> Option<String> {
    let rest = line.trim_start().trim_start_matches("pub ").strip_prefix("fn ")?;
    let name: String = rest.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

#[test]
fn the_word_checker_sees_what_it_must() {
    assert_eq!(rust_names("Sessions::find"), ["Sessions", "find"]);
    assert_eq!(rust_names("call.ask(..)"), ["call", "ask"]);
    assert!(rust_names("\"id\": null").is_empty());
    assert!(rust_names("notifications/cancelled").is_empty());
    assert!(rust_names("-32602").is_empty());
    assert!(rust_names("v2.ID.EXPIRES.CALL").is_empty());
    assert_eq!(function_name("    pub fn resources_read(params: Option<&Value>) {"), Some("resources_read".into()));
    assert_eq!(spans("a `b` c `d`", '`'), ["b", "d"]);
    let regions = todo_regions("x\n// TODO: one\ntodo!()\n// END TODO\ny\n");
    assert_eq!(regions.len(), 1);
    assert_eq!(comment_text(&regions[0].1), "TODO: one");
}

/// Where a failing exchange sends the participant: every section a transcript's hint names
/// (`Book: chapter N, "Section"`) is a heading of chapter N's page, word for word.
#[test]
fn hints_name_sections_that_exist() {
    let headings = |number: u8| -> BTreeSet<String> {
        let chapter = CHAPTERS.iter().find(|c| c.number == number).expect("a chapter of the book");
        page_of(chapter)
            .lines()
            .filter(|line| line.starts_with('#') && !line.starts_with("#["))
            .map(|line| line.trim_start_matches('#').trim().to_string())
            .collect()
    };
    let mut problems = Vec::new();
    for chapter in CHAPTERS {
        let transcript = fs::read_to_string(chapter.transcript_path()).unwrap();
        for (index, line) in transcript.lines().enumerate() {
            for (at, _) in line.match_indices("Book: chapter ") {
                let rest = &line[at + "Book: chapter ".len()..];
                let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
                let Ok(number) = digits.parse::<u8>() else { continue };
                // The sections follow as `, "A"` or `, "A" and "B"`, up to the `;` (or a
                // parenthesis that quotes a paragraph within the section) or the end.
                let named = rest[digits.len()..].split([';', '(']).next().unwrap_or("");
                let wanted = headings(number);
                for section in spans(named, '"') {
                    if !wanted.contains(&section) {
                        problems.push(format!(
                            "{}/transcript.md line {}: chapter {number} has no section \"{section}\"",
                            chapter.name,
                            index + 1
                        ));
                    }
                }
            }
        }
    }
    assert!(problems.is_empty(), "{} problems:\n{}", problems.len(), problems.join("\n"));
}
