//! `workbook`: the workbook's own command line.
//!
//! ```text
//! cargo run -- list              the chapters
//! cargo run -- check 3           build chapter 3, start it, replay its transcript
//! cargo run -- check 3 --url U   replay chapter 3's transcript against a server you run
//! cargo run -- bless 3           rewrite chapter 3's transcript from what it answers now
//! cargo run -- starter DIR       write the starter (chapter 10) as a new crate in DIR
//! ```

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use clap::{Parser, Subcommand};
use mcp_workbook::chapters::{self, Chapter};
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::starter;
use mcp_workbook::transcript::{self, Transcript};

#[derive(Parser)]
#[command(about = "The MCP workbook: list the chapters, check a server against a transcript, write the starter")]
struct Cli {
    #[command(subcommand)]
    command: Action,
}

#[derive(Subcommand)]
enum Action {
    /// List the chapters.
    List,
    /// Replay a chapter's transcript against its server and report each exchange.
    Check {
        /// Chapter number or name: `1`, `ch01`, `ch01-envelope`.
        chapter: String,
        /// Talk to a server already running at this URL instead of starting one.
        #[arg(long)]
        url: Option<String>,
    },
    /// Rewrite a chapter's transcript with the responses its server gives now.
    /// Review the change with `git diff` before committing it.
    Bless {
        /// Chapter number or name.
        chapter: String,
    },
    /// Write the starter (chapter 10) as a new crate in DIR: your own MCP server,
    /// depending on clap, serde, serde_json and tiny_http only.
    #[command(visible_alias = "new")]
    Starter {
        /// Folder to create; it must not exist or be empty.
        dir: PathBuf,
        /// The crate's (and its binary's) name. Default: the folder's name.
        #[arg(long)]
        name: Option<String>,
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
        Action::Check { chapter, url } => with_chapter(&chapter).and_then(|c| check(c, url.as_deref())),
        Action::Bless { chapter } => with_chapter(&chapter).and_then(bless),
        Action::Starter { dir, name } => write_starter(&dir, name.as_deref()),
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

/// Build the chapter's binary, so a check never runs stale code.
fn build(chapter: &Chapter) -> Result<(), String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--bin", chapter.name])
        .current_dir(chapters::workbook_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!("{} does not build (the compiler's message is above)", chapter.name));
    }
    Ok(())
}

/// Build the chapter's binary and start it as an HTTP server on port 0.
fn start(chapter: &Chapter, transcript: &Transcript) -> Result<RunningServer, String> {
    build(chapter)?;
    RunningServer::start(&binary_path(chapter.name), &transcript.server_args).map_err(|e| e.to_string())
}

/// Chapter binaries sit next to this one, in `target/debug` (or `release`).
fn binary_path(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("the running binary has a path");
    me.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

fn check(chapter: &Chapter, url: Option<&str>) -> Result<bool, String> {
    let (_, transcript) = load_transcript(chapter)?;
    let server;
    let mut outcomes = Vec::new(); // (passed, report) per exchange, in replay order
    if !transcript.exchanges.is_empty() {
        let address = match url {
            Some(url) => replay::address_of_url(url).ok_or_else(|| format!("not an http://HOST:PORT URL: {url}"))?,
            None => {
                server = start(chapter, &transcript)?;
                server.address
            }
        };
        println!("Checking {} against http://{address}/mcp\n", chapter.name);
        for outcome in replay::replay(&transcript, address) {
            let report =
                if outcome.passed() { format!("✓ {}\n", outcome.exchange.title) } else { replay::explain(&outcome) };
            print!("{report}");
            outcomes.push(outcome.passed());
        }
    }
    if !transcript.stdio.is_empty() {
        if url.is_some() {
            // A URL reaches a server over HTTP only; stdio needs a process to start.
            println!(
                "\n(skipped {} stdio exchanges: they start the chapter's binary, not a URL)",
                transcript.stdio.len()
            );
        } else {
            if transcript.exchanges.is_empty() {
                build(chapter)?;
            }
            let binary = binary_path(chapter.name);
            println!(
                "\nChecking {} over stdio: {} {}\n",
                chapter.name,
                chapter.name,
                transcript.stdio_args().join(" ")
            );
            for outcome in replay::replay_stdio(&transcript, &binary) {
                let report = if outcome.passed() {
                    format!("✓ {}\n", outcome.exchange.title)
                } else {
                    replay::explain_stdio(&outcome)
                };
                print!("{report}");
                outcomes.push(outcome.passed());
            }
        }
    }
    let passed = outcomes.iter().filter(|&&passed| passed).count();
    let failed = outcomes.len() - passed;
    println!("\n{passed} passed, {failed} failed");
    Ok(failed == 0)
}

fn bless(chapter: &Chapter) -> Result<bool, String> {
    let (text, transcript) = load_transcript(chapter)?;
    let mut blessed = text.clone();
    if !transcript.exchanges.is_empty() {
        let server = start(chapter, &transcript)?;
        let mut recorded = Vec::new();
        for exchange in &transcript.exchanges {
            let actual = replay::send(server.address, &exchange.request)
                .map_err(|e| format!("{:?}: no response: {e}", exchange.title))?;
            recorded.push(replay::as_recorded(&actual, &exchange.expected));
        }
        blessed = transcript::replace_responses(&blessed, &recorded).map_err(|e| e.to_string())?;
    } else {
        build(chapter)?;
    }
    if !transcript.stdio.is_empty() {
        let (binary, args) = (binary_path(chapter.name), transcript.stdio_args());
        let mut recorded = Vec::new();
        for exchange in &transcript.stdio {
            let run = replay::run_stdio(&binary, &args, &exchange.input)
                .map_err(|e| format!("{:?}: no run: {e}", exchange.title))?;
            // Record what it wrote, but not a server that hangs or fails: that is a bug
            // to fix, not a truth to keep.
            if run.exit.is_none_or(|status| !status.success()) {
                return Err(format!("{:?}: the server did not exit cleanly; stderr:\n{}", exchange.title, run.stderr));
            }
            recorded.push(run.lines());
        }
        blessed = transcript::replace_stdout(&blessed, &recorded).map_err(|e| e.to_string())?;
    }
    let path = chapter.transcript_path();
    std::fs::write(&path, &blessed).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let changed = blessed != text;
    println!("{} {}", if changed { "rewrote" } else { "unchanged:" }, path.display());
    Ok(true)
}

fn write_starter(dir: &Path, name: Option<&str>) -> Result<bool, String> {
    let name = starter::write(dir, name)?;
    println!("wrote the starter crate {name:?} to {}", dir.display());
    println!("  Cargo.toml  Cargo.lock  src/main.rs  src/http.rs  .gitignore\n");
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  cargo run                  # serves http://127.0.0.1:8080/mcp");
    println!("  cargo run -- --help        # every flag");
    println!("  cargo run -- --stdio       # over stdin/stdout, as Claude Desktop starts it");
    println!("your tools go in src/main.rs, under `YOUR TOOLS`; the book's chapter 10 adds one step by step.");
    Ok(true)
}
