//! How a message travels on each transport (`2025-11-25/basic/transports.mdx`). Over
//! HTTP a request's body is one JSON message, and its answer is one too, as
//! `application/json` or as a server-sent event (`text/event-stream`), whichever the
//! client's `Accept` allows. Over stdio a message is one line. Only the HTTP base below.

use std::io;
use std::io::Write;

use crate::http::Response;

// ANCHOR: headers
/// How the client will read the response to a request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Format {
    /// `Content-Type: application/json`, one JSON-RPC response.
    Json,
    /// `Content-Type: text/event-stream`, the same response as one server-sent event.
    EventStream,
}

/// Read `Accept`: JSON when it allows JSON, an event stream when it allows only that,
/// `None` when it allows neither. No `Accept` at all means anything goes.
pub fn response_format(accept: Option<&str>) -> Option<Format> {
    let Some(accept) = accept else { return Some(Format::Json) };
    if weight(accept, "application/json") > 0.0 {
        Some(Format::Json)
    } else if weight(accept, "text/event-stream") > 0.0 {
        Some(Format::EventStream)
    } else {
        None
    }
}

/// Whether `Accept` allows an event stream, which a long call's answer may then be.
/// No `Accept` at all means anything goes.
pub fn allows_event_stream(accept: Option<&str>) -> bool {
    let Some(accept) = accept else { return true };
    weight(accept, "text/event-stream") > 0.0
}

/// The weight `Accept` gives `media_type`: 0 is "not acceptable", up to 1, the default
/// (RFC 9110, section 12.4.2). `Accept` is a list of media ranges, each with optional
/// parameters, and the range that decides is the most specific one that names the type:
/// the type itself, then `type/*`, then `*/*` (section 12.5.1). So
/// `*/*, application/json;q=0` refuses JSON and allows everything else. No range: 0.
fn weight(accept: &str, media_type: &str) -> f64 {
    let any_subtype = format!("{}/*", media_type.split('/').next().unwrap_or_default());
    let most_specific_first = [media_type, any_subtype.as_str(), "*/*"];
    accept
        .split(',')
        .filter_map(|range| {
            let mut parts = range.split(';');
            let media = parts.next()?.trim().to_ascii_lowercase();
            let rank = most_specific_first.iter().position(|name| *name == media)?;
            // A number: `q=0.0` is 0 too. One that is no number is ignored.
            let q = parts
                .filter_map(|p| p.split_once('='))
                .find(|(name, _)| name.trim().eq_ignore_ascii_case("q"))
                .map_or(1.0, |(_, value)| value.trim().parse().unwrap_or(1.0));
            Some((rank, q))
        })
        .min_by_key(|&(rank, _)| rank) // of two ranges alike, the first
        .map_or(0.0, |(_, q)| q)
}

impl Format {
    /// Put a JSON response in the form the client asked for.
    pub fn wrap(self, response: Response) -> Response {
        match self {
            Format::Json => response,
            // One event named `message` whose data is the JSON-RPC response, then a
            // blank line; the stream ends with the response.
            Format::EventStream => {
                let body = event(&response.body);
                Response::empty(response.status).with_header("Content-Type", "text/event-stream").with_body(body)
            }
        }
    }
}

/// One server-sent event: named `message`, its data one JSON-RPC message on one line,
/// then a blank line that ends it.
pub fn event(message: &[u8]) -> Vec<u8> {
    let mut bytes = b"event: message\ndata: ".to_vec();
    bytes.extend_from_slice(message);
    bytes.extend_from_slice(b"\n\n");
    bytes
}

/// `application/json`, in any case, with or without parameters such as `charset`.
pub fn is_json(content_type: Option<&str>) -> bool {
    let media = content_type.and_then(|value| value.split(';').next()).unwrap_or("");
    media.trim().eq_ignore_ascii_case("application/json")
}
// ANCHOR_END: headers

// ANCHOR: write_line
/// Write one message to stdout as one line, at once. serde_json writes no raw newline
/// (one inside a string is `\n`), so one message stays one line; the lock keeps the
/// lines of calls running side by side apart.
pub fn write_line(message: &[u8]) -> io::Result<()> {
    let mut output = io::stdout().lock();
    output.write_all(message)?;
    output.write_all(b"\n")?;
    output.flush() // the host is waiting for this line now, not later
}
// ANCHOR_END: write_line
