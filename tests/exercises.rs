//! The author checks for the workshop exercises (`chapters/*/exercise.rs`):
//! - every exercise fails its chapter's check, so its TODO is real;
//! - every chapter passes the same check, so the check is fair;
//! - every exercise is its chapter's `main.rs` (from chapter 11, the file of the piece
//!   the chapter adds) outside its TODO regions, so the two cannot drift apart;
//! - every exchange has a hint, and the exercises are exactly the chapters.
//!
//! A learner who solves an exercise in place will see the first of these fail: that
//! is the exercise passing, not a bug. They check their work with
//! `cargo run -- check N`, not with `cargo test`.
//!
//! A TODO region, in an exercise, runs from a line that starts with `// TODO` to the
//! next `// END TODO` line. Outside the regions an exercise and its chapter are the
//! same lines in the same order (blank lines aside); inside, the exercise says what to
//! build and the chapter has the code.

use std::path::Path;

use mcp_workbook::chapters::{self, CHAPTERS, Chapter};
use mcp_workbook::check;
use mcp_workbook::mutants;
use mcp_workbook::regions;
use mcp_workbook::transcript::{self, Transcript};

#[macro_use]
mod common;

fn transcript_of(chapter: &Chapter) -> Transcript {
    let path = chapter.transcript_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    transcript::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Start `binary` as the learner's check does, run the check, and give back how many
/// exchanges passed and the report a learner would read.
fn check_binary(chapter: &Chapter, binary: &str) -> (usize, usize, String) {
    let transcript = transcript_of(chapter);
    let results = check::run_binary(&transcript, Path::new(binary)).expect("the server starts");
    let passed = results.iter().filter(|r| r.passed()).count();
    let report = check::render(&results, &check::Target::Exercise);
    (passed, results.len(), report)
}

fn exercise_is_unsolved(name: &str, binary: &str) {
    let chapter = chapters::find(name).unwrap();
    let (passed, total, _) = check_binary(chapter, binary);
    assert!(
        passed < total,
        "{}'s exercise passes all {total} exchanges of its check, so its TODO is not real: leave the \
         chapter's piece out of exercise.rs. (A learner who solved it in place sees this too: well done. \
         This test guards the workbook's own files; check your work with `cargo run -- check {}`.)",
        chapter.name,
        chapter.number,
    );
}

fn chapter_passes(name: &str, binary: &str) {
    let chapter = chapters::find(name).unwrap();
    let (passed, total, report) = check_binary(chapter, binary);
    assert_eq!(passed, total, "{} fails the learner's check:\n{report}", chapter.name);
}

fn exercise_matches_its_chapter(name: &str) {
    let chapter = chapters::find(name).unwrap();
    let read = |path: &Path| std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    for file in chapter.source_files().unwrap() {
        let source = read(&chapter.folder().join(&file));
        assert!(!source.contains("// TODO") && !source.contains("todo!("), "{}/{file} has a TODO left", chapter.name);
    }
    let counterpart = chapter.exercise_counterpart();
    let file = counterpart.file_name().unwrap().to_string_lossy();
    if let Err(problem) = regions::solution_regions(&read(&chapter.exercise_path()), &read(&counterpart)) {
        panic!(
            "{}: the exercise must be {file} with only its TODO regions changed, but {problem}.\n\
             A change to {file} goes into exercise.rs too.",
            chapter.name
        );
    }
}

/// Three tests per chapter, so `cargo test ch03` runs that chapter's.
macro_rules! exercise_tests {
    ($($(#[$gate:meta])* $module:ident => $name:literal),* $(,)?) => {
        $(
            $(#[$gate])*
            mod $module {
                #[test]
                fn the_exercise_is_unsolved() {
                    super::exercise_is_unsolved($name, env!(concat!("CARGO_BIN_EXE_", $name, "-exercise")));
                }

                #[test]
                fn the_chapter_passes_the_check() {
                    super::chapter_passes($name, env!(concat!("CARGO_BIN_EXE_", $name)));
                }

                #[test]
                fn the_exercise_is_the_chapter_outside_its_todos() {
                    super::exercise_matches_its_chapter($name);
                }
            }
        )*

        /// The modules above, `chapters::CHAPTERS` (the chapters this build has) and the
        /// exercise binaries in Cargo.toml name the same chapters.
        #[test]
        fn every_chapter_has_an_exercise() {
            let tested: &[&str] = &[$($(#[$gate])* $name),*];
            let listed: Vec<&str> = CHAPTERS.iter().filter(|c| c.in_this_build()).map(|c| c.name).collect();
            assert_eq!(tested, listed, "the list in tests/exercises.rs and chapters::CHAPTERS differ");
            let manifest = std::fs::read_to_string(chapters::workbook_root().join("Cargo.toml")).unwrap();
            let binaries: Vec<String> = manifest
                .lines()
                .filter_map(|line| line.trim().strip_prefix("name = \""))
                .filter_map(|rest| rest.strip_suffix("\""))
                .filter(|name| name.ends_with("-exercise"))
                .map(str::to_string)
                .collect();
            let expected: Vec<String> = CHAPTERS.iter().map(|c| c.exercise_binary()).collect();
            assert_eq!(binaries, expected, "the exercise [[bin]]s in Cargo.toml and chapters::CHAPTERS differ");
            // A chapter of one file builds its exercise alone; from chapter 11 the
            // exercise binary is the chapter with exercise.rs in place of its piece
            // (build.rs).
            for chapter in CHAPTERS {
                let path = match chapter.piece {
                    None => format!("chapters/{}/exercise.rs", chapter.name),
                    Some(_) => format!("src/exercise_roots/{}.rs", chapter.name),
                };
                let bin = format!("name = \"{}\"\npath = \"{path}\"\n", chapter.exercise_binary());
                assert!(manifest.contains(&bin), "Cargo.toml has no [[bin]] with {bin}");
            }
        }
    };
}

every_chapter!(exercise_tests);

/// The check prints a hint for every exchange a learner gets wrong.
#[test]
fn every_exchange_has_a_hint() {
    let mut missing = Vec::new();
    for chapter in CHAPTERS {
        let transcript = transcript_of(chapter);
        let http = transcript.exchanges.iter().map(|e| (&e.hint, e.line, &e.title));
        let stdio = transcript.stdio.iter().map(|e| (&e.hint, e.line, &e.title));
        for (_, line, title) in http.chain(stdio).filter(|(hint, _, _)| hint.is_none()) {
            missing.push(format!("{}/transcript.md line {line}: {title}", chapter.name));
        }
    }
    assert!(
        missing.is_empty(),
        "exchanges without a `<!-- hint: ... -->` line (see src/transcript.rs):\n{}",
        missing.join("\n")
    );
}

/// A Windows checkout without developer mode turns a symbolic link into a small text
/// file, and the room's first hour goes to that. The workbook tracks none; keep it so.
/// (Installed tools, such as `tests/interop/.venv`, may hold links: they are not tracked.)
#[test]
fn the_workbook_tracks_no_symlinks() {
    let Ok(output) =
        std::process::Command::new("git").args(["ls-files", "--stage"]).current_dir(chapters::workbook_root()).output()
    else {
        return; // no git: not a checkout, nothing to check
    };
    let links: Vec<String> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter(|line| line.starts_with("120000 "))
        .map(|line| line.split('\t').nth(1).unwrap_or(line).to_string())
        .collect();
    assert!(links.is_empty(), "tracked symbolic links (replace each with the file itself): {links:?}");
}

/// Every mutant `tests/mutants-survivors.txt` explains is still one `cargo run -- mutants`
/// makes: its chapter exists, and a mutant of that chapter's exercise regions does what
/// the entry says on the line it names. (Whether it still survives takes building it:
/// the command says so when an explanation has no survivor left.)
#[test]
fn every_explained_survivor_is_still_a_mutant() {
    let explained = mutants::explained_in_workbook().unwrap_or_else(|e| panic!("{e}"));
    assert!(!explained.is_empty());
    for entry in explained {
        let chapter = chapters::find(&entry.chapter).unwrap_or_else(|| panic!("no chapter {:?}", entry.chapter));
        let read = |path: &Path| std::fs::read_to_string(path).unwrap();
        let solution = read(&chapter.exercise_counterpart());
        let regions = regions::solution_regions(&read(&chapter.exercise_path()), &solution).unwrap();
        let made = mutants::mutants(&solution, &regions);
        assert!(
            made.iter().any(|m| m.what == entry.what && m.on == entry.on),
            "{}: no mutant `{}` on `{}` any more: delete the entry, or write it for the code as it is now",
            entry.chapter,
            entry.what,
            entry.on
        );
    }
}
