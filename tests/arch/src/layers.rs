//! The declared layer order: top-level modules, top to bottom, one layer a line, siblings
//! on one layer separated by commas. The order itself is written once, as `const LAYERS`
//! in `tests/layering.rs`; [`from_test_source`] lets the binary read that same constant.

use std::collections::HashMap;

/// A parsed layer order.
#[derive(Debug, Clone)]
pub struct Layers {
    /// Top-level module -> its layer, 0 at the top.
    rank: HashMap<String, usize>,
}

impl Layers {
    /// Parses the order: one layer a line, top first; `a, b` share a layer; blank lines
    /// and `#` comments are skipped. A module named twice is an error.
    pub fn parse(text: &str) -> Result<Layers, String> {
        let mut rank = HashMap::new();
        let rows = text
            .lines()
            .map(|line| line.split('#').next().unwrap_or("").trim())
            .filter(|line| !line.is_empty());
        for (layer, row) in rows.enumerate() {
            for module in row.split(',').map(str::trim) {
                if module.is_empty() {
                    return Err(format!("layer {}: an empty name in {row:?}", layer + 1));
                }
                if rank.insert(module.to_string(), layer).is_some() {
                    return Err(format!("`{module}` is declared twice"));
                }
            }
        }
        Ok(Layers { rank })
    }

    /// The layer of a top-level module, 0 at the top; `None` when it is not declared.
    pub fn rank(&self, module: &str) -> Option<usize> {
        self.rank.get(module).copied()
    }

    /// Puts `old` on `new`'s layer, for reading a tree from before a rename (`kube`, now
    /// `k8s`). False when `new` is not declared.
    pub fn alias(&mut self, old: &str, new: &str) -> bool {
        match self.rank(new) {
            Some(layer) => {
                self.rank.insert(old.to_string(), layer);
                true
            }
            None => false,
        }
    }
}

/// The text of `const LAYERS: &str = "..";` in a Rust source file.
pub fn from_test_source(source: &str) -> Result<String, String> {
    let file = syn::parse_file(source).map_err(|e| e.to_string())?;
    for item in &file.items {
        let syn::Item::Const(constant) = item else {
            continue;
        };
        if constant.ident != "LAYERS" {
            continue;
        }
        return match &*constant.expr {
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(text),
                ..
            }) => Ok(text.value()),
            _ => Err("`LAYERS` is not a string literal".to_string()),
        };
    }
    Err("no `const LAYERS` found".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layers_rank_top_down_with_siblings_on_one_layer() {
        let layers = Layers::parse("\n main\n a, b  # drivers\n\n c\n").unwrap();
        assert_eq!(layers.rank("main"), Some(0));
        assert_eq!(layers.rank("a"), Some(1));
        assert_eq!(layers.rank("b"), Some(1));
        assert_eq!(layers.rank("c"), Some(2));
        assert_eq!(layers.rank("d"), None);
        assert!(Layers::parse("a\nb, a").unwrap_err().contains("twice"));
    }

    #[test]
    fn an_alias_takes_the_new_name_s_layer() {
        let mut layers = Layers::parse("a\nk8s\n").unwrap();
        assert!(layers.alias("kube", "k8s"));
        assert_eq!(layers.rank("kube"), Some(1));
        assert!(!layers.alias("x", "nope"));
    }

    #[test]
    fn the_constant_is_read_from_a_test_file() {
        let source = "use x::y;\nconst LAYERS: &str = \"\n a\n b\n\";\n#[test]\nfn t() {}\n";
        assert_eq!(from_test_source(source).unwrap(), "\n a\n b\n");
        assert!(from_test_source("const OTHER: u8 = 1;").is_err());
    }
}
