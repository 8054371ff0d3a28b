//! leafgate's architecture check: reads a source root (`gateway/src`) as text, builds the
//! import graph between its files from the code's own `crate::`, `super::` and `self::`
//! paths (and `leafgate::` in `main.rs`), and reports cycles between files and imports
//! that go against a declared layer order. It does not build or link leafgate.
//!
//! Layout: `source` reads and names files, `imports` collects the paths a file writes,
//! `scope` resolves a path to the file that defines it (following re-exports), `graph`
//! finds cycles and levels, `layers` holds the order, `report` prints the outcome. The
//! order itself lives once, in `tests/layering.rs`.

mod graph;
mod imports;
mod layers;
mod report;
mod scope;
mod size;
mod source;
mod syntax;

#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub use layers::{Layers, from_test_source};
pub use report::{Numbers, Report, Tie, Upward, Violation};
pub use size::{LongFile, REASON, long_files};
pub use source::Error;

use graph::Graph;
use scope::{Index, anchored};
use source::Root;

/// The library crate's name as `main.rs` writes it: `leafgate::x` in main is `crate::x`.
pub const LIB_CRATE: &str = "leafgate";

/// One resolved import between two different files.
struct Import {
    from: usize,
    line: usize,
    to: usize,
    written: String,
}

/// Which written paths are edges of the graph.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Paths {
    /// Paths that start with `crate::`, `super::` or `self::` (and `leafgate::` in
    /// main.rs): the graph issue 22 and the architecture test define.
    #[default]
    Anchored,
    /// Also the 2018 relative forms: a child module's bare name (`pub use leaf::Leaf`,
    /// `runtime::run()` in the parent) and a name a module-level `use` bound to a path in
    /// the crate (`config::Config` after `use crate::config`, `Kind::ALL` after
    /// `use super::Kind`). Stricter: a `mod.rs`
    /// that re-exports or calls its children and defines what they import is a cycle.
    Relative,
}

/// Checks the tree under `root` (which must hold `lib.rs`) against `layers`, with the
/// architecture test's graph ([`Paths::Anchored`]).
pub fn check(root: &Path, layers: &Layers) -> Result<Report, Error> {
    check_with(root, layers, Paths::Anchored)
}

/// [`check`], choosing which paths are edges.
pub fn check_with(root: &Path, layers: &Layers, paths: Paths) -> Result<Report, Error> {
    let tree = source::read(root)?;
    let files = &tree.files;
    let shown = source::normalize(root);
    let path_of = |i: usize| shown.join(&files[i].rel).display().to_string();
    let imports = resolve_imports(files, paths);

    let tie = |import: &Import| Tie {
        file: path_of(import.from),
        from: files[import.from].name(),
        line: import.line,
        target: files[import.to].name(),
        written: import.written.clone(),
    };

    // Cycles between files.
    let mut file_graph = Graph::new(files.len());
    for import in &imports {
        file_graph.add(import.from, import.to);
    }
    let mut violations = Vec::new();
    let file_cycles = file_graph.cycles();
    for cycle in &file_cycles {
        let ties = imports
            .iter()
            .filter(|i| cycle.contains(&i.from) && cycle.contains(&i.to))
            .map(tie)
            .collect();
        let names = cycle.iter().map(|&i| path_of(i)).collect();
        violations.push(Violation::Cycle { files: names, ties });
    }

    // The layer order, by top-level module.
    let mut undeclared = BTreeMap::new();
    for (i, file) in files.iter().enumerate() {
        if file.top() != "crate" && layers.rank(file.top()).is_none() {
            undeclared
                .entry(file.top().to_string())
                .or_insert_with(|| path_of(i));
        }
    }
    let mut upward_pairs = BTreeSet::new();
    let mut upward_lines = BTreeSet::new();
    let mut upward_modules = BTreeSet::new();
    for import in &imports {
        let (from, to) = (files[import.from].top(), files[import.to].top());
        if from == "crate" || from == to {
            continue;
        }
        let why = if to == "crate" {
            Upward::Root
        } else {
            let (Some(above), Some(below)) = (layers.rank(from), layers.rank(to)) else {
                continue; // reported once as undeclared
            };
            match below.cmp(&above) {
                std::cmp::Ordering::Greater => continue,
                std::cmp::Ordering::Equal => Upward::SameLayer,
                std::cmp::Ordering::Less => Upward::Above,
            }
        };
        upward_pairs.insert((import.from, to));
        upward_lines.insert((import.from, import.line));
        upward_modules.insert((from, to));
        violations.push(Violation::Upward {
            tie: tie(import),
            from: from.to_string(),
            to: to.to_string(),
            why,
        });
    }
    for (module, file) in undeclared {
        violations.push(Violation::Undeclared { module, file });
    }

    // The graph of folder modules, for the numbers.
    let units: Vec<&str> = files
        .iter()
        .map(|f| f.unit.as_str())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let unit_of = |i: usize| {
        units
            .binary_search(&files[i].unit.as_str())
            .expect("every unit is listed")
    };
    let mut unit_graph = Graph::new(units.len());
    for import in &imports {
        unit_graph.add(unit_of(import.from), unit_of(import.to));
    }
    let module_cycles: Vec<Vec<String>> = unit_graph
        .cycles()
        .into_iter()
        .map(|c| c.into_iter().map(|u| units[u].to_string()).collect())
        .collect();

    let numbers = Numbers {
        files: files.len(),
        test_files: tree.test_files.len(),
        modules: units.len(),
        levels: unit_graph.levels(),
        module_cycles: module_cycles.len(),
        file_cycles: file_cycles.len(),
        upward_pairs: upward_pairs.len(),
        upward_lines: upward_lines.len(),
        upward_modules: upward_modules.len(),
    };
    Ok(Report {
        root: shown.display().to_string(),
        numbers,
        imports: imports.iter().map(tie).collect(),
        module_cycles,
        orphans: tree.orphans,
        violations,
    })
}

/// Every import between two different files, once per (file, line, target), in file and
/// line order. `crate::` in main.rs is the binary's own, never an edge. With
/// [`Paths::Anchored`] a bare child path is not an edge but is still followed when an
/// anchored path reaches it through a re-export.
fn resolve_imports(files: &[source::SourceFile], paths: Paths) -> Vec<Import> {
    let index = Index::build(files);
    let mut out = Vec::new();
    for (from, file) in files.iter().enumerate() {
        for written in imports::collect(&file.syntax, &file.module) {
            let absolute = match file.root {
                Root::Lib => match paths {
                    Paths::Anchored => anchored(&written.scope, &written.segments),
                    Paths::Relative => index.relative(&written.scope, &written.segments, 0),
                },
                Root::Bin => match written.segments.split_first() {
                    Some((first, rest)) if first == LIB_CRATE => Some(rest.to_vec()),
                    _ => None,
                },
            };
            let Some(absolute) = absolute else { continue };
            let to = index.resolve(&absolute);
            if to != from {
                out.push(Import {
                    from,
                    line: written.line,
                    to,
                    written: written.segments.join("::"),
                });
            }
        }
    }
    out.sort_by_key(|i| (i.from, i.line, i.to));
    out.dedup_by_key(|i| (i.from, i.line, i.to));
    out
}

impl Report {
    /// The imports inside `module`'s subtree that point back up at an ancestor of the
    /// importing file (`listener::fast` -> `listener`): a child that reaches into its
    /// parent's `mod.rs`, which should hold only what it declares for its children's
    /// callers. Whatever parent and children share belongs in a sibling file below both.
    pub fn back_up_inside(&self, module: &str) -> Vec<&Tie> {
        let inside = |name: &str| name == module || name.starts_with(&format!("{module}::"));
        self.imports
            .iter()
            .filter(|t| {
                inside(&t.from)
                    && inside(&t.target)
                    && t.from.starts_with(&format!("{}::", t.target))
            })
            .collect()
    }
}
