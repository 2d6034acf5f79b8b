//! The two kinds of marked region in the chapters' files, read in one place:
//!
//! - **Anchors**, the book's: `// ANCHOR: name` and `// ANCHOR_END: name` lines around
//!   what a page includes (`{{#include ../../chapters/ch03-tools-list/main.rs:tools_list}}`).
//!   They mean nothing to the code: a step's diff (`steps`) and a starter copied out
//!   (`starter`) leave them out ([`is_anchor_line`], [`without_anchors`]); the book's
//!   tests read an anchor's lines as mdBook does ([`anchor_region`]).
//! - **TODO regions**, the exercises': from a line that starts with `// TODO` to the
//!   next `// END TODO` line, the part a participant writes ([`todo_regions`]).

use std::ops::RangeInclusive;

/// Whether `line` is one of the book's anchor lines, `// ANCHOR: name` or
/// `// ANCHOR_END: name`, indented or not.
pub fn is_anchor_line(line: &str) -> bool {
    let line = line.trim_start();
    line.starts_with("// ANCHOR: ") || line.starts_with("// ANCHOR_END: ")
}

/// `text` without its anchor lines.
pub fn without_anchors(text: &str) -> String {
    text.lines().filter(|line| !is_anchor_line(line)).flat_map(|line| [line, "\n"]).collect()
}

/// The lines between the anchor `name`'s start and end, as mdBook finds them: `ANCHOR:
/// name` and `ANCHOR_END: name` anywhere in a line (in a Rust comment, or in an HTML
/// comment in Markdown), the name ending where a character that cannot be part of a
/// name comes. The first start and the first end count, and the start must come first:
/// otherwise `None`. The lines in between may hold other anchors' lines.
pub fn anchor_region<'a>(text: &'a str, name: &str) -> Option<Vec<&'a str>> {
    let marks = |line: &str, mark: &str| {
        line.split(mark).skip(1).any(|rest| {
            rest.trim_start()
                .strip_prefix(name)
                .is_some_and(|after| !after.starts_with(|c: char| c.is_alphanumeric() || c == '_' || c == '-'))
        })
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.iter().position(|line| marks(line, "ANCHOR:"))?;
    let end = lines.iter().position(|line| marks(line, "ANCHOR_END:"))?;
    (start < end).then(|| lines[start + 1..end].to_vec())
}

/// The TODO regions of an exercise, in order: each the numbers (from 1) of its first
/// line, which starts with `// TODO`, and its last, `// END TODO`. A `// END TODO` with
/// no region open, or a region that never ends, is an error that names its line.
pub fn todo_regions(exercise: &str) -> Result<Vec<RangeInclusive<usize>>, String> {
    let mut regions = Vec::new();
    let mut open: Option<usize> = None;
    for (index, line) in exercise.lines().enumerate() {
        let (number, line) = (index + 1, line.trim());
        match open {
            None if line.starts_with("// TODO") => open = Some(number),
            None if line == "// END TODO" => return Err(format!("line {number}: `// END TODO` with no TODO open")),
            Some(start) if line == "// END TODO" => {
                regions.push(start..=number);
                open = None;
            }
            _ => {}
        }
    }
    match open {
        Some(start) => Err(format!("line {start}: a TODO region with no `// END TODO`")),
        None => Ok(regions),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchor_lines_are_found_and_left_out() {
        assert!(is_anchor_line("    // ANCHOR: tools") && is_anchor_line("// ANCHOR_END: tools"));
        assert!(!is_anchor_line("// ANCHOR:tools") && !is_anchor_line("let anchor = \"// ANCHOR: x\";"));
        assert_eq!(without_anchors("a\n// ANCHOR: x\nb\n  // ANCHOR_END: x\n"), "a\nb\n");
    }

    #[test]
    fn an_anchor_region_is_read_as_mdbook_reads_it() {
        let text =
            "a\n// ANCHOR: tools\nb\n// ANCHOR: tools_list\nc\n// ANCHOR_END: tools_list\n// ANCHOR_END: tools\n";
        assert_eq!(
            anchor_region(text, "tools"),
            Some(vec!["b", "// ANCHOR: tools_list", "c", "// ANCHOR_END: tools_list"])
        );
        assert_eq!(anchor_region(text, "tools_list"), Some(vec!["c"]));
        assert_eq!(anchor_region("<!-- ANCHOR: x -->\ny\n<!-- ANCHOR_END: x -->\n", "x"), Some(vec!["y"]));
        assert_eq!(anchor_region(text, "tool"), None);
        assert_eq!(anchor_region("// ANCHOR_END: x\n// ANCHOR: x\n", "x"), None, "the end before the start");
    }

    #[test]
    fn todo_regions_must_open_and_close() {
        let exercise = "x\n// TODO: one\ntodo!()\n// END TODO\ny\n    // TODO(exercise): two\n    // END TODO\n";
        assert_eq!(todo_regions(exercise), Ok(vec![2..=4, 6..=7]));
        assert_eq!(todo_regions("x\n"), Ok(vec![]));
        assert_eq!(todo_regions("// END TODO\n"), Err("line 1: `// END TODO` with no TODO open".into()));
        assert_eq!(todo_regions("a\n// TODO: x\n"), Err("line 2: a TODO region with no `// END TODO`".into()));
    }
}
