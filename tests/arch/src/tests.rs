//! The checker on the fixture trees under `fixtures/`: what passes, what fails, and that
//! each failure names the file (and line) to open.

use std::path::PathBuf;

use crate::{Layers, Paths, Report, Upward, Violation, check_with};

fn run(fixture: &str, layers: &str) -> Report {
    run_with(fixture, layers, Paths::Anchored)
}

fn run_with(fixture: &str, layers: &str, paths: Paths) -> Report {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(fixture);
    check_with(&root, &Layers::parse(layers).unwrap(), paths).unwrap()
}

/// Every edge as `file.rs:line -> module`, the file relative to the fixture.
fn edges(report: &Report) -> Vec<String> {
    report
        .imports
        .iter()
        .map(|tie| {
            let file = tie
                .file
                .strip_prefix(&report.root)
                .unwrap()
                .trim_start_matches('/');
            format!("{file}:{} -> {}", tie.line, tie.target)
        })
        .collect()
}

fn printed(report: &Report) -> Vec<String> {
    report.violations.iter().map(|v| v.to_string()).collect()
}

#[test]
fn a_clean_tree_passes_with_its_numbers() {
    let report = run("clean", "main\ntop\nmid\nlow");
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        edges(&report),
        [
            "main.rs:1 -> top",
            "main.rs:2 -> mid::inner",
            "mid/inner.rs:1 -> low",
            "top.rs:1 -> mid::inner",
            "top.rs:2 -> low",
        ]
    );
    let n = &report.numbers;
    assert_eq!((n.files, n.test_files), (6, 0));
    // crate, main, top, mid (mid/mod.rs and mid/inner.rs), low.
    assert_eq!(n.modules, 5);
    // main -> top -> mid -> low.
    assert_eq!(n.levels, 4);
    assert_eq!(
        (
            n.module_cycles,
            n.file_cycles,
            n.upward_pairs,
            n.upward_lines
        ),
        (0, 0, 0, 0)
    );
}

#[test]
fn a_cycle_through_super_names_both_files_and_lines() {
    let report = run("cycle_super", "a");
    assert_eq!(report.numbers.file_cycles, 1);
    let Violation::Cycle { files, ties } = &report.violations[0] else {
        panic!("{report}");
    };
    assert!(files[0].ends_with("cycle_super/a/b.rs"), "{files:?}");
    assert!(files[1].ends_with("cycle_super/a/mod.rs"), "{files:?}");
    let ties: Vec<_> = ties
        .iter()
        .map(|t| (t.line, t.target.as_str(), t.written.as_str()))
        .collect();
    assert_eq!(ties, [(3, "a", "super::A"), (2, "a::b", "self::b::B")]);
    assert_eq!(report.violations.len(), 1, "{report}");
}

#[test]
fn a_cycle_through_a_re_export_names_the_defining_files() {
    let report = run("cycle_reexport", "m");
    assert_eq!(report.numbers.file_cycles, 1, "{report}");
    let text = printed(&report).join("\n");
    assert!(text.contains("cycle between files: "), "{text}");
    assert!(
        text.contains("cycle_reexport/m/one/x.rs:1 -> m::two (crate::m::two::Y)"),
        "{text}"
    );
    assert!(
        text.contains("cycle_reexport/m/two.rs:2 -> m::one::x (crate::m::one::X)"),
        "{text}"
    );
    // The facade m/one/mod.rs only passes the name on: it is not in the cycle.
    assert!(!text.contains("one/mod.rs"), "{text}");
}

#[test]
fn following_re_exports_does_not_invent_a_cycle() {
    let report = run("reexport", "app\nm");
    assert!(report.is_clean(), "{report}");
    assert_eq!(
        edges(&report),
        [
            "app.rs:1 -> m::leaf",
            "app.rs:1 -> m::more",
            "m/mod.rs:4 -> m::leaf",
            "m/mod.rs:6 -> m::user",
            "m/user.rs:1 -> m::leaf",
            "m/user.rs:2 -> m::more",
        ]
    );
}

#[test]
fn an_upward_import_fails_naming_file_and_line() {
    let report = run("upward", "top\nleft, right\nlow");
    let n = &report.numbers;
    assert_eq!(
        (n.upward_pairs, n.upward_lines, n.upward_modules),
        (2, 2, 2),
        "{report}"
    );
    let kinds: Vec<_> = report
        .violations
        .iter()
        .map(|v| match v {
            Violation::Upward { why, .. } => Some(*why),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, [Some(Upward::SameLayer), Some(Upward::Above), None]);
    let text = printed(&report);
    assert!(
        text[0].contains("upward/left.rs:3 -> right (crate::right::R): right is on left's layer"),
        "{text:?}"
    );
    assert!(
        text[1].contains("upward/low.rs:3 -> top (crate::top::T): top is above low"),
        "{text:?}"
    );
    assert!(
        text[2].starts_with("undeclared module: extra ("),
        "{text:?}"
    );
    assert!(
        text[2].ends_with("upward/extra.rs) is on no layer: declare it in LAYERS"),
        "{text:?}"
    );
}

#[test]
fn the_same_trees_pass_once_the_order_allows_them() {
    // The violations above come from the order, not from the tree: an order that puts
    // each importer above what it imports makes the same files clean.
    let report = run("upward", "low\ntop\nleft\nright\nextra");
    assert!(report.is_clean(), "{report}");
}

#[test]
fn test_code_is_ignored() {
    // b is above a, so every import of `a` from `b` would be upward; all of them are
    // under #[cfg(test)] (items, impl items, an inline module, whole files).
    let report = run("cfg_test", "b\na");
    assert!(report.is_clean(), "{report}");
    assert!(report.imports.is_empty(), "{report}");
    assert_eq!(report.numbers.files, 3);
    assert_eq!(report.numbers.test_files, 3); // tests.rs, a/tests.rs, a/tests/nested.rs
}

#[test]
fn groups_fn_body_uses_macro_arguments_and_exported_macros_are_seen() {
    let report = run("groups", "top\na\nb\nlow");
    assert_eq!(
        edges(&report),
        [
            "a.rs:3 -> b",
            "low.rs:3 -> top",
            "top.rs:1 -> a",
            "top.rs:1 -> b",
            "top.rs:3 -> a",
        ]
    );
    let text = printed(&report);
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(
        text[0].contains("groups/low.rs:3 -> top (crate::top::t): top is above low"),
        "{text:?}"
    );
}

#[test]
fn bare_relative_paths_are_edges_only_when_asked() {
    // a/mod.rs re-exports and calls its child b by bare name; b imports super::A.
    let anchored = run("bare", "top\na");
    assert!(anchored.is_clean(), "{anchored}");
    assert_eq!(
        edges(&anchored),
        ["a/b.rs:1 -> a", "a/b.rs:2 -> a", "top.rs:1 -> a"]
    );

    let relative = run_with("bare", "top\na", Paths::Relative);
    assert_eq!(
        edges(&relative),
        [
            "a/b.rs:1 -> a",
            "a/b.rs:2 -> a",
            "a/mod.rs:2 -> a::b",
            "a/mod.rs:4 -> a::b",
            "top.rs:1 -> a",
            // `a::B` after `use crate::a`, through a's re-export; `a::f` is a's own.
            "top.rs:2 -> a::b",
            "top.rs:2 -> a",
        ]
    );
    assert_eq!(relative.numbers.file_cycles, 1, "{relative}");
}

#[test]
fn an_item_defined_in_lib_rs_is_an_import_of_the_root() {
    let report = run("root_item", "a");
    let text = printed(&report);
    assert_eq!(text.len(), 1, "{text:?}");
    assert!(
        text[0].contains("root_item/a.rs:2 -> crate (crate::helper): lib.rs defines nothing"),
        "{text:?}"
    );
}
