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
//! before the watch has shown its result. [`refused`] lists the refusals (`/status` shows
//! them), [`warnings`] are what the leader reports of them as Warning Events on HTTPRoutes
//! and Gateways, as the Ingress source reports its refusals.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, ObjectMeta, Time};
use kube::Api;
use kube::api::{Patch, PatchParams};
use serde::Serialize;
use serde_json::{Value, json};

use super::model::{Cond, Model, RouteStatusOut};
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

/// The HTTPRoutes [`desired`] found with the status the model asks for: each one's
/// resourceVersion then and the model's status for it. Until either changes, the route is
/// not compared again (with 10,000 routes, a change compares the routes it concerns).
#[derive(Debug, Default)]
pub struct Checked {
    routes: HashMap<(String, String), (String, Arc<RouteStatusOut>)>,
    /// The routes the last call compared.
    pub compared: usize,
}

/// The writes that bring the objects to what `model` says. `controller` is ours, the
/// name our HTTPRoute parent entries carry. The routes `checked` found as the model asks
/// since (same resourceVersion, same status of the model) are skipped, and those found so
/// now are noted.
pub fn desired(
    classes: &[Arc<GatewayClass>],
    gateways: &[Arc<Gateway>],
    routes: &[Arc<HttpRoute>],
    model: &Model,
    controller: &str,
    now: &Time,
    checked: &mut Checked,
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
    let outs: HashMap<(&str, &str), &Arc<RouteStatusOut>> = model
        .http_routes
        .iter()
        .map(|r| ((r.namespace.as_str(), r.name.as_str()), r))
        .collect();
    let mut seen = HashMap::with_capacity(checked.routes.len());
    checked.compared = 0;
    for route in routes {
        let ns = route.metadata.namespace.as_deref().unwrap_or("");
        let name = route.metadata.name.as_deref().unwrap_or("");
        let version = route.metadata.resource_version.as_deref().unwrap_or("");
        let arc_out = outs.get(&(ns, name)).copied();
        let key = (ns.to_string(), name.to_string());
        if let (Some(o), Some((v, last))) = (arc_out, checked.routes.remove(&key)) {
            if v == version && Arc::ptr_eq(o, &last) {
                seen.insert(key, (v, last));
                continue;
            }
        }
        checked.compared += 1;
        let out = arc_out.map(Arc::as_ref);
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
        } else if let Some(o) = arc_out {
            seen.insert(key, (version.to_string(), o.clone()));
        }
    }
    checked.routes = seen;
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

/// One refusal the model holds: which object, the condition's reason, and a message
/// naming where it is (the parent Gateway, or the listener).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused<'m> {
    /// `HTTPRoute` or `Gateway`.
    pub kind: &'static str,
    pub namespace: &'m str,
    pub name: &'m str,
    pub reason: &'static str,
    pub message: String,
}

/// Every refusal of `model`: each parent of an HTTPRoute whose `Accepted` or
/// `ResolvedRefs` is False; then each Gateway not accepted or without an address (its own
/// reasons, not `ListenersNotValid` or `Invalid`, which only point at the listeners), and
/// each listener not accepted (`UnsupportedProtocol`, `PortUnavailable`...), conflicted
/// (`HostnameConflict`, `ProtocolConflict`) or whose references do not resolve
/// (`InvalidCertificateRef`, `RefNotPermitted`, `InvalidRouteKinds`), once per reason and
/// message.
pub fn refused(model: &Model) -> Vec<Refused<'_>> {
    let mut out = Vec::new();
    for r in &model.http_routes {
        for p in &r.parents {
            for c in p.conditions.iter().filter(|c| !c.status) {
                let gateway = p.parent_ref.namespace.as_deref().unwrap_or(&r.namespace);
                out.push(Refused {
                    kind: "HTTPRoute",
                    namespace: &r.namespace,
                    name: &r.name,
                    reason: c.reason,
                    message: format!(
                        "Gateway {gateway}/{}: {}: {}",
                        p.parent_ref.name, c.type_, c.message
                    ),
                });
            }
        }
    }
    for g in &model.gateways {
        let mut found: Vec<(&'static str, String)> = Vec::new();
        for c in g
            .conditions
            .iter()
            .filter(|c| !c.status && c.reason != "ListenersNotValid" && c.reason != "Invalid")
        {
            found.push((c.reason, format!("{}: {}", c.type_, c.message)));
        }
        for l in &g.listeners {
            for c in l.conditions.iter().filter(|c| {
                let refused = if c.type_ == "Conflicted" {
                    c.status
                } else {
                    !c.status
                };
                refused && c.reason != "Invalid"
            }) {
                found.push((c.reason, format!("listener {}: {}", l.name, c.message)));
            }
        }
        let mut once: Vec<(&'static str, String)> = Vec::new();
        for f in found {
            if !once.contains(&f) {
                once.push(f);
            }
        }
        out.extend(once.into_iter().map(|(reason, message)| Refused {
            kind: "Gateway",
            namespace: &g.namespace,
            name: &g.name,
            reason,
            message,
        }));
    }
    out
}

/// One refusal as a Warning Event reports it: on which object (as the reflector holds it,
/// for its uid and resourceVersion) and at which generation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Warning {
    /// `HTTPRoute` or `Gateway`.
    pub kind: &'static str,
    pub object: IngressRef,
    pub generation: i64,
    pub reason: &'static str,
    pub message: String,
}

/// The [`refused`] of `model` whose object the reflectors hold, as Warning Events report
/// them.
pub fn warnings(
    routes: &[Arc<HttpRoute>],
    gateways: &[Arc<Gateway>],
    model: &Model,
) -> Vec<Warning> {
    let mut objects: HashMap<(&str, &str, &str), &ObjectMeta> = HashMap::new();
    for r in routes {
        objects.insert(key_of("HTTPRoute", &r.metadata), &r.metadata);
    }
    for g in gateways {
        objects.insert(key_of("Gateway", &g.metadata), &g.metadata);
    }
    refused(model)
        .into_iter()
        .filter_map(|r| {
            let meta = objects.get(&(r.kind, r.namespace, r.name))?;
            Some(Warning {
                kind: r.kind,
                object: IngressRef {
                    namespace: r.namespace.to_string(),
                    name: r.name.to_string(),
                    uid: meta.uid.clone().unwrap_or_default(),
                    resource_version: meta.resource_version.clone().unwrap_or_default(),
                },
                generation: meta.generation.unwrap_or(0),
                reason: r.reason,
                message: r.message,
            })
        })
        .collect()
}

fn key_of<'o>(kind: &'static str, meta: &'o ObjectMeta) -> (&'static str, &'o str, &'o str) {
    (
        kind,
        meta.namespace.as_deref().unwrap_or(""),
        meta.name.as_deref().unwrap_or(""),
    )
}
