//! kube-apiserver's defaulting (the `SetDefaults_*` functions of each served version) for
//! the spec fields of the workload, batch, storage and autoscaling kinds that printers,
//! describers and `kubectl rollout` read: applied to every object written, as kube-apiserver
//! defaults every object it decodes. Pod templates are left as given (their defaults are
//! many and nothing here reads them), and so are the kinds kubesim served before these.
//!
//! From `pkg/apis/{apps,batch,core,autoscaling}/v*/defaults.go` (apps/v1's, batch/v1's
//! and autoscaling/v2's read from the Kubernetes sources; core/v1's PVC volumeMode as that
//! file sets it):
//! - Deployment: `replicas` 1; `strategy` RollingUpdate with `maxUnavailable` and
//!   `maxSurge` 25%; `revisionHistoryLimit` 10; `progressDeadlineSeconds` 600.
//! - ReplicaSet: `replicas` 1.
//! - StatefulSet: `replicas` 1; `podManagementPolicy` OrderedReady; `updateStrategy`
//!   RollingUpdate with `partition` 0 (when the type was defaulted or a rollingUpdate is
//!   given); `revisionHistoryLimit` 10;
//!   `persistentVolumeClaimRetentionPolicy` Retain/Retain.
//! - DaemonSet: `updateStrategy` RollingUpdate with `maxUnavailable` 1 and `maxSurge` 0;
//!   `revisionHistoryLimit` 10.
//! - Job (read from the sources): `completions` and `parallelism` 1 when neither is set,
//!   else `parallelism` 1; `backoffLimit` 6 (the int32 maximum with
//!   `backoffLimitPerIndex`); the template's labels when the Job has none; `completionMode`
//!   NonIndexed; `suspend` false; `podReplacementPolicy` TerminatingOrFailed (Failed with a
//!   `podFailurePolicy`).
//! - CronJob (read from the sources): `concurrencyPolicy` Allow; `suspend` false;
//!   `successfulJobsHistoryLimit` 3; `failedJobsHistoryLimit` 1.
//! - PersistentVolumeClaim: `volumeMode` Filesystem.
//! - Namespace: `status.phase` Active (not a default: the namespace strategy's
//!   `PrepareForCreate` sets it; kubesim deletes a namespace at once, so it never reads
//!   Terminating); the label `kubernetes.io/metadata.name` set to the name on every write,
//!   a value given for it replaced (`SetDefaults_Namespace`, which selectors on namespaces,
//!   as a Gateway listener's `allowedRoutes`, rely on).
//! - HorizontalPodAutoscaler (v2): `minReplicas` 1; no metrics means CPU at 80%
//!   utilization. (A given `behavior`'s missing scale-up and scale-down rules, which
//!   `SetDefaults_HorizontalPodAutoscalerBehavior` fills, are not filled here.)

use serde_json::{Value, json};

use crate::resources::Resource;

/// Sets `obj` at `path` (keys below the root) to `value` unless something is there;
/// creates the objects on the way.
fn or_set(obj: &mut Value, path: &[&str], value: Value) {
    let mut at = obj;
    for key in &path[..path.len() - 1] {
        if !at[*key].is_object() {
            at[*key] = json!({});
        }
        at = &mut at[*key];
    }
    let last = path[path.len() - 1];
    if at.get(last).is_none_or(Value::is_null) {
        at[last] = value;
    }
}

/// Whether `obj` has a non-null value at `path`.
fn has(obj: &Value, path: &[&str]) -> bool {
    path.iter()
        .try_fold(obj, |v, k| v.get(*k))
        .is_some_and(|v| !v.is_null())
}

/// Applies the defaults of `res`'s kind to `obj`.
pub fn apply(res: &Resource, obj: &mut Value) {
    if res.crd || !obj.is_object() {
        return;
    }
    match res.plural {
        "deployments" => {
            or_set(obj, &["spec", "replicas"], json!(1));
            or_set(obj, &["spec", "strategy", "type"], json!("RollingUpdate"));
            if obj.pointer("/spec/strategy/type").and_then(Value::as_str) == Some("RollingUpdate") {
                or_set(
                    obj,
                    &["spec", "strategy", "rollingUpdate", "maxUnavailable"],
                    json!("25%"),
                );
                or_set(
                    obj,
                    &["spec", "strategy", "rollingUpdate", "maxSurge"],
                    json!("25%"),
                );
            }
            or_set(obj, &["spec", "revisionHistoryLimit"], json!(10));
            or_set(obj, &["spec", "progressDeadlineSeconds"], json!(600));
        }
        "replicasets" => or_set(obj, &["spec", "replicas"], json!(1)),
        "namespaces" => {
            or_set(obj, &["status", "phase"], json!("Active"));
            // SetDefaults_Namespace: the label is the name, whatever was written there.
            if let Some(name) = obj.pointer("/metadata/name").and_then(Value::as_str) {
                let name = json!(name);
                if !obj["metadata"]["labels"].is_object() {
                    obj["metadata"]["labels"] = json!({});
                }
                obj["metadata"]["labels"]["kubernetes.io/metadata.name"] = name;
            }
        }
        "statefulsets" => {
            or_set(obj, &["spec", "replicas"], json!(1));
            or_set(obj, &["spec", "podManagementPolicy"], json!("OrderedReady"));
            // The partition is defaulted where the strategy itself was, or where a
            // rollingUpdate is given; an explicit RollingUpdate type alone stays bare.
            let untyped = !has(obj, &["spec", "updateStrategy", "type"]);
            or_set(
                obj,
                &["spec", "updateStrategy", "type"],
                json!("RollingUpdate"),
            );
            let rolling = obj
                .pointer("/spec/updateStrategy/type")
                .and_then(Value::as_str)
                == Some("RollingUpdate");
            if rolling && (untyped || has(obj, &["spec", "updateStrategy", "rollingUpdate"])) {
                or_set(
                    obj,
                    &["spec", "updateStrategy", "rollingUpdate", "partition"],
                    json!(0),
                );
            }
            or_set(obj, &["spec", "revisionHistoryLimit"], json!(10));
            or_set(
                obj,
                &[
                    "spec",
                    "persistentVolumeClaimRetentionPolicy",
                    "whenDeleted",
                ],
                json!("Retain"),
            );
            or_set(
                obj,
                &["spec", "persistentVolumeClaimRetentionPolicy", "whenScaled"],
                json!("Retain"),
            );
        }
        "daemonsets" => {
            or_set(
                obj,
                &["spec", "updateStrategy", "type"],
                json!("RollingUpdate"),
            );
            if obj
                .pointer("/spec/updateStrategy/type")
                .and_then(Value::as_str)
                == Some("RollingUpdate")
            {
                or_set(
                    obj,
                    &["spec", "updateStrategy", "rollingUpdate", "maxUnavailable"],
                    json!(1),
                );
                or_set(
                    obj,
                    &["spec", "updateStrategy", "rollingUpdate", "maxSurge"],
                    json!(0),
                );
            }
            or_set(obj, &["spec", "revisionHistoryLimit"], json!(10));
        }
        "jobs" => {
            if !has(obj, &["spec", "completions"]) && !has(obj, &["spec", "parallelism"]) {
                or_set(obj, &["spec", "completions"], json!(1));
            }
            or_set(obj, &["spec", "parallelism"], json!(1));
            let per_index = has(obj, &["spec", "backoffLimitPerIndex"]);
            or_set(
                obj,
                &["spec", "backoffLimit"],
                json!(if per_index { i32::MAX } else { 6 }),
            );
            // The Job takes its template's labels when it has none of its own.
            let template = obj
                .pointer("/spec/template/metadata/labels")
                .filter(|l| l.is_object())
                .cloned();
            let own = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .is_some_and(|l| !l.is_empty());
            if let Some(labels) = template.filter(|_| !own) {
                obj["metadata"]["labels"] = labels;
            }
            or_set(obj, &["spec", "completionMode"], json!("NonIndexed"));
            or_set(obj, &["spec", "suspend"], json!(false));
            let replacement = if has(obj, &["spec", "podFailurePolicy"]) {
                "Failed"
            } else {
                "TerminatingOrFailed"
            };
            or_set(obj, &["spec", "podReplacementPolicy"], json!(replacement));
        }
        "cronjobs" => {
            or_set(obj, &["spec", "concurrencyPolicy"], json!("Allow"));
            or_set(obj, &["spec", "suspend"], json!(false));
            or_set(obj, &["spec", "successfulJobsHistoryLimit"], json!(3));
            or_set(obj, &["spec", "failedJobsHistoryLimit"], json!(1));
        }
        "persistentvolumeclaims" => or_set(obj, &["spec", "volumeMode"], json!("Filesystem")),
        "horizontalpodautoscalers" => {
            or_set(obj, &["spec", "minReplicas"], json!(1));
            let none = obj
                .pointer("/spec/metrics")
                .and_then(Value::as_array)
                .is_none_or(Vec::is_empty);
            if none {
                obj["spec"]["metrics"] = json!([{"type": "Resource", "resource": {"name": "cpu",
                    "target": {"type": "Utilization", "averageUtilization": 80}}}]);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    fn defaulted(group: &str, version: &str, plural: &str, obj: Value) -> Value {
        let mut obj = obj;
        apply(find(group, version, plural).unwrap(), &mut obj);
        obj
    }

    #[test]
    fn a_bare_deployment_gets_the_v1_defaults() {
        let d = defaulted(
            "apps",
            "v1",
            "deployments",
            json!({"spec": {"selector": {}}}),
        );
        assert_eq!(
            d["spec"],
            json!({"selector": {}, "replicas": 1,
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600})
        );
        // Recreate gets no rollingUpdate; given values stay.
        let r = defaulted(
            "apps",
            "v1",
            "deployments",
            json!({"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}),
        );
        assert_eq!(r["spec"]["replicas"], 0);
        assert_eq!(r["spec"]["strategy"], json!({"type": "Recreate"}));
    }

    #[test]
    fn jobs_default_completions_only_without_parallelism() {
        let j = defaulted("batch", "v1", "jobs", json!({"spec": {}}));
        assert_eq!(
            (
                j["spec"]["completions"].clone(),
                j["spec"]["parallelism"].clone()
            ),
            (json!(1), json!(1))
        );
        let q = defaulted("batch", "v1", "jobs", json!({"spec": {"parallelism": 3}}));
        assert_eq!(q["spec"].get("completions"), None);
        assert_eq!(q["spec"]["backoffLimit"], 6);
        assert_eq!(q["spec"]["podReplacementPolicy"], "TerminatingOrFailed");
        let l = defaulted(
            "batch",
            "v1",
            "jobs",
            json!({"spec": {"backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": []},
                "template": {"metadata": {"labels": {"app": "x"}}}}}),
        );
        assert_eq!(l["spec"]["backoffLimit"], i32::MAX);
        assert_eq!(l["spec"]["podReplacementPolicy"], "Failed");
        assert_eq!(l["metadata"]["labels"], json!({"app": "x"}));
    }

    #[test]
    fn hpa_without_metrics_targets_cpu_at_80() {
        let h = defaulted(
            "autoscaling",
            "v2",
            "horizontalpodautoscalers",
            json!({"spec": {"maxReplicas": 5}}),
        );
        assert_eq!(h["spec"]["minReplicas"], 1);
        assert_eq!(
            h["spec"]["metrics"][0]["resource"]["target"]["averageUtilization"],
            80
        );
        // Other kinds, and the kinds served before, are left alone.
        let svc = defaulted("", "v1", "services", json!({"spec": {}}));
        assert_eq!(svc, json!({"spec": {}}));
    }
}
