//! Chapter 9's stdio, where a transcript cannot show it: bytes that are not UTF-8, a
//! last line with no newline, the HTTP flags refused next to `--stdio`, and a token in
//! the environment that does not apply. (A transcript's lines are UTF-8 text, each
//! written with its `\n`, and its server starts with the flags it lists.)

use std::io::Write;
use std::process::{Command, Output, Stdio};

const BINARY: &str = env!("CARGO_BIN_EXE_ch09-stdio");

/// Run `ch09-stdio ARGS`, write `input` to its stdin as it is, close stdin, and
/// collect everything.
fn run(args: &[&str], env: &[(&str, &str)], input: &[u8]) -> Output {
    let mut child = Command::new(BINARY)
        .args(args)
        .env_remove("MCP_WORKBOOK_TOKEN")
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the chapter binary starts");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input).unwrap();
    drop(stdin); // end of input: the server must exit by itself
    child.wait_with_output().unwrap()
}

fn stdout_lines(output: &Output) -> Vec<serde_json::Value> {
    String::from_utf8(output.stdout.clone())
        .expect("stdout is UTF-8")
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{line:?} is not one JSON message: {e}")))
        .collect()
}

const PING: &str = r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#;

#[test]
fn a_line_that_is_not_utf8_is_a_parse_error_and_the_server_goes_on() {
    let mut input = b"{\"jsonrpc\": \"2.0\", \"id\": \"\xff\xfe\", \"method\": \"ping\"}\n".to_vec();
    input.extend_from_slice(format!("{PING}\n").as_bytes());
    let output = run(&["--stdio"], &[], &input);
    assert!(output.status.success());
    let lines = stdout_lines(&output);
    assert_eq!(lines.len(), 2, "{lines:?}");
    // No id could be read: over stdio the error has no `id` member at all (not `null`).
    assert_eq!(lines[0].get("id"), None, "{:?}", lines[0]);
    assert_eq!(lines[0]["error"]["code"], -32700);
    assert_eq!(lines[1], serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}}));
}

#[test]
fn a_last_line_without_newline_is_still_answered() {
    let output = run(&["--stdio"], &[], PING.as_bytes());
    assert!(output.status.success());
    assert_eq!(stdout_lines(&output), [serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
}

#[test]
fn a_windows_line_ending_is_fine() {
    // `\r` is JSON whitespace: the line parses as it is.
    let output = run(&["--stdio"], &[], format!("{PING}\r\n").as_bytes());
    assert_eq!(stdout_lines(&output), [serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
}

#[test]
fn nothing_but_messages_on_stdout_and_the_log_on_stderr() {
    let input = format!("{PING}\n{{\"jsonrpc\": \"2.0\", \"method\": \"notifications/initialized\"}}\n");
    let output = run(&["--stdio"], &[], input.as_bytes());
    assert_eq!(stdout_lines(&output).len(), 1);
    let log = String::from_utf8_lossy(&output.stderr);
    assert!(log.contains("serving MCP on stdin/stdout"), "{log}");
    assert!(log.contains(r#"notification: "notifications/initialized""#), "{log}");
    assert!(log.contains("stdin closed: exiting"), "{log}");
}

#[test]
fn the_http_flags_do_not_go_with_stdio() {
    for flags in [
        &["--bind", "127.0.0.1:0"][..],
        &["--token", "secret"],
        &["--allowed-origin", "https://app.example.com"],
        &["--allowed-host", "mcp.example.com"],
        &["--workers", "2"],
        &["--max-body-bytes", "1024"],
    ] {
        let output = run(&[&["--stdio"], flags].concat(), &[], b"");
        assert_eq!(output.status.code(), Some(2), "--stdio {flags:?} was accepted");
        assert!(output.stdout.is_empty(), "--stdio {flags:?} wrote to stdout");
        let error = String::from_utf8_lossy(&output.stderr);
        assert!(error.contains("cannot be used with"), "--stdio {flags:?}: {error}");
    }
}

#[test]
fn a_token_in_the_environment_does_not_apply_over_stdio() {
    // Only the process that started the server can write to its stdin: there is no
    // one to ask for a token (`2025-11-25/basic/authorization.mdx`: stdio servers
    // take their credentials from the environment instead of this flow).
    let output = run(&["--stdio"], &[("MCP_WORKBOOK_TOKEN", "secret")], format!("{PING}\n").as_bytes());
    assert_eq!(stdout_lines(&output), [serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {}})]);
}
