//! The benchmark's ceiling: the workbook's own HTTP base (`src/http.rs`, compiled in
//! as it is, by build.rs) answering every request with one fixed response, the bytes a PingME
//! call returns. No JSON is parsed, nothing is dispatched: whatever a real server
//! does above the base can only make it slower than this.
//!
//! `bench-ceiling [--bind ADDR] [--workers N]` (defaults 127.0.0.1:8080, 1 worker).

#[allow(dead_code)] // the base carries helpers the ceiling has no use for
mod http {
    include!(concat!(env!("OUT_DIR"), "/http.rs"));
}

use http::{Config, Response};

/// What the starter answers to `tools/call PingME` with `"id": 1`.
const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"BISMILLAH"}]}}"#;

fn main() -> std::io::Result<()> {
    let mut bind = "127.0.0.1:8080".to_string();
    let mut config = Config::default();
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--bind" => bind = value,
            "--workers" => config.workers = value.parse().unwrap_or_else(|_| usage("--workers takes a number")),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    http::serve(&bind, config, |_request| Response::json(200, BODY.to_string()))
}

fn usage(problem: &str) -> ! {
    eprintln!("bench-ceiling: {problem}\nusage: bench-ceiling [--bind ADDR] [--workers N]");
    std::process::exit(2)
}
