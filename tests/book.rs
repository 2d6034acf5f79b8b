//! The book shows only what the chapters and transcripts hold. mdBook merely warns
//! about a broken include, so these tests fail instead:
//! - every `{{#include ...}}` names a file that exists, and an anchor or line range
//!   in it that yields at least one line;
//! - no page carries a hand-written `http`, `stdin` or `stdout` block (exchanges live
//!   in transcripts);
//! - every chapter has a page, listed in SUMMARY.md, that includes its transcript.

use std::fs;
use std::path::{Path, PathBuf};

use mcp_workbook::chapters::{CHAPTERS, workbook_root};
use mcp_workbook::regions::anchor_region;

fn pages() -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = fs::read_dir(workbook_root().join("book/src"))
        .expect("book/src exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    pages.sort();
    pages
}

/// Every `{{#include ...}}` (and `{{#rustdoc_include ...}}`) in a page: its argument.
fn includes(page: &str) -> Vec<String> {
    let mut found = Vec::new();
    for directive in ["{{#include ", "{{#rustdoc_include "] {
        let mut rest = page;
        while let Some(start) = rest.find(directive) {
            rest = &rest[start + directive.len()..];
            let end = rest.find("}}").expect("an include ends with }}");
            found.push(rest[..end].trim().to_string());
            rest = &rest[end..];
        }
    }
    found
}

/// What an include yields, as mdBook resolves it: the whole file, an anchor's lines
/// (other anchor markers dropped), or a line range `:FROM:TO` (1-based, inclusive).
fn resolve(page: &Path, include: &str) -> Result<String, String> {
    let (path, selector) = match include.split_once(':') {
        Some((path, selector)) => (path, Some(selector)),
        None => (include, None),
    };
    let file = page.parent().unwrap().join(path);
    let text = fs::read_to_string(&file).map_err(|e| format!("{}: {e}", file.display()))?;
    let lines: Vec<&str> = text.lines().collect();
    let selected: Vec<&str> = match selector {
        None => lines,
        Some(selector) if selector.chars().next().is_some_and(|c| c.is_ascii_digit() || c == ':') => {
            let mut bounds = selector.splitn(2, ':');
            let from = bounds.next().and_then(|n| n.parse::<usize>().ok()).unwrap_or(1);
            let to = bounds.next().and_then(|n| n.parse::<usize>().ok()).unwrap_or(lines.len());
            lines.get(from.saturating_sub(1)..to.min(lines.len())).unwrap_or(&[]).to_vec()
        }
        // As mdBook reads them (`regions::anchor_region`).
        Some(anchor) => anchor_region(&text, anchor)
            .ok_or_else(|| format!("{}: no ANCHOR/ANCHOR_END pair named {anchor:?}", file.display()))?,
    };
    let content: Vec<&str> = selected.into_iter().filter(|l| !l.contains("ANCHOR")).collect();
    if content.iter().all(|l| l.trim().is_empty()) {
        return Err(format!("{include}: yields nothing"));
    }
    Ok(content.join("\n"))
}

#[test]
fn every_include_resolves_to_something() {
    let mut problems = Vec::new();
    for page in pages() {
        let text = fs::read_to_string(&page).unwrap();
        for include in includes(&text) {
            if let Err(problem) = resolve(&page, &include) {
                problems.push(format!("{}: {problem}", page.display()));
            }
        }
    }
    assert!(problems.is_empty(), "broken includes:\n{}", problems.join("\n"));
}

#[test]
fn pages_do_not_paste_exchanges_by_hand() {
    let pasted: Vec<String> = pages()
        .into_iter()
        .filter(|page| {
            let text = fs::read_to_string(page).unwrap();
            text.lines().any(|l| ["```http", "```stdin", "```stdout"].contains(&l.trim()))
        })
        .map(|page| page.display().to_string())
        .collect();
    assert!(
        pasted.is_empty(),
        "pages with a hand-written ```http, ```stdin or ```stdout block (put it in a transcript): {pasted:?}"
    );
}

#[test]
fn every_chapter_has_a_listed_page_that_includes_its_transcript() {
    let summary = fs::read_to_string(workbook_root().join("book/src/SUMMARY.md")).unwrap();
    for chapter in CHAPTERS {
        let page_name = format!("{}.md", chapter.name);
        let page = workbook_root().join("book/src").join(&page_name);
        let text = fs::read_to_string(&page).unwrap_or_else(|_| panic!("{} has no page {page_name}", chapter.name));
        let transcript = format!("../../chapters/{}/transcript.md", chapter.name);
        assert!(includes(&text).contains(&transcript), "{page_name} does not include {transcript}");
        assert!(summary.contains(&format!("]({page_name})")), "SUMMARY.md does not list {page_name}");
    }
}

#[test]
fn the_include_checker_catches_what_it_must() {
    let page = workbook_root().join("book/src/base.md");
    assert!(resolve(&page, "../../src/http.rs:serve").is_ok());
    assert!(resolve(&page, "../../src/http.rs:no_such_anchor").is_err());
    assert!(resolve(&page, "../../src/no_such_file.rs").is_err());
    assert!(resolve(&page, "../../src/http.rs:1:1").is_ok());
    assert_eq!(includes("a {{#include x.rs:y}} b {{#include z.md}}"), ["x.rs:y", "z.md"]);
}
