//! Tools an operator switched off (chapter 17): a tool list that changes while the
//! server runs, and the notice that says so (`notifications/tools/list_changed`).
//!
//! `--tools-off FILE` names a file of tool names, one a line: those tools are off. The
//! file is read at start and again on SIGHUP, as nginx and sshd reread their
//! configuration: the operator edits it and sends `kill -HUP PID`, and no client is
//! cut off by a restart. A tool switched off is left out of `tools/list`, and a
//! `tools/call` of it is answered as a call of a tool that does not exist (tools.rs).
//! When a reload changes the list, every client listening hears it: a session's own
//! stream in the handshake era, and each `subscriptions/listen` that asked for
//! `toolsListChanged` in 2026-07-28 (listen.rs).

use std::collections::BTreeSet;
use std::io::Read;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::json;

use crate::framing::write_line;
use crate::jsonrpc::echo;
use crate::listen::{Listeners, TOOLS_LIST_CHANGED};
use crate::mcp::lock;
use crate::sessions::{SessionStream, Sessions};

// ANCHOR: tools_off
/// The largest file `--tools-off` may name: a list of names is a few lines; a file
/// larger than this is not one (the wrong file, or a runaway script), and is refused
/// whole, the last good list kept.
pub const MAX_TOOLS_OFF_BYTES: u64 = 64 * 1024;

/// This piece's flags, which `main.rs` takes in with its own (`#[command(flatten)]`).
#[derive(clap::Args)]
pub struct ToolsOffFlags {
    /// A file of tools switched off, one name a line (`#` starts a comment): they are
    /// left out of `tools/list`, and a call of one is refused. Read at start and again
    /// on SIGHUP (`kill -HUP PID`), which tells every listening client the list changed.
    #[arg(long, value_name = "FILE")]
    pub tools_off: Option<PathBuf>,
}

/// The tools switched off now, and the file that says which.
pub struct ToolsOff {
    file: Option<PathBuf>,
    off: Mutex<BTreeSet<String>>,
}

impl ToolsOff {
    /// Nothing off yet: [`ToolsOff::reload`] reads the file.
    pub fn new(flags: &ToolsOffFlags) -> ToolsOff {
        ToolsOff { file: flags.tools_off.clone(), off: Mutex::new(BTreeSet::new()) }
    }

    /// Whether `--tools-off` named a file: without one, nothing is ever off.
    pub fn has_file(&self) -> bool {
        self.file.is_some()
    }

    /// The tools switched off now, as one set: a list filtered by it is one file's, even
    /// if a reload lands while it is made.
    pub fn snapshot(&self) -> BTreeSet<String> {
        lock(&self.off).clone()
    }

    /// Whether the tool `name` is switched off.
    pub fn is_off(&self, name: &str) -> bool {
        lock(&self.off).contains(name)
    }

    /// Read the file again (at start, and on each SIGHUP): the names in it of tools this
    /// server has are off, all others on. A name that is no tool's is said on stderr and
    /// left out; a file that cannot be read (gone, too large, not UTF-8) changes nothing,
    /// and stderr says so. `true`: the tools switched off are not the ones they were.
    pub fn reload(&self, tools: &[String]) -> bool {
        let Some(file) = &self.file else { return false };
        let text = match read_capped(file) {
            Ok(text) => text,
            Err(why) => {
                eprintln!("tools-off: {}: {why}; the tools switched off stay as they were", file.display());
                return false;
            }
        };
        let mut off = BTreeSet::new();
        // An editor may start a UTF-8 file with a byte order mark: it is not part of a name.
        for line in text.trim_start_matches('\u{feff}').lines() {
            let name = line.split('#').next().unwrap_or_default().trim();
            if name.is_empty() {
                continue;
            }
            if tools.iter().any(|tool| tool == name) {
                off.insert(name.to_string());
            } else {
                eprintln!("tools-off: {}: no tool is named \"{}\"; ignored", file.display(), echo(name));
            }
        }
        eprintln!("tools-off: switched off: {off:?}");
        let mut now = lock(&self.off);
        let changed = *now != off;
        *now = off;
        changed
    }
}

/// The file, read whole if it is a regular file of at most [`MAX_TOOLS_OFF_BYTES`], in
/// UTF-8. Anything else at the path (a named pipe, a device) could keep the read waiting
/// forever, and the reload with it: it is refused before it is opened.
fn read_capped(file: &PathBuf) -> Result<String, String> {
    if !std::fs::metadata(file).map_err(|e| e.to_string())?.is_file() {
        return Err("not a regular file".to_string());
    }
    let mut bytes = Vec::new();
    let opened = std::fs::File::open(file).map_err(|e| e.to_string())?;
    opened.take(MAX_TOOLS_OFF_BYTES + 1).read_to_end(&mut bytes).map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TOOLS_OFF_BYTES {
        return Err(format!("larger than {MAX_TOOLS_OFF_BYTES} bytes"));
    }
    String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())
}
// ANCHOR_END: tools_off

// ANCHOR: list_changed
/// The tool list has changed: `notifications/tools/list_changed` on every session's
/// own stream (over stdio, stdout once `initialize` has opened the session), and on
/// every `subscriptions/listen` that asked for it. As with a resource's change, nobody
/// waits for a slow client: a stream whose backlog is full misses the notice, and a
/// session with no stream open hears nothing (its client lists again when it
/// reconnects).
pub fn tools_list_changed(sessions: &Sessions, listeners: &Listeners) {
    // No params, as the spec writes it: the notice says only that the list changed.
    let message = json!({ "jsonrpc": "2.0", "method": TOOLS_LIST_CHANGED });
    let mut to_stdout = false;
    for entry in lock(&sessions.open).values() {
        match &entry.stream {
            Some(SessionStream::Http { messages, .. }) => {
                let _ = messages.try_send(message.clone());
            }
            Some(SessionStream::Stdout) => to_stdout = true,
            None => {}
        }
    }
    // Written once the lock is let go: a host slow to read stdout holds no session.
    if to_stdout {
        let _ = write_line(message.to_string().as_bytes());
    }
    listeners.tools_list_changed();
}
// ANCHOR_END: list_changed

/// A `--tools-off` file of its own for one test, with `contents`, in the temporary directory.
#[cfg(test)]
fn file_with(test: &str, contents: &[u8]) -> PathBuf {
    let path = std::env::temp_dir().join(format!("tools-off-{}-{test}", std::process::id()));
    std::fs::write(&path, contents).unwrap();
    path
}

#[cfg(test)]
fn tools() -> Vec<String> {
    vec!["run_payroll".to_string(), "ping".to_string()]
}

#[test]
fn a_reload_switches_off_the_named_tools_and_says_whether_that_changed() {
    let path = file_with("names", "# closed for the week\nrun_payroll  # until Monday\nno_such_tool\n\n".as_bytes());
    let off = ToolsOff::new(&ToolsOffFlags { tools_off: Some(path.clone()) });
    assert!(off.reload(&tools()));
    assert_eq!(off.snapshot(), BTreeSet::from(["run_payroll".to_string()]));
    assert!(!off.reload(&tools()), "the same file again changes nothing");
    std::fs::write(&path, "").unwrap();
    assert!(off.reload(&tools()));
    assert!(!off.is_off("run_payroll"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_byte_order_mark_is_not_part_of_the_first_name() {
    let path = file_with("bom", "\u{feff}run_payroll\n".as_bytes());
    let off = ToolsOff::new(&ToolsOffFlags { tools_off: Some(path.clone()) });
    assert!(off.reload(&tools()));
    assert!(off.is_off("run_payroll"));
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_file_that_is_not_a_list_keeps_the_last_good_one() {
    let path = file_with("bad", b"run_payroll\n");
    let off = ToolsOff::new(&ToolsOffFlags { tools_off: Some(path.clone()) });
    assert!(off.reload(&tools()));
    let too_large = vec![b'#'; MAX_TOOLS_OFF_BYTES as usize + 1];
    for wrong in [&too_large[..], b"ping\n\xff\n"] {
        std::fs::write(&path, wrong).unwrap();
        assert!(!off.reload(&tools()));
        assert_eq!(off.snapshot(), BTreeSet::from(["run_payroll".to_string()]));
    }
    std::fs::remove_file(&path).unwrap();
    assert!(!off.reload(&tools()), "a file gone changes nothing either");
    assert!(off.is_off("run_payroll"));
}

/// A named pipe at the path would keep an `open` waiting for a writer that never comes.
#[cfg(unix)]
#[test]
fn a_named_pipe_is_refused_without_waiting_for_a_writer() {
    let path = std::env::temp_dir().join(format!("tools-off-{}-fifo", std::process::id()));
    let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    let off = ToolsOff::new(&ToolsOffFlags { tools_off: Some(path.clone()) });
    assert!(!off.reload(&tools()));
    assert!(off.snapshot().is_empty());
    std::fs::remove_file(path).unwrap();
}
