//! The Kubernetes documentation's custom resource (`crontabs.stable.example.com`, from
//! "Extend the Kubernetes API with CustomResourceDefinitions") against the real kubectl
//! (every binary `kubesim::kubectl::all` finds), as kube-apiserver serves its CRD: the
//! printed Table is the apiextensions table convertor's
//! (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`): `NAME`, then
//! one column per `additionalPrinterColumns` entry in order (`SPEC`, `REPLICAS`, `AGE`;
//! `IMAGE` has priority 1, so only `-o wide` prints it), a cell nil where the JSONPath
//! finds nothing or the value does not fit the column's type (`cellForJSONValue` gives
//! nil), which kubectl's table printer leaves empty; a CRD version without printer
//! columns gets the handler's one `Age` column.
//! Discovery lists both served versions, `v2` preferred (kube-aware order), the short
//! name and the category. `KubeSimBuilder::without` hides a version, as a cluster partway
//! through the CRD's rollout serves it.
//!
//! The CRDs are built into kubesim (it serves no `apiextensions.k8s.io`); the objects are
//! applied with kubectl (`--validate=false`: kubesim serves no OpenAPI documents).

use std::path::Path;

use super::common::{fixture, kubectl, read_until};
use kubesim::KubeSim;
use kubesim::testkit::{Finished, cut_table, cut_table_without_age, owned_rows, run};
use tokio::io::AsyncBufReadExt;

const TOKEN: &str = "t0ken-for-crontabs";

async fn ok(bin: &Path, dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let Finished { code, out, err } = run(kubectl(bin, dir, args), stdin).await;
    assert_eq!(code, Some(0), "{} {args:?}: {err}\n{out}", bin.display());
    out
}

/// The documentation's object, one without replicas or image, one whose replicas is no
/// integer, and a cluster-scoped widget.
const MANIFESTS: &str = r#"apiVersion: v1
kind: Namespace
metadata:
  name: cron
---
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: my-new-cron-object
  namespace: cron
  labels:
    app: docs
spec:
  cronSpec: "* * * * */5"
  image: my-awesome-cron-image
  replicas: 1
---
apiVersion: stable.example.com/v1
kind: CronTab
metadata:
  name: bare
  namespace: cron
spec:
  cronSpec: "0 3 * * *"
---
apiVersion: stable.example.com/v2
kind: CronTab
metadata:
  name: wordy
  namespace: cron
spec:
  cronSpec: "@hourly"
  replicas: "two"
---
apiVersion: stable.example.com/v1
kind: ClusterWidget
metadata:
  name: widget
"#;

async fn applied(bin: &Path) -> (KubeSim, tempfile::TempDir) {
    let f = fixture(TOKEN).await;
    let apply = ["apply", "--validate=false", "-f", "-"];
    let out = ok(bin, f.dir.path(), &apply, Some(MANIFESTS.as_bytes())).await;
    assert!(
        out.contains("crontab.stable.example.com/my-new-cron-object created"),
        "{out}"
    );
    (f.sim, f.dir)
}

#[tokio::test]
async fn crontabs_print_as_the_table_convertor_prints_them() {
    for bin in kubesim::kubectl::all() {
        let (_sim, dir) = applied(&bin).await;
        let dir = dir.path();
        let out = ok(&bin, dir, &["get", "crontabs", "-n", "cron"], None).await;
        // Name order, as the storage lists them.
        let want: &[&[&str]] = &[
            &["NAME", "SPEC", "REPLICAS"],
            &["bare", "0 3 * * *", ""],
            &["my-new-cron-object", "* * * * */5", "1"],
            &["wordy", "@hourly", ""],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{out}");
        let out = ok(&bin, dir, &["get", "ct", "-n", "cron", "-o", "wide"], None).await;
        let want: &[&[&str]] = &[
            &["NAME", "SPEC", "REPLICAS", "IMAGE"],
            &["bare", "0 3 * * *", "", ""],
            &[
                "my-new-cron-object",
                "* * * * */5",
                "1",
                "my-awesome-cron-image",
            ],
            &["wordy", "@hourly", "", ""],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{out}");
        // The header names kubectl prints are the columns' names upper-cased, AGE in the
        // CRD's place (before IMAGE), not appended.
        assert!(out.lines().next().unwrap().contains("AGE   IMAGE"), "{out}");
        // By the CRD's category, one kind: kubectl prints no kind before the name.
        let out = ok(&bin, dir, &["get", "example", "-A", "-l", "app=docs"], None).await;
        let want: &[&[&str]] = &[
            &["NAMESPACE", "NAME", "SPEC", "REPLICAS"],
            &["cron", "my-new-cron-object", "* * * * */5", "1"],
        ];
        assert_eq!(cut_table_without_age(&out), owned_rows(want), "{out}");
        // Without printer columns: NAME and the handler's AGE.
        let out = ok(&bin, dir, &["get", "clusterwidgets"], None).await;
        assert_eq!(
            cut_table_without_age(&out),
            owned_rows(&[&["NAME"], &["widget"]]),
            "{out}"
        );
        // Discovery: both versions, v2 preferred; the short name and the category.
        let out = ok(
            &bin,
            dir,
            &["api-resources", "--api-group", "stable.example.com"],
            None,
        )
        .await;
        let want: &[&[&str]] = &[
            &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
            &[
                "clusterwidgets",
                "cw",
                "stable.example.com/v1",
                "false",
                "ClusterWidget",
            ],
            &["crontabs", "ct", "stable.example.com/v2", "true", "CronTab"],
        ];
        assert_eq!(cut_table(&out), owned_rows(want), "{out}");
        // An object read at the preferred version, whichever version wrote it.
        let args = ["get", "crontab", "bare", "-n", "cron", "-o", "json"];
        let out = ok(&bin, dir, &args, None).await;
        let bare: serde_json::Value = serde_json::from_str(&out).unwrap();
        assert_eq!(bare["apiVersion"], "stable.example.com/v2", "{out}");
        assert_eq!(bare["spec"]["cronSpec"], "0 3 * * *", "{out}");
    }
}

#[tokio::test]
async fn a_watch_prints_each_change_as_a_row() {
    let bin = kubesim::kubectl::all().into_iter().next().unwrap();
    let (sim, dir) = applied(&bin).await;
    let mut child = kubectl(&bin, dir.path(), &["get", "crontabs", "-n", "cron", "-w"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    read_until(&mut lines, |l| l.starts_with("wordy")).await;
    // A row of each change, its cells in the columns' order.
    sim.create(serde_json::json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "later", "namespace": "cron"},
        "spec": {"cronSpec": "*/1 * * * *", "replicas": 3},
    }))
    .unwrap();
    let line = read_until(&mut lines, |l| l.starts_with("later")).await;
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        words[..7],
        ["later", "*/1", "*", "*", "*", "*", "3"],
        "{line}"
    );
    child.kill().await.unwrap();
}

#[tokio::test]
async fn a_hidden_version_is_not_served() {
    let sim = KubeSim::builder()
        .token(TOKEN, "alice")
        .without("stable.example.com/v2")
        .start()
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    sim.kubeconfig(
        &kubesim::Credential::Token(TOKEN.into()),
        &dir.path().join("kubeconfig"),
    )
    .unwrap();
    let bin = kubesim::kubectl::all().into_iter().next().unwrap();
    let out = ok(&bin, dir.path(), &["api-versions"], None).await;
    assert!(out.lines().any(|l| l == "stable.example.com/v1"), "{out}");
    assert!(!out.lines().any(|l| l == "stable.example.com/v2"), "{out}");
    let Finished { code, err, .. } = run(
        kubectl(
            &bin,
            dir.path(),
            &["get", "crontabs.v2.stable.example.com", "-A"],
        ),
        None,
    )
    .await;
    assert_eq!(code, Some(1), "{err}");
    assert!(
        err.contains("the server doesn't have a resource type"),
        "{err}"
    );
    // At v1, the one left, there is nothing yet.
    let out = ok(&bin, dir.path(), &["get", "crontabs", "-A"], None).await;
    assert_eq!(out, "", "{out}");
}
