//! A chapter's step: what it changed since the chapter before, as a unified diff.
//!
//! Each chapter from 2 on keeps its step in `changes.diff`, which its book page shows
//! (collapsed, under "Compared with chapter N"). `cargo run -- bless N` writes it, and
//! `tests/steps.rs` fails when one is stale, so a fix made to some chapters and not
//! to a later one shows up as a line of that later chapter's step.
//!
//! The diff compares the server's source files (`Chapter::source_files`), without the
//! book's `// ANCHOR:` lines, three lines of context to a hunk:
//! - chapters of one file each: `main.rs` against `main.rs`;
//! - chapter 11, whose server becomes several files: chapter 10's `main.rs` against
//!   chapter 11's files read one after the other in the order of its map, each opened
//!   by a line `// ==== FILE ====`, so the step shows what the split took besides the
//!   new piece;
//! - chapters of several files: file against file of the same name, a new file in
//!   whole, in the order of the chapter's map (a file that went comes last).

use std::io;

use crate::chapters::Chapter;
use crate::replay::diff_steps;

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// One step of a line diff: the old line it keeps or removes, the new line it keeps or adds.
type Step = (Option<usize>, Option<usize>);

/// The step from `previous` to `chapter`, as `changes.diff` holds it.
pub fn changes(previous: &Chapter, chapter: &Chapter) -> io::Result<String> {
    let read = |chapter: &Chapter, file: &str| std::fs::read_to_string(chapter.folder().join(file));
    let (before, after) = (previous.source_files()?, chapter.source_files()?);
    let mut diff = String::new();
    if before.len() == 1 && after.len() > 1 {
        let mut joined = String::new();
        for file in &after {
            joined.push_str(&format!("// ==== {file} ====\n"));
            joined.push_str(&read(chapter, file)?);
        }
        let label = format!("{}/{{{}}}", chapter.name, after.join(","));
        diff.push_str(&file_diff(&format!("{}/main.rs", previous.name), &label, &read(previous, "main.rs")?, &joined));
        return Ok(diff);
    }
    for file in after.iter().chain(before.iter().filter(|file| !after.contains(file))) {
        let old = if before.contains(file) { read(previous, file)? } else { String::new() };
        let new = if after.contains(file) { read(chapter, file)? } else { String::new() };
        let old_label = if before.contains(file) { format!("{}/{file}", previous.name) } else { "/dev/null".into() };
        let new_label = if after.contains(file) { format!("{}/{file}", chapter.name) } else { "/dev/null".into() };
        diff.push_str(&file_diff(&old_label, &new_label, &old, &new));
    }
    Ok(diff)
}

/// A unified diff of two texts (nothing when they are the same), without anchor lines.
fn file_diff(old_label: &str, new_label: &str, old: &str, new: &str) -> String {
    let (old, new) = (code_lines(old), code_lines(new));
    let steps = diff_steps(&old, &new);
    let changed: Vec<usize> = (0..steps.len()).filter(|&k| !matches!(steps[k], (Some(_), Some(_)))).collect();
    if changed.is_empty() {
        return String::new();
    }
    let mut text = format!("--- {old_label}\n+++ {new_label}\n");
    // Group changes whose contexts touch into one hunk.
    let mut groups: Vec<(usize, usize)> = Vec::new();
    for &k in &changed {
        match groups.last_mut() {
            Some((_, end)) if k <= *end + 2 * CONTEXT + 1 => *end = k,
            _ => groups.push((k, k)),
        }
    }
    for (first, last) in groups {
        let (start, end) = (first.saturating_sub(CONTEXT), (last + CONTEXT + 1).min(steps.len()));
        let hunk = &steps[start..end];
        // A hunk's header counts from 1; an empty side names the line before it.
        let first_line = |side: fn(&Step) -> Option<usize>| {
            let count = hunk.iter().filter(|step| side(step).is_some()).count();
            let before = steps[..start].iter().filter(|step| side(step).is_some()).count();
            (if count == 0 { before } else { before + 1 }, count)
        };
        let (old_start, old_count) = first_line(|step| step.0);
        let (new_start, new_count) = first_line(|step| step.1);
        text.push_str(&format!("@@ -{old_start},{old_count} +{new_start},{new_count} @@\n"));
        for step in hunk {
            let line = match *step {
                (Some(i), Some(_)) => format!(" {}", old[i]),
                (Some(i), None) => format!("-{}", old[i]),
                (None, Some(j)) => format!("+{}", new[j]),
                (None, None) => unreachable!("every step takes a line"),
            };
            text.push_str(line.trim_end());
            text.push('\n');
        }
    }
    text
}

/// The lines of a source file as the book shows it: without `// ANCHOR:` lines.
fn code_lines(text: &str) -> Vec<&str> {
    text.lines().filter(|line| !crate::regions::is_anchor_line(line)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_diff_has_hunks_with_context_and_counts() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\n";
        let new = "a\nB\nc\nd\ne\nf\ng\nh\ni\nj\nk\nl\nm\n";
        assert_eq!(
            file_diff("x/old", "y/new", old, new),
            "--- x/old\n+++ y/new\n@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -10,3 +10,4 @@\n j\n k\n l\n+m\n"
        );
        assert_eq!(file_diff("a", "b", old, old), "");
        // A new file: the old side is empty.
        assert_eq!(file_diff("/dev/null", "b", "", "x\n"), "--- /dev/null\n+++ b\n@@ -0,0 +1,1 @@\n+x\n");
        // Anchor lines are the book's, not the code's.
        assert_eq!(file_diff("a", "b", "x\n// ANCHOR: y\n", "x\n    // ANCHOR_END: y\n"), "");
    }
}
