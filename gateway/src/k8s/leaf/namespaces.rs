//! One leaf's namespace reflector: the `Namespace` objects the leaf has, kept as it sent
//! them (raw JSON, `managedFields` stripped), so the kube-api front can tell a namespace
//! that exists from one that merely matches a tenant's glob.
//!
//! It keeps and hands out namespaces only; which of them a tenant sees is the front's.

use std::collections::BTreeMap;
use std::sync::{Arc, PoisonError, RwLock};

use kube::api::ApiResource;
use serde_json::Value;

use super::raw::{self, Sink};

/// A leaf's namespaces by name, and the task that keeps them. Dropping it stops the watch.
pub struct LeafNamespaces {
    store: Arc<RwLock<Store>>,
    task: tokio::task::AbortHandle,
}

type Store = BTreeMap<String, Arc<Value>>;

impl LeafNamespaces {
    /// Starts the reflector of `client`'s namespaces on `runtime`.
    pub fn start(client: kube::Client, leaf: &str, runtime: &tokio::runtime::Handle) -> Self {
        let store = Arc::new(RwLock::new(Store::new()));
        let sink = NamespaceSink {
            store: store.clone(),
            pending: None,
        };
        let resource = ApiResource::erase::<k8s_openapi::api::core::v1::Namespace>(&());
        let task = raw::start(client, resource, leaf, sink, runtime);
        LeafNamespaces { store, task }
    }

    /// Every namespace the leaf has, by name.
    pub fn list(&self) -> Vec<Arc<Value>> {
        self.read().values().cloned().collect()
    }

    /// Namespace `name`, if the leaf has it.
    pub fn get(&self, name: &str) -> Option<Arc<Value>> {
        self.read().get(name).cloned()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, Store> {
        self.store.read().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for LeafNamespaces {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn name_of(object: &Value) -> String {
    object
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// Folds the reflector's events into the store; a relist is built aside and swapped in.
struct NamespaceSink {
    store: Arc<RwLock<Store>>,
    pending: Option<Store>,
}

impl NamespaceSink {
    fn write(&self) -> std::sync::RwLockWriteGuard<'_, Store> {
        self.store.write().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Sink for NamespaceSink {
    fn relist_begin(&mut self) {
        self.pending = Some(Store::new());
    }

    fn listed(&mut self, object: Value) {
        self.pending
            .get_or_insert_with(Store::new)
            .insert(name_of(&object), Arc::new(object));
    }

    fn relisted(&mut self) {
        let fresh = self.pending.take().unwrap_or_default();
        *self.write() = fresh;
    }

    fn applied(&mut self, object: Value) {
        self.write().insert(name_of(&object), Arc::new(object));
    }

    fn deleted(&mut self, object: Value) {
        self.write().remove(&name_of(&object));
    }
}
