//! One bound address's table, as the router reads it: for each host and path the router
//! tells apart, every entry whose host and path match the requests it routes there, in the
//! spec's precedence order ([`Candidate`]s; the proxy takes the first whose header,
//! query-parameter and method matches hold). The router picks one host and the longest
//! path, so an entry of a less specific path or a covering wildcard host is listed there
//! too: a request no entry of `/v2` takes falls to `/`, as a Gateway API route's matches
//! are one list across paths and hosts.

use foldhash::{HashMap, HashSet};
use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::sync::Arc;

use super::model::{HeaderModifier, Redirect, Rewrite, Timeouts};
use crate::config::{HostPattern, PathMatch};
use crate::routing::prefix_matches;

/// One match of a rule as the proxy tries it.
#[derive(Debug, Clone)]
pub struct Candidate {
    /// `httproute/<ns>/<name>/<rule>`: the name its requests are counted under.
    pub name: String,
    pub tenant: Option<String>,
    /// Lowercase names, exact values.
    pub headers: Vec<(String, String)>,
    /// Exact names and values.
    pub query: Vec<(String, String)>,
    pub method: Option<String>,
    pub request_headers: HeaderModifier,
    pub response_headers: HeaderModifier,
    pub rewrite: Option<Rewrite>,
    pub timeouts: Timeouts,
    pub answer: Answer,
}

impl Candidate {
    /// The one target of a candidate that needs nothing of a request beyond its host and
    /// path and changes nothing of it, with no timeouts of its own: the router may hold
    /// that target itself.
    pub fn plain(&self) -> Option<&Target> {
        let unconditional =
            self.headers.is_empty() && self.query.is_empty() && self.method.is_none();
        let unfiltered = self.request_headers.is_empty()
            && self.response_headers.is_empty()
            && self.rewrite.is_none()
            && self.timeouts == Timeouts::default();
        match &self.answer {
            Answer::Split(shares) if unconditional && unfiltered => match &shares[..] {
                [one] => Some(&one.target),
                _ => None,
            },
            _ => None,
        }
    }
}

/// What a chosen candidate answers with.
#[derive(Debug, Clone)]
pub enum Answer {
    /// Split by weight, never empty: a rule without backendRefs with weight has one share,
    /// [`Target::Invalid`].
    Split(Vec<Share>),
    Redirect(Redirect),
}

#[derive(Debug, Clone)]
pub struct Share {
    pub weight: u32,
    pub target: Target,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// The served Ingress route of this name (a Service backend).
    Backend(String),
    /// A 500, with why.
    Invalid(String),
}

/// One host and path of the router, with the candidates of its requests.
#[derive(Debug, Clone)]
pub struct ServedPath {
    pub host: HostPattern,
    pub path: PathMatch,
    pub candidates: Vec<Arc<Candidate>>,
}

/// One entry on the address: its host and path, and its place in the spec's order among
/// the address's entries (`index`: the translation's order, which has already ranked
/// route age, rule and match).
pub struct Placed {
    pub host: HostPattern,
    pub path: PathMatch,
    pub index: usize,
    pub candidate: Arc<Candidate>,
}

type Rank = (
    (u8, Reverse<usize>),
    (u8, Reverse<usize>),
    bool,
    Reverse<usize>,
    Reverse<usize>,
    usize,
);

/// The spec's precedence across hosts and paths: the most specific host, an exact path,
/// the longest prefix, a method match, the most header matches, the most query-param
/// matches, then the translation's order.
fn rank(p: &Placed) -> Rank {
    let host = match &p.host {
        HostPattern::Exact(h) => (0, Reverse(h.len())),
        HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => (1, Reverse(s.len())),
        HostPattern::Any => (2, Reverse(0)),
    };
    let path = match &p.path {
        PathMatch::Exact(x) => (0, Reverse(x.len())),
        PathMatch::Prefix(x) => (1, Reverse(x.len())),
    };
    let c = &p.candidate;
    (
        host,
        path,
        c.method.is_none(),
        Reverse(c.headers.len()),
        Reverse(c.query.len()),
        p.index,
    )
}

/// Whether an entry's `path` matches every request the router sends to the key `at`.
fn path_covers(path: &PathMatch, at: &PathMatch) -> bool {
    match (path, at) {
        (PathMatch::Exact(p), PathMatch::Exact(a)) => p == a,
        (PathMatch::Exact(_), PathMatch::Prefix(_)) => false,
        (PathMatch::Prefix(p), PathMatch::Exact(a) | PathMatch::Prefix(a)) => prefix_matches(p, a),
    }
}

/// An address's table: each host the router tells apart, with its paths (in the order
/// first met) and their candidates, in host order.
pub type Table = BTreeMap<HostPattern, Arc<[ServedPath]>>;

/// The router's hosts and paths over `placed`, each with its candidates in precedence
/// order. Only a wildcard or `*` covers another host, so the cost is the entries times
/// the wildcard hosts, not the hosts squared.
pub fn table(placed: Vec<Placed>) -> Table {
    hosts(placed, None)
        .into_iter()
        .map(|(host, paths)| (host, paths.into()))
        .collect()
}

/// `before` with the paths of the exact hosts `touched` built again from `placed`, which
/// holds at least every entry on them and every entry on a wildcard host or `*` (the
/// entries that may cover them); every other host keeps its paths (the same `Arc`s). A
/// touched host with no entries left is gone. A change to a wildcard host's entries
/// changes the exact hosts it covers too: that is a whole [`table`] again.
pub fn retable(before: &Table, placed: Vec<Placed>, touched: &HashSet<HostPattern>) -> Table {
    debug_assert!(touched.iter().all(|h| matches!(h, HostPattern::Exact(_))));
    let mut table = before.clone();
    for host in touched {
        table.remove(host);
    }
    for (host, paths) in hosts(placed, Some(touched)) {
        table.insert(host, paths.into());
    }
    table
}

/// The hosts of `placed` (those in `only`, when given) with their paths, each with its
/// candidates in precedence order.
fn hosts(
    mut placed: Vec<Placed>,
    only: Option<&HashSet<HostPattern>>,
) -> Vec<(HostPattern, Vec<ServedPath>)> {
    placed.sort_by_cached_key(rank);
    // Each host with its entries (indices into `placed`, so in precedence order).
    let mut slots: HashMap<&HostPattern, usize> = HashMap::default();
    let mut hosts: Vec<(&HostPattern, Vec<usize>)> = Vec::new();
    for (i, p) in placed.iter().enumerate() {
        let slot = *slots.entry(&p.host).or_insert_with(|| {
            hosts.push((&p.host, Vec::new()));
            hosts.len() - 1
        });
        hosts[slot].1.push(i);
    }
    let wild: Vec<usize> = (0..hosts.len())
        .filter(|&h| !matches!(hosts[h].0, HostPattern::Exact(_)))
        .collect();
    let mut out = Vec::new();
    for (h, (host, own)) in hosts.iter().enumerate() {
        if only.is_some_and(|only| !only.contains(*host)) {
            continue;
        }
        let mut covering = own.clone();
        for &w in wild.iter().filter(|&&w| w != h && hosts[w].0.covers(host)) {
            covering.extend(&hosts[w].1);
        }
        covering.sort_unstable();
        let mut seen: HashSet<&PathMatch> = HashSet::default();
        let mut paths = Vec::new();
        for &i in &covering {
            let path = &placed[i].path;
            if !seen.insert(path) {
                continue;
            }
            let candidates = covering
                .iter()
                .map(|&j| &placed[j])
                .filter(|p| path_covers(&p.path, path))
                .map(|p| p.candidate.clone())
                .collect();
            paths.push(ServedPath {
                host: (*host).clone(),
                path: path.clone(),
                candidates,
            });
        }
        out.push(((*host).clone(), paths));
    }
    out
}
