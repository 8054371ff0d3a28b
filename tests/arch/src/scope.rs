//! Name resolution, as much as the layering needs: which file a `crate::`, `super::` or
//! `self::` path lands in, following re-exports (`pub use x::Y`, `pub use x::*`) to the file
//! that defines the item, so a facade `mod.rs` does not stand in for its children.
//!
//! This is not rustc's resolver: it knows module-level items, `use` bindings and globs,
//! nothing of traits, generics or macro-made items. A name it cannot place stays with the
//! deepest file module the path reached, which is what the brief asks for.

use std::collections::{HashMap, HashSet};

use syn::Item;

use crate::source::{Root, SourceFile};
use crate::syntax::{Binding, is_test_only, item_attrs, item_name, use_leaves};

/// How deep re-export chains are followed; real chains are 2-3 long, the cap only stops
/// `pub use a::*` / `pub use b::*` loops.
const MAX_DEPTH: usize = 12;

/// One module scope of the library: a file's module or an inline `mod x { .. }` in it.
struct Scope {
    /// Index into the files the index was built from.
    file: usize,
    /// Names of items defined here (fn, struct, const, inline mod, macro_rules, ...).
    defines: HashSet<String>,
    /// `use` bindings: the bound name -> the path as written.
    uses: HashMap<String, Vec<String>>,
    /// `use x::*` prefixes, as written.
    globs: Vec<Vec<String>>,
}

/// Every non-test module scope of the library, by absolute module path (`[]` is lib.rs).
pub struct Index {
    scopes: HashMap<Vec<String>, Scope>,
    /// `#[macro_export] macro_rules! m` is `crate::m` wherever it is written.
    exported_macros: HashMap<String, usize>,
}

/// Where a path went.
enum Found {
    /// The path names a module (a file or an inline module in `.0`).
    Module(usize),
    /// The path names an item defined (or re-exported from outside the crate) in `.0`.
    Item(usize),
    /// The path's next name is nowhere to be seen in `.0`, the deepest file it reached.
    Missing(usize),
}

impl Index {
    pub fn build(files: &[SourceFile]) -> Index {
        let mut index = Index {
            scopes: HashMap::new(),
            exported_macros: HashMap::new(),
        };
        for (i, file) in files.iter().enumerate() {
            if file.root == Root::Lib {
                index.add(i, file.module.clone(), &file.syntax.items);
            }
        }
        index
    }

    fn add(&mut self, file: usize, path: Vec<String>, items: &[Item]) {
        let mut scope = Scope {
            file,
            defines: HashSet::new(),
            uses: HashMap::new(),
            globs: Vec::new(),
        };
        for item in items {
            if is_test_only(item_attrs(item)) {
                continue;
            }
            match item {
                Item::Use(u) => {
                    for leaf in use_leaves(u) {
                        match leaf.binds {
                            Binding::Name(name) => {
                                scope.uses.insert(name, leaf.segments);
                            }
                            Binding::Glob => scope.globs.push(leaf.segments),
                        }
                    }
                }
                Item::Mod(m) => {
                    if let Some((_, inner)) = &m.content {
                        let mut child = path.clone();
                        child.push(m.ident.to_string());
                        self.add(file, child, inner);
                    }
                }
                Item::ForeignMod(f) => {
                    for foreign in &f.items {
                        if let syn::ForeignItem::Fn(func) = foreign {
                            scope.defines.insert(func.sig.ident.to_string());
                        }
                    }
                }
                Item::Macro(m) if m.attrs.iter().any(|a| a.path().is_ident("macro_export")) => {
                    if let Some(name) = &m.ident {
                        self.exported_macros.insert(name.to_string(), file);
                    }
                }
                other => {
                    if let Some(name) = item_name(other) {
                        scope.defines.insert(name);
                    }
                }
            }
        }
        self.scopes.insert(path, scope);
    }

    /// The file a library path (already absolute: no `crate`/`self`/`super`) lands in.
    pub fn resolve(&self, path: &[String]) -> usize {
        match self.find(path, 0) {
            Found::Module(file) | Found::Item(file) | Found::Missing(file) => file,
        }
    }

    fn find(&self, path: &[String], depth: usize) -> Found {
        let mut at: Vec<String> = Vec::new();
        let mut scope = &self.scopes[&at];
        for (i, name) in path.iter().enumerate() {
            at.push(name.clone());
            if let Some(child) = self.scopes.get(&at) {
                scope = child;
                continue;
            }
            at.pop();
            let rest = &path[i + 1..];
            if scope.defines.contains(name) || depth >= MAX_DEPTH {
                return Found::Item(scope.file);
            }
            if let (0, Some(&file)) = (i, self.exported_macros.get(name)) {
                return Found::Item(file);
            }
            if let Some(written) = scope.uses.get(name) {
                // A re-export: the item lives where the `use` points. One that points
                // out of the crate keeps the item here.
                return match self.relative(&at, written, depth + 1) {
                    Some(mut target) => {
                        target.extend_from_slice(rest);
                        match self.find(&target, depth + 1) {
                            Found::Module(file) => Found::Module(file),
                            Found::Item(file) | Found::Missing(file) => Found::Item(file),
                        }
                    }
                    None => Found::Item(scope.file),
                };
            }
            for glob in &scope.globs {
                let Some(mut target) = self.relative(&at, glob, depth + 1) else {
                    continue;
                };
                target.push(name.clone());
                target.extend_from_slice(rest);
                match self.find(&target, depth + 1) {
                    Found::Missing(_) => {}
                    found => return found,
                }
            }
            return Found::Missing(scope.file);
        }
        Found::Module(scope.file)
    }

    /// A path as written in the scope `at`, made absolute. Besides the anchored forms it
    /// takes the 2018 relative ones a re-export uses: `pub use leaf::Leaf` names the child
    /// module `leaf`, `pub use Imported::*` a name an earlier `use` brought in.
    pub fn relative(&self, at: &[String], written: &[String], depth: usize) -> Option<Vec<String>> {
        if let Some(absolute) = anchored(at, written) {
            return Some(absolute);
        }
        let (first, rest) = written.split_first()?;
        let mut child = at.to_vec();
        child.push(first.clone());
        if self.scopes.contains_key(&child) {
            child.extend_from_slice(rest);
            return Some(child);
        }
        let alias = self.scopes.get(at)?.uses.get(first)?;
        // `use serde_json;` binds an extern crate to its own name: out of the crate.
        if depth >= MAX_DEPTH || alias.as_slice() == [first.clone()] {
            return None;
        }
        let mut target = self.relative(at, alias, depth + 1)?;
        target.extend_from_slice(rest);
        Some(target)
    }
}

/// A path that starts with `crate`, `self` or `super`, written in the module `at`, made
/// absolute; `None` for any other start (an extern crate, a local name).
pub fn anchored(at: &[String], written: &[String]) -> Option<Vec<String>> {
    let (first, tail) = written.split_first()?;
    let (mut base, mut rest) = match first.as_str() {
        "crate" => (Vec::new(), tail),
        "self" => (at.to_vec(), tail),
        "super" => (at.to_vec(), written),
        _ => return None,
    };
    while let Some((first, tail)) = rest.split_first() {
        if first != "super" {
            break;
        }
        base.pop()?; // `super` above the crate root does not compile; nothing to resolve
        rest = tail;
    }
    base.extend_from_slice(rest);
    Some(base)
}
