//! stdio: one process per exchange, lines in, lines out. [`run_stdio_for`] starts a
//! chapter's server for one exchange, writes its lines (a later block once the lines
//! it waits for are out), closes its stdin and collects what it writes until it
//! exits; [`compare_stdio`] holds those lines, and how the process ended, to the
//! exchange's.

use std::io::{self, Read, Write};
use std::path::Path;
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::compare::{Note, bodies_match, forgive};
use super::show::shown_stdio;
use super::{Strictness, TIMEOUT};
use crate::transcript::StdioExchange;

/// What a stdio server did with one exchange's input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioRun {
    /// Everything it wrote to stdout, as text (invalid UTF-8 replaced).
    pub stdout: String,
    /// How it ended: `None` when it was still running [`TIMEOUT`] after its stdin
    /// was closed (it was then killed).
    pub exit: Option<ExitStatus>,
    /// Its log.
    pub stderr: String,
}

impl StdioRun {
    /// The lines written to stdout, without their `\n`. A last line with no `\n`
    /// is included; [`compare_stdio`] reports it.
    pub fn lines(&self) -> Vec<String> {
        let body = self.stdout.strip_suffix('\n').unwrap_or(&self.stdout);
        if self.stdout.is_empty() { Vec::new() } else { body.split('\n').map(str::to_string).collect() }
    }
}

/// Start `program ARGS`, write each input line followed by `\n`, close its stdin,
/// and collect what it writes until it exits.
pub fn run_stdio(program: &Path, args: &[String], input: &[String]) -> io::Result<StdioRun> {
    let bytes: Vec<u8> = input.iter().flat_map(|line| line.bytes().chain(Some(b'\n'))).collect();
    run_stdio_within(program, args, &bytes, Vec::new(), TIMEOUT)
}

/// [`run_stdio`] with the bytes to write as they are.
pub fn run_stdio_bytes(program: &Path, args: &[String], input: &[u8]) -> io::Result<StdioRun> {
    run_stdio_within(program, args, input, Vec::new(), TIMEOUT)
}

/// Run a stdio exchange's process: its `stdin` block, then each later block
/// (`StdioExchange::then`) once the server has written the lines it waits for; then end
/// of input.
pub fn run_stdio_for(exchange: &StdioExchange, program: &Path, args: &[String]) -> io::Result<StdioRun> {
    let later = exchange
        .then
        .iter()
        .map(|then| match &then.tools_off {
            Some(names) => (then.after_lines, Later::ToolsOff(names.clone())),
            None => (then.after_lines, Later::Write(then.bytes())),
        })
        .collect();
    run_stdio_within(program, args, &exchange.bytes(), later, TIMEOUT)
}

/// What a stdio exchange does once the server has written enough lines.
enum Later {
    /// The client writes these bytes.
    Write(Vec<u8>),
    /// The operator switches off these tools and sends SIGHUP (chapter 17).
    ToolsOff(Vec<String>),
}

/// Start `program ARGS`, write `input`, and for each `(N, later)` in turn, wait until
/// the server has written N lines and write its bytes too (or act as the operator);
/// then close its stdin and collect what it writes until it exits (killed after `timeout`).
fn run_stdio_within(
    program: &Path,
    args: &[String],
    input: &[u8],
    later: Vec<(usize, Later)>,
    timeout: Duration,
) -> io::Result<StdioRun> {
    // A `--tools-off` placeholder (chapter 17) names a fresh empty file of this run's own.
    let (args, tools_off) = super::server::own_tools_off(args)?;
    let tools_off_path = tools_off.as_ref().map(|file| file.0.clone());
    let mut child = Command::new(program)
        .args(&args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", program.display())))?;

    // Write from a thread, so a server that answers before reading everything never
    // blocks on a full stdout pipe while we block on a full stdin pipe. Dropping the
    // pipe at the end closes the server's stdin: end of input.
    // stdout is read into `written` as it comes, so the writer can wait for lines.
    let written = Arc::new(Mutex::new(Vec::new()));
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let text = input.to_vec();
    let seen = written.clone();
    let logged = Arc::new(Mutex::new(Vec::new()));
    let (log, pid) = (logged.clone(), child.id());
    thread::spawn(move || {
        let _ = stdin.write_all(&text); // a server that exited early is reported below
        let deadline = Instant::now() + timeout;
        for (lines, action) in later {
            while seen.lock().unwrap().iter().filter(|&&b| b == b'\n').count() < lines && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(5));
            }
            match action {
                Later::Write(bytes) => {
                    let _ = stdin.write_all(&bytes);
                }
                // Without a file to write (no placeholder flag), or on a timeout, the lines
                // that come are compared all the same: the difference shows there.
                Later::ToolsOff(names) => {
                    if let Some(file) = &tools_off_path {
                        let reloads = || super::server::reloads(&String::from_utf8_lossy(&log.lock().unwrap()));
                        let _ = super::server::operate(file, pid, &names, reloads);
                    }
                }
            }
        }
    });
    let stdout_pipe = child.stdout.take().expect("stdout is piped");
    let sink = written.clone();
    let stdout = thread::spawn(move || {
        let mut pipe = stdout_pipe;
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = pipe.read(&mut buffer) {
            sink.lock().unwrap().extend_from_slice(&buffer[..read]);
        }
    });
    let stderr_pipe = child.stderr.take().expect("stderr is piped");
    let log = logged.clone();
    let stderr = thread::spawn(move || {
        let mut pipe = stderr_pipe;
        let mut buffer = [0u8; 4096];
        while let Ok(read @ 1..) = pipe.read(&mut buffer) {
            log.lock().unwrap().extend_from_slice(&buffer[..read]);
        }
        String::from_utf8_lossy(&log.lock().unwrap()).into_owned()
    });

    let started = Instant::now();
    let exit = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        thread::sleep(Duration::from_millis(5));
    };
    let _ = stdout.join();
    let stdout = String::from_utf8_lossy(&written.lock().unwrap()).into_owned();
    let stderr = stderr.join().unwrap_or_default();
    Ok(StdioRun { stdout, exit, stderr })
}

/// One way a stdio run differs from the exchange's expectation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StdioMismatch {
    /// The lines differ: both sides, one message after the other, each JSON message
    /// pretty-printed (the actual in the expected's key order), ready to diff.
    Lines { expected: String, actual: String },
    /// The last thing written has no `\n`: a host reading lines waits for it forever.
    Unterminated,
    /// Still running after stdin was closed.
    DidNotExit,
    /// Exited, but not successfully.
    Failed { status: String },
}

/// Compare a run with the exchange: the lines (each as JSON when it is JSON), that
/// the last one ends with `\n`, and that the process exited successfully by itself.
pub fn compare_stdio(expected: &[String], actual: &StdioRun) -> Vec<StdioMismatch> {
    let mut mismatches = Vec::new();
    let lines = actual.lines();
    let same = lines.len() == expected.len() && expected.iter().zip(&lines).all(|(e, a)| bodies_match(e, a));
    if !same {
        let (wanted, given) = (shown_stdio(expected, None), shown_stdio(&lines, Some(expected)));
        mismatches.push(StdioMismatch::Lines { expected: wanted, actual: given });
    }
    if !actual.stdout.is_empty() && !actual.stdout.ends_with('\n') {
        mismatches.push(StdioMismatch::Unterminated);
    }
    match actual.exit {
        None => mismatches.push(StdioMismatch::DidNotExit),
        Some(status) if !status.success() => mismatches.push(StdioMismatch::Failed { status: status.to_string() }),
        Some(_) => {}
    }
    mismatches
}

/// [`compare_stdio`], with free text let through as notes when `strictness` says so:
/// each line written is one message, held to the same rule as an HTTP body.
pub fn compare_stdio_with(
    expected: &[String],
    actual: &StdioRun,
    strictness: Strictness,
) -> (Vec<StdioMismatch>, Vec<Note>) {
    compare_stdio_answers(&[], expected, actual, strictness)
}

/// [`compare_stdio_with`] for the answers to the lines `sent`: each line written is
/// compared as the answer to the message sent with the same id, if any (see
/// [`compare_answer`](super::compare::compare_answer)).
pub fn compare_stdio_answers(
    sent: &[String],
    expected: &[String],
    actual: &StdioRun,
    strictness: Strictness,
) -> (Vec<StdioMismatch>, Vec<Note>) {
    let sent: Vec<Value> = sent.iter().filter_map(|line| serde_json::from_str(line).ok()).collect();
    let lines = actual.lines();
    if strictness == Strictness::Exact || lines.len() != expected.len() {
        return (compare_stdio(expected, actual), Vec::new());
    }
    let mut notes = Vec::new();
    let mut forgiven_stdout = String::new();
    for (number, (wanted, given)) in expected.iter().zip(&lines).enumerate() {
        let id = serde_json::from_str::<Value>(wanted).ok().and_then(|line| line.get("id").cloned());
        let answered = id.filter(|id| !id.is_null()).and_then(|id| sent.iter().find(|s| s.get("id") == Some(&id)));
        match forgive(wanted, given, answered) {
            Some((line_notes, forgiven)) => {
                // Say which line each note is about.
                notes.extend(line_notes.into_iter().map(|note| Note {
                    path: format!("line {}: {}", number + 1, note.path),
                    pointer: format!("{number}#{}", note.pointer),
                    ..note
                }));
                forgiven_stdout.push_str(&forgiven);
            }
            None => forgiven_stdout.push_str(given),
        }
        forgiven_stdout.push('\n');
    }
    if !actual.stdout.ends_with('\n') {
        forgiven_stdout.pop(); // keep an unterminated last line unterminated
    }
    let forgiven = StdioRun { stdout: forgiven_stdout, ..actual.clone() };
    let mut mismatches = compare_stdio(expected, &forgiven);
    // The difference shown is the learner's own lines, not the forgiven ones.
    for mismatch in &mut mismatches {
        if let StdioMismatch::Lines { actual: shown, .. } = mismatch {
            *shown = shown_stdio(&lines, Some(expected));
        }
    }
    (mismatches, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(stdout: &str) -> StdioRun {
        // `true` exits successfully: borrow its status for a made-up run.
        let exit = Command::new("true").status().ok();
        StdioRun { stdout: stdout.into(), exit, stderr: String::new() }
    }

    #[test]
    fn stdio_lines_compare_as_json_in_order() {
        let expected = vec![r#"{"id": 1, "jsonrpc": "2.0"}"#.to_string(), "not json".to_string()];
        assert!(compare_stdio(&expected, &run("{\"jsonrpc\":\"2.0\",\"id\":1}\nnot json\n")).is_empty());
        let swapped = compare_stdio(&expected, &run("not json\n{\"jsonrpc\":\"2.0\",\"id\":1}\n"));
        assert!(matches!(swapped.as_slice(), [StdioMismatch::Lines { .. }]), "{swapped:?}");
        // No line expected: any line is one too many; none is right.
        assert!(compare_stdio(&[], &run("")).is_empty());
        assert_eq!(compare_stdio(&[], &run("{}\n")).len(), 1);
    }

    #[test]
    fn a_last_line_without_newline_is_reported() {
        let mismatches = compare_stdio(&["{}".to_string()], &run("{}"));
        assert_eq!(mismatches, [StdioMismatch::Unterminated]);
    }

    #[test]
    fn splits_stdout_into_lines() {
        assert_eq!(run("").lines(), Vec::<String>::new());
        assert_eq!(run("a\n").lines(), ["a"]);
        assert_eq!(run("a\n\nb").lines(), ["a", "", "b"]);
    }

    #[cfg(unix)]
    #[test]
    fn runs_a_process_over_its_stdin_and_stdout() {
        // `cat` is the simplest stdio server: it answers each line with itself and
        // ends when its stdin closes.
        let input = vec!["{\"a\": 1}".to_string(), String::new()];
        let run = run_stdio(Path::new("cat"), &[], &input).unwrap();
        assert_eq!(run.lines(), input);
        assert!(compare_stdio(&input, &run).is_empty());

        let failing = run_stdio(Path::new("sh"), &["-c".into(), "echo oops >&2; exit 3".into()], &[]).unwrap();
        let mismatches = compare_stdio(&[], &failing);
        assert!(matches!(mismatches.as_slice(), [StdioMismatch::Failed { .. }]), "{mismatches:?}");
        assert_eq!(failing.stderr, "oops\n");

        // One that ignores the end of its input is killed and reported.
        let stuck =
            run_stdio_within(Path::new("sleep"), &["5".into()], &[], Vec::new(), Duration::from_millis(100)).unwrap();
        assert_eq!(stuck.exit, None);
        assert_eq!(compare_stdio(&[], &stuck), [StdioMismatch::DidNotExit]);
    }

    #[test]
    fn a_later_stdin_block_is_written_once_its_lines_are_out() {
        // `sh` reads the first line, says `asked`, then reads the later one, written
        // only once `asked` is out.
        let script = "read first; echo asked; read answer; echo \"$first $answer\"";
        let later = vec![(1, Later::Write(b"yes\n".to_vec()))];
        let run = run_stdio_within(Path::new("sh"), &["-c".into(), script.into()], b"question\n", later, TIMEOUT);
        assert_eq!(run.unwrap().lines(), ["asked", "question yes"]);
        // And in three turns, each after the lines before it.
        let script = "read a; echo one; read b; echo two; read c; echo \"$a $b $c\"";
        let later = vec![(1, Later::Write(b"2\n".to_vec())), (2, Later::Write(b"3\n".to_vec()))];
        let run = run_stdio_within(Path::new("sh"), &["-c".into(), script.into()], b"1\n", later, TIMEOUT);
        assert_eq!(run.unwrap().lines(), ["one", "two", "1 2 3"]);
    }
}
