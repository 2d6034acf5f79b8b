//! A response body read as a server-sent event stream ([`events`]), so that a
//! streamed answer compares event by event.

/// One server-sent event: its name (`event:`) and its data (`data:`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub name: String,
    pub data: String,
}

/// A body read as an event stream: events apart by a blank line, each line a field
/// (`event: message`, `data: {...}`; several `data` lines join with a newline, as the
/// HTML standard's event stream does). `None` when the body is not one: empty, or a
/// line that is no field of an event. An empty body is no stream.
pub fn events(body: &str) -> Option<Vec<Event>> {
    let body = body.replace("\r\n", "\n");
    if body.trim().is_empty() {
        return None;
    }
    let mut events = Vec::new();
    for block in body.trim_end_matches('\n').split("\n\n") {
        let (mut name, mut data): (Option<String>, Vec<&str>) = (None, Vec::new());
        for line in block.lines() {
            match line.split_once(':') {
                Some(("event", value)) => name = Some(value.strip_prefix(' ').unwrap_or(value).to_string()),
                Some(("data", value)) => data.push(value.strip_prefix(' ').unwrap_or(value)),
                Some(("id" | "retry", _)) | Some(("", _)) => {} // an id, a retry time, a comment
                _ => return None,
            }
        }
        events.push(Event { name: name.unwrap_or_else(|| "message".into()), data: data.join("\n") });
    }
    Some(events)
}
