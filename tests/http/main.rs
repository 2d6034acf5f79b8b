//! The HTTP base (`src/http.rs`), one module for each thing it must withstand or get
//! right:
//! - `framing`: requests whose head or body framing is malformed or ambiguous are
//!   refused, nothing hidden behind one is answered, and what a careful client may
//!   send is served;
//! - `answers`: what goes back arrives whole (HEAD, refusals, closing, streams), and a
//!   failing handler is a 500;
//! - `crowds`: caps on connections, and crowds of idle or slow clients past them;
//! - `deadlines`: slow clients against the clock;
//! - `head_parser`: the head parser against an independent reader, over thousands of
//!   generated heads.
//!
//! An attack goes to the starter's own binary over raw sockets, and after each one the
//! starter must still answer a normal `tools/call` (`support`); what needs knobs a
//! binary does not have (short deadlines, a handler that waits or panics) runs on the
//! base in this process. `cargo test --test http crowds` runs one module.

#[path = "../common/mod.rs"]
mod common;
mod support;

mod answers;
mod crowds;
mod deadlines;
mod framing;
mod head_parser;
