//! A `redis-server` of the replay's own ([`RedisServer`]), for chapter 20: on a free
//! loopback port, without persistence, as a process of its own, killed by its pid when
//! dropped. A transcript's server that names [`TRANSCRIPT_REDIS`] gets one instead
//! (`RunningServer::start`), so a replay never touches a Redis the reader runs, and
//! every replay starts from an empty store. `tests/fleet.rs` starts its own with it.

use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// The store a transcript's command line names: the one a reader starts by hand
/// (`redis-server --port 6379 --save ''`), which the replay swaps for its own.
pub const TRANSCRIPT_REDIS: &str = "redis://127.0.0.1:6379";

/// `redis-server` on a loopback port, no persistence; killed (by its pid) when dropped.
pub struct RedisServer {
    child: Option<Child>,
    pub port: u16,
}

impl RedisServer {
    /// Start one on a free port, and wait until it answers `PING`.
    pub fn start() -> Result<RedisServer, String> {
        RedisServer::start_on(free_port())
    }

    /// Start one on `port` (a test that restarts Redis where it was), and wait until it
    /// answers `PING`.
    pub fn start_on(port: u16) -> Result<RedisServer, String> {
        RedisServer::start_with(port, &[])
    }

    /// Start one on `port` with `more` of redis-server's flags (`--dir DIR`: where a
    /// `SAVE` writes its snapshot, and whence a Redis started there loads it).
    pub fn start_with(port: u16, more: &[&str]) -> Result<RedisServer, String> {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(more)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| {
                format!("cannot run redis-server ({error}): chapter 20 needs it (apt-get install redis-server)")
            })?;
        let redis = RedisServer { child: Some(child), port };
        let deadline = Instant::now() + Duration::from_secs(10);
        while redis.cli(&["PING"]) != "PONG" {
            if Instant::now() > deadline {
                return Err(format!("redis-server did not answer on port {port} within 10 s"));
            }
            thread::sleep(Duration::from_millis(50));
        }
        Ok(redis)
    }

    /// `redis://127.0.0.1:PORT`, for `--state-store`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// `redis-cli` on this server: what it printed, trimmed.
    pub fn cli(&self, args: &[&str]) -> String {
        let output =
            Command::new("redis-cli").args(["-h", "127.0.0.1", "-p", &self.port.to_string()]).args(args).output();
        output.map(|output| String::from_utf8_lossy(&output.stdout).trim().to_string()).unwrap_or_default()
    }

    /// Send it `signal` (`STOP`, `CONT`), by its pid.
    pub fn signal(&self, signal: &str) -> Result<(), String> {
        let pid = self.child.as_ref().ok_or("redis-server is stopped")?.id().to_string();
        let status = Command::new("kill").args([&format!("-{signal}"), &pid]).status();
        status.ok().filter(|status| status.success()).map(|_| ()).ok_or(format!("kill -{signal} {pid} failed"))
    }

    /// Kill it, by its pid, and wait until it is gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A loopback port nothing listens on (a listener of our own, just closed).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()).map_or(0, |address| address.port())
}
