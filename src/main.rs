//! `workbook`: the workbook's own command line.
//!
//! ```text
//! cargo run -- list                   the chapters
//! cargo run -- check 3                build your exercise for chapter 3, start it, replay
//!                                     the chapter's transcript and say what to fix
//! cargo run -- check 3 --solution     the same against the chapter's own server
//! cargo run -- check 3 --url U        the same against a server you started yourself
//! cargo run -- bless 3                rewrite chapter 3's transcript from what it answers now
//! ```
//!
//! `check` exits 0 when every exchange matches, 1 when some do not, 2 when it could
//! not check at all (the exercise does not compile, the server does not start).

use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_workbook::chapters::{self, Chapter};
use mcp_workbook::check::{self, Target};
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::transcript::{self, Transcript};

#[derive(Parser)]
#[command(about = "The MCP workbook: list the chapters, check a server against a transcript")]
struct Cli {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// List the chapters.
    List,
    /// Check your exercise: start it, replay the chapter's transcript, say what to fix.
    Check {
        /// Chapter number or name: `1`, `ch01`, `ch01-envelope`.
        chapter: String,
        /// Check the chapter's own server (the solution) instead of your exercise.
        #[arg(long, conflicts_with = "url")]
        solution: bool,
        /// Check a server you started yourself, at this URL (`http://127.0.0.1:8080/mcp`).
        #[arg(long)]
        url: Option<String>,
    },
    /// Rewrite a chapter's transcript with the responses its server gives now.
    /// Review the change with `git diff` before committing it.
    Bless {
        /// Chapter number or name.
        chapter: String,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Action::List => {
            for chapter in chapters::CHAPTERS {
                println!("{:>2}  {:<24} {}", chapter.number, chapter.name, chapter.title);
            }
            Ok(true)
        }
        Action::Check { chapter, solution, url } => {
            let target = match (solution, url) {
                (_, Some(url)) => Target::Url(url),
                (true, None) => Target::Solution,
                (false, None) => Target::Exercise,
            };
            with_chapter(&chapter).and_then(|c| check(c, &target))
        }
        Action::Bless { chapter } => with_chapter(&chapter).and_then(bless),
    };
    match result {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

fn with_chapter(query: &str) -> Result<&'static Chapter, String> {
    chapters::find(query).ok_or_else(|| format!("no chapter {query:?}; `cargo run -- list` shows them"))
}

fn load_transcript(chapter: &Chapter) -> Result<(String, Transcript), String> {
    let path = chapter.transcript_path();
    let text = std::fs::read_to_string(&path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let parsed = transcript::parse(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((text, parsed))
}

/// Build a binary (so the check never runs stale code) and start it with the
/// transcript's flags.
fn start(binary: &str, transcript: &Transcript) -> Result<RunningServer, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--bin", binary])
        .current_dir(chapters::workbook_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{binary} does not compile. The compiler's messages are above: start with the first error."
        ));
    }
    RunningServer::start(&binary_path(binary), &transcript.server_args).map_err(|e| e.to_string())
}

/// Chapter binaries sit next to this one, in `target/debug` (or `release`).
fn binary_path(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("the running binary has a path");
    me.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

fn check(chapter: &Chapter, target: &Target) -> Result<bool, String> {
    let (_, transcript) = load_transcript(chapter)?;
    let server = match target {
        Target::Exercise => Some(start(&chapter.exercise_binary(), &transcript)?),
        Target::Solution => Some(start(chapter.name, &transcript)?),
        Target::Url(_) => None,
    };
    let address = match (&server, target) {
        (Some(server), _) => server.address,
        (None, Target::Url(url)) => {
            let address =
                replay::address_of_url(url).ok_or_else(|| format!("not an http://HOST:PORT/mcp URL: {url}"))?;
            if TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_err() {
                return Err(format!(
                    "nothing answers at {url}. Start your server first, in another terminal: \
                     `cargo run --bin {} -- --bind {address}{}`",
                    chapter.exercise_binary(),
                    transcript.server_args.iter().map(|arg| format!(" {arg}")).collect::<String>()
                ));
            }
            address
        }
        (None, _) => unreachable!("the check starts every server but a --url one"),
    };
    println!("{}", check::heading(chapter, target, address, transcript.exchanges.len()));
    let results = check::run(&transcript, address, server.as_ref());
    print!("{}", check::render(&results, target));
    print!("{}", check::summary(chapter, target, &results));
    Ok(check::all_passed(&results))
}

fn bless(chapter: &Chapter) -> Result<bool, String> {
    let (text, transcript) = load_transcript(chapter)?;
    let server = start(chapter.name, &transcript)?;
    let mut recorded = Vec::new();
    for exchange in &transcript.exchanges {
        let actual = replay::send(server.address, &exchange.request)
            .map_err(|e| format!("{:?}: no response: {e}", exchange.title))?;
        recorded.push(replay::as_recorded(&actual, &exchange.expected));
    }
    let blessed = transcript::replace_responses(&text, &recorded).map_err(|e| e.to_string())?;
    let path = chapter.transcript_path();
    std::fs::write(&path, &blessed).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let changed = blessed != text;
    println!("{} {}", if changed { "rewrote" } else { "unchanged:" }, path.display());
    Ok(true)
}
