//! Lists of any resource, from the leaves' change feeds: the union over the leaves the
//! tenant may reach (a leaf its `stale = "hide"` hides left out), read by namespace (the
//! cost is the tenant's namespaces, not the leaf's), in kube-apiserver's list order, with
//! the list's token: per leaf, the feed's position of the last change in the namespaces
//! read (another tenant's objects never move it), which a watch resumes from exactly.

use std::sync::Arc;

use super::caller::Caller;
use super::listed::{self, Listed};
use super::resource::{self, Resource};
use super::token::Token;
use crate::snapshot::Snapshot;

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
        let tag: Arc<str> = name.as_str().into();
        let view = W::feed(leaf).view(sees);
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
