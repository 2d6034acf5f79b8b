//! Every chapter's transcript, replayed against the chapter's own binary over a
//! real socket. A failure prints each exchange that differed, with a diff.

use std::path::Path;

use mcp_workbook::chapters::{self, CHAPTERS};
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript;

#[macro_use]
mod common;

/// Replay every exchange: the HTTP ones against `binary` started with the
/// transcript's flags on port 0, each stdio one against a fresh `binary ... --stdio`.
fn replay_chapter(name: &str, binary: &str) {
    let chapter = chapters::find(name).unwrap_or_else(|| panic!("{name} is not in chapters::CHAPTERS"));
    let path = chapter.transcript_path();
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let transcript = transcript::parse(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let binary = Path::new(binary);

    let mut failures = Vec::new();
    let mut log = String::new();
    if !transcript.exchanges.is_empty() {
        let server = RunningServer::start(binary, &transcript.server_args).expect("server starts");
        let outcomes = replay::replay(&transcript, &server);
        failures.extend(outcomes.iter().filter(|o| !o.passed()).map(replay::explain));
        log = server.stderr();
    }
    let stdio = replay::replay_stdio(&transcript, binary);
    failures.extend(stdio.iter().filter(|o| !o.passed()).map(replay::explain_stdio));
    assert!(
        failures.is_empty(),
        "{} of {} exchanges in {} differ:\n\n{}\nHTTP server stderr:\n{log}",
        failures.len(),
        transcript.exchanges.len() + transcript.stdio.len(),
        path.display(),
        failures.join("\n"),
    );
}

/// One test per chapter, so `cargo test ch03` replays just that one.
macro_rules! chapter_tests {
    ($($(#[$gate:meta])* $test:ident => $name:literal),* $(,)?) => {
        $(
            $(#[$gate])*
            #[test]
            fn $test() {
                replay_chapter($name, env!(concat!("CARGO_BIN_EXE_", $name)));
            }
        )*

        /// The tests above and `chapters::CHAPTERS` name the same chapters (those this
        /// build has).
        #[test]
        fn every_chapter_has_a_transcript_test() {
            let tested: &[&str] = &[$($(#[$gate])* $name),*];
            let listed: Vec<&str> = CHAPTERS.iter().filter(|c| c.in_this_build()).map(|c| c.name).collect();
            assert_eq!(tested, listed);
        }
    };
}

every_chapter!(chapter_tests);

/// Every folder under `chapters/` is a listed chapter, and the other way round.
#[test]
fn chapter_folders_match_the_list() {
    let mut folders: Vec<String> = std::fs::read_dir(chapters::workbook_root().join("chapters"))
        .expect("chapters/ exists")
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.path().is_dir())
        .map(|entry| entry.file_name().to_string_lossy().into_owned())
        .collect();
    folders.sort();
    let listed: Vec<String> = CHAPTERS.iter().map(|c| c.name.to_string()).collect();
    assert_eq!(folders, listed);
}
