//! The author check of the learner's check: deliberately wrong solutions, each of which
//! `cargo run -- check N` must fail, and a few valid variants it must pass.
//!
//! They live in `tests/wrong_solutions/chNN-*.md`, one file per chapter, one `###`
//! section per solution: a sentence on the mistake, the exchanges that must catch it
//! (`fails: <exchange title>`, one line each; `passes` for a valid variant), and the
//! mistake itself as a small patch of the chapter's server, in a `diff` block (lines
//! starting with ` `, `-`, `+`; hunks apart with `@@`). A hunk's old lines are found in
//! the chapter's source files (`main.rs`, and from chapter 11 the files it declares) by
//! their text, spaces at either end aside, and must be found exactly once among them;
//! a blank line in the block is a blank context line. So a patch keeps applying while
//! the code moves around it, and fails loudly when the lines it changes are gone.
//!
//! **Why this design: one binary per chapter.** Building a binary per wrong solution
//! would be dozens of links on a two-core machine. Instead each chapter gets one
//! binary: its `main.rs` with every function that some patch changes turned into a
//! `match` on which solution is running, the chapter's own body as the fallback. The
//! binary takes `--wrong-solution=NAME` (taken out of the arguments before the
//! chapter's own parser sees them), so the check, which starts the server with the
//! transcript's flags, starts the wrong solution by adding one flag. A patch that
//! changes anything outside a function body (an attribute, a constant) cannot be
//! switched at run time: it gets a binary of its own, which is why patches rarely do.
//!
//! The binaries are built by cargo, once, in a scratch package inside the target folder
//! (`target/wrong-solutions`), with the workbook's `Cargo.lock`, in the target folder
//! the tests' scratch crates share (`common::build_in_scratch_target`: the workbook's
//! own is locked by the `cargo test` running this): the dependencies are those the
//! starters' copies compiled there already, and later runs rebuild only the chapters
//! whose sources changed. Each chapter's binary also runs with no wrong solution chosen, and must
//! pass its chapter's check: the rewriting changes nothing else.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use mcp_workbook::chapters::{self, CHAPTERS, Chapter};
use mcp_workbook::check::{self, Checked, Target};
use mcp_workbook::transcript::{self, Transcript};

#[macro_use]
mod common;

/// The flag that chooses a wrong solution in a chapter's binary.
const FLAG: &str = "--wrong-solution=";

/// One solution from a chapter's file.
#[derive(Debug, Clone)]
struct Solution {
    name: String,
    /// Where its `###` heading is, to point at it.
    line: usize,
    /// The exchanges that must fail; empty for a valid variant.
    fails: Vec<String>,
    /// A valid variant: every exchange must pass.
    passes: bool,
    hunks: Vec<Vec<String>>,
}

fn solutions_path(chapter: &Chapter) -> PathBuf {
    chapters::workbook_root().join("tests/wrong_solutions").join(format!("{}.md", chapter.name))
}

fn parse_solutions(text: &str) -> Result<Vec<Solution>, String> {
    let mut solutions: Vec<Solution> = Vec::new();
    let mut lines = text.lines().enumerate();
    while let Some((index, line)) = lines.next() {
        let at = || format!("line {}", index + 1);
        if let Some(name) = line.strip_prefix("### ") {
            let name = name.trim().trim_matches('`').to_string();
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
                return Err(format!("{}: a name is letters, digits and dashes: {name:?}", at()));
            }
            if solutions.iter().any(|s| s.name == name) {
                return Err(format!("{}: a second solution named {name}", at()));
            }
            solutions.push(Solution { name, line: index + 1, fails: vec![], passes: false, hunks: vec![] });
            continue;
        }
        let Some(solution) = solutions.last_mut() else { continue };
        if let Some(title) = line.strip_prefix("fails: ") {
            solution.fails.push(title.trim().to_string());
        } else if line.trim() == "passes" {
            solution.passes = true;
        } else if line.trim() == "```diff" {
            let mut hunk = Vec::new();
            loop {
                let Some((_, line)) = lines.next() else { return Err(format!("{}: a diff block never closed", at())) };
                if line.trim_end() == "```" {
                    break;
                }
                if line.starts_with("@@") {
                    solution.hunks.extend((!hunk.is_empty()).then(|| std::mem::take(&mut hunk)));
                } else if line.is_empty() || line.starts_with([' ', '-', '+']) {
                    hunk.push(line.to_string());
                } else {
                    return Err(format!("{}: a diff line starts with ' ', '-', '+' or '@@': {line:?}", at()));
                }
            }
            solution.hunks.extend((!hunk.is_empty()).then_some(hunk));
        }
    }
    for solution in &solutions {
        let problem = match (solution.passes, solution.fails.is_empty(), solution.hunks.is_empty()) {
            (_, _, true) => "has no diff block",
            (true, false, _) => "both passes and fails",
            (false, true, _) => "says neither which exchanges fail (`fails: TITLE`) nor `passes`",
            _ => continue,
        };
        return Err(format!("line {}: {} {problem}", solution.line, solution.name));
    }
    Ok(solutions)
}

/// One source file of a chapter: its path in the chapter's folder, and its text.
type Source = (String, String);

/// The chapter's source files, as `Chapter::source_files` names them.
fn sources_of(chapter: &Chapter) -> Result<Vec<Source>, String> {
    let files = chapter.source_files().map_err(|e| format!("{}: {e}", chapter.name))?;
    files
        .into_iter()
        .map(|file| {
            let path = chapter.folder().join(&file);
            std::fs::read_to_string(&path).map(|text| (file, text)).map_err(|e| format!("{}: {e}", path.display()))
        })
        .collect()
}

/// `sources` with `hunks` applied, each to the one file that holds its old lines, or
/// why they do not apply.
fn apply(sources: &[Source], hunks: &[Vec<String>]) -> Result<Vec<Source>, String> {
    let mut files: Vec<(String, Vec<String>)> =
        sources.iter().map(|(file, text)| (file.clone(), text.lines().map(str::to_string).collect())).collect();
    for hunk in hunks {
        // The lines the hunk expects (context and removed), and what it puts instead.
        let old: Vec<&str> = hunk.iter().filter(|l| !l.starts_with('+')).map(|l| l.get(1..).unwrap_or("")).collect();
        let starts: Vec<(usize, usize)> = files
            .iter()
            .enumerate()
            .flat_map(|(index, (_, lines))| {
                (0..=lines.len().saturating_sub(old.len()))
                    .filter(|&at| old.iter().enumerate().all(|(i, want)| lines[at + i].trim() == want.trim()))
                    .map(move |at| (index, at))
            })
            .collect();
        let [(index, at)] = starts[..] else {
            let names: Vec<&str> = files.iter().map(|(file, _)| file.as_str()).collect();
            return Err(format!(
                "a hunk's old lines are found {} times in {}, not once:\n{}",
                starts.len(),
                names.join(", "),
                old.join("\n")
            ));
        };
        let lines = &mut files[index].1;
        let mut new = Vec::new();
        let mut kept = at;
        for line in hunk {
            match line.chars().next() {
                Some('+') => new.push(line[1..].to_string()),
                Some('-') => kept += 1,
                _ => {
                    new.push(lines[kept].clone());
                    kept += 1;
                }
            }
        }
        lines.splice(at..at + old.len(), new);
    }
    Ok(files.into_iter().map(|(file, lines)| (file, lines.join("\n") + "\n")).collect())
}

/// Which bytes of Rust source are code: not in a comment, a string or a character.
fn code_mask(source: &str) -> Vec<bool> {
    let bytes = source.as_bytes();
    let mut code = vec![true; bytes.len()];
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < bytes.len() {
        let start = i;
        let rest = &bytes[i..];
        let after_ident = i > 0 && is_ident(bytes[i - 1]);
        if rest.starts_with(b"//") {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if rest.starts_with(b"/*") {
            let mut depth = 0;
            while i < bytes.len() {
                if bytes[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if bytes[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if !after_ident && (rest.starts_with(b"r#") || rest.starts_with(b"r\"") || rest.starts_with(b"br")) {
            // A raw string: r"...", r#"..."#, br#"..."#.
            let prefix = if rest[0] == b'b' { 2 } else { 1 };
            let hashes = rest[prefix..].iter().take_while(|&&b| b == b'#').count();
            if rest.get(prefix + hashes) != Some(&b'"') {
                i += 1;
                continue;
            }
            let close: Vec<u8> = std::iter::once(b'"').chain(std::iter::repeat_n(b'#', hashes)).collect();
            i += prefix + hashes + 1;
            while i < bytes.len() && !bytes[i..].starts_with(&close) {
                i += 1;
            }
            i += close.len();
        } else if rest[0] == b'"' {
            i += 1;
            while i < bytes.len() && bytes[i] != b'"' {
                i += if bytes[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else if rest[0] == b'\'' {
            // A character ('x', '\n', '\u{7f}') or a lifetime ('a, 'static).
            let char_len = source[i + 1..].chars().next().map_or(1, char::len_utf8);
            if rest.get(1) == Some(&b'\\') {
                i += 2;
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            } else if rest.get(1 + char_len) == Some(&b'\'') {
                i += 2 + char_len;
            } else {
                i += 1;
                continue;
            }
        } else {
            i += 1;
            continue;
        }
        let end = i.min(bytes.len());
        code[start..end].iter_mut().for_each(|c| *c = false);
        i = end;
    }
    code
}

/// A function item: its name, and the byte range of its body, braces included.
#[derive(Debug, Clone, PartialEq)]
struct Function {
    name: String,
    body: std::ops::Range<usize>,
}

/// The functions of `source` that are not inside another function, in order.
fn functions(source: &str) -> Vec<Function> {
    let (bytes, code) = (source.as_bytes(), code_mask(source));
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut found: Vec<Function> = Vec::new();
    let mut i = 0;
    while i + 2 < bytes.len() {
        let keyword = code[i]
            && bytes[i..].starts_with(b"fn")
            && (i == 0 || !is_ident(bytes[i - 1]))
            && bytes[i + 2].is_ascii_whitespace();
        if !keyword {
            i += 1;
            continue;
        }
        let name_start = i + 2 + bytes[i + 2..].iter().take_while(|b| b.is_ascii_whitespace()).count();
        let name_end = name_start + bytes[name_start..].iter().take_while(|&&b| is_ident(b)).count();
        // The body is the first `{` outside parentheses and brackets; a `;` first means none.
        let (mut j, mut depth) = (name_end, 0i32);
        let open = loop {
            match (code.get(j), bytes.get(j)) {
                (None, _) => break None,
                (Some(true), Some(b'(' | b'[')) => depth += 1,
                (Some(true), Some(b')' | b']')) => depth -= 1,
                (Some(true), Some(b'{')) if depth == 0 => break Some(j),
                (Some(true), Some(b';')) if depth == 0 => break None,
                _ => {}
            }
            j += 1;
        };
        let Some(open) = open else {
            i = j;
            continue;
        };
        let mut depth = 0;
        let mut close = open;
        for (k, &b) in bytes.iter().enumerate().skip(open) {
            if !code[k] {
                continue;
            }
            match b {
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        close = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        found.push(Function { name: source[name_start..name_end].to_string(), body: open..close + 1 });
        i = close + 1;
    }
    found
}

/// `source` with every function body left out: what a run-time switch cannot change.
fn skeleton(source: &str, functions: &[Function]) -> String {
    let mut rest = 0;
    let mut text = String::new();
    for function in functions {
        text.push_str(&source[rest..function.body.start]);
        text.push_str("{}");
        rest = function.body.end;
    }
    text.push_str(&source[rest..]);
    text
}

/// What one chapter's solutions compile to: the chapter's binary with its switches,
/// and the sources of the solutions that need a binary of their own (by name).
struct Generated {
    switched: Vec<Source>,
    own_binaries: Vec<(String, Vec<Source>)>,
}

/// The module every switched binary gets: which solution runs.
const SWITCH: &str = r#"
/// Which wrong solution this binary runs (`--wrong-solution=NAME`), added by
/// tests/wrong_solutions.rs; none, and it is the chapter's own server.
mod wrong_solution {
    static CHOSEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

    /// The command line without the flag, which is remembered.
    pub fn args() -> Vec<String> {
        let (flag, rest): (Vec<String>, Vec<String>) =
            std::env::args().partition(|arg| arg.starts_with("--wrong-solution="));
        let chosen = flag.last().map(|f| f["--wrong-solution=".len()..].to_string()).unwrap_or_default();
        CHOSEN.set(chosen).expect("args() runs once");
        rest
    }

    pub fn chosen() -> &'static str {
        CHOSEN.get().map_or("", String::as_str)
    }
}
"#;

fn generate(chapter: &Chapter, solutions: &[Solution]) -> Result<Generated, String> {
    let sources = sources_of(chapter)?;
    let originals: Vec<Vec<Function>> = sources.iter().map(|(_, text)| functions(text)).collect();
    let shapes: Vec<String> = sources.iter().zip(&originals).map(|((_, text), f)| skeleton(text, f)).collect();
    // For each function (file, index), the bodies the solutions give it that differ from its own.
    let mut bodies: BTreeMap<(usize, usize), Vec<(&Solution, String)>> = BTreeMap::new();
    let mut own_binaries: Vec<(String, Vec<Source>)> = Vec::new();
    for solution in solutions {
        let where_ = || format!("{} line {}, {}", solutions_path(chapter).display(), solution.line, solution.name);
        let patched = apply(&sources, &solution.hunks).map_err(|e| format!("{}: {e}", where_()))?;
        let changed: Vec<Vec<Function>> = patched.iter().map(|(_, text)| functions(text)).collect();
        let same_shape =
            patched.iter().zip(&changed).zip(originals.iter().zip(&shapes)).all(|(((_, text), new), (old, shape))| {
                new.len() == old.len()
                    && new.iter().zip(old).all(|(a, b)| a.name == b.name)
                    && skeleton(text, new) == *shape
            });
        if !same_shape {
            let allowed = patched.into_iter().map(|(file, text)| (file, format!("#![allow(warnings)]\n{text}")));
            own_binaries.push((format!("{}--{}", chapter.name, solution.name), allowed.collect()));
            continue;
        }
        let mut differs = false;
        for (file, ((_, text), new)) in patched.iter().zip(&changed).enumerate() {
            for (index, (new, old)) in new.iter().zip(&originals[file]).enumerate() {
                let body = &text[new.body.clone()];
                if body != &sources[file].1[old.body.clone()] {
                    bodies.entry((file, index)).or_default().push((solution, body.to_string()));
                    differs = true;
                }
            }
        }
        if !differs {
            return Err(format!("{}: the patch changes nothing", where_()));
        }
    }
    // Rebuild each file from its end, so that byte ranges stay true.
    let mut switched = sources.clone();
    for ((file, index), variants) in bodies.iter().rev() {
        let original = &sources[*file].1;
        let body = originals[*file][*index].body.clone();
        let mut arms = String::from("{\n    match crate::wrong_solution::chosen() {\n");
        for (solution, variant) in variants {
            arms.push_str(&format!("        // {}\n        {:?} => {variant}\n", solution.name, solution.name));
        }
        arms.push_str(&format!("        _ => {}\n    }}\n}}", &original[body.clone()]));
        switched[*file].1.replace_range(body, &arms);
    }
    // A patch may use any item of the chapter's other files, as a learner's edit could
    // once it adds the import: every file of a chapter of several sees them all.
    if switched.len() > 1 {
        let see_the_others = |files: &mut Vec<Source>| {
            let modules: Vec<String> =
                files.iter().map(|(file, _)| file.trim_end_matches(".rs").replace("main", "crate")).collect();
            for (file, source) in files.iter_mut() {
                let own = file.trim_end_matches(".rs").replace("main", "crate");
                for module in modules.iter().filter(|module| **module != own) {
                    let path = if module == "crate" { "crate".to_string() } else { format!("crate::{module}") };
                    source.push_str(&format!("#[allow(unused_imports)]\nuse {path}::*;\n"));
                }
            }
        };
        see_the_others(&mut switched);
        own_binaries.iter_mut().for_each(|(_, files)| see_the_others(files));
    }
    let main = &mut switched[0].1;
    if main.matches("Args::parse()").count() != 1 {
        return Err(format!("{}: main.rs must call `Args::parse()` once", chapter.name));
    }
    *main = format!(
        "#![allow(warnings)]\n{}\n{SWITCH}",
        main.replace("Args::parse()", "Args::parse_from(crate::wrong_solution::args())")
    );
    Ok(Generated { switched, own_binaries })
}

/// A chapter's solutions; none when it has no file (`every_chapter_has_wrong_solutions` says so).
fn load_solutions(chapter: &Chapter) -> Vec<Solution> {
    let path = solutions_path(chapter);
    let Ok(text) = std::fs::read_to_string(&path) else { return Vec::new() };
    parse_solutions(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Where the scratch package lives: beside `debug` in the workbook's target folder.
fn scratch() -> PathBuf {
    common::workbook_target().join("wrong-solutions")
}

/// Write `text` to `path` unless it holds it already, so cargo rebuilds only what changed.
fn write_if_changed(path: &Path, text: &str) {
    if std::fs::read_to_string(path).ok().as_deref() != Some(text) {
        std::fs::write(path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}

/// Generate every chapter's sources into the scratch package and build them: the
/// binaries' folder, or what went wrong. Runs once per test process.
fn build_all() -> &'static Result<PathBuf, String> {
    static BUILT: OnceLock<Result<PathBuf, String>> = OnceLock::new();
    BUILT.get_or_init(|| {
        let root = chapters::workbook_root();
        let dir = scratch();
        std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
        let manifest = std::fs::read_to_string(root.join("Cargo.toml")).map_err(|e| e.to_string())?;
        // The workbook's own [dependencies], so that the lock file fits, and its
        // [features], which make chapter 18's crates optional there too.
        let section = |name: &str| {
            manifest
                .split(&format!("\n[{name}]\n"))
                .nth(1)
                .and_then(|rest| rest.split("\n[").next())
                .map(str::to_string)
                .ok_or(format!("no [{name}] in Cargo.toml"))
        };
        let (dependencies, features) = (section("dependencies")?, section("features")?);
        // Each binary is a folder: its main.rs, and the files main.rs declares. Only the
        // chapters this build has: the others' crates may not even be downloaded.
        let mut bins = String::new();
        let mut needed: Vec<&str> = Vec::new();
        for chapter in CHAPTERS.iter().filter(|chapter| chapter.in_this_build()) {
            for feature in chapter.features {
                if !needed.contains(feature) {
                    needed.push(feature);
                }
            }
            let generated = generate(chapter, &load_solutions(chapter))?;
            let mut binaries = vec![(chapter.name.to_string(), generated.switched)];
            binaries.extend(generated.own_binaries);
            for (name, sources) in binaries {
                std::fs::create_dir_all(dir.join(&name)).map_err(|e| e.to_string())?;
                for (file, source) in sources {
                    write_if_changed(&dir.join(&name).join(file), &source);
                }
                bins.push_str(&format!("\n[[bin]]\nname = {name:?}\npath = \"{name}/main.rs\"\n"));
            }
        }
        let cargo_toml = format!(
            "# Written by tests/wrong_solutions.rs: the chapters with their wrong solutions.\n\
             [package]\nname = \"wrong-solutions\"\nversion = \"0.0.0\"\nedition = \"2024\"\npublish = false\n\
             autobins = false\n\n[workspace]\n\n[dependencies]\nmcp-workbook = {{ path = {:?} }}\n{dependencies}\n\
             [features]\n{features}\n{bins}",
            root.display().to_string()
        );
        write_if_changed(&dir.join("Cargo.toml"), &cargo_toml);
        // The workbook's lock file, so that the versions are the ones the workbook built
        // (and `--offline` finds them); copied again when the workbook's changes.
        let lock = std::fs::read_to_string(root.join("Cargo.lock")).map_err(|e| e.to_string())?;
        if std::fs::read_to_string(dir.join("workbook.lock")).ok().as_deref() != Some(lock.as_str()) {
            std::fs::write(dir.join("Cargo.lock"), &lock).map_err(|e| e.to_string())?;
            std::fs::write(dir.join("workbook.lock"), &lock).map_err(|e| e.to_string())?;
        }
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let mut build = Command::new(cargo);
        build
            .args(["build", "--offline", "--quiet", "--bins"])
            .args(if needed.is_empty() { Vec::new() } else { vec!["--features".to_string(), needed.join(",")] })
            .current_dir(&dir);
        let binaries = common::build_in_scratch_target(&mut build);
        let output = build.output().map_err(|e| format!("cannot run cargo: {e}"))?;
        if !output.status.success() {
            return Err(format!(
                "the wrong solutions do not build (sources in {}):\n{}",
                dir.display(),
                String::from_utf8_lossy(&output.stderr)
            ));
        }
        Ok(binaries)
    })
}

fn transcript_of(chapter: &Chapter) -> Transcript {
    let path = chapter.transcript_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    transcript::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The titles of every exchange, in the order the check runs them.
fn titles(transcript: &Transcript) -> Vec<String> {
    let http = transcript.exchanges.iter().map(|e| e.title.clone());
    http.chain(transcript.stdio.iter().map(|e| e.title.clone())).collect()
}

/// Run the check against one binary, as a learner's `check` does: the titles of the
/// exchanges that failed, and the report a learner would read.
fn check(binary: &Path, transcript: &Transcript) -> (Vec<String>, String) {
    let results: Vec<Checked> =
        check::run_binary(transcript, binary).unwrap_or_else(|e| panic!("{}: {e}", binary.display()));
    let failed = titles(transcript).into_iter().zip(&results).filter(|(_, r)| !r.passed()).map(|(t, _)| t).collect();
    (failed, check::render(&results, &Target::Exercise))
}

fn wrong_solutions_fail(name: &str) {
    let chapter = chapters::find(name).unwrap();
    let binaries = build_all().as_ref().unwrap_or_else(|e| panic!("{e}"));
    let transcript = transcript_of(chapter);
    let titles = titles(&transcript);
    let solutions = load_solutions(chapter);
    let own: Vec<String> = generate(chapter, &solutions).unwrap().own_binaries.into_iter().map(|(n, _)| n).collect();

    // With no wrong solution chosen, the binary is the chapter, and passes.
    let (failed, report) = check(&binaries.join(chapter.name), &transcript);
    assert!(
        failed.is_empty(),
        "{}'s binary with its switches, and none chosen, fails the check; the rewriting broke something:\n{report}",
        chapter.name,
    );

    let mut problems = Vec::new();
    for solution in &solutions {
        for title in &solution.fails {
            if !titles.contains(title) {
                problems.push(format!("{}: no exchange is titled {title:?}", solution.name));
            }
        }
        let own_name = format!("{}--{}", chapter.name, solution.name);
        let mut run = transcript.clone();
        let binary = if own.contains(&own_name) {
            binaries.join(&own_name)
        } else {
            run.server_args.push(format!("{FLAG}{}", solution.name));
            binaries.join(chapter.name)
        };
        let (failed, report) = check(&binary, &run);
        if solution.passes {
            if !failed.is_empty() {
                problems.push(format!("{} is valid, but the check fails it:\n{report}", solution.name));
            }
            continue;
        }
        let missed: Vec<&String> = solution.fails.iter().filter(|t| !failed.contains(t)).collect();
        if failed.is_empty() {
            problems.push(format!("{} is wrong, and the check passes it", solution.name));
        } else if !missed.is_empty() {
            problems.push(format!(
                "{}: these exchanges should fail and pass: {missed:?}; the check's report:\n{report}",
                solution.name,
            ));
        }
    }
    assert!(
        problems.is_empty(),
        "{} ({}):\n\n{}",
        chapter.name,
        solutions_path(chapter).display(),
        problems.join("\n\n")
    );
}

/// One test per chapter, so `cargo test --test wrong_solutions ch05` runs that chapter's.
macro_rules! wrong_solution_tests {
    ($($(#[$gate:meta])* $module:ident => $name:literal),* $(,)?) => {
        $(
            $(#[$gate])*
            #[test]
            fn $module() {
                wrong_solutions_fail($name);
            }
        )*

        /// The tests above and `chapters::CHAPTERS` name the same chapters (those this
        /// build has), and each chapter has a file.
        #[test]
        fn every_chapter_has_wrong_solutions() {
            let tested: &[&str] = &[$($(#[$gate])* $name),*];
            let listed: Vec<&str> = CHAPTERS.iter().filter(|c| c.in_this_build()).map(|c| c.name).collect();
            assert_eq!(tested, listed);
            for chapter in CHAPTERS {
                assert!(!load_solutions(chapter).is_empty(), "{} has no wrong solution", chapter.name);
            }
        }
    };
}

every_chapter!(wrong_solution_tests);

#[test]
fn the_patcher_and_the_function_finder() {
    let source = "fn a() -> u8 {\n    let s = \"}\"; // }\n    1\n}\n\nimpl X {\n    fn b(&self, c: char) -> [u8; 2] {\n        let _ = '{';\n        [2, 2]\n    }\n}\n\nfn c<'a>(x: &'a str);\n";
    let found = functions(source);
    let names: Vec<&str> = found.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert!(source[found[0].body.clone()].ends_with("1\n}"));
    assert!(source[found[1].body.clone()].ends_with("[2, 2]\n    }"));
    let hunk: Vec<String> = ["  fn b(&self, c: char) -> [u8; 2] {", " let _ = '{';", "-[2, 2]", "+        [3, 3]"]
        .into_iter()
        .map(String::from)
        .collect();
    let files = vec![("main.rs".to_string(), "fn main() {}\n".to_string()), ("x.rs".to_string(), source.to_string())];
    let patched = apply(&files, &[hunk]).unwrap();
    assert_eq!(patched[0], files[0]);
    let patched = &patched[1].1;
    assert!(patched.contains("        [3, 3]\n    }"), "{patched}");
    assert_eq!(skeleton(patched, &functions(patched)), skeleton(source, &found));
    // A hunk must find its lines exactly once, among all the files.
    assert!(apply(&files, &[vec!["-}".to_string()]]).is_err());
    assert!(apply(&files, &[vec!["-nowhere".to_string()]]).is_err());
    assert!(apply(&files, &[vec![" fn main() {}".to_string(), "+// x".to_string()]]).is_ok());
}
