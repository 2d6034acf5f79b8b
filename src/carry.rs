//! Carrying a change forward: `cargo run -- carry N FILE`.
//!
//! Every chapter is a full snapshot of the server, and a later chapter carries an
//! earlier chapter's files forward mostly unchanged. A fix made to chapter N's `FILE`
//! belongs in the same file of every later chapter; this module makes those copies.
//!
//! The change is chapter N's `FILE` now against the same file at a base revision (git's
//! `HEAD` unless told). Each later chapter that has the file takes it by a three-way
//! merge, `git merge-file`: base = the file before the change, theirs = the file with
//! it, ours = the later chapter's file. The change comes from the nearest earlier
//! chapter that took it (chapter N's own, to start with), so each merge bridges one
//! chapter's step, not many. A merge that conflicts writes nothing: the chapter is named
//! with the conflicting hunk, for the contributor to do by hand. Run again after that,
//! the same carry keeps a chapter that changed since the base (the conflict done by
//! hand), and takes its version of the change on to the chapters after it.
//!
//! Why `git merge-file` and not the workbook's own LCS diff (`replay::diff_steps`): the
//! base comes from git already, every contributor has git, and its merge is the one they
//! know from `git merge` and `git rebase`, conflict rules included (two changes to the
//! same or adjacent lines conflict; the same change on both sides does not). A
//! three-way merge written here would be new code to trust in the one place where a
//! wrong answer silently changes a chapter.
//!
//! Where the file is the one a chapter's exercise copies (its piece from chapter 11, its
//! `main.rs` before), the same merge goes into that chapter's `exercise.rs`, which must
//! equal the file outside its TODO regions (`tests/exercises.rs`); a change inside a
//! TODO region conflicts there, and is named.
//!
//! Chapter 11 splits chapter 10's one file into a crate of several. A change carried
//! from a chapter of one file is still tried on chapter 11's `main.rs`: a three-way
//! merge applies a hunk only where its lines still are, so a change to code that stayed
//! in `main.rs` (the tools, the flags) goes on, and one to code that moved to another
//! file conflicts. There the carry stops, and says which of chapter 11's files hold the
//! lines, so the contributor makes the change there and carries it on from chapter 11.
//!
//! After merging, the steps (`changes.diff`) of chapter N to the last chapter reached
//! (the last one, or the one the carry stopped at) are written again by
//! [`steps::changes_between`], the code behind `bless` and `tests/steps.rs` too. Transcripts are never
//! touched: `cargo run -- bless N` re-records a chapter's transcript when a change alters
//! what it answers.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::chapters::Chapter;
use crate::replay::diff_steps;
use crate::steps::{self, Snapshot};

/// What to carry: chapter `chapter`'s `file`, from `base` (its text at `base_label`) to
/// its text now, in the workbook at `root` whose chapters are `chapters`.
pub struct Carry<'a> {
    pub root: &'a Path,
    pub chapters: &'a [Chapter],
    pub chapter: &'a Chapter,
    pub file: String,
    pub base: String,
    pub base_label: String,
    /// A later chapter's `file` at the same base, when it had one ([`base_at`]). A later
    /// chapter that has the change already, made by hand since the base, hands on its own
    /// version of it: so after a conflict done by hand, the same carry run again takes the
    /// change on from there.
    pub earlier: &'a dyn Fn(&Chapter) -> Option<String>,
    /// `false` for a dry run: say what would change, write nothing.
    pub write: bool,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The change was merged in (or would be, in a dry run).
    Carried,
    /// The file already has the change.
    Unchanged,
    /// The merge conflicts, but the file has changed since the base: taken as the change
    /// done by hand (after an earlier run's conflict), and left as it is.
    Kept,
    /// The merge conflicts; the file is left as it was. The conflicting hunks, with the
    /// line of the file each starts at.
    Conflict(String),
    /// The chapter has no such file in its map.
    Absent,
}

/// One line of the report: a chapter's file (`ch12-prompts/jsonrpc.rs`) and its outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub path: String,
    pub outcome: Outcome,
}

/// What a carry did, in the order it did it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `ch11-resources/jsonrpc.rs`.
    pub source: String,
    pub base_label: String,
    /// Lines added and removed by the change.
    pub added: usize,
    pub removed: usize,
    pub entries: Vec<Entry>,
    /// Why the carry stopped before the last chapter, when it did.
    pub stopped: Option<String>,
    /// The steps written again (`chapters/NAME/changes.diff`) and whether each changed;
    /// in a dry run, the steps it would write.
    pub steps: Vec<(String, bool)>,
    pub written: bool,
}

impl Report {
    /// How many files need the change by hand.
    pub fn conflicts(&self) -> usize {
        self.entries.iter().filter(|entry| matches!(entry.outcome, Outcome::Conflict(_))).count()
    }
}

/// The file a carry names, however it was typed: `jsonrpc.rs`, `jsonrpc`, or its path
/// (`chapters/ch11-resources/jsonrpc.rs`).
pub fn file_name(typed: &str) -> String {
    let name = typed.rsplit(['/', '\\']).next().unwrap_or(typed);
    if name.contains('.') { name.to_string() } else { format!("{name}.rs") }
}

/// Chapter `chapter`'s `file` as it was at git revision `rev` (`HEAD`, `main~2`).
pub fn base_at(root: &Path, rev: &str, chapter: &Chapter, file: &str) -> Result<String, String> {
    let path = format!("chapters/{}/{file}", chapter.name);
    let output = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["show", &format!("{rev}:./{path}")])
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{path} is not in {rev} ({}): a carry needs the file as it was, to know what changed",
            String::from_utf8_lossy(&output.stderr).trim()
        ));
    }
    String::from_utf8(output.stdout).map_err(|_| format!("{path} at {rev} is not UTF-8"))
}

/// Carry the change forward, and write the steps again (unless a dry run).
pub fn carry(request: &Carry) -> Result<Report, String> {
    let Carry { root, chapters, chapter, file, base, base_label, earlier, write } = request;
    let snapshot = Snapshot::in_tree(root, chapter);
    let files = snapshot.source_files().map_err(|e| format!("{}: {e}", snapshot.folder.display()))?;
    if !files.contains(file) {
        return Err(format!("{} has no {file} in its map; its files are {}", chapter.name, files.join(", ")));
    }
    let path = |chapter: &Chapter, file: &str| root.join("chapters").join(chapter.name).join(file);
    let read = |path: &Path| std::fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let theirs = read(&path(chapter, file))?;
    if theirs == *base {
        return Err(format!(
            "{}/{file} is the same as at {base_label}: nothing to carry (change it first, or name another base \
             with --from)",
            chapter.name
        ));
    }
    let (added, removed) = counted(base, &theirs);
    let mut report = Report {
        source: format!("{}/{file}", chapter.name),
        base_label: base_label.clone(),
        added,
        removed,
        entries: Vec::new(),
        stopped: None,
        steps: Vec::new(),
        written: *write,
    };
    let mut put = |path: &Path, text: &str| -> Result<(), String> {
        if *write {
            std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        Ok(())
    };

    // The change as the nearest earlier chapter that took it has it: before, after, and
    // how the merge's conflict markers name the two.
    let mut change = Change {
        from: chapter,
        before: base.clone(),
        after: theirs.clone(),
        before_label: format!("{}/{file} at {base_label}", chapter.name),
        after_label: format!("{}/{file} now", chapter.name),
    };
    // The chapter's own exercise, when it copies this file.
    if let Some(entry) = into_exercise(chapter, file, &change, root, &mut put)? {
        report.entries.push(entry);
    }

    let one_file = |snapshot: &Snapshot| snapshot.source_files().map(|files| files.len() == 1).unwrap_or(false);
    // The last chapter whose step may change: the last one, or the one the carry stopped at.
    let mut last = chapters.iter().map(|c| c.number).max().unwrap_or(chapter.number);
    for later in chapters.iter().filter(|later| later.number > chapter.number) {
        let later_snapshot = Snapshot::in_tree(root, later);
        let label = format!("{}/{file}", later.name);
        let has_it = later_snapshot.source_files().map(|files| files.contains(file)).unwrap_or(false);
        if !has_it {
            report.entries.push(Entry { path: label, outcome: Outcome::Absent });
            continue;
        }
        // From a chapter of one file to a crate of several (chapter 11).
        let crossing = one_file(&later_snapshot) != one_file(&Snapshot::in_tree(root, change.from));
        let ours = read(&path(later, file))?;
        match merge(&ours, &change, &label)? {
            Merged::Clean(merged) if merged == ours => {
                report.entries.push(Entry { path: label.clone(), outcome: Outcome::Unchanged });
                // Changed since the base, by hand: its version of the change goes on, and
                // into its exercise.
                if let Some(before) = earlier(later).filter(|before| *before != ours) {
                    change = Change {
                        from: later,
                        before,
                        after: ours,
                        before_label: format!("{label} at {base_label}"),
                        after_label: format!("{label} now"),
                    };
                    if let Some(entry) = into_exercise(later, file, &change, root, &mut put)? {
                        report.entries.push(entry);
                    }
                }
            }
            Merged::Clean(merged) => {
                put(&path(later, file), &merged)?;
                report.entries.push(Entry { path: label.clone(), outcome: Outcome::Carried });
                change = Change {
                    from: later,
                    before: ours,
                    after: merged,
                    before_label: format!("{label} before the carry"),
                    after_label: format!("{label} carried"),
                };
                if let Some(entry) = into_exercise(later, file, &change, root, &mut put)? {
                    report.entries.push(entry);
                }
            }
            Merged::Conflict(hunks) => {
                // Changed since the base already: a conflict done by hand, before this
                // run. Its version of the change goes on.
                if let Some(before) = earlier(later).filter(|before| *before != ours) {
                    report.entries.push(Entry { path: label.clone(), outcome: Outcome::Kept });
                    change = Change {
                        from: later,
                        before,
                        after: ours,
                        before_label: format!("{label} at {base_label}"),
                        after_label: format!("{label} now"),
                    };
                    if let Some(entry) = into_exercise(later, file, &change, root, &mut put)? {
                        report.entries.push(entry);
                    }
                    continue;
                }
                if !crossing {
                    report.entries.push(Entry { path: label, outcome: Outcome::Conflict(hunks) });
                    continue;
                }
                // Into the split, the conflict is the split itself: show the change instead.
                report.entries.push(Entry { path: label, outcome: Outcome::Conflict(the_change(&change)) });
                let holders = where_the_lines_are(&change, &later_snapshot);
                let whither = match holders.as_slice() {
                    [] => format!("make the change where it belongs in {}", later.name),
                    files => format!(
                        "the lines it touches are in chapter {}'s {}: make the change there by hand",
                        later.number,
                        files.join(" and ")
                    ),
                };
                report.stopped = Some(format!(
                    "stopped at {}: it splits the server into files, so its {file} is not {}'s continued. \
                     A merge goes on only where the lines stayed; here they moved: {whither}, then carry it on \
                     with `cargo run -- carry {} FILE`.",
                    later.name, change.from.name, later.number
                ));
                last = later.number;
                break;
            }
        }
    }

    // The steps of every chapter from this one to the last reached: a chapter's step
    // reads its files and the chapter before's.
    for number in chapter.number.max(2)..=last {
        let (Some(previous), Some(current)) =
            (chapters.iter().find(|c| c.number + 1 == number), chapters.iter().find(|c| c.number == number))
        else {
            continue;
        };
        let step_path = format!("chapters/{}/changes.diff", current.name);
        if !*write {
            report.steps.push((step_path, true));
            continue;
        }
        let step = steps::changes_between(&Snapshot::in_tree(root, previous), &Snapshot::in_tree(root, current))
            .map_err(|e| format!("{}: {e}", current.name))?;
        let full = root.join(&step_path);
        let changed = std::fs::read_to_string(&full).ok().as_deref() != Some(step.as_str());
        if changed {
            put(&full, &step)?;
        }
        report.steps.push((step_path, changed));
    }
    Ok(report)
}

/// A change as one chapter has it: its file before and after.
#[derive(Debug, Clone)]
struct Change<'a> {
    from: &'a Chapter,
    before: String,
    after: String,
    before_label: String,
    after_label: String,
}

/// The outcome of one merge: the merged text, or the conflicting hunks.
enum Merged {
    Clean(String),
    Conflict(String),
}

/// Merge `change` into `ours` (named `label`) with `git merge-file`.
fn merge(ours: &str, change: &Change, label: &str) -> Result<Merged, String> {
    let folder = scratch_folder()?;
    let result = (|| {
        let (ours_path, base_path, theirs_path) = (folder.join("ours"), folder.join("base"), folder.join("theirs"));
        for (path, text) in [(&ours_path, ours), (&base_path, &change.before), (&theirs_path, &change.after)] {
            std::fs::write(path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        }
        let output = Command::new("git")
            .args(["merge-file", "-p", "--diff3"])
            .args(["-L", label, "-L", &change.before_label, "-L", &change.after_label])
            .args([&ours_path, &base_path, &theirs_path])
            .output()
            .map_err(|e| format!("cannot run git merge-file: {e}"))?;
        let merged =
            String::from_utf8(output.stdout).map_err(|_| format!("git merge-file wrote non-UTF-8 for {label}"))?;
        match output.status.code() {
            Some(0) => Ok(Merged::Clean(merged)),
            Some(1..=127) => Ok(Merged::Conflict(conflict_hunks(&merged))),
            _ => Err(format!("git merge-file failed on {label}: {}", String::from_utf8_lossy(&output.stderr).trim())),
        }
    })();
    let _ = std::fs::remove_dir_all(&folder);
    result
}

/// Merge a chapter's change into its `exercise.rs`, when the exercise copies `file`.
fn into_exercise(
    chapter: &Chapter,
    file: &str,
    change: &Change,
    root: &Path,
    put: &mut impl FnMut(&Path, &str) -> Result<(), String>,
) -> Result<Option<Entry>, String> {
    let copies = match chapter.piece {
        Some(piece) => format!("{piece}.rs"),
        None => "main.rs".to_string(),
    };
    let path = root.join("chapters").join(chapter.name).join("exercise.rs");
    if file != copies || !path.exists() {
        return Ok(None);
    }
    let label = format!("{}/exercise.rs", chapter.name);
    let ours = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let outcome = match merge(&ours, change, &label)? {
        Merged::Clean(merged) if merged == ours => Outcome::Unchanged,
        Merged::Clean(merged) => {
            put(&path, &merged)?;
            Outcome::Carried
        }
        Merged::Conflict(hunks) => Outcome::Conflict(hunks),
    };
    Ok(Some(Entry { path: label, outcome }))
}

/// A new empty folder for one merge's three files.
fn scratch_folder() -> Result<PathBuf, String> {
    static MADE: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let made = MADE.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let folder = std::env::temp_dir().join(format!("mcp-workbook-carry-{}-{made}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).map_err(|e| format!("cannot create {}: {e}", folder.display()))?;
    Ok(folder)
}

/// The conflicts of a merged text, each with two lines of context and the line of the
/// chapter's file it starts at.
fn conflict_hunks(merged: &str) -> String {
    let lines: Vec<&str> = merged.lines().collect();
    let mut hunks = String::new();
    // The line of "ours" each merged line stands at: lines outside a conflict and the
    // ours part of one are ours.
    let (mut ours_line, mut k) = (0, 0);
    while k < lines.len() {
        if !lines[k].starts_with("<<<<<<< ") {
            ours_line += 1;
            k += 1;
            continue;
        }
        let start = k;
        let end = (k..lines.len()).find(|&e| lines[e].starts_with(">>>>>>> ")).unwrap_or(lines.len() - 1);
        let ours_len = (start + 1..end).take_while(|&e| !lines[e].starts_with("||||||| ")).count();
        hunks.push_str(&format!("@@ line {} @@\n", ours_line + 1));
        for line in &lines[start.saturating_sub(2)..(end + 3).min(lines.len())] {
            hunks.push_str(line);
            hunks.push('\n');
        }
        ours_line += ours_len;
        k = end + 1;
    }
    hunks
}

/// A change as a unified diff, two lines of context to a hunk: what to make by hand.
fn the_change(change: &Change) -> String {
    let (a, b): (Vec<&str>, Vec<&str>) = (change.before.lines().collect(), change.after.lines().collect());
    let steps = diff_steps(&a, &b);
    let mut text = format!("--- {}\n+++ {}\n", change.before_label, change.after_label);
    let changed: Vec<usize> = (0..steps.len()).filter(|&k| steps[k].0.is_none() || steps[k].1.is_none()).collect();
    let mut k = 0;
    while k < changed.len() {
        // A hunk: changes no more than four lines apart, and two lines around them.
        let mut last = k;
        while last + 1 < changed.len() && changed[last + 1] <= changed[last] + 5 {
            last += 1;
        }
        let (start, end) = (changed[k].saturating_sub(2), (changed[last] + 3).min(steps.len()));
        let old_line = steps[..start].iter().filter(|step| step.0.is_some()).count() + 1;
        text.push_str(&format!("@@ line {old_line} @@\n"));
        for step in &steps[start..end] {
            match *step {
                (Some(i), Some(_)) => text.push_str(&format!(" {}\n", a[i])),
                (Some(i), None) => text.push_str(&format!("-{}\n", a[i])),
                (None, Some(j)) => text.push_str(&format!("+{}\n", b[j])),
                (None, None) => {}
            }
        }
        k = last + 1;
    }
    text
}

/// Lines added and removed from `before` to `after`.
fn counted(before: &str, after: &str) -> (usize, usize) {
    let (a, b): (Vec<&str>, Vec<&str>) = (before.lines().collect(), after.lines().collect());
    let steps = diff_steps(&a, &b);
    let added = steps.iter().filter(|step| step.0.is_none()).count();
    let removed = steps.iter().filter(|step| step.1.is_none()).count();
    (added, removed)
}

/// Which of a snapshot's files hold the lines a change touches (the lines it removes,
/// and for an insertion the lines around it): the file holding most of them, and any
/// holding as many.
fn where_the_lines_are(change: &Change, snapshot: &Snapshot) -> Vec<String> {
    let (a, b): (Vec<&str>, Vec<&str>) = (change.before.lines().collect(), change.after.lines().collect());
    let steps = diff_steps(&a, &b);
    let mut touched: Vec<&str> = Vec::new();
    for (k, step) in steps.iter().enumerate() {
        if step.0.is_some() && step.1.is_some() {
            continue;
        }
        for near in &steps[k.saturating_sub(2)..(k + 3).min(steps.len())] {
            if let Some(i) = near.0 {
                let line = a[i].trim();
                if steps::says_something(line) && !touched.contains(&line) {
                    touched.push(line);
                }
            }
        }
    }
    let mut counts: Vec<(usize, String)> = snapshot
        .source_files()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|file| {
            let text = std::fs::read_to_string(snapshot.folder.join(&file)).ok()?;
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            let count = touched.iter().filter(|line| lines.contains(line)).count();
            (count > 0).then_some((count, file))
        })
        .collect();
    let most = counts.iter().map(|(count, _)| *count).max().unwrap_or(0);
    counts.retain(|(count, _)| *count == most);
    counts.into_iter().map(|(_, file)| file).collect()
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (would, carried) = if self.written { ("", "carried") } else { ("would be ", "would be carried") };
        writeln!(
            f,
            "{} since {}: {} line{} added, {} removed{}",
            self.source,
            self.base_label,
            self.added,
            if self.added == 1 { "" } else { "s" },
            self.removed,
            if self.written { "" } else { " (dry run: nothing written)" }
        )?;
        let width = self.entries.iter().map(|entry| entry.path.len()).max().unwrap_or(0);
        // A conflict shown already, by the file it was shown for: a later chapter that
        // conflicts the same way (the change came to both from the same chapter) is
        // named, not shown again.
        let mut shown: Vec<(&str, String)> = Vec::new();
        for Entry { path, outcome } in &self.entries {
            match outcome {
                Outcome::Carried => writeln!(f, "  {path:width$}  {carried}")?,
                Outcome::Unchanged => writeln!(f, "  {path:width$}  unchanged: it has the change already")?,
                Outcome::Kept => writeln!(
                    f,
                    "  {path:width$}  kept: changed since {} in its own way; taken as done by hand (check it)",
                    self.base_label
                )?,
                Outcome::Absent => writeln!(f, "  {path:width$}  skipped: the chapter has no such file")?,
                Outcome::Conflict(hunks) => {
                    let same: String = hunks.lines().filter(|line| !line.starts_with("<<<<<<< ")).collect();
                    if let Some((first, _)) = shown.iter().find(|(_, hunks)| *hunks == same) {
                        writeln!(f, "  {path:width$}  CONFLICT: {would}left as it is; the same hunk as {first}")?;
                        continue;
                    }
                    writeln!(f, "  {path:width$}  CONFLICT: {would}left as it is; make the change by hand:")?;
                    for line in hunks.lines() {
                        writeln!(f, "{}", format!("      {line}").trim_end())?;
                    }
                    shown.push((path, same));
                }
            }
        }
        if let Some(stopped) = &self.stopped {
            writeln!(f, "{stopped}")?;
        }
        if self.written {
            for (path, changed) in &self.steps {
                writeln!(f, "{} {path}", if *changed { "rewrote" } else { "unchanged:" })?;
            }
        } else if let (Some((first, _)), Some((last, _))) = (self.steps.first(), self.steps.last()) {
            writeln!(f, "would rewrite the steps from {first} to {last}, where they change")?;
        }
        // The chapter a carry stopped at has its own advice, above.
        let mut conflicts =
            self.entries.iter().filter(|e| matches!(e.outcome, Outcome::Conflict(_))).collect::<Vec<_>>();
        if self.stopped.is_some() {
            conflicts.pop();
        }
        let hand = match conflicts.as_slice() {
            [] => String::new(),
            [first, ..] => format!(
                "{} file{} {would}left to do by hand. Do {} first, then run the same carry again: it keeps what \
                 you did and carries it on, so the later ones may merge from it. ",
                conflicts.len(),
                if conflicts.len() == 1 { "" } else { "s" },
                first.path
            ),
        };
        writeln!(
            f,
            "{hand}Transcripts are untouched: if the change alters what a chapter answers, `cargo run -- bless N` \
             re-records its transcript. Review with `git diff chapters/`, and build the chapters it changed."
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::steps::tests::tree;

    /// Chapters 1 and 2 of one file each; 3 to 5 a crate each, whose piece is the file
    /// the exercise copies.
    const CHAPTERS: &[Chapter] = &[
        Chapter { number: 1, name: "ch01-one", title: "One", piece: None, features: &[] },
        Chapter { number: 2, name: "ch02-two", title: "Two", piece: None, features: &[] },
        Chapter { number: 3, name: "ch03-three", title: "Three", piece: Some("wire"), features: &[] },
        Chapter { number: 4, name: "ch04-four", title: "Four", piece: Some("extra"), features: &[] },
        Chapter { number: 5, name: "ch05-five", title: "Five", piece: Some("more"), features: &[] },
    ];

    /// A file of numbered lines that say something, `fn line_K() {}`, for K in `lines`.
    fn numbered(lines: impl IntoIterator<Item = usize>) -> String {
        lines.into_iter().map(|k| format!("fn line_{k}() {{}}\n")).collect()
    }

    fn read(root: &Path, chapter: &str, file: &str) -> String {
        std::fs::read_to_string(root.join("chapters").join(chapter).join(file)).unwrap()
    }

    fn write(root: &Path, chapter: &str, file: &str, text: &str) {
        std::fs::write(root.join("chapters").join(chapter).join(file), text).unwrap();
    }

    fn request<'a>(root: &'a Path, number: u8, file: &str, base: &str) -> Carry<'a> {
        Carry {
            root,
            chapters: CHAPTERS,
            chapter: &CHAPTERS[usize::from(number) - 1],
            file: file.into(),
            base: base.into(),
            base_label: "HEAD".into(),
            earlier: &|_| None,
            write: true,
        }
    }

    fn outcomes(report: &Report) -> Vec<(&str, &Outcome)> {
        report.entries.iter().map(|entry| (entry.path.as_str(), &entry.outcome)).collect()
    }

    /// A tree of five chapters: `wire.rs` in 3 to 5, each a little different (each later
    /// chapter adds a line at its end), and `main.rs` everywhere.
    fn five_chapters() -> crate::steps::tests::Tree {
        let wire3 = numbered(1..=20);
        let wire4 = format!("{wire3}fn four() {{}}\n");
        let wire5 = format!("{wire4}fn five() {{}}\n");
        let crate_main = |extra: &str| format!("mod wire;\n{extra}\nfn main() {{}}\n");
        tree(&[
            ("ch01-one", "main.rs", &numbered(1..=12)),
            ("ch01-one", "exercise.rs", &numbered(1..=12)),
            ("ch02-two", "main.rs", &format!("{}fn two() {{}}\n", numbered(1..=12))),
            ("ch02-two", "exercise.rs", &numbered(1..=12)),
            ("ch03-three", "main.rs", &crate_main("")),
            ("ch03-three", "wire.rs", &wire3),
            ("ch03-three", "exercise.rs", &wire3.replace("fn line_15() {}\n", "// TODO: line 15\n// END TODO\n")),
            ("ch04-four", "main.rs", &crate_main("mod extra;\n")),
            ("ch04-four", "wire.rs", &wire4),
            ("ch04-four", "extra.rs", "fn extra() {}\n"),
            ("ch05-five", "main.rs", &crate_main("mod extra;\nmod more;\n")),
            ("ch05-five", "wire.rs", &wire5),
            ("ch05-five", "extra.rs", "fn extra() {}\n"),
            ("ch05-five", "more.rs", "fn more() {}\n"),
        ])
    }

    #[test]
    fn a_change_goes_into_every_later_chapter_that_has_the_file() {
        let root = five_chapters();
        let base = read(root.path(), "ch03-three", "wire.rs");
        // A fix in chapter 3's wire.rs, outside the exercise's TODO.
        write(root.path(), "ch03-three", "wire.rs", &base.replace("fn line_5() {}", "fn line_5() { fixed() }"));
        let report = carry(&request(root.path(), 3, "wire.rs", &base)).unwrap();
        assert_eq!(
            outcomes(&report),
            [
                ("ch03-three/exercise.rs", &Outcome::Carried),
                ("ch04-four/wire.rs", &Outcome::Carried),
                ("ch05-five/wire.rs", &Outcome::Carried),
            ]
        );
        for chapter in ["ch03-three", "ch04-four", "ch05-five"] {
            let file = if chapter == "ch03-three" { "exercise.rs" } else { "wire.rs" };
            assert!(read(root.path(), chapter, file).contains("fn line_5() { fixed() }"), "{chapter}");
        }
        // The later chapters keep what they had of their own.
        assert!(read(root.path(), "ch05-five", "wire.rs").ends_with("fn four() {}\nfn five() {}\n"));
        // The steps of 3, 4 and 5 are written again (chapter 5 is the last).
        let steps: Vec<&str> = report.steps.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(
            steps,
            ["chapters/ch03-three/changes.diff", "chapters/ch04-four/changes.diff", "chapters/ch05-five/changes.diff"]
        );
        let step4 = read(root.path(), "ch04-four", "changes.diff");
        assert!(step4.contains("+fn four() {}") && !step4.contains("fixed"), "{step4}");
        // Run again: every chapter has it already.
        let again = carry(&request(root.path(), 3, "wire.rs", &base)).unwrap();
        assert!(again.entries.iter().all(|entry| entry.outcome == Outcome::Unchanged), "{again}");
        assert!(again.steps.iter().all(|(_, changed)| !changed), "{again}");
        let shown = again.to_string();
        assert!(shown.contains("ch04-four/wire.rs       unchanged: it has the change already"), "{shown}");
    }

    #[test]
    fn a_conflict_leaves_the_chapter_as_it_was_and_shows_the_hunk() {
        let root = five_chapters();
        let base = read(root.path(), "ch03-three", "wire.rs");
        // Chapter 4 changed line 10 its own way; chapter 3 now changes it too.
        let wire4 = read(root.path(), "ch04-four", "wire.rs").replace("fn line_10() {}", "fn line_10() { four() }");
        write(root.path(), "ch04-four", "wire.rs", &wire4);
        let wire5 = read(root.path(), "ch05-five", "wire.rs").replace("fn line_10() {}", "fn line_10() { four() }");
        write(root.path(), "ch05-five", "wire.rs", &wire5);
        let fixed =
            base.replace("fn line_10() {}", "fn line_10() { three() }").replace("fn line_2() {}", "fn two() {}");
        write(root.path(), "ch03-three", "wire.rs", &fixed);
        let report = carry(&request(root.path(), 3, "wire.rs", &base)).unwrap();
        let Outcome::Conflict(hunks) = &report.entries[1].outcome else { panic!("{report}") };
        assert_eq!(report.entries[1].path, "ch04-four/wire.rs");
        assert!(
            hunks.starts_with("@@ line 10 @@\nfn line_8() {}\nfn line_9() {}\n<<<<<<< ch04-four/wire.rs\n"),
            "{hunks}"
        );
        assert!(
            hunks.contains("fn line_10() { four() }\n||||||| ch03-three/wire.rs at HEAD\nfn line_10() {}\n"),
            "{hunks}"
        );
        assert!(hunks.contains("=======\nfn line_10() { three() }\n>>>>>>> ch03-three/wire.rs now\n"), "{hunks}");
        // Nothing of the merge is written, no marker above all.
        assert_eq!(read(root.path(), "ch04-four", "wire.rs"), wire4);
        assert_eq!(report.conflicts(), 2, "{report}");
        assert_eq!(read(root.path(), "ch05-five", "wire.rs"), wire5);
        let shown = report.to_string();
        assert!(
            shown.contains(
                "  ch04-four/wire.rs       CONFLICT: left as it is; make the change by hand:\n      @@ line 10 @@\n"
            ),
            "{shown}"
        );
        assert!(shown.contains("2 files left to do by hand. Do ch04-four/wire.rs first"), "{shown}");
        // Chapter 5 conflicts the same way, with the change from the same chapter.
        assert!(
            shown.contains("  ch05-five/wire.rs       CONFLICT: left as it is; the same hunk as ch04-four/wire.rs\n"),
            "{shown}"
        );
        // Chapter 4 done by hand; the same carry again takes chapter 4's version of the
        // change into chapter 5, which differs from chapter 4 by its own last line only.
        write(root.path(), "ch04-four", "wire.rs", &wire4.replace("{ four() }", "{ three() + four() }"));
        let at_head = |chapter: &Chapter| (chapter.name == "ch04-four").then(|| wire4.clone());
        let again = carry(&Carry { earlier: &at_head, ..request(root.path(), 3, "wire.rs", &base) }).unwrap();
        assert_eq!(
            outcomes(&again)[1..],
            [("ch04-four/wire.rs", &Outcome::Kept), ("ch05-five/wire.rs", &Outcome::Carried)],
            "{again}"
        );
        assert_eq!(again.conflicts(), 0);
        assert!(read(root.path(), "ch05-five", "wire.rs").contains("fn line_10() { three() + four() }\n"));
    }

    #[test]
    fn a_piece_takes_its_exercise_along_and_a_todo_region_conflicts() {
        let root = five_chapters();
        let base = read(root.path(), "ch03-three", "wire.rs");
        // Line 15 is inside the exercise's TODO region: the exercise cannot take it.
        write(root.path(), "ch03-three", "wire.rs", &base.replace("fn line_15() {}", "fn line_15() { better() }"));
        let report = carry(&request(root.path(), 3, "wire.rs", &base)).unwrap();
        assert_eq!(report.entries[0].path, "ch03-three/exercise.rs");
        assert!(matches!(report.entries[0].outcome, Outcome::Conflict(_)), "{report}");
        assert!(read(root.path(), "ch03-three", "exercise.rs").contains("// TODO: line 15"));
        assert_eq!(
            report.entries[1..].iter().map(|e| &e.outcome).collect::<Vec<_>>(),
            [&Outcome::Carried, &Outcome::Carried]
        );
        // A file that is not the piece leaves the exercise alone; a chapter without the
        // file is skipped and said so.
        write(root.path(), "ch04-four", "extra.rs", "fn extra() { fixed() }\n");
        let report = carry(&request(root.path(), 4, "extra.rs", "fn extra() {}\n")).unwrap();
        assert_eq!(outcomes(&report), [("ch05-five/extra.rs", &Outcome::Carried)]);
        write(root.path(), "ch04-four", "main.rs", "mod wire;\nmod extra;\n\nfn main() { go() }\n");
        let base = "mod wire;\nmod extra;\n\nfn main() {}\n";
        let report = carry(&request(root.path(), 4, "main.rs", base)).unwrap();
        assert_eq!(outcomes(&report), [("ch05-five/main.rs", &Outcome::Carried)]);
        assert_eq!(
            read(root.path(), "ch05-five", "main.rs"),
            "mod wire;\nmod extra;\nmod more;\n\nfn main() { go() }\n"
        );
        let base = read(root.path(), "ch04-four", "wire.rs");
        write(root.path(), "ch04-four", "wire.rs", &base.replace("fn line_18() {}", "fn line_18() { x() }"));
        let report = carry(&request(root.path(), 4, "wire.rs", &base)).unwrap();
        assert_eq!(outcomes(&report), [("ch05-five/wire.rs", &Outcome::Carried)]);
        let shown = carry(&request(root.path(), 4, "extra.rs", "fn extra() {}\n")).unwrap().to_string();
        assert!(shown.contains("unchanged"), "{shown}");
        std::fs::remove_file(root.path().join("chapters/ch05-five/extra.rs")).unwrap();
        write(root.path(), "ch05-five", "main.rs", "mod wire;\nmod more;\n\nfn main() {}\n");
        let report = carry(&request(root.path(), 4, "extra.rs", "fn extra() {}\n")).unwrap();
        assert_eq!(outcomes(&report), [("ch05-five/extra.rs", &Outcome::Absent)]);
        assert!(report.to_string().contains("ch05-five/extra.rs  skipped: the chapter has no such file"));
    }

    #[test]
    fn a_one_file_chapter_carries_to_the_split_only_where_the_lines_stayed() {
        let root = five_chapters();
        // Chapter 1's main.rs is also its exercise's copy, and chapter 2's.
        let base = read(root.path(), "ch01-one", "main.rs");
        write(root.path(), "ch01-one", "main.rs", &base.replace("fn line_3() {}", "fn line_3() { fixed() }"));
        let report = carry(&request(root.path(), 1, "main.rs", &base)).unwrap();
        let expected = [
            ("ch01-one/exercise.rs", &Outcome::Carried),
            ("ch02-two/main.rs", &Outcome::Carried),
            ("ch02-two/exercise.rs", &Outcome::Carried),
        ];
        assert_eq!(outcomes(&report)[..3], expected, "{report}");
        // Chapter 3 is a crate whose main.rs no longer holds those lines (they went to
        // wire.rs): its merge conflicts, and the carry stops there and says where to look.
        assert_eq!(report.entries[3].path, "ch03-three/main.rs");
        assert!(matches!(report.entries[3].outcome, Outcome::Conflict(_)), "{report}");
        assert_eq!(report.entries.len(), 4, "{report}");
        let stopped = report.stopped.as_deref().unwrap();
        assert!(stopped.starts_with("stopped at ch03-three: it splits the server into files"), "{stopped}");
        assert!(stopped.contains("the lines it touches are in chapter 3's wire.rs"), "{stopped}");
        // The conflict shown is the change to make, not the split.
        let Outcome::Conflict(shown) = &report.entries[3].outcome else { unreachable!() };
        assert_eq!(
            shown,
            "--- ch02-two/main.rs before the carry\n+++ ch02-two/main.rs carried\n@@ line 1 @@\n fn line_1() {}\n \
             fn line_2() {}\n-fn line_3() {}\n+fn line_3() { fixed() }\n fn line_4() {}\n fn line_5() {}\n"
        );
        assert!(stopped.contains("`cargo run -- carry 3 FILE`"), "{stopped}");
        assert!(!report.to_string().contains("left to do by hand"), "{report}");
        // Steps 2 and 3 are written again: chapter 3's step starts from chapter 2's file.
        let steps: Vec<&str> = report.steps.iter().map(|(path, _)| path.as_str()).collect();
        assert_eq!(steps, ["chapters/ch02-two/changes.diff", "chapters/ch03-three/changes.diff"]);
        // A change to lines that stayed in main.rs goes on across the split.
        let base = format!("{}fn two() {{}}\nfn after() {{}}\n", numbered(1..=12));
        let crate_main = read(root.path(), "ch03-three", "main.rs");
        write(root.path(), "ch02-two", "main.rs", &base.replace("fn two() {}", "fn two() { again() }"));
        write(
            root.path(),
            "ch03-three",
            "main.rs",
            &format!("{}fn two() {{}}\nfn after() {{}}\n{crate_main}", numbered(11..=12)),
        );
        let report = carry(&request(root.path(), 2, "main.rs", &base)).unwrap();
        assert_eq!(report.stopped, None, "{report}");
        assert_eq!(
            report.entries[1],
            Entry { path: "ch03-three/main.rs".into(), outcome: Outcome::Carried },
            "{report}"
        );
        assert!(read(root.path(), "ch03-three", "main.rs").contains("fn two() { again() }"));
    }

    #[test]
    fn a_dry_run_writes_nothing() {
        let root = five_chapters();
        let base = read(root.path(), "ch03-three", "wire.rs");
        write(root.path(), "ch03-three", "wire.rs", &base.replace("fn line_5() {}", "fn line_5() { fixed() }"));
        let before = read(root.path(), "ch04-four", "wire.rs");
        let report = carry(&Carry { write: false, ..request(root.path(), 3, "wire.rs", &base) }).unwrap();
        assert_eq!(report.entries[1].outcome, Outcome::Carried);
        assert_eq!(read(root.path(), "ch04-four", "wire.rs"), before);
        assert!(!root.path().join("chapters/ch04-four/changes.diff").exists());
        let shown = report.to_string();
        assert!(shown.contains("(dry run: nothing written)") && shown.contains("would be carried"), "{shown}");
        // Nothing changed, nothing to carry; a file outside the map is refused.
        write(root.path(), "ch03-three", "wire.rs", &base);
        assert!(carry(&request(root.path(), 3, "wire.rs", &base)).unwrap_err().contains("nothing to carry"));
        assert!(carry(&request(root.path(), 3, "nope.rs", &base)).unwrap_err().contains("has no nope.rs in its map"));
    }

    #[test]
    fn a_file_is_named_as_typed() {
        assert_eq!(file_name("jsonrpc.rs"), "jsonrpc.rs");
        assert_eq!(file_name("jsonrpc"), "jsonrpc.rs");
        assert_eq!(file_name("chapters/ch11-resources/jsonrpc.rs"), "jsonrpc.rs");
    }

    #[test]
    fn the_base_comes_from_git() {
        let root = five_chapters();
        let git = |args: &[&str]| {
            let status = Command::new("git")
                .arg("-C")
                .arg(root.path())
                .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"])
                .args(args)
                .output()
                .unwrap();
            assert!(status.status.success(), "{args:?}: {}", String::from_utf8_lossy(&status.stderr));
        };
        git(&["init", "-q"]);
        git(&["add", "."]);
        git(&["commit", "-q", "-m", "chapters"]);
        let chapter = &CHAPTERS[2];
        let committed = read(root.path(), "ch03-three", "wire.rs");
        write(root.path(), "ch03-three", "wire.rs", "changed\n");
        assert_eq!(base_at(root.path(), "HEAD", chapter, "wire.rs").unwrap(), committed);
        assert!(base_at(root.path(), "HEAD", chapter, "nope.rs").unwrap_err().contains("is not in HEAD"));
    }
}
