//! Every chapter's step is current, and its page shows it:
//! - `chapters/chNN-*/changes.diff` is what `steps::changes` makes of the chapter and
//!   the one before it, now (`cargo run -- bless N` rewrites it), so a change made to
//!   some chapters and not to a later one shows in that later chapter's step;
//! - every chapter page from 2 includes its step, in a `<details>` block, after a
//!   paragraph headed "Compared with chapter N" that says the change in a few words
//!   (the diff below it lists every line).

use mcp_workbook::chapters::{CHAPTERS, workbook_root};
use mcp_workbook::steps;

#[test]
fn every_step_is_current() {
    let mut stale = Vec::new();
    for pair in CHAPTERS.windows(2) {
        let (previous, chapter) = (&pair[0], &pair[1]);
        let expected = steps::changes(previous, chapter).unwrap();
        let path = chapter.changes_path();
        if std::fs::read_to_string(&path).ok().as_deref() != Some(expected.as_str()) {
            stale.push(format!("{} (`cargo run -- bless {}` rewrites it)", path.display(), chapter.number));
        }
    }
    assert!(stale.is_empty(), "steps that are not the chapters' code as it stands:\n{}", stale.join("\n"));
    assert!(!CHAPTERS[0].changes_path().exists(), "chapter 1 has no chapter before it, so no step");
}

#[test]
fn every_page_from_chapter_2_shows_its_step() {
    let mut missing = Vec::new();
    for pair in CHAPTERS.windows(2) {
        let (previous, chapter) = (&pair[0], &pair[1]);
        let page = workbook_root().join("book/src").join(format!("{}.md", chapter.name));
        let text = std::fs::read_to_string(&page).unwrap();
        let include = format!("{{{{#include ../../chapters/{}/changes.diff}}}}", chapter.name);
        let heading = format!("Compared with chapter {}", previous.number);
        let (Some(at), Some(paragraph)) = (text.find(&include), text.find(&heading)) else {
            missing.push(format!("{}: no `{heading}` paragraph, or no `{include}`", page.display()));
            continue;
        };
        let details = text[..at].rfind("<details>").is_some_and(|open| open > paragraph);
        if !details {
            missing.push(format!("{}: the step is not in a <details> block after `{heading}`", page.display()));
        }
    }
    assert!(missing.is_empty(), "pages that do not show their step:\n{}", missing.join("\n"));
}

/// The most words a "Compared with chapter N" paragraph may take: it says what the
/// chapter adds and where it is wired in, not every name the diff below it shows.
const MAX_COMPARED_WORDS: usize = 150;

#[test]
fn every_step_is_said_in_a_few_words() {
    let mut long = Vec::new();
    for pair in CHAPTERS.windows(2) {
        let (previous, chapter) = (&pair[0], &pair[1]);
        let page = workbook_root().join("book/src").join(format!("{}.md", chapter.name));
        let text = std::fs::read_to_string(&page).unwrap();
        let heading = format!("## Compared with chapter {}\n", previous.number);
        let Some(start) = text.find(&heading).map(|at| at + heading.len()) else {
            long.push(format!("{}: no `{}` heading", page.display(), heading.trim()));
            continue;
        };
        // The paragraph ends at the step's `<details>`, or at the next section when the
        // step comes later on the page (after the exercise, whose answer it shows).
        let rest = &text[start..];
        let end =
            start + [rest.find("<details>"), rest.find("\n## ")].into_iter().flatten().min().unwrap_or(rest.len());
        let words = text[start..end].split_whitespace().count();
        if words > MAX_COMPARED_WORDS {
            long.push(format!("{}: {words} words", page.display()));
        }
    }
    assert!(long.is_empty(), "\"Compared with\" paragraphs over {MAX_COMPARED_WORDS} words:\n{}", long.join("\n"));
}
