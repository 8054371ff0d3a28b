//! Reading a source root: every `.rs` file parsed, named by its module path, and sorted
//! into code and test code. Knows file names and `mod` declarations, nothing about imports.

use std::collections::HashMap;
use std::fmt;
use std::path::{Component, Path, PathBuf};

use syn::Item;

use crate::syntax::is_test_only;

/// Which crate root a file hangs from: `lib.rs`'s module tree or the binary's `main.rs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Root {
    Lib,
    Bin,
}

/// One file of non-test code.
pub struct SourceFile {
    /// The path relative to the source root, `/`-separated.
    pub rel: String,
    pub root: Root,
    /// The module path inside its crate: `proxy/http1.rs` is `["proxy", "http1"]`,
    /// `lib.rs` and `main.rs` are empty.
    pub module: Vec<String>,
    /// The folder module the file belongs to: `proxy/splice/copy.rs` is `proxy::splice`,
    /// `proxy/http1.rs` is `proxy`.
    pub unit: String,
    pub syntax: syn::File,
}

impl SourceFile {
    /// The node's name: `crate` for lib.rs, `main` for main.rs, else the module path.
    pub fn name(&self) -> String {
        match self.root {
            Root::Bin => "main".to_string(),
            Root::Lib if self.module.is_empty() => "crate".to_string(),
            Root::Lib => self.module.join("::"),
        }
    }

    /// The top-level module, the unit of the layer order.
    pub fn top(&self) -> &str {
        match self.root {
            Root::Bin => "main",
            Root::Lib => self.module.first().map_or("crate", String::as_str),
        }
    }
}

/// What a source root holds.
pub struct SourceTree {
    /// Non-test files, sorted by path; `lib.rs` is among them.
    pub files: Vec<SourceFile>,
    /// Files that are test code (declared under `#[cfg(test)]`, or inside such a module).
    pub test_files: Vec<String>,
    /// Files no `mod` declares: not compiled, so not read for imports.
    pub orphans: Vec<String>,
}

#[derive(Debug)]
pub enum Error {
    Io(PathBuf, std::io::Error),
    Parse(PathBuf, syn::Error),
    NoLib(PathBuf),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(path, err) => write!(f, "{}: {err}", path.display()),
            Error::Parse(path, err) => {
                let at = err.span().start();
                write!(f, "{}:{}:{}: {err}", path.display(), at.line, at.column + 1)
            }
            Error::NoLib(root) => {
                write!(f, "{}: no lib.rs to root the module tree", root.display())
            }
        }
    }
}

impl std::error::Error for Error {}

/// Reads and parses every `.rs` file under `root`.
pub fn read(root: &Path) -> Result<SourceTree, Error> {
    let mut paths = Vec::new();
    walk(root, root, &mut paths)?;
    paths.sort();

    let mut parsed = Vec::new();
    for rel in paths {
        let path = root.join(&rel);
        let text = std::fs::read_to_string(&path).map_err(|e| Error::Io(path.clone(), e))?;
        let syntax = syn::parse_file(&text).map_err(|e| Error::Parse(path.clone(), e))?;
        let (file_root, module) = module_path(&rel);
        let unit = unit_of(root, &rel, file_root, &module);
        parsed.push(SourceFile {
            rel,
            root: file_root,
            module,
            unit,
            syntax,
        });
    }
    if !parsed
        .iter()
        .any(|f| f.root == Root::Lib && f.module.is_empty())
    {
        return Err(Error::NoLib(root.to_path_buf()));
    }

    let declared = declarations(&parsed);
    let mut tree = SourceTree {
        files: Vec::new(),
        test_files: Vec::new(),
        orphans: Vec::new(),
    };
    let kinds: Vec<Kind> = parsed
        .iter()
        .map(|f| kind_of(f, &declared, &parsed))
        .collect();
    for (file, kind) in parsed.into_iter().zip(kinds) {
        match kind {
            Kind::Code => tree.files.push(file),
            Kind::Test => tree.test_files.push(file.rel),
            Kind::Orphan => tree.orphans.push(file.rel),
        }
    }
    Ok(tree)
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), Error> {
    let entries = std::fs::read_dir(dir).map_err(|e| Error::Io(dir.to_path_buf(), e))?;
    for entry in entries {
        let path = entry.map_err(|e| Error::Io(dir.to_path_buf(), e))?.path();
        if path.is_dir() {
            walk(root, &path, out)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let rel = path.strip_prefix(root).expect("walked from root");
            let parts: Vec<_> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy())
                .collect();
            out.push(parts.join("/"));
        }
    }
    Ok(())
}

/// `proxy/mod.rs` -> proxy, `proxy/http1.rs` -> proxy::http1, `lib.rs` -> the crate root,
/// `main.rs` -> the binary's root.
fn module_path(rel: &str) -> (Root, Vec<String>) {
    if rel == "main.rs" {
        return (Root::Bin, Vec::new());
    }
    let mut segments: Vec<String> = rel
        .trim_end_matches(".rs")
        .split('/')
        .map(String::from)
        .collect();
    if rel == "lib.rs" || segments.last().is_some_and(|s| s == "mod") {
        segments.pop();
    }
    (Root::Lib, segments)
}

fn unit_of(root: &Path, rel: &str, file_root: Root, module: &[String]) -> String {
    match (file_root, module) {
        (Root::Bin, _) => return "main".to_string(),
        (Root::Lib, []) => return "crate".to_string(),
        _ => {}
    }
    // A folder module is `x/mod.rs` or `x.rs` beside a folder `x/`; a top-level file is
    // its own unit; any other file belongs to its folder's module.
    let folder = root.join(rel.trim_end_matches(".rs"));
    if rel.ends_with("/mod.rs") || module.len() == 1 || folder.is_dir() {
        module.join("::")
    } else {
        module[..module.len() - 1].join("::")
    }
}

/// Every `mod x;` (without a body) in the library: the module path it declares, the file
/// that declares it and whether the declaration sits under `#[cfg(test)]`.
fn declarations(files: &[SourceFile]) -> HashMap<Vec<String>, (usize, bool)> {
    let mut out = HashMap::new();
    for (i, file) in files.iter().enumerate() {
        if file.root == Root::Lib {
            let test = is_test_only(&file.syntax.attrs);
            declare(
                &file.syntax.items,
                &mut file.module.clone(),
                test,
                i,
                &mut out,
            );
        }
    }
    out
}

fn declare(
    items: &[Item],
    scope: &mut Vec<String>,
    test: bool,
    file: usize,
    out: &mut HashMap<Vec<String>, (usize, bool)>,
) {
    for item in items {
        let Item::Mod(m) = item else { continue };
        let test = test || is_test_only(&m.attrs);
        scope.push(m.ident.to_string());
        match &m.content {
            Some((_, inner)) => declare(inner, scope, test, file, out),
            None => {
                out.insert(scope.clone(), (file, test));
            }
        }
        scope.pop();
    }
}

enum Kind {
    Code,
    Test,
    Orphan,
}

fn kind_of(
    file: &SourceFile,
    declared: &HashMap<Vec<String>, (usize, bool)>,
    files: &[SourceFile],
) -> Kind {
    if is_test_only(&file.syntax.attrs) {
        return Kind::Test;
    }
    if file.module.is_empty() {
        return Kind::Code; // lib.rs and main.rs are roots
    }
    let Some(&(parent, test)) = declared.get(&file.module) else {
        return Kind::Orphan;
    };
    if test {
        return Kind::Test;
    }
    // The declaring file may itself be test code, or an orphan.
    kind_of(&files[parent], declared, files)
}

/// `a/./b/../c` -> `a/c`, without touching the file system; for printing paths.
pub fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}
