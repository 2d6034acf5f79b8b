//! The root of every Part III exercise binary (`ch11-resources-exercise` and on): the
//! chapter's `main.rs`, with your `exercise.rs` in place of the file the chapter adds.
//! `build.rs` writes it from the chapter's `main.rs` when that changes; your file is
//! read as it is, every time you build. You do not need to open this file.
include!(concat!(env!("OUT_DIR"), "/", env!("CARGO_BIN_NAME"), ".rs"));
