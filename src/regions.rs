//! The two kinds of marked region in the chapters' files, read in one place:
//!
//! - **Anchors**, the book's: `// ANCHOR: name` and `// ANCHOR_END: name` lines around
//!   what a page includes (`{{#include ../../chapters/ch03-tools-list/main.rs:tools_list}}`).
//!   They mean nothing to the code: a step's diff (`steps`) and a starter copied out
//!   (`starter`) leave them out ([`is_anchor_line`], [`without_anchors`]); the book's
//!   tests read an anchor's lines as mdBook does ([`anchor_region`]).
//! - **TODO regions**, the exercises': from a line that starts with `// TODO` to the
//!   next `// END TODO` line, the part a participant writes ([`todo_regions`]). Outside
//!   them an exercise is its chapter's file, line for line (blank lines aside); inside,
//!   the chapter has the solution ([`solution_regions`] finds its lines).

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

/// The lines of `solution` (the chapter's file) that fill each TODO region of
/// `exercise`, in order, as 1-based line numbers: an empty range where the region fills
/// nothing (the note at the top of an exercise). The two must be the same lines outside
/// the regions (blank lines aside): the error names the first exercise line that
/// `solution` does not have where it should.
///
/// A pattern match where each region is a wildcard: the lines before the first region
/// must start `solution`, those after the last must end it, and the runs between follow
/// in order, each at the first place it fits.
pub fn solution_regions(exercise: &str, solution: &str) -> Result<Vec<RangeInclusive<usize>>, String> {
    let regions = todo_regions(exercise)?;
    if regions.is_empty() {
        return Err("no TODO region at all".into());
    }
    // The exercise's lines outside its regions, as runs: one before the first region,
    // one between each two, one after the last.
    let mut runs: Vec<Vec<(usize, &str)>> = vec![Vec::new()];
    for (number, line) in content_lines(exercise) {
        match regions.iter().find(|region| region.contains(&number)) {
            None => runs.last_mut().expect("one run at least").push((number, line)),
            Some(region) if *region.end() == number => runs.push(Vec::new()),
            Some(_) => {}
        }
    }
    let solution = content_lines(solution);
    // How many lines of `run` match `solution` from `at` on.
    let matching = |run: &[(usize, &str)], at: usize| {
        run.iter().zip(solution.get(at..).unwrap_or(&[])).take_while(|((_, a), (_, b))| a == b).count()
    };
    let differs = |run: &[(usize, &str)], matched: usize| match run.get(matched) {
        Some((number, line)) => {
            Err(format!("exercise.rs line {number} ({}) is not in the solution there", line.trim()))
        }
        None => Err("the solution has lines the exercise lacks outside its TODO regions".to_string()),
    };

    let (first, last) = (&runs[0], &runs[runs.len() - 1]);
    let matched = matching(first, 0);
    if matched < first.len() {
        return differs(first, matched);
    }
    let end = solution.len().checked_sub(last.len()).filter(|&end| end >= first.len());
    let Some(end) = end else { return differs(last, 0) };
    let matched = matching(last, end);
    if matched < last.len() {
        return differs(last, matched);
    }
    // Where each run starts in `solution` (as an index into its content lines).
    let mut starts = vec![0];
    let mut cursor = first.len();
    for run in &runs[1..runs.len() - 1] {
        let fits = |at: &usize| at + run.len() <= end && matching(run, *at) == run.len();
        match (cursor..=end).find(fits) {
            Some(at) => {
                starts.push(at);
                cursor = at + run.len();
            }
            None => {
                let best = (cursor..=end).map(|at| matching(run, at)).max().unwrap_or(0);
                return differs(run, best);
            }
        }
    }
    starts.push(end);
    // A region fills the content lines from the end of the run before it to the start
    // of the run after it.
    let filled = runs.iter().zip(starts.windows(2)).map(|(run, next)| {
        let (from, to) = (next[0] + run.len(), next[1]);
        match solution.get(from..to) {
            Some([(first, _), .., (last, _)]) => *first..=*last,
            Some([(only, _)]) => *only..=*only,
            // Nothing fills it: an empty range just after the run before it.
            _ => {
                let after = from.checked_sub(1).map_or(1, |i| solution[i].0 + 1);
                after..=after - 1
            }
        }
    });
    Ok(filled.collect())
}

/// The lines of `text` that are not blank, with their 1-based line numbers.
fn content_lines(text: &str) -> Vec<(usize, &str)> {
    text.lines().enumerate().filter(|(_, line)| !line.trim().is_empty()).map(|(i, line)| (i + 1, line)).collect()
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
    fn the_solution_lines_of_each_region_are_found() {
        let solution = "fn a() {\n    1\n}\n\nfn b() {\n    let x = 2;\n\n    x\n}\n";
        let exercise = "// TODO(exercise): intro\n// END TODO\nfn a() {\n    1\n}\n\nfn b() {\n    // TODO: two\n    todo!()\n    // END TODO\n}\n";
        // The note at the top fills nothing (an empty range at line 1); the second region
        // is lines 6 to 8.
        let nothing = std::ops::RangeInclusive::new(1, 0);
        assert_eq!(solution_regions(exercise, solution), Ok(vec![nothing, 6..=8]));
        // A line changed outside the regions is drift.
        let drifted = exercise.replace("    1", "    3");
        assert_eq!(
            solution_regions(&drifted, solution),
            Err("exercise.rs line 4 (3) is not in the solution there".into())
        );
        // So is a line the chapter has and the exercise lost outside its regions.
        assert!(solution_regions(exercise, &solution.replace("fn a() {", "fn a() {\n    0;")).is_err());
        // An unclosed region, and an exercise with no region, are mistakes too.
        assert!(solution_regions("// TODO: x\nfn a() {}\n", "fn a() {}\n").is_err());
        assert!(solution_regions(solution, solution).is_err());
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
