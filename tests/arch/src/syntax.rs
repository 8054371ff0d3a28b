//! Small readings of `syn` trees that the rest of the checker shares: is an item test-only,
//! what a `use` tree binds, which line a token sits on. No knowledge of files or modules.

use proc_macro2::Span;
use syn::punctuated::Punctuated;
use syn::{Attribute, Item, Meta, Token, UseTree};

/// True when `attrs` hold a `#[cfg(..)]` that is only ever on in test builds: `cfg(test)`
/// or an `all(..)` with `test` in it. `any(test, ..)` and `not(test)` also build outside
/// tests, so they do not count.
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg")
            && attr
                .parse_args::<Meta>()
                .is_ok_and(|meta| test_only_predicate(&meta))
    })
}

fn test_only_predicate(meta: &Meta) -> bool {
    match meta {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|preds| preds.iter().any(test_only_predicate)),
        _ => false,
    }
}

/// The attributes of any item; syn has no accessor common to every variant.
pub fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

/// The name an item puts in its module's namespace, for items that define one.
/// `use` and `impl` define nothing here: uses are followed separately, impls have no name.
pub fn item_name(item: &Item) -> Option<String> {
    let ident = match item {
        Item::Const(i) => &i.ident,
        Item::Enum(i) => &i.ident,
        Item::Fn(i) => &i.sig.ident,
        Item::Macro(i) => i.ident.as_ref()?,
        Item::Mod(i) => &i.ident,
        Item::Static(i) => &i.ident,
        Item::Struct(i) => &i.ident,
        Item::Trait(i) => &i.ident,
        Item::TraitAlias(i) => &i.ident,
        Item::Type(i) => &i.ident,
        Item::Union(i) => &i.ident,
        _ => return None,
    };
    Some(ident.to_string())
}

/// The 1-based line a token starts on (needs proc-macro2's `span-locations`).
pub fn line(span: Span) -> usize {
    span.start().line
}

/// One leaf of a `use` tree: the full path as written and what it brings into scope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UseLeaf {
    /// The segments as written, `self` in a group already folded into its prefix:
    /// `use crate::a::{self, b::C as D}` gives `crate::a` and `crate::a::b::C`.
    pub segments: Vec<String>,
    pub binds: Binding,
    pub line: usize,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Binding {
    /// `use a::B` or `use a::C as B` binds `B`.
    Name(String),
    /// `use a::*` binds whatever `a` holds.
    Glob,
}

/// Every leaf of a `use` tree. A tree with a leading `::` names an extern crate and is
/// left out.
pub fn use_leaves(item: &syn::ItemUse) -> Vec<UseLeaf> {
    let mut leaves = Vec::new();
    if item.leading_colon.is_none() {
        flatten(&item.tree, &mut Vec::new(), &mut leaves);
    }
    leaves
}

fn flatten(tree: &UseTree, prefix: &mut Vec<String>, out: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.to_string());
            flatten(&p.tree, prefix, out);
            prefix.pop();
        }
        UseTree::Name(n) => out.push(leaf(prefix, &n.ident, None)),
        UseTree::Rename(r) => out.push(leaf(prefix, &r.ident, Some(&r.rename))),
        UseTree::Glob(g) => out.push(UseLeaf {
            segments: prefix.clone(),
            binds: Binding::Glob,
            line: line(g.star_token.span),
        }),
        UseTree::Group(g) => {
            for tree in &g.items {
                flatten(tree, prefix, out);
            }
        }
    }
}

fn leaf(prefix: &[String], ident: &syn::Ident, rename: Option<&syn::Ident>) -> UseLeaf {
    let mut segments = prefix.to_vec();
    // `{self}` in a group names the prefix itself.
    if ident != "self" {
        segments.push(ident.to_string());
    }
    let bound = match rename {
        Some(rename) => rename.to_string(),
        None => segments.last().cloned().unwrap_or_default(),
    };
    UseLeaf {
        segments,
        binds: Binding::Name(bound),
        line: line(ident.span()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaves(src: &str) -> Vec<(String, Binding)> {
        let item: syn::ItemUse = syn::parse_str(src).unwrap();
        use_leaves(&item)
            .into_iter()
            .map(|l| (l.segments.join("::"), l.binds))
            .collect()
    }

    #[test]
    fn use_groups_flatten_with_self_and_renames() {
        assert_eq!(
            leaves("use crate::{a::X, b::{self, Y as Z}, c::*};"),
            vec![
                ("crate::a::X".into(), Binding::Name("X".into())),
                ("crate::b".into(), Binding::Name("b".into())),
                ("crate::b::Y".into(), Binding::Name("Z".into())),
                ("crate::c".into(), Binding::Glob),
            ]
        );
        assert!(leaves("use ::std::fmt;").is_empty());
    }

    #[test]
    fn only_test_only_cfgs_count() {
        let attrs = |src: &str| syn::parse_str::<syn::ItemFn>(src).unwrap().attrs;
        assert!(is_test_only(&attrs("#[cfg(test)] fn f() {}")));
        assert!(is_test_only(&attrs("#[cfg(all(unix, test))] fn f() {}")));
        assert!(!is_test_only(&attrs("#[cfg(any(test, unix))] fn f() {}")));
        assert!(!is_test_only(&attrs("#[cfg(not(test))] fn f() {}")));
        assert!(!is_test_only(&attrs("#[inline] fn f() {}")));
    }
}
