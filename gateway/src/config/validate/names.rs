//! Names and places that must be unique: entries' names per kind, and routes' (host, path)
//! pairs on the listeners they share.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::ops::Range;
use std::sync::Arc;

use toml::Spanned;

use crate::config::error::Reporter;
use crate::config::model::RouteConfig;

/// Names of one kind of entry, each unique; the span of each is kept for the error that
/// finds its duplicate.
#[derive(Default)]
pub(super) struct Names(HashMap<String, Range<usize>>);

impl Names {
    pub(super) fn insert(
        &mut self,
        report: &mut Reporter<'_>,
        name: &Spanned<String>,
        key: &str,
        what: &str,
    ) {
        if name.get_ref().is_empty() {
            report.error(
                name.span(),
                key.to_string(),
                format!("a {what} needs a non-empty name"),
            );
        } else if let Some(first) = self.0.get(name.get_ref()) {
            let (line, col) = report.line_column(first.start);
            report.error(
                name.span(),
                key.to_string(),
                format!(
                    "duplicate {what} name `{}` (first at {line}:{col}); names must be unique",
                    name.get_ref()
                ),
            );
        } else {
            self.0.insert(name.get_ref().clone(), name.span());
        }
    }

    pub(super) fn contains(&self, name: &str) -> bool {
        self.0.contains_key(name)
    }

    /// The names, sorted.
    pub(super) fn sorted(&self) -> Vec<String> {
        let mut v: Vec<String> = self.0.keys().cloned().collect();
        v.sort_unstable();
        v
    }
}

/// The routes validated so far, by (host, path), to find duplicates: per hash of the pair a
/// chain of sites, newest first, each pointing into the routes themselves, so that no host
/// or path is copied per route (a config may have tens of thousands).
pub(super) struct Sites {
    heads: HashMap<u64, usize, foldhash::fast::RandomState>,
    sites: Vec<Site>,
    hasher: foldhash::fast::RandomState,
}

struct Site {
    /// Index into the routes.
    route: usize,
    /// The span of the route's path (or host).
    place: Range<usize>,
    next: Option<usize>,
}

impl Sites {
    /// Room for `routes` routes, so that the index is not grown route by route.
    pub(super) fn with_capacity(routes: usize) -> Self {
        let hasher = foldhash::fast::RandomState::default();
        Self {
            heads: HashMap::with_capacity_and_hasher(routes, hasher.clone()),
            sites: Vec::with_capacity(routes),
            hasher,
        }
    }

    /// Records `route`, about to be pushed onto `routes`, defined at `place`; returns the
    /// place of the first earlier route with the same host and path on a listener it
    /// shares, if any.
    pub(super) fn add(
        &mut self,
        routes: &[Arc<RouteConfig>],
        route: &RouteConfig,
        place: Range<usize>,
    ) -> Option<Range<usize>> {
        let hash = self.hasher.hash_one((&route.host, &route.path));
        let mut first = None;
        let mut at = self.heads.get(&hash).copied();
        while let Some(s) = at {
            let site = &self.sites[s];
            let other = &routes[site.route];
            if other.host == route.host
                && other.path == route.path
                && overlaps(&other.listeners, &route.listeners)
            {
                // Newest first: the last match is the first defined.
                first = Some(site.place.clone());
            }
            at = site.next;
        }
        let next = self.heads.insert(hash, self.sites.len());
        self.sites.push(Site {
            route: routes.len(),
            place,
            next,
        });
        first
    }
}

fn overlaps(a: &Option<Vec<String>>, b: &Option<Vec<String>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => a.iter().any(|x| b.contains(x)),
        _ => true,
    }
}

/// True when some namespace matches both patterns (`*` any run of characters, as
/// [`glob_matches`](crate::config::model::glob_matches) reads them): `team-*` and `team-b`,
/// `team-*` and `*-prod` (both match `team-prod`). The two patterns are walked together,
/// as the product of their automata: from (i, j), a `*` may end (step past it) or take a
/// character the other side takes; two literals step together when equal. Both ends
/// reached together means a common string exists.
pub(super) fn globs_overlap(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut seen = vec![false; (a.len() + 1) * (b.len() + 1)];
    let mut stack = vec![(0, 0)];
    while let Some((i, j)) = stack.pop() {
        let slot = i * (b.len() + 1) + j;
        if std::mem::replace(&mut seen[slot], true) {
            continue;
        }
        if i == a.len() && j == b.len() {
            return true;
        }
        let (x, y) = (a.get(i).copied(), b.get(j).copied());
        if x == Some('*') {
            stack.push((i + 1, j));
        }
        if y == Some('*') {
            stack.push((i, j + 1));
        }
        match (x, y) {
            // The star takes the other side's literal and stays.
            (Some('*'), Some(c)) if c != '*' => stack.push((i, j + 1)),
            (Some(c), Some('*')) if c != '*' => stack.push((i + 1, j)),
            (Some(c), Some(d)) if c == d && c != '*' => stack.push((i + 1, j + 1)),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::globs_overlap;
    use crate::config::model::glob_matches;

    #[test]
    fn globs_overlap_when_some_namespace_matches_both() {
        for (a, b) in [
            ("team-*", "team-b"),
            ("team-b", "team-b"),
            ("team-*", "*-prod"),
            ("*", "anything"),
            ("a*b*c", "*bb*"),
            ("team-*", "team-"),
            ("*", ""),
        ] {
            assert!(globs_overlap(a, b), "{a} vs {b}");
            assert!(globs_overlap(b, a), "{b} vs {a}");
        }
        for (a, b) in [
            ("team-a", "team-b"),
            ("team-a-*", "team-b-*"),
            ("*-prod", "*-dev"),
            ("a*", "b*"),
            ("other", "team-*"),
            ("ab", "a"),
        ] {
            assert!(!globs_overlap(a, b), "{a} vs {b}");
            assert!(!globs_overlap(b, a), "{b} vs {a}");
        }
    }

    /// Against brute force: every pattern pair over a small alphabet, and every string up
    /// to a length both could need.
    #[test]
    fn globs_overlap_agrees_with_brute_force() {
        let patterns = [
            "", "*", "a", "b", "a*", "*a", "*b", "ab", "a*b", "*ab*", "b*a", "aa*",
        ];
        let mut strings = vec![String::new()];
        for _ in 0..4 {
            let next: Vec<String> = strings
                .iter()
                .flat_map(|s| [format!("{s}a"), format!("{s}b")])
                .collect();
            strings.extend(next);
        }
        strings.sort();
        strings.dedup();
        for a in patterns {
            for b in patterns {
                let brute = strings
                    .iter()
                    .any(|s| glob_matches(a, s) && glob_matches(b, s));
                assert_eq!(globs_overlap(a, b), brute, "{a:?} vs {b:?}");
            }
        }
    }
}
