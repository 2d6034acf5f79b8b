//! The starters stand alone: `workbook starter DIR` writes chapter 10 as a new crate
//! (`--full`: the last chapter), the crate builds offline with nothing but its own
//! dependencies (from the local cargo cache, warm because the workbook itself just
//! built), and the binary it builds passes its chapter's whole transcript, over HTTP
//! and over stdio.
//!
//! The copies are written to `target/starter-copies/` (emptied first) and build in the
//! target folder the tests' scratch crates share (`common::build_in_scratch_target`:
//! the workbook's own is locked by the `cargo test` running this test), so the wrong
//! solutions' build after this one finds the dependencies compiled. The full starter
//! is the last chapter's, so it is copied when this build has that chapter
//! (`--all-features`).

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use mcp_workbook::chapters;
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::starter;
use mcp_workbook::transcript;

/// The folder the copies are written to, emptied first; kept after the test, so a copy
/// that fails can be inspected (`target/starter-copies/`). The same folder every run,
/// so cargo's record of the copies' builds stays one, not one per run.
struct Scratch(PathBuf);

impl Scratch {
    fn new() -> Scratch {
        let path = common::workbook_target().join("starter-copies");
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("a scratch folder");
        Scratch(path)
    }
}

fn run(command: &mut Command) -> (bool, String) {
    let output = command.output().unwrap_or_else(|e| panic!("cannot run {command:?}: {e}"));
    let text = String::from_utf8_lossy(&output.stdout).into_owned() + &String::from_utf8_lossy(&output.stderr);
    (output.status.success(), text)
}

/// Both starters, one after the other, in one target folder. The full starter when this
/// build has its chapter's features (`cargo test --all-features`): the copy builds
/// offline, and without the features their crates may not be in the cargo cache.
#[test]
fn the_starters_copied_into_new_crates_build_and_pass_their_transcripts() {
    let scratch = Scratch::new();
    copy_build_and_replay(&scratch, "my-server", &[], starter::CHAPTER);
    let full = chapters::find(starter::full_chapter()).expect("the full starter is a chapter");
    if full.in_this_build() {
        copy_build_and_replay(&scratch, "my-full-server", &["--full"], full.name);
    } else {
        eprintln!("not built: the full starter, which needs --features {}", full.features.join(","));
    }
}

/// `workbook starter FLAGS DIR` writes `name`, made from `chapter`; it builds and
/// passes that chapter's transcript.
fn copy_build_and_replay(scratch: &Scratch, name: &str, flags: &[&str], chapter: &str) {
    let copy = scratch.0.join(name);

    // 1. The workbook writes the crate.
    let (ok, said) = run(Command::new(env!("CARGO_BIN_EXE_workbook")).arg("starter").args(flags).arg(&copy));
    assert!(ok, "workbook starter failed:\n{said}");
    for file in ["Cargo.toml", "Cargo.lock", "src/main.rs", "src/http.rs", ".gitignore"] {
        assert!(copy.join(file).is_file(), "the copy has no {file}");
    }
    let sources: Vec<PathBuf> = std::fs::read_dir(copy.join("src")).unwrap().map(|e| e.unwrap().path()).collect();
    for source in &sources {
        let text = std::fs::read_to_string(source).unwrap();
        assert!(!text.contains("mcp_workbook"), "{} still reaches into the workbook", source.display());
    }
    if flags.contains(&"--full") {
        // The full starter is a crate of several files: main.rs with the map, the layers
        // and pieces, and the HTTP base.
        assert!(sources.len() >= 4, "the full starter has only {} files in src/", sources.len());
    }

    // 2. It builds offline, on its own, without a warning.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut build = Command::new(&cargo);
    build.args(["build", "--offline"]).current_dir(&copy);
    let binaries = common::build_in_scratch_target(&mut build);
    let (ok, said) = run(&mut build);
    assert!(ok, "the copy does not build:\n{said}");
    assert!(!said.contains("warning"), "the copy builds with warnings:\n{said}");
    let binary = binaries.join(format!("{name}{}", std::env::consts::EXE_SUFFIX));

    // 3. Its `--help` says what every flag does.
    let (ok, help) = run(Command::new(&binary).arg("--help"));
    assert!(ok, "--help failed:\n{help}");
    let undocumented = undocumented_flags(&help);
    assert!(undocumented.is_empty(), "flags without a description in --help: {undocumented:?}\n{help}");

    // 4. It passes its chapter's transcript, every exchange, both transports.
    replay_transcript(&binary, chapter);
}

/// The options in clap's `--help` that have no description. Clap puts a description
/// after the flag on the same line (`  -x, --flag <VALUE>  text`) or, when the help
/// is long, on the lines below it, indented deeper.
fn undocumented_flags(help: &str) -> Vec<String> {
    let lines: Vec<&str> = help.lines().collect();
    let indent = |line: &str| line.len() - line.trim_start().len();
    let mut undocumented = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let option = line.trim();
        if !option.starts_with('-') {
            continue;
        }
        let same_line = option.split_once("  ").is_some_and(|(_, text)| !text.trim().is_empty());
        let below = lines.get(i + 1).is_some_and(|next| {
            !next.trim().is_empty() && !next.trim().starts_with('-') && indent(next) > indent(line)
        });
        if !same_line && !below {
            undocumented.push(option.to_string());
        }
    }
    undocumented
}

fn replay_transcript(binary: &Path, chapter: &str) {
    let chapter = chapters::find(chapter).expect("the starter is a chapter");
    let path = chapter.transcript_path();
    let text = std::fs::read_to_string(&path).unwrap();
    let transcript = transcript::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(!transcript.exchanges.is_empty() && !transcript.stdio.is_empty(), "the starter shows both transports");

    let server = RunningServer::start(binary, &transcript.server_args).expect("the copy starts");
    let mut failures: Vec<String> =
        replay::replay(&transcript, &server).iter().filter(|o| !o.passed()).map(replay::explain).collect();
    failures
        .extend(replay::replay_stdio(&transcript, binary).iter().filter(|o| !o.passed()).map(replay::explain_stdio));
    assert!(
        failures.is_empty(),
        "the copy differs from {} in {} exchanges:\n\n{}\nHTTP server stderr:\n{}",
        path.display(),
        failures.len(),
        failures.join("\n"),
        server.stderr()
    );
}

#[test]
fn the_help_check_finds_a_flag_without_text() {
    let short = "Options:\n      --bind <BIND>  Address to listen on\n      --quiet\n  -h, --help  Print help\n";
    assert_eq!(undocumented_flags(short), ["--quiet"]);
    let long = "Options:\n      --bind <BIND>\n          Address to listen on\n      --quiet\n  -h, --help\n          Print help\n";
    assert_eq!(undocumented_flags(long), ["--quiet"]);
}
