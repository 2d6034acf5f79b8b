//! Mutation testing of the exercises: would `check N` catch each plausible mistake in
//! the part a participant writes?
//!
//! `cargo run -- mutants 7` takes the lines of chapter 7's own file that fill the TODO
//! regions of its exercise ([`regions::solution_regions`]) and makes there, one at a
//! time, the small mistakes a participant could make ([`mutants`]):
//!
//! - a statement or a `match` arm left out: a guard skipped, a case forgotten;
//! - an `if` condition that always holds, that never holds (where there is an `else`),
//!   or that lost one of its `&&`/`||` parts;
//! - a comparison turned round or off by one (`!=` for `==`, `<=` for `<`), `||` for `&&`;
//! - a `!` left out.
//!
//! Each mutant is built in a copy of the workbook (`target/mutants/`, so the files you
//! work on are never touched) and checked as `check N --solution` checks the chapter. A
//! mutant the check fails is *killed*. One it passes *survived*: a mistake the chapter's
//! exchanges cannot see, to be shown by a new exchange, or moved out of the exercise, or
//! explained. One that does not compile is *unviable*: the compiler caught it.

use std::fs;
use std::ops::RangeInclusive;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use crate::chapters::{self, Chapter};
use crate::check;
use crate::regions;
use crate::transcript;

/// One mistake: the whole file with it made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mutant {
    /// The first line it changes (1-based).
    pub line: usize,
    /// What the mistake is, in a few words.
    pub what: String,
    /// The line it changes first, as written (without its indentation).
    pub on: String,
    /// The file's text with the mistake in it.
    pub text: String,
}

/// What became of a chapter's mutants.
#[derive(Debug, Default, Clone, Copy)]
pub struct Tally {
    pub killed: usize,
    /// Survivors no entry of the survivors' file explains.
    pub survived: usize,
    /// Survivors it explains.
    pub explained: usize,
    pub unviable: usize,
    /// Entries of the survivors' file for this chapter that no survivor matches any more.
    pub stale: usize,
}

/// Where the survivors that are meant to survive are explained.
pub const SURVIVORS_FILE: &str = "tests/mutants-survivors.txt";

/// A mutant that survives by design, and why: an entry of [`SURVIVORS_FILE`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Explained {
    pub chapter: String,
    /// The mutant's [`Mutant::what`] and [`Mutant::on`].
    pub what: String,
    pub on: String,
    pub because: String,
}

/// The entries of the workbook's own [`SURVIVORS_FILE`].
pub fn explained_in_workbook() -> Result<Vec<Explained>, String> {
    let path = chapters::workbook_root().join(SURVIVORS_FILE);
    let text = fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    explained(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// Read [`SURVIVORS_FILE`]'s entries: each a line `chapter: what`, then the indented lines
/// `on: <the line it changes>` and `because: <why no exchange can see it>`. Blank lines and
/// lines starting with `#` are left out.
pub fn explained(text: &str) -> Result<Vec<Explained>, String> {
    let mut entries: Vec<Explained> = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let number = index + 1;
        if line.trim().is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.starts_with(' ') {
            let (chapter, what) = line.split_once(": ").ok_or(format!("line {number}: not `chapter: what`"))?;
            let entry =
                Explained { chapter: chapter.into(), what: what.into(), on: String::new(), because: String::new() };
            entries.push(entry);
            continue;
        }
        let entry = entries.last_mut().ok_or(format!("line {number}: an indented line before any entry"))?;
        match line.trim().split_once(": ") {
            Some(("on", on)) => entry.on = on.to_string(),
            Some(("because", because)) => entry.because = because.to_string(),
            _ => return Err(format!("line {number}: neither `on: ` nor `because: `")),
        }
    }
    match entries.iter().find(|e| e.on.is_empty() || e.because.is_empty()) {
        Some(e) => Err(format!("the entry `{}: {}` needs both `on: ` and `because: `", e.chapter, e.what)),
        None => Ok(entries),
    }
}

/// Every mutant of `source` whose change lies inside one of `lines` (1-based line
/// ranges, as [`regions::solution_regions`] gives them), in the order of the file.
pub fn mutants(source: &str, lines: &[RangeInclusive<usize>]) -> Vec<Mutant> {
    let file = Code::new(source);
    let inside = |first: usize, last: usize| lines.iter().any(|r| r.contains(&first) && r.contains(&last));
    let mut found = Vec::new();
    for number in 1..=file.lines.len() {
        if !inside(number, number) {
            continue;
        }
        for (last, what) in file.statements_from(number).into_iter().chain(file.member_or_attribute_from(number)) {
            if inside(number, last) {
                found.push(file.without_lines(number, last, what));
            }
        }
        found.extend(file.conditions_on(number).into_iter().filter(|m| inside(m.line, m.line)));
        found.extend(file.operators_on(number));
    }
    // Two ways to the same text are one mutant.
    let mut seen = std::collections::HashSet::new();
    found.retain(|m| seen.insert(m.text.clone()));
    found
}

/// A Rust file, with a view of it in which comments, strings and character literals are
/// blanked out (same byte offsets), so that brackets and operators are read in code only.
struct Code<'a> {
    source: &'a str,
    view: String,
    /// Each line's byte range in `source` (and `view`), without its newline.
    lines: Vec<(usize, usize)>,
}

impl<'a> Code<'a> {
    fn new(source: &'a str) -> Code<'a> {
        let view = blank_non_code(source);
        let mut lines = Vec::new();
        let mut start = 0;
        for line in source.split_inclusive('\n') {
            lines.push((start, start + line.trim_end_matches('\n').len()));
            start += line.len();
        }
        Code { source, view, lines }
    }

    /// Line `number`'s code (1-based), comments and literals blanked.
    fn code(&self, number: usize) -> &str {
        let (start, end) = self.lines[number - 1];
        &self.view[start..end]
    }

    /// Line `number` as written.
    fn text(&self, number: usize) -> &str {
        let (start, end) = self.lines[number - 1];
        &self.source[start..end]
    }

    /// The nearest line before `number` with code on it.
    fn code_before(&self, number: usize) -> Option<usize> {
        (1..number).rev().find(|&n| !self.code(n).trim().is_empty())
    }

    /// The nearest line after `number` with code on it.
    fn code_after(&self, number: usize) -> Option<usize> {
        (number + 1..=self.lines.len()).find(|&n| !self.code(n).trim().is_empty())
    }

    /// The brackets still open at the start of line `number`, innermost last, each with
    /// the line it opened on.
    fn open_at(&self, number: usize) -> Vec<(u8, usize)> {
        let mut open = Vec::new();
        for n in 1..number {
            for byte in self.code(n).bytes() {
                match byte {
                    b'(' | b'[' | b'{' => open.push((byte, n)),
                    b')' | b']' | b'}' => {
                        open.pop();
                    }
                    _ => {}
                }
            }
        }
        open
    }

    /// Add line `number`'s brackets to `depth`: up for each one it opens, down for each
    /// one it closes. `false` as soon as `depth` goes below zero: the line closed a
    /// bracket opened before the count began.
    fn count_brackets(&self, number: usize, depth: &mut i32) -> bool {
        for byte in self.code(number).bytes() {
            match byte {
                b'(' | b'[' | b'{' => *depth += 1,
                b')' | b']' | b'}' => *depth -= 1,
                _ => {}
            }
            if *depth < 0 {
                return false;
            }
        }
        true
    }

    /// The statements (or `match` arms) that start on line `number`, as the line each
    /// ends on and what leaving it out means. A `let` is left alone (without it the
    /// code does not compile), and so is the value a block ends with.
    fn statements_from(&self, number: usize) -> Vec<(usize, String)> {
        let code = self.code(number).trim();
        let open = self.open_at(number);
        let Some(&(b'{', opened_on)) = open.last() else { return Vec::new() };
        let before = self.code_before(number).map(|n| self.code(n).trim_end()).unwrap_or("");
        let in_match = self.code(opened_on).contains("match ");
        let arm = in_match && before.ends_with([',', '{', '}']) && code.contains("=>");
        let statement = !in_match && before.ends_with([';', '{', '}']);
        if code.is_empty() || !(arm || statement) || code.starts_with("let ") || code.starts_with("_ =>") {
            return Vec::new();
        }
        // Where it ends: the first line after which every bracket it opened is closed
        // again, ending as a statement (or an arm) does.
        let mut depth = 0;
        for n in number..=self.lines.len() {
            if !self.count_brackets(n, &mut depth) {
                return Vec::new(); // the block it is in ended: it was the block's value
            }
            let end = self.code(n).trim_end();
            let next = self.code_after(n).map(|n| self.code(n).trim_start()).unwrap_or("");
            let continues = next.starts_with("else") || next.starts_with('.') || next.starts_with('?');
            if depth == 0 && !continues {
                let ends = if arm { end.ends_with([',', '}']) } else { end.ends_with(';') || end.ends_with('}') };
                // A statement without `;` followed by the block's `}` is the block's value.
                let is_value = !arm && !end.ends_with(';') && next.starts_with('}');
                if !ends || is_value {
                    return Vec::new();
                }
                let kind = if arm { "match arm" } else { "statement" };
                return vec![(n, format!("{kind} left out: `{}`", first_words(self.text(number))))];
            }
        }
        Vec::new()
    }

    /// A member of a `json!` object that starts on line `number`, or a `#[serde(...)]`
    /// attribute on it: the line it ends on and what leaving it out means. Either is
    /// what a client reads: a member missing from an answer, a field named or written
    /// otherwise.
    fn member_or_attribute_from(&self, number: usize) -> Option<(usize, String)> {
        let text = self.text(number).trim();
        if text.starts_with("#[serde(") && self.code(number).trim_end().ends_with(']') {
            return Some((number, format!("attribute left out: `{}`", first_words(text))));
        }
        let open = self.open_at(number);
        let in_json = open.iter().any(|&(_, line)| self.code(line).contains("json!("));
        let before = self.code_before(number).map(|n| self.code(n).trim_end()).unwrap_or("");
        if !in_json || !text.starts_with('"') || !text.contains("\":") || !before.ends_with([',', '{']) {
            return None;
        }
        let mut depth = 0;
        for n in number..=self.lines.len() {
            if !self.count_brackets(n, &mut depth) {
                return None; // a last member without a comma: leaving it out leaves one before
            }
            if depth == 0 && self.code(n).trim_end().ends_with(',') {
                let name = text.split("\":").next().unwrap_or(text);
                return Some((n, format!("member {name}\" left out of the JSON")));
            }
        }
        None
    }

    /// `source` without lines `first..=last`.
    fn without_lines(&self, first: usize, last: usize, what: String) -> Mutant {
        let (start, end) = (self.lines[first - 1].0, self.lines[last - 1].1);
        let end = (end + 1).min(self.source.len()); // and the last line's newline
        let (on, text) =
            (self.text(first).trim().to_string(), format!("{}{}", &self.source[..start], &self.source[end..]));
        Mutant { line: first, what, on, text }
    }

    /// `source` with the bytes `start..end` replaced by `with`.
    fn replaced(&self, start: usize, end: usize, with: &str, what: String) -> Mutant {
        let line = self.source[..start].matches('\n').count() + 1;
        let (on, text) =
            (self.text(line).trim().to_string(), format!("{}{with}{}", &self.source[..start], &self.source[end..]));
        Mutant { line, what, on, text }
    }

    /// The mutants of each `if` condition that starts on line `number`: always true, never
    /// true (when an `else` follows), and one `&&`/`||` part dropped.
    fn conditions_on(&self, number: usize) -> Vec<Mutant> {
        let (line_start, line_end) = self.lines[number - 1];
        let mut found = Vec::new();
        let mut search = line_start;
        while let Some(at) = self.view[search..line_end].find("if ").map(|i| search + i) {
            search = at + 3;
            let word_start = at == 0 || !is_word(self.view.as_bytes()[at - 1]);
            let Some((start, end, body)) = self.condition_after(at + 3).filter(|_| word_start) else { continue };
            let condition = &self.view[start..end];
            let parts = split_top_level(condition);
            let has_let = parts.iter().any(|(s, e)| condition[*s..*e].trim_start().starts_with("let "));
            let source_condition = &self.source[start..end];
            if !has_let {
                found.push(self.replaced(
                    start,
                    end,
                    "true",
                    format!("`if {}` always true", first_words(source_condition)),
                ));
                let after_body = self.block_end(body).map(|close| self.view[close + 1..].trim_start());
                if after_body.is_some_and(|rest| rest.starts_with("else")) {
                    found.push(self.replaced(
                        start,
                        end,
                        "false",
                        format!("`if {}` never true", first_words(source_condition)),
                    ));
                }
            }
            if parts.len() > 1 {
                for (index, (s, e)) in parts.iter().enumerate() {
                    // Without its `let`, the names it binds are unbound: that never compiles.
                    if condition[*s..*e].trim_start().starts_with("let ") {
                        continue;
                    }
                    let kept: Vec<&str> = parts
                        .iter()
                        .enumerate()
                        .filter(|(i, _)| *i != index)
                        .map(|(_, (s, e))| source_condition[*s..*e].trim())
                        .collect();
                    let joiner = if condition.contains("&&") { " && " } else { " || " };
                    let dropped = source_condition[*s..*e].trim();
                    found.push(self.replaced(
                        start,
                        end,
                        &kept.join(joiner),
                        format!("condition without `{}`", first_words(dropped)),
                    ));
                }
            }
        }
        found
    }

    /// The condition of an `if` whose keyword ends at byte `from`: its byte range, and
    /// where the `{` of its body (or the `=>` of a match guard) is.
    fn condition_after(&self, from: usize) -> Option<(usize, usize, usize)> {
        let bytes = self.view.as_bytes();
        let mut depth = 0i32;
        for i in from..bytes.len() {
            match bytes[i] {
                b'{' if depth == 0 => return Some((from, trim_end_at(self.source, from, i), i)),
                b'=' if depth == 0 && bytes.get(i + 1) == Some(&b'>') => {
                    return Some((from, trim_end_at(self.source, from, i), i));
                }
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => {
                    depth -= 1;
                    if depth < 0 {
                        return None;
                    }
                }
                b';' if depth == 0 => return None,
                _ => {}
            }
        }
        None
    }

    /// The byte of the `}` that closes the `{` at `open`.
    fn block_end(&self, open: usize) -> Option<usize> {
        let mut depth = 0i32;
        for (i, byte) in self.view.bytes().enumerate().skip(open) {
            match byte {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(i);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The mutants of the comparison and logical operators, and of each `!`, on line
    /// `number`.
    fn operators_on(&self, number: usize) -> Vec<Mutant> {
        const TURNS: &[(&str, &[&str])] = &[
            (" == ", &[" != "]),
            (" != ", &[" == "]),
            (" <= ", &[" < ", " > "]),
            (" >= ", &[" > ", " < "]),
            (" < ", &[" <= ", " >= "]),
            (" > ", &[" >= ", " <= "]),
            (" && ", &[" || "]),
            (" || ", &[" && "]),
        ];
        let (line_start, line_end) = self.lines[number - 1];
        let code = &self.view[line_start..line_end];
        let mut found = Vec::new();
        for (operator, turns) in TURNS {
            let found_here: Vec<usize> = code.match_indices(operator).map(|(at, _)| at).collect();
            for (nth, &at) in found_here.iter().enumerate() {
                // `||` opens a closure where no operand comes before it.
                let before = code[..at].trim_end();
                if *operator == " || " && (before.ends_with(['(', ',', '=', '|']) || before.ends_with("move")) {
                    continue;
                }
                for turn in *turns {
                    let start = line_start + at;
                    // Which one, when the line has more than one.
                    let which =
                        if found_here.len() > 1 { format!(" (the {})", ordinal(nth + 1)) } else { String::new() };
                    let what = format!("`{}` for `{}`{which}", turn.trim(), operator.trim());
                    found.push(self.replaced(start, start + operator.len(), turn, what));
                }
            }
        }
        let bytes = code.as_bytes();
        for (at, _) in code.match_indices('!') {
            let next = bytes.get(at + 1).copied();
            let previous = at.checked_sub(1).map(|i| bytes[i]);
            // Not `!=`, not a macro's `name!`, not `#!`.
            if next == Some(b'=') || previous.is_some_and(|b| is_word(b) || b == b'#') {
                continue;
            }
            let start = line_start + at;
            found.push(self.replaced(start, start + 1, "", "`!` left out".to_string()));
        }
        found
    }
}

/// The parts of `condition` joined by `&&` (or by `||`) outside any bracket, as byte
/// ranges; one part when it has neither, or both.
fn split_top_level(condition: &str) -> Vec<(usize, usize)> {
    let bytes = condition.as_bytes();
    let (mut depth, mut parts, mut start, mut operators) = (0i32, Vec::new(), 0, Vec::new());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => depth -= 1,
            b'&' | b'|' if depth == 0 && bytes.get(i + 1) == Some(&bytes[i]) => {
                // `||` right after another operator or an opening is a closure, not an or.
                let before = condition[..i].trim_end();
                if !(bytes[i] == b'|' && (before.is_empty() || before.ends_with(['(', ',', '=', '|', '&']))) {
                    parts.push((start, i));
                    operators.push(bytes[i]);
                    start = i + 2;
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    parts.push((start, bytes.len()));
    if operators.windows(2).any(|pair| pair[0] != pair[1]) {
        return vec![(0, bytes.len())];
    }
    parts
}

/// Where the text from `from` to `end` ends once trailing white space is left out.
fn trim_end_at(text: &str, from: usize, end: usize) -> usize {
    from + text[from..end].trim_end().len()
}

/// `1st`, `2nd`, `3rd`, `4th`, ...
fn ordinal(n: usize) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

fn is_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_'
}

/// The first few words of a piece of code, on one line, for a report.
fn first_words(code: &str) -> String {
    let words: Vec<&str> = code.split_whitespace().collect();
    let shown = words.iter().take(8).copied().collect::<Vec<_>>().join(" ");
    if words.len() > 8 { format!("{shown} …") } else { shown }
}

/// `source` with every byte of a comment, a string or a character literal (quotes
/// included) turned into a space, and the rest as it is.
fn blank_non_code(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut view = bytes.to_vec();
    let mut blank = |from: usize, to: usize| view[from..to.min(bytes.len())].fill(b' ');
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        let after_word = i > 0 && is_word(bytes[i - 1]);
        if rest.starts_with(b"//") {
            let end = rest.iter().position(|&b| b == b'\n').map_or(bytes.len(), |p| i + p);
            blank(i, end);
            i = end;
        } else if rest.starts_with(b"/*") {
            let end = source[i + 2..].find("*/").map_or(bytes.len(), |p| i + 2 + p + 2);
            blank(i, end);
            i = end;
        } else if !after_word && (rest.starts_with(b"r\"") || rest.starts_with(b"r#")) {
            let hashes = rest[1..].iter().take_while(|&&b| b == b'#').count();
            if rest.get(1 + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let body = i + 2 + hashes;
            let end = source[body..].find(&close).map_or(bytes.len(), |p| body + p + close.len());
            blank(i, end);
            i = end;
        } else if rest[0] == b'"' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != b'"' {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            blank(i, j + 1);
            i = j + 1;
        } else if rest[0] == b'\'' {
            // A character literal ('a', '\n', 'é'), or else a lifetime ('a).
            let end = if rest.get(1) == Some(&b'\\') {
                rest.iter().skip(2).position(|&b| b == b'\'').map(|p| i + 2 + p + 1)
            } else {
                source[i + 1..].chars().next().and_then(|c| {
                    let close = i + 1 + c.len_utf8();
                    (bytes.get(close) == Some(&b'\'')).then_some(close + 1)
                })
            };
            match end {
                Some(end) => {
                    blank(i, end);
                    i = end;
                }
                None => i += 1,
            }
        } else {
            i += 1;
        }
    }
    // Only ASCII bytes were kept as they were or turned into spaces, and whole
    // characters at that: still UTF-8.
    String::from_utf8(view).expect("blanking keeps UTF-8")
}

/// Run every mutant of `chapter`'s exercise regions (or, with `list_only`, only name
/// them), printing one line each and a summary. A survivor that an entry of `explained`
/// names is counted apart, with its reason.
pub fn run(chapter: &Chapter, explained: &[Explained], list_only: bool) -> Result<Tally, String> {
    let read = |path: &Path| fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()));
    let counterpart = chapter.exercise_counterpart();
    let solution = read(&counterpart)?;
    let lines = regions::solution_regions(&read(&chapter.exercise_path())?, &solution)
        .map_err(|e| format!("{}: {e}", chapter.name))?;
    let mutants = mutants(&solution, &lines);
    let file = counterpart.file_name().map(|f| f.to_string_lossy().to_string()).unwrap_or_default();
    println!("{}: {} mutants in {file}, lines {}", chapter.name, mutants.len(), ranges(&lines));
    if list_only {
        for mutant in &mutants {
            println!("  {file}:{:<5} {}", mutant.line, mutant.what);
        }
        return Ok(Tally::default());
    }

    let transcript = transcript::parse(&read(&chapter.transcript_path())?).map_err(|e| e.to_string())?;
    let copy = WorkbookCopy::make()?;
    let relative = counterpart.strip_prefix(chapters::workbook_root()).map_err(|e| e.to_string())?;
    let in_copy = copy.tree.join(relative);
    let check = |text: &str| -> Result<Option<Vec<String>>, String> {
        fs::write(&in_copy, text).map_err(|e| format!("cannot write {}: {e}", in_copy.display()))?;
        let Some(program) = copy.build(chapter)? else { return Ok(None) };
        let results = check::run_binary(&transcript, &program)?;
        let failed = results.iter().filter(|r| !r.passed()).map(|r| r.title().to_string()).collect();
        Ok(Some(failed))
    };
    match check(&solution)? {
        Some(failed) if failed.is_empty() => {}
        Some(failed) => {
            return Err(format!("the chapter itself fails its check ({}): fix that first", failed.join("; ")));
        }
        None => return Err(format!("{} does not build in {}", chapter.name, copy.tree.display())),
    }

    let mut tally = Tally::default();
    let mut survivors: Vec<&Mutant> = Vec::new();
    for mutant in &mutants {
        let started = Instant::now();
        let outcome = check(&mutant.text);
        let seconds = started.elapsed().as_secs_f32();
        let verdict = match outcome? {
            None => {
                tally.unviable += 1;
                "unviable".to_string()
            }
            Some(failed) if failed.is_empty() => {
                survivors.push(mutant);
                let reason =
                    explained.iter().find(|e| e.chapter == chapter.name && e.what == mutant.what && e.on == mutant.on);
                match reason {
                    Some(reason) => {
                        tally.explained += 1;
                        format!("survived, as explained: {}", reason.because)
                    }
                    None => {
                        tally.survived += 1;
                        "SURVIVED".to_string()
                    }
                }
            }
            Some(failed) => {
                tally.killed += 1;
                format!(
                    "killed by \"{}\"{}",
                    failed[0],
                    if failed.len() > 1 { format!(" and {} more", failed.len() - 1) } else { String::new() }
                )
            }
        };
        println!("  {file}:{:<5} {:<60} {verdict} ({seconds:.0} s)", mutant.line, mutant.what);
    }
    fs::write(&in_copy, &solution).map_err(|e| e.to_string())?;
    // A survivor unexplained: an exchange to add, or an entry to write (this one, with its reason).
    let unexplained: Vec<&&Mutant> = survivors
        .iter()
        .filter(|m| !explained.iter().any(|e| e.chapter == chapter.name && e.what == m.what && e.on == m.on))
        .collect();
    if !unexplained.is_empty() {
        println!("  Each survivor above is a mistake no exchange shows: add one, or explain it in {SURVIVORS_FILE}:");
        for mutant in unexplained {
            println!("    {}: {}\n        on: {}\n        because: ...", chapter.name, mutant.what, mutant.on);
        }
    }
    // An explanation whose mutant is gone (killed now, or the code changed) is one to delete.
    for entry in explained.iter().filter(|e| e.chapter == chapter.name) {
        if !survivors.iter().any(|m| m.what == entry.what && m.on == entry.on) {
            tally.stale += 1;
            println!("  {SURVIVORS_FILE} explains a mutant that does not survive: `{}` on `{}`", entry.what, entry.on);
        }
    }
    println!(
        "{}: {} killed, {} survived ({} of them explained), {} unviable (of {}){}",
        chapter.name,
        tally.killed,
        tally.survived + tally.explained,
        tally.explained,
        tally.unviable,
        mutants.len(),
        if tally.stale > 0 { format!("; {} explanations stale", tally.stale) } else { String::new() }
    );
    Ok(tally)
}

/// `1-3, 7`: line ranges for a report (empty ones left out).
fn ranges(lines: &[RangeInclusive<usize>]) -> String {
    let shown: Vec<String> = lines
        .iter()
        .filter(|r| !r.is_empty())
        .map(|r| if r.start() == r.end() { r.start().to_string() } else { format!("{}-{}", r.start(), r.end()) })
        .collect();
    shown.join(", ")
}

/// A copy of the workbook's files (those git tracks, and new ones it does not ignore) in
/// `target/mutants/tree`, built into `target/mutants/target`; a file already there as it
/// is here is left alone, so that a second run rebuilds only what changed.
struct WorkbookCopy {
    tree: PathBuf,
    target: PathBuf,
}

impl WorkbookCopy {
    fn make() -> Result<WorkbookCopy, String> {
        let root = chapters::workbook_root();
        let base = root.join("target").join("mutants");
        let copy = WorkbookCopy { tree: base.join("tree"), target: base.join("target") };
        let listed = Command::new("git")
            .args(["ls-files", "-z", "--cached", "--others", "--exclude-standard"])
            .current_dir(root)
            .output()
            .map_err(|e| format!("cannot run git: {e}"))?;
        if !listed.status.success() {
            return Err(format!("git ls-files failed: {}", String::from_utf8_lossy(&listed.stderr)));
        }
        for name in listed.stdout.split(|&b| b == 0).filter(|name| !name.is_empty()) {
            let name = String::from_utf8_lossy(name);
            let (from, to) = (root.join(name.as_ref()), copy.tree.join(name.as_ref()));
            if !from.is_file() {
                continue; // deleted in the working tree
            }
            // A file copied again would look changed to cargo, and rebuild what it need not.
            let bytes = fs::read(&from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
            if fs::read(&to).is_ok_and(|held| held == bytes) {
                continue;
            }
            fs::create_dir_all(to.parent().expect("a file has a folder")).map_err(|e| e.to_string())?;
            fs::write(&to, bytes).map_err(|e| format!("cannot write {}: {e}", to.display()))?;
        }
        Ok(copy)
    }

    /// Build `chapter`'s server in the copy: its path, or `None` when it does not compile.
    fn build(&self, chapter: &Chapter) -> Result<Option<PathBuf>, String> {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "--bin", chapter.name])
            .args(chapter.cargo_features())
            .env("CARGO_TARGET_DIR", &self.target)
            .current_dir(&self.tree)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .map_err(|e| format!("cannot run cargo: {e}"))?;
        let program = self.target.join("debug").join(format!("{}{}", chapter.name, std::env::consts::EXE_SUFFIX));
        Ok(status.success().then_some(program))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn whats(source: &str, lines: RangeInclusive<usize>) -> Vec<String> {
        mutants(source, &[lines]).into_iter().map(|m| format!("{}: {}", m.line, m.what)).collect()
    }

    #[test]
    fn comments_strings_and_characters_are_not_code() {
        let source = "let a = \"x == y\"; // b && c\nlet c = '{'; let d: &'static str = r#\"!\"#;\n";
        let view = blank_non_code(source);
        assert!(!view.contains("==") && !view.contains("&&") && !view.contains('{') && !view.contains('!'));
        assert!(view.contains("&'static str"), "a lifetime is code: {view}");
        assert_eq!(view.len(), source.len());
    }

    #[test]
    fn a_guard_is_left_out_forced_and_turned_round() {
        let source = "fn f(a: u8, b: bool) -> u8 {\n    if a > 3 && !b {\n        return 0;\n    }\n    a\n}\n";
        assert_eq!(
            whats(source, 2..=4),
            [
                "2: statement left out: `if a > 3 && !b {`",
                "2: `if a > 3 && !b` always true",
                "2: condition without `a > 3`",
                "2: condition without `!b`",
                "2: `>=` for `>`",
                "2: `<=` for `>`",
                "2: `||` for `&&`",
                "2: `!` left out",
                "3: statement left out: `return 0;`",
            ]
        );
        // The block's value is not a statement to leave out, and nothing outside the
        // lines given is touched.
        assert_eq!(whats(source, 5..=5), Vec::<String>::new());
        let without_guard = &mutants(source, &[2..=4])[0].text;
        assert_eq!(without_guard, "fn f(a: u8, b: bool) -> u8 {\n    a\n}\n");
    }

    #[test]
    fn an_arm_is_left_out_but_not_the_catch_all_and_an_else_can_be_never() {
        let source = "fn f(x: Option<u8>) -> u8 {\n    match x {\n        Some(0) => 1,\n        Some(n) if n < 9 => {\n            n\n        }\n        _ => 0,\n    }\n}\nfn g(c: bool) -> u8 {\n    if c { 1 } else { 2 }\n}\n";
        let found = whats(source, 3..=7);
        assert!(found.contains(&"3: match arm left out: `Some(0) => 1,`".to_string()), "{found:?}");
        assert!(found.contains(&"4: match arm left out: `Some(n) if n < 9 => {`".to_string()), "{found:?}");
        assert!(found.contains(&"4: `if n < 9` always true".to_string()), "{found:?}");
        assert!(!found.iter().any(|w| w.contains("_ =>")), "{found:?}");
        let found = whats(source, 11..=11);
        assert!(found.contains(&"11: `if c` never true".to_string()), "{found:?}");
        assert!(!found.iter().any(|w| w.contains("left out")), "the block's value: {found:?}");
    }

    #[test]
    fn a_json_member_and_a_serde_attribute_are_left_out() {
        let source = "#[derive(Serialize)]\n#[serde(rename_all = \"camelCase\")]\nstruct A;\nfn f() -> Value {\n    json!({\n        \"a\": 1,\n        \"b\": {\n            \"c\": [1, 2],\n        },\n        \"d\": 2\n    })\n}\n";
        assert_eq!(
            whats(source, 1..=11),
            [
                "2: attribute left out: `#[serde(rename_all = \"camelCase\")]`",
                "6: member \"a\" left out of the JSON",
                "7: member \"b\" left out of the JSON",
                "8: member \"c\" left out of the JSON",
            ]
        );
        let without_b = &mutants(source, &[7..=9])[0].text;
        assert!(without_b.contains("\"a\": 1,\n        \"d\": 2"), "{without_b}");
    }

    #[test]
    fn a_condition_may_end_in_a_string_and_repeat_an_operator() {
        let source =
            "fn f(t: &str) -> bool {\n    if t != \"a\" && t != \"b\" {\n        return false;\n    }\n    true\n}\n";
        let found = whats(source, 2..=4);
        assert!(found.contains(&"2: `if t != \"a\" && t != \"b\"` always true".to_string()), "{found:?}");
        assert!(found.contains(&"2: condition without `t != \"b\"`".to_string()), "{found:?}");
        assert!(found.contains(&"2: `==` for `!=` (the 2nd)".to_string()), "{found:?}");
    }

    #[test]
    fn the_survivors_file_says_what_where_and_why() {
        let text = "# comment\n\nch01-envelope: `!` left out\n    on: if !x {\n    because: no tool shows it\n";
        let entry = Explained {
            chapter: "ch01-envelope".into(),
            what: "`!` left out".into(),
            on: "if !x {".into(),
            because: "no tool shows it".into(),
        };
        assert_eq!(explained(text), Ok(vec![entry]));
        assert!(explained("ch01-envelope: `!` left out\n    on: if !x {\n").is_err(), "no reason given");
        assert!(explained("    on: x\n").is_err());
        assert!(explained("no colon here\n").is_err());
    }

    #[test]
    fn a_closure_is_not_an_or_and_a_macro_is_not_a_not() {
        let source = "fn f(v: &[u8]) -> bool {\n    v.iter().any(|b| *b > 1) || v.is_empty() && check!(v) != None.map(|| 1)\n}\n";
        let found = whats(source, 2..=2);
        assert!(found.contains(&"2: `&&` for `||`".to_string()), "{found:?}");
        assert_eq!(found.iter().filter(|w| w.contains("for `||`")).count(), 1, "{found:?}");
        assert!(!found.iter().any(|w| w.contains("`!` left out")), "{found:?}");
    }
}
