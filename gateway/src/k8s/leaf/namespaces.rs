//! One leaf's namespace reflector: the `Namespace` objects the leaf has, kept as it sent
//! them (raw JSON, `managedFields` stripped) in a change [`Feed`], so the kube-api front
//! can tell a namespace that exists from one that merely matches a tenant's glob, and
//! watch them. A namespace is filed under its own name (its tenant's by that name).
//!
//! It keeps and hands out namespaces only; which of them a tenant sees is the front's.

use std::sync::Arc;

use kube::api::ApiResource;

use super::raw::{self, Sink};
use crate::k8s::feed::{Feed, RawObject};

/// A leaf's namespaces, and the task that keeps them. Dropping it stops the watch.
pub struct LeafNamespaces {
    feed: Arc<Feed<RawObject>>,
    task: tokio::task::AbortHandle,
}

impl LeafNamespaces {
    /// Starts the reflector of `client`'s namespaces on `runtime`.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let feed = Arc::new(Feed::default());
        let sink = NamespaceSink {
            feed: feed.clone(),
            pending: Vec::new(),
        };
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&());
        let task = raw::start(client, resource, leaf, sink, runtime);
        LeafNamespaces { feed, task }
    }

    /// Every namespace the leaf has.
    pub fn list(&self) -> Vec<Arc<RawObject>> {
        self.feed.list()
    }

    /// Namespace `name`, if the leaf has it.
    pub fn get(&self, name: &str) -> Option<Arc<RawObject>> {
        self.feed.get(name, name)
    }

    /// The leaf's namespaces and their recent changes.
    pub fn feed(&self) -> &Arc<Feed<RawObject>> {
        &self.feed
    }
}

impl Drop for LeafNamespaces {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Folds the reflector's events into the feed; a relist is gathered and handed over
/// whole, so the feed turns it into the differences.
struct NamespaceSink {
    feed: Arc<Feed<RawObject>>,
    pending: Vec<Arc<RawObject>>,
}

impl Sink for NamespaceSink {
    fn relist_begin(&mut self) {
        self.pending.clear();
    }

    fn listed(&mut self, object: RawObject) {
        self.pending.push(Arc::new(object));
    }

    fn relisted(&mut self) {
        self.feed.replace(std::mem::take(&mut self.pending));
    }

    fn applied(&mut self, object: RawObject) {
        self.feed.apply(Arc::new(object));
    }

    fn deleted(&mut self, object: RawObject) {
        self.feed.delete(Arc::new(object));
    }
}
