//! The list of chapters: the one place the workbook CLI, the tests and the book's
//! checks learn which chapters exist.

use std::path::{Path, PathBuf};

/// One chapter: a folder under `chapters/` holding `main.rs` (the server, built as a
/// binary of the same name), `transcript.md` (its wire truth) and `exercise.rs` (the
/// learner's copy of `main.rs`, built as `NAME-exercise`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chapter {
    pub number: u8,
    /// Folder and binary name, e.g. `ch01-envelope`.
    pub name: &'static str,
    pub title: &'static str,
}

pub const CHAPTERS: &[Chapter] = &[
    Chapter { number: 1, name: "ch01-envelope", title: "The JSON-RPC envelope" },
    Chapter { number: 2, name: "ch02-handshake", title: "The initialize handshake" },
    Chapter { number: 3, name: "ch03-tools-list", title: "tools/list: offering tools" },
    Chapter { number: 4, name: "ch04-tools-call", title: "tools/call: running tools" },
    Chapter { number: 5, name: "ch05-errors", title: "Errors: three layers of failure" },
    Chapter { number: 6, name: "ch06-structured-output", title: "Structured output" },
    Chapter { number: 7, name: "ch07-hardening", title: "Hardening" },
    Chapter { number: 8, name: "ch08-stateless", title: "Stateless MCP (2026-07-28)" },
    Chapter { number: 9, name: "ch09-stdio", title: "stdio" },
    Chapter { number: 10, name: "ch10-starter", title: "The starter" },
    Chapter { number: 11, name: "ch11-resources", title: "Resources" },
    Chapter { number: 12, name: "ch12-prompts", title: "Prompts" },
    Chapter { number: 13, name: "ch13-completion", title: "Completion" },
    Chapter { number: 14, name: "ch14-streaming", title: "Streaming a call" },
    Chapter { number: 15, name: "ch15-input-required", title: "input_required: asking the client (2026-07-28)" },
    Chapter { number: 16, name: "ch16-sessions", title: "Sessions: asking the client mid-call" },
    Chapter { number: 17, name: "ch17-subscriptions", title: "Subscriptions: the session's own stream" },
];

impl Chapter {
    /// `chapters/ch01-envelope` inside the workbook.
    pub fn folder(&self) -> PathBuf {
        workbook_root().join("chapters").join(self.name)
    }

    pub fn transcript_path(&self) -> PathBuf {
        self.folder().join("transcript.md")
    }

    /// The chapter's complete server, `main.rs`: the exercise's solution.
    pub fn solution_path(&self) -> PathBuf {
        self.folder().join("main.rs")
    }

    /// The learner's file, `exercise.rs`: `main.rs` with the chapter's piece left as TODOs.
    pub fn exercise_path(&self) -> PathBuf {
        self.folder().join("exercise.rs")
    }

    /// The exercise's binary: `ch01-envelope-exercise`.
    pub fn exercise_binary(&self) -> String {
        format!("{}-exercise", self.name)
    }
}

/// Find a chapter by number (`3`, `03`) or by name (`ch03`, `ch03-tools-list`).
pub fn find(query: &str) -> Option<&'static Chapter> {
    let query = query.trim().to_ascii_lowercase();
    if let Ok(number) = query.trim_start_matches("ch").parse::<u8>() {
        return CHAPTERS.iter().find(|c| c.number == number);
    }
    CHAPTERS.iter().find(|c| c.name == query)
}

/// The workbook's top folder (where `Cargo.toml` is).
pub fn workbook_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_chapters_by_number_and_name() {
        assert_eq!(find("1").map(|c| c.name), Some("ch01-envelope"));
        assert_eq!(find("02").map(|c| c.name), Some("ch02-handshake"));
        assert_eq!(find("ch02").map(|c| c.name), Some("ch02-handshake"));
        assert_eq!(find("ch01-envelope").map(|c| c.number), Some(1));
        assert_eq!(find("99"), None);
    }
}
