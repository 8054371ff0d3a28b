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
