//! A chapter's step: what it changed since the chapter before, as a unified diff.
//!
//! Each chapter from 2 on keeps its step in `changes.diff`, which its book page shows
//! (collapsed, under "Compared with chapter N"). `cargo run -- bless N` and
//! `cargo run -- carry N FILE` write it, and `tests/steps.rs` fails when one is stale, so
//! a fix made to some chapters and not to a later one shows up as a line of that later
//! chapter's step. [`changes`] is the one place a step is made.
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
//!
//! Code that moved is shown as moved. A block of lines removed in one place and added,
//! the same, in another place of the same step (the same file or another) is one line
//! on each side, at the block's indentation:
//!
//! ```text
//! -// … 31 lines moved to endpoint.rs (fn handle, fn guard)
//!  // … 31 lines moved here unchanged from main.rs (fn handle, fn guard)
//! ```
//!
//! The old place keeps a `-` line (something left here); the new place shows a context
//! line (nothing new to read here). A block counts as moved when it holds at least
//! [`MOVE_MIN_LINES`] lines that say something: blank lines and lines of braces alone do
//! not count, so a closing `}` and a blank line that happen to match are not a move. A
//! hunk's `@@` header still counts the lines the block stands for, so its numbers are the
//! lines of the files as the step reads them.

use std::collections::HashMap;
use std::io;
use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::chapters::{self, Chapter};
use crate::replay::diff_steps;

/// Lines of unchanged context around each change.
const CONTEXT: usize = 3;

/// How many lines that say something (see [`says_something`]) a block needs to be shown
/// as moved. Five: a function's signature, two lines of body and its doc comment are a
/// move; four lines of boilerplate that happen to repeat (`Err(e) => …`, `};`, `Ok(..)`)
/// are rarely five.
pub const MOVE_MIN_LINES: usize = 5;

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
    let mut diffs = Vec::new();
    if before.len() == 1 && after.len() > 1 {
        let mut joined = Side::default();
        for file in &after {
            joined.push(file, &format!("// ==== {file} ===="));
            for line in code_lines(&chapter.read(file)?) {
                joined.push(file, line);
            }
        }
        let old = Side::of_file("main.rs", &previous.read("main.rs")?);
        let label = format!("{}/{{{}}}", chapter.name, after.join(","));
        diffs.push(FileDiff::new(format!("{}/main.rs", previous.name), label, old, joined));
    } else {
        // New files (the piece) first, then the wiring, each in the map's order; a file
        // that went last.
        let new_files = after.iter().filter(|file| !before.contains(file));
        let kept = after.iter().filter(|file| before.contains(file));
        let gone = before.iter().filter(|file| !after.contains(file));
        for file in new_files.chain(kept).chain(gone) {
            let side = |snapshot: &Snapshot, files: &[String]| -> io::Result<(String, Side)> {
                Ok(if files.contains(file) {
                    (format!("{}/{file}", snapshot.name), Side::of_file(file, &snapshot.read(file)?))
                } else {
                    ("/dev/null".to_string(), Side::default())
                })
            };
            let ((old_label, old), (new_label, new)) = (side(previous, &before)?, side(chapter, &after)?);
            diffs.push(FileDiff::new(old_label, new_label, old, new));
        }
    }
    let moves = find_moves(&diffs);
    Ok(diffs.iter().enumerate().map(|(d, diff)| diff.render(d, &diffs, &moves)).collect())
}

/// One side of a file's diff: its lines as the step shows them, and the file each line
/// is in (chapter 11's joined side holds several files).
#[derive(Debug, Default)]
struct Side {
    lines: Vec<String>,
    files: Vec<String>,
}

impl Side {
    fn of_file(file: &str, text: &str) -> Self {
        let mut side = Side::default();
        for line in code_lines(text) {
            side.push(file, line);
        }
        side
    }

    fn push(&mut self, file: &str, line: &str) {
        self.lines.push(line.to_string());
        self.files.push(file.to_string());
    }
}

/// One file's part of a step (or chapter 11's whole step): both sides and their diff.
struct FileDiff {
    old_label: String,
    new_label: String,
    old: Side,
    new: Side,
    steps: Vec<Step>,
}

impl FileDiff {
    fn new(old_label: String, new_label: String, old: Side, new: Side) -> Self {
        let steps = diff_steps(&old.lines, &new.lines);
        FileDiff { old_label, new_label, old, new, steps }
    }

    /// The place of each old line and each new line in the order of the steps.
    fn positions(&self) -> (Vec<usize>, Vec<usize>) {
        let (mut old, mut new) = (vec![0; self.old.lines.len()], vec![0; self.new.lines.len()]);
        for (k, step) in self.steps.iter().enumerate() {
            if let Some(i) = step.0 {
                old[i] = k;
            }
            if let Some(j) = step.1 {
                new[j] = k;
            }
        }
        (old, new)
    }

    /// This file's part of the diff, in unified form (nothing when the two sides are the
    /// same); `d` is its place in `diffs`, which `moves` refer to.
    fn render(&self, d: usize, diffs: &[FileDiff], moves: &[Move]) -> String {
        let steps = &self.steps;
        let changed: Vec<usize> = (0..steps.len()).filter(|&k| !matches!(steps[k], (Some(_), Some(_)))).collect();
        if changed.is_empty() {
            return String::new();
        }
        // Which lines a move stands for: (the move, whether this is its first line).
        let mut old_moved = vec![None; self.old.lines.len()];
        let mut new_moved = vec![None; self.new.lines.len()];
        for (m, moved) in moves.iter().enumerate() {
            if moved.from.0 == d {
                for i in moved.from.1.clone() {
                    old_moved[i] = Some((m, i == moved.from.1.start));
                }
            }
            if moved.to.0 == d {
                for j in moved.to.1.clone() {
                    new_moved[j] = Some((m, j == moved.to.1.start));
                }
            }
        }
        let mut text = format!("--- {}\n+++ {}\n", self.old_label, self.new_label);
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
                    (Some(i), Some(_)) => format!(" {}", self.old.lines[i]),
                    (Some(i), None) => match old_moved[i] {
                        Some((m, true)) => moves[m].marker(diffs, Marker::There),
                        Some((_, false)) => continue,
                        None => format!("-{}", self.old.lines[i]),
                    },
                    (None, Some(j)) => match new_moved[j] {
                        Some((m, true)) => moves[m].marker(diffs, Marker::Here),
                        Some((_, false)) => continue,
                        None => format!("+{}", self.new.lines[j]),
                    },
                    (None, None) => unreachable!("every step takes a line"),
                };
                text.push_str(line.trim_end());
                text.push('\n');
            }
        }
        text
    }
}

/// A block of lines removed from one place of a step and added, the same, in another:
/// `from` is (file diff, its old lines), `to` is (file diff, its new lines), each with
/// the blank lines at its edges that went with it; `same` is the lines both ends hold
/// (in `from`'s old side).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Move {
    from: (usize, Range<usize>),
    to: (usize, Range<usize>),
    same: Range<usize>,
}

/// Which end of a move a marker stands at: the place the lines left, or the place they went.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Marker {
    There,
    Here,
}

impl Move {
    /// The one line that stands for the block at one of its ends.
    fn marker(&self, diffs: &[FileDiff], end: Marker) -> String {
        let (source, target) = (&diffs[self.from.0], &diffs[self.to.0]);
        let lines = &source.old.lines[self.same.clone()];
        // At the block's outermost level, so that it sits where its items did.
        let indent = lines
            .iter()
            .filter(|line| says_something(line))
            .map(|line| &line[..line.len() - line.trim_start().len()])
            .min_by_key(|indent| indent.len())
            .unwrap_or("");
        let (from_file, to_file) = (&source.old.files[self.same.start], &target.new.files[self.to.1.start]);
        let (len, what) = (self.same.len(), what_moved(lines));
        let down =
            (self.to.0, target.positions().1[self.to.1.start]) > (self.from.0, source.positions().0[self.from.1.start]);
        match end {
            Marker::There => {
                let whither = match from_file == to_file {
                    true if down => "down".to_string(),
                    true => "up".to_string(),
                    false => format!("to {to_file}"),
                };
                format!("-{indent}// … {len} lines moved {whither} ({what})")
            }
            Marker::Here => {
                let whence = match from_file == to_file {
                    true if down => "above".to_string(),
                    true => "below".to_string(),
                    false => from_file.clone(),
                };
                format!(" {indent}// … {len} lines moved here unchanged from {whence} ({what})")
            }
        }
    }
}

/// The moves of a step: each block of removed lines, in the order the step shows them,
/// against the longest run of added lines (in any file of the step) that is the same, when
/// that run holds at least [`MOVE_MIN_LINES`] lines that say something. Blank lines
/// removed or added right next to either end go with the move. A line is part of one
/// move at most.
fn find_moves(diffs: &[FileDiff]) -> Vec<Move> {
    // The removed and added lines not yet part of a move.
    let mut removed: Vec<Vec<bool>> = diffs.iter().map(|diff| vec![false; diff.old.lines.len()]).collect();
    let mut added: Vec<Vec<bool>> = diffs.iter().map(|diff| vec![false; diff.new.lines.len()]).collect();
    let mut added_at: HashMap<&str, Vec<(usize, usize)>> = HashMap::new();
    for (d, diff) in diffs.iter().enumerate() {
        for step in &diff.steps {
            match *step {
                (Some(i), None) => removed[d][i] = true,
                (None, Some(j)) => {
                    added[d][j] = true;
                    added_at.entry(diff.new.lines[j].as_str()).or_default().push((d, j));
                }
                _ => {}
            }
        }
    }
    let mut moves = Vec::new();
    for (d, diff) in diffs.iter().enumerate() {
        let old = &diff.old.lines;
        let mut i = 0;
        while i < old.len() {
            let mut best: Option<(usize, usize, (usize, usize))> = None;
            if removed[d][i] {
                for &(e, j) in added_at.get(old[i].as_str()).map_or(&[][..], Vec::as_slice) {
                    let new = &diffs[e].new.lines;
                    let same = |k: usize| {
                        i + k < old.len()
                            && j + k < new.len()
                            && removed[d][i + k]
                            && added[e][j + k]
                            && old[i + k] == new[j + k]
                    };
                    let len = (0..).take_while(|&k| same(k)).count();
                    let weight = old[i..i + len].iter().filter(|line| says_something(line)).count();
                    if best.is_none_or(|(most, _, _)| weight > most) {
                        best = Some((weight, len, (e, j)));
                    }
                }
            }
            match best {
                Some((weight, len, (e, j))) if weight >= MOVE_MIN_LINES => {
                    let from = with_blank_edges(old, &removed[d], i..i + len);
                    let to = with_blank_edges(&diffs[e].new.lines, &added[e], j..j + len);
                    removed[d][from.clone()].fill(false);
                    added[e][to.clone()].fill(false);
                    moves.push(Move { from: (d, from.clone()), to: (e, to), same: i..i + len });
                    i = from.end;
                }
                _ => i += 1,
            }
        }
    }
    moves
}

/// `block`, widened by the blank lines next to it that are still `free` (removed, or
/// added, and not part of a move).
fn with_blank_edges(lines: &[String], free: &[bool], block: Range<usize>) -> Range<usize> {
    let blank = |k: usize| free[k] && lines[k].trim().is_empty();
    let (mut start, mut end) = (block.start, block.end);
    while start > 0 && blank(start - 1) {
        start -= 1;
    }
    while end < lines.len() && blank(end) {
        end += 1;
    }
    start..end
}

/// Whether a line says something: not blank, not braces, brackets and semicolons alone,
/// not an empty comment.
pub(crate) fn says_something(line: &str) -> bool {
    let code = line.trim();
    !(code.is_empty() || code == "//" || code == "///" || code.chars().all(|c| "{}()[];,".contains(c)))
}

/// What a moved block holds, for its markers: the items it defines at its outermost
/// level (`fn handle, struct Guard`, three at most), or else its first line of code (or
/// of comment, when it holds no code), quoted and shortened: `"loop {" …`.
fn what_moved(lines: &[String]) -> String {
    let items: Vec<(usize, String)> =
        lines.iter().filter_map(|line| Some((line.len() - line.trim_start().len(), item_name(line)?))).collect();
    let outermost = items.iter().map(|(indent, _)| *indent).min();
    let mut names: Vec<&str> = Vec::new();
    for (indent, name) in &items {
        if Some(*indent) == outermost && !names.contains(&name.as_str()) {
            names.push(name);
        }
    }
    match names.len() {
        0 => {
            let said = || lines.iter().map(|line| line.trim()).filter(|line| says_something(line));
            let first = said().find(|line| !line.starts_with("//")).or_else(|| said().next()).unwrap_or("");
            format!("\"{}\" …", shortened(first, 40))
        }
        1..=3 => names.join(", "),
        _ => format!("{}, …", names[..3].join(", ")),
    }
}

/// The item a line opens, named as a reader looks for it: `fn handle`, `struct Guard`,
/// `impl Guard`, `impl From<u8> for Id`, `const LIMIT`; `None` when it opens none.
fn item_name(line: &str) -> Option<String> {
    let mut rest = line.trim_start();
    if rest.starts_with("pub(") {
        rest = rest.split_once(") ")?.1;
    }
    for prefix in ["pub ", "async ", "unsafe ", "extern \"C\" "] {
        rest = rest.strip_prefix(prefix).unwrap_or(rest);
    }
    if let Some(function) = rest.strip_prefix("const fn ") {
        rest = &rest[rest.len() - function.len() - "fn ".len()..];
    }
    if rest.starts_with("impl") && matches!(rest.as_bytes().get(4), Some(b' ' | b'<')) {
        let head = rest.split(['{']).next().unwrap_or(rest).split(" where").next().unwrap_or(rest);
        return Some(shortened(head.trim(), 40));
    }
    let keyword = ["fn", "struct", "enum", "trait", "type", "const", "static", "mod", "macro_rules!", "union"]
        .into_iter()
        .find(|keyword| rest.strip_prefix(keyword).is_some_and(|after| after.starts_with(' ')))?;
    let name: String =
        rest[keyword.len()..].trim_start().chars().take_while(|c| c.is_alphanumeric() || *c == '_').collect();
    (!name.is_empty()).then(|| format!("{keyword} {name}"))
}

/// `text`, cut to `most` characters with `…` when longer.
fn shortened(text: &str, most: usize) -> String {
    match text.char_indices().nth(most) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The lines of a source file as the book shows it: without `// ANCHOR:` lines, and
/// without a blank line that follows a blank line once they are gone (both sides of a
/// diff are read so, so the collapse never shows as a change).
fn code_lines(text: &str) -> Vec<&str> {
    let mut lines: Vec<&str> = Vec::new();
    for line in text.lines() {
        if crate::regions::is_anchor_line(line) {
            continue;
        }
        if line.trim().is_empty() && lines.last().is_some_and(|last| last.trim().is_empty()) {
            continue;
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A step between two texts of one file, as a chapter of one file shows it.
    fn file_diff(old_label: &str, new_label: &str, old: &str, new: &str) -> String {
        let diffs = [FileDiff::new(
            old_label.into(),
            new_label.into(),
            Side::of_file("main.rs", old),
            Side::of_file("main.rs", new),
        )];
        diffs[0].render(0, &diffs, &find_moves(&diffs))
    }

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

    /// A function of `body` lines, each saying something.
    fn function(name: &str, body: usize) -> String {
        let mut text = format!("/// What {name} does.\nfn {name}(x: u32) -> u32 {{\n");
        for k in 0..body {
            text.push_str(&format!("    let x = x + {k}; // {name}\n"));
        }
        text.push_str("    x\n}\n");
        text
    }

    #[test]
    fn a_block_that_moved_within_a_file_is_one_line_at_each_end() {
        let (a, b, c) = (function("alpha", 6), function("beta", 1), function("gamma", 1));
        let old = format!("{a}\n{b}\n{c}");
        let new = format!("{b}\n{c}\n{a}");
        let diff = file_diff("old/main.rs", "new/main.rs", &old, &new);
        let shown: Vec<&str> = diff.lines().filter(|line| line.starts_with(['-', '+']) || line.contains("…")).collect();
        assert_eq!(
            shown,
            [
                "--- old/main.rs",
                "+++ new/main.rs",
                "-// … 10 lines moved down (fn alpha)",
                " // … 10 lines moved here unchanged from above (fn alpha)",
            ],
            "{diff}"
        );
        // The blank line that went with alpha goes into the marker, and the headers
        // still count the lines the markers stand for: the 10 of alpha, the blank line,
        // and the context.
        assert!(diff.starts_with("--- old/main.rs\n+++ new/main.rs\n@@ -1,14 +1,3 @@\n"), "{diff}");
        assert!(diff.contains("@@ -20,3 +9,14 @@"), "{diff}");
    }

    #[test]
    fn braces_blank_lines_and_short_blocks_are_not_moves() {
        // Four lines that say something, moved: below the threshold, shown as they are.
        let short = "fn one() {\n    a();\n    b();\n    c();\n}\n";
        let old = format!("{short}\nfn two() {{\n    d();\n}}\n");
        let new = format!("fn two() {{\n    d();\n}}\n\n{short}");
        let diff = file_diff("a", "b", &old, &new);
        assert!(!diff.contains("moved") && diff.contains("\n-fn two() {\n"), "{diff}");
        // Many closing braces and blank lines, removed here and added there: no move.
        let braces = "    }\n\n}\n\n    }\n}\n\n);\n}\n";
        let old = format!("x\n{braces}y\nz\n");
        let new = format!("x\ny\n{braces}z\n");
        assert!(!file_diff("a", "b", &old, &new).contains("moved"));
        // A block changed on the way is not "unchanged": the changed line splits it,
        // and what is left on either side is too short to be a move.
        let old = format!("{}\nfn other() {{}}\n", function("alpha", 2));
        let new = format!("fn other() {{}}\n\n{}", function("alpha", 2).replace("+ 1;", "+ 100;"));
        assert!(!file_diff("a", "b", &old, &new).contains("moved"));
    }

    #[test]
    fn a_marker_sits_at_the_blocks_outermost_indentation() {
        let indented = |text: String| text.lines().map(|line| format!("    {line}\n")).collect::<String>();
        let (method, other) = (indented(function("weigh", 4)), indented(function("other", 10)));
        let old = format!("impl Scale {{\n{method}}}\n\nimpl Other {{\n{other}}}\n");
        let new = format!("impl Scale {{\n}}\n\nimpl Other {{\n{other}{method}}}\n");
        let diff = file_diff("a", "b", &old, &new);
        assert!(diff.contains("\n-    // … 8 lines moved down (fn weigh)\n"), "{diff}");
        assert!(diff.contains("\n     // … 8 lines moved here unchanged from above (fn weigh)\n"), "{diff}");
        // A block copied, not moved (its old place keeps it), is added lines.
        let old = function("alpha", 5);
        let diff = file_diff("a", "b", &old, &format!("{old}\n{}", function("alpha", 5)));
        assert!(!diff.contains("moved") && diff.contains("+fn alpha"), "{diff}");
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

    #[test]
    fn a_block_that_moved_to_another_file_names_both_files() {
        let helper = function("weight", 5);
        let root = tree(&[
            ("ch1", "main.rs", &format!("mod wire;\n\nfn main() {{}}\n\n{helper}")),
            ("ch1", "wire.rs", "pub fn wire() {}\n"),
            ("ch2", "main.rs", "mod wire;\nmod scales;\n\nfn main() {}\n"),
            ("ch2", "wire.rs", "pub fn wire() {}\n"),
            ("ch2", "scales.rs", &format!("//! Scales.\n\npub fn new() {{}}\n\n{helper}")),
        ]);
        let step = changes_between(&snapshot(root.path(), "ch1"), &snapshot(root.path(), "ch2")).unwrap();
        assert!(step.contains("\n // … 10 lines moved here unchanged from main.rs (fn weight)\n"), "{step}");
        assert!(step.contains("\n-// … 10 lines moved to scales.rs (fn weight)\n"), "{step}");
        assert!(!step.contains("+fn weight") && !step.contains("-fn weight"), "{step}");
        // The new file comes first, and its own lines are shown as added.
        assert!(step.starts_with("--- /dev/null\n+++ ch2/scales.rs\n"), "{step}");
        assert!(step.contains("+pub fn new() {}"), "{step}");
    }

    #[test]
    fn a_split_into_files_shows_the_moves_into_each_file() {
        // Chapter 11's shape: one main.rs becomes a crate; the joined step names the
        // file a block went to, and the marker takes the block's indentation.
        let (handle, echo) = (function("handle", 4), function("echo", 4));
        let inner = "impl Server {\n    /// Serve.\n    fn serve(&self) {\n        one();\n        two();\n        three();\n    }\n}\n";
        let root = tree(&[
            ("ch1", "main.rs", &format!("fn main() {{}}\n\n{echo}\n{handle}\n{inner}")),
            ("ch2", "main.rs", &format!("mod endpoint;\nmod jsonrpc;\n\nfn main() {{}}\n\n{inner}")),
            ("ch2", "endpoint.rs", &format!("//! HTTP.\n\n{handle}")),
            ("ch2", "jsonrpc.rs", &format!("//! JSON-RPC.\n\n{echo}")),
        ]);
        let step = changes_between(&snapshot(root.path(), "ch1"), &snapshot(root.path(), "ch2")).unwrap();
        assert!(step.starts_with("--- ch1/main.rs\n+++ ch2/{main.rs,endpoint.rs,jsonrpc.rs}\n"), "{step}");
        // Whatever the diff keeps in place, every line of the three blocks is either
        // context or inside a marker: none is shown removed or added.
        for line in step
            .lines()
            .filter(|line| line.starts_with(['-', '+']) && !line.starts_with("---") && !line.starts_with("+++"))
        {
            let allowed = ["// ====", "mod ", "//!", "// … "];
            assert!(
                line[1..].trim().is_empty() || allowed.iter().any(|start| line[1..].trim_start().starts_with(start)),
                "{line:?} in\n{step}"
            );
        }
        assert!(step.contains("-// … 7 lines moved to jsonrpc.rs (fn echo)"), "{step}");
        assert!(step.contains(" // … 7 lines moved here unchanged from main.rs (fn echo)"), "{step}");
        assert_eq!(item_name("    pub(crate) async fn serve(&self) {"), Some("fn serve".into()));
        assert_eq!(item_name("impl<T> From<T> for Id where T: Into<u8> {"), Some("impl<T> From<T> for Id".into()));
        assert_eq!(item_name("pub const fn limit() -> u32 {"), Some("fn limit".into()));
        assert_eq!(item_name("let implied = 1;"), None);
    }
}
