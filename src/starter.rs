//! `workbook starter DIR`: chapter 10 written out as a crate of your own; with `--full`,
//! the last chapter, which has the whole protocol the book teaches (resources, prompts,
//! completion, streamed calls, asking the user, subscriptions, authorization).
//!
//! The starter depends on four crates (`DEPENDENCIES`), the full starter on those, the
//! three its authorization needs and the Redis client of its shared store
//! (`FULL_DEPENDENCIES`). The new crate holds these files:
//!
//! | file | from |
//! |---|---|
//! | `Cargo.toml` | the workbook's `edition`, `rust-version` and its `[dependencies]` lines for those crates, as they stand |
//! | `Cargo.lock` | the workbook's, so the copy builds with the versions already in the local cargo cache |
//! | `src/main.rs` | `chapters/ch10-starter/main.rs` (or the last chapter's), its one line `use mcp_workbook::http;` now `mod http;` |
//! | `src/NAME.rs` | the full starter only: the last chapter's other files, which its `main.rs` declares (`mod NAME;`) |
//! | `src/http.rs` | the workbook's `src/http.rs` (std and `tiny_http` only) |
//! | `.gitignore` | `/target` |
//!
//! The Rust files lose their `// ANCHOR:` lines: they mark what the book shows and
//! mean nothing in your crate. Nothing else changes, so what you copy is what the
//! tests replayed (`tests/starter_copy.rs` builds both copies and replays each
//! chapter's transcript against its copy).

use std::fs;
use std::path::{Path, PathBuf};

use crate::chapters::{CHAPTERS, workbook_root};
use crate::regions::without_anchors;

/// The chapter the starter is made from.
pub const CHAPTER: &str = "ch10-starter";

/// The chapter the full starter (`--full`) is made from: the last one, every piece of
/// the protocol the book has taught.
pub fn full_chapter() -> &'static str {
    CHAPTERS.last().expect("the workbook has chapters").name
}

/// The line of chapter 10 that reaches into the workbook, and what it becomes.
pub const IMPORT_IN_WORKBOOK: &str = "use mcp_workbook::http;";
pub const IMPORT_IN_COPY: &str = "mod http;";

/// The crates the starter depends on, and no other.
pub const DEPENDENCIES: &[&str] = &["clap", "serde", "serde_json", "tiny_http"];

/// The crates the full starter depends on: the starter's, the three chapter 18's
/// authorization adds (a JWT library, SHA-256 for the record of tokens verified, and an
/// HTTP client, for the authorization server's keys), and chapter 20's Redis client (the
/// store several instances share). The workbook depends on these and no others.
pub const FULL_DEPENDENCIES: &[&str] =
    &["clap", "jsonwebtoken", "redis", "serde", "serde_json", "sha2", "tiny_http", "ureq"];

/// The crates a copy made from `chapter` depends on.
fn dependencies_of(chapter: &str) -> &'static [&'static str] {
    if chapter == CHAPTER { DEPENDENCIES } else { FULL_DEPENDENCIES }
}

/// One file of the new crate: where it goes (relative to the crate) and what it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct File {
    pub path: String,
    pub contents: String,
}

/// Every file of the starter crate called `name`, made from `chapter`, read from the
/// workbook.
pub fn files(name: &str, chapter: &str) -> Result<Vec<File>, String> {
    let root = workbook_root();
    let read = |path: &str| fs::read_to_string(root.join(path)).map_err(|e| format!("cannot read {path}: {e}"));
    let file = |path: &str, contents: String| File { path: path.to_string(), contents };
    let source_files = CHAPTERS
        .iter()
        .find(|c| c.name == chapter)
        .ok_or_else(|| format!("no chapter named {chapter}"))?
        .source_files()
        .map_err(|e| format!("cannot read chapters/{chapter}/main.rs: {e}"))?;
    let mut files = vec![
        file("Cargo.toml", manifest_for(name, &read("Cargo.toml")?, dependencies_of(chapter))?),
        file("Cargo.lock", read("Cargo.lock")?),
        file("src/main.rs", main_for_copy(chapter, &read(&format!("chapters/{chapter}/main.rs"))?)?),
    ];
    for module in source_files.iter().filter(|file| *file != "main.rs") {
        let source = read(&format!("chapters/{chapter}/{module}"))?;
        files.push(file(&format!("src/{module}"), module_for_copy(chapter, module, &source)?));
    }
    files.push(file("src/http.rs", without_anchors(&read("src/http.rs")?)));
    files.push(file(".gitignore", "/target\n".to_string()));
    Ok(files)
}

/// Write the starter crate made from `chapter` into `dir`, which must not exist or be
/// empty. The crate is named `name`, or after the folder. Returns the crate's name and
/// the paths of its files.
pub fn write(dir: &Path, name: Option<&str>, chapter: &str) -> Result<(String, Vec<String>), String> {
    let name = match name {
        Some(name) => name.to_string(),
        None => dir
            .file_name()
            .and_then(|n| n.to_str())
            .map(str::to_string)
            .ok_or_else(|| format!("{} has no folder name to name the crate after; pass --name", dir.display()))?,
    };
    check_name(&name)?;
    if dir.exists() && fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?.next().is_some() {
        return Err(format!("{} exists and is not empty: choose a new folder", dir.display()));
    }
    let files = files(&name, chapter)?;
    for file in &files {
        let path: PathBuf = dir.join(&file.path);
        fs::create_dir_all(path.parent().expect("a file has a folder"))
            .and_then(|()| fs::write(&path, &file.contents))
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    }
    Ok((name, files.into_iter().map(|file| file.path).collect()))
}

/// A name cargo takes for a package and its binary: a letter, then letters,
/// digits, `-` or `_`.
fn check_name(name: &str) -> Result<(), String> {
    let mut chars = name.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if valid {
        Ok(())
    } else {
        Err(format!("{name:?} is not a crate name (a letter, then letters, digits, - or _); pass --name"))
    }
}

// ANCHOR: rewrite
/// A chapter's `main.rs` (`source`, from the folder `chapter`) as the copy's
/// `src/main.rs`: the one import of the workbook becomes a module of the crate's own.
pub fn main_for_copy(chapter: &str, source: &str) -> Result<String, String> {
    let lines: Vec<&str> = source.lines().filter(|line| line.trim() == IMPORT_IN_WORKBOOK).collect();
    if lines.len() != 1 {
        return Err(format!("{chapter}/main.rs must hold the line `{IMPORT_IN_WORKBOOK}` exactly once"));
    }
    module_for_copy(chapter, "main.rs", &source.replacen(IMPORT_IN_WORKBOOK, IMPORT_IN_COPY, 1))
}
// ANCHOR_END: rewrite

/// One of the chapter's other files as the copy's `src/NAME.rs`: as it is, without
/// anchors. It reaches the HTTP base as `crate::http`, which is the workbook's base in
/// the workbook (through `main.rs`'s import) and the crate's own module in the copy.
fn module_for_copy(chapter: &str, file: &str, source: &str) -> Result<String, String> {
    let copy = without_anchors(source);
    if let Some(line) = copy.lines().find(|line| !line.trim_start().starts_with("//") && line.contains("mcp_workbook"))
    {
        return Err(format!("{chapter}/{file} uses the workbook beyond its HTTP base: {line:?}"));
    }
    Ok(copy)
}

/// The copy's `Cargo.toml`: its own name, the workbook's edition and `rust-version`,
/// and the workbook's `[dependencies]` lines (each with the comment above it) for
/// `crates`, as they stand but plain: the workbook makes chapter 18's and 20's crates
/// optional, behind their features (`authorization`, `fleet`), and a copy has no features. The workbook's
/// dependencies must be `FULL_DEPENDENCIES`: a crate added to the workbook is a
/// decision for every copy, made here.
pub fn manifest_for(name: &str, workbook_manifest: &str, crates: &[&str]) -> Result<String, String> {
    let package = section(workbook_manifest, "package");
    let key = |key: &str| {
        package
            .iter()
            .find(|line| line.split('=').next().is_some_and(|k| k.trim() == key))
            .map(|line| line.trim().to_string())
    };
    // Each dependency line, with the comment lines just above it.
    let mut entries: Vec<(&str, Vec<&str>)> = Vec::new();
    let mut comments = Vec::new();
    for line in section(workbook_manifest, "dependencies").into_iter().filter(|line| !line.trim().is_empty()) {
        comments.push(line);
        if !line.trim_start().starts_with('#') {
            let crate_name = line.split('=').next().unwrap_or_default().trim();
            entries.push((crate_name, std::mem::take(&mut comments)));
        }
    }
    let mut names: Vec<&str> = entries.iter().map(|(name, _)| *name).collect();
    names.sort_unstable();
    if names != FULL_DEPENDENCIES {
        return Err(format!(
            "the workbook's [dependencies] are {names:?}; the starters take exactly {FULL_DEPENDENCIES:?}"
        ));
    }
    let mut out = format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n");
    for line in [key("edition"), key("rust-version")].into_iter().flatten() {
        out.push_str(&line);
        out.push('\n');
    }
    let count =
        ["no", "one", "two", "three", "four", "five", "six", "seven", "eight"].get(crates.len()).unwrap_or(&"these");
    out.push_str(&format!(
        "\n# The MCP workbook's starter stands on these {count} crates, nothing else.\n[dependencies]\n"
    ));
    for (_, lines) in entries.iter().filter(|(name, _)| crates.contains(name)) {
        for line in lines {
            out.push_str(&plain(line));
            out.push('\n');
        }
    }
    Ok(out)
}

/// A dependency line without `optional = true`; `{ version = "V" }` that is left
/// becomes `"V"`. Other lines (comments) as they are.
fn plain(line: &str) -> String {
    let line = line.replace(", optional = true", "").replace("optional = true, ", "");
    match line.split_once(" = { version = ") {
        Some((name, rest)) if rest.ends_with(" }") && !rest.contains(',') => {
            format!("{name} = {}", rest.trim_end_matches(" }"))
        }
        _ => line,
    }
}

/// The lines of a TOML `[name]` section (up to the next `[` header).
fn section<'a>(toml: &'a str, name: &str) -> Vec<&'a str> {
    toml.lines()
        .skip_while(|line| line.trim() != format!("[{name}]"))
        .skip(1)
        .take_while(|line| !line.trim_start().starts_with('['))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MANIFEST: &str = "[package]\nname = \"mcp-workbook\"\nversion = \"0.1.0\"\nedition = \"2024\"\n\
rust-version = \"1.88\"\n\n[[bin]]\nname = \"workbook\"\n\n[dependencies]\nclap = { version = \"4\", features = [\"derive\"] }\n\
serde = \"1\"\nserde_json = \"1\"\ntiny_http = \"0.12\"\n# For chapter 18.\n\
jsonwebtoken = { version = \"11\", default-features = false, optional = true }\nsha2 = { version = \"0.10\", optional = true }\n\
ureq = { version = \"3\", optional = true }\n# For chapter 20.\n\
redis = { version = \"1\", default-features = false, optional = true }\n\n\
[features]\nauthorization = [\"dep:jsonwebtoken\", \"dep:sha2\", \"dep:ureq\"]\nfleet = [\"authorization\", \"dep:redis\"]\n\n[dev-dependencies]\njsonschema = \"0.30\"\n";

    #[test]
    fn the_manifest_keeps_the_workbook_versions_and_nothing_else() {
        let manifest = manifest_for("my-server", MANIFEST, DEPENDENCIES).unwrap();
        assert_eq!(
            manifest,
            "[package]\nname = \"my-server\"\nversion = \"0.1.0\"\nedition = \"2024\"\nrust-version = \"1.88\"\n\n\
# The MCP workbook's starter stands on these four crates, nothing else.\n[dependencies]\n\
clap = { version = \"4\", features = [\"derive\"] }\nserde = \"1\"\nserde_json = \"1\"\ntiny_http = \"0.12\"\n"
        );
        let full = manifest_for("my-server", MANIFEST, FULL_DEPENDENCIES).unwrap();
        assert!(full.contains("on these eight crates"), "{full}");
        assert!(
            full.ends_with(
                "tiny_http = \"0.12\"\n# For chapter 18.\n\
                 jsonwebtoken = { version = \"11\", default-features = false }\nsha2 = \"0.10\"\nureq = \"3\"\n\
                 # For chapter 20.\nredis = { version = \"1\", default-features = false }\n"
            ),
            "{full}"
        );
        assert!(!full.contains("optional") && !full.contains("[features]"), "a copy's crates are plain: {full}");
        let more = MANIFEST.replace("tiny_http = \"0.12\"\n", "tiny_http = \"0.12\"\nrand = \"0.9\"\n");
        assert!(manifest_for("x", &more, DEPENDENCIES).unwrap_err().contains("rand"));
    }

    #[test]
    fn the_import_becomes_a_module_and_anchors_go() {
        let chapter = "//! Doc.\nuse clap::Parser;\nuse mcp_workbook::http;\nuse http::{Request, Response};\n\n\
// ANCHOR: tools\nfn tools() {}\n    // ANCHOR_END: tools\n";
        assert_eq!(
            main_for_copy(CHAPTER, chapter).unwrap(),
            "//! Doc.\nuse clap::Parser;\nmod http;\nuse http::{Request, Response};\n\nfn tools() {}\n"
        );
        assert!(main_for_copy(CHAPTER, "use clap::Parser;\n").is_err(), "no import to rewrite");
        let twice = "use mcp_workbook::http;\nuse mcp_workbook::http;\n";
        assert!(main_for_copy(CHAPTER, twice).is_err());
        let more = "use mcp_workbook::http;\nuse mcp_workbook::replay;\n";
        assert!(main_for_copy(CHAPTER, more).unwrap_err().contains("beyond"));
    }

    #[test]
    fn the_real_chapter_and_base_make_a_starter() {
        for chapter in [CHAPTER, full_chapter()] {
            the_real_chapter_makes_a_starter(chapter);
        }
    }

    fn the_real_chapter_makes_a_starter(chapter: &str) {
        let files = files("my-server", chapter).unwrap();
        let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
        let modules: Vec<String> = CHAPTERS
            .iter()
            .find(|c| c.name == chapter)
            .unwrap()
            .source_files()
            .unwrap()
            .into_iter()
            .skip(1)
            .map(|file| format!("src/{file}"))
            .collect();
        let mut expected = vec!["Cargo.toml", "Cargo.lock", "src/main.rs"];
        expected.extend(modules.iter().map(String::as_str));
        expected.extend(["src/http.rs", ".gitignore"]);
        assert_eq!(paths, expected);
        for file in &files {
            assert!(!file.contents.contains("ANCHOR"), "{} keeps an anchor", file.path);
        }
        assert!(files[2].contents.lines().any(|line| line == IMPORT_IN_COPY));
        let manifest = &files[0].contents;
        assert!(!manifest.contains("optional") && !manifest.contains("[features]"), "{chapter}: {manifest}");
    }

    #[test]
    fn names_must_suit_cargo() {
        assert!(check_name("my-server_2").is_ok());
        for bad in ["", "2fast", "my server", "a/b", "über"] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
