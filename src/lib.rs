//! The MCP workbook's library: the HTTP base every chapter stands on, and the
//! client side (transcripts, replay) that the tests and the `workbook` CLI share.
//!
//! - [`http`]: the synchronous `tiny_http` loop; chapters hand it a pure function.
//! - [`transcript`]: a chapter's wire exchanges, parsed from its Markdown file.
//! - [`replay`]: send those exchanges to a running server and compare the answers
//!   (`src/replay.rs`, and its pieces, one concern a file, in `src/replay/`).
//! - [`check`]: the learner's check: the replay, told in plain words.
//! - [`chapters`]: which chapters exist.
//! - [`starter`]: the starter (chapter 10), or with `--full` the last chapter, written
//!   out as a crate of your own.
//! - [`steps`]: what each chapter changed since the one before, as a diff.
//! - [`carry`]: a change made to one chapter's file, merged into the later chapters'.
//! - [`regions`]: the marked regions of the chapters' files: the book's anchors, the
//!   exercises' TODOs.
//! - [`mutants`]: mutation testing of the exercises: the mistakes a participant could
//!   make in a TODO region, and whether the chapter's check catches each.

pub mod carry;
pub mod chapters;
pub mod check;
pub mod http;
pub mod mutants;
pub mod regions;
pub mod replay;
pub mod starter;
pub mod steps;
pub mod transcript;
