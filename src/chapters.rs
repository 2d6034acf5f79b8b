//! The list of chapters: the one place the workbook CLI, the tests, the book's checks
//! and `build.rs` learn which chapters exist.
//!
//! `build.rs` includes this file as a module of its own, so it uses the standard
//! library only.

use std::path::{Path, PathBuf};

/// One chapter: a folder under `chapters/` holding `main.rs` (the server, built as a
/// binary of the same name), `transcript.md` (its wire truth), `exercise.rs` (the
/// learner's file, built into `NAME-exercise`) and `changes.diff` (what it changed
/// since the chapter before, generated).
///
/// Chapters 1 to 10 are one file each, and the exercise is a copy of `main.rs` with
/// the chapter's piece left as TODOs. From chapter 11 the server is a small crate:
/// `main.rs` declares the other files with `mod NAME;` lines, and the piece the
/// chapter adds is one of them (`piece`); the exercise is a copy of that one file,
/// and the exercise binary is the chapter's server with `exercise.rs` in its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chapter {
    pub number: u8,
    /// Folder and binary name, e.g. `ch01-envelope`.
    pub name: &'static str,
    pub title: &'static str,
    /// The module a Part III chapter adds (`resources` for `resources.rs`), which its
    /// exercise stands in for; `None` for a chapter that is one file.
    pub piece: Option<&'static str>,
    /// The cargo features its binaries need (their `required-features` in `Cargo.toml`):
    /// `authorization` for chapter 18, whose three crates no other chapter builds. What
    /// builds a chapter's binary passes them ([`Chapter::cargo_features`]).
    pub features: &'static [&'static str],
}

pub const CHAPTERS: &[Chapter] = &[
    Chapter { number: 1, name: "ch01-envelope", title: "The JSON-RPC envelope", piece: None, features: &[] },
    Chapter { number: 2, name: "ch02-handshake", title: "The initialize handshake", piece: None, features: &[] },
    Chapter { number: 3, name: "ch03-tools-list", title: "tools/list: offering tools", piece: None, features: &[] },
    Chapter { number: 4, name: "ch04-tools-call", title: "tools/call: running tools", piece: None, features: &[] },
    Chapter { number: 5, name: "ch05-errors", title: "Errors: three layers of failure", piece: None, features: &[] },
    Chapter { number: 6, name: "ch06-structured-output", title: "Structured output", piece: None, features: &[] },
    Chapter { number: 7, name: "ch07-hardening", title: "Hardening", piece: None, features: &[] },
    Chapter { number: 8, name: "ch08-stateless", title: "Stateless MCP (2026-07-28)", piece: None, features: &[] },
    Chapter { number: 9, name: "ch09-stdio", title: "stdio", piece: None, features: &[] },
    Chapter { number: 10, name: "ch10-starter", title: "The starter", piece: None, features: &[] },
    Chapter { number: 11, name: "ch11-resources", title: "Resources", piece: Some("resources"), features: &[] },
    Chapter { number: 12, name: "ch12-prompts", title: "Prompts", piece: Some("prompts"), features: &[] },
    Chapter { number: 13, name: "ch13-completion", title: "Completion", piece: Some("completion"), features: &[] },
    Chapter { number: 14, name: "ch14-streaming", title: "Streaming a call", piece: Some("streaming"), features: &[] },
    Chapter {
        number: 15,
        name: "ch15-input-required",
        title: "input_required: asking the client (2026-07-28)",
        piece: Some("input_required"),
        features: &[],
    },
    Chapter {
        number: 16,
        name: "ch16-sessions",
        title: "Sessions: asking the client mid-call",
        piece: Some("sessions"),
        features: &[],
    },
    Chapter {
        number: 17,
        name: "ch17-subscriptions",
        title: "Subscriptions: the session's own stream",
        piece: Some("subscriptions"),
        features: &[],
    },
    Chapter {
        number: 18,
        name: "ch18-authorization",
        title: "Authorization: the server as an OAuth resource server",
        piece: Some("authorization"),
        features: &["authorization"],
    },
    Chapter {
        number: 19,
        name: "ch19-tasks",
        title: "Tasks: long work that outlives its request",
        piece: Some("tasks"),
        features: &["authorization"],
    },
    Chapter {
        number: 20,
        name: "ch20-fleet",
        title: "Several instances: the state they share",
        piece: Some("store"),
        features: &["fleet"],
    },
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

    /// The learner's file, `exercise.rs`: a copy of `main.rs`, or of the chapter's piece,
    /// with the piece's decisions left as TODOs.
    pub fn exercise_path(&self) -> PathBuf {
        self.folder().join("exercise.rs")
    }

    /// The file the exercise is a copy of: the piece's file, or `main.rs`.
    pub fn exercise_counterpart(&self) -> PathBuf {
        match self.piece {
            Some(piece) => self.folder().join(format!("{piece}.rs")),
            None => self.solution_path(),
        }
    }

    /// The chapter's step as a diff against the chapter before it (none for chapter 1).
    pub fn changes_path(&self) -> PathBuf {
        self.folder().join("changes.diff")
    }

    /// The server's source files, in the order of its map: `main.rs`, then each file
    /// a `mod NAME;` line of `main.rs` declares, in the order of those lines. Paths are
    /// relative to the chapter's folder.
    pub fn source_files(&self) -> std::io::Result<Vec<String>> {
        let main = std::fs::read_to_string(self.solution_path())?;
        Ok(std::iter::once("main.rs".to_string()).chain(modules(&main).map(|name| format!("{name}.rs"))).collect())
    }

    /// The exercise's binary: `ch01-envelope-exercise`.
    pub fn exercise_binary(&self) -> String {
        format!("{}-exercise", self.name)
    }

    /// The arguments that give `cargo build` the chapter's features: `--features
    /// authorization` for chapter 18, nothing for a chapter that needs none.
    pub fn cargo_features(&self) -> Vec<String> {
        if self.features.is_empty() { Vec::new() } else { vec!["--features".into(), self.features.join(",")] }
    }

    /// Whether the workbook as built now has the chapter's features on. Cargo builds a
    /// binary only with its `required-features`, so only then are the chapter's binaries
    /// there for the tests to run (`cargo test` without `--all-features` skips chapter 18).
    pub fn in_this_build(&self) -> bool {
        self.features.iter().all(|feature| feature_enabled(feature))
    }
}

/// Whether the workbook was compiled with the cargo feature `feature` on. Every feature
/// a chapter names is one of these (`tests/dependencies.rs` holds them to `Cargo.toml`).
pub fn feature_enabled(feature: &str) -> bool {
    match feature {
        "authorization" => cfg!(feature = "authorization"),
        "fleet" => cfg!(feature = "fleet"),
        other => panic!("src/chapters.rs knows no cargo feature {other:?}: add it to `feature_enabled`"),
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

/// The modules a crate root declares in files of their own: its `mod NAME;` lines.
pub fn modules(root: &str) -> impl Iterator<Item = &str> {
    root.lines().filter_map(|line| line.strip_prefix("mod ")?.strip_suffix(';')).map(str::trim)
}

/// The root of a Part III exercise binary, which `build.rs` writes: the chapter's
/// `main.rs` with every module found at its path in the chapter's folder, and the
/// chapter's piece found in `exercise.rs` instead. (The root lives in cargo's `OUT_DIR`,
/// so a path relative to the chapter would not do; and it is included with `include!`,
/// which takes no `//!` lines, so those become `//` lines.)
pub fn exercise_root(chapter: &Chapter, main: &str) -> String {
    let folder = chapter.folder();
    let mut root = String::new();
    for line in main.lines() {
        if let Some(doc) = line.strip_prefix("//!") {
            root.push_str("//");
            root.push_str(doc);
        } else if let Some(module) = modules(line).next() {
            let file = if Some(module) == chapter.piece { "exercise".to_string() } else { module.to_string() };
            let path = folder.join(format!("{file}.rs")).display().to_string();
            root.push_str(&format!("#[path = {path:?}]\nmod {module};"));
        } else {
            root.push_str(line);
        }
        root.push('\n');
    }
    root
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

    #[test]
    fn an_exercise_root_takes_the_piece_from_the_exercise() {
        let chapter =
            Chapter { number: 11, name: "ch11-resources", title: "Resources", piece: Some("resources"), features: &[] };
        let main = "//! The map.\nuse std::io;\nmod jsonrpc;\nmod resources;\nfn main() {}\n";
        let root = exercise_root(&chapter, main);
        let path = |file: &str| format!("{:?}", chapter.folder().join(file).display().to_string());
        assert_eq!(
            root,
            format!(
                "// The map.\nuse std::io;\n#[path = {}]\nmod jsonrpc;\n#[path = {}]\nmod resources;\nfn main() {{}}\n",
                path("jsonrpc.rs"),
                path("exercise.rs")
            )
        );
        assert_eq!(modules(main).collect::<Vec<_>>(), ["jsonrpc", "resources"]);
    }
}
