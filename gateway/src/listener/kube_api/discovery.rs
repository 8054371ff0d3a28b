//! Discovery: what kubectl asks before anything else (`/version`, `/api`, `/api/v1`,
//! `/apis`, `/apis/<group>/v1`), answered so it finds pods (with `exec`, `attach`, `log`,
//! `portforward`), namespaces, events (core/v1 and `events.k8s.io/v1`), the review APIs
//! (`auth`) and the read-only kinds the calling tenant is served (its `resources`; a
//! group none of whose kinds it is served is not listed), and nothing leafgate does not
//! serve it; the custom resources it is served, at the versions its leaves serve them,
//! with the leaves' short names and categories; and the health checks (`/healthz`, `/livez`, `/readyz`) as
//! kube-apiserver words them.
//!
//! `/version` is the oldest version among the tenant's synced leaves (so kubectl's skew
//! warning speaks of the oldest cluster it reaches), unless the listener pins one with
//! `kubernetes_version`; before any leaf has answered, the version leafgate is built for.
//!
//! kubectl >= 1.30 first asks `/api` and `/apis` for the aggregated discovery document
//! (`as=APIGroupDiscoveryList`) and falls back to the legacy documents when the answer's
//! `Content-Type` is plain `application/json`; that fallback is what these answers take.

use std::sync::Arc;

use http::StatusCode;
use serde_json::{Value, json};

use super::kinds::{self, Declared};
use crate::config::TenantConfig;
use crate::config::kinds::Gvr;
use crate::k8s::Leaf;
use crate::k8s::status::Status;
use crate::listener::reply;
use crate::proxy::Body;
use crate::snapshot::Snapshot;

/// The Kubernetes version leafgate's API front speaks (the pinned kubectl's minor), said
/// until a leaf has told its own.
const MAJOR: &str = "1";
const MINOR: &str = "37";

/// A resource of a group, as its `APIResourceList` names it.
struct Served {
    name: &'static str,
    kind: &'static str,
    namespaced: bool,
    verbs: &'static [&'static str],
    short_names: &'static [&'static str],
}

/// A review: only created, cluster-wide.
const fn review(name: &'static str, kind: &'static str) -> Served {
    Served {
        name,
        kind,
        namespaced: false,
        verbs: &["create"],
        short_names: &[],
    }
}

/// The groups served besides the core group, each at `v1`, with their resources.
const GROUPS: &[(&str, &[Served])] = &[
    (
        "authentication.k8s.io",
        &[review("selfsubjectreviews", "SelfSubjectReview")],
    ),
    (
        "authorization.k8s.io",
        &[
            review("selfsubjectaccessreviews", "SelfSubjectAccessReview"),
            review("selfsubjectrulesreviews", "SelfSubjectRulesReview"),
        ],
    ),
    (
        "events.k8s.io",
        &[Served {
            name: "events",
            kind: "Event",
            namespaced: true,
            verbs: &["get", "list", "watch"],
            short_names: &["ev"],
        }],
    ),
];

/// `/version`: the listener's pinned version, else the oldest among `tenant`'s leaves
/// whose pod watch is synced and whose server has answered `/version`.
pub fn version(snapshot: &Snapshot, listener: &str, tenant: &TenantConfig) -> http::Response<Body> {
    let pinned = snapshot
        .config
        .listeners
        .iter()
        .find(|l| l.name == listener)
        .and_then(|l| l.kubernetes_version.as_ref());
    if let Some(v) = pinned {
        return reply::json(
            StatusCode::OK,
            &info(&v.major.to_string(), &v.minor.to_string(), &v.git_version),
        );
    }
    let oldest = snapshot
        .leaves
        .values()
        .filter(|leaf| {
            tenant
                .leaves
                .as_ref()
                .is_none_or(|names| names.iter().any(|n| n == leaf.name()))
        })
        .filter(|leaf| leaf.watch_state().synced)
        .filter_map(|leaf| leaf.version())
        .min_by(|a, b| a.order.cmp(&b.order));
    let body = match oldest {
        Some(v) => serde_json::to_value(&v.info).unwrap_or_else(|_| json!({})),
        None => info(
            MAJOR,
            MINOR,
            &format!("v{MAJOR}.{MINOR}.0+leafgate-{}", env!("CARGO_PKG_VERSION")),
        ),
    };
    reply::json(StatusCode::OK, &body)
}

/// A `version.Info` leafgate writes itself (pinned, or its own).
fn info(major: &str, minor: &str, git_version: &str) -> Value {
    json!({
        "major": major,
        "minor": minor,
        "gitVersion": git_version,
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "",
        "compiler": "leafgate",
        "platform": "linux/amd64",
    })
}

/// `/healthz`, `/livez`, `/readyz` (`which`), and one check of them (`/readyz/ping`), as
/// kube-apiserver's `healthz` handler answers: `ok`; with `?verbose`, each check as
/// `[+]name ok` then `<which> check passed`; a failure is a 500 listing the checks,
/// `[-]name failed: reason withheld`, then `<which> check failed`. `ping` always passes;
/// `/readyz` adds `leaf-sync`: every leaf the tenant reaches has a synced pod watch.
pub fn health(
    snapshot: &Snapshot,
    tenant: &TenantConfig,
    which: &str,
    check: Option<&str>,
    verbose: bool,
) -> http::Response<Body> {
    let mut checks = vec![("ping", true)];
    if which == "readyz" {
        let synced = snapshot
            .leaves
            .values()
            .filter(|leaf| {
                tenant
                    .leaves
                    .as_ref()
                    .is_none_or(|names| names.iter().any(|n| n == leaf.name()))
            })
            .all(|leaf| leaf.watch_state().synced);
        checks.push(("leaf-sync", synced));
    }
    if let Some(name) = check {
        return match checks.iter().find(|(n, _)| *n == name) {
            Some((_, true)) => reply::kubelet(StatusCode::OK, "ok"),
            Some((_, false)) => reply::kubelet(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal server error: reason withheld\n",
            ),
            None => reply::kubelet(StatusCode::NOT_FOUND, "404 page not found\n"),
        };
    }
    let passed = checks.iter().all(|(_, ok)| *ok);
    if passed && !verbose {
        return reply::kubelet(StatusCode::OK, "ok");
    }
    let mut text: String = checks
        .iter()
        .map(|(name, ok)| {
            if *ok {
                format!("[+]{name} ok\n")
            } else {
                format!("[-]{name} failed: reason withheld\n")
            }
        })
        .collect();
    if passed {
        text.push_str(&format!("{which} check passed\n"));
        reply::kubelet(StatusCode::OK, text)
    } else {
        text.push_str(&format!("{which} check failed\n"));
        reply::kubelet(StatusCode::INTERNAL_SERVER_ERROR, text)
    }
}

pub fn api_versions() -> http::Response<Body> {
    reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [],
        }),
    )
}

/// One served group: its name and versions, preferred first.
struct Group {
    name: String,
    versions: Vec<String>,
}

fn group_doc(group: &Group) -> Value {
    let gvs: Vec<Value> = group
        .versions
        .iter()
        .map(|v| json!({ "groupVersion": format!("{}/{v}", group.name), "version": v }))
        .collect();
    json!({ "name": group.name, "versions": gvs, "preferredVersion": gvs.first() })
}

/// The read-only kinds `tenant` is served.
fn declared_for(tenant: &TenantConfig) -> impl Iterator<Item = &'static Declared> + '_ {
    kinds::DECLARED.iter().filter(|d| tenant.serves(&d.gvr))
}

/// A custom resource as the leaves `tenant` may reach serve it at one version: the kind
/// the first of them (by name) gives, the short names and categories of all of them (each
/// once, the first leaf's first).
struct Custom {
    gvr: &'static Gvr,
    short_names: Vec<String>,
    categories: Vec<String>,
}

/// The custom resources served to `tenant`, at each version a leaf it may reach serves
/// them at (each leaf keeps its group's preferred version).
fn custom_for(snapshot: &Snapshot, tenant: &TenantConfig) -> Vec<Custom> {
    let mut leaves: Vec<(&String, &Arc<Leaf>)> = snapshot
        .leaves
        .iter()
        .filter(|(name, _)| tenant.may_reach(name))
        .collect();
    leaves.sort_by(|a, b| a.0.cmp(b.0));
    let mut out: Vec<Custom> = Vec::new();
    for (_, leaf) in leaves {
        for served in leaf.kinds().custom() {
            let gvr = served.gvr();
            if !tenant.serves(gvr) {
                continue;
            }
            let same =
                |c: &Custom| c.gvr.api_version == gvr.api_version && c.gvr.resource == gvr.resource;
            let i = match out.iter().position(same) {
                Some(i) => i,
                None => {
                    out.push(Custom {
                        gvr,
                        short_names: Vec::new(),
                        categories: Vec::new(),
                    });
                    out.len() - 1
                }
            };
            let at = &mut out[i];
            for (have, more) in [
                (&mut at.short_names, &served.short_names),
                (&mut at.categories, &served.categories),
            ] {
                for name in more {
                    if !have.contains(name) {
                        have.push(name.clone());
                    }
                }
            }
        }
    }
    out
}

/// kube-apiserver's version priority (`version.CompareKubeAwareVersionStrings`): GA
/// before beta before alpha, higher numbers first, then any other name alphabetically.
fn version_order(v: &str) -> (u8, std::cmp::Reverse<u64>, std::cmp::Reverse<u64>, String) {
    use std::cmp::Reverse;
    let parsed = v
        .strip_prefix('v')
        .and_then(|rest| -> Option<(u8, u64, u64)> {
            let digits = rest
                .find(|c: char| !c.is_ascii_digit())
                .unwrap_or(rest.len());
            if rest.starts_with('0') {
                return None;
            }
            let major: u64 = rest[..digits].parse().ok()?;
            let (kind, minor): (u8, &str) = match &rest[digits..] {
                "" => return Some((0, major, 0)),
                tail => match tail.strip_prefix("beta") {
                    Some(n) => (1, n),
                    None => (2, tail.strip_prefix("alpha")?),
                },
            };
            Some((kind, major, minor.parse().ok()?))
        });
    match parsed {
        Some((kind, major, minor)) => (kind, Reverse(major), Reverse(minor), String::new()),
        None => (3, Reverse(0), Reverse(0), v.to_string()),
    }
}

/// The groups served to `tenant` and their versions: the reviews' and events' (`v1`),
/// then its read-only kinds' (one version each), then its custom resources' (every
/// version a leaf serves one at, preferred first).
fn groups(snapshot: &Snapshot, tenant: &TenantConfig) -> Vec<Group> {
    let mut names: Vec<Group> = GROUPS
        .iter()
        .map(|(name, _)| Group {
            name: name.to_string(),
            versions: vec!["v1".into()],
        })
        .collect();
    let declared = declared_for(tenant).map(|d| d.gvr);
    let custom = custom_for(snapshot, tenant);
    for gvr in declared.chain(custom.iter().map(|c| *c.gvr)) {
        if gvr.group.is_empty() {
            continue;
        }
        match names.iter_mut().find(|g| g.name == gvr.group) {
            Some(g) if !g.versions.iter().any(|v| v == gvr.version()) => {
                g.versions.push(gvr.version().to_string());
                g.versions.sort_by_key(|v| version_order(v));
            }
            Some(_) => {}
            None => names.push(Group {
                name: gvr.group.to_string(),
                versions: vec![gvr.version().to_string()],
            }),
        }
    }
    names
}

/// The `APIResource` of a read-only kind or custom resource: `gvr`, its short names and
/// categories.
fn read_only<S: serde::Serialize>(gvr: &Gvr, short_names: &[S], categories: &[S]) -> Value {
    let mut doc = resource(gvr.resource, true, gvr.kind, &["get", "list", "watch"]);
    doc["singularName"] = json!(gvr.kind.to_lowercase());
    if !short_names.is_empty() {
        doc["shortNames"] = json!(short_names);
    }
    if !categories.is_empty() {
        doc["categories"] = json!(categories);
    }
    doc
}

/// The read-only kinds and custom resources of `group` at `version` served to `tenant`,
/// as `APIResource`s.
fn declared_in(
    snapshot: &Snapshot,
    tenant: &TenantConfig,
    group: &str,
    version: &str,
) -> Vec<Value> {
    let mut out: Vec<Value> = declared_for(tenant)
        .filter(|d| d.gvr.group == group && d.gvr.version() == version)
        .map(|d| read_only(&d.gvr, d.short_names, d.categories))
        .collect();
    let custom = custom_for(snapshot, tenant);
    let here = custom
        .iter()
        .filter(|c| c.gvr.group == group && c.gvr.version() == version);
    out.extend(here.map(|c| read_only(c.gvr, &c.short_names, &c.categories)));
    out
}

pub fn api_groups(snapshot: &Snapshot, tenant: &TenantConfig) -> http::Response<Body> {
    let groups: Vec<Value> = groups(snapshot, tenant).iter().map(group_doc).collect();
    reply::json(
        StatusCode::OK,
        &json!({ "kind": "APIGroupList", "apiVersion": "v1", "groups": groups }),
    )
}

/// The group `group` as served to `tenant`, if it is.
fn group_of(snapshot: &Snapshot, tenant: &TenantConfig, group: &str) -> Option<Group> {
    groups(snapshot, tenant)
        .into_iter()
        .find(|g| g.name == group)
}

/// Whether leafgate serves `tenant` `group` (at any version).
pub fn serves_group(snapshot: &Snapshot, tenant: &TenantConfig, group: &str) -> bool {
    group_of(snapshot, tenant, group).is_some()
}

/// Whether leafgate serves `tenant` `group` at `version`.
pub fn serves(snapshot: &Snapshot, tenant: &TenantConfig, group: &str, version: &str) -> bool {
    group_of(snapshot, tenant, group).is_some_and(|g| g.versions.iter().any(|v| v == version))
}

/// `/apis/<group>`: the `APIGroup` (404 for a group not served).
pub fn api_group(snapshot: &Snapshot, tenant: &TenantConfig, group: &str) -> http::Response<Body> {
    let Some(group) = group_of(snapshot, tenant, group) else {
        return reply::status(&Status::no_such_resource());
    };
    let mut doc = group_doc(&group);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    reply::json(StatusCode::OK, &doc)
}

/// `/apis/<group>/<version>`: its resources served to `tenant` (404 if none is).
pub fn group_resources(
    snapshot: &Snapshot,
    tenant: &TenantConfig,
    group: &str,
    version: &str,
) -> http::Response<Body> {
    if !serves(snapshot, tenant, group, version) {
        return reply::status(&Status::no_such_resource());
    }
    let served = GROUPS
        .iter()
        .find(|(name, _)| *name == group)
        .map_or(&[][..], |(_, served)| *served);
    let resources: Vec<Value> = served
        .iter()
        .map(|r| {
            let mut doc = resource(r.name, r.namespaced, r.kind, r.verbs);
            if !r.short_names.is_empty() {
                doc["shortNames"] = json!(r.short_names);
            }
            doc
        })
        .chain(declared_in(snapshot, tenant, group, version))
        .collect();
    reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": format!("{group}/{version}"),
            "resources": resources,
        }),
    )
}

fn resource(name: &str, namespaced: bool, kind: &str, verbs: &[&str]) -> Value {
    json!({
        "name": name,
        "singularName": if name.contains('/') { "" } else { name.trim_end_matches('s') },
        "namespaced": namespaced,
        "kind": kind,
        "verbs": verbs,
    })
}

/// `/api/v1`: pods, namespaces, events and the core kinds served to `tenant`.
pub fn resources(snapshot: &Snapshot, tenant: &TenantConfig) -> http::Response<Body> {
    let mut pods = resource("pods", true, "Pod", &["get", "list", "watch"]);
    pods["shortNames"] = json!(["po"]);
    pods["categories"] = json!(["all"]);
    let mut namespaces = resource("namespaces", false, "Namespace", &["get", "list", "watch"]);
    namespaces["shortNames"] = json!(["ns"]);
    let mut events = resource("events", true, "Event", &["get", "list", "watch"]);
    events["shortNames"] = json!(["ev"]);
    let mut resources = vec![
        events,
        namespaces,
        pods,
        resource("pods/attach", true, "PodAttachOptions", &["create", "get"]),
        resource("pods/exec", true, "PodExecOptions", &["create", "get"]),
        resource("pods/log", true, "Pod", &["get"]),
        resource(
            "pods/portforward",
            true,
            "PodPortForwardOptions",
            &["create", "get"],
        ),
    ];
    resources.extend(declared_in(snapshot, tenant, "", "v1"));
    reply::json(
        StatusCode::OK,
        &json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": "v1",
            "resources": resources,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::version_order;

    #[test]
    fn versions_sort_as_kube_apiserver_sorts_them() {
        let mut v = vec![
            "v1alpha1", "v2beta1", "v1", "v1beta2", "v2", "foo", "v1beta1", "v10", "v01",
        ];
        v.sort_by_key(|s| version_order(s));
        assert_eq!(
            v,
            [
                "v10", "v2", "v1", "v2beta1", "v1beta2", "v1beta1", "v1alpha1", "foo", "v01"
            ]
        );
    }
}
