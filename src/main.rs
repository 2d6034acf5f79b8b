//! `workbook`: the workbook's own command line.
//!
//! ```text
//! cargo run -- list                   the chapters
//! cargo run -- check 3                build your exercise for chapter 3, start it, replay
//!                                     the chapter's transcript and say what to fix
//! cargo run -- check 3 --solution     the same against the chapter's own server
//! cargo run -- check 3 --url U        the same against a server you started yourself
//! cargo run -- bless 3                rewrite chapter 3's transcript from what it answers now,
//!                                     and the steps (changes.diff) of chapters 3 and 4
//! cargo run -- carry 11 jsonrpc.rs    merge the change just made to chapter 11's jsonrpc.rs
//!                                     into every later chapter's, and rewrite their steps
//! cargo run -- starter DIR            write the starter (chapter 10) as a new crate in DIR
//! cargo run -- starter --full DIR     the same from the last chapter: the whole protocol
//! cargo run -- mutants 7              make each plausible mistake in chapter 7's exercise
//!                                     regions, one at a time, and say which the check misses
//! ```
//!
//! `check` exits 0 when every exchange matches, 1 when some do not, 2 when it could
//! not check at all (the exercise does not compile, the server does not start).

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_workbook::carry::{self, Carry};
use mcp_workbook::chapters::{self, Chapter};
use mcp_workbook::check::{self, Target, Unchecked};
use mcp_workbook::mutants;
use mcp_workbook::replay::{self, RunningServer};
use mcp_workbook::starter;
use mcp_workbook::steps;
use mcp_workbook::transcript::{self, Transcript};

#[derive(Parser)]
#[command(about = "The MCP workbook: list the chapters, check a server against a transcript, write the starter, \
             carry a change forward")]
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
    /// Rewrite a chapter's transcript with the responses its server gives now, and its
    /// step (`changes.diff`) and the next chapter's from the code as it is now.
    /// Review the change with `git diff` before committing it.
    Bless {
        /// Chapter number or name.
        chapter: String,
    },
    /// Carry the change just made to chapter N's FILE into the same file of every later
    /// chapter that has it, and rewrite the steps (`changes.diff`) it changes.
    ///
    /// The change is the file now against the file at --from (git's HEAD unless told).
    /// Each later chapter takes it by a three-way merge (`git merge-file`), from the
    /// nearest earlier chapter that took it. A chapter where the merge conflicts is left
    /// as it is and named, with the conflicting hunk, for you to do by hand; then run the
    /// same carry again: it keeps the chapters you changed by hand and takes their version
    /// of the change on. When FILE is the one the chapter's exercise copies (its
    /// piece, or `main.rs` in chapters 1 to 10), the exercise takes the change too.
    /// From a chapter of one file, the change goes into chapter 11's `main.rs` only if
    /// its lines are still there; otherwise the carry stops and names the file they moved
    /// to.
    ///
    /// Transcripts are never touched: when the change alters what a chapter answers,
    /// `cargo run -- bless N` re-records that chapter's transcript. Review the result with
    /// `git diff chapters/` before committing it. Exits 1 when a file is left to do by hand.
    Carry {
        /// Number or name of the chapter you changed.
        chapter: String,
        /// The file you changed: `main.rs`, `jsonrpc.rs`, … (one of the chapter's server files).
        file: String,
        /// The git revision to compare the file with: what the change is made against.
        #[arg(long, value_name = "REV", default_value = "HEAD")]
        from: String,
        /// Say what would change, and write nothing.
        #[arg(long)]
        dry_run: bool,
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
        /// Write the full starter instead: the last chapter, with every piece the book
        /// adds after chapter 10 (resources, prompts, ..., authorization) next to the tools.
        #[arg(long)]
        full: bool,
    },
    /// Mutation testing of the exercises: make, one at a time, each small mistake a
    /// participant could make in the lines that fill a chapter's TODO regions (a
    /// statement or match arm left out, a condition forced or missing a part, a
    /// comparison turned round, a `!` left out), build it in a copy of the workbook
    /// (`target/mutants/`) and check it as `check N --solution` does. A mutant the check
    /// passes survived: a mistake no exchange shows. Exits 1 when one survives that
    /// `tests/mutants-survivors.txt` does not explain, or when an explanation there has
    /// no survivor left.
    Mutants {
        /// Chapter numbers or names; all chapters when none is given.
        chapters: Vec<String>,
        /// Name the mutants only; build and check none.
        #[arg(long)]
        list: bool,
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
        Action::Carry { chapter, file, from, dry_run } => {
            with_chapter(&chapter).and_then(|chapter| carry_forward(chapter, &file, &from, dry_run))
        }
        Action::Mutants { chapters, list } => run_mutants(&chapters, list),
        Action::Starter { dir, name, full } => {
            write_starter(&dir, name.as_deref(), if full { starter::full_chapter() } else { starter::CHAPTER })
        }
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

/// Build one of `chapter`'s binaries, with the features the chapter needs, so a check
/// never runs stale code, and give its path.
fn build(chapter: &Chapter, binary: &str) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "--quiet", "--bin", binary])
        .args(chapter.cargo_features())
        .current_dir(chapters::workbook_root())
        .status()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !status.success() {
        return Err(format!(
            "{binary} does not compile. The compiler's messages are above: start with the first error."
        ));
    }
    Ok(binary_path(binary))
}

/// Build the chapter's server and start it on port 0, with the transcript's flags.
fn start(chapter: &Chapter, transcript: &Transcript) -> Result<RunningServer, String> {
    RunningServer::start(&build(chapter, chapter.name)?, &transcript.server_args).map_err(|e| e.to_string())
}

/// Each of `words` after a space: ` --flag value`.
fn words(words: &[String]) -> String {
    words.iter().map(|word| format!(" {word}")).collect()
}

/// Chapter binaries sit next to this one, in `target/debug` (or `release`).
fn binary_path(name: &str) -> PathBuf {
    let me = std::env::current_exe().expect("the running binary has a path");
    me.with_file_name(format!("{name}{}", std::env::consts::EXE_SUFFIX))
}

fn check(chapter: &Chapter, target: &Target) -> Result<bool, String> {
    let (_, mut transcript) = load_transcript(chapter)?;
    let unchecked =
        if matches!(target, Target::Url(_)) { Unchecked::leave_out(&mut transcript) } else { Unchecked::default() };
    if *target == Target::Exercise && !chapter.exercise_path().exists() {
        return Err(format!(
            "chapter {} has no exercise yet; `cargo run -- check {} --solution` checks the chapter itself",
            chapter.number, chapter.number
        ));
    }
    let results = match target {
        Target::Exercise | Target::Solution => {
            let binary = if *target == Target::Exercise { chapter.exercise_binary() } else { chapter.name.to_string() };
            let program = build(chapter, &binary)?;
            println!("{}", check::heading(chapter, target, &transcript));
            check::run_binary(&transcript, &program)?
        }
        Target::Url(url) => {
            let address =
                replay::address_of_url(url).ok_or_else(|| format!("not an http://HOST:PORT/mcp URL: {url}"))?;
            if TcpStream::connect_timeout(&address, Duration::from_secs(2)).is_err() {
                return Err(format!(
                    "nothing answers at {url}. Start your server first, in another terminal: \
                     `cargo run{} --bin {} -- --bind {address}{}`",
                    words(&chapter.cargo_features()),
                    chapter.exercise_binary(),
                    words(&transcript.server_args)
                ));
            }
            println!("{}", check::heading(chapter, target, &transcript));
            check::run(&transcript, address, None)
        }
    };
    print!("{}", check::render(&results, target));
    print!("{}", check::summary(chapter, target, &results, &unchecked));
    Ok(check::all_passed(&results))
}

fn bless(chapter: &Chapter) -> Result<bool, String> {
    let (text, transcript) = load_transcript(chapter)?;
    let mut blessed = text.clone();
    if !transcript.exchanges.is_empty() {
        let server = start(chapter, &transcript)?;
        let mut recorded = Vec::new();
        for exchange in &transcript.exchanges {
            // A polling exchange polls until its answer is the one written, or gives up:
            // what it got last is recorded.
            let actual = replay::run_exchange(exchange, server.address, Some(&server), replay::Strictness::Exact)
                .actual
                .map_err(|e| format!("{:?}: no response: {e}", exchange.title))?;
            recorded.push(replay::as_recorded(&actual, &exchange.expected));
        }
        blessed = transcript::replace_responses(&blessed, &recorded).map_err(|e| e.to_string())?;
    }
    if !transcript.stdio.is_empty() {
        let (binary, args) = (build(chapter, chapter.name)?, transcript.stdio_args());
        let mut recorded = Vec::new();
        for exchange in &transcript.stdio {
            let run = replay::run_stdio_for(exchange, &binary, &args)
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
    write_reporting(&path, &text, &blessed)?;
    // This chapter's step, and the next one's, which starts from this chapter's code.
    let next = chapters::CHAPTERS.iter().find(|c| c.number == chapter.number + 1);
    for chapter in std::iter::once(chapter).chain(next) {
        let Some(previous) = chapters::CHAPTERS.iter().find(|c| c.number + 1 == chapter.number) else { continue };
        let path = chapter.changes_path();
        let diff = steps::changes(previous, chapter).map_err(|e| format!("{}: {e}", chapter.name))?;
        write_reporting(&path, &std::fs::read_to_string(&path).unwrap_or_default(), &diff)?;
    }
    Ok(true)
}

fn carry_forward(chapter: &Chapter, file: &str, from: &str, dry_run: bool) -> Result<bool, String> {
    let (root, file) = (chapters::workbook_root(), carry::file_name(file));
    let base = carry::base_at(root, from, chapter, &file)?;
    let earlier = |later: &Chapter| carry::base_at(root, from, later, &file).ok();
    let report = carry::carry(&Carry {
        root,
        chapters: chapters::CHAPTERS,
        chapter,
        file: file.clone(),
        base,
        base_label: from.to_string(),
        earlier: &earlier,
        write: !dry_run,
    })?;
    print!("{report}");
    Ok(report.conflicts() == 0)
}

/// Write `new` to `path` and say whether it differs from `old`, what the file held.
fn write_reporting(path: &Path, old: &str, new: &str) -> Result<(), String> {
    std::fs::write(path, new).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    println!("{} {}", if new != old { "rewrote" } else { "unchanged:" }, path.display());
    Ok(())
}

fn run_mutants(queries: &[String], list_only: bool) -> Result<bool, String> {
    let chosen: Vec<&Chapter> = if queries.is_empty() {
        chapters::CHAPTERS.iter().filter(|c| c.in_this_build()).collect()
    } else {
        queries.iter().map(|q| with_chapter(q)).collect::<Result<_, _>>()?
    };
    let explained = mutants::explained_in_workbook()?;
    let mut tallies = Vec::new();
    for chapter in chosen {
        tallies.push((chapter, mutants::run(chapter, &explained, list_only)?));
    }
    if !list_only && tallies.len() > 1 {
        println!("\n{:<24} {:>7} {:>9} {:>10} {:>9}", "chapter", "killed", "survived", "explained", "unviable");
        for (chapter, t) in &tallies {
            let survived = t.survived + t.explained;
            println!("{:<24} {:>7} {:>9} {:>10} {:>9}", chapter.name, t.killed, survived, t.explained, t.unviable);
        }
    }
    // Done when every survivor is explained, and every explanation still needed.
    Ok(tallies.iter().all(|(_, tally)| tally.survived == 0 && tally.stale == 0))
}

fn write_starter(dir: &Path, name: Option<&str>, chapter: &str) -> Result<bool, String> {
    let (name, files) = starter::write(dir, name, chapter)?;
    println!("wrote the starter crate {name:?} to {} (from {chapter})", dir.display());
    println!("  {}\n", files.join("  "));
    println!("next:");
    println!("  cd {}", dir.display());
    println!("  cargo run                  # serves http://127.0.0.1:8080/mcp");
    println!("  cargo run -- --help        # every flag");
    println!("  cargo run -- --stdio       # over stdin/stdout, as Claude Desktop starts it");
    if chapter == starter::CHAPTER {
        println!("your tools go in src/main.rs, under `YOUR TOOLS`; the book's chapter 10 adds one step by step.");
    } else {
        println!(
            "your tools, resources and prompts go in src/main.rs, under `YOUR TOOLS`, `YOUR RESOURCES`, `YOUR PROMPTS`."
        );
    }
    Ok(true)
}
