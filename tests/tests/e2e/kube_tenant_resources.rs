//! `[[tenant]] resources` through the kube-api front, with the real kubectl (every binary
//! `kubesim::kubectl::all()` lists) over two simulated leaves (`kube_resources`'s bed).
//!
//! - Secrets are served only to a tenant whose `resources` name them, as the leaf's own
//!   kube-apiserver prints them; never in `get all` nor in another tenant's view.
//!   Hostile: a tenant without them asking any secrets path (across namespaces, a watch,
//!   a field selector, one secret by name, a Table, a delete) gets kube-apiserver's RBAC
//!   403 for that verb and nothing of any secret.
//! - A tenant's discovery, `get all` and answers are its `resources`: any other kind is
//!   absent from discovery and the RBAC 403 on its paths.
//! - A reload that changes `resources` starts and stops the leaves' reflectors (a kind no
//!   tenant reaching the leaf is served is not watched at all); one with an unknown entry
//!   is refused at its line:column and the running config kept.

use std::time::{Duration, Instant};

use leafgate_tests::client;
use serde_json::{Value, json};

use super::kube_resources::{Bed, SKIP, TOKEN_A, TOKEN_OTHER, ok, tables};

const ACME_PASSWORD: &str = "czNjcmV0LW9mLWFjbWU=";
const OTHER_PASSWORD: &str = "czNjcmV0LW9mLW90aGVy";
const API_PASSWORD: &str = "czNjcmV0LW9mLWFwaQ==";
const TABLE: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";

fn secret(ns: &str, name: &str, password: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": name}},
        "type": "Opaque", "data": {"password": password}})
}

/// acme's `web-creds` in leaf-a's `apps` and `api-creds` in leaf-b's `apps-dev`, other's
/// `hidden-creds` in leaf-a's `other`.
fn add_secrets(bed: &Bed) {
    bed.leaf_a
        .create(secret("apps", "web-creds", ACME_PASSWORD))
        .unwrap();
    bed.leaf_a
        .create(secret("other", "hidden-creds", OTHER_PASSWORD))
        .unwrap();
    bed.leaf_b
        .create(secret("apps-dev", "api-creds", API_PASSWORD))
        .unwrap();
}

/// How many secrets leaf `leaf` holds, and whether it watches them.
fn secrets_of(bed: &Bed, leaf: &str) -> (usize, bool) {
    let snapshot = bed.gw.gateway.snapshot();
    let kinds = snapshot.leaves[leaf].kinds();
    let held = kinds
        .counts()
        .find(|(g, _)| g.resource == "secrets")
        .map_or(0, |(_, n)| n);
    let watched = kinds.watched().iter().any(|g| g.resource == "secrets");
    (held, watched)
}

/// Waits (up to 10 s) until leaf `leaf` holds `n` secrets: the stores have no signal to
/// wait on from here.
async fn secrets_held(bed: &Bed, leaf: &str, n: usize) {
    let started = Instant::now();
    while secrets_of(bed, leaf).0 != n {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{leaf}: {:?}",
            secrets_of(bed, leaf)
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// Leaf `leaf`'s secrets as `/status` reports them (its `kinds` entry), and the values of
/// `leafgate_leaf_objects` and `leafgate_leaf_object_bytes` for them.
async fn secrets_reported(bed: &Bed, leaf: &str) -> (Option<Value>, (Option<u64>, Option<u64>)) {
    let status: Value = client::get(bed.gw.admin(), "admin", "/status").await.json();
    let leaves = status["leaves"].as_array().unwrap();
    let this = leaves.iter().find(|l| l["name"] == leaf).unwrap();
    let kinds = this["kinds"].as_array().unwrap();
    let entry = kinds.iter().find(|k| k["resource"] == "secrets").cloned();
    let metrics = client::get(bed.gw.admin(), "admin", "/metrics")
        .await
        .text();
    let value = |name: &str| {
        let series = format!("{name}{{leaf=\"{leaf}\",resource=\"secrets\"}}");
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|rest| rest.trim().parse().ok())
    };
    let series = (
        value("leafgate_leaf_objects"),
        value("leafgate_leaf_object_bytes"),
    );
    (entry, series)
}

/// Sets tenant `index`'s `resources` line in the gateway's config file to `entries`.
pub(super) fn set_resources(bed: &Bed, index: usize, entries: &[&str]) {
    let text = std::fs::read_to_string(&bed.gw.config).unwrap();
    let mut seen = 0;
    let lines: Vec<String> = text
        .lines()
        .map(|line| {
            if !line.starts_with("resources = ") {
                return line.to_string();
            }
            seen += 1;
            if seen - 1 == index {
                format!("resources = {}", json!(entries))
            } else {
                line.to_string()
            }
        })
        .collect();
    assert!(seen > index, "no resources line {index} in:\n{text}");
    std::fs::write(&bed.gw.config, format!("{}\n", lines.join("\n"))).unwrap();
}

/// kube-apiserver's RBAC 403 words for tenant `other` asking `verb` on `resource`
/// (`<plural>[.<group>]`), as JSON escapes them.
pub(super) fn forbidden(
    verb: &str,
    resource: &str,
    name: Option<&str>,
    ns: Option<&str>,
) -> String {
    let (plural, group) = resource.split_once('.').unwrap_or((resource, ""));
    let what = match name {
        Some(n) => format!("{resource} \\\"{n}\\\""),
        None => resource.to_string(),
    };
    let scope = match ns {
        Some(ns) => format!("in the namespace \\\"{ns}\\\""),
        None => "at the cluster scope".to_string(),
    };
    format!(
        "{what} is forbidden: User \\\"tenant:other\\\" cannot {verb} resource \\\"{plural}\\\" in API group \\\"{group}\\\" {scope}"
    )
}

#[tokio::test]
async fn secrets_are_served_only_to_a_tenant_that_opts_in() {
    let bed = Bed::start_tenants(|acme| acme.resources(["default", "secrets"]), |o| o).await;
    add_secrets(&bed);
    secrets_held(&bed, "leaf-a", 2).await;
    secrets_held(&bed, "leaf-b", 1).await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        // `auth can-i` answers as the front serves: secrets to acme, who opted in, not to
        // other; deployments to both, read only.
        for (token, ns, args, want) in [
            (TOKEN_A, "apps", &["list", "secrets"][..], "yes"),
            (TOKEN_A, "apps", &["get", "deployments.apps"][..], "yes"),
            (TOKEN_A, "apps", &["delete", "deployments.apps"][..], "no"),
            (TOKEN_A, "other", &["list", "secrets"][..], "no"),
            (TOKEN_OTHER, "other", &["list", "secrets"][..], "no"),
            (
                TOKEN_OTHER,
                "other",
                &["watch", "deployments.apps"][..],
                "yes",
            ),
        ] {
            let mut can_i = vec!["auth", "can-i"];
            can_i.extend_from_slice(args);
            can_i.extend_from_slice(&["-n", ns]);
            let (_, out, err) = bed.front(&bin, token, &can_i).await;
            // `no` is followed by the front's reason (`no - leafgate serves ...`).
            let answer = out.split_whitespace().next().unwrap_or_default();
            assert_eq!(answer, want, "{b} {can_i:?}: {out} {err}");
        }
        let get = ["get", "secrets", "-n", "apps"];
        let want = tables(&ok(bed.direct(&bin, "a", &get).await, &b));
        let got = tables(&ok(bed.front(&bin, TOKEN_A, &get).await, &b));
        assert_eq!(got.len(), 1, "{b}");
        assert_eq!(got[0].without(SKIP), want[0].without(SKIP), "{b}");
        assert_eq!(got[0].column("LEAF"), ["leaf-a"], "{b}");
        // Selected by `type` as kube-apiserver selects secrets; any other field its 400.
        for fields in ["type=Opaque", "type!=Opaque", "data.password=x"] {
            let get = ["get", "secrets", "-n", "apps", "--field-selector", fields];
            let (want_code, want_out, want_err) = bed.direct(&bin, "a", &get).await;
            let (code, out, err) = bed.front(&bin, TOKEN_A, &get).await;
            assert_eq!((code, &err), (want_code, &want_err), "{b} {fields}: {out}");
            let names = |out: &str| {
                tables(out)
                    .first()
                    .map(|t| t.column("NAME").join(","))
                    .unwrap_or_default()
            };
            assert_eq!(names(&out), names(&want_out), "{b} {fields}");
        }
        let all = ok(
            bed.front(&bin, TOKEN_A, &["get", "secrets", "-A"]).await,
            &b,
        );
        // Storage-key order: `/secrets/apps-dev/api-creds` before `/secrets/apps/web-creds`.
        assert_eq!(
            tables(&all)[0].column("NAME"),
            ["api-creds", "web-creds"],
            "{b}: {all}"
        );
        let yaml = ok(
            bed.front(
                &bin,
                TOKEN_A,
                &["get", "secret", "web-creds", "-n", "apps", "-o", "yaml"],
            )
            .await,
            &b,
        );
        for want in [
            "kind: Secret",
            &format!("password: {ACME_PASSWORD}"),
            "leafgate.io/leaf: leaf-a",
        ] {
            assert!(yaml.contains(want), "{b}: {want} in {yaml}");
        }
        // Never in `get all`, even for the tenant served them.
        let everything = ok(bed.front(&bin, TOKEN_A, &["get", "all", "-A"]).await, &b);
        assert!(
            everything.contains("deployment.apps/web"),
            "{b}: {everything}"
        );
        assert!(
            !everything.contains("creds") && !everything.contains("secret"),
            "{b}: {everything}"
        );
        let names = ok(
            bed.front(&bin, TOKEN_A, &["api-resources", "-o", "name"])
                .await,
            &b,
        );
        assert!(names.lines().any(|l| l == "secrets"), "{b}: {names}");
        // Tenant other, without them: not in its discovery, so kubectl knows no such kind.
        let names = ok(
            bed.front(&bin, TOKEN_OTHER, &["api-resources", "-o", "name"])
                .await,
            &b,
        );
        assert!(!names.lines().any(|l| l == "secrets"), "{b}: {names}");
        let (code, out, err) = bed
            .front(&bin, TOKEN_OTHER, &["get", "secrets", "-n", "other"])
            .await;
        assert_eq!((code, out.as_str()), (Some(1), ""), "{b}: {err}");
        assert!(
            err.contains("the server doesn't have a resource type \"secrets\""),
            "{b}: {err}"
        );
        let (code, out, err) = bed
            .front(
                &bin,
                TOKEN_OTHER,
                &["get", "--raw", "/api/v1/namespaces/other/secrets"],
            )
            .await;
        assert_eq!((code, out.as_str()), (Some(1), ""), "{b}: {err}");
        assert!(
            err.contains(&forbidden("list", "secrets", None, Some("other")).replace("\\\"", "\"")),
            "{b}: {err}"
        );
    }
    // Hostile: every way in for tenant other is the 403 for its verb, and no secret.
    let in_other = Some("other");
    for (method, path, accept, want) in [
        (
            "GET",
            "/api/v1/secrets",
            "application/json",
            forbidden("list", "secrets", None, None),
        ),
        (
            "GET",
            "/api/v1/secrets?watch=true",
            "application/json",
            forbidden("watch", "secrets", None, None),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/secrets?watch=1&resourceVersion=0",
            "application/json",
            forbidden("watch", "secrets", None, in_other),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/secrets?fieldSelector=type%3DOpaque",
            "application/json",
            forbidden("list", "secrets", None, in_other),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/secrets?fieldSelector=metadata.name%3Dhidden-creds",
            TABLE,
            forbidden("list", "secrets", None, in_other),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/secrets/hidden-creds",
            "application/json",
            forbidden("get", "secrets", Some("hidden-creds"), in_other),
        ),
        (
            "GET",
            "/api/v1/namespaces/other/secrets/hidden-creds",
            TABLE,
            forbidden("get", "secrets", Some("hidden-creds"), in_other),
        ),
        (
            "GET",
            "/api/v1/namespaces/apps/secrets/web-creds",
            "application/json",
            forbidden("get", "secrets", Some("web-creds"), Some("apps")),
        ),
        (
            "DELETE",
            "/api/v1/namespaces/other/secrets/hidden-creds",
            "application/json",
            forbidden("delete", "secrets", Some("hidden-creds"), in_other),
        ),
        (
            "POST",
            "/api/v1/namespaces/other/secrets",
            "application/json",
            forbidden("create", "secrets", None, in_other),
        ),
    ] {
        let answer = bed.raw(TOKEN_OTHER, method, path, accept).await;
        assert!(
            answer.starts_with("HTTP/1.1 403"),
            "{method} {path}: {answer}"
        );
        assert!(
            answer.contains(&want),
            "{method} {path}: {want} in {answer}"
        );
        for leaked in [
            OTHER_PASSWORD,
            ACME_PASSWORD,
            API_PASSWORD,
            "\"data\"",
            "\"rows\"",
        ] {
            assert!(!answer.contains(leaked), "{method} {path}: {answer}");
        }
    }
}

#[tokio::test]
async fn a_tenants_resources_bound_its_discovery_and_a_reload_starts_and_stops_reflectors() {
    let bed = Bed::start_tenants(
        |acme| acme.resources(["default"]),
        |other| other.resources(["deployments.apps"]),
    )
    .await;
    add_secrets(&bed);
    // No tenant is served secrets: no leaf watches them, though both have some.
    for leaf in ["leaf-a", "leaf-b"] {
        assert_eq!(secrets_of(&bed, leaf), (0, false), "{leaf}");
    }
    let bin = kubesim::kubectl::pinned();
    let b = bin.display().to_string();
    let names = ok(
        bed.front(&bin, TOKEN_OTHER, &["api-resources", "-o", "name"])
            .await,
        &b,
    );
    let allowed = [
        "events",
        "namespaces",
        "pods",
        "deployments.apps",
        "events.events.k8s.io",
        "selfsubjectreviews.authentication.k8s.io",
        "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io",
    ];
    assert!(names.lines().any(|l| l == "deployments.apps"), "{names}");
    for name in names.lines() {
        assert!(
            allowed.contains(&name),
            "{name} in other's discovery: {names}"
        );
    }
    let everything = ok(
        bed.front(&bin, TOKEN_OTHER, &["get", "all", "-n", "other"])
            .await,
        &b,
    );
    let kinds: Vec<String> = tables(&everything)
        .iter()
        .flat_map(|t| {
            t.column("NAME")
                .iter()
                .map(|n| n.split('/').next().unwrap().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(kinds, ["deployment.apps"], "{everything}");
    let (code, _, err) = bed
        .front(&bin, TOKEN_OTHER, &["get", "svc", "-n", "other"])
        .await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the server doesn't have a resource type \"svc\""),
        "{err}"
    );
    let answer = bed
        .raw(
            TOKEN_OTHER,
            "GET",
            "/api/v1/namespaces/other/services",
            TABLE,
        )
        .await;
    assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
    assert!(
        answer.contains(&forbidden("list", "services", None, Some("other"))),
        "{answer}"
    );
    assert!(!answer.contains("hidden"), "{answer}");
    let answer = bed
        .raw(TOKEN_OTHER, "GET", "/apis/batch/v1", "application/json")
        .await;
    assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
    // acme's view is unchanged by other's bounds.
    let everything = ok(bed.front(&bin, TOKEN_A, &["get", "all", "-A"]).await, &b);
    assert!(
        everything.contains("service/web") && everything.contains("cronjob.batch/api-nightly"),
        "{everything}"
    );

    // Other opts into secrets: every leaf it may reach starts watching them.
    set_resources(&bed, 1, &["deployments.apps", "secrets"]);
    bed.gw.gateway.reload().await.unwrap();
    for leaf in ["leaf-a", "leaf-b"] {
        assert!(secrets_of(&bed, leaf).1, "{leaf}");
    }
    secrets_held(&bed, "leaf-a", 2).await;
    // What keeping them costs, in /status and the metrics.
    let (status, series) = secrets_reported(&bed, "leaf-a").await;
    let status = status.expect("leaf-a's secrets in /status");
    assert_eq!(
        (&status["watched"], &status["objects"]),
        (&json!(true), &json!(2)),
        "{status}"
    );
    let bytes = status["json_bytes"].as_u64().unwrap();
    // Two small secrets: each at least its password and name, well under a kilobyte.
    assert!(bytes > 2 * 40 && bytes < 4096, "{status}");
    assert_eq!(series, (Some(2), Some(bytes)));
    let get = ["get", "secrets", "-n", "other"];
    let want = tables(&ok(bed.direct(&bin, "a", &get).await, &b));
    let got = tables(&ok(bed.front(&bin, TOKEN_OTHER, &get).await, &b));
    assert_eq!(got[0].without(SKIP), want[0].without(SKIP));
    // Still acme's 403: it did not opt in.
    let answer = bed
        .raw(
            TOKEN_A,
            "GET",
            "/api/v1/namespaces/apps/secrets",
            "application/json",
        )
        .await;
    assert!(
        answer.starts_with("HTTP/1.1 403") && !answer.contains(ACME_PASSWORD),
        "{answer}"
    );

    // An unknown entry: refused where it is written, the running config kept.
    set_resources(
        &bed,
        1,
        &["deployments.apps", "secrets", "deploymnets.apps"],
    );
    let refused = bed.gw.gateway.reload().await.unwrap_err().to_string();
    assert!(
        refused
            .contains("tenant[1].resources[2]: `deploymnets.apps` is no resource leafgate serves"),
        "{refused}"
    );
    let at = std::fs::read_to_string(&bed.gw.config).unwrap();
    let line = at.lines().position(|l| l.contains("deploymnets")).unwrap() + 1;
    assert!(
        refused.contains(&format!(":{line}:")),
        "line {line}: {refused}"
    );
    let got = tables(&ok(bed.front(&bin, TOKEN_OTHER, &get).await, &b));
    assert_eq!(got[0].column("NAME"), ["hidden-creds"]);

    // Nobody is served secrets again: every leaf stops watching them and drops them.
    set_resources(&bed, 1, &["deployments.apps"]);
    bed.gw.gateway.reload().await.unwrap();
    for leaf in ["leaf-a", "leaf-b"] {
        assert_eq!(secrets_of(&bed, leaf), (0, false), "{leaf}");
    }
    assert_eq!(secrets_reported(&bed, "leaf-a").await, (None, (None, None)));
    let answer = bed
        .raw(
            TOKEN_OTHER,
            "GET",
            "/api/v1/namespaces/other/secrets",
            "application/json",
        )
        .await;
    assert!(
        answer.starts_with("HTTP/1.1 403") && !answer.contains(OTHER_PASSWORD),
        "{answer}"
    );
}
