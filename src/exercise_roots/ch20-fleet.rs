//! The root of chapter 20's exercise binary, `ch20-fleet-exercise`: the chapter's
//! `main.rs`, with your `chapters/ch20-fleet/exercise.rs` in place of the file the chapter
//! adds. `build.rs` writes it from the chapter's `main.rs`; you do not need to open
//! this file. Until your TODOs are written, some of the server's items go unused: this
//! binary does not warn about them.
#![allow(dead_code)]
include!(concat!(env!("OUT_DIR"), "/", env!("CARGO_BIN_NAME"), ".rs"));
