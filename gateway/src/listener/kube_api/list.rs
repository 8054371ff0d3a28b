//! Lists of any resource, from the leaves' change feeds: the union over the leaves the
//! tenant may reach (a leaf its `stale = "hide"` hides left out), read by namespace (the
//! cost is the tenant's namespaces, not the leaf's), in kube-apiserver's list order, with
//! the list's token: per leaf, the feed's position of the last change in the namespaces
//! read (another tenant's objects never move it), which a watch resumes from exactly.
//!
//! [`collection`] is a collection path's answer for any resource, in kube-apiserver's
//! order of refusals, then a watch (`watch`) or a page of the list (`page`), which the
//! resource writes. A get is [`named`] (the name and the tenant's namespace checked) then
//! [`first_copy`].

use std::sync::Arc;

use http::{Request, Response};

use super::caller::Caller;
use super::listed::{self, Listed};
use super::page::Page;
use super::query::query_value;
use super::resource::{self, Names, Resource};
use super::stale::Stale;
use super::token::Token;
use super::watch;
use crate::k8s::feed::Feed;
use crate::k8s::status::Status;
use crate::k8s::{Leaf, names as k8s_names};
use crate::listener::client::Client;
use crate::listener::reply;
use crate::proxy::{Body, InBody};
use crate::snapshot::Snapshot;

/// One page of a list, for its resource to write.
pub struct Listing<T> {
    pub items: Vec<Listed<T>>,
    /// The list's `resourceVersion` (the first page's, on every page).
    pub token: String,
    /// When more follow: the continue token and how many remain.
    pub next: Option<(String, usize)>,
}

/// A collection path (`/api/v1/pods`, `/api/v1/namespaces/{ns}/events`, ...) of the
/// resource `names` names, after its method was checked: a namespace the tenant does not
/// own is kube-apiserver's RBAC 403 (`list`, or `watch`); then the request as `parse`
/// reads it (its selectors and Table; a refusal as it words it); with `stale`, the
/// answer says the unsynced leaves out loud (or is their 503); `watch=true` is a watch,
/// anything else a page of the list, which `answer` writes.
#[allow(clippy::too_many_arguments)]
pub async fn collection<R: Resource>(
    req: &Request<InBody>,
    client: &Client,
    snapshot: &Arc<Snapshot>,
    caller: &Caller<'_>,
    (names, namespace): (Names, Option<&str>),
    stale: bool,
    parse: impl FnOnce() -> Result<R, Box<Response<Body>>>,
    answer: impl AsyncFnOnce(R, Listing<R::Object>) -> Response<Body>,
) -> Response<Body> {
    let query = req.uri().query();
    let watching = matches!(query_value(query, "watch").as_deref(), Some("true" | "1"));
    let verb = if watching { "watch" } else { "list" };
    if let Some(ns) = namespace
        && !caller.config.owns(ns)
    {
        return caller.forbidden_in(names.group, verb, names.resource, None, Some(ns));
    }
    let request = match parse() {
        Ok(r) => r,
        Err(res) => return *res,
    };
    let stale = match stale.then(|| Stale::of(snapshot, caller)) {
        None => Stale::default(),
        Some(Ok(s)) => s,
        Some(Err(status)) => return reply::status(&status),
    };
    if watching {
        return stale.tell(watch::watch(req, client, snapshot.clone(), caller, request));
    }
    let (items, versions) = gather(snapshot, caller, &request);
    let page = match Page::from_query(query) {
        Ok(p) => p,
        Err(status) => return reply::status(&status),
    };
    let token = page.version.clone().unwrap_or_else(|| versions.encode());
    let (items, next) = page.cut(items, &token);
    let listing = Listing { items, token, next };
    stale.tell(answer(request, listing).await)
}

/// What `request` selects of the tenant's objects, sorted, and the list's token.
pub fn gather<W: Resource>(
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    request: &W,
) -> (Vec<Listed<W::Object>>, Token) {
    gather_with(snapshot, caller, request, |o| request.selects(o))
}

/// [`gather`], `selects` choosing the copies instead of the request's selectors (a
/// resource whose copies merge selects on the merged object).
pub fn gather_with<W: Resource>(
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    request: &W,
    selects: impl Fn(&W::Object) -> bool,
) -> (Vec<Listed<W::Object>>, Token) {
    let mut token = Token::default();
    let mut out = Vec::new();
    let sees = |ns: &str| resource::sees(caller, request, ns);
    for (name, leaf) in &snapshot.leaves {
        if !caller.config.may_reach(name) || super::stale::hidden(snapshot, name, leaf) {
            continue;
        }
        let Some(feed) = request.feed(leaf) else {
            continue;
        };
        let tag: Arc<str> = name.as_str().into();
        let view = feed.view(sees);
        token.set(name, view.epoch, view.last);
        out.extend(
            view.objects
                .into_iter()
                .filter(|o| selects(o))
                .map(|object| Listed {
                    leaf: tag.clone(),
                    object,
                }),
        );
    }
    listed::sort(&mut out);
    (out, token)
}

/// The name of a get's path (`.../namespaces/{ns}/<resource>/{raw}`), decoded: kube-
/// apiserver's 400 for a name no path segment may carry, then its RBAC 403 (verb `get`)
/// when the tenant does not own `ns`.
#[allow(clippy::result_large_err)]
pub fn named(
    caller: &Caller<'_>,
    names: Names,
    ns: &str,
    raw: &str,
) -> Result<String, Response<Body>> {
    let name = k8s_names::decode_segment(raw).unwrap_or_else(|| raw.to_string());
    let problems = k8s_names::path_segment_problems(&name);
    if !problems.is_empty() {
        return Err(reply::status(&Status::new(
            400,
            format!("Name parameter invalid: {name:?}: {}", problems.join(";")),
        )));
    }
    if !caller.config.owns(ns) {
        let (group, resource) = (names.group, names.resource);
        return Err(caller.forbidden_in(group, "get", resource, Some(&name), Some(ns)));
    }
    Ok(name)
}

/// Object `ns`/`name` from the first leaf (by name) the tenant may reach whose feed
/// (`feed`) holds it.
pub fn first_copy<T: crate::k8s::feed::Object>(
    snapshot: &Snapshot,
    caller: &Caller<'_>,
    feed: impl Fn(&Leaf) -> Option<Arc<Feed<T>>>,
    (ns, name): (&str, &str),
) -> Option<Listed<T>> {
    let mut leaves: Vec<_> = snapshot
        .leaves
        .iter()
        .filter(|(leaf, _)| caller.config.may_reach(leaf))
        .collect();
    leaves.sort_by_key(|(leaf, _)| *leaf);
    leaves.into_iter().find_map(|(leaf, l)| {
        Some(Listed {
            leaf: leaf.as_str().into(),
            object: feed(l)?.get(ns, name)?,
        })
    })
}
