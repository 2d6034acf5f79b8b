//! A chapter's transcript: its wire truth, written as Markdown a reader can follow.
//!
//! The book includes the file as it is; the tests and the `check` command parse it
//! and replay it. The format, in full:
//!
//! ````markdown
//! ```console
//! $ cargo run --bin ch05-errors -- --max-body-bytes 1024
//! ```
//!
//! ### A request gets its id back, with its type
//!
//! <!-- hint: An id comes back with its JSON type. Book: chapter 1; spec: 2025-11-25/basic/index.mdx -->
//!
//! Any prose: it is shown in the book and ignored by the replay.
//!
//! ```http
//! POST /mcp HTTP/1.1
//! Content-Type: application/json
//!
//! {"jsonrpc": "2.0", "id": "7", "method": "ping"}
//! ```
//!
//! ```http
//! HTTP/1.1 200 OK
//! Content-Type: application/json
//!
//! {"jsonrpc": "2.0", "id": "7", "result": {}}
//! ```
//! ````
//!
//! - The optional `console` block, before the first exchange, gives the flags the
//!   server is started with (everything after `--`). A second `console` block whose
//!   flags hold `--stdio`, anywhere, gives the stdio exchanges' flags instead (see
//!   below): for a server whose HTTP flags do not apply over stdio (chapter 18).
//! - Each `### ` heading starts an exchange: the first `http` block under it is the
//!   request, sent as written (the replay adds `Host` when it is absent and always
//!   sets `Content-Length`); the second is the response expected.
//! - A response lists only the headers that matter; each must be present with that
//!   value (names compare case-insensitively). Other headers (`Date`, `Server`,
//!   `Content-Length`) are not compared.
//! - A JSON body compares as JSON: key order is free, values are exact. Any other body
//!   compares as text; no body means the response must have none.
//! - A request that no HTTP library would send (a bare LF, two lengths, a version from
//!   the future) is a `raw` block instead of the request's `http` block: it is sent
//!   byte for byte on a connection of its own, which the replay then half-closes: each
//!   line followed by CRLF, the last one too (a server ignores an empty line before a
//!   request, RFC 9112, section 2.2). Inside a line, `\n` and `\r` stand for a bare LF
//!   and a bare CR, `\xHH` for any byte, and `\\` for a backslash.
//! - A response whose body is an event stream (`Content-Type: text/event-stream`) is
//!   written as the server sends it: each event an `event: message` line, a `data:`
//!   line holding one JSON-RPC message, and a blank line. The events compare in order,
//!   each event's name exactly and its data as JSON (key order free, values exact); a
//!   missing or extra event, or framing that does not split into the same events, is a
//!   difference.
//! - A `<!-- client: ... -->` line inside an exchange makes the client do something
//!   while the response streams in, once it has read the response's head and its first
//!   N events: `<!-- client: after 1 event, closes -->` half-closes the connection (the
//!   client sends nothing more); `<!-- client: after 1 event, sends the request below
//!   -->` sends the next request on a connection of its own, which must get the answer
//!   written below it. An exchange may hold several client lines: the actions happen in
//!   the order of the lines, each once the response so far holds its N events (N never
//!   smaller than the line before's; `after 0 events` waits for the head only). The
//!   blocks are then `2 + 2k` `http` blocks for `k` lines that send: the request; for
//!   each line that sends, in order, its request and the answer that one must get; and
//!   last the first request's whole response. After the last action the client reads
//!   on until the server closes the connection: the response is what arrived, however
//!   it ended, but a server that has not closed the connection within the replay's
//!   timeout (10 s) gives no answer at all. A stream that never ends by itself (the
//!   session's own, chapter 17) needs a last action that ends it, such as a `DELETE`
//!   of its session. Blessing (`cargo run -- bless N`) rewrites the last block only:
//!   the answers to the requests sent during the stream are written by hand, and a
//!   replay whose side answer differs says what it got instead.
//!
//!   ````markdown
//!   <!-- client: after 0 events, sends the request below -->
//!   <!-- client: after 1 event, sends the request below -->
//!
//!   ```http
//!   GET /mcp HTTP/1.1            (the request whose response streams)
//!   ```
//!   ```http
//!   POST /mcp HTTP/1.1           (the first line's request ...)
//!   ```
//!   ```http
//!   HTTP/1.1 200 OK              (... and its answer)
//!   ```
//!   ```http
//!   DELETE /mcp HTTP/1.1         (the second line's request ...)
//!   ```
//!   ```http
//!   HTTP/1.1 204 No Content      (... and its answer)
//!   ```
//!   ```http
//!   HTTP/1.1 200 OK              (the GET's whole response)
//!   ```
//!   ````
//! - An `<!-- operator: after N events, tools-off "NAME", then SIGHUP -->` line, among an
//!   exchange's client lines and counted as they are, is the server's operator acting
//!   while the response streams (chapter 17): once N events have come, the replay
//!   writes the file the `console` block's `--tools-off tools-off.txt` names (a
//!   placeholder: the replay gives each server a fresh empty file of its own) with the
//!   names given, one a line (`tools-off none`: the file emptied, every tool on), sends
//!   the server SIGHUP, and waits until the server has written `SIGHUP: reloaded` to
//!   stderr (the base's `RELOADED`). Several names are written `"A" "B"`. It needs the
//!   server the replay started: a `check --url` cannot run it.
//! - `<!-- client: polls until the answer below -->` inside an HTTP exchange makes the
//!   client send its request again, every `POLL_INTERVAL`, until the answer is the one
//!   written, for at most `POLL_TIMEOUT` (`src/replay.rs`): a client polling a task whose
//!   work runs on after its request (chapter 19). The last answer is the one compared.
//!   It takes no other client line.
//! - A `<!-- hint: ... -->` line inside an exchange (one line, an HTML comment, so the
//!   book does not show it) is what `cargo run -- check` prints when a learner's server
//!   gets that exchange wrong: one sentence on the rule, and where the book and the spec
//!   explain it. It sits beside its exchange so the two cannot drift apart.
//!
//! ## stdio exchanges
//!
//! From chapter 9 on, a server also speaks over stdin and stdout. An exchange over
//! stdio is a `stdin` block (the lines a host writes) and a `stdout` block (the lines
//! the server must write back), under its own `### ` heading, in the same file as the
//! HTTP exchanges:
//!
//! ````markdown
//! ### A notification gets no line back
//!
//! ```stdin
//! {"jsonrpc": "2.0", "method": "notifications/initialized"}
//! {"jsonrpc": "2.0", "id": 1, "method": "ping"}
//! ```
//!
//! ```stdout
//! {"jsonrpc":"2.0","id":1,"result":{}}
//! ```
//! ````
//!
//! - Each stdio exchange runs in a fresh process: the chapter's binary, started with
//!   the `console` block's flags followed by `--stdio` (or with the flags of the
//!   `console` block that holds `--stdio`, when there is one). Every line of the `stdin` block
//!   is written to it as it stands (one message per line; a blank line is written as a
//!   blank line), then its stdin is closed.
//! - The `stdout` block holds every line the process must write before it exits, in
//!   order; an empty block means not one line. Each line compares as JSON when it is
//!   JSON (key order free, values exact), else as text.
//! - The process must then exit by itself, successfully: closing stdin is how a host
//!   stops a stdio server. What it writes to stderr is its log: shown when an exchange
//!   fails, never compared.
//! - Input no editor can write (bytes that are not UTF-8, a last line without its
//!   `\n`) is a `raw` block instead of the `stdin` block. Its bytes are written exactly,
//!   with the `raw` block's escapes (`\n`, `\r`, `\xHH`, `\\`), and nothing else: the
//!   block's own line breaks are for the reader, so every line that should end says
//!   `\n`, and the last one may not.
//! - A client that answers a question the server asks (chapter 16) writes in two
//!   turns: a `<!-- client: after 2 lines, writes the lines below -->` line, the
//!   `stdin` block written first, a second `stdin` block written once the server has
//!   written that many lines to stdout, then the `stdout` block. Stdin closes after
//!   the second block. More turns take more such lines, in order, each with a `stdin`
//!   block of its own, written once the server has written its N lines (counted from
//!   the start, N never smaller than the line before's): `k` lines, `k + 1` `stdin`
//!   blocks, then the `stdout` block.
//! - The operator acts on a stdio server too: `<!-- operator: after N lines, tools-off
//!   "NAME", then SIGHUP -->` among the client lines, once the server has written N
//!   lines, as over HTTP; it takes no `stdin` block.

use std::fmt;

/// One transcript file, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Transcript {
    /// Flags the server is started with, from the `console` block.
    pub server_args: Vec<String>,
    /// The HTTP exchanges, in file order.
    pub exchanges: Vec<Exchange>,
    /// The stdio exchanges, in file order.
    pub stdio: Vec<StdioExchange>,
    /// The flags of a `console` block that holds `--stdio`, when there is one.
    pub stdio_server_args: Option<Vec<String>>,
}

impl Transcript {
    /// The flags a stdio exchange's process is started with: the `console` block's,
    /// then `--stdio`.
    pub fn stdio_args(&self) -> Vec<String> {
        if let Some(args) = &self.stdio_server_args {
            return args.clone();
        }
        let mut args = self.server_args.clone();
        args.push("--stdio".to_string());
        args
    }
}

/// One request and the response it must get.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    pub title: String,
    /// The 1-based line of the `### ` heading, for error messages.
    pub line: usize,
    /// The `<!-- hint: ... -->` line, for a learner whose server gets this wrong.
    pub hint: Option<String>,
    pub request: HttpRequest,
    /// For a `raw` block: the bytes to send instead of `request`.
    pub raw: Option<RawRequest>,
    pub expected: HttpResponse,
    /// The `<!-- client: ... -->` lines: what the client does while the response
    /// streams, in order. Empty: it only reads.
    pub during: Vec<During>,
    /// `<!-- client: polls until the answer below -->`: the client sends the request
    /// again, a little later each time, until the answer is the one written (or
    /// `POLL_TIMEOUT` passes), as a client polls a task (chapter 19).
    pub polls: bool,
}

/// The client line that makes an exchange poll ([`Exchange::polls`]).
pub const POLLS: &str = "polls until the answer below";

/// One thing a client does while a response streams in (a `<!-- client: ... -->` line).
#[derive(Debug, Clone, PartialEq)]
pub struct During {
    /// How many events of the response it has read first, counted from its start.
    pub after_events: usize,
    pub action: Interruption,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Interruption {
    /// It closes its side of the connection, and reads on until the server closes.
    Close,
    /// It sends `request` on a connection of its own, which must get `expected`.
    Send { request: HttpRequest, expected: HttpResponse },
    /// The operator (not the client) switches off these tools, all others on, and
    /// sends the server SIGHUP (`<!-- operator: ... -->`, chapter 17).
    ToolsOff(Vec<String>),
}

impl Exchange {
    /// Whether an operator acts during it (`<!-- operator: ... -->`): it needs the
    /// server's `--tools-off` file and its PID.
    pub fn needs_operator(&self) -> bool {
        self.during.iter().any(|during| matches!(during.action, Interruption::ToolsOff(_)))
    }
}

/// A request sent byte for byte (a `raw` block).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawRequest {
    /// The block's lines, as the transcript shows them.
    pub lines: Vec<String>,
    pub bytes: Vec<u8>,
}

/// Lines written to a stdio server and the lines it must write back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioExchange {
    pub title: String,
    /// The 1-based line of the `### ` heading, for error messages.
    pub line: usize,
    /// The `<!-- hint: ... -->` line, for a learner whose server gets this wrong.
    pub hint: Option<String>,
    /// The `stdin` block: each line is written followed by `\n`. For a `raw` block, its
    /// lines as the transcript shows them.
    pub input: Vec<String>,
    /// For a `raw` block: the bytes to write instead of `input`'s lines.
    pub raw: Option<Vec<u8>>,
    /// The `stdout` block: the lines expected, in order, without their `\n`.
    pub expected: Vec<String>,
    /// Lines written later, in turns, each once the server has written enough lines
    /// (the later `stdin` blocks). Empty: all input is written at once.
    pub then: Vec<StdioThen>,
}

/// What a stdio client writes once the server has written `after_lines` lines (a
/// `<!-- client: after N lines, writes the lines below -->` line and a second `stdin`
/// block): the answer to a question the server asked, say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioThen {
    pub after_lines: usize,
    /// The second `stdin` block's lines, each written followed by `\n`.
    pub input: Vec<String>,
    /// An operator line instead (chapter 17): these tools switched off, then SIGHUP;
    /// `input` is empty.
    pub tools_off: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpRequest {
    pub method: String,
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpResponse {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl StdioExchange {
    /// What is written to the server's stdin: the `raw` block's bytes, or each line of
    /// the `stdin` block followed by `\n`.
    pub fn bytes(&self) -> Vec<u8> {
        match &self.raw {
            Some(bytes) => bytes.clone(),
            None => lines_to_bytes(&self.input),
        }
    }

    /// Every line the client writes: the `stdin` block's, then the later ones'.
    pub fn all_input(&self) -> Vec<String> {
        let later = self.then.iter().flat_map(|then| then.input.iter());
        self.input.iter().chain(later).cloned().collect()
    }
}

impl StdioThen {
    pub fn bytes(&self) -> Vec<u8> {
        lines_to_bytes(&self.input)
    }
}

/// Lines as they are written to a stdio server: each followed by `\n`.
fn lines_to_bytes(lines: &[String]) -> Vec<u8> {
    lines.iter().flat_map(|line| line.bytes().chain(Some(b'\n'))).collect()
}

impl HttpRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

impl HttpResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

fn find_header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(key, _)| key.eq_ignore_ascii_case(name)).map(|(_, value)| value.as_str())
}

/// What is wrong with a transcript file, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// A fenced code block: its info string, its lines, and where it sits in the file.
struct Block {
    info: String,
    /// 1-based line of the opening fence.
    line: usize,
    /// 0-based index of the first content line and one past the last.
    content: std::ops::Range<usize>,
}

/// The pieces of a file the parser cares about, in order.
enum Piece {
    Heading { title: String, line: usize },
    Block(Block),
    Hint { text: String, line: usize },
    Client { text: String, line: usize },
}

const HINT_START: &str = "<!-- hint:";
const CLIENT_START: &str = "<!-- client:";
const OPERATOR_START: &str = "<!-- operator:";
/// How an operator line's text is marked among the client lines it is ordered with.
const OPERATOR_MARK: &str = "operator: ";
const HINT_END: &str = "-->";

fn pieces(lines: &[&str]) -> Result<Vec<Piece>, ParseError> {
    let mut pieces = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        if let Some(title) = line.strip_prefix("### ") {
            pieces.push(Piece::Heading { title: title.trim().to_string(), line: index + 1 });
        } else if let Some(hint) = line.trim().strip_prefix(HINT_START) {
            let text = hint.strip_suffix(HINT_END).ok_or_else(|| ParseError {
                line: index + 1,
                message: format!("a hint is one line that ends with `{HINT_END}`"),
            })?;
            pieces.push(Piece::Hint { text: text.trim().to_string(), line: index + 1 });
        } else if let Some(client) = line.trim().strip_prefix(CLIENT_START) {
            let text = client.strip_suffix(HINT_END).ok_or_else(|| ParseError {
                line: index + 1,
                message: format!("a client line is one line that ends with `{HINT_END}`"),
            })?;
            pieces.push(Piece::Client { text: text.trim().to_string(), line: index + 1 });
        } else if let Some(operator) = line.trim().strip_prefix(OPERATOR_START) {
            let text = operator.strip_suffix(HINT_END).ok_or_else(|| ParseError {
                line: index + 1,
                message: format!("an operator line is one line that ends with `{HINT_END}`"),
            })?;
            pieces.push(Piece::Client { text: format!("{OPERATOR_MARK}{}", text.trim()), line: index + 1 });
        } else if let Some(info) = line.strip_prefix("```") {
            let start = index + 1;
            let end = (start..lines.len())
                .find(|&i| lines[i].trim_end() == "```")
                .ok_or_else(|| ParseError { line: index + 1, message: "code block never closed".into() })?;
            pieces.push(Piece::Block(Block { info: info.trim().to_string(), line: index + 1, content: start..end }));
            index = end;
        }
        index += 1;
    }
    Ok(pieces)
}

/// The info strings of the blocks that make up exchanges.
const EXCHANGE_BLOCKS: &[&str] = &["http", "raw", "stdin", "stdout"];

/// Parse a transcript file.
pub fn parse(text: &str) -> Result<Transcript, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut server_args = Vec::new();
    let mut stdio_server_args = None;
    let mut exchanges = Vec::new();
    let mut stdio = Vec::new();
    let mut current: Option<Draft> = None;

    let mut finish = |current: Option<Draft>| -> Result<(), ParseError> {
        let Some(Draft { title, line, hint, mut clients, blocks }) = current else { return Ok(()) };
        let polls = clients.iter().any(|(text, _)| text == POLLS);
        clients.retain(|(text, _)| text != POLLS);
        if polls && !clients.is_empty() {
            return Err(ParseError {
                line,
                message: format!("exchange {title:?}: a client that polls takes no other client line"),
            });
        }
        let infos: Vec<&str> = blocks.iter().map(|b| b.info.as_str()).collect();
        let owned = |block: &Block| lines[block.content.clone()].iter().map(|l| l.to_string()).collect();
        // A stdio client's line names lines, not events; it needs two `stdin` blocks.
        // An operator's line over stdio names lines too, and takes no block.
        let operates_on_stdio = |text: &str| {
            text.strip_prefix(OPERATOR_MARK).is_some_and(|text| text.contains(" line,") || text.contains(" lines,"))
        };
        let writes_later =
            clients.iter().any(|(text, _)| text.ends_with("writes the lines below") || operates_on_stdio(text));
        if writes_later {
            let turns = clients.iter().filter(|(text, _)| !operates_on_stdio(text)).count();
            let shape = infos.len() == turns + 2
                && infos[..=turns].iter().all(|info| *info == "stdin")
                && infos[turns + 1] == "stdout";
            let (Some((first, rest)), true) = (blocks.split_first(), shape) else {
                return Err(ParseError {
                    line,
                    message: format!(
                        "exchange {title:?} writes lines later in {turns} turns: it needs {} stdin blocks, then a stdout \
                         block",
                        turns + 1
                    ),
                });
            };
            let mut then = Vec::new();
            let mut rest = rest.iter();
            for (text, at) in &clients {
                let turn = if operates_on_stdio(text) {
                    let (after_lines, names) = parse_stdio_operator(&text[OPERATOR_MARK.len()..], *at)?;
                    StdioThen { after_lines, input: Vec::new(), tools_off: Some(names) }
                } else {
                    let block = rest.next().expect("a stdin block per writing line: the shape says so");
                    StdioThen { after_lines: parse_stdio_client(text, *at)?, input: owned(block), tools_off: None }
                };
                if then.last().is_some_and(|before: &StdioThen| turn.after_lines < before.after_lines) {
                    return Err(ParseError {
                        line: *at,
                        message: "the client lines go in order of their lines".into(),
                    });
                }
                then.push(turn);
            }
            let (input, expected) = (owned(first), owned(&blocks[turns + 1]));
            stdio.push(StdioExchange { title, line, hint, input, raw: None, expected, then });
            return Ok(());
        }
        let mut during = clients.iter().map(|(text, at)| parse_client(text, *at)).collect::<Result<Vec<_>, _>>()?;
        if let Some(pair) = during.windows(2).find(|pair| pair[1].after_events < pair[0].after_events) {
            return Err(ParseError {
                line,
                message: format!(
                    "exchange {title:?}: a client line after {} events comes after one after {}: they go in order",
                    pair[1].after_events, pair[0].after_events
                ),
            });
        }
        let sends = during.iter().filter(|d| matches!(d.action, Interruption::Send { .. })).count();
        match (infos.as_slice(), blocks.as_slice()) {
            (["stdin", "stdin", "stdout"], _) => {
                return Err(ParseError {
                    line,
                    message: format!(
                        "exchange {title:?} has two stdin blocks: it needs a `<!-- client: after N lines, writes \
                         the lines below -->` line"
                    ),
                });
            }
            ([kind @ ("http" | "raw"), middle @ .., "http"], [request, sides @ .., response])
                if middle.len() == 2 * sends && middle.iter().all(|info| *info == "http") =>
            {
                // Each line that sends takes the next two blocks: its request and its answer.
                let mut sides = sides.chunks(2);
                for During { action, .. } in &mut during {
                    if let Interruption::Send { request, expected } = action {
                        let [side_request, side_response] = sides.next().expect("two blocks per request") else {
                            unreachable!("chunks of two")
                        };
                        *request = parse_request(&lines[side_request.content.clone()], side_request.line)?;
                        *expected = parse_response(&lines[side_response.content.clone()], side_response.line)?;
                    }
                }
                let content = &lines[request.content.clone()];
                let raw = (*kind == "raw")
                    .then(|| raw_request(content, request.line))
                    .transpose()?
                    .map(|bytes| RawRequest { lines: content.iter().map(|l| l.to_string()).collect(), bytes });
                if raw.is_some() && !during.is_empty() {
                    return Err(ParseError {
                        line,
                        message: format!("exchange {title:?}: a raw request takes no client line"),
                    });
                }
                exchanges.push(Exchange {
                    title,
                    line,
                    hint,
                    request: parse_request(content, request.line)?,
                    raw,
                    expected: parse_response(&lines[response.content.clone()], response.line)?,
                    during,
                    polls,
                });
            }
            (["http" | "raw", .., "http"], _) if infos.iter().all(|info| ["http", "raw"].contains(info)) => {
                let plural = if sends == 1 { "" } else { "s" };
                return Err(ParseError {
                    line,
                    message: format!(
                        "exchange {title:?} has {} http blocks, and {sends} client line{plural} that send{}: it needs \
                         {} (the request, a request and its answer for each line that sends, the response)",
                        infos.len(),
                        if sends == 1 { "s" } else { "" },
                        2 + 2 * sends
                    ),
                });
            }
            ([kind @ ("stdin" | "raw"), "stdout"], [input, output]) if during.is_empty() => {
                if input.content.is_empty() {
                    return Err(ParseError { line: input.line, message: format!("empty {kind} block") });
                }
                let raw = (*kind == "raw").then(|| raw_stdin(&lines[input.content.clone()], input.line)).transpose()?;
                let (input, expected) = (owned(input), owned(output));
                stdio.push(StdioExchange { title, line, hint, input, raw, expected, then: Vec::new() });
            }
            _ => {
                return Err(ParseError {
                    line,
                    message: format!(
                        "exchange {title:?} needs an http or raw block (the request) then an http block (the \
                         response), or a stdin block then a stdout block, has {infos:?}"
                    ),
                });
            }
        }
        Ok(())
    };

    for piece in pieces(&lines)? {
        match piece {
            Piece::Heading { title, line } => {
                finish(current.take())?;
                current = Some(Draft { title, line, hint: None, clients: Vec::new(), blocks: Vec::new() });
            }
            Piece::Hint { text, line } => match current.as_mut() {
                Some(Draft { hint: hint @ None, .. }) => *hint = Some(text),
                Some(_) => return Err(ParseError { line, message: "a second hint in one exchange".into() }),
                None => return Err(ParseError { line, message: "hint before the first ### exchange".into() }),
            },
            Piece::Client { text, line } => match current.as_mut() {
                Some(Draft { clients, .. }) => clients.push((text, line)),
                None => return Err(ParseError { line, message: "client line before the first ### exchange".into() }),
            },
            Piece::Block(block) if EXCHANGE_BLOCKS.contains(&block.info.as_str()) => match current.as_mut() {
                Some(Draft { blocks, .. }) => blocks.push(block),
                None => {
                    return Err(ParseError {
                        line: block.line,
                        message: format!("{} block before the first ### exchange", block.info),
                    });
                }
            },
            Piece::Block(block) if block.info == "console" => {
                let args = parse_server_args(&lines[block.content.clone()]);
                if args.iter().any(|arg| arg == "--stdio") {
                    stdio_server_args = Some(args);
                } else if current.is_none() {
                    server_args = args;
                }
            }
            Piece::Block(_) => {} // other code blocks are illustration only
        }
    }
    finish(current.take())?;
    if exchanges.is_empty() && stdio.is_empty() {
        return Err(ParseError { line: 1, message: "no exchange (### heading) found".into() });
    }
    Ok(Transcript { server_args, exchanges, stdio, stdio_server_args })
}

/// An exchange while its lines are being read.
struct Draft {
    title: String,
    line: usize,
    hint: Option<String>,
    /// The `<!-- client: ... -->` lines' texts, and where each is.
    clients: Vec<(String, usize)>,
    blocks: Vec<Block>,
}

/// `after 1 event, closes` or `after 2 events, sends the request below`. (The request
/// itself is filled in from the exchange's blocks.)
fn parse_client(text: &str, line: usize) -> Result<During, ParseError> {
    if let Some(text) = text.strip_prefix(OPERATOR_MARK) {
        return parse_operator(text, line);
    }
    let wrong = || ParseError {
        line,
        message: format!(
            "a client line says `after N event(s), closes` or `after N event(s), sends the request below`, not {text:?}"
        ),
    };
    let rest = text.strip_prefix("after ").ok_or_else(wrong)?;
    let (count, rest) = rest.split_once(' ').ok_or_else(wrong)?;
    let after_events: usize = count.parse().map_err(|_| wrong())?;
    let action = rest.strip_prefix("events,").or_else(|| rest.strip_prefix("event,")).ok_or_else(wrong)?;
    let action = match action.trim() {
        "closes" => Interruption::Close,
        "sends the request below" => Interruption::Send {
            request: HttpRequest { method: String::new(), path: String::new(), headers: vec![], body: String::new() },
            expected: HttpResponse { status: 0, headers: vec![], body: String::new() },
        },
        _ => return Err(wrong()),
    };
    Ok(During { after_events, action })
}

/// `after 2 lines, tools-off "run_payroll", then SIGHUP`: an operator over stdio.
fn parse_stdio_operator(text: &str, line: usize) -> Result<(usize, Vec<String>), ParseError> {
    let as_events = text.replacen(" lines,", " events,", 1).replacen(" line,", " event,", 1);
    let During { after_events, action } = parse_operator(&as_events, line)?;
    let Interruption::ToolsOff(names) = action else { unreachable!("an operator line switches tools off") };
    Ok((after_events, names))
}

/// `after 1 event, tools-off "run_payroll", then SIGHUP` (or `tools-off none`).
fn parse_operator(text: &str, line: usize) -> Result<During, ParseError> {
    let wrong = || ParseError {
        line,
        message: format!(
            "an operator line says `after N event(s), tools-off \"NAME\" ..., then SIGHUP` (or `tools-off none`), \
             not {text:?}"
        ),
    };
    let rest = text.strip_prefix("after ").ok_or_else(wrong)?;
    let (count, rest) = rest.split_once(' ').ok_or_else(wrong)?;
    let after_events: usize = count.parse().map_err(|_| wrong())?;
    let rest = rest.strip_prefix("events,").or_else(|| rest.strip_prefix("event,")).ok_or_else(wrong)?;
    let names =
        rest.trim().strip_prefix("tools-off ").and_then(|r| r.strip_suffix(", then SIGHUP")).ok_or_else(wrong)?;
    let names = match names.trim() {
        "none" => Vec::new(),
        names => names
            .split_whitespace()
            .map(|name| name.strip_prefix('"').and_then(|n| n.strip_suffix('"')).map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .filter(|names| !names.is_empty())
            .ok_or_else(wrong)?,
    };
    Ok(During { after_events, action: Interruption::ToolsOff(names) })
}

/// `after 1 line, writes the lines below`: how many lines the server writes first.
fn parse_stdio_client(text: &str, line: usize) -> Result<usize, ParseError> {
    let count = text
        .strip_prefix("after ")
        .and_then(|rest| {
            rest.strip_suffix(" lines, writes the lines below").or(rest.strip_suffix(" line, writes the lines below"))
        })
        .and_then(|count| count.parse().ok());
    count.ok_or_else(|| ParseError {
        line,
        message: format!("a stdio client line says `after N line(s), writes the lines below`, not {text:?}"),
    })
}

/// `$ cargo run --bin NAME -- --flag value`: the words after `--`.
fn parse_server_args(lines: &[&str]) -> Vec<String> {
    lines
        .iter()
        .filter_map(|line| line.strip_prefix("$ "))
        .filter_map(|command| command.split_once(" -- ").map(|(_, args)| args))
        .flat_map(|args| args.split_whitespace().map(str::to_string))
        .collect()
}

/// A block split into its first line, its headers and its body.
type MessageParts<'a> = (&'a str, Vec<(String, String)>, String);

/// Split a block into its first line, its headers and its body.
fn split_message<'a>(lines: &[&'a str], line: usize) -> Result<MessageParts<'a>, ParseError> {
    let Some((&first, rest)) = lines.split_first() else {
        return Err(ParseError { line, message: "empty http block".into() });
    };
    let blank = rest.iter().position(|l| l.trim().is_empty()).unwrap_or(rest.len());
    let mut headers = Vec::new();
    for (offset, header) in rest[..blank].iter().enumerate() {
        let (name, value) = header.split_once(':').ok_or_else(|| ParseError {
            line: line + 2 + offset,
            message: format!("header without a colon: {header:?}"),
        })?;
        headers.push((name.trim().to_string(), value.trim().to_string()));
    }
    let body = rest.get(blank + 1..).unwrap_or(&[]).join("\n");
    Ok((first, headers, body))
}

fn parse_request(lines: &[&str], line: usize) -> Result<HttpRequest, ParseError> {
    let (first, headers, body) = split_message(lines, line)?;
    let mut words = first.split_whitespace();
    let (Some(method), Some(path)) = (words.next(), words.next()) else {
        return Err(ParseError { line: line + 1, message: format!("expected `METHOD /path HTTP/1.1`, got {first:?}") });
    };
    Ok(HttpRequest { method: method.to_string(), path: path.to_string(), headers, body })
}

/// The bytes of a `raw` block: every line followed by CRLF. Escapes: `\n`, `\r`,
/// `\xHH`, `\\`.
fn raw_request(lines: &[&str], line: usize) -> Result<Vec<u8>, ParseError> {
    let mut bytes = Vec::new();
    for (offset, text) in lines.iter().enumerate() {
        unescape(text, &mut bytes).map_err(|message| ParseError { line: line + 1 + offset, message })?;
        bytes.extend_from_slice(b"\r\n");
    }
    Ok(bytes)
}

/// The bytes of a `raw` block written to stdin: its lines with their escapes, and
/// nothing between them (a line ends where it says `\n`).
fn raw_stdin(lines: &[&str], line: usize) -> Result<Vec<u8>, ParseError> {
    let mut bytes = Vec::new();
    for (offset, text) in lines.iter().enumerate() {
        unescape(text, &mut bytes).map_err(|message| ParseError { line: line + 1 + offset, message })?;
    }
    Ok(bytes)
}

fn unescape(text: &str, bytes: &mut Vec<u8>) -> Result<(), String> {
    let mut rest = text.as_bytes();
    while let Some((&byte, after)) = rest.split_first() {
        rest = after;
        if byte != b'\\' {
            bytes.push(byte);
            continue;
        }
        let (escaped, after) = rest.split_first().ok_or("a line ends in a lone backslash")?;
        rest = after;
        match escaped {
            b'n' => bytes.push(b'\n'),
            b'r' => bytes.push(b'\r'),
            b'\\' => bytes.push(b'\\'),
            b'x' => {
                let hex = rest.get(..2).and_then(|h| std::str::from_utf8(h).ok()).ok_or("\\x needs two hex digits")?;
                bytes.push(u8::from_str_radix(hex, 16).map_err(|_| "\\x needs two hex digits")?);
                rest = &rest[2..];
            }
            other => return Err(format!("unknown escape \\{}", *other as char)),
        }
    }
    Ok(())
}

fn parse_response(lines: &[&str], line: usize) -> Result<HttpResponse, ParseError> {
    let (first, headers, body) = split_message(lines, line)?;
    let status = first
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| ParseError { line: line + 1, message: format!("expected `HTTP/1.1 200 OK`, got {first:?}") })?;
    Ok(HttpResponse { status, headers, body })
}

/// The reason phrase printed after a status code. Only for the reader: the replay
/// compares the number.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        202 => "Accepted",
        204 => "No Content",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        406 => "Not Acceptable",
        408 => "Request Timeout",
        409 => "Conflict",
        413 => "Content Too Large",
        414 => "URI Too Long",
        415 => "Unsupported Media Type",
        417 => "Expectation Failed",
        429 => "Too Many Requests",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        501 => "Not Implemented",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "",
    }
}

/// Write a response block as the transcript shows it.
pub fn format_response(response: &HttpResponse) -> String {
    let mut text = format!("HTTP/1.1 {} {}", response.status, reason(response.status)).trim_end().to_string();
    for (name, value) in &response.headers {
        text.push_str(&format!("\n{name}: {value}"));
    }
    if !response.body.is_empty() {
        text.push_str("\n\n");
        text.push_str(&response.body);
    }
    text
}

/// Replace every exchange's response block with `responses[i]`, leaving everything
/// else in the file as it was. This is how a transcript is blessed.
pub fn replace_responses(text: &str, responses: &[HttpResponse]) -> Result<String, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let blocks = exchange_blocks(&lines, "http")?;
    let texts: Vec<String> = responses.iter().map(format_response).collect();
    replace_blocks(&lines, &blocks, &texts, "response")
}

/// Replace every stdio exchange's `stdout` block with `outputs[i]` (the lines a
/// server wrote), leaving everything else in the file as it was.
pub fn replace_stdout(text: &str, outputs: &[Vec<String>]) -> Result<String, ParseError> {
    let lines: Vec<&str> = text.lines().collect();
    let blocks = exchange_blocks(&lines, "stdout")?;
    let texts: Vec<String> = outputs.iter().map(|output| output.join("\n")).collect();
    replace_blocks(&lines, &blocks, &texts, "stdout")
}

/// In each exchange, the content of its last block (the answer: the second of two, the
/// last of `2 + 2k`), when it has this info string.
fn exchange_blocks(lines: &[&str], info: &str) -> Result<Vec<std::ops::Range<usize>>, ParseError> {
    let mut found = Vec::new();
    let mut current: Vec<Block> = Vec::new();
    let mut finish = |blocks: &mut Vec<Block>| {
        if blocks.len() >= 2
            && let Some(last) = blocks.pop()
            && last.info == info
        {
            found.push(last.content);
        }
        blocks.clear();
    };
    let mut in_exchange = false;
    for piece in pieces(lines)? {
        match piece {
            Piece::Heading { .. } => {
                finish(&mut current);
                in_exchange = true;
            }
            Piece::Block(block) if in_exchange && EXCHANGE_BLOCKS.contains(&block.info.as_str()) => current.push(block),
            Piece::Block(_) | Piece::Hint { .. } | Piece::Client { .. } => {}
        }
    }
    finish(&mut current);
    Ok(found)
}

/// Put `texts[i]` in place of the lines `blocks[i]`; an empty text empties the block.
fn replace_blocks(
    lines: &[&str],
    blocks: &[std::ops::Range<usize>],
    texts: &[String],
    what: &str,
) -> Result<String, ParseError> {
    if blocks.len() != texts.len() {
        return Err(ParseError {
            line: 1,
            message: format!("{} {what} blocks but {} {what}s", blocks.len(), texts.len()),
        });
    }
    let mut out = String::new();
    let mut next = 0;
    for (range, text) in blocks.iter().zip(texts) {
        for line in &lines[next..range.start] {
            out.push_str(line);
            out.push('\n');
        }
        if !text.is_empty() {
            out.push_str(text);
            out.push('\n');
        }
        next = range.end;
    }
    for line in &lines[next..] {
        out.push_str(line);
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "Intro.\n\n```console\n$ cargo run --bin ch05-errors -- --max-body-bytes 1024\n```\n\n\
### Ping\n\n<!-- hint: ping is answered. -->\nProse.\n\n```http\nPOST /mcp HTTP/1.1\nContent-Type: application/json\n\n{\"id\": 1}\n```\n\n\
```http\nHTTP/1.1 200 OK\nContent-Type: application/json\n\n{\n  \"id\": 1\n}\n```\n\n\
### Notification\n\n```http\nPOST /mcp HTTP/1.1\n\n{}\n```\n\n```http\nHTTP/1.1 202 Accepted\n```\n";

    #[test]
    fn parses_exchanges_args_and_bodies() {
        let transcript = parse(SAMPLE).unwrap();
        assert_eq!(transcript.server_args, ["--max-body-bytes", "1024"]);
        assert_eq!(transcript.exchanges.len(), 2);
        let ping = &transcript.exchanges[0];
        assert_eq!(ping.title, "Ping");
        assert_eq!(ping.line, 7);
        assert_eq!(ping.hint.as_deref(), Some("ping is answered."));
        assert_eq!(ping.request.method, "POST");
        assert_eq!(ping.request.header("content-type"), Some("application/json"));
        assert_eq!(ping.request.body, "{\"id\": 1}");
        assert_eq!(ping.expected.status, 200);
        assert_eq!(ping.expected.body, "{\n  \"id\": 1\n}");
        let notification = &transcript.exchanges[1];
        assert_eq!(notification.expected.status, 202);
        assert_eq!(notification.hint, None);
        assert!(notification.expected.headers.is_empty());
        assert_eq!(notification.expected.body, "");
    }

    /// A chapter that needs a cargo feature is run with it (`--features authorization`):
    /// the server's flags are still the words after `--`.
    #[test]
    fn the_server_flags_follow_cargo_flags_and_the_double_dash() {
        let lines = ["$ cargo run --features authorization --bin ch18-authorization -- --resource http://a/mcp"];
        assert_eq!(parse_server_args(&lines), ["--resource", "http://a/mcp"]);
    }

    #[test]
    fn an_exchange_without_a_response_is_an_error() {
        let error = parse("### Lonely\n\n```http\nGET /mcp HTTP/1.1\n```\n").unwrap_err();
        assert_eq!(error.line, 1);
        assert!(error.message.contains("then an http block (the response)"), "{error}");
    }

    #[test]
    fn a_hint_is_one_line_inside_an_exchange() {
        let error = parse("### A\n\n<!-- hint: two\nlines -->\n").unwrap_err();
        assert_eq!((error.line, error.message.contains("one line")), (3, true), "{error}");
        let error = parse("<!-- hint: too early -->\n### A\n").unwrap_err();
        assert!(error.message.contains("before the first"), "{error}");
    }

    #[test]
    fn replacing_responses_keeps_everything_else() {
        let responses = [
            HttpResponse {
                status: 200,
                headers: vec![("Content-Type".into(), "application/json".into())],
                body: "{\"id\": 2}".into(),
            },
            HttpResponse { status: 202, headers: vec![], body: String::new() },
        ];
        let blessed = replace_responses(SAMPLE, &responses).unwrap();
        assert_eq!(blessed, SAMPLE.replace("{\n  \"id\": 1\n}\n```", "{\"id\": 2}\n```"));
        assert_eq!(parse(&blessed).unwrap().exchanges[0].expected.body, "{\"id\": 2}");
    }

    const STDIO_SAMPLE: &str = "```console\n$ cargo run --bin ch09-stdio -- --workers 2\n```\n\n\
### Over HTTP\n\n```http\nPOST /mcp HTTP/1.1\n\n{}\n```\n\n```http\nHTTP/1.1 202 Accepted\n```\n\n\
### A notification, then a ping\n\nProse.\n\n```stdin\n{\"jsonrpc\": \"2.0\", \"method\": \"n\"}\n\n\
{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"}\n```\n\n```stdout\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n```\n\n\
### Silence\n\n```stdin\n{\"jsonrpc\": \"2.0\", \"method\": \"n\"}\n```\n\n```stdout\n```\n";

    #[test]
    fn a_console_block_with_stdio_gives_the_stdio_exchanges_their_own_flags() {
        assert_eq!(parse(STDIO_SAMPLE).unwrap().stdio_args(), ["--workers", "2", "--stdio"]);
        let own = STDIO_SAMPLE.replace(
            "### A notification, then a ping",
            "```console\n$ cargo run --bin ch09-stdio -- --stdio --max-calls-per-minute 5\n```\n\n### A notification, then a ping",
        );
        let transcript = parse(&own).unwrap();
        assert_eq!(transcript.server_args, ["--workers", "2"]);
        assert_eq!(transcript.stdio_args(), ["--stdio", "--max-calls-per-minute", "5"]);
    }

    #[test]
    fn parses_stdio_exchanges_next_to_http_ones() {
        let transcript = parse(STDIO_SAMPLE).unwrap();
        assert_eq!(transcript.exchanges.len(), 1);
        assert_eq!(transcript.exchanges[0].title, "Over HTTP");
        assert_eq!(transcript.stdio.len(), 2);
        let ping = &transcript.stdio[0];
        assert_eq!(ping.title, "A notification, then a ping");
        assert_eq!(ping.line, 17);
        // Lines are kept as they stand, the blank one too: it is written as a blank line.
        assert_eq!(
            ping.input,
            [r#"{"jsonrpc": "2.0", "method": "n"}"#, "", r#"{"jsonrpc": "2.0", "id": 1, "method": "ping"}"#]
        );
        assert_eq!(ping.expected, [r#"{"jsonrpc":"2.0","id":1,"result":{}}"#]);
        // An empty stdout block: the server must write nothing at all.
        assert!(transcript.stdio[1].expected.is_empty());
        assert_eq!(transcript.stdio_args(), ["--workers", "2", "--stdio"]);
    }

    #[test]
    fn a_raw_block_writes_stdin_byte_for_byte() {
        let text = "### Bytes\n\n```raw\n{\"id\": 1}\\n\n\\xff\\n\nlast\n```\n\n```stdout\ny\n```\n";
        let transcript = parse(text).unwrap();
        let exchange = &transcript.stdio[0];
        assert_eq!(exchange.input, [r#"{"id": 1}\n"#, r"\xff\n", "last"]);
        assert_eq!(exchange.bytes(), b"{\"id\": 1}\n\xff\nlast");
        // A stdin block's lines each end in a newline.
        let plain = parse("### Lines\n\n```stdin\na\nb\n```\n\n```stdout\n```\n").unwrap();
        assert_eq!(plain.stdio[0].bytes(), b"a\nb\n");
    }

    #[test]
    fn an_exchange_that_polls() {
        let request = "```http\nPOST /mcp HTTP/1.1\n\n{}\n```\n\n```http\nHTTP/1.1 200 OK\n```\n";
        let text =
            format!("### Polls\n\n<!-- client: polls until the answer below -->\n\n{request}### Once\n\n{request}");
        let transcript = parse(&text).unwrap();
        assert_eq!((transcript.exchanges[0].polls, transcript.exchanges[0].during.len()), (true, 0));
        assert!(!transcript.exchanges[1].polls);
        let both = format!(
            "### A\n\n<!-- client: polls until the answer below -->\n<!-- client: after 1 event, closes -->\n\n{request}"
        );
        let error = parse(&both).unwrap_err();
        assert!(error.message.contains("a client that polls takes no other client line"), "{error:?}");
    }

    #[test]
    fn a_stdio_client_can_write_in_two_turns() {
        let text = "### Asked\n\n<!-- client: after 2 lines, writes the lines below -->\n\n\
                    ```stdin\na\nb\n```\n\n```stdin\nc\n```\n\n```stdout\nx\ny\nz\n```\n";
        let exchange = &parse(text).unwrap().stdio[0];
        assert_eq!(exchange.bytes(), b"a\nb\n");
        assert_eq!(exchange.then, [StdioThen { after_lines: 2, input: vec!["c".into()], tools_off: None }]);
        assert_eq!(exchange.all_input(), ["a", "b", "c"]);
        // Three turns: two lines, three stdin blocks.
        let text = "### Asked twice\n\n<!-- client: after 1 line, writes the lines below -->\n\
                    <!-- client: after 3 lines, writes the lines below -->\n\n\
                    ```stdin\na\n```\n\n```stdin\nb\n```\n\n```stdin\nc\n```\n\n```stdout\nx\n```\n";
        let exchange = &parse(text).unwrap().stdio[0];
        let turns: Vec<(usize, &[String])> =
            exchange.then.iter().map(|t| (t.after_lines, t.input.as_slice())).collect();
        assert_eq!(turns, [(1, &["b".to_string()][..]), (3, &["c".to_string()][..])]);
        assert_eq!(exchange.all_input(), ["a", "b", "c"]);
        // Two lines need three stdin blocks, and go in order.
        assert!(parse(&text.replace("```stdin\nc\n```\n\n", "")).is_err());
        assert!(parse(&text.replace("after 3 lines", "after 0 lines")).is_err());
        // Two stdin blocks need the client line, and the line needs them.
        assert!(parse("### Two\n\n```stdin\na\n```\n\n```stdin\nc\n```\n\n```stdout\n```\n").is_err());
        let lonely =
            "### One\n\n<!-- client: after 1 line, writes the lines below -->\n\n```stdin\na\n```\n\n```stdout\n```\n";
        assert!(parse(lonely).is_err());
    }

    /// An operator line: tools switched off, then SIGHUP, ordered among the client lines.
    #[test]
    fn an_operator_switches_tools_off_during_a_stream() {
        let text = "### Off\n\n<!-- operator: after 0 events, tools-off \"a\" \"b\", then SIGHUP -->\n\
                    <!-- operator: after 0 events, tools-off none, then SIGHUP -->\n\
                    <!-- client: after 1 event, closes -->\n\n```http\nGET /mcp HTTP/1.1\n```\n\n\
                    ```http\nHTTP/1.1 200 OK\n```\n";
        let during = &parse(text).unwrap().exchanges[0].during;
        let names = |names: &[&str]| Interruption::ToolsOff(names.iter().map(|n| n.to_string()).collect());
        assert_eq!(during[0].action, names(&["a", "b"]));
        assert_eq!(during[1].action, names(&[]));
        assert_eq!((during[2].after_events, &during[2].action), (1, &Interruption::Close));
        for wrong in ["tools-off a, then SIGHUP", "tools-off \"a\"", "tools-off , then SIGHUP"] {
            let text = text.replace("tools-off none, then SIGHUP", wrong);
            assert!(parse(&text).is_err(), "{wrong}");
        }
        // Over stdio it counts lines, and takes no stdin block of its own.
        let stdio = "### Off\n\n<!-- operator: after 1 line, tools-off \"a\", then SIGHUP -->\n\
                     <!-- client: after 2 lines, writes the lines below -->\n\n```stdin\nx\n```\n\n\
                     ```stdin\ny\n```\n\n```stdout\n```\n";
        let then = &parse(stdio).unwrap().stdio[0].then;
        assert_eq!(then[0], StdioThen { after_lines: 1, input: Vec::new(), tools_off: Some(vec!["a".into()]) });
        assert_eq!(then[1], StdioThen { after_lines: 2, input: vec!["y".into()], tools_off: None });
    }

    /// An exchange whose client acts twice while the answer streams: a request, then a
    /// half-close; and one that sends twice, each request with its answer.
    #[test]
    fn a_client_can_act_several_times_during_a_stream() {
        let http = |first: &str| format!("```http\n{first}\n```\n\n");
        let text = format!(
            "### Twice\n\n<!-- client: after 0 events, sends the request below -->\n\
             <!-- client: after 1 event, sends the request below -->\n\n{}{}{}{}{}{}",
            http("GET /mcp HTTP/1.1"),
            http("POST /mcp HTTP/1.1\n\n{\"id\": 1}"),
            http("HTTP/1.1 200 OK"),
            http("DELETE /mcp HTTP/1.1"),
            http("HTTP/1.1 204 No Content"),
            http("HTTP/1.1 200 OK\nContent-Type: text/event-stream"),
        );
        let exchange = &parse(&text).unwrap().exchanges[0];
        assert_eq!(exchange.request.method, "GET");
        assert_eq!(exchange.expected.header("content-type"), Some("text/event-stream"));
        let sent: Vec<(usize, &str, u16)> = exchange
            .during
            .iter()
            .map(|during| match &during.action {
                Interruption::Send { request, expected } => {
                    (during.after_events, request.method.as_str(), expected.status)
                }
                Interruption::Close | Interruption::ToolsOff(_) => panic!("both lines send"),
            })
            .collect();
        assert_eq!(sent, [(0, "POST", 200), (1, "DELETE", 204)]);

        // A send and then a close: the close takes no blocks.
        let text = format!(
            "### Then closes\n\n<!-- client: after 0 events, sends the request below -->\n\
             <!-- client: after 2 events, closes -->\n\n{}{}{}{}",
            http("GET /mcp HTTP/1.1"),
            http("POST /mcp HTTP/1.1"),
            http("HTTP/1.1 202 Accepted"),
            http("HTTP/1.1 200 OK"),
        );
        let exchange = &parse(&text).unwrap().exchanges[0];
        assert_eq!(exchange.during.len(), 2);
        assert_eq!((exchange.during[1].after_events, &exchange.during[1].action), (2, &Interruption::Close));

        // Blocks that do not fit the lines, and lines out of order, are errors.
        let two_lines = "### A\n\n<!-- client: after 0 events, sends the request below -->\n\
                         <!-- client: after 1 event, sends the request below -->\n\n";
        let four = format!("{two_lines}{}", http("GET /mcp HTTP/1.1").repeat(3) + &http("HTTP/1.1 200 OK"));
        let error = parse(&four).unwrap_err();
        assert!(error.message.contains("it needs 6"), "{error}");
        let backwards = "### A\n\n<!-- client: after 2 events, closes -->\n<!-- client: after 1 event, closes -->\n\n";
        let error = parse(&format!("{backwards}{}{}", http("GET /mcp HTTP/1.1"), http("HTTP/1.1 200 OK"))).unwrap_err();
        assert!(error.message.contains("in order"), "{error}");
        // Four blocks without a line that sends, as before.
        let error =
            parse(&format!("### A\n\n{}", http("GET /mcp HTTP/1.1").repeat(3) + &http("HTTP/1.1 200 OK"))).unwrap_err();
        assert!(error.message.contains("it needs 2"), "{error}");
    }

    /// Blessing rewrites the last block of an exchange with several actions, and leaves
    /// the answers to the requests sent during the stream as written.
    #[test]
    fn replacing_responses_keeps_the_answers_sent_during_a_stream() {
        let text = "### A\n\n<!-- client: after 0 events, sends the request below -->\n\n\
                    ```http\nGET /mcp HTTP/1.1\n```\n\n```http\nDELETE /mcp HTTP/1.1\n```\n\n\
                    ```http\nHTTP/1.1 204 No Content\n```\n\n```http\nHTTP/1.1 200 OK\n```\n";
        let response = HttpResponse { status: 405, headers: vec![], body: String::new() };
        let blessed = replace_responses(text, &[response]).unwrap();
        assert_eq!(
            blessed,
            text.replace("```http\nHTTP/1.1 200 OK\n```", "```http\nHTTP/1.1 405 Method Not Allowed\n```")
        );
    }

    #[test]
    fn a_stdio_only_transcript_is_fine() {
        let transcript = parse("### Ping\n\n```stdin\nx\n```\n\n```stdout\ny\n```\n").unwrap();
        assert!(transcript.exchanges.is_empty());
        assert_eq!(transcript.stdio.len(), 1);
        assert_eq!(transcript.stdio_args(), ["--stdio"]);
    }

    #[test]
    fn mixed_or_misordered_blocks_are_errors() {
        for (text, why) in [
            ("### A\n\n```stdout\ny\n```\n\n```stdin\nx\n```\n", "stdout before stdin"),
            ("### A\n\n```http\nPOST /mcp HTTP/1.1\n```\n\n```stdout\ny\n```\n", "http then stdout"),
            ("### A\n\n```stdin\nx\n```\n", "stdin without stdout"),
            ("### A\n\n```stdin\nx\n```\n\n```stdout\n```\n\n```stdout\n```\n", "two stdout blocks"),
        ] {
            let error = parse(text).expect_err(why);
            assert_eq!(error.line, 1, "{why}: {error}");
            assert!(error.message.contains("stdin block then a stdout block"), "{why}: {error}");
        }
        let error = parse("### A\n\n```stdin\n```\n\n```stdout\n```\n").unwrap_err();
        assert_eq!((error.line, error.message.as_str()), (3, "empty stdin block"));
        let error = parse("```stdin\nx\n```\n### A\n").unwrap_err();
        assert_eq!((error.line, error.message.as_str()), (1, "stdin block before the first ### exchange"));
    }

    #[test]
    fn replacing_stdout_keeps_everything_else() {
        let outputs = vec![vec![r#"{"id":2}"#.to_string()], vec!["a".to_string(), "b".to_string()]];
        let blessed = replace_stdout(STDIO_SAMPLE, &outputs).unwrap();
        let expected = STDIO_SAMPLE
            .replace("```stdout\n{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n```", "```stdout\n{\"id\":2}\n```")
            .replace("```stdout\n```", "```stdout\na\nb\n```");
        assert_eq!(blessed, expected);
        // The HTTP response block is not a stdout block: it is left alone.
        assert_eq!(parse(&blessed).unwrap().exchanges, parse(STDIO_SAMPLE).unwrap().exchanges);
        // And an output with no lines empties a block again.
        let emptied = replace_stdout(&blessed, &[vec![], vec![]]).unwrap();
        assert!(parse(&emptied).unwrap().stdio.iter().all(|e| e.expected.is_empty()));
        assert!(replace_stdout(STDIO_SAMPLE, &[vec![]]).is_err());
        // Blessing the HTTP responses does not touch the stdio blocks.
        let http = [HttpResponse { status: 202, headers: vec![], body: String::new() }];
        assert_eq!(replace_responses(STDIO_SAMPLE, &http).unwrap(), STDIO_SAMPLE);
    }
}
