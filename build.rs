//! Writes the root of each Part III exercise binary into cargo's `OUT_DIR`.
//!
//! From chapter 11 a chapter is several files, and its exercise is one of them: the
//! learner's `exercise.rs` stands in for the piece the chapter adds. Both binaries of
//! such a chapter are built from the same `main.rs`; the exercise's root
//! (`src/exercise_roots/NAME.rs`) includes `OUT_DIR/NAME-exercise.rs`, which is that
//! `main.rs` with each `mod` line given its file's path and the piece's path pointing
//! at `exercise.rs` (see `chapters::exercise_root`). Nothing is copied: the compiler
//! reads the chapter's own files, and its messages name them.

#[path = "src/chapters.rs"]
#[allow(dead_code)]
mod chapters;

use std::path::Path;

fn main() {
    let out = std::env::var("OUT_DIR").expect("cargo sets OUT_DIR for build scripts");
    println!("cargo::rerun-if-changed=src/chapters.rs");
    for chapter in chapters::CHAPTERS.iter().filter(|chapter| chapter.piece.is_some()) {
        let main_path = chapter.solution_path();
        println!("cargo::rerun-if-changed={}", main_path.display());
        let main = std::fs::read_to_string(&main_path).unwrap_or_else(|e| panic!("{}: {e}", main_path.display()));
        let root = chapters::exercise_root(chapter, &main);
        let path = Path::new(&out).join(format!("{}.rs", chapter.exercise_binary()));
        std::fs::write(&path, root).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
