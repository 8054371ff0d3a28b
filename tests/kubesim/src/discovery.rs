//! Discovery documents: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{group}/{version}`.
//! Served unaggregated (plain lists, `application/json`), which kubectl accepts silently.
//! `authorization.k8s.io` is listed beside the stored groups: its one resource,
//! `subjectaccessreviews`, is only created (answered by `access`), never stored.
//! Custom resources (the Gateway API kinds) are listed as the apiextensions discovery
//! controller lists them: every served version of the group, preferred first; the CRD
//! verbs in its order; categories; a `<plural>/status` entry only where the CRD declares
//! the status subresource.

use serde_json::{Value, json};

use crate::resources::{CRD_VERBS, GROUPS, RESOURCES, VERBS, versions};

/// The version a simulator reports unless told otherwise.
pub const GIT_VERSION: &str = "v1.37.1-kubesim";

/// `/version` of a simulator left at the default version.
pub fn version() -> Value {
    version_for(GIT_VERSION)
}

/// `/version` for `git_version` (`v1.37.1-kubesim`): `major` and `minor` are its first two
/// numbers, as kube-apiserver derives them from its build's version.
pub fn version_for(git_version: &str) -> Value {
    let mut numbers = git_version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(str::to_string);
    let major = numbers.next().unwrap_or_default();
    let minor = numbers.next().unwrap_or_default();
    json!({
        "major": major, "minor": minor, "gitVersion": git_version,
        "gitCommit": "0000000000000000000000000000000000000000", "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z", "goVersion": "go1.25.0", "compiler": "gc",
        "platform": "linux/amd64"
    })
}

pub fn api(server: &str) -> Value {
    json!({
        "kind": "APIVersions", "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}]
    })
}

/// The versions of `group` served, preferred first, but those `hidden`
/// (`KubeSimBuilder::without`).
fn served_versions(name: &str, hidden: &[String]) -> Vec<&'static str> {
    if name == AUTHORIZATION {
        return vec!["v1"];
    }
    let mut served = versions(name);
    served.retain(|v| !hidden.contains(&format!("{name}/{v}")));
    served
}

fn group_doc(name: &str, hidden: &[String]) -> Value {
    let served = served_versions(name, hidden);
    let versions: Vec<Value> = served
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "preferredVersion": versions[0].clone(), "versions": versions})
}

/// The group of the access reviews (`access`), served without storage.
const AUTHORIZATION: &str = "authorization.k8s.io";

/// `/apis`; a group all of whose versions are `hidden` is not listed.
pub fn apis(hidden: &[String]) -> Value {
    let groups = GROUPS.iter().chain([&AUTHORIZATION]);
    let shown = groups.filter(|g| !served_versions(g, hidden).is_empty());
    json!({"kind": "APIGroupList", "apiVersion": "v1",
           "groups": shown.map(|g| group_doc(g, hidden)).collect::<Vec<_>>()})
}

pub fn group(name: &str, hidden: &[String]) -> Option<Value> {
    let served = GROUPS.contains(&name) || name == AUTHORIZATION;
    (served && !served_versions(name, hidden).is_empty()).then(|| {
        let mut g = group_doc(name, hidden);
        g["kind"] = json!("APIGroup");
        g["apiVersion"] = json!("v1");
        g
    })
}

/// The `APIResourceList` of a group version (`group` empty for core), None if not served
/// (or `hidden`).
pub fn resources(group: &str, version: &str, hidden: &[String]) -> Option<Value> {
    if hidden.contains(&format!("{group}/{version}")) {
        return None;
    }
    if group == AUTHORIZATION && version == "v1" {
        return Some(json!({
            "kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "authorization.k8s.io/v1",
            "resources": [{"name": "subjectaccessreviews", "singularName": "subjectaccessreview",
                           "namespaced": false, "kind": "SubjectAccessReview", "verbs": ["create"]}]
        }));
    }
    if !(group.is_empty() || GROUPS.contains(&group)) || !versions(group).contains(&version) {
        return None;
    }
    let mut list = Vec::new();
    for r in RESOURCES
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        let verbs = if r.crd { CRD_VERBS } else { VERBS };
        let mut doc = json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": verbs, "storageVersionHash": ""
        });
        if !r.short_names.is_empty() {
            doc["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            doc["categories"] = json!(r.categories);
        }
        list.push(doc);
        for sub in r.subresources {
            let (kind, verbs): (&str, &[&str]) = match *sub {
                "status" => (r.kind, &["get", "patch", "update"]),
                "log" => ("Pod", &["get"]),
                "exec" | "attach" => ("PodExecOptions", &["create", "get"]),
                "portforward" => ("PodPortForwardOptions", &["create", "get"]),
                _ => continue,
            };
            list.push(
                json!({"name": format!("{}/{sub}", r.plural), "singularName": "",
                "namespaced": r.namespaced, "kind": kind, "verbs": verbs}),
            );
        }
    }
    // The installer registers a group version's storage paths sorted (`sort.Strings`),
    // so its APIResourceList is in name order, each subresource after its resource.
    list.sort_by(|a, b| a["name"].as_str().cmp(&b["name"].as_str()));
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}),
    )
}
