//! The ceiling compiles the HTTP base of the workbook under test: `src/http.rs` of
//! this checkout, or the file named by `BENCH_HTTP_RS` (bench.py sets it when it
//! measures another ref of the workbook). The file's `//!` module doc is dropped so
//! that it can sit inside `mod http { ... }`.
use std::{env, fs, path::PathBuf};

fn main() {
    println!("cargo::rerun-if-env-changed=BENCH_HTTP_RS");
    let manifest = PathBuf::from(env::var("CARGO_MANIFEST_DIR").unwrap());
    let source = env::var("BENCH_HTTP_RS").map(PathBuf::from).unwrap_or_else(|_| manifest.join("../../src/http.rs"));
    println!("cargo::rerun-if-changed={}", source.display());
    let text = fs::read_to_string(&source).unwrap_or_else(|e| panic!("{}: {e}", source.display()));
    let body: String =
        text.lines().filter(|line| !line.trim_start().starts_with("//!")).map(|line| format!("{line}\n")).collect();
    fs::write(PathBuf::from(env::var("OUT_DIR").unwrap()).join("http.rs"), body).unwrap();
}
