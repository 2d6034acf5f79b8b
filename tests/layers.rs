//! Every Part III chapter is a one-way stack of files (the book's chapter 11, "A server in
//! several files"): `main.rs` declares the files with `mod` lines from the bottom of the
//! stack up, its map lists them in that order, and a file names only the files declared
//! before it, never one above it nor an item of `main.rs`. So no two files import each
//! other, and a reader always knows what a line may touch: what is below.
//!
//! The check reads the code as text: `crate::NAME` (in a `use` line or a path, a
//! `crate::{A, B}` group too) must name a file below, or `http`, the base under them
//! all; `super::` is never needed. Comments and string literals are not code.

use mcp_workbook::chapters::{CHAPTERS, Chapter, modules};
use mcp_workbook::regions::without_anchors;

/// The longest a Part III file may be: past it, a file is more than one reading. What
/// is read is counted: not the book's `// ANCHOR:` lines, which a starter copy drops
/// and a step's diff leaves out.
const MAX_LINES: usize = 1000;

/// What a file of the stack may name besides the files below it: the HTTP base.
const UNDER_THEM_ALL: &str = "http";

#[test]
fn every_part_three_file_names_only_files_below_it() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.piece.is_some()) {
        problems.extend(stack_problems(chapter));
    }
    assert!(problems.is_empty(), "files that reach up the stack:\n{}", problems.join("\n"));
}

#[test]
fn every_map_lists_the_files_in_the_order_of_the_stack() {
    let mut problems = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.piece.is_some()) {
        let main = read(chapter, "main.rs");
        let declared: Vec<String> =
            modules(&main).map(|name| format!("{name}.rs")).chain(["main.rs".to_string()]).collect();
        let mapped: Vec<String> = main
            .lines()
            .filter_map(|line| line.strip_prefix("//! - `")?.split_once('`').map(|(file, _)| file.to_string()))
            .collect();
        if mapped != declared {
            problems.push(format!(
                "{}/main.rs: the map lists {mapped:?}, but the `mod` lines, bottom up, declare {declared:?}",
                chapter.name
            ));
        }
    }
    assert!(problems.is_empty(), "maps out of order:\n{}", problems.join("\n"));
}

#[test]
fn no_part_three_file_is_longer_than_one_reading() {
    let mut long = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.piece.is_some()) {
        for file in chapter.source_files().unwrap() {
            let lines = without_anchors(&read(chapter, &file)).lines().count();
            if lines > MAX_LINES {
                long.push(format!("{}/{file}: {lines} lines", chapter.name));
            }
        }
    }
    assert!(long.is_empty(), "files over {MAX_LINES} lines:\n{}", long.join("\n"));
}

/// Each check a request goes through is made in one place, so a request meets it once:
/// the era is decided, a 2026-07-28 envelope checked and a tool looked up by the router
/// alone, whichever transport the message came by.
#[test]
fn every_check_has_one_place() {
    const ONCE: &[&str] = &["is_modern(", "check_envelope(", "find_tool("];
    let mut problems = Vec::new();
    for chapter in CHAPTERS.iter().filter(|chapter| chapter.piece.is_some()) {
        for check in ONCE {
            let mut places = Vec::new();
            for file in chapter.source_files().unwrap() {
                let code = code_only(&read(chapter, &file));
                for (number, line) in code.lines().enumerate() {
                    if line.contains(check) && !line.contains("fn ") {
                        places.push(format!("{file}:{}", number + 1));
                    }
                }
            }
            if places.len() != 1 {
                problems.push(format!("{}: `{check}` is called in {} places: {places:?}", chapter.name, places.len()));
            }
        }
    }
    assert!(problems.is_empty(), "checks made in more than one place:\n{}", problems.join("\n"));
}

/// The check itself, on a made-up chapter: it must find each way up, and nothing else.
#[test]
fn the_check_finds_each_way_up() {
    let order = ["jsonrpc", "mcp", "router"];
    let found = |file: &str, text: &str| reaches_up(file, text, &order);
    assert_eq!(found("mcp.rs", "use crate::jsonrpc::RpcError;\nuse crate::http::Response;\n"), Vec::<String>::new());
    assert_eq!(found("mcp.rs", "use crate::router::Catalog;\n").len(), 1);
    assert_eq!(found("mcp.rs", "use crate::{jsonrpc::echo, router};\n").len(), 1);
    assert_eq!(found("mcp.rs", "fn f() { crate::SERVER_NAME }\n").len(), 1, "an item of main.rs");
    assert_eq!(found("mcp.rs", "use super::x;\n").len(), 1);
    assert_eq!(found("jsonrpc.rs", "use crate::mcp::X;\n").len(), 1, "a file names itself or what is above");
    // Comments and strings are not code.
    assert_eq!(found("mcp.rs", "// see crate::router\nlet s = \"crate::router\"; /* crate::router */\n").len(), 0);
    let problem = &found("mcp.rs", "use std::io;\nuse crate::router::Catalog;\n")[0];
    assert!(problem.contains("mcp.rs:2: `use crate::router::Catalog;`"), "{problem}");
}

fn read(chapter: &Chapter, file: &str) -> String {
    std::fs::read_to_string(chapter.folder().join(file)).unwrap_or_else(|e| panic!("{}/{file}: {e}", chapter.name))
}

/// Each file's lines that name a file at or above it, or an item of `main.rs`.
fn stack_problems(chapter: &Chapter) -> Vec<String> {
    let main = read(chapter, "main.rs");
    let order: Vec<&str> = modules(&main).collect();
    let mut problems = Vec::new();
    for name in &order {
        let file = format!("{name}.rs");
        for problem in reaches_up(&file, &read(chapter, &file), &order) {
            problems.push(format!("{}/{problem}", chapter.name));
        }
    }
    problems
}

/// The lines of `file` (one of `order`, the stack from the bottom up) that name what is
/// not below it, as `file:LINE: `line`: names NAME`.
fn reaches_up(file: &str, text: &str, order: &[&str]) -> Vec<String> {
    let me = file.trim_end_matches(".rs");
    let below = &order[..order.iter().position(|name| *name == me).unwrap_or(order.len())];
    let code = code_only(text);
    let mut problems = Vec::new();
    for (number, (line, original)) in code.lines().zip(text.lines()).enumerate() {
        let mut named = Vec::new();
        if line.contains("super::") {
            named.push("super".to_string());
        }
        let mut rest = line;
        while let Some(at) = rest.find("crate::") {
            rest = &rest[at + "crate::".len()..];
            if let Some(group) = rest.strip_prefix('{') {
                let end = group.find('}').unwrap_or(group.len());
                named.extend(group[..end].split(',').filter_map(|path| first_segment(path.trim())));
            } else {
                named.extend(first_segment(rest));
            }
        }
        for name in named {
            if name != UNDER_THEM_ALL && !below.contains(&name.as_str()) {
                problems.push(format!("{file}:{}: `{}` names `{name}`", number + 1, original.trim()));
            }
        }
    }
    problems
}

/// `jsonrpc::echo` -> `jsonrpc`; `Catalog` -> `Catalog`.
fn first_segment(path: &str) -> Option<String> {
    let name: String = path.chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then_some(name)
}

/// The text with every comment, string and character literal blanked out (line breaks
/// kept), so that what is left is code, line for line.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Skip to just past `end`, keeping the line breaks on the way.
    let skip_to = |out: &mut String, from: usize, end: &dyn Fn(usize) -> bool| {
        let mut j = from;
        while j < chars.len() && !end(j) {
            if chars[j] == '\n' {
                out.push('\n');
            }
            j += 1;
        }
        j + 1
    };
    while i < chars.len() {
        let next = chars.get(i + 1).copied();
        i = match chars[i] {
            '/' if next == Some('/') => skip_to(&mut out, i, &|j| chars[j] == '\n') - 1,
            '/' if next == Some('*') => skip_to(&mut out, i + 2, &|j| chars[j] == '/' && chars[j - 1] == '*'),
            // A raw string, `r"..."` or `r#"..."#`: ends at the quote and as many `#`.
            'r' if matches!(next, Some('"' | '#')) && !chars[..i].last().is_some_and(|c| c.is_alphanumeric()) => {
                let hashes = chars[i + 1..].iter().take_while(|c| **c == '#').count();
                let close: String = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
                let start = i + 2 + hashes;
                skip_to(&mut out, start, &|j| chars[j..].iter().take(close.len()).collect::<String>() == close) + hashes
            }
            '"' => skip_to(&mut out, i + 1, &|j| chars[j] == '"' && chars[j - 1] != '\\'),
            // A character literal (`'"'`, `'\\'`), not a lifetime (`'a`).
            '\'' if chars.get(i + 2) == Some(&'\'') => i + 3,
            '\'' if next == Some('\\') => skip_to(&mut out, i + 2, &|j| chars[j] == '\''),
            c => {
                out.push(c);
                i + 1
            }
        };
    }
    out
}
