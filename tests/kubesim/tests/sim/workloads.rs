//! The built-in kinds of an application namespace against the real kubectl (every binary
//! `kubesim::kubectl::all` finds): Deployments with their ReplicaSets and Pods, a
//! StatefulSet with its ControllerRevision, a DaemonSet, Jobs (one Complete, one Failed),
//! a CronJob, Services with Endpoints, an EndpointSlice and an Ingress, a ConfigMap, a
//! Secret, a ServiceAccount, a LimitRange, a ResourceQuota, a NetworkPolicy, a bound PVC,
//! an HPA and a PDB.
//!
//! `tests/fixtures/kube-resources/shop.yaml` is applied with `kubectl apply
//! --validate=false -f` (kubesim serves no OpenAPI); the objects that point at server-made
//! UIDs (ownerReferences, events) are created through the store API; the statuses are
//! written through the status subresource, as controllers write them. Every expected cell
//! is worked out by hand from `pkg/printers/internalversion/printers.go` for these objects,
//! not taken from kubesim's printers.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use super::common::{self, kubectl, read_until, watching};
use kubesim::KubeSim;
use kubesim::testkit::{Finished, run};
use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::io::{AsyncBufReadExt, BufReader};

const TOKEN: &str = "t0ken-for-the-shop";
const NS: &str = "shop";
const NEW_RS: &str = "web-5d4f8b9c6";
const OLD_RS: &str = "web-7c9b5d2f4";
const ENDPOINTS_WARNING: &str =
    "Warning: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n";

/// kubectl's stdout for a command that must succeed with nothing on stderr but `allowed`.
async fn ok_with(bin: &Path, dir: &Path, args: &[&str], allowed: &str) -> String {
    let Finished { code, out, err } = run(kubectl(bin, dir, args), None).await;
    assert_eq!(
        code,
        Some(0),
        "{} {args:?} failed: {err}\n{out}",
        bin.display()
    );
    assert_eq!(err, allowed, "{} {args:?} stderr", bin.display());
    out
}

async fn ok(bin: &Path, dir: &Path, args: &[&str]) -> String {
    ok_with(bin, dir, args, "").await
}

/// One printed table: its header's column names, and each row's cells cut at the columns'
/// starts (kubectl's tabwriter starts every cell where its header starts; the names are
/// separated by at least three spaces, while a name like `NODE SELECTOR` has one).
struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    fn parse(text: &str) -> Table {
        let mut cut = kubesim::testkit::cut_table(text).into_iter();
        Table {
            header: cut.next().unwrap_or_default(),
            rows: cut.collect(),
        }
    }

    /// The rows without the columns named in `skip` (the AGE columns, which count to the
    /// wall clock).
    fn without(&self, skip: &[&str]) -> Vec<Vec<String>> {
        let keep: Vec<usize> = (0..self.header.len())
            .filter(|i| !skip.contains(&self.header[*i].as_str()))
            .collect();
        self.rows
            .iter()
            .map(|r| keep.iter().map(|i| r[*i].clone()).collect())
            .collect()
    }
}

/// The tables of a multi-kind `kubectl get`, split at the blank lines between them.
fn tables(out: &str) -> Vec<Table> {
    out.split("\n\n")
        .filter(|t| !t.trim().is_empty())
        .map(Table::parse)
        .collect()
}

fn strings(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

/// The whole second `secs` before the fixture's start, in RFC 3339.
fn ago(start: OffsetDateTime, secs: i64) -> String {
    (start - time::Duration::seconds(secs))
        .format(&Rfc3339)
        .unwrap()
}

/// `s` with its runs of whitespace as single spaces (describe's tabwriter pads to the
/// widest cell).
fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

struct Fixture {
    sim: KubeSim,
    dir: tempfile::TempDir,
    uids: BTreeMap<&'static str, String>,
}

impl Fixture {
    fn dir(&self) -> &Path {
        self.dir.path()
    }
}

fn shop_yaml() -> String {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fixtures/kube-resources/shop.yaml");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn template(image: &str, hash: Option<&str>) -> Value {
    let mut labels = json!({"app": "web"});
    if let Some(h) = hash {
        labels["pod-template-hash"] = json!(h);
    }
    json!({"metadata": {"labels": labels}, "spec": {"containers": [
        {"name": "web", "image": image, "ports": [{"containerPort": 8080, "protocol": "TCP"}]}]}})
}

fn owner(api_version: &str, kind: &str, name: &str, uid: &str) -> Value {
    json!([{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "controller": true, "blockOwnerDeletion": true}])
}

fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "labels": {"app": "web"},
            "annotations": {"deployment.kubernetes.io/revision": "2"}},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": template("nginx:1.27", None)}})
}

/// A Deployment's status as the controller writes it mid-rollout: `updated` of 3 replicas
/// on the new template, `available` of them available.
fn rollout(updated: i64, available: i64) -> Value {
    let progressing = if available == 3 {
        json!({"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable",
            "message": format!("ReplicaSet \"{NEW_RS}\" has successfully progressed.")})
    } else {
        json!({"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
            "message": format!("ReplicaSet \"{NEW_RS}\" is progressing.")})
    };
    let mut status = json!({"observedGeneration": 1, "replicas": 3, "updatedReplicas": updated,
        "readyReplicas": available, "availableReplicas": available,
        "conditions": [
            {"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
             "message": "Deployment has minimum availability."},
            progressing]});
    if available < 3 {
        status["unavailableReplicas"] = json!(3 - available);
    }
    json!({"status": status})
}

/// The Deployment's status once its rollout is done.
fn deployment_status(available: i64) -> Value {
    rollout(available, available)
}

/// The `shop` namespace: the fixture file applied with `bin`, then the owned objects and
/// the statuses.
async fn shop(bin: &Path) -> Fixture {
    let common::Fixture { sim, dir } = common::fixture(TOKEN).await;
    let Finished { code, out, err } = run(
        kubectl(bin, dir.path(), &["apply", "--validate=false", "-f", "-"]),
        Some(shop_yaml().as_bytes()),
    )
    .await;
    assert_eq!(code, Some(0), "apply: {err}\n{out}");
    assert!(
        out.contains("deployment") || out.contains("namespace/shop created"),
        "{out}"
    );
    let start = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let ago = |secs| ago(start, secs);
    let mut uids = BTreeMap::new();
    let uid = |o: &Value| o["metadata"]["uid"].as_str().unwrap().to_string();

    let d = sim.create(deployment()).unwrap();
    uids.insert("deployment", uid(&d));
    sim.patch_status("apps/v1", "Deployment", NS, "web", &deployment_status(3))
        .unwrap();
    for (name, hash, image, replicas, revision) in [
        (NEW_RS, "5d4f8b9c6", "nginx:1.27", 3, "2"),
        (OLD_RS, "7c9b5d2f4", "nginx:1.26", 0, "1"),
    ] {
        let mut annotations = json!({"deployment.kubernetes.io/desired-replicas": "3",
            "deployment.kubernetes.io/max-replicas": "4", "deployment.kubernetes.io/revision": revision});
        if revision == "2" {
            annotations["kubernetes.io/change-cause"] =
                json!("kubectl set image deployment/web web=nginx:1.27");
        }
        let rs = sim
            .create(json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": name, "namespace": NS,
                    "labels": {"app": "web", "pod-template-hash": hash},
                    "annotations": annotations,
                    "ownerReferences": owner("apps/v1", "Deployment", "web", &uids["deployment"])},
                "spec": {"replicas": replicas,
                    "selector": {"matchLabels": {"app": "web", "pod-template-hash": hash}},
                    "template": template(image, Some(hash))}}))
            .unwrap();
        sim.patch_status(
            "apps/v1",
            "ReplicaSet",
            NS,
            name,
            &json!({"status": {"replicas": replicas, "fullyLabeledReplicas": replicas,
                "readyReplicas": replicas, "availableReplicas": replicas, "observedGeneration": 1}}),
        )
        .unwrap();
        if revision == "2" {
            uids.insert("replicaset", uid(&rs));
        }
    }
    for (i, suffix) in ["k2x9p", "m4v7q", "t8z5w"].iter().enumerate() {
        sim.create(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("{NEW_RS}-{suffix}"), "namespace": NS,
                "labels": {"app": "web", "pod-template-hash": "5d4f8b9c6"},
                "ownerReferences": owner("apps/v1", "ReplicaSet", NEW_RS, &uids["replicaset"])},
            "spec": {"nodeName": format!("node-{}", i % 2), "containers": [{"name": "web", "image": "nginx:1.27"}]},
            "status": {"phase": "Running", "podIP": format!("10.1.0.1{}", i + 1),
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "web", "ready": true, "restartCount": 0, "started": true,
                    "image": "nginx:1.27", "state": {"running": {"startedAt": ago(1800)}}}]}}))
            .unwrap();
    }
    sim.create(json!({"apiVersion": "v1", "kind": "Event",
        "metadata": {"name": "web.17f2a9c3b1d4e5f6", "namespace": NS},
        "involvedObject": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": NS,
            "name": "web", "uid": uids["deployment"]},
        "reason": "ScalingReplicaSet", "type": "Normal", "count": 1,
        "message": format!("Scaled up replica set {NEW_RS} from 0 to 3"),
        "source": {"component": "deployment-controller"},
        "firstTimestamp": ago(1800), "lastTimestamp": ago(1800)}))
        .unwrap();

    let sts = sim.store().get(
        kubesim::resources::find("apps", "v1", "statefulsets").unwrap(),
        NS,
        "db",
    );
    let sts_uid = uid(&sts.unwrap());
    sim.create(json!({"apiVersion": "apps/v1", "kind": "ControllerRevision",
        "metadata": {"name": "db-6c7d8f9b5", "namespace": NS,
            "labels": {"app": "db", "controller-revision-hash": "6c7d8f9b5"},
            "ownerReferences": owner("apps/v1", "StatefulSet", "db", &sts_uid)},
        "data": {"spec": {"template": {"$patch": "replace", "spec": {"containers": [{"name": "postgres", "image": "postgres:16"}]}}}},
        "revision": 1}))
        .unwrap();

    for (name, backoff) in [("migrate", 6), ("report", 0)] {
        let job = sim
            .create(json!({"apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": name, "namespace": NS},
                "spec": {"completions": 1, "parallelism": 1, "backoffLimit": backoff,
                    "template": {"spec": {"restartPolicy": "Never",
                        "containers": [{"name": name, "image": "busybox:1.36"}]}}}}))
            .unwrap();
        uids.insert(
            if name == "migrate" {
                "migrate"
            } else {
                "report"
            },
            uid(&job),
        );
    }
    sim.patch_status(
        "batch/v1",
        "Job",
        NS,
        "migrate",
        &json!({"status": {"startTime": ago(1800), "completionTime": ago(1755), "succeeded": 1,
            "ready": 0, "terminating": 0, "uncountedTerminatedPods": {},
            "conditions": [
                {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached"},
                {"type": "Complete", "status": "True", "reason": "CompletionsReached"}]}}),
    )
    .unwrap();
    sim.patch_status(
        "batch/v1",
        "Job",
        NS,
        "report",
        &json!({"status": {"startTime": ago(1800), "failed": 1, "ready": 0, "terminating": 0,
            "uncountedTerminatedPods": {},
            "conditions": [
                {"type": "FailureTarget", "status": "True", "reason": "BackoffLimitExceeded"},
                {"type": "Failed", "status": "True", "reason": "BackoffLimitExceeded",
                 "message": "Job has reached the specified backoff limit"}]}}),
    )
    .unwrap();

    let statuses = [
        (
            "apps/v1",
            "StatefulSet",
            "db",
            json!({"observedGeneration": 1, "replicas": 2, "readyReplicas": 2,
            "currentReplicas": 2, "updatedReplicas": 2, "availableReplicas": 2,
            "currentRevision": "db-6c7d8f9b5", "updateRevision": "db-6c7d8f9b5", "collisionCount": 0}),
        ),
        (
            "apps/v1",
            "DaemonSet",
            "agent",
            json!({"observedGeneration": 1, "desiredNumberScheduled": 2,
            "currentNumberScheduled": 2, "numberReady": 2, "updatedNumberScheduled": 2,
            "numberAvailable": 2, "numberMisscheduled": 0}),
        ),
        (
            "batch/v1",
            "CronJob",
            "nightly",
            json!({"lastScheduleTime": ago(1800), "lastSuccessfulTime": ago(1790)}),
        ),
        (
            "autoscaling/v2",
            "HorizontalPodAutoscaler",
            "web",
            json!({"currentReplicas": 3, "desiredReplicas": 3,
            "currentMetrics": [{"type": "Resource", "resource": {"name": "cpu",
                "current": {"averageUtilization": 42, "averageValue": "84m"}}}]}),
        ),
        (
            "policy/v1",
            "PodDisruptionBudget",
            "web",
            json!({"observedGeneration": 1, "currentHealthy": 3,
            "desiredHealthy": 2, "disruptionsAllowed": 1, "expectedPods": 3}),
        ),
        (
            "v1",
            "PersistentVolumeClaim",
            "data-db-0",
            json!({"phase": "Bound",
            "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}),
        ),
        (
            "networking.k8s.io/v1",
            "Ingress",
            "web",
            json!({"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}),
        ),
        (
            "v1",
            "ResourceQuota",
            "quota",
            json!({"hard": {"pods": "10", "requests.cpu": "4", "limits.memory": "8Gi"},
            "used": {"pods": "3", "requests.cpu": "300m", "limits.memory": "768Mi"}}),
        ),
    ];
    for (api_version, kind, name, status) in statuses {
        sim.patch_status(api_version, kind, NS, name, &json!({ "status": status }))
            .unwrap_or_else(|e| panic!("{kind} {name}: {e:?}"));
    }
    Fixture { sim, dir, uids }
}

const AGES: &[&str] = &["AGE"];

#[tokio::test]
async fn get_every_kind_across_namespaces() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok_with(
            &bin,
            f.dir(),
            &[
                "get",
                "deploy,rs,sts,ds,job,cronjob,svc,ep,cm,pvc,ing,hpa,pdb",
                "-A",
            ],
            ENDPOINTS_WARNING,
        )
        .await;
        let t = tables(&out);
        let want: Vec<(&[&str], Vec<Vec<String>>)> = vec![
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "AGE",
                ],
                strings(&[&["shop", "deployment.apps/web", "3/3", "3", "3"]]),
            ),
            (
                &["NAMESPACE", "NAME", "DESIRED", "CURRENT", "READY", "AGE"],
                strings(&[
                    &["shop", "replicaset.apps/web-5d4f8b9c6", "3", "3", "3"],
                    &["shop", "replicaset.apps/web-7c9b5d2f4", "0", "0", "0"],
                ]),
            ),
            (
                &["NAMESPACE", "NAME", "READY", "AGE"],
                strings(&[&["shop", "statefulset.apps/db", "2/2"]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "DESIRED",
                    "CURRENT",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "NODE SELECTOR",
                    "AGE",
                ],
                strings(&[&[
                    "shop",
                    "daemonset.apps/agent",
                    "2",
                    "2",
                    "2",
                    "2",
                    "2",
                    "kubernetes.io/os=linux",
                ]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "STATUS",
                    "COMPLETIONS",
                    "DURATION",
                    "AGE",
                ],
                strings(&[
                    &["shop", "job.batch/migrate", "Complete", "1/1", "45s"],
                    &["shop", "job.batch/report", "Failed", "0/1", "30m"],
                ]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "SCHEDULE",
                    "TIMEZONE",
                    "SUSPEND",
                    "ACTIVE",
                    "LAST SCHEDULE",
                    "AGE",
                ],
                strings(&[&[
                    "shop",
                    "cronjob.batch/nightly",
                    "0 3 * * *",
                    "Etc/UTC",
                    "False",
                    "0",
                    "30m",
                ]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "TYPE",
                    "CLUSTER-IP",
                    "EXTERNAL-IP",
                    "PORT(S)",
                    "AGE",
                ],
                strings(&[
                    &[
                        "shop",
                        "service/edge",
                        "LoadBalancer",
                        "10.96.0.20",
                        "<pending>",
                        "443:30443/TCP",
                    ],
                    &[
                        "shop",
                        "service/web",
                        "ClusterIP",
                        "10.96.0.10",
                        "<none>",
                        "80/TCP",
                    ],
                ]),
            ),
            (
                &["NAMESPACE", "NAME", "ENDPOINTS", "AGE"],
                strings(&[&[
                    "shop",
                    "endpoints/web",
                    "10.1.0.11:8080,10.1.0.12:8080,10.1.0.13:8080",
                ]]),
            ),
            (
                &["NAMESPACE", "NAME", "DATA", "AGE"],
                strings(&[&["shop", "configmap/web-config", "2"]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "STATUS",
                    "VOLUME",
                    "CAPACITY",
                    "ACCESS MODES",
                    "STORAGECLASS",
                    "VOLUMEATTRIBUTESCLASS",
                    "AGE",
                ],
                strings(&[&[
                    "shop",
                    "persistentvolumeclaim/data-db-0",
                    "Bound",
                    "pvc-3f1e9a52",
                    "10Gi",
                    "RWO",
                    "standard",
                    "<unset>",
                ]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "CLASS",
                    "HOSTS",
                    "ADDRESS",
                    "PORTS",
                    "AGE",
                ],
                strings(&[&[
                    "shop",
                    "ingress.networking.k8s.io/web",
                    "leafgate",
                    "shop.example",
                    "203.0.113.7",
                    "80, 443",
                ]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "REFERENCE",
                    "TARGETS",
                    "MINPODS",
                    "MAXPODS",
                    "REPLICAS",
                    "AGE",
                ],
                strings(&[&[
                    "shop",
                    "horizontalpodautoscaler.autoscaling/web",
                    "Deployment/web",
                    "cpu: 42%/70%",
                    "2",
                    "10",
                    "3",
                ]]),
            ),
            (
                &[
                    "NAMESPACE",
                    "NAME",
                    "MIN AVAILABLE",
                    "MAX UNAVAILABLE",
                    "ALLOWED DISRUPTIONS",
                    "AGE",
                ],
                strings(&[&["shop", "poddisruptionbudget.policy/web", "2", "N/A", "1"]]),
            ),
        ];
        assert_eq!(t.len(), want.len(), "{}: {out}", bin.display());
        for (table, (header, rows)) in t.iter().zip(want) {
            assert_eq!(table.header, header, "{}: {out}", bin.display());
            assert_eq!(table.without(AGES), rows, "{}: {out}", bin.display());
            // AGE is a HumanDuration of seconds here.
            for r in &table.rows {
                let age = r.last().unwrap();
                assert!(age.ends_with('s') || age.ends_with('m'), "{age}: {out}");
            }
        }
    }
}

#[tokio::test]
async fn get_wide_adds_containers_images_selectors() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok_with(
            &bin,
            f.dir(),
            &[
                "get",
                "deploy,rs,sts,ds,job,cronjob,svc,ep,pvc",
                "-n",
                NS,
                "-o",
                "wide",
            ],
            ENDPOINTS_WARNING,
        )
        .await;
        let t = tables(&out);
        let (migrate, report) = (&f.uids["migrate"], &f.uids["report"]);
        let want: Vec<(&[&str], Vec<Vec<String>>)> = vec![
            (
                &[
                    "NAME",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ],
                strings(&[&[
                    "deployment.apps/web",
                    "3/3",
                    "3",
                    "3",
                    "web",
                    "nginx:1.27",
                    "app=web",
                ]]),
            ),
            (
                &[
                    "NAME",
                    "DESIRED",
                    "CURRENT",
                    "READY",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ],
                strings(&[
                    &[
                        "replicaset.apps/web-5d4f8b9c6",
                        "3",
                        "3",
                        "3",
                        "web",
                        "nginx:1.27",
                        "app=web,pod-template-hash=5d4f8b9c6",
                    ],
                    &[
                        "replicaset.apps/web-7c9b5d2f4",
                        "0",
                        "0",
                        "0",
                        "web",
                        "nginx:1.26",
                        "app=web,pod-template-hash=7c9b5d2f4",
                    ],
                ]),
            ),
            (
                &["NAME", "READY", "AGE", "CONTAINERS", "IMAGES"],
                strings(&[&["statefulset.apps/db", "2/2", "postgres", "postgres:16"]]),
            ),
            (
                &[
                    "NAME",
                    "DESIRED",
                    "CURRENT",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "NODE SELECTOR",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ],
                strings(&[&[
                    "daemonset.apps/agent",
                    "2",
                    "2",
                    "2",
                    "2",
                    "2",
                    "kubernetes.io/os=linux",
                    "agent,exporter",
                    "fluent-bit:3.1,node-exporter:1.8",
                    "app=agent",
                ]]),
            ),
            (
                &[
                    "NAME",
                    "STATUS",
                    "COMPLETIONS",
                    "DURATION",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ],
                vec![
                    [
                        "job.batch/migrate",
                        "Complete",
                        "1/1",
                        "45s",
                        "migrate",
                        "busybox:1.36",
                    ]
                    .iter()
                    .map(|s| s.to_string())
                    .chain([format!("batch.kubernetes.io/controller-uid={migrate}")])
                    .collect(),
                    [
                        "job.batch/report",
                        "Failed",
                        "0/1",
                        "30m",
                        "report",
                        "busybox:1.36",
                    ]
                    .iter()
                    .map(|s| s.to_string())
                    .chain([format!("batch.kubernetes.io/controller-uid={report}")])
                    .collect(),
                ],
            ),
            (
                &[
                    "NAME",
                    "SCHEDULE",
                    "TIMEZONE",
                    "SUSPEND",
                    "ACTIVE",
                    "LAST SCHEDULE",
                    "AGE",
                    "CONTAINERS",
                    "IMAGES",
                    "SELECTOR",
                ],
                strings(&[&[
                    "cronjob.batch/nightly",
                    "0 3 * * *",
                    "Etc/UTC",
                    "False",
                    "0",
                    "30m",
                    "report",
                    "busybox:1.36",
                    "<none>",
                ]]),
            ),
            (
                &[
                    "NAME",
                    "TYPE",
                    "CLUSTER-IP",
                    "EXTERNAL-IP",
                    "PORT(S)",
                    "AGE",
                    "SELECTOR",
                ],
                strings(&[
                    &[
                        "service/edge",
                        "LoadBalancer",
                        "10.96.0.20",
                        "<pending>",
                        "443:30443/TCP",
                        "app=web",
                    ],
                    &[
                        "service/web",
                        "ClusterIP",
                        "10.96.0.10",
                        "<none>",
                        "80/TCP",
                        "app=web",
                    ],
                ]),
            ),
            (
                &["NAME", "ENDPOINTS", "AGE"],
                strings(&[&[
                    "endpoints/web",
                    "10.1.0.11:8080,10.1.0.12:8080,10.1.0.13:8080",
                ]]),
            ),
            (
                &[
                    "NAME",
                    "STATUS",
                    "VOLUME",
                    "CAPACITY",
                    "ACCESS MODES",
                    "STORAGECLASS",
                    "VOLUMEATTRIBUTESCLASS",
                    "AGE",
                    "VOLUMEMODE",
                ],
                strings(&[&[
                    "persistentvolumeclaim/data-db-0",
                    "Bound",
                    "pvc-3f1e9a52",
                    "10Gi",
                    "RWO",
                    "standard",
                    "<unset>",
                    "Filesystem",
                ]]),
            ),
        ];
        assert_eq!(t.len(), want.len(), "{}: {out}", bin.display());
        for (table, (header, rows)) in t.iter().zip(want) {
            assert_eq!(table.header, header, "{}: {out}", bin.display());
            assert_eq!(table.without(AGES), rows, "{}: {out}", bin.display());
        }
        // Across namespaces the same tables, each behind a NAMESPACE column.
        let all = ok_with(
            &bin,
            f.dir(),
            &[
                "get",
                "deploy,rs,sts,ds,job,cronjob,svc,ep,pvc",
                "-A",
                "-o",
                "wide",
            ],
            ENDPOINTS_WARNING,
        )
        .await;
        let across = tables(&all);
        assert_eq!(across.len(), t.len(), "{all}");
        for (a, n) in across.iter().zip(&t) {
            assert_eq!(a.header[0], "NAMESPACE");
            assert_eq!(a.header[1..], n.header[..], "{all}");
            let cut: Vec<Vec<String>> = a
                .without(AGES)
                .into_iter()
                .map(|mut r| {
                    assert_eq!(r.remove(0), NS);
                    r
                })
                .collect();
            assert_eq!(cut, n.without(AGES), "{all}");
        }
    }
}

#[tokio::test]
async fn the_rest_of_the_namespace() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "secrets,sa,limits,quota,netpol,endpointslices,controllerrevisions",
                "-n",
                NS,
            ],
        )
        .await;
        let t = tables(&out);
        assert_eq!(t.len(), 7, "{out}");
        assert_eq!(t[0].header, ["NAME", "TYPE", "DATA", "AGE"]);
        // stringData is folded into data as the v1 conversion does.
        assert_eq!(
            t[0].without(AGES),
            strings(&[
                &["secret/db-credentials", "Opaque", "2"],
                &["secret/web-tls", "kubernetes.io/tls", "2"]
            ])
        );
        let creds = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "secret",
                "db-credentials",
                "-n",
                NS,
                "-o",
                "jsonpath={.data.password} {.stringData}",
            ],
        )
        .await;
        assert_eq!(creds, "czNjcmV0 ");
        assert_eq!(t[1].header, ["NAME", "AGE"]);
        assert_eq!(t[1].without(AGES), strings(&[&["serviceaccount/web"]]));
        // No printer: kube-apiserver's default table, the creation time in RFC 3339.
        assert_eq!(t[2].header, ["NAME", "CREATED AT"]);
        assert_eq!(t[2].rows[0][0], "limitrange/limits");
        let created = &t[2].rows[0][1];
        assert!(
            OffsetDateTime::parse(created, &Rfc3339).is_ok() && created.ends_with('Z'),
            "{created}"
        );
        assert_eq!(t[3].header, ["NAME", "REQUEST", "LIMIT", "AGE"]);
        assert_eq!(
            t[3].without(AGES),
            strings(&[&[
                "resourcequota/quota",
                "pods: 3/10, requests.cpu: 300m/4",
                "limits.memory: 768Mi/8Gi"
            ]])
        );
        assert_eq!(t[4].header, ["NAME", "POD-SELECTOR", "AGE"]);
        assert_eq!(
            t[4].without(AGES),
            strings(&[&["networkpolicy.networking.k8s.io/web-ingress", "app=web"]])
        );
        assert_eq!(
            t[5].header,
            ["NAME", "ADDRESSTYPE", "PORTS", "ENDPOINTS", "AGE"]
        );
        assert_eq!(
            t[5].without(AGES),
            strings(&[&[
                "endpointslice.discovery.k8s.io/web-x7k2p",
                "IPv4",
                "8080",
                "10.1.0.11,10.1.0.12,10.1.0.13"
            ]])
        );
        assert_eq!(t[6].header, ["NAME", "CONTROLLER", "REVISION", "AGE"]);
        assert_eq!(
            t[6].without(AGES),
            strings(&[&[
                "controllerrevision.apps/db-6c7d8f9b5",
                "statefulset.apps/db",
                "1"
            ]])
        );
    }
}

#[tokio::test]
async fn get_all_lists_the_all_category_in_discovery_order() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok(&bin, f.dir(), &["get", "all", "-A"]).await;
        let names: Vec<Vec<String>> = tables(&out)
            .iter()
            .map(|t| t.rows.iter().map(|r| r[1].clone()).collect())
            .collect();
        let want = strings(&[
            &[
                "pod/web-5d4f8b9c6-k2x9p",
                "pod/web-5d4f8b9c6-m4v7q",
                "pod/web-5d4f8b9c6-t8z5w",
            ],
            &["service/edge", "service/web"],
            &["daemonset.apps/agent"],
            &["deployment.apps/web"],
            &[
                "replicaset.apps/web-5d4f8b9c6",
                "replicaset.apps/web-7c9b5d2f4",
            ],
            &["statefulset.apps/db"],
            &["horizontalpodautoscaler.autoscaling/web"],
            &["cronjob.batch/nightly"],
            &["job.batch/migrate", "job.batch/report"],
        ]);
        assert_eq!(names, want, "{}: {out}", bin.display());
    }
}

#[tokio::test]
async fn api_resources_lists_the_kinds_with_short_names() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok(&bin, f.dir(), &["api-resources"]).await;
        let t = Table::parse(&out);
        assert_eq!(
            t.header,
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
        );
        let want = [
            ["configmaps", "cm", "v1", "true", "ConfigMap"],
            ["endpoints", "ep", "v1", "true", "Endpoints"],
            ["limitranges", "limits", "v1", "true", "LimitRange"],
            [
                "persistentvolumeclaims",
                "pvc",
                "v1",
                "true",
                "PersistentVolumeClaim",
            ],
            ["resourcequotas", "quota", "v1", "true", "ResourceQuota"],
            ["secrets", "", "v1", "true", "Secret"],
            ["serviceaccounts", "sa", "v1", "true", "ServiceAccount"],
            ["services", "svc", "v1", "true", "Service"],
            [
                "controllerrevisions",
                "",
                "apps/v1",
                "true",
                "ControllerRevision",
            ],
            ["daemonsets", "ds", "apps/v1", "true", "DaemonSet"],
            ["deployments", "deploy", "apps/v1", "true", "Deployment"],
            ["replicasets", "rs", "apps/v1", "true", "ReplicaSet"],
            ["statefulsets", "sts", "apps/v1", "true", "StatefulSet"],
            [
                "horizontalpodautoscalers",
                "hpa",
                "autoscaling/v2",
                "true",
                "HorizontalPodAutoscaler",
            ],
            ["cronjobs", "cj", "batch/v1", "true", "CronJob"],
            ["jobs", "", "batch/v1", "true", "Job"],
            [
                "networkpolicies",
                "netpol",
                "networking.k8s.io/v1",
                "true",
                "NetworkPolicy",
            ],
            [
                "poddisruptionbudgets",
                "pdb",
                "policy/v1",
                "true",
                "PodDisruptionBudget",
            ],
            [
                "endpointslices",
                "",
                "discovery.k8s.io/v1",
                "true",
                "EndpointSlice",
            ],
        ];
        for w in want {
            assert!(
                t.rows.iter().any(|r| r == &w),
                "{}: no {w:?} in\n{out}",
                bin.display()
            );
        }
        // `-o wide` adds the verbs and the categories.
        let wide = Table::parse(&ok(&bin, f.dir(), &["api-resources", "-o", "wide"]).await);
        let row = |name: &str| {
            wide.rows
                .iter()
                .find(|r| r[0] == name)
                .unwrap_or_else(|| panic!("{name}"))
                .clone()
        };
        let deploy = row("deployments");
        assert_eq!(
            deploy[5..],
            [
                "create,delete,deletecollection,get,list,patch,update,watch",
                "all"
            ]
        );
        assert_eq!(row("configmaps")[6], "");
        assert_eq!(row("jobs")[6], "all");
    }
}

#[tokio::test]
async fn describe_deployment_finds_its_replicasets_and_events() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok(&bin, f.dir(), &["describe", "deployment", "web", "-n", NS]).await;
        for line in [
            "Name:                   web",
            "Namespace:              shop",
            "Selector:               app=web",
            "Replicas:               3 desired | 3 updated | 3 total | 3 available | 0 unavailable",
            "StrategyType:           RollingUpdate",
            "RollingUpdateStrategy:  25% max unavailable, 25% max surge",
            "    Image:         nginx:1.27",
            "  Available      True    MinimumReplicasAvailable",
            "  Progressing    True    NewReplicaSetAvailable",
            "OldReplicaSets:  web-7c9b5d2f4 (0/0 replicas created)",
            "NewReplicaSet:   web-5d4f8b9c6 (3/3 replicas created)",
        ] {
            assert!(
                out.lines().any(|l| norm(l) == norm(line)),
                "{}: no {line:?} in\n{out}",
                bin.display()
            );
        }
        let events = out.split("Events:").nth(1).unwrap_or("");
        assert!(
            norm(events).contains("Normal ScalingReplicaSet 30m deployment-controller Scaled up replica set web-5d4f8b9c6 from 0 to 3"),
            "{}: {out}",
            bin.display()
        );
        // The events were asked for by involvedObject, the ReplicaSets by the selector.
        let reqs = f.sim.requests();
        assert!(
            reqs.iter()
                .any(|r| r.path == "/api/v1/namespaces/shop/events"
                    && r.query.contains("involvedObject.name%3Dweb")
                    && r.query.contains(&f.uids["deployment"]))
        );
        assert!(
            reqs.iter()
                .any(|r| r.path == "/apis/apps/v1/namespaces/shop/replicasets"
                    && r.query.contains("labelSelector=app%3Dweb"))
        );
    }
}

#[tokio::test]
async fn describe_service_finds_its_endpoints() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let Finished { code, out, err } = run(
            kubectl(&bin, f.dir(), &["describe", "service", "web", "-n", NS]),
            None,
        )
        .await;
        assert_eq!(code, Some(0), "{err}");
        for line in [
            "Name:                     web",
            "Namespace:                shop",
            "Selector:                 app=web",
            "Type:                     ClusterIP",
            "IP:                       10.96.0.10",
            "IPs:                      10.96.0.10",
            "Port:                     http  80/TCP",
            "TargetPort:               8080/TCP",
            "Endpoints:                10.1.0.11:8080,10.1.0.12:8080,10.1.0.13:8080",
            "Session Affinity:         None",
        ] {
            assert!(
                out.lines().any(|l| norm(l) == norm(line)),
                "{}: no {line:?} in\n{out}",
                bin.display()
            );
        }
        // 1.32 reads the Endpoints (and is warned), later ones the EndpointSlices.
        assert!(err.is_empty() || err == ENDPOINTS_WARNING, "{err}");
    }
}

#[tokio::test]
async fn rollout_status_waits_until_the_deployment_is_available() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        // A rollout under way: one of three replicas updated and available.
        f.sim
            .patch_status("apps/v1", "Deployment", NS, "web", &rollout(1, 1))
            .unwrap();
        let path = "/apis/apps/v1/namespaces/shop/deployments";
        let mut child = kubectl(
            &bin,
            f.dir(),
            &[
                "rollout",
                "status",
                "deployment/web",
                "-n",
                NS,
                "--timeout=30s",
            ],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let line = read_until(&mut lines, |l| l.starts_with("Waiting")).await;
        assert_eq!(
            line,
            "Waiting for deployment \"web\" rollout to finish: 1 out of 3 new replicas have been updated..."
        );
        watching(&f.sim, path, 1).await;
        // All updated, two available.
        f.sim
            .patch_status("apps/v1", "Deployment", NS, "web", &rollout(3, 2))
            .unwrap();
        let line = read_until(&mut lines, |l| l.starts_with("Waiting")).await;
        assert_eq!(
            line,
            "Waiting for deployment \"web\" rollout to finish: 2 of 3 updated replicas are available..."
        );
        f.sim
            .patch_status("apps/v1", "Deployment", NS, "web", &deployment_status(3))
            .unwrap();
        let line = read_until(&mut lines, |l| !l.starts_with("Waiting")).await;
        assert_eq!(line, "deployment \"web\" successfully rolled out");
        let status = tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .expect("kubectl rollout status exits")
            .unwrap();
        assert!(status.success(), "{}", bin.display());
        // The watch named the deployment by field selector.
        assert!(f.sim.requests().iter().any(|r| r.path == path
            && r.query.contains("watch=true")
            && r.query.contains("fieldSelector=metadata.name%3Dweb")));

        // A spec change the controller has not observed yet: the generation moved on.
        f.sim
            .patch(
                "apps/v1",
                "Deployment",
                NS,
                "web",
                &json!({"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}}),
                true,
            )
            .unwrap();
        let Finished { code, out, .. } = run(
            kubectl(
                &bin,
                f.dir(),
                &[
                    "rollout",
                    "status",
                    "deployment/web",
                    "-n",
                    NS,
                    "--watch=false",
                ],
            ),
            None,
        )
        .await;
        assert_eq!(code, Some(0));
        assert_eq!(
            out,
            "Waiting for deployment spec update to be observed...\n"
        );
    }
}

#[tokio::test]
async fn rollout_history_reads_the_replicasets() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let out = ok(
            &bin,
            f.dir(),
            &["rollout", "history", "deployment/web", "-n", NS],
        )
        .await;
        let mut lines = out.lines();
        assert_eq!(lines.next().map(str::trim_end), Some("deployment.apps/web"));
        let t = Table::parse(&lines.collect::<Vec<_>>().join("\n"));
        assert_eq!(t.header, ["REVISION", "CHANGE-CAUSE"], "{out}");
        assert_eq!(
            t.rows,
            strings(&[
                &["1", "<none>"],
                &["2", "kubectl set image deployment/web web=nginx:1.27"]
            ]),
            "{}: {out}",
            bin.display()
        );
        let one = ok(
            &bin,
            f.dir(),
            &[
                "rollout",
                "history",
                "deployment/web",
                "-n",
                NS,
                "--revision=1",
            ],
        )
        .await;
        assert!(one.lines().any(|l| norm(l) == "Image: nginx:1.26"), "{one}");
        // A StatefulSet's history is its ControllerRevisions.
        let sts = ok(
            &bin,
            f.dir(),
            &["rollout", "history", "statefulset/db", "-n", NS],
        )
        .await;
        let t = Table::parse(&sts.lines().skip(1).collect::<Vec<_>>().join("\n"));
        assert_eq!(t.rows, strings(&[&["1", "<none>"]]), "{sts}");
    }
}

#[tokio::test]
async fn label_and_field_selectors() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        // Each `get` (its kinds, whether across namespaces, its selector) and the names it
        // lists: the NAME column, after NAMESPACE with `-A`.
        let cases: [(&str, bool, [&str; 2], &[&str]); 7] = [
            (
                "rs,pods",
                false,
                ["-l", "pod-template-hash=5d4f8b9c6"],
                &[
                    "replicaset.apps/web-5d4f8b9c6",
                    "pod/web-5d4f8b9c6-k2x9p",
                    "pod/web-5d4f8b9c6-m4v7q",
                    "pod/web-5d4f8b9c6-t8z5w",
                ],
            ),
            (
                "deploy,sts,ds",
                true,
                ["-l", "app in (db,agent)"],
                &["statefulset.apps/db", "daemonset.apps/agent"],
            ),
            // The Job strategy's selectable field, and its 0 for a job that never succeeded.
            (
                "jobs",
                false,
                ["--field-selector", "status.successful=1"],
                &["migrate"],
            ),
            (
                "jobs",
                false,
                ["--field-selector", "status.successful=0"],
                &["report"],
            ),
            (
                "secrets",
                false,
                ["--field-selector", "type=kubernetes.io/tls"],
                &["web-tls"],
            ),
            (
                "svc,cm",
                true,
                ["--field-selector", "metadata.name=web"],
                &["service/web"],
            ),
            (
                "svc",
                false,
                ["--field-selector", "spec.type=LoadBalancer"],
                &["edge"],
            ),
        ];
        for (kinds, all, selector, want) in cases {
            let scope: &[&str] = if all { &["-A"] } else { &["-n", NS] };
            let args = [&["get", kinds], scope, &selector].concat();
            let out = ok(&bin, f.dir(), &args).await;
            let names: Vec<String> = tables(&out)
                .iter()
                .flat_map(|t| t.rows.iter().map(|r| r[usize::from(all)].clone()))
                .collect();
            assert_eq!(names, want, "{} {args:?}: {out}", bin.display());
        }
        // The fields a kind's conversion does not accept are refused in its words
        // (apps/v1 has none of its own: a ReplicaSet's status.replicas is refused too).
        for (kind, selector, message) in [
            (
                "deploy",
                "spec.replicas=3",
                r#"field selector "spec.replicas=3": "spec.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
            (
                "rs",
                "status.replicas=0",
                r#"field selector "status.replicas=0": "status.replicas" is not a known field selector: only "metadata.name", "metadata.namespace""#,
            ),
            (
                "jobs",
                "status.failed=1",
                r#"field selector "status.failed=1": field label "status.failed" not supported for Job"#,
            ),
            (
                "svc",
                "spec.ports=80",
                r#"field selector "spec.ports=80": field label not supported: spec.ports"#,
            ),
        ] {
            let Finished { code, err, .. } = run(
                kubectl(
                    &bin,
                    f.dir(),
                    &["get", kind, "-n", NS, "--field-selector", selector],
                ),
                None,
            )
            .await;
            assert_ne!(code, Some(0));
            assert!(
                err.starts_with("Error from server (BadRequest): Unable to find ")
                    && err.trim_end().ends_with(message),
                "{}: {err}",
                bin.display()
            );
        }
    }
}

#[tokio::test]
async fn watch_prints_the_deployment_as_its_status_moves() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let path = "/apis/apps/v1/namespaces/shop/deployments";
        let mut child = kubectl(&bin, f.dir(), &["get", "deploy", "-n", NS, "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let header = read_until(&mut lines, |l| l.starts_with("NAME")).await;
        let first = read_until(&mut lines, |l| l.starts_with("web ")).await;
        let t = Table::parse(&format!("{header}\n{first}"));
        assert_eq!(t.without(AGES), strings(&[&["web", "3/3", "3", "3"]]));
        watching(&f.sim, path, 1).await;
        f.sim
            .patch_status("apps/v1", "Deployment", NS, "web", &deployment_status(2))
            .unwrap();
        let next = read_until(&mut lines, |l| l.starts_with("web ")).await;
        let t = Table::parse(&format!("{header}\n{next}"));
        assert_eq!(t.without(AGES), strings(&[&["web", "2/3", "2", "2"]]));
        // A second deployment appears in the watch as it is created.
        let mut api = deployment();
        api["metadata"] = json!({"name": "api", "namespace": NS});
        f.sim.create(api).unwrap();
        let added = read_until(&mut lines, |l| l.starts_with("api ")).await;
        let t = Table::parse(&format!("{header}\n{added}"));
        assert_eq!(t.without(AGES), strings(&[&["api", "0/3", "0", "0"]]));
        child.kill().await.unwrap();
    }
}

#[tokio::test]
async fn status_and_generation_follow_the_strategies() {
    let bin = kubesim::kubectl::pinned();
    let f = shop(&bin).await;
    let get = |kind: &str, name: &str| {
        let (group, plural) = match kind {
            "deployments" => ("apps", kind),
            "jobs" => ("batch", kind),
            _ => ("", kind),
        };
        let version = "v1";
        f.sim
            .store()
            .get(
                kubesim::resources::find(group, version, plural).unwrap(),
                NS,
                name,
            )
            .unwrap()
    };
    let d = get("deployments", "web");
    assert_eq!(d["metadata"]["generation"], 1);
    assert_eq!(d["status"]["availableReplicas"], 3);
    // A status given to the main resource is dropped; the status subresource keeps the spec.
    let mut replaced = d.clone();
    replaced["status"] = json!({"availableReplicas": 0});
    replaced["metadata"]["labels"]["extra"] = json!("yes");
    let after = f.sim.replace(replaced).unwrap();
    assert_eq!(after["status"]["availableReplicas"], 3);
    assert_eq!(
        after["metadata"]["generation"], 1,
        "labels are not the spec"
    );
    let after = f
        .sim
        .patch(
            "apps/v1",
            "Deployment",
            NS,
            "web",
            &json!({"spec": {"replicas": 5}}),
            true,
        )
        .unwrap();
    assert_eq!(after["metadata"]["generation"], 2);
    let after = f
        .sim
        .patch_status(
            "apps/v1",
            "Deployment",
            NS,
            "web",
            &json!({"status": {"observedGeneration": 2}, "spec": {"replicas": 9}}),
        )
        .unwrap();
    assert_eq!(after["metadata"]["generation"], 2);
    assert_eq!(after["spec"]["replicas"], 5);
    // The Job strategy generated the selector and the template's labels.
    let job = get("jobs", "migrate");
    let uid = job["metadata"]["uid"].as_str().unwrap();
    assert_eq!(
        job["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(
        job["spec"]["template"]["metadata"]["labels"],
        json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "migrate",
            "controller-uid": uid, "job-name": "migrate"})
    );
    // kubectl sees the same through the status subresource.
    let out = ok(
        &bin,
        f.dir(),
        &[
            "get",
            "--raw",
            "/apis/apps/v1/namespaces/shop/deployments/web/status",
        ],
    )
    .await;
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["status"]["observedGeneration"], 2);
}

#[tokio::test]
async fn describe_every_other_kind() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        for (kind, name, lines) in [
            (
                "statefulset",
                "db",
                &[
                    "Name: db",
                    "Replicas: 2 desired | 2 total",
                    "Pods Status: 0 Running / 0 Waiting / 0 Succeeded / 0 Failed",
                ][..],
            ),
            (
                "daemonset",
                "agent",
                &["Name: agent", "Desired Number of Nodes Scheduled: 2"][..],
            ),
            (
                "job",
                "migrate",
                &[
                    "Name: migrate",
                    "Completions: 1",
                    "Pods Statuses: 0 Active (0 Ready) / 1 Succeeded / 0 Failed",
                ][..],
            ),
            (
                "cronjob",
                "nightly",
                &["Name: nightly", "Schedule: 0 3 * * *", "Suspend: False"][..],
            ),
            (
                "pvc",
                "data-db-0",
                &[
                    "Name: data-db-0",
                    "Status: Bound",
                    "Volume: pvc-3f1e9a52",
                    "Capacity: 10Gi",
                ][..],
            ),
            (
                "hpa",
                "web",
                &[
                    "Name: web",
                    "Reference: Deployment/web",
                    "Min replicas: 2",
                    "Max replicas: 10",
                ][..],
            ),
            (
                "pdb",
                "web",
                &["Name: web", "Min available: 2", "Allowed disruptions: 1"][..],
            ),
            ("configmap", "web-config", &["Name: web-config"][..]),
            (
                "secret",
                "web-tls",
                &["Name: web-tls", "Type: kubernetes.io/tls"][..],
            ),
            ("quota", "quota", &["Name: quota", "pods 3 10"][..]),
            ("limits", "limits", &["Name: limits"][..]),
            ("netpol", "web-ingress", &["Name: web-ingress"][..]),
            ("sa", "web", &["Name: web"][..]),
            (
                "replicaset",
                NEW_RS,
                &[
                    "Name: web-5d4f8b9c6",
                    "Controlled By: Deployment/web",
                    "Replicas: 3 current / 3 desired",
                ][..],
            ),
        ] {
            let Finished { code, out, err } = run(
                kubectl(&bin, f.dir(), &["describe", kind, name, "-n", NS]),
                None,
            )
            .await;
            assert_eq!(code, Some(0), "{} describe {kind}: {err}", bin.display());
            for line in lines {
                assert!(
                    out.lines().any(|l| norm(l) == *line),
                    "{} describe {kind}: no {line:?} in\n{out}",
                    bin.display()
                );
            }
        }
    }
}

#[tokio::test]
async fn patch_apply_and_delete_with_kubectl() {
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let generation = |out: String| out.trim().to_string();
        // A strategic patch of the spec moves the generation; a label does not.
        let out = ok(
            &bin,
            f.dir(),
            &[
                "patch",
                "deploy",
                "web",
                "-n",
                NS,
                "-p",
                r#"{"spec":{"replicas":5}}"#,
            ],
        )
        .await;
        assert_eq!(out, "deployment.apps/web patched\n");
        let out = ok(
            &bin,
            f.dir(),
            &["label", "deploy", "web", "-n", NS, "tier=front"],
        )
        .await;
        assert_eq!(out, "deployment.apps/web labeled\n");
        let jsonpath = [
            "-o",
            "jsonpath={.metadata.generation} {.spec.replicas} {.status.observedGeneration}",
        ];
        let out = ok(
            &bin,
            f.dir(),
            &[&["get", "deploy", "web", "-n", NS][..], &jsonpath[..]].concat(),
        )
        .await;
        assert_eq!(generation(out), "2 5 1");
        // Applying the file again changes nothing the server keeps.
        let pdb_rv = [
            "get",
            "pdb",
            "web",
            "-n",
            NS,
            "-o",
            "jsonpath={.metadata.resourceVersion}",
        ];
        let before = ok(&bin, f.dir(), &pdb_rv).await;
        let Finished { code, out, err } = run(
            kubectl(&bin, f.dir(), &["apply", "--validate=false", "-f", "-"]),
            Some(shop_yaml().as_bytes()),
        )
        .await;
        assert_eq!(code, Some(0), "{err}");
        for line in [
            "namespace/shop unchanged",
            "service/web unchanged",
            "statefulset.apps/db unchanged",
            "horizontalpodautoscaler.autoscaling/web unchanged",
            // A PDB's selector has patchStrategy replace: client-side apply always sends
            // it, and says so, though the server changes nothing.
            "poddisruptionbudget.policy/web configured",
        ] {
            assert!(
                out.lines().any(|l| l == line),
                "{}: no {line:?} in\n{out}",
                bin.display()
            );
        }
        assert_eq!(ok(&bin, f.dir(), &pdb_rv).await, before);
        // The status written by the controller survived the apply.
        let out = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "sts",
                "db",
                "-n",
                NS,
                "-o",
                "jsonpath={.status.readyReplicas}",
            ],
        )
        .await;
        assert_eq!(out, "2");
        let out = ok(&bin, f.dir(), &["delete", "job", "report", "-n", NS]).await;
        // kubectl 1.37 names the namespace, 1.32 does not.
        let deleted = |what: &str| {
            [
                format!("{what} deleted\n"),
                format!("{what} deleted from shop namespace\n"),
            ]
        };
        assert!(deleted("job.batch \"report\"").contains(&out), "{out}");
        let out = ok(&bin, f.dir(), &["delete", "cm", "web-config", "-n", NS]).await;
        assert!(deleted("configmap \"web-config\"").contains(&out), "{out}");
        let out = ok(&bin, f.dir(), &["get", "jobs", "-n", NS, "-o", "name"]).await;
        assert_eq!(out, "job.batch/migrate\n");
    }
}

#[tokio::test]
async fn applied_objects_get_the_servers_defaults() {
    // (`kubectl create deployment` writes protobuf, which kubesim does not read; apply
    // writes JSON.)
    let bare = r#"
apiVersion: apps/v1
kind: Deployment
metadata: {name: bare, namespace: shop, labels: {app: bare}}
spec:
  selector: {matchLabels: {app: bare}}
  template:
    metadata: {labels: {app: bare}}
    spec: {containers: [{name: nginx, image: "nginx:1.27"}]}
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: shop}
spec:
  template:
    metadata: {labels: {app: once}}
    spec:
      restartPolicy: Never
      containers: [{name: once, image: "busybox:1.36"}]
"#;
    for bin in kubesim::kubectl::all() {
        let f = shop(&bin).await;
        let Finished { code, out, err } = run(
            kubectl(&bin, f.dir(), &["apply", "--validate=false", "-f", "-"]),
            Some(bare.as_bytes()),
        )
        .await;
        assert_eq!(code, Some(0), "{err}");
        assert_eq!(
            out,
            "deployment.apps/bare created\njob.batch/once created\n"
        );
        let out = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "deploy",
                "bare",
                "-n",
                NS,
                "-o",
                "jsonpath={.spec.replicas} {.spec.strategy.type} {.spec.strategy.rollingUpdate.maxSurge} {.spec.revisionHistoryLimit} {.spec.progressDeadlineSeconds} {.metadata.generation}",
            ],
        )
        .await;
        assert_eq!(out, "1 RollingUpdate 25% 10 600 1");
        let out = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "job",
                "once",
                "-n",
                NS,
                "-o",
                "jsonpath={.spec.completions} {.spec.parallelism} {.spec.backoffLimit} {.spec.completionMode} {.spec.suspend}",
            ],
        )
        .await;
        assert_eq!(out, "1 1 6 NonIndexed false");
        // The Job took its template's labels, the generated ones with them.
        let out = ok(
            &bin,
            f.dir(),
            &[
                "get",
                "jobs",
                "-n",
                NS,
                "-l",
                "app=once,batch.kubernetes.io/job-name=once",
                "-o",
                "name",
            ],
        )
        .await;
        assert_eq!(out, "job.batch/once\n");
        let t = Table::parse(&ok(&bin, f.dir(), &["get", "deploy", "bare", "-n", NS]).await);
        assert_eq!(t.without(AGES), strings(&[&["bare", "0/1", "0", "0"]]));
        // Applying it again is no change: the defaults are not the applier's fields.
        let Finished { out, .. } = run(
            kubectl(&bin, f.dir(), &["apply", "--validate=false", "-f", "-"]),
            Some(bare.as_bytes()),
        )
        .await;
        assert_eq!(
            out,
            "deployment.apps/bare unchanged\njob.batch/once unchanged\n"
        );
    }
}
