//! Custom resources through the kube-api front (`[[tenant]] resources` entries
//! `<plural>.<group>`), with the real kubectl (every binary `kubesim::kubectl::all()`
//! lists) over two simulated leaves serving the Kubernetes documentation's CronTab CRD
//! (`crontabs.stable.example.com`, at `v2` preferred and `v1`) and a cluster-scoped
//! ClusterWidget.
//!
//! Every table is checked against what kube-apiserver's apiextensions table convertor
//! prints for the objects (written here from its rules: `NAME`, the CRD's printer
//! columns in order, `IMAGE` only with `-o wide` for its priority 1, a nil cell (kubectl prints it empty) where the
//! JSONPath finds nothing or the value does not fit the column's type), then LEAF; and
//! against kubectl straight at the leaf. `-A` across both leaves in storage-key order,
//! `-l`, `-w`, `get <name> -o json`, `api-resources`, the CRD's short name and category.
//!
//! Hostile: a tenant not listing the resource has it in no discovery document and gets
//! kube-apiserver's RBAC 403 on its paths; acme asking another tenant's namespace gets
//! the 403; an object in a namespace outside the tenant never appears; a cell the leaf
//! prints nil (a value of the wrong type) is an empty cell, never an error; the cluster-scoped
//! kind is served to nobody and `/status` says why. Two leaves at different versions of
//! the CRD: each version is served with the objects of the leaves preferring it.

use kubesim::KubeSim;
use kubesim::testkit::{cut_table_without_age, owned_rows};
use leafgate_tests::client;
use leafgate_tests::kube::{self, Following};
use serde_json::{Value, json};

use super::kube_resources::{Bed, TOKEN_A, TOKEN_OTHER, kubectl, ok, tables};
use super::kube_tenant_resources::{forbidden, set_resources};

const CRONTABS: &str = "crontabs.stable.example.com";
const WIDGETS: &str = "clusterwidgets.stable.example.com";

fn crontab(version: &str, ns: &str, name: &str, spec: Value) -> Value {
    json!({"apiVersion": format!("stable.example.com/{version}"), "kind": "CronTab",
        "metadata": {"namespace": ns, "name": name, "labels": {"app": name}},
        "spec": spec})
}

/// acme (`apps`, `apps-*`) is served the CronTabs and (asks for) the widgets; other
/// (`other`) only the default kinds. leaf-a holds acme's `web-cron` in `apps` and other's
/// `hidden-cron` in `other`, leaf-b acme's `api-cron` in `apps-dev` (its `replicas` no
/// integer) and a ClusterWidget; `leaf_b` makes leaf-b's simulator.
async fn bed(leaf_b: kubesim::KubeSimBuilder) -> Bed {
    let bed = Bed::of(
        kube::TwoLeaves::start_built(
            (KubeSim::builder(), leaf_b),
            TOKEN_A,
            TOKEN_OTHER,
            |acme| acme.resources(["default", CRONTABS, WIDGETS]),
            |other| other,
        )
        .await,
    );
    let web =
        json!({"cronSpec": "*/5 * * * *", "replicas": 2, "image": "registry.example/web:1.0"});
    bed.leaf_a
        .create(crontab("v1", "apps", "web-cron", web))
        .unwrap();
    let hidden = json!({"cronSpec": "0 0 * * *", "replicas": 1});
    bed.leaf_a
        .create(crontab("v1", "other", "hidden-cron", hidden))
        .unwrap();
    let api = json!({"cronSpec": "0 * * * *", "replicas": "two"});
    bed.leaf_b
        .create(crontab("v1", "apps-dev", "api-cron", api))
        .unwrap();
    bed.leaf_b
        .create(
            json!({"apiVersion": "stable.example.com/v1", "kind": "ClusterWidget",
            "metadata": {"name": "widget"}}),
        )
        .unwrap();
    for (sim, name) in [(&bed.leaf_a, "a"), (&bed.leaf_b, "b")] {
        sim.kubeconfig(
            &kubesim::Credential::ClientCert("admin".into()),
            &bed.dir.path().join(format!("{name}.kubeconfig")),
        )
        .unwrap();
    }
    bed
}

/// Waits (up to 30 s) until leaf `leaf` keeps `n` CronTabs (its discovery asked, its
/// reflector listed).
async fn crontabs_held(bed: &Bed, leaf: &str, n: usize) {
    let started = std::time::Instant::now();
    loop {
        let snapshot = bed.gw.gateway.snapshot();
        let kinds = snapshot.leaves[leaf].kinds();
        let held: usize = kinds
            .custom()
            .iter()
            .filter(|s| s.gvr().resource == "crontabs")
            .map(|s| s.kept.feed.len())
            .sum();
        if held == n {
            return;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "{leaf}: {held} crontabs"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// kubectl as `token` through the front, which must fail (exit 1): its stderr.
async fn refused(bed: &Bed, bin: &std::path::Path, token: &str, args: &[&str]) -> String {
    let (code, out, err) = bed.front(bin, token, args).await;
    assert_eq!(code, Some(1), "{} {args:?}: {out}", bin.display());
    err
}

/// One GET as `token` through the front: the status code and the body.
async fn get(bed: &Bed, token: &str, path: &str) -> (u16, String) {
    let wire = bed.raw(token, "GET", path, "application/json").await;
    let code = wire
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = wire.split_once("\r\n\r\n").map_or("", |(_, b)| b);
    (code, body.to_string())
}

#[tokio::test]
async fn crontabs_print_as_kube_apiserver_prints_them_across_leaves() {
    let bed = bed(KubeSim::builder()).await;
    crontabs_held(&bed, "leaf-a", 2).await;
    crontabs_held(&bed, "leaf-b", 1).await;
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        // Storage-key order across the leaves: `/crontabs/apps-dev/...` before
        // `/crontabs/apps/...`. `api-cron`'s replicas is no integer: nil, printed empty.
        let out = ok(
            bed.front(&bin, TOKEN_A, &["get", "crontabs", "-A"]).await,
            &b,
        );
        let want: &[&[&str]] = &[
            &["NAMESPACE", "NAME", "SPEC", "REPLICAS", "LEAF"],
            &["apps-dev", "api-cron", "0 * * * *", "", "leaf-b"],
            &["apps", "web-cron", "*/5 * * * *", "2", "leaf-a"],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{b}: {out}");
        let wide = ["get", "ct", "-A", "-o", "wide"];
        let out = ok(bed.front(&bin, TOKEN_A, &wide).await, &b);
        let want: &[&[&str]] = &[
            &["NAMESPACE", "NAME", "SPEC", "REPLICAS", "IMAGE", "LEAF"],
            &["apps-dev", "api-cron", "0 * * * *", "", "", "leaf-b"],
            &[
                "apps",
                "web-cron",
                "*/5 * * * *",
                "2",
                "registry.example/web:1.0",
                "leaf-a",
            ],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{b}: {out}");
        // The same table as the leaf's own, in one namespace, but for LEAF.
        for (leaf, ns) in [("a", "apps"), ("b", "apps-dev")] {
            let args = ["get", "crontabs", "-n", ns, "-o", "wide"];
            let direct = tables(&ok(bed.direct(&bin, leaf, &args).await, &b));
            let front = tables(&ok(bed.front(&bin, TOKEN_A, &args).await, &b));
            let skip = &["AGE", "LEAF"];
            assert_eq!(front[0].without(skip), direct[0].without(skip), "{b} {ns}");
        }
        let labelled = ["get", "crontabs", "-A", "-l", "app=web-cron"];
        let out = ok(bed.front(&bin, TOKEN_A, &labelled).await, &b);
        let want: &[&[&str]] = &[
            &["NAMESPACE", "NAME", "SPEC", "REPLICAS", "LEAF"],
            &["apps", "web-cron", "*/5 * * * *", "2", "leaf-a"],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{b}: {out}");
        // By the CRD's category, from the leaves' discovery.
        let out = ok(
            bed.front(&bin, TOKEN_A, &["get", "example", "-A"]).await,
            &b,
        );
        assert_eq!(cut_table_without_age(&out).len(), 3, "{b}: {out}");
        // One object: the leaf's, with the leaf annotation.
        let one = ["get", "crontab", "web-cron", "-n", "apps", "-o", "json"];
        let mut got: Value =
            serde_json::from_str(&ok(bed.front(&bin, TOKEN_A, &one).await, &b)).unwrap();
        let want: Value = serde_json::from_str(&ok(bed.direct(&bin, "a", &one).await, &b)).unwrap();
        assert_eq!(
            got["metadata"]["annotations"]["leafgate.io/leaf"], "leaf-a",
            "{b}"
        );
        got["metadata"]["annotations"]
            .as_object_mut()
            .unwrap()
            .remove("leafgate.io/leaf");
        if got["metadata"]["annotations"]
            .as_object()
            .unwrap()
            .is_empty()
        {
            got["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
        }
        let mut want = want;
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(got, want, "{b}");
        assert_eq!(got["apiVersion"], "stable.example.com/v2", "{b}");
        // Discovery: the CronTabs at v2, with the leaves' short name; no widgets.
        let out = ok(
            bed.front(
                &bin,
                TOKEN_A,
                &["api-resources", "--api-group", "stable.example.com"],
            )
            .await,
            &b,
        );
        let want: &[&[&str]] = &[
            &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
            &["crontabs", "ct", "stable.example.com/v2", "true", "CronTab"],
        ];
        assert_eq!(
            kubesim::testkit::cut_table(&out),
            owned_rows(want),
            "{b}: {out}"
        );
        let err = refused(&bed, &bin, TOKEN_A, &["get", "clusterwidgets"]).await;
        assert!(
            err.contains("the server doesn't have a resource type \"clusterwidgets\""),
            "{b}: {err}"
        );
    }
    // The cluster-scoped kind: kept by no leaf, and `/status` says why.
    let status: Value = client::get(bed.gw.admin(), "admin", "/status").await.json();
    let leaf_b = status["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["name"] == "leaf-b")
        .unwrap();
    let kinds = leaf_b["kinds"].as_array().unwrap();
    let widgets = kinds.iter().find(|k| k["resource"] == WIDGETS).unwrap();
    assert_eq!(widgets["watched"], false, "{widgets}");
    assert!(
        widgets["refused"]
            .as_str()
            .unwrap()
            .starts_with("cluster-scoped"),
        "{widgets}"
    );
    let crontabs = kinds.iter().find(|k| k["resource"] == CRONTABS).unwrap();
    assert_eq!(
        (&crontabs["watched"], &crontabs["objects"]),
        (&json!(true), &json!(1))
    );
}

#[tokio::test]
async fn a_watch_sees_a_new_crontab() {
    let bed = bed(KubeSim::builder()).await;
    crontabs_held(&bed, "leaf-a", 2).await;
    let bin = kubesim::kubectl::all().into_iter().next().unwrap();
    let kubeconfig = kube::kubeconfig(
        bed.dir.path(),
        &bed.ca,
        bed.gw.addr("kube"),
        kube::KubeUser::Token(TOKEN_A),
        Some("apps"),
    );
    let cache = bed.dir.path().join("watch-cache");
    let mut watch = Following::spawn(kubectl(
        &bin,
        &kubeconfig,
        &cache,
        &["get", "crontabs", "-w"],
    ));
    let header = watch.next().await;
    assert!(header.starts_with("NAME"), "{header}");
    let first = watch.next().await;
    assert!(first.starts_with("web-cron "), "{first}");
    let later = json!({"cronSpec": "@daily", "replicas": 3});
    bed.leaf_a
        .create(crontab("v1", "apps", "later-cron", later))
        .unwrap();
    // Another tenant's namespace changes: nothing is printed for it.
    let hidden = json!({"cronSpec": "@daily"});
    bed.leaf_a
        .create(crontab("v1", "other", "more-hidden", hidden))
        .unwrap();
    let next = watch.next().await;
    let words: Vec<&str> = next.split_whitespace().collect();
    assert_eq!(words[..3], ["later-cron", "@daily", "3"], "{next}");
    assert_eq!(words.last(), Some(&"leaf-a"), "{next}");
    watch.stop().await;
}

#[tokio::test]
async fn other_tenants_get_the_rbac_refusal_and_nothing_leaks() {
    let bed = bed(KubeSim::builder()).await;
    crontabs_held(&bed, "leaf-a", 2).await;
    crontabs_held(&bed, "leaf-b", 1).await;
    // `other` is not served the CronTabs: absent from its discovery, the RBAC 403 on
    // each of their paths, whichever namespace.
    let (code, body) = get(&bed, TOKEN_OTHER, "/apis").await;
    assert_eq!(code, 200);
    assert!(!body.contains("stable.example.com"), "{body}");
    assert_eq!(
        get(&bed, TOKEN_OTHER, "/apis/stable.example.com").await.0,
        404
    );
    for (path, verb, name, ns) in [
        (
            "/apis/stable.example.com/v2/namespaces/other/crontabs",
            "list",
            None,
            Some("other"),
        ),
        ("/apis/stable.example.com/v2/crontabs", "list", None, None),
        (
            "/apis/stable.example.com/v2/crontabs?watch=1",
            "watch",
            None,
            None,
        ),
        (
            "/apis/stable.example.com/v2/namespaces/other/crontabs/hidden-cron",
            "get",
            Some("hidden-cron"),
            Some("other"),
        ),
    ] {
        let (code, body) = get(&bed, TOKEN_OTHER, path).await;
        assert_eq!(code, 403, "{path}: {body}");
        let want = forbidden(verb, CRONTABS, name, ns);
        assert!(body.contains(&want), "{path}: {body}");
        assert!(!body.contains("cronSpec"), "{path}: {body}");
    }
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        // `auth can-i` answers as the front serves.
        for (token, ns, want) in [
            (TOKEN_A, "apps", "yes"),
            (TOKEN_A, "other", "no"),
            (TOKEN_OTHER, "other", "no"),
        ] {
            let can_i = ["auth", "can-i", "list", CRONTABS, "-n", ns];
            let (_, out, err) = bed.front(&bin, token, &can_i).await;
            let answer = out.split_whitespace().next().unwrap_or_default();
            assert_eq!(answer, want, "{b} {token} {ns}: {out} {err}");
        }
        let err = refused(&bed, &bin, TOKEN_OTHER, &["get", CRONTABS, "-n", "other"]).await;
        assert!(
            err.contains("the server doesn't have a resource type"),
            "{b}: {err}"
        );
        // acme in other's namespace: the 403.
        let err = refused(&bed, &bin, TOKEN_A, &["get", "crontabs", "-n", "other"]).await;
        assert!(
            err.contains("crontabs.stable.example.com is forbidden: User \"tenant:acme\" cannot list resource \"crontabs\" in API group \"stable.example.com\" in the namespace \"other\""),
            "{b}: {err}"
        );
        for args in [
            &["get", "crontabs", "-A", "-o", "wide"][..],
            &["get", "crontabs", "-A", "-o", "json"][..],
            &["get", "example", "-A"][..],
        ] {
            let out = ok(bed.front(&bin, TOKEN_A, args).await, &b);
            assert!(
                out.contains("web-cron") && out.contains("api-cron"),
                "{b} {args:?}: {out}"
            );
            assert!(!out.contains("hidden"), "{b} {args:?}: {out}");
        }
        // A field the apiextensions handler does not select by: its 400, as the leaf's.
        let hostile = [
            "get",
            "crontabs",
            "-n",
            "apps",
            "--field-selector",
            "spec.replicas=2",
        ];
        let (code, out, err) = bed.front(&bin, TOKEN_A, &hostile).await;
        let (want_code, _, want_err) = bed.direct(&bin, "a", &hostile).await;
        assert_eq!(want_code, Some(1), "{b}: {want_err}");
        assert_eq!((code, err), (want_code, want_err), "{b}: {out}");
        let by_name = [
            "get",
            "crontabs",
            "-A",
            "--field-selector",
            "metadata.name=api-cron",
        ];
        let out = ok(bed.front(&bin, TOKEN_A, &by_name).await, &b);
        assert_eq!(cut_table_without_age(&out).len(), 2, "{b}: {out}");
    }
}

#[tokio::test]
async fn leaves_at_different_versions_are_each_served_at_theirs() {
    // leaf-b's CRD does not serve v2 (yet): it prefers v1.
    let bed = bed(KubeSim::builder().without("stable.example.com/v2")).await;
    crontabs_held(&bed, "leaf-a", 2).await;
    crontabs_held(&bed, "leaf-b", 1).await;
    let (code, body) = get(&bed, TOKEN_A, "/apis/stable.example.com").await;
    assert_eq!(code, 200, "{body}");
    let group: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(group["preferredVersion"]["version"], "v2", "{body}");
    let versions: Vec<&str> = group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v2", "v1"], "{body}");
    for bin in kubesim::kubectl::all() {
        let b = bin.display().to_string();
        let out = ok(
            bed.front(&bin, TOKEN_A, &["get", "crontabs", "-A"]).await,
            &b,
        );
        let names: Vec<String> = cut_table_without_age(&out)
            .iter()
            .skip(1)
            .map(|r| r[1].clone())
            .collect();
        assert_eq!(names, ["web-cron"], "{b}: {out}");
        let v1 = ["get", "crontabs.v1.stable.example.com", "-A"];
        let out = ok(bed.front(&bin, TOKEN_A, &v1).await, &b);
        let rows = cut_table_without_age(&out);
        assert_eq!(rows[1][1], "api-cron", "{b}: {out}");
        assert_eq!(
            rows[1].last().map(String::as_str),
            Some("leaf-b"),
            "{b}: {out}"
        );
        assert_eq!(rows.len(), 2, "{b}: {out}");
    }
}

#[tokio::test]
async fn a_reload_stops_and_starts_following_a_custom_resource() {
    let bed = bed(KubeSim::builder()).await;
    crontabs_held(&bed, "leaf-a", 2).await;
    let listed = "/apis/stable.example.com/v2/namespaces/apps/crontabs";
    assert_eq!(get(&bed, TOKEN_A, listed).await.0, 200);
    // An ill-shaped entry: refused where it is written, the running config kept.
    set_resources(&bed, 0, &["default", CRONTABS, "crontabs.example"]);
    let refused = bed.gw.gateway.reload().await.unwrap_err().to_string();
    let at = std::fs::read_to_string(&bed.gw.config).unwrap();
    let line = at
        .lines()
        .position(|l| l.contains("crontabs.example\""))
        .unwrap()
        + 1;
    assert!(
        refused.contains(&format!(":{line}:"))
            && refused.contains(
                "tenant[0].resources[2]: `crontabs.example` is no resource leafgate serves"
            )
            && refused.contains("`example` is no custom resource's group"),
        "line {line}: {refused}"
    );
    assert_eq!(get(&bed, TOKEN_A, listed).await.0, 200);
    // Nobody is served it: no leaf follows it, and no path or discovery has it.
    set_resources(&bed, 0, &["default"]);
    bed.gw.gateway.reload().await.unwrap();
    for leaf in ["leaf-a", "leaf-b"] {
        let snapshot = bed.gw.gateway.snapshot();
        let kinds = snapshot.leaves[leaf].kinds();
        assert!(kinds.custom().is_empty(), "{leaf}");
        let kept = kinds.footprint();
        assert!(
            !kept.iter().any(|k| k.gvr.group == "stable.example.com"),
            "{leaf}: {kept:?}"
        );
    }
    assert_eq!(get(&bed, TOKEN_A, listed).await.0, 404);
    assert!(
        !get(&bed, TOKEN_A, "/apis")
            .await
            .1
            .contains("stable.example.com")
    );
    // Served again: each leaf asks its discovery anew and lists it whole.
    set_resources(&bed, 0, &["default", CRONTABS]);
    bed.gw.gateway.reload().await.unwrap();
    crontabs_held(&bed, "leaf-a", 2).await;
    crontabs_held(&bed, "leaf-b", 1).await;
    let (code, body) = get(&bed, TOKEN_A, listed).await;
    assert_eq!(code, 200, "{body}");
    assert!(
        body.contains("web-cron") && !body.contains("hidden-cron"),
        "{body}"
    );
}
