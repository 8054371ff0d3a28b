//! What the front's one machinery needs of a resource it serves (pods, events,
//! namespaces): its names, its feed in a leaf, what a request selects, and how one object
//! is written into a watch. Lists (`list`) and watches (`watch`) are written once over it;
//! a resource is its declaration (`pods`, `events`, `namespaces`).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use super::caller::Caller;
use crate::k8s::feed::Object;
use crate::k8s::{Feed, Leaf};

/// What a resource's names are, as a watch's bookmarks and revocations say them.
#[derive(Debug, Clone, Copy)]
pub struct Names {
    /// The API group (`""` for core), as an RBAC denial names it.
    pub group: &'static str,
    pub resource: &'static str,
    pub kind: &'static str,
    pub api_version: &'static str,
}

/// The future one watch line is written by (a Table may call the tenant's plugin).
pub type Writing<'a> = Pin<Box<dyn Future<Output = ()> + Send + 'a>>;

/// What lists and watches need of the resource they serve.
pub trait Resource: Send + Sync + 'static {
    type Object: Object;

    fn names(&self) -> Names;

    /// The resource's feed in `leaf` (none when the leaf does not keep the resource).
    fn feed(&self, leaf: &Leaf) -> Option<Arc<Feed<Self::Object>>>;

    /// The request's namespace, if it names one.
    fn namespace(&self) -> Option<&str>;

    /// Whether the request's selectors select `object`.
    fn selects(&self, object: &Self::Object) -> bool;

    /// Whether the copies of one object in several leaves are one object (namespaces):
    /// the initial events then send one `ADDED` per object.
    fn merges_copies(&self) -> bool {
        false
    }

    /// Appends the watch line (`{"type":kind,"object":...}` and a newline) for `object` of
    /// `leaf`, carrying `rv` as its `metadata.resourceVersion`.
    fn write<'a>(
        &'a self,
        caller: &'a Caller<'a>,
        kind: &'static str,
        leaf: &'a Arc<str>,
        object: &'a Arc<Self::Object>,
        rv: &'a str,
        out: &'a mut Vec<u8>,
    ) -> Writing<'a>;
}

/// Appends one watch line: `line` and a newline.
pub fn push_line(out: &mut Vec<u8>, line: &serde_json::Value) {
    // Writing a `Value` to a `Vec` cannot fail.
    let _ = serde_json::to_writer(&mut *out, line);
    out.push(b'\n');
}

/// Whether namespace `ns` is one the tenant may read and `request` asked for.
pub fn sees<R: Resource>(caller: &Caller<'_>, request: &R, ns: &str) -> bool {
    request.namespace().is_none_or(|want| want == ns) && caller.config.owns(ns)
}
