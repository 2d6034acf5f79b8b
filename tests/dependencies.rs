//! What a build of the workbook compiles. A package's `[dependencies]` apply to every
//! target, so a crate that only chapter 18 needs would be compiled by a participant's
//! first `cargo run --bin ch01-envelope` as well; behind the `authorization` feature it
//! is not. These tests ask cargo's own resolver (`cargo tree`, offline):
//! - a default build depends directly on the starter's four crates and nothing else, so
//!   it compiles those and what they depend on, and nothing of chapter 18;
//! - with every feature on, on the full starter's seven;
//! - `Cargo.toml` and `chapters::CHAPTERS` agree on which chapter needs which feature:
//!   each chapter's binaries require exactly the chapter's features, and no feature is
//!   on by default.
//!
//! Why `cargo tree --depth 1` and not the whole lock file: every package a build
//! compiles is a dependency of one of the workbook's direct (normal or build)
//! dependencies, so those decide; and cargo resolves them with the features, for this
//! machine. (`cargo metadata` resolves for every platform and wants the crates of all of
//! them, Windows' too, downloaded: it fails offline.) It runs offline: `cargo test` has
//! just fetched every crate of this build, and a default build's are among them.

use std::process::Command;

use mcp_workbook::chapters::{CHAPTERS, feature_enabled, workbook_root};
use mcp_workbook::starter::{DEPENDENCIES, FULL_DEPENDENCIES};
use serde_json::Value;

fn cargo(args: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(&cargo)
        .args(args)
        .current_dir(workbook_root())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo}: {e}"));
    assert!(output.status.success(), "cargo {args:?} failed:\n{}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8(output.stdout).expect("cargo writes UTF-8")
}

/// The crates the workbook depends on directly (normal and build dependencies, not the
/// tests' own), with these feature flags, sorted.
fn direct_dependencies(features: &[&str]) -> Vec<String> {
    let mut args = vec!["tree", "--offline", "--edges", "normal,build", "--depth", "1", "--prefix", "none"];
    args.extend_from_slice(&["--format", "{p}"]);
    args.extend_from_slice(features);
    let tree = cargo(&args);
    let mut names: Vec<String> = tree
        .lines()
        .skip(1) // the workbook itself
        .filter(|line| !line.trim().is_empty() && !line.starts_with('['))
        .map(|line| line.split_whitespace().next().unwrap_or_default().to_string())
        .collect();
    names.sort();
    names.dedup();
    names
}

#[test]
fn a_default_build_compiles_the_four_crates_and_nothing_of_chapter_18() {
    assert_eq!(
        direct_dependencies(&[]),
        DEPENDENCIES,
        "a build without features (`cargo run --bin ch01-envelope`) must stand on the starter's crates alone: \
         a crate only some chapters need is optional, behind their feature (see [features] in Cargo.toml)"
    );
}

#[test]
fn with_every_feature_the_workbook_stands_on_the_full_starters_crates() {
    // The crates of a feature may not be in the cargo cache when this build does not
    // have it on: `cargo test --all-features` checks this.
    if !CHAPTERS.iter().all(|chapter| chapter.in_this_build()) {
        eprintln!("skipped: this build does not have every feature on (`cargo test --all-features` runs it)");
        return;
    }
    assert_eq!(direct_dependencies(&["--all-features"]), FULL_DEPENDENCIES);
}

#[test]
fn the_manifest_and_the_chapters_agree_on_features() {
    let metadata: Value =
        serde_json::from_str(&cargo(&["metadata", "--offline", "--no-deps", "--format-version", "1"])).unwrap();
    let package = &metadata["packages"][0];
    let features = package["features"].as_object().expect("the manifest has [features]");
    assert!(!features.contains_key("default"), "a default feature would build its crates for every chapter");
    let required = |kind: &str, name: &str| -> Vec<String> {
        let target = package["targets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|target| target["name"] == name && target["kind"][0] == kind)
            .unwrap_or_else(|| panic!("Cargo.toml has no [[{kind}]] named {name}"));
        let list = target["required-features"].as_array().map(Vec::as_slice).unwrap_or_default();
        list.iter().map(|feature| feature.as_str().unwrap().to_string()).collect()
    };
    for chapter in CHAPTERS {
        for feature in chapter.features {
            assert!(features.contains_key(*feature), "{} needs {feature:?}, which Cargo.toml lacks", chapter.name);
            let _ = feature_enabled(feature); // src/chapters.rs knows it
        }
        for binary in [chapter.name.to_string(), chapter.exercise_binary()] {
            assert_eq!(
                required("bin", &binary),
                chapter.features,
                "[[bin]] {binary}: its required-features must be the chapter's features (src/chapters.rs)"
            );
        }
    }
    // Every feature is some chapter's, and a target that requires one belongs to it.
    let chapter_features: Vec<&str> = CHAPTERS.iter().flat_map(|chapter| chapter.features.iter().copied()).collect();
    for feature in features.keys() {
        assert!(chapter_features.contains(&feature.as_str()), "no chapter needs the feature {feature:?}");
    }
    // Chapter 18's own test and its token minter are built with its feature only.
    assert_eq!(required("test", "authorization"), ["authorization"]);
    assert_eq!(required("example", "mint-token"), ["authorization"]);
}
