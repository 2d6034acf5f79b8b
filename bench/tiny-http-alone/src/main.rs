//! The benchmark's true ceiling: `tiny_http` 0.12 alone, clients talking to it directly
//! with no door in front, its worker threads answering every request with the fixed
//! bytes a PingME call returns. No JSON is parsed, nothing is checked: the workbook's
//! base can only be slower than this, and the difference is what the door costs.
//!
//! `bench-tiny-http-alone [--bind ADDR] [--workers N]` (defaults 127.0.0.1:8080, 1 worker).

use std::sync::Arc;
use std::thread;

/// What the starter answers to `tools/call PingME` with `"id": 1`.
const BODY: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"BISMILLAH"}]}}"#;

fn main() {
    let mut bind = "127.0.0.1:8080".to_string();
    let mut workers = 1;
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_else(|| usage(&format!("{flag} needs a value")));
        match flag.as_str() {
            "--bind" => bind = value,
            "--workers" => workers = value.parse().unwrap_or_else(|_| usage("--workers takes a number")),
            _ => usage(&format!("unknown flag {flag}")),
        }
    }
    let server = Arc::new(tiny_http::Server::http(&bind).unwrap_or_else(|e| usage(&format!("cannot listen: {e}"))));
    println!("listening on http://{}/mcp", server.server_addr());
    let content_type = tiny_http::Header::from_bytes("Content-Type", "application/json").expect("ASCII");
    let threads: Vec<_> = (0..workers)
        .map(|_| {
            let (server, content_type) = (server.clone(), content_type.clone());
            thread::spawn(move || {
                for mut request in server.incoming_requests() {
                    let mut body = Vec::new();
                    let _ = request.as_reader().read_to_end(&mut body);
                    let response = tiny_http::Response::from_string(BODY).with_header(content_type.clone());
                    let _ = request.respond(response);
                }
            })
        })
        .collect();
    for thread in threads {
        let _ = thread.join();
    }
}

fn usage(problem: &str) -> ! {
    eprintln!("bench-tiny-http-alone: {problem}\nusage: bench-tiny-http-alone [--bind ADDR] [--workers N]");
    std::process::exit(2)
}
