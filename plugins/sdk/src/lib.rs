//! leafgate-plugin: write a leafgate policy plugin in a few lines.
//!
//! This crate owns the guest side of the plugin ABI: the bindings generated from the WIT it
//! carries (`wit/plugin.wit`, the repository's `wit/plugin.wit` itself; never restated by
//! hand), the export macro of each world, and typed helpers for what every plugin does
//! (read its config, log, read Kubernetes objects).
//! It knows nothing about the gateway's internals.
//!
//! A plugin picks one world, implements that world's `Guest` trait and exports it:
//!
//! ```ignore
//! use leafgate_plugin::pod_router::{Guest, RouteDecision, RouteRequest};
//!
//! struct Router;
//! impl Guest for Router {
//!     fn route(req: RouteRequest) -> RouteDecision {
//!         match req.leaves().next() {
//!             Some(leaf) => RouteDecision::Leaf(leaf.to_string()),
//!             None => RouteDecision::Default,
//!         }
//!     }
//! }
//! leafgate_plugin::export_pod_router!(Router);
//! ```
//!
//! See `plugins/README.md` for the whole walk from `cargo new` to a loaded plugin.

pub mod k8s;

/// Bindings of the `pod-router` world, and the `host` and `types` interfaces every world
/// shares (the other worlds reuse these through `with`, so there is one `RouteRequest`,
/// one `log`, ...).
// The generated ABI glue passes flattened records as many arguments.
#[allow(clippy::too_many_arguments)]
pub mod pod_router {
    wit_bindgen::generate!({
        world: "pod-router",
        path: "wit",
        generate_all,
        pub_export_macro: true,
        export_macro_name: "export_pod_router",
        default_bindings_module: "leafgate_plugin::pod_router",
    });
    pub use leafgate::plugin::types::{Rejection, Verb};
}

/// Bindings of the `address-rewriter` world.
// The generated ABI glue passes flattened records as many arguments.
#[allow(clippy::too_many_arguments)]
pub mod address_rewriter {
    wit_bindgen::generate!({
        world: "address-rewriter",
        path: "wit",
        with: {
            "leafgate:plugin/host": crate::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": crate::pod_router::leafgate::plugin::types,
        },
        pub_export_macro: true,
        export_macro_name: "export_address_rewriter",
        default_bindings_module: "leafgate_plugin::address_rewriter",
    });
    pub use crate::types::AddressType;
}

/// Bindings of the `log-filter` world.
// The generated ABI glue passes flattened records as many arguments.
#[allow(clippy::too_many_arguments)]
pub mod log_filter {
    wit_bindgen::generate!({
        world: "log-filter",
        path: "wit",
        with: {
            "leafgate:plugin/host": crate::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": crate::pod_router::leafgate::plugin::types,
        },
        pub_export_macro: true,
        export_macro_name: "export_log_filter",
        default_bindings_module: "leafgate_plugin::log_filter",
    });
    pub use crate::types::Action;

    /// The lines of a batch, in order: `lines` split at each `\n`. A batch always holds at
    /// least one line and a line never contains `\n`, so this yields exactly one item per
    /// line the gateway sent (an empty item is an empty log line).
    pub fn lines(batch: &str) -> Lines<'_> {
        Lines::of(batch)
    }

    pub use crate::Lines;

    /// One line's verdict, the way a filter usually thinks of it; [`Verdicts`] collects
    /// them into the compact shape the `filter` export answers.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub enum Verdict {
        Keep,
        Drop,
        Replace(String),
    }

    impl Verdicts {
        /// Room for `lines` verdicts.
        pub fn with_capacity(lines: usize) -> Self {
            Verdicts {
                actions: Vec::with_capacity(lines),
                replacements: Vec::new(),
            }
        }

        /// Appends the next line's verdict.
        pub fn push(&mut self, verdict: Verdict) {
            match verdict {
                Verdict::Keep => self.actions.push(Action::Keep),
                Verdict::Drop => self.actions.push(Action::Drop),
                Verdict::Replace(text) => {
                    self.actions.push(Action::Replace);
                    self.replacements.push(text);
                }
            }
        }
    }

    impl FromIterator<Verdict> for Verdicts {
        fn from_iter<I: IntoIterator<Item = Verdict>>(iter: I) -> Self {
            let iter = iter.into_iter();
            let mut out = Verdicts::with_capacity(iter.size_hint().0);
            iter.for_each(|v| out.push(v));
            out
        }
    }
}

/// Bindings of the `table-formatter` world.
// The generated ABI glue passes flattened records as many arguments.
#[allow(clippy::too_many_arguments)]
pub mod table_formatter {
    wit_bindgen::generate!({
        world: "table-formatter",
        path: "wit",
        with: {
            "leafgate:plugin/host": crate::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": crate::pod_router::leafgate::plugin::types,
        },
        pub_export_macro: true,
        export_macro_name: "export_table_formatter",
        default_bindings_module: "leafgate_plugin::table_formatter",
    });
    pub use crate::types::{Cell, Column, ColumnType, Row};
}

pub use address_rewriter::export_address_rewriter;
pub use log_filter::export_log_filter;
pub use pod_router::export_pod_router;
pub use table_formatter::export_table_formatter;

/// Every record the worlds exchange.
pub use pod_router::leafgate::plugin::types;

/// Structured logging into the gateway's tracing, tagged there with tenant and plugin.
pub mod log {
    use crate::pod_router::leafgate::plugin::host::{self, Level};

    pub fn trace(message: &str) {
        host::log(Level::Trace, message);
    }
    pub fn debug(message: &str) {
        host::log(Level::Debug, message);
    }
    pub fn info(message: &str) {
        host::log(Level::Info, message);
    }
    pub fn warn(message: &str) {
        host::log(Level::Warn, message);
    }
    pub fn error(message: &str) {
        host::log(Level::Error, message);
    }
}

/// The plugin's `config = { ... }` table, as JSON text exactly as the gateway passes it.
pub fn config_json() -> String {
    pod_router::leafgate::plugin::host::config()
}

/// The plugin's config parsed into `T`.
///
/// Parse it once and keep it (a `std::sync::OnceLock` static): the gateway keeps warm
/// instances, so the parsed value (compiled regexes and all) serves many calls.
pub fn config<T: serde::de::DeserializeOwned>() -> Result<T, String> {
    let text = config_json();
    serde_json::from_str(&text).map_err(|e| format!("the plugin config is invalid: {e}"))
}

/// Like [`config`], but a config the plugin cannot use is fatal: the reason goes to the
/// gateway's log and to stderr (which the gateway puts in the error), then the call traps.
pub fn config_or_trap<T: serde::de::DeserializeOwned>() -> T {
    match config() {
        Ok(c) => c,
        Err(message) => {
            log::error(&message);
            panic!("{message}");
        }
    }
}

impl pod_router::RouteRequest {
    /// The value of a pod label, when the gateway knows the pod's labels.
    pub fn label(&self, key: &str) -> Option<&str> {
        let text = self.labels.as_deref()?;
        // Compares each line's head with `key=` in place: no split at `=` of lines whose
        // key is of another length.
        entries(text).find_map(|line| {
            let rest = line.strip_prefix(key)?;
            rest.strip_prefix('=')
        })
    }

    /// The pod's labels as `(key, value)` pairs sorted by key, read from the request's
    /// `key=value` lines without copying; `None` when the gateway does not know the pod.
    pub fn labels(&self) -> Option<impl Iterator<Item = (&str, &str)>> {
        let text = self.labels.as_deref()?;
        Some(
            entries(text).map(|line| match memchr::memchr(b'=', line.as_bytes()) {
                Some(at) => (&line[..at], &line[at + 1..]),
                None => (line, ""),
            }),
        )
    }

    /// The leaves the gateway knows, by name, read from the request's lines without
    /// copying.
    pub fn leaves(&self) -> impl Iterator<Item = &str> {
        entries(&self.leaves)
    }

    /// Whether `leaf` is one of the leaves the gateway knows (a `leaf` answer must be).
    pub fn knows_leaf(&self, leaf: &str) -> bool {
        self.leaves().any(|l| l == leaf)
    }
}

/// The parts of a text cut at each `\n`, as `str::split('\n')` gives them: a log batch's
/// lines, a pod-router request's lists. It finds newlines with the `memchr` crate, which
/// scans 16 bytes at a time in WebAssembly (`simd128`); `str::split`'s char searcher scans
/// a byte or a word at a time there, which costs a plugin more than its own work.
pub struct Lines<'a> {
    text: &'a str,
    /// Where the next part starts; past the end once the last part was yielded.
    start: usize,
    newlines: memchr::Memchr<'a>,
}

impl<'a> Lines<'a> {
    pub fn of(text: &'a str) -> Self {
        Lines {
            text,
            start: 0,
            newlines: memchr::memchr_iter(b'\n', text.as_bytes()),
        }
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let start = self.start;
        let end = match self.newlines.next() {
            Some(newline) => newline,
            None if start <= self.text.len() => self.text.len(),
            None => return None,
        };
        self.start = end + 1;
        // Cut at a `\n`, which is never inside a UTF-8 sequence.
        Some(&self.text[start..end])
    }
}

/// The entries of a `\n`-joined list of the pod-router request; none for `""` (where a
/// log batch's `""` is one empty line).
fn entries(text: &str) -> impl Iterator<Item = &str> {
    (!text.is_empty())
        .then(|| Lines::of(text))
        .into_iter()
        .flatten()
}

/// Matches `text` against a glob where `*` stands for any run of characters
/// (`edge-*`, `*-prod`, `team-*-db`). Routing configs use these for names and labels.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    // No allocation: routers call this on every request.
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let (middles, last) = rest.rsplit_once('*').unwrap_or(("", rest));
    if text.len() < first.len() + last.len() || !text.starts_with(first) || !text.ends_with(last) {
        return false;
    }
    let mut between = &text[first.len()..text.len() - last.len()];
    for middle in middles.split('*') {
        match between.find(middle) {
            Some(i) => between = &between[i + middle.len()..],
            None => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::{entries, glob_match};

    #[test]
    fn lines_of_a_joined_list() {
        fn all(t: &str) -> Vec<&str> {
            entries(t).collect()
        }
        assert_eq!(all(""), Vec::<&str>::new());
        assert_eq!(all("a"), ["a"]);
        assert_eq!(all("a\nbb\nc"), ["a", "bb", "c"]);
        assert_eq!(all("a\n\nc"), ["a", "", "c"]);
    }

    #[test]
    fn globs() {
        assert!(glob_match("edge-*", "edge-1"));
        assert!(glob_match("edge-*", "edge-"));
        assert!(!glob_match("edge-*", "core-1"));
        assert!(glob_match("*-prod", "api-prod"));
        assert!(glob_match("team-*-db", "team-a-db"));
        assert!(!glob_match("team-*-db", "team-a-dbx"));
        assert!(glob_match("exact", "exact"));
        assert!(!glob_match("a*a", "a"));
        assert!(glob_match("a*b*c*d", "a-b-c-d"));
        assert!(!glob_match("a*c*b*d", "a-b-c-d"));
        assert!(glob_match("*", ""));
        assert!(glob_match("**", "x"));
    }
}
