//! What a check found: the numbers of the module graph and every violation, printable one
//! line per import so a reader can jump to it.

use std::fmt;

/// The module graph in numbers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Numbers {
    /// Files of non-test code read (lib.rs and main.rs included).
    pub files: usize,
    /// Files that are test code, left out.
    pub test_files: usize,
    /// Units: each top-level module and each folder module (`proxy::splice`) once, plus
    /// `crate` (lib.rs) and `main`.
    pub modules: usize,
    /// Nodes on the longest path of the module graph's condensation.
    pub levels: usize,
    /// Strongly connected components of more than one module.
    pub module_cycles: usize,
    /// Strongly connected components of more than one file.
    pub file_cycles: usize,
    /// Layer violations by distinct (importing file, imported top-level module).
    pub upward_pairs: usize,
    /// Layer violations by distinct (importing file, line).
    pub upward_lines: usize,
    /// Layer violations by distinct (importing top-level module, imported one): the
    /// count issue 22 gives.
    pub upward_modules: usize,
}

/// One import: `file:line` -> the file it resolved to, and the path as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tie {
    /// The importing file, as a path to open.
    pub file: String,
    /// The importing file's module name (`listener::fast`, `crate`, `main`).
    pub from: String,
    pub line: usize,
    /// The imported file's module name (`k8s::leaf`, `crate`).
    pub target: String,
    pub written: String,
}

impl fmt::Display for Tie {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{} -> {} ({})",
            self.file, self.line, self.target, self.written
        )
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Violation {
    /// Files that import each other, directly or around a loop, with the imports that tie
    /// them (only those between members of the cycle).
    Cycle { files: Vec<String>, ties: Vec<Tie> },
    /// An import that does not point to a strictly lower layer.
    Upward {
        tie: Tie,
        from: String,
        to: String,
        why: Upward,
    },
    /// A top-level module the layer order does not name.
    Undeclared { module: String, file: String },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Upward {
    /// The target's layer is above the importer's.
    Above,
    /// Siblings on one layer may not import each other.
    SameLayer,
    /// lib.rs only declares modules and re-exports: nothing should need it.
    Root,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Cycle { files, ties } => {
                write!(f, "cycle between files: {}", files.join(", "))?;
                for tie in ties {
                    write!(f, "\n    {tie}")?;
                }
                Ok(())
            }
            Violation::Upward { tie, from, to, why } => {
                let why = match why {
                    Upward::Above => format!("{to} is above {from}"),
                    Upward::SameLayer => format!("{to} is on {from}'s layer"),
                    Upward::Root => {
                        "lib.rs defines nothing to import; move the item to a module".to_string()
                    }
                };
                write!(f, "upward import: {tie}: {why}")
            }
            Violation::Undeclared { module, file } => {
                write!(
                    f,
                    "undeclared module: {module} ({file}) is on no layer: declare it in LAYERS"
                )
            }
        }
    }
}

/// The outcome of [`crate::check`].
#[derive(Debug, Clone)]
pub struct Report {
    /// The source root, as printed in file names.
    pub root: String,
    pub numbers: Numbers,
    /// Every edge of the file graph, by file and line.
    pub imports: Vec<Tie>,
    /// Module cycles by unit name; counted, not violations in themselves (a cycle between
    /// folders without one between files is allowed).
    pub module_cycles: Vec<Vec<String>>,
    /// Files no `mod` declares: not compiled, not read.
    pub orphans: Vec<String>,
    /// Cycles first, then upward imports by file and line, then undeclared modules.
    pub violations: Vec<Violation>,
}

impl Report {
    pub fn is_clean(&self) -> bool {
        self.violations.is_empty()
    }
}

impl fmt::Display for Numbers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "  files           {} (+{} test files not read)",
            self.files, self.test_files
        )?;
        writeln!(f, "  modules         {}", self.modules)?;
        writeln!(f, "  levels          {}", self.levels)?;
        writeln!(
            f,
            "  cycles          {} between modules, {} between files",
            self.module_cycles, self.file_cycles
        )?;
        write!(
            f,
            "  upward imports  {} (file -> module), {} lines, {} module -> module",
            self.upward_pairs, self.upward_lines, self.upward_modules
        )
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "module graph of {}", self.root)?;
        writeln!(f, "{}", self.numbers)?;
        for cycle in &self.module_cycles {
            writeln!(f, "module cycle: {}", cycle.join(", "))?;
        }
        for orphan in &self.orphans {
            writeln!(f, "not read: {}/{orphan} (no `mod` declares it)", self.root)?;
        }
        writeln!(f, "{} violations", self.violations.len())?;
        for violation in &self.violations {
            writeln!(f, "{violation}")?;
        }
        Ok(())
    }
}
