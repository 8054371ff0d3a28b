//! The leader's status writes for the Gateway API kinds, through their `status`
//! subresource: GatewayClass conditions and `supportedFeatures`, Gateway addresses,
//! conditions and listeners, HTTPRoute `status.parents[]` (ours only: another controller's
//! entries are kept as they are).
//!
//! [`desired`] is pure: from the object as the reflector holds it and what the model
//! says, the status it should have, each unchanged condition keeping its
//! `lastTransitionTime` and a changed one stamped `now`; nothing is written when that is
//! the status already there. [`StatusWriter::sync`] sends the merge patches, a few at a
//! time, each with the object's `resourceVersion` (a stale one gets a 409 and is planned
//! again from the next event), and remembers what it wrote so a patch is not sent again
//! before the watch has shown its result. [`refusals`] are what the leader reports as
//! Warning Events on HTTPRoutes, as the Ingress source reports its refusals.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use super::model::{Cond, Model};
use super::types::{
    Gateway, GatewayAddress, GatewayClass, HttpRoute, ListenerStatus, RouteParentStatus,
};
use crate::k8s::ingress::model::IngressRef;

const CONCURRENCY: usize = 16;
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// `cond` as written: its `lastTransitionTime` kept from `before` when nothing else
/// about it changed there, else `now`.
fn condition(cond: &Cond, before: &[Condition], now: &Time) -> Condition {
    let status = if cond.status { "True" } else { "False" };
    let kept = before.iter().find(|c| {
        c.type_ == cond.type_
            && c.status == status
            && c.reason == cond.reason
            && c.message == cond.message
            && c.observed_generation == Some(cond.observed_generation)
    });
    Condition {
        type_: cond.type_.to_string(),
        status: status.to_string(),
        reason: cond.reason.to_string(),
        message: cond.message.clone(),
        observed_generation: Some(cond.observed_generation),
        last_transition_time: kept.map_or_else(|| now.clone(), |c| c.last_transition_time.clone()),
    }
}

fn conditions(conds: &[Cond], before: &[Condition], now: &Time) -> Vec<Condition> {
    conds.iter().map(|c| condition(c, before, now)).collect()
}

/// One status to write: which object, at which resourceVersion, and the status.
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// `gatewayclasses`, `gateways` or `httproutes`.
    pub plural: &'static str,
    pub namespace: Option<String>,
    pub name: String,
    pub resource_version: String,
    pub status: Value,
}

fn differs<T: Serialize>(before: &T, after: &Value) -> bool {
    serde_json::to_value(before).ok().as_ref() != Some(after)
}

/// The writes that bring the objects to what `model` says. `controller` is ours, the
/// name our HTTPRoute parent entries carry.
pub fn desired(
    classes: &[Arc<GatewayClass>],
    gateways: &[Arc<Gateway>],
    routes: &[Arc<HttpRoute>],
    model: &Model,
    controller: &str,
    now: &Time,
) -> Vec<Write> {
    let mut writes = Vec::new();
    let meta = |m: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        (
            m.namespace.clone(),
            m.name.clone().unwrap_or_default(),
            m.resource_version.clone().unwrap_or_default(),
        )
    };
    for out in &model.classes {
        let Some(class) = classes
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some(&out.name))
        else {
            continue;
        };
        let before = class.status.clone().unwrap_or_default();
        let status = json!({
            "conditions": conditions(&out.conditions, &before.conditions, now),
            "supportedFeatures": out.supported_features.iter().map(|f| json!({"name": f})).collect::<Vec<_>>(),
        });
        if differs(&before, &status) {
            let (namespace, name, resource_version) = meta(&class.metadata);
            writes.push(Write {
                plural: "gatewayclasses",
                namespace,
                name,
                resource_version,
                status,
            });
        }
    }
    for out in &model.gateways {
        let Some(gateway) = gateways.iter().find(|g| {
            g.metadata.namespace.as_deref() == Some(&out.namespace)
                && g.metadata.name.as_deref() == Some(&out.name)
        }) else {
            continue;
        };
        let before = gateway.status.clone().unwrap_or_default();
        let listeners: Vec<ListenerStatus> = out
            .listeners
            .iter()
            .map(|l| {
                let old = before.listeners.iter().find(|b| b.name == l.name);
                ListenerStatus {
                    name: l.name.clone(),
                    supported_kinds: l.supported_kinds.clone(),
                    attached_routes: l.attached_routes,
                    conditions: conditions(
                        &l.conditions,
                        old.map_or(&[][..], |o| &o.conditions[..]),
                        now,
                    ),
                }
            })
            .collect();
        let addresses: Vec<GatewayAddress> = out
            .addresses
            .iter()
            .map(|a| GatewayAddress {
                type_: Some("IPAddress".into()),
                value: a.to_string(),
            })
            .collect();
        let status = json!({
            "addresses": addresses,
            "conditions": conditions(&out.conditions, &before.conditions, now),
            "listeners": listeners,
        });
        if differs(&before, &status) {
            let (namespace, name, resource_version) = meta(&gateway.metadata);
            writes.push(Write {
                plural: "gateways",
                namespace,
                name,
                resource_version,
                status,
            });
        }
    }
    for route in routes {
        let ns = route.metadata.namespace.as_deref().unwrap_or("");
        let name = route.metadata.name.as_deref().unwrap_or("");
        let out = model
            .http_routes
            .iter()
            .find(|r| r.namespace == ns && r.name == name);
        let before = route.status.clone().unwrap_or_default();
        // Others' entries stay; ours are what the model says (none: the route no longer
        // names a Gateway of ours).
        let mut parents: Vec<RouteParentStatus> = before
            .parents
            .iter()
            .filter(|p| p.controller_name != controller)
            .cloned()
            .collect();
        let had_ours = parents.len() != before.parents.len();
        for p in out.iter().flat_map(|o| &o.parents) {
            let old = before.parents.iter().find(|b| {
                b.controller_name == controller
                    && serde_json::to_value(&b.parent_ref).ok()
                        == serde_json::to_value(&p.parent_ref).ok()
            });
            parents.push(RouteParentStatus {
                parent_ref: p.parent_ref.clone(),
                controller_name: p.controller_name.clone(),
                conditions: conditions(
                    &p.conditions,
                    old.map_or(&[][..], |o| &o.conditions[..]),
                    now,
                ),
            });
        }
        if out.is_none() && !had_ours {
            continue;
        }
        let status = json!({ "parents": parents });
        if differs(&before, &status) {
            let (namespace, name, resource_version) = meta(&route.metadata);
            writes.push(Write {
                plural: "httproutes",
                namespace,
                name,
                resource_version,
                status,
            });
        }
    }
    writes
}

/// What one [`StatusWriter::sync`] did.
#[derive(Debug, Default)]
pub struct Outcome {
    pub written: usize,
    pub failed: usize,
    /// The first failure, for `/status`.
    pub error: Option<String>,
}

/// Sends the writes `desired` plans, skipping those already sent at the same
/// resourceVersion.
pub struct StatusWriter {
    client: kube::Client,
    /// `(plural, namespace, name)` -> the resourceVersion a write was sent at.
    pending: HashMap<(&'static str, Option<String>, String), String>,
}

impl StatusWriter {
    pub fn new(client: kube::Client) -> Self {
        StatusWriter {
            client,
            pending: HashMap::new(),
        }
    }

    pub async fn sync(&mut self, writes: Vec<Write>) -> Outcome {
        let todo: Vec<Write> = writes
            .into_iter()
            .filter(|w| {
                let key = (w.plural, w.namespace.clone(), w.name.clone());
                self.pending.get(&key) != Some(&w.resource_version)
            })
            .collect();
        let client = self.client.clone();
        let results: Vec<(Write, Result<(), String>)> = futures_util::stream::iter(todo)
            .map(|w| {
                let client = client.clone();
                async move {
                    let r = patch(&client, &w).await;
                    (w, r)
                }
            })
            .buffer_unordered(CONCURRENCY)
            .collect()
            .await;
        let mut outcome = Outcome::default();
        for (w, r) in results {
            match r {
                Ok(()) => {
                    outcome.written += 1;
                    self.pending
                        .insert((w.plural, w.namespace, w.name), w.resource_version);
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

async fn patch(client: &kube::Client, w: &Write) -> Result<(), String> {
    let body = json!({
        "metadata": {"resourceVersion": w.resource_version},
        "status": w.status,
    });
    let params = PatchParams::default();
    let patch = Patch::Merge(&body);
    let call = async {
        match (w.plural, &w.namespace) {
            ("gatewayclasses", _) => Api::<GatewayClass>::all(client.clone())
                .patch_status(&w.name, &params, &patch)
                .await
                .map(drop),
            ("gateways", Some(ns)) => Api::<Gateway>::namespaced(client.clone(), ns)
                .patch_status(&w.name, &params, &patch)
                .await
                .map(drop),
            (_, ns) => Api::<HttpRoute>::namespaced(client.clone(), ns.as_deref().unwrap_or(""))
                .patch_status(&w.name, &params, &patch)
                .await
                .map(drop),
        }
    };
    let what = format!(
        "{} {}{}",
        w.plural,
        w.namespace
            .as_ref()
            .map_or(String::new(), |n| format!("{n}/")),
        w.name
    );
    match tokio::time::timeout(CALL_TIMEOUT, call).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err(format!("{what}: {e}")),
        Err(_) => Err(format!("{what}: no answer in {CALL_TIMEOUT:?}")),
    }
}

/// The refusals Warning Events report: each parent of a route (as the reflector holds it,
/// for its uid and resourceVersion) whose `Accepted` or `ResolvedRefs` is False, with the
/// condition's reason and message (the parent named in it).
pub fn refusals(
    routes: &[Arc<HttpRoute>],
    model: &Model,
) -> Vec<(IngressRef, &'static str, String)> {
    let mut out = Vec::new();
    for r in &model.http_routes {
        let Some(route) = routes.iter().find(|o| {
            o.metadata.namespace.as_deref() == Some(&r.namespace)
                && o.metadata.name.as_deref() == Some(&r.name)
        }) else {
            continue;
        };
        let object = IngressRef {
            namespace: r.namespace.clone(),
            name: r.name.clone(),
            uid: route.metadata.uid.clone().unwrap_or_default(),
            resource_version: route.metadata.resource_version.clone().unwrap_or_default(),
        };
        for p in &r.parents {
            for c in p.conditions.iter().filter(|c| !c.status) {
                let gateway = p.parent_ref.namespace.as_deref().unwrap_or(&r.namespace);
                let message = format!(
                    "Gateway {gateway}/{}: {}: {}",
                    p.parent_ref.name, c.type_, c.message
                );
                out.push((object.clone(), c.reason, message));
            }
        }
    }
    out
}
