//! A chapter's server as a child process ([`RunningServer`]): started on port 0 (with
//! the environment a test gives it), its address read from the line it prints once
//! listening, its stderr kept to explain a failure, and stopped when dropped. The
//! operator of a transcript (`<!-- operator: ... -->`) acts on it here: writes the file
//! `--tools-off` names and sends SIGHUP ([`RunningServer::tools_off`]).

use std::io::{self, BufRead, BufReader};
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::TIMEOUT;
use super::redis::{RedisServer, TRANSCRIPT_REDIS};

/// A chapter's server running as a child process; stopped when dropped.
pub struct RunningServer {
    child: Child,
    /// Where it listens, read from the line it prints once listening.
    pub address: SocketAddr,
    /// What it wrote to stderr so far, to explain a failure.
    stderr: Arc<Mutex<String>>,
    /// The Redis of its own that a transcript naming [`TRANSCRIPT_REDIS`] gets, stopped
    /// after the server (fields drop after `drop`).
    _redis: Option<RedisServer>,
    /// The file of its own that a transcript naming [`TRANSCRIPT_TOOLS_OFF`] gets,
    /// removed when it stops.
    tools_off: Option<ToolsOffFile>,
}

/// What a transcript's `console` block writes for `--tools-off`'s file (chapter 17):
/// the replay gives the server a fresh, empty file of its own instead, which the
/// transcript's operator lines write.
pub const TRANSCRIPT_TOOLS_OFF: &str = "tools-off.txt";

/// A server's own `--tools-off` file, removed when dropped.
pub(super) struct ToolsOffFile(pub(super) PathBuf);

impl ToolsOffFile {
    /// A fresh, empty file in the system's temporary directory.
    fn create() -> io::Result<ToolsOffFile> {
        static MADE: AtomicU64 = AtomicU64::new(0);
        let name = format!("workbook-tools-off-{}-{}.txt", std::process::id(), MADE.fetch_add(1, Ordering::SeqCst));
        let path = std::env::temp_dir().join(name);
        std::fs::write(&path, "")?;
        Ok(ToolsOffFile(path))
    }
}

impl Drop for ToolsOffFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl RunningServer {
    /// Start `binary --bind 127.0.0.1:0 ARGS...` and wait for its URL line. Args that
    /// name [`TRANSCRIPT_REDIS`] as `--state-store` (chapter 20) name a `redis-server`
    /// started for this server alone instead.
    pub fn start(binary: &Path, args: &[String]) -> io::Result<RunningServer> {
        RunningServer::start_with_env(binary, args, &[])
    }

    /// [`RunningServer::start`], with the environment it inherits changed first: each
    /// `(NAME, Some(value))` set, each `(NAME, None)` removed, in order. For a server that
    /// reads a variable (chapter 7's `MCP_WORKBOOK_TOKEN`): a test says what it holds,
    /// whatever the environment the test runs in holds.
    pub fn start_with_env(binary: &Path, args: &[String], env: &[(&str, Option<&str>)]) -> io::Result<RunningServer> {
        let (args, redis) = own_redis(args)?;
        let (args, tools_off) = own_tools_off(&args)?;
        let mut command = Command::new(binary);
        for (name, value) in env {
            match value {
                Some(value) => command.env(name, value),
                None => command.env_remove(name),
            };
        }
        let mut child = command
            .args(["--bind", "127.0.0.1:0"])
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot start {}: {e}", binary.display())))?;

        let stderr = Arc::new(Mutex::new(String::new()));
        let stderr_pipe = child.stderr.take().expect("stderr is piped");
        let sink = stderr.clone();
        thread::spawn(move || {
            for line in BufReader::new(stderr_pipe).lines().map_while(Result::ok) {
                let mut sink = sink.lock().unwrap();
                sink.push_str(&line);
                sink.push('\n');
            }
        });

        // The first stdout line that holds `http://` names the address. Keep
        // draining stdout afterwards so the child never blocks on a full pipe.
        let (found, wait) = mpsc::channel();
        let stdout = child.stdout.take().expect("stdout is piped");
        thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = address_in(&line)
                    && let Some(found) = found.take()
                {
                    let _ = found.send(address);
                }
            }
        });

        match wait.recv_timeout(TIMEOUT) {
            Ok(address) => Ok(RunningServer { child, address, stderr, _redis: redis, tools_off }),
            Err(_) => {
                let _ = child.kill();
                let _ = child.wait();
                let log = stderr.lock().unwrap().clone();
                Err(io::Error::other(format!(
                    "{} printed no `http://` line within {TIMEOUT:?}; its stderr:\n{log}",
                    binary.display()
                )))
            }
        }
    }

    /// The server's process id, to look at its threads and files from a test.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the process is still running (it has not crashed).
    pub fn is_running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// Everything the server wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().unwrap().clone()
    }

    /// Send the server SIGTERM, as a service manager does to stop it (`kill -TERM`).
    pub fn terminate(&self) -> io::Result<()> {
        self.signal("TERM")
    }

    /// Send the server the signal `name` (`TERM`, `INT`: Ctrl-C), as `kill -NAME` does.
    pub fn signal(&self, name: &str) -> io::Result<()> {
        kill(self.pid(), name)
    }

    /// The operator switches off the tools `names` (none: every tool on): writes them to
    /// the server's `--tools-off` file, one a line, sends SIGHUP, and waits until the
    /// server says on stderr that it has reloaded (`http::RELOADED`), for [`TIMEOUT`] at most.
    pub fn tools_off(&self, names: &[String]) -> io::Result<()> {
        let Some(file) = &self.tools_off else {
            return Err(io::Error::other(format!(
                "an operator line needs the server started with `--tools-off {TRANSCRIPT_TOOLS_OFF}`"
            )));
        };
        operate(&file.0, self.pid(), names, || reloads(&self.stderr()))
    }

    /// Wait until the process ends, for `timeout` at most: its exit status, or `None`
    /// while it still runs.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + timeout;
        loop {
            match self.child.try_wait() {
                Ok(Some(status)) => return Some(status),
                Ok(None) if Instant::now() < deadline => thread::sleep(Duration::from_millis(10)),
                _ => return None,
            }
        }
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `args`, with a `--state-store` of [`TRANSCRIPT_REDIS`] swapped for a Redis started for
/// the server alone; the Redis too, to keep running as long as the server.
fn own_redis(args: &[String]) -> io::Result<(Vec<String>, Option<RedisServer>)> {
    let mut args = args.to_vec();
    let named = args.windows(2).position(|pair| pair[0] == "--state-store" && pair[1] == TRANSCRIPT_REDIS);
    let Some(flag) = named else { return Ok((args, None)) };
    let redis = RedisServer::start().map_err(io::Error::other)?;
    args[flag + 1] = redis.url();
    Ok((args, Some(redis)))
}

/// `kill -NAME PID`.
fn kill(pid: u32, name: &str) -> io::Result<()> {
    let status = Command::new("kill").args([&format!("-{name}"), &pid.to_string()]).status()?;
    status.success().then_some(()).ok_or_else(|| io::Error::other(format!("kill -{name} {pid}: {status}")))
}

/// How many times a server's stderr says it has reloaded (`http::RELOADED`).
pub fn reloads(stderr: &str) -> usize {
    stderr.lines().filter(|line| *line == crate::http::RELOADED).count()
}

/// The operator's step on the server `pid` (over HTTP or stdio): `names` into its
/// `--tools-off` file, one a line, then SIGHUP; then wait until `reloads` (what its
/// stderr says) has grown, for [`TIMEOUT`] at most. The conformance fixtures' operator
/// (tests/interop/fixtures.rs) is this step too.
pub fn operate(file: &Path, pid: u32, names: &[String], reloads: impl Fn() -> usize) -> io::Result<()> {
    let text: String = names.iter().map(|name| format!("{name}\n")).collect();
    std::fs::write(file, text)?;
    let before = reloads();
    kill(pid, "HUP")?;
    let deadline = Instant::now() + TIMEOUT;
    while reloads() == before {
        if Instant::now() > deadline {
            let said = crate::http::RELOADED;
            return Err(io::Error::other(format!("no `{said}` on stderr within {TIMEOUT:?} of SIGHUP")));
        }
        thread::sleep(Duration::from_millis(10));
    }
    Ok(())
}

/// `args`, with a `--tools-off` of [`TRANSCRIPT_TOOLS_OFF`] swapped for a fresh file of
/// the server's own; the file too, to keep as long as the server runs.
pub(super) fn own_tools_off(args: &[String]) -> io::Result<(Vec<String>, Option<ToolsOffFile>)> {
    let mut args = args.to_vec();
    let named = args.windows(2).position(|pair| pair[0] == "--tools-off" && pair[1] == TRANSCRIPT_TOOLS_OFF);
    let Some(flag) = named else { return Ok((args, None)) };
    let file = ToolsOffFile::create()?;
    args[flag + 1] = file.0.display().to_string();
    Ok((args, Some(file)))
}

/// `listening on http://127.0.0.1:43125/mcp` -> `127.0.0.1:43125`.
fn address_in(line: &str) -> Option<SocketAddr> {
    let url = &line[line.find("http://")? + "http://".len()..];
    let authority = url.split(['/', ' ']).next()?;
    authority.to_socket_addrs().ok()?.next()
}

/// Parse `http://HOST:PORT/...` into an address, for a learner's `--url`.
pub fn address_of_url(url: &str) -> Option<SocketAddr> {
    address_in(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_address_in_the_url_line() {
        assert_eq!(address_in("listening on http://127.0.0.1:4242/mcp"), Some("127.0.0.1:4242".parse().unwrap()));
        assert_eq!(address_in("no url here"), None);
    }
}
