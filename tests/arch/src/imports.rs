//! The imports a file's own code makes: every `use` leaf (in fn bodies too) and every path
//! in types, expressions, patterns and impls, with the line it sits on. Test-only code is
//! skipped. Paths are returned as written; which of them are edges is decided by the caller.

use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Expr, ImplItem, Item, Token, TraitItem};

use crate::syntax::{is_test_only, item_attrs, line, use_leaves};

/// One path as written, in the (inline) module it was written in.
#[derive(Debug, Clone)]
pub struct Written {
    /// The absolute module path of the scope: the file's module, plus inline `mod`s.
    pub scope: Vec<String>,
    pub segments: Vec<String>,
    pub line: usize,
}

/// Every path of two or more segments, and every `use` leaf, in `file`'s non-test code.
pub fn collect(file: &syn::File, module: &[String]) -> Vec<Written> {
    let mut collector = Collector {
        scope: module.to_vec(),
        out: Vec::new(),
    };
    collector.visit_file(file);
    collector.out
}

struct Collector {
    scope: Vec<String>,
    out: Vec<Written>,
}

impl Collector {
    fn push(&mut self, segments: Vec<String>, line: usize) {
        self.out.push(Written {
            scope: self.scope.clone(),
            segments,
            line,
        });
    }
}

impl<'ast> Visit<'ast> for Collector {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    self.scope.push(m.ident.to_string());
                    for item in items {
                        self.visit_item(item);
                    }
                    self.scope.pop();
                }
            }
            Item::Use(u) => {
                for leaf in use_leaves(u) {
                    self.push(leaf.segments, leaf.line);
                }
            }
            // A macro's definition: its body is token patterns, not code to resolve.
            Item::Macro(m) if m.mac.path.is_ident("macro_rules") => {}
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        let attrs = match item {
            ImplItem::Const(i) => &i.attrs,
            ImplItem::Fn(i) => &i.attrs,
            ImplItem::Type(i) => &i.attrs,
            ImplItem::Macro(i) => &i.attrs,
            _ => return visit::visit_impl_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        let attrs = match item {
            TraitItem::Const(i) => &i.attrs,
            TraitItem::Fn(i) => &i.attrs,
            TraitItem::Type(i) => &i.attrs,
            TraitItem::Macro(i) => &i.attrs,
            _ => return visit::visit_trait_item(self, item),
        };
        if !is_test_only(attrs) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !is_test_only(&local.attrs) {
            visit::visit_local(self, local);
        }
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if !is_test_only(&arm.attrs) {
            visit::visit_arm(self, arm);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !is_test_only(&field.attrs) {
            visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !is_test_only(&variant.attrs) {
            visit::visit_variant(self, variant);
        }
    }

    // `pub(in crate::x)` limits who may see an item; it imports nothing.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        // One segment (`Foo`, `self`) names something already in scope; `::x` is extern.
        if path.leading_colon.is_none() && path.segments.len() > 1 {
            let segments = path.segments.iter().map(|s| s.ident.to_string()).collect();
            self.push(segments, line(path.segments[0].ident.span()));
        }
        visit::visit_path(self, path);
    }

    /// A macro call's path counts (`crate::m!`). Its arguments are tokens to syn; when they
    /// read as comma-separated expressions (`vec![..]`, `format!(..)`, `assert!(..)`) their
    /// paths count too. Any other macro body (`tracing::info!(a = %b, ..)`, `matches!`,
    /// `select!`) is not read: a path only written inside one is missed.
    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        if let Ok(args) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            for arg in &args {
                self.visit_expr(arg);
            }
        }
    }
}
