//! Gateway API routes as the proxy serves them where a host and path are not enough: the
//! candidates of one router entry ([`Rules`], the table `k8s::gateway::table` built, in
//! the spec's precedence order), each with its header, query-parameter and method
//! matches, the filters it applies, its timeouts, and what it answers with (a split
//! between backend routes by weight, or a redirect). The routes front tries them in order
//! (`Route::pick`); the first whose matches hold serves the request, through one of its
//! backend routes, an ordinary `Route` (so its upstream, tenant, limits and counting are
//! the Ingress route's; a redirect's is a direct answer, its `Location` made here per
//! request). Generic over that route (`T`), so this file needs nothing of `route`.
//!
//! A router entry with one unconditional candidate and one backend holds that backend
//! route itself. One of these is served on the HTTP/1.1 fast path too when every
//! candidate proxies to fast backends with no redirect and no timeouts
//! ([`Fast::of`](super::Fast::of)): the matches are read off the parsed head
//! ([`Rules::choose_by`]), the modifiers' [`Edit`]s and the rewrite's [`Choice::target`]
//! written into the heads the fast path writes anyway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue, Request};

use super::rewrite::{location, pieces, rewritten};
use crate::k8s::gateway::model::{HeaderModifier, Redirect, Rewrite, Timeouts};
use crate::k8s::gateway::table::{Answer, Candidate};
use crate::proxy::fast::lines::Edit;

/// The candidates of one router entry, in precedence order.
pub struct Rules<T> {
    pub choices: Vec<Choice<T>>,
}

impl<T> Rules<T> {
    /// The first candidate whose matches `req` satisfies.
    pub fn choose<B>(&self, req: &Request<B>) -> Option<&Choice<T>> {
        let header = |name: &str| req.headers().get(name).map(HeaderValue::as_bytes);
        let (_, choice) = self.choose_by(req.method().as_str(), header, req.uri().query())?;
        Some(choice)
    }

    /// The first candidate, and its place, whose matches a request of `method`, with the
    /// first value of each header `header` gives (by lowercase name) and `query`,
    /// satisfies.
    pub fn choose_by<'h>(
        &self,
        method: &str,
        header: impl Fn(&str) -> Option<&'h [u8]>,
        query: Option<&str>,
    ) -> Option<(usize, &Choice<T>)> {
        self.choices
            .iter()
            .enumerate()
            .find(|(_, c)| c.holds(method, &header, query))
    }
}

/// One candidate: when it holds, and what it does.
pub struct Choice<T> {
    /// Lowercase names, exact values (`HeaderMap::get` of a name reads its first value).
    headers: Vec<(String, String)>,
    /// Exact names and values, as the query string writes them.
    query: Vec<(String, String)>,
    method: Option<String>,
    pub request_headers: Modifier,
    pub response_headers: Modifier,
    /// `URLRewrite`.
    rewrite: Option<Rewrite>,
    /// `RequestRedirect`: the split's one route is then its direct answer (the status),
    /// and this its `Location`.
    redirect: Option<Redirect>,
    /// `timeouts.request`: the exchange, from the request's arrival to the answer's head,
    /// within this (`0s`: none).
    pub request_timeout: Option<Duration>,
    /// `timeouts.backendRequest`: each attempt at a backend within this, from its start
    /// to its answer's head (`0s`: `Duration::MAX`, no bound); `None`: leafgate's own
    /// `[timeouts]`.
    pub backend_timeout: Option<Duration>,
    pub split: Split<T>,
}

/// What the chosen candidate made of a request before it is answered.
#[derive(Default)]
pub struct Applied<'c> {
    /// The `Host` to send: a rewrite's hostname.
    pub host: Option<&'c str>,
    /// A redirect's `Location`.
    pub location: Option<HeaderValue>,
}

impl<T> Choice<T> {
    /// Candidate `c`, answering through `split`.
    pub fn new(c: &Candidate, split: Split<T>) -> Self {
        let Timeouts {
            request,
            backend_request,
        } = c.timeouts;
        Choice {
            headers: c.headers.clone(),
            query: c.query.clone(),
            method: c.method.clone(),
            request_headers: Modifier::new(&c.request_headers),
            response_headers: Modifier::new(&c.response_headers),
            rewrite: c.rewrite.clone(),
            redirect: match &c.answer {
                Answer::Redirect(r) => Some(r.clone()),
                Answer::Split(_) => None,
            },
            request_timeout: request.filter(|d| !d.is_zero()),
            backend_timeout: backend_request.map(|d| match d.is_zero() {
                true => Duration::MAX,
                false => d,
            }),
            split,
        }
    }

    /// Applies this candidate's request filters to `req` (sent for `host`): its header
    /// modifier, its rewrite's path; and makes what the answer needs (a rewrite's `Host`, a
    /// redirect's `Location`). `Err`: why the request cannot be served as the rule says
    /// (a 400).
    pub fn apply<B>(
        &self,
        req: &mut Request<B>,
        host: Option<&str>,
    ) -> Result<Applied<'_>, String> {
        self.request_headers.apply(req.headers_mut());
        let mut applied = Applied::default();
        if let Some(r) = &self.redirect {
            let uri = req.uri();
            applied.location = Some(location(r, host, uri.path(), uri.query())?);
        }
        if let Some(r) = &self.rewrite {
            if let Some(path) = &r.path {
                *req.uri_mut() = rewritten(req.uri(), path)?;
            }
            applied.host = r.hostname.as_deref();
        }
        Ok(applied)
    }

    /// Whether a request of `method`, `header` and `query` satisfies every match of this
    /// candidate.
    fn holds<'h>(
        &self,
        method: &str,
        header: &impl Fn(&str) -> Option<&'h [u8]>,
        query: Option<&str>,
    ) -> bool {
        self.method.as_deref().is_none_or(|m| method == m)
            && self
                .headers
                .iter()
                .all(|(name, value)| header(name).is_some_and(|v| v == value.as_bytes()))
            && self
                .query
                .iter()
                .all(|(name, value)| query_value(query, name) == Some(value.as_str()))
    }

    /// Why the fast path cannot serve this candidate, if it cannot: a redirect (a direct
    /// answer) or timeouts (which bound the exchange as hyper's path times it).
    pub fn slow(&self) -> Option<&'static str> {
        if self.redirect.is_some() {
            return Some("a Gateway API redirect");
        }
        if self.request_timeout.is_some() || self.backend_timeout.is_some() {
            return Some("Gateway API timeouts");
        }
        None
    }

    /// The request target a rewrite sends for the routed `path` and the `query` as it
    /// came (`?...` or empty), in pieces; `Ok(None)`: no path rewrite. `Err`: why it
    /// cannot go (a rewritten path starting with `//`, which hyper's path answers with
    /// its 400).
    pub fn target<'a>(
        &'a self,
        path: &'a str,
        query: &'a str,
    ) -> Result<Option<[&'a [u8]; 3]>, &'static str> {
        let Some(modifier) = self.rewrite.as_ref().and_then(|r| r.path.as_ref()) else {
            return Ok(None);
        };
        let (head, rest) = pieces(path, modifier);
        let mut first = head.bytes().chain(rest.bytes());
        if first.next() == Some(b'/') && first.next() == Some(b'/') {
            return Err("a rewritten path that starts with `//`");
        }
        Ok(Some([head.as_bytes(), rest.as_bytes(), query.as_bytes()]))
    }

    /// The host a rewrite sends in place of the client's.
    pub fn host(&self) -> Option<&str> {
        self.rewrite.as_ref().and_then(|r| r.hostname.as_deref())
    }
}

/// The value of the first parameter `name` of `query` (`a=1&b=2`), as written.
fn query_value<'q>(query: Option<&'q str>, name: &str) -> Option<&'q str> {
    query?.split('&').find_map(|pair| {
        let (n, v) = pair.split_once('=').unwrap_or((pair, ""));
        (n == name).then_some(v)
    })
}

/// Backend routes by weight, each share in proportion to its weight over any run of
/// requests (never empty).
pub struct Split<T> {
    /// Each route with the end of its range in `0..total`.
    shares: Vec<(u64, T)>,
    total: u64,
    next: AtomicU64,
}

/// 2^64 divided by the golden ratio: the `n`th request's point in the weights' range is
/// the fractional part of `n` times it, a sequence that spreads over any range evenly
/// from the first requests on (Weyl's), with no random generator to share.
const GOLDEN: u64 = 0x9E37_79B9_7F4A_7C15;

impl<T> Split<T> {
    /// `shares` by weight; a weight of 0 never gets a request (the translation leaves
    /// those out).
    pub fn new(shares: Vec<(u32, T)>) -> Self {
        let mut total = 0u64;
        let shares = shares
            .into_iter()
            .filter(|(w, _)| *w > 0)
            .map(|(w, r)| {
                total += u64::from(w);
                (total, r)
            })
            .collect();
        Split {
            shares,
            total,
            next: AtomicU64::new(0),
        }
    }

    /// Every route of the split.
    pub fn routes(&self) -> impl Iterator<Item = &T> {
        self.shares.iter().map(|(_, r)| r)
    }

    /// The route of the next request.
    pub fn pick(&self) -> &T {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let point = ((u128::from(n.wrapping_mul(GOLDEN)) * u128::from(self.total)) >> 64) as u64;
        let i = self.shares.partition_point(|(end, _)| *end <= point);
        &self.shares[i.min(self.shares.len() - 1)].1
    }
}

/// `RequestHeaderModifier` / `ResponseHeaderModifier` as header values, ready to apply.
#[derive(Default)]
pub struct Modifier {
    set: Vec<(HeaderName, HeaderValue)>,
    add: Vec<(HeaderName, HeaderValue)>,
    remove: Vec<HeaderName>,
    /// The same as the fast path writes it.
    pub edit: Edit,
}

impl Modifier {
    /// The translation checked every name and value (`k8s::gateway::values`); one that
    /// still does not parse is left out rather than written broken.
    fn new(m: &HeaderModifier) -> Self {
        let pairs = |list: &[(String, String)]| {
            list.iter()
                .filter_map(|(n, v)| {
                    Some((
                        HeaderName::from_bytes(n.as_bytes()).ok()?,
                        HeaderValue::from_str(v).ok()?,
                    ))
                })
                .collect()
        };
        let (set, add): (Vec<_>, Vec<_>) = (pairs(&m.set), pairs(&m.add));
        let remove: Vec<HeaderName> = m
            .remove
            .iter()
            .filter_map(|n| HeaderName::from_bytes(n.as_bytes()).ok())
            .collect();
        Modifier {
            edit: Edit::new(&set, &add, &remove),
            set,
            add,
            remove,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.set.is_empty() && self.add.is_empty() && self.remove.is_empty()
    }

    /// Sets (replacing every value of the name), adds (after the values there), then
    /// removes, as the filter's fields say.
    pub fn apply(&self, headers: &mut HeaderMap) {
        for (name, value) in &self.set {
            headers.insert(name.clone(), value.clone());
        }
        for (name, value) in &self.add {
            headers.append(name.clone(), value.clone());
        }
        for name in &self.remove {
            headers.remove(name);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_gives_each_share_its_weight_over_any_run_of_requests() {
        let split = Split::new(vec![(0, 'z'), (70, 'a'), (30, 'b')]);
        let counts = |n: usize| {
            let picks: Vec<char> = (0..n).map(|_| *split.pick()).collect();
            let a = picks.iter().filter(|&&c| c == 'a').count();
            (
                a,
                picks.iter().filter(|&&c| c == 'b').count(),
                picks.contains(&'z'),
            )
        };
        // Within one request of the exact share, from the first ten on.
        let (a, b, z) = counts(10);
        assert!((6..=8).contains(&a) && a + b == 10 && !z, "{a} {b}");
        let (a, b, z) = counts(1000);
        assert!((695..=705).contains(&a) && a + b == 1000 && !z, "{a} {b}");
    }

    /// `0s` disables: no request deadline, and attempts bounded by nothing of the route's
    /// (not by leafgate's `response_header` either).
    #[test]
    fn timeouts_of_zero_are_none() {
        let choice = |request, backend_request| {
            let c = Candidate {
                name: "r".into(),
                tenant: None,
                headers: vec![],
                query: vec![],
                method: None,
                request_headers: HeaderModifier::default(),
                response_headers: HeaderModifier::default(),
                rewrite: None,
                timeouts: Timeouts {
                    request,
                    backend_request,
                },
                answer: Answer::Split(vec![]),
            };
            let c = Choice::new(&c, Split::new(vec![(1, ())]));
            (c.request_timeout, c.backend_timeout)
        };
        let ms = Duration::from_millis;
        assert_eq!(
            choice(Some(ms(500)), Some(ms(200))),
            (Some(ms(500)), Some(ms(200)))
        );
        assert_eq!(
            choice(Some(Duration::ZERO), Some(Duration::ZERO)),
            (None, Some(Duration::MAX))
        );
        assert_eq!(choice(None, None), (None, None));
    }

    #[test]
    fn a_query_parameter_is_its_first_value_by_exact_name() {
        let q = Some("animal=whale&ANIMAL=Whale&animal=dolphin&flag&e=");
        assert_eq!(query_value(q, "animal"), Some("whale"));
        assert_eq!(query_value(q, "ANIMAL"), Some("Whale"));
        assert_eq!(query_value(q, "flag"), Some(""));
        assert_eq!(query_value(q, "e"), Some(""));
        assert_eq!(query_value(q, "anim"), None);
        assert_eq!(query_value(None, "animal"), None);
    }

    #[test]
    fn a_modifier_sets_adds_then_removes() {
        let m = Modifier::new(&HeaderModifier {
            set: vec![("x-set".into(), "new".into())],
            add: vec![("x-add".into(), "two".into())],
            remove: vec!["x-gone".into()],
        });
        let mut h = HeaderMap::new();
        for (n, v) in [
            ("x-set", "old"),
            ("x-set", "older"),
            ("x-add", "one"),
            ("x-gone", "1"),
        ] {
            h.append(n, HeaderValue::from_static(v));
        }
        m.apply(&mut h);
        let all = |n: &str| {
            h.get_all(n)
                .iter()
                .map(|v| v.to_str().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(all("x-set"), ["new"]);
        assert_eq!(all("x-add"), ["one", "two"]);
        assert!(all("x-gone").is_empty());
    }
}
