//! Picks the route for a request: by host first, then by path.
//!
//! Host: an exact name beats a wildcard, the longest wildcard suffix wins (at equal suffix
//! the one-label wildcard of Ingress hosts before the TOML one, which matches one or more
//! labels), and `*` comes last; the host is matched case-insensitively without its port. Once a host is chosen its
//! paths decide (as a virtual host does in nginx or Envoy; there is no fall-through to a
//! less specific host). Path: an exact match beats the longest prefix. A prefix matches
//! whole path segments, as Kubernetes Ingress `Prefix` does: `/api` matches `/api` and
//! `/api/v1` but not `/apis`.
//!
//! The table is built once per snapshot and only read afterwards; it allocates nothing
//! per lookup. A change to a few hosts (an Ingress edited) makes the next snapshot's table
//! from this one ([`Router::with_hosts`]): every other host's paths are shared (`Arc`), not
//! built again.

pub mod path;

// foldhash, not SipHash: the table is looked up on every request and copied at every
// Ingress change; its per-process random seed still keeps crafted hosts from colliding on
// purpose.
use std::sync::Arc;

use foldhash::{HashMap, HashMapExt};

use crate::config::{HostPattern, PathMatch, one_label_before};

/// A routing table over values `T` (the snapshot's routes).
#[derive(Debug)]
pub struct Router<T> {
    /// Keys and paths shared with the tables made from this one.
    exact: HashMap<Arc<str>, Arc<Paths<T>>>,
    /// Longest suffix first; at equal suffix the one-label kind first.
    wildcard: Vec<Wildcard<T>>,
    any: Option<Arc<Paths<T>>>,
}

#[derive(Debug)]
struct Wildcard<T> {
    /// `.example.com`.
    suffix: String,
    /// Exactly one label before the suffix (Ingress), or one or more (TOML).
    one_label: bool,
    paths: Arc<Paths<T>>,
}

impl<T> Wildcard<T> {
    fn matches(&self, host: &str) -> bool {
        match self.one_label {
            true => one_label_before(host, &self.suffix),
            false => host.len() > self.suffix.len() && host.ends_with(self.suffix.as_str()),
        }
    }
}

#[derive(Debug)]
struct Paths<T> {
    exact: HashMap<String, T>,
    /// Longest prefix first.
    prefix: Vec<(String, T)>,
}

impl<T> Default for Paths<T> {
    fn default() -> Self {
        Self {
            exact: HashMap::new(),
            prefix: Vec::new(),
        }
    }
}

impl<T> Paths<T> {
    /// Adds one entry; an exact path or a prefix already there keeps its first value.
    fn add(&mut self, path: PathMatch, value: T) {
        match path {
            PathMatch::Exact(p) => {
                self.exact.entry(p).or_insert(value);
            }
            PathMatch::Prefix(p) => {
                if !self.prefix.iter().any(|(q, _)| *q == p) {
                    self.prefix.push((p, value));
                }
            }
        }
    }

    /// Puts the longest prefix first, once every entry is in.
    fn sorted(mut self) -> Arc<Self> {
        self.prefix.sort_by_key(|(q, _)| std::cmp::Reverse(q.len()));
        Arc::new(self)
    }

    fn lookup(&self, path: &str) -> Option<&T> {
        if let Some(t) = self.exact.get(path) {
            return Some(t);
        }
        self.prefix
            .iter()
            .find(|(p, _)| prefix_matches(p, path))
            .map(|(_, t)| t)
    }
}

/// Whether the prefix `prefix` matches `path` by whole segments (`/api` matches `/api`
/// and `/api/v1`, not `/apis`).
pub fn prefix_matches(prefix: &str, path: &str) -> bool {
    path.starts_with(prefix)
        && (prefix.ends_with('/')
            || path.len() == prefix.len()
            || path.as_bytes()[prefix.len()] == b'/')
}

impl<T> Router<T> {
    /// Builds the table. Validation already rejected duplicate (host, path) pairs; if one
    /// slips through, the first entry wins.
    pub fn new(entries: impl IntoIterator<Item = (HostPattern, PathMatch, T)>) -> Self {
        // Sized for as many exact hosts as there are entries with one (most hosts have one
        // path), the table is never grown entry by entry: a large config has tens of
        // thousands. Collecting a `Vec` into a `Vec` moves nothing.
        let entries: Vec<_> = entries.into_iter().collect();
        let hosts = entries
            .iter()
            .filter(|(host, _, _)| matches!(host, HostPattern::Exact(_)))
            .count();
        let mut exact: HashMap<String, Paths<T>> = HashMap::with_capacity(hosts);
        let mut wildcard: HashMap<(String, bool), Paths<T>> = HashMap::new();
        let mut any: Option<Paths<T>> = None;
        for (host, path, value) in entries {
            let paths = match host {
                HostPattern::Exact(h) => exact.entry(h).or_default(),
                HostPattern::Wildcard(s) => wildcard.entry((s, false)).or_default(),
                HostPattern::WildcardLabel(s) => wildcard.entry((s, true)).or_default(),
                HostPattern::Any => any.get_or_insert_with(Paths::default),
            };
            paths.add(path, value);
        }
        Self {
            exact: exact
                .into_iter()
                .map(|(host, paths)| (Arc::from(host), paths.sorted()))
                .collect(),
            wildcard: wildcards(
                wildcard
                    .into_iter()
                    .map(|(key, paths)| (key, paths.sorted())),
            ),
            any: any.map(Paths::sorted),
        }
    }

    /// This table with the paths of each host in `hosts` replaced by the entries given for
    /// it (none: the host is gone), as [`Router::new`] would build them; every other host
    /// keeps the same paths, shared with this table. A host named twice gets its last
    /// entries.
    pub fn with_hosts(
        &self,
        hosts: impl IntoIterator<Item = (HostPattern, Vec<(PathMatch, T)>)>,
    ) -> Self {
        let mut exact = self.exact.clone();
        let mut wildcard: HashMap<(String, bool), Arc<Paths<T>>> = self
            .wildcard
            .iter()
            .map(|w| ((w.suffix.clone(), w.one_label), w.paths.clone()))
            .collect();
        let mut any = self.any.clone();
        for (host, entries) in hosts {
            let paths = (!entries.is_empty()).then(|| {
                let mut paths = Paths::default();
                for (path, value) in entries {
                    paths.add(path, value);
                }
                paths.sorted()
            });
            let key = match host {
                HostPattern::Exact(h) => {
                    match paths {
                        Some(p) => exact.insert(Arc::from(h), p),
                        None => exact.remove(h.as_str()),
                    };
                    continue;
                }
                HostPattern::Any => {
                    any = paths;
                    continue;
                }
                HostPattern::Wildcard(s) => (s, false),
                HostPattern::WildcardLabel(s) => (s, true),
            };
            match paths {
                Some(p) => wildcard.insert(key, p),
                None => wildcard.remove(&key),
            };
        }
        Self {
            exact,
            wildcard: wildcards(wildcard),
            any,
        }
    }

    /// The route for `host` (as sent: any case, maybe with a port) and `path`.
    pub fn lookup(&self, host: &str, path: &str) -> Option<&T> {
        let host = strip_port(host);
        let lowered;
        let host = if host.bytes().any(|b| b.is_ascii_uppercase()) {
            lowered = host.to_ascii_lowercase();
            lowered.as_str()
        } else {
            host
        };
        let host = host.strip_suffix('.').unwrap_or(host);
        let paths = self.exact.get(host).or_else(|| {
            self.wildcard
                .iter()
                .find(|w| w.matches(host))
                .map(|w| &w.paths)
                .or(self.any.as_ref())
        })?;
        paths.lookup(path)
    }

    pub fn is_empty(&self) -> bool {
        self.exact.is_empty() && self.wildcard.is_empty() && self.any.is_none()
    }
}

/// The wildcard hosts in lookup order: longest suffix first; at equal suffix the one-label
/// kind first.
fn wildcards<T>(
    by_suffix: impl IntoIterator<Item = ((String, bool), Arc<Paths<T>>)>,
) -> Vec<Wildcard<T>> {
    let mut wildcard: Vec<_> = by_suffix
        .into_iter()
        .map(|((suffix, one_label), paths)| Wildcard {
            suffix,
            one_label,
            paths,
        })
        .collect();
    wildcard.sort_by_key(|w| (std::cmp::Reverse(w.suffix.len()), !w.one_label));
    wildcard
}

/// `example.com:8080` -> `example.com`, `[::1]:80` -> `[::1]`.
pub fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.find(']').map_or(host, |i| &host[..=i]);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn router(entries: &[(&str, PathMatch, &'static str)]) -> Router<&'static str> {
        Router::new(
            entries
                .iter()
                .map(|(h, p, v)| (HostPattern::parse(h).unwrap(), p.clone(), *v)),
        )
    }

    fn prefix(p: &str) -> PathMatch {
        PathMatch::Prefix(p.into())
    }

    #[test]
    fn exact_host_beats_wildcard_and_longest_suffix_wins() {
        let r = router(&[
            ("*", prefix("/"), "any"),
            ("*.example.com", prefix("/"), "wild"),
            ("*.api.example.com", prefix("/"), "wild-api"),
            ("app.example.com", prefix("/"), "app"),
        ]);
        assert_eq!(r.lookup("APP.example.com:8443", "/"), Some(&"app"));
        assert_eq!(r.lookup("x.example.com", "/"), Some(&"wild"));
        assert_eq!(r.lookup("v1.api.example.com", "/"), Some(&"wild-api"));
        assert_eq!(r.lookup("example.com", "/"), Some(&"any"));
        assert_eq!(r.lookup("app.example.com.", "/"), Some(&"app"));
    }

    #[test]
    fn the_one_label_wildcard_comes_before_the_toml_one_at_equal_suffix() {
        let mut entries: Vec<(HostPattern, PathMatch, &str)> = vec![
            (HostPattern::parse("*").unwrap(), prefix("/"), "any"),
            (
                HostPattern::parse("*.example.com").unwrap(),
                prefix("/"),
                "toml",
            ),
            (
                HostPattern::parse_ingress("*.example.com").unwrap(),
                prefix("/"),
                "ingress",
            ),
            (
                HostPattern::parse_ingress("*.b.example.com").unwrap(),
                PathMatch::Exact("/only".into()),
                "ingress-b",
            ),
        ];
        for _ in 0..2 {
            let r = Router::new(entries.iter().cloned());
            assert_eq!(r.lookup("a.example.com", "/"), Some(&"ingress"));
            assert_eq!(r.lookup("A.Example.COM:443", "/"), Some(&"ingress"));
            // Two labels: not the Ingress wildcard; the TOML one takes it.
            assert_eq!(r.lookup("x.a.example.com", "/"), Some(&"toml"));
            // The longer one-label suffix is chosen, and it does not fall through.
            assert_eq!(r.lookup("a.b.example.com", "/only"), Some(&"ingress-b"));
            assert_eq!(r.lookup("a.b.example.com", "/other"), None);
            assert_eq!(r.lookup("x.a.b.example.com", "/"), Some(&"toml"));
            assert_eq!(r.lookup("example.com", "/"), Some(&"any"));
            // Whatever order the entries come in.
            entries.reverse();
        }
        let only_ingress = Router::new([(
            HostPattern::parse_ingress("*.example.com").unwrap(),
            prefix("/"),
            "ingress",
        )]);
        assert_eq!(only_ingress.lookup("x.a.example.com", "/"), None);
        assert_eq!(only_ingress.lookup(".example.com", "/"), None);
    }

    #[test]
    fn exact_path_beats_longest_prefix_on_segment_boundaries() {
        let r = router(&[
            ("a", prefix("/"), "root"),
            ("a", prefix("/api"), "api"),
            ("a", prefix("/api/v2/"), "v2"),
            ("a", PathMatch::Exact("/api/health".into()), "health"),
        ]);
        assert_eq!(r.lookup("a", "/api/health"), Some(&"health"));
        assert_eq!(r.lookup("a", "/api/health/x"), Some(&"api"));
        assert_eq!(r.lookup("a", "/api"), Some(&"api"));
        assert_eq!(r.lookup("a", "/apis"), Some(&"root"));
        assert_eq!(r.lookup("a", "/api/v2/x"), Some(&"v2"));
        assert_eq!(r.lookup("b", "/"), None);
    }

    #[test]
    fn a_chosen_host_does_not_fall_through() {
        let r = router(&[
            ("*", prefix("/"), "any"),
            ("a", PathMatch::Exact("/x".into()), "x"),
        ]);
        assert_eq!(r.lookup("a", "/y"), None);
    }

    #[test]
    fn with_hosts_replaces_only_the_hosts_named_and_shares_the_rest() {
        let before = router(&[
            ("*", prefix("/"), "any"),
            ("*.example.com", prefix("/"), "wild"),
            ("a", prefix("/"), "a"),
            ("a", prefix("/api"), "a-api"),
            ("b", prefix("/"), "b"),
            ("c", PathMatch::Exact("/x".into()), "c"),
        ]);
        let host = |h: &str| HostPattern::parse(h).unwrap();
        let after = before.with_hosts([
            // `a` loses its root, keeps its API, gains an exact path.
            (
                host("a"),
                vec![
                    (prefix("/api"), "a-api-2"),
                    (PathMatch::Exact("/h".into()), "a-h"),
                ],
            ),
            (host("b"), vec![]),
            (
                host("d"),
                vec![(prefix("/"), "d"), (prefix("/"), "d-second")],
            ),
            (host("*.x.example.com"), vec![(prefix("/"), "wild-x")]),
            (host("*"), vec![]),
        ]);
        let built = router(&[
            ("*.example.com", prefix("/"), "wild"),
            ("*.x.example.com", prefix("/"), "wild-x"),
            ("a", prefix("/api"), "a-api-2"),
            ("a", PathMatch::Exact("/h".into()), "a-h"),
            ("c", PathMatch::Exact("/x".into()), "c"),
            ("d", prefix("/"), "d"),
        ]);
        for (h, p) in [
            ("a", "/"),
            ("a", "/api/v1"),
            ("a", "/h"),
            ("b", "/"),
            ("c", "/x"),
            ("d", "/y"),
            ("v.example.com", "/"),
            ("v.x.example.com", "/"),
            ("elsewhere", "/"),
        ] {
            assert_eq!(after.lookup(h, p), built.lookup(h, p), "{h}{p}");
        }
        assert_eq!(after.lookup("d", "/"), Some(&"d"), "the first entry wins");
        assert_eq!(
            before.lookup("b", "/"),
            Some(&"b"),
            "the old table is untouched"
        );
        assert!(Arc::ptr_eq(&before.exact["c"], &after.exact["c"]));
        assert!(Arc::ptr_eq(
            &before.wildcard[0].paths,
            &after.wildcard[1].paths
        ));
    }

    #[test]
    fn ports_are_stripped() {
        assert_eq!(strip_port("h:80"), "h");
        assert_eq!(strip_port("[::1]:80"), "[::1]");
        assert_eq!(strip_port("h"), "h");
    }
}
