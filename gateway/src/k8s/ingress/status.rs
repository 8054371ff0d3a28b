//! `status.loadBalancer.ingress` on the Ingresses leafgate serves, written by the leader.
//!
//! [`plan`] decides, from the Ingresses as the reflector holds them and the last model,
//! which need writing: a served Ingress whose list is not exactly `[publish_address]` gets
//! it; an Ingress no longer served whose list still holds that address, or one this
//! gateway published before a reload changed or removed `publish_address`, gets `[]`.
//! Others' addresses on Ingresses we do not serve are never touched. [`StatusWriter::sync`] sends
//! the merge patches (on the `status` subresource), a few at a time, and remembers what
//! it wrote so a patch is not sent again before the watch has shown its result.
//!
//! It runs only inside a leadership term (the provider drops it when the term ends); it
//! decides nothing about routes.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::api::networking::v1::Ingress;
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde_json::{Value, json};

use crate::config::PublishAddress;

use super::model::Model;

/// Status patches in flight at once: 10,000 Ingresses must not take 10,000 round trips
/// in a row, nor open 10,000 requests at once.
const CONCURRENCY: usize = 16;
/// One patch may take this long before it counts as failed.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// One write `plan` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusWrite {
    pub namespace: String,
    pub name: String,
    /// `true`: write `[publish_address]`; `false`: clear the list.
    pub publish: bool,
    /// The Ingress's resourceVersion when planned.
    pub resource_version: String,
}

/// The addresses this gateway publishes and has published since it started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Published {
    /// What served Ingresses get; `None` once a reload removed `publish_address`.
    pub current: Option<PublishAddress>,
    /// Addresses published before a reload changed them: still ours to clear.
    pub retired: Vec<PublishAddress>,
}

impl Published {
    /// Publishes `address` from now on; the one it replaces is retired.
    pub fn set(&mut self, address: Option<PublishAddress>) {
        if self.current == address {
            return;
        }
        if let Some(old) = self.current.take()
            && !self.retired.contains(&old)
        {
            self.retired.push(old);
        }
        self.retired.retain(|a| Some(a) != address.as_ref());
        self.current = address;
    }
}

/// The writes that bring every Ingress in `ingresses` to what `model` says, skipping those
/// `pending` shows were written at the resourceVersion the store still holds.
pub fn plan(
    ingresses: &[Arc<Ingress>],
    model: &Model,
    published: &Published,
    pending: &HashMap<(String, String), String>,
) -> Vec<StatusWrite> {
    let served: HashSet<(&str, &str)> = model
        .served
        .iter()
        .map(|r| (r.namespace.as_str(), r.name.as_str()))
        .collect();
    let ours = published.current.as_ref().map(PublishAddress::to_json);
    let retired: Vec<Value> = published.retired.iter().map(|a| a.to_json()).collect();
    let mut writes = Vec::new();
    for ingress in ingresses {
        let m = &ingress.metadata;
        let (Some(namespace), Some(name)) = (m.namespace.as_deref(), m.name.as_deref()) else {
            continue;
        };
        let rv = m.resource_version.clone().unwrap_or_default();
        let key = (namespace.to_string(), name.to_string());
        if pending.get(&key) == Some(&rv) {
            continue;
        }
        let current = current_addresses(ingress);
        let publish = ours.is_some() && served.contains(&(namespace, name));
        let due = if publish {
            current.len() != 1 || Some(&current[0]) != ours.as_ref()
        } else {
            current
                .iter()
                .any(|a| Some(a) == ours.as_ref() || retired.contains(a))
        };
        if due {
            writes.push(StatusWrite {
                namespace: key.0,
                name: key.1,
                publish,
                resource_version: rv,
            });
        }
    }
    writes
}

/// `status.loadBalancer.ingress` as `{"ip"}` / `{"hostname"}` objects (ports and other
/// fields left out: leafgate writes neither).
fn current_addresses(ingress: &Ingress) -> Vec<Value> {
    let Some(list) = ingress
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_ref())
    else {
        return Vec::new();
    };
    list.iter()
        .map(|entry| match (&entry.ip, &entry.hostname) {
            (Some(ip), _) => json!({ "ip": ip }),
            (None, Some(h)) => json!({ "hostname": h }),
            (None, None) => json!({}),
        })
        .collect()
}

/// One leadership term's status writer and what it wrote.
pub struct StatusWriter {
    client: kube::Client,
    published: Published,
    /// `(namespace, name)` -> the resourceVersion seen when it was last written.
    pending: HashMap<(String, String), String>,
}

/// How one sync went, for `/status` and metrics.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SyncOutcome {
    pub written: usize,
    pub cleared: usize,
    /// The first failure, if any (the others are likely the same).
    pub error: Option<String>,
    pub failed: usize,
}

impl StatusWriter {
    pub fn new(client: kube::Client) -> Self {
        Self {
            client,
            published: Published::default(),
            pending: HashMap::new(),
        }
    }

    /// Publishes `address` from the next sync on (`None`: publish nothing, and clear what
    /// was published). What was written for the old address no longer counts as done.
    pub fn publish(&mut self, address: Option<PublishAddress>) {
        if self.published.current != address {
            self.published.set(address);
            self.pending.clear();
        }
    }

    /// Writes what [`plan`] asks for. A failed write is tried again at the next sync.
    pub async fn sync(&mut self, ingresses: &[Arc<Ingress>], model: &Model) -> SyncOutcome {
        // What the store now shows replaces what we remember writing.
        let present: HashSet<(&str, &str)> = ingresses
            .iter()
            .filter_map(|i| {
                Some((
                    i.metadata.namespace.as_deref()?,
                    i.metadata.name.as_deref()?,
                ))
            })
            .collect();
        self.pending
            .retain(|(ns, n), _| present.contains(&(ns.as_str(), n.as_str())));
        let writes = plan(ingresses, model, &self.published, &self.pending);
        let body = |publish: bool| {
            let list = match &self.published.current {
                Some(address) if publish => vec![address.to_json()],
                _ => Vec::new(),
            };
            json!({ "status": { "loadBalancer": { "ingress": list } } })
        };
        let results: Vec<(StatusWrite, Result<(), String>)> =
            futures_util::stream::iter(writes.into_iter().map(|w| {
                let api: Api<Ingress> = Api::namespaced(self.client.clone(), &w.namespace);
                let patch = body(w.publish);
                async move {
                    let (params, patch) = (PatchParams::default(), Patch::Merge(&patch));
                    let call = api.patch_status(&w.name, &params, &patch);
                    let r = match tokio::time::timeout(CALL_TIMEOUT, call).await {
                        Ok(Ok(_)) => Ok(()),
                        // Deleted since: nothing to write.
                        Ok(Err(kube::Error::Api(s))) if s.code == 404 => Ok(()),
                        Ok(Err(e)) => Err(format!(
                            "write the status of Ingress {}/{}: {e}",
                            w.namespace, w.name
                        )),
                        Err(_) => Err(format!(
                            "write the status of Ingress {}/{}: no answer within {CALL_TIMEOUT:?}",
                            w.namespace, w.name
                        )),
                    };
                    (w, r)
                }
            }))
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut outcome = SyncOutcome::default();
        for (w, r) in results {
            match r {
                Ok(()) => {
                    if w.publish {
                        outcome.written += 1;
                    } else {
                        outcome.cleared += 1;
                    }
                    self.pending
                        .insert((w.namespace, w.name), w.resource_version);
                }
                Err(e) => {
                    outcome.failed += 1;
                    outcome.error.get_or_insert(e);
                }
            }
        }
        outcome
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::k8s::ingress::model::IngressRef;

    fn ingress(name: &str, rv: &str, lb: Value) -> Arc<Ingress> {
        Arc::new(
            serde_json::from_value(json!({
                "metadata": {"namespace": "web", "name": name, "uid": format!("u-{name}"), "resourceVersion": rv},
                "spec": {},
                "status": {"loadBalancer": {"ingress": lb}},
            }))
            .unwrap(),
        )
    }

    fn served(names: &[&str]) -> Model {
        Model {
            served: names
                .iter()
                .map(|n| IngressRef {
                    namespace: "web".into(),
                    name: n.to_string(),
                    uid: format!("u-{n}"),
                    resource_version: "1".into(),
                })
                .collect(),
            ..Model::default()
        }
    }

    fn published(address: &str) -> Published {
        let mut p = Published::default();
        p.set(Some(PublishAddress::parse(address).unwrap()));
        p
    }

    fn names(w: &[StatusWrite]) -> Vec<(&str, bool)> {
        w.iter().map(|w| (w.name.as_str(), w.publish)).collect()
    }

    #[test]
    fn served_ingresses_get_exactly_the_address_and_others_lose_only_ours() {
        let addr = published("203.0.113.7");
        let ingresses = vec![
            ingress("fresh", "1", json!([])),
            ingress("done", "1", json!([{"ip": "203.0.113.7"}])),
            ingress(
                "extra",
                "1",
                json!([{"ip": "203.0.113.7"}, {"ip": "10.0.0.1"}]),
            ),
            ingress("left", "1", json!([{"ip": "203.0.113.7"}])),
            ingress("foreign", "1", json!([{"ip": "10.9.9.9"}])),
        ];
        let model = served(&["fresh", "done", "extra"]);
        let w = plan(&ingresses, &model, &addr, &HashMap::new());
        assert_eq!(
            names(&w),
            vec![("fresh", true), ("extra", true), ("left", false)]
        );
    }

    #[test]
    fn a_host_name_address_is_compared_as_a_host_name() {
        let addr = published("lb.example.com");
        let ingresses = vec![
            ingress("a", "1", json!([{"hostname": "lb.example.com"}])),
            ingress("b", "1", json!([{"ip": "203.0.113.7"}])),
        ];
        let w = plan(&ingresses, &served(&["a", "b"]), &addr, &HashMap::new());
        assert_eq!(names(&w), vec![("b", true)]);
    }

    #[test]
    fn a_write_is_not_repeated_until_the_store_shows_a_newer_version() {
        let addr = published("203.0.113.7");
        let model = served(&["a"]);
        let mut pending = HashMap::new();
        pending.insert(("web".to_string(), "a".to_string()), "5".to_string());
        let stale = vec![ingress("a", "5", json!([]))];
        assert!(plan(&stale, &model, &addr, &pending).is_empty());
        // Someone overwrote it after our write: write again.
        let overwritten = vec![ingress("a", "7", json!([{"ip": "10.0.0.1"}]))];
        assert_eq!(
            names(&plan(&overwritten, &model, &addr, &pending)),
            vec![("a", true)]
        );
    }

    #[test]
    fn a_changed_or_removed_address_is_cleared_where_it_was_published() {
        let ingresses = vec![
            ingress("served", "1", json!([{"ip": "203.0.113.7"}])),
            ingress("left", "1", json!([{"ip": "203.0.113.7"}])),
            ingress("foreign", "1", json!([{"ip": "10.9.9.9"}])),
        ];
        let model = served(&["served"]);
        let mut addr = published("203.0.113.7");
        assert_eq!(
            names(&plan(&ingresses, &model, &addr, &HashMap::new())),
            vec![("left", false)]
        );
        // A reload moves the gateway to a new address: the served Ingress gets it, the
        // one no longer served loses the old one, the foreign address stays.
        addr.set(Some(PublishAddress::parse("198.51.100.9").unwrap()));
        assert_eq!(
            names(&plan(&ingresses, &model, &addr, &HashMap::new())),
            vec![("served", true), ("left", false)]
        );
        // A reload removes `publish_address`: everything of ours is cleared, served or
        // not, and nothing is published.
        addr.set(None);
        let after = vec![
            ingress("served", "2", json!([{"ip": "198.51.100.9"}])),
            ingress("left", "2", json!([{"ip": "203.0.113.7"}])),
            ingress("foreign", "1", json!([{"ip": "10.9.9.9"}])),
        ];
        assert_eq!(
            names(&plan(&after, &model, &addr, &HashMap::new())),
            vec![("served", false), ("left", false)]
        );
        // Going back to an old address takes it out of the retired list.
        addr.set(Some(PublishAddress::parse("203.0.113.7").unwrap()));
        assert_eq!(
            addr.retired,
            vec![PublishAddress::parse("198.51.100.9").unwrap()]
        );
    }
}
