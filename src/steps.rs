//! A chapter's step: what it changed since the chapter before, as a unified diff.
//!
//! Each chapter from 2 on keeps its step in `changes.diff`, which its book page shows
//! (collapsed, under "Compared with chapter N"). `cargo run -- bless N` writes it, and
//! `tests/steps.rs` fails when one is stale, so a fix made to some chapters and not
//! to a later one shows up as a line of that later chapter's step. [`changes`] is the
//! one place a step is made.
//!
//! The diff compares the server's source files (`main.rs` and the files its map
//! declares), without the book's `// ANCHOR:` lines (and without the second of two blank
//! lines their removal leaves), three lines of context to a hunk:
//! - chapters of one file each: `main.rs` against `main.rs`;
//! - chapter 11, whose server becomes several files: chapter 10's `main.rs` against
//!   chapter 11's files read one after the other in the order of its map, each opened
//!   by a line `// ==== FILE ====`, so the step shows what the split took besides the
//!   new piece;
//! - chapters of several files: file against file of the same name. New files come
//!   first, whole (they are the chapter's piece), then the existing files the chapter
//!   changed (the wiring), each in the order of the map; a file that went comes last.

use std::io;
use std::path::{Path, PathBuf};

use crate::chapters::{self, Chapter};
use crate::replay::diff_steps;

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// One step of a line diff: the old line it keeps or removes, the new line it keeps or adds.
type Step = (Option<usize>, Option<usize>);

/// A chapter's server as a step reads it: the name its labels show, and its folder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    pub name: String,
    pub folder: PathBuf,
}

impl Snapshot {
    /// The chapter as the workbook holds it.
    pub fn of(chapter: &Chapter) -> Self {
        Snapshot { name: chapter.name.to_string(), folder: chapter.folder() }
    }

    /// The chapter in another tree with a `chapters/` folder (a worktree, a test's).
    pub fn in_tree(root: &Path, chapter: &Chapter) -> Self {
        Snapshot { name: chapter.name.to_string(), folder: root.join("chapters").join(chapter.name) }
    }

    /// The server's source files, in the order of its map: `main.rs`, then each file a
    /// `mod NAME;` line of `main.rs` declares (as `Chapter::source_files`, for any folder).
    pub fn source_files(&self) -> io::Result<Vec<String>> {
        let main = self.read("main.rs")?;
        Ok(std::iter::once("main.rs".to_string())
            .chain(chapters::modules(&main).map(|name| format!("{name}.rs")))
            .collect())
    }

    fn read(&self, file: &str) -> io::Result<String> {
        std::fs::read_to_string(self.folder.join(file))
    }
}

/// The step from `previous` to `chapter`, as `changes.diff` holds it.
pub fn changes(previous: &Chapter, chapter: &Chapter) -> io::Result<String> {
    changes_between(&Snapshot::of(previous), &Snapshot::of(chapter))
}

/// The step between two snapshots: [`changes`] for any folders.
pub fn changes_between(previous: &Snapshot, chapter: &Snapshot) -> io::Result<String> {
    let (before, after) = (previous.source_files()?, chapter.source_files()?);
    let mut diff = String::new();
    if before.len() == 1 && after.len() > 1 {
        let mut joined = String::new();
        for file in &after {
            joined.push_str(&format!("// ==== {file} ====\n"));
            joined.push_str(&chapter.read(file)?);
        }
        let label = format!("{}/{{{}}}", chapter.name, after.join(","));
        diff.push_str(&file_diff(&format!("{}/main.rs", previous.name), &label, &previous.read("main.rs")?, &joined));
        return Ok(diff);
    }
    // New files (the piece) first, then the wiring, each in the map's order; a file that
    // went last.
    let new_files = after.iter().filter(|file| !before.contains(file));
    let kept = after.iter().filter(|file| before.contains(file));
    let gone = before.iter().filter(|file| !after.contains(file));
    for file in new_files.chain(kept).chain(gone) {
        let old = if before.contains(file) { previous.read(file)? } else { String::new() };
        let new = if after.contains(file) { chapter.read(file)? } else { String::new() };
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

/// The lines of a source file as the book shows it: without `// ANCHOR:` lines, and
/// without a blank line that follows a blank line once they are gone (both sides of a
/// diff are read so, so the collapse never shows as a change).
fn code_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("// ANCHOR: ") || code.starts_with("// ANCHOR_END: ") {
            continue;
        }
        if code.is_empty() && lines.last().is_some_and(|last| last.trim().is_empty()) {
            continue;
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
pub(crate) mod tests {
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

    #[test]
    fn the_blank_line_an_anchor_leaves_behind_is_collapsed() {
        assert_eq!(code_lines("a\n\n// ANCHOR: x\n\nb\n// ANCHOR_END: x\n\n\n"), ["a", "", "b", ""]);
        // On both sides alike: an anchor added between two blank lines changes nothing.
        assert_eq!(file_diff("a", "b", "x\n\ny\n", "x\n\n// ANCHOR: z\n\ny\n// ANCHOR_END: z\n"), "");
        // A new file shows one blank line where its anchors left two.
        let new = "fn a() {}\n// ANCHOR_END: a\n\n// ANCHOR: b\n\nfn b() {}\n";
        assert_eq!(
            file_diff("/dev/null", "b", "", new),
            "--- /dev/null\n+++ b\n@@ -0,0 +1,3 @@\n+fn a() {}\n+\n+fn b() {}\n"
        );
    }

    /// A fake workbook in a temporary folder, removed when dropped.
    pub(crate) struct Tree(PathBuf);

    impl Tree {
        pub(crate) fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// A fake chapters tree: `chapters/NAME/FILE` for each (name, file, text).
    pub(crate) fn tree(files: &[(&str, &str, &str)]) -> Tree {
        static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let root = Tree(std::env::temp_dir().join(format!("mcp-workbook-tree-{}-{made}", std::process::id())));
        let _ = std::fs::remove_dir_all(root.path());
        for (name, file, text) in files {
            let folder = root.path().join("chapters").join(name);
            std::fs::create_dir_all(&folder).unwrap();
            std::fs::write(folder.join(file), text).unwrap();
        }
        root
    }

    fn snapshot(root: &Path, name: &str) -> Snapshot {
        Snapshot { name: name.into(), folder: root.join("chapters").join(name) }
    }

    #[test]
    fn new_files_come_first_then_the_wiring_then_what_went() {
        let root = tree(&[
            ("ch1", "main.rs", "mod wire;\nmod old;\nfn main() {}\n"),
            ("ch1", "wire.rs", "pub fn wire() {}\n"),
            ("ch1", "old.rs", "pub fn old() {}\n"),
            ("ch2", "main.rs", "mod wire;\nmod piece;\nmod extra;\nfn main() {}\n"),
            ("ch2", "wire.rs", "pub fn wire() { piece::piece() }\n"),
            ("ch2", "piece.rs", "pub fn piece() {}\n"),
            ("ch2", "extra.rs", "pub fn extra() {}\n"),
        ]);
        let step = changes_between(&snapshot(root.path(), "ch1"), &snapshot(root.path(), "ch2")).unwrap();
        let files: Vec<&str> =
            step.lines().filter(|line| line.starts_with("+++ ") || line.starts_with("--- ")).collect();
        assert_eq!(
            files,
            [
                "--- /dev/null",
                "+++ ch2/piece.rs",
                "--- /dev/null",
                "+++ ch2/extra.rs",
                "--- ch1/main.rs",
                "+++ ch2/main.rs",
                "--- ch1/wire.rs",
                "+++ ch2/wire.rs",
                "--- ch1/old.rs",
                "+++ /dev/null",
            ]
        );
    }
}
