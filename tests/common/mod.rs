//! What several test files share. Each file under `tests/` is a crate of its own, so
//! each includes this module, `#[macro_use] mod common;`, and uses some of it.
//!
//! - `every_chapter!`: one test per chapter; `chapter_binaries_from`: the chapters that
//!   carry a piece, from the one that adds it on; `start`: a chapter's server;
//! - `raw`: bytes on a socket, for the tests of the HTTP base;
//! - `session_client`: a client of the chapters with sessions.
#![allow(dead_code, unused_macros)]

pub mod raw;
pub mod session_client;

use std::path::Path;

use mcp_workbook::chapters::CHAPTERS;
use mcp_workbook::replay::RunningServer;

/// `every_chapter!(then)` expands to `then! { ch01_envelope => "ch01-envelope", ... }`:
/// every chapter as a test name and its binary's name, the one list the per-chapter
/// tests (transcripts, exercises, wrong solutions) are generated from. A `#[test]`
/// per chapter, not one loop, so that a failure names its chapter. Each caller also
/// checks this list against `chapters::CHAPTERS`, so a chapter added there and not
/// here fails every one of them.
///
/// A chapter whose binaries need a cargo feature (`Chapter::features`) comes with its
/// `#[cfg(feature = ...)]`, which each caller puts on what it makes of the chapter:
/// cargo builds such a binary only with the feature on, and without the binary there is
/// no `CARGO_BIN_EXE_...` for `env!` to read. So the check is against the chapters this
/// build has (`Chapter::in_this_build`): all of them with `--all-features`.
macro_rules! every_chapter {
    ($then:ident) => {
        $then! {
            ch01_envelope => "ch01-envelope",
            ch02_handshake => "ch02-handshake",
            ch03_tools_list => "ch03-tools-list",
            ch04_tools_call => "ch04-tools-call",
            ch05_errors => "ch05-errors",
            ch06_structured_output => "ch06-structured-output",
            ch07_hardening => "ch07-hardening",
            ch08_stateless => "ch08-stateless",
            ch09_stdio => "ch09-stdio",
            ch10_starter => "ch10-starter",
            ch11_resources => "ch11-resources",
            ch12_prompts => "ch12-prompts",
            ch13_completion => "ch13-completion",
            ch14_streaming => "ch14-streaming",
            ch15_input_required => "ch15-input-required",
            ch16_sessions => "ch16-sessions",
            ch17_subscriptions => "ch17-subscriptions",
            #[cfg(feature = "authorization")]
            ch18_authorization => "ch18-authorization",
            #[cfg(feature = "authorization")]
            ch19_tasks => "ch19-tasks",
            #[cfg(feature = "fleet")]
            ch20_fleet => "ch20-fleet",
        }
    };
}

/// The binaries of chapter `first` and of every chapter after it that this build has,
/// in order: for the tests of a piece that chapter `first` adds and every later chapter
/// carries. The list is `chapters::CHAPTERS`'s, so a new chapter joins it by itself; a
/// chapter whose features this build lacks (`Chapter::in_this_build`: 18 without
/// `--all-features`) has no binary, and is left out.
pub fn chapter_binaries_from(first: u8) -> Vec<String> {
    assert!(CHAPTERS.iter().any(|chapter| chapter.number == first), "there is no chapter {first}");
    // Cargo puts every binary of the package in one folder (`CARGO_BIN_EXE_*`).
    let folder = Path::new(env!("CARGO_BIN_EXE_workbook")).parent().expect("the binaries' folder");
    let chapters = CHAPTERS.iter().filter(|chapter| chapter.number >= first && chapter.in_this_build());
    let binaries: Vec<String> = chapters
        .map(|chapter| {
            let binary = folder.join(format!("{}{}", chapter.name, std::env::consts::EXE_SUFFIX));
            assert!(binary.is_file(), "{} is not built", binary.display());
            binary.display().to_string()
        })
        .collect();
    assert!(!binaries.is_empty(), "this build has no chapter from {first} on");
    binaries
}

/// A chapter's server, `binary ARGS...`, started on a free port (`RunningServer::start`);
/// stopped when dropped. A server that does not start fails the test, saying why.
pub fn start(binary: &str, args: &[&str]) -> RunningServer {
    let args: Vec<String> = args.iter().map(|arg| arg.to_string()).collect();
    RunningServer::start(Path::new(binary), &args).unwrap_or_else(|e| panic!("{binary} does not start: {e}"))
}

/// The workbook's target folder (`target/`, or `CARGO_TARGET_DIR`), where the crates the
/// tests write (the starters' copies, the wrong solutions) are kept between runs, so a
/// second run rebuilds only what changed.
pub fn workbook_target() -> std::path::PathBuf {
    let workbook = Path::new(env!("CARGO_BIN_EXE_workbook"));
    workbook.parent().and_then(Path::parent).expect("the binary is in target/PROFILE/").to_path_buf()
}

/// `command` (a `cargo build` of a crate the tests wrote) set to build in the one target
/// folder all such crates share, `target/scratch`: not the workbook's own folder, which
/// the `cargo test` running the test holds locked; and one for all, not one each, so
/// that the dependencies they share (serde to ring) are compiled once. The dev profile
/// is set here, the same for every such build, because cargo keys a compiled
/// dependency by it: no debug information (these binaries are run, never debugged) and
/// no `RUSTFLAGS`. Returns the folder the binaries land in.
pub fn build_in_scratch_target(command: &mut std::process::Command) -> std::path::PathBuf {
    let target = workbook_target().join("scratch");
    command
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_PROFILE_DEV_DEBUG", "false")
        .env("CARGO_PROFILE_DEV_INCREMENTAL", "false")
        .env_remove("RUSTFLAGS");
    target.join("debug")
}
