//! kube-apiserver's table printers for the built-in kinds beyond pods, ingresses, events and
//! namespaces (`printers`): the workloads (`apps/v1` Deployment, ReplicaSet, StatefulSet,
//! DaemonSet, ControllerRevision; `batch/v1` Job, CronJob), Service, Endpoints,
//! EndpointSlice, ConfigMap, Secret, PersistentVolumeClaim, ServiceAccount, LimitRange,
//! ResourceQuota, NetworkPolicy, HorizontalPodAutoscaler (`autoscaling/v2`) and
//! PodDisruptionBudget (`policy/v1`).
//!
//! Long file: one printer per kind, with its column definitions and the unit tests that
//! hold its cells to the cases of upstream's `printers_test.go`; split by kind they would
//! share every helper.
//!
//! Written from `pkg/printers/internalversion/printers.go` of Kubernetes (the column
//! definitions of `AddHandlers`, then each `print<Kind>`), over the raw JSON of the served
//! version. kube-apiserver builds server-side Tables with `GenerateOptions{Wide: true}`, so
//! every cell is sent and kubectl hides the priority-1 columns unless `-o wide`.
//!
//! The printers read the internal objects, after kube-apiserver's defaulting; kubesim
//! stores what it is given, so where a default shows in a cell it is applied here (a
//! Deployment's, ReplicaSet's or StatefulSet's `replicas` 1, a Service's `type` ClusterIP
//! and port `protocol` TCP, a Job's `completions`/`parallelism` 1, a CronJob's `suspend`
//! false, a PVC's `status.phase` Pending and `volumeMode` Filesystem). Quantities are
//! printed as given: fixtures write them canonically, as `resource.Quantity.String()` would.
//!
//! Column descriptions are printers.go's own strings where it writes them; where it takes a
//! field's `SwaggerDoc()` the text here is that field's API documentation, shortened.
//! kubectl prints neither.
//!
//! LimitRange has no printer: kube-apiserver's default table convertor answers `NAME`,
//! `CREATED AT` (the creation time in RFC 3339).

use std::collections::BTreeMap;

use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::table::{age_of, col, human_duration, list, load_balancer_ingress, s, when};

fn int(v: &Value, p: &str) -> i64 {
    v.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn age(obj: &Value) -> Value {
    json!(crate::table::age(obj))
}

/// `labels.FormatLabels`: `k=v` sorted by key, comma-joined; `<none>` when empty.
pub fn format_labels(map: Option<&Value>) -> String {
    let sorted: BTreeMap<&str, &str> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
        .collect();
    if sorted.is_empty() {
        return "<none>".into();
    }
    sorted
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// `metav1.LabelSelectorAsSelector(sel).String()`: one requirement per `matchLabels` entry
/// (`k=v`) and per `matchExpressions` entry (`k in (a,b)`, `k notin (a,b)`, `k`, `!k`, the
/// values sorted), ordered by key, comma-joined. Empty for a nil or empty selector; None
/// for an operator it does not know (the printers then write `<invalid>` or `<error>`).
pub fn label_selector(sel: Option<&Value>) -> Option<String> {
    let Some(sel) = sel.filter(|v| !v.is_null()) else {
        return Some(String::new());
    };
    let mut reqs: Vec<(String, String)> = Vec::new();
    for (k, v) in sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        reqs.push((k.clone(), format!("{k}={}", v.as_str().unwrap_or(""))));
    }
    for e in list(sel, "/matchExpressions") {
        let key = s(e, "/key");
        let mut values: Vec<&str> = list(e, "/values")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        values.sort_unstable();
        let text = match s(e, "/operator") {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => return None,
        };
        reqs.push((key.to_string(), text));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    Some(
        reqs.into_iter()
            .map(|(_, t)| t)
            .collect::<Vec<_>>()
            .join(","),
    )
}

/// `metav1.FormatLabelSelector`: the selector's string, `<none>` when empty, `<error>`
/// when it does not parse.
pub fn format_label_selector(sel: Option<&Value>) -> String {
    match label_selector(sel) {
        None => "<error>".into(),
        Some(s) if s.is_empty() => "<none>".into(),
        Some(s) => s,
    }
}

/// `layoutContainerCells`: the containers' names and images, comma-joined.
fn containers(pod_spec: Option<&Value>) -> (String, String) {
    let cs = pod_spec
        .and_then(|p| p.get("containers"))
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let names: Vec<&str> = cs.iter().map(|c| s(c, "/name")).collect();
    let images: Vec<&str> = cs.iter().map(|c| s(c, "/image")).collect();
    (names.join(","), images.join(","))
}

/// `intstr.IntOrString.String()`.
fn int_or_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

/// `printBoolPtr`.
fn bool_ptr(v: Option<&Value>) -> String {
    match v.and_then(Value::as_bool) {
        Some(true) => "True".into(),
        Some(false) => "False".into(),
        None => "<unset>".into(),
    }
}

/// `helper.GetAccessModesAsString`: RWO, ROX, RWX, RWOP, each once, in that order.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| has(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `net.JoinHostPort`: IPv6 addresses in brackets.
fn host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// `listWithMoreString`.
fn list_with_more(list: &[String], more: bool, count: usize, max: usize) -> String {
    let ret = list.join(",");
    if more {
        return format!("{ret} + {} more...", count - max);
    }
    if ret.is_empty() {
        "<unset>".into()
    } else {
        ret
    }
}

const CONTAINERS: &str = "Names of each container in the template.";
const IMAGES: &str = "Images referenced by each container in the template.";

fn wide(name: &str, description: &str) -> Value {
    col(name, "string", "", description, 1)
}

fn string(name: &str, description: &str) -> Value {
    col(name, "string", "", description, 0)
}

fn integer(name: &str, description: &str) -> Value {
    col(name, "integer", "", description, 0)
}

/// The column definitions for `plural`, None for the kinds this module does not print.
pub fn columns(plural: &str, name: Value, age: Value) -> Option<Vec<Value>> {
    Some(match plural {
        "deployments" => vec![
            name,
            string("Ready", "Number of the pod with ready state"),
            string(
                "Up-to-date",
                "Total number of non-terminated pods targeted by this deployment that have the desired template spec.",
            ),
            string(
                "Available",
                "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.",
            ),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide(
                "Selector",
                "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
            ),
        ],
        "replicasets" => vec![
            name,
            integer(
                "Desired",
                "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1.",
            ),
            integer(
                "Current",
                "Replicas is the most recently observed number of replicas.",
            ),
            integer(
                "Ready",
                "The number of ready replicas for this replica set.",
            ),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide(
                "Selector",
                "Selector is a label query over pods that should match the replica count.",
            ),
        ],
        "statefulsets" => vec![
            name,
            string("Ready", "Number of the pod with ready state"),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
        ],
        "daemonsets" => vec![
            name,
            integer(
                "Desired",
                "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
            ),
            integer(
                "Current",
                "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
            ),
            integer(
                "Ready",
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
            ),
            integer(
                "Up-to-date",
                "The total number of nodes that are running updated daemon pod",
            ),
            integer(
                "Available",
                "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
            ),
            string(
                "Node Selector",
                "NodeSelector is a selector which must be true for the pod to fit on a node.",
            ),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide(
                "Selector",
                "A label query over pods that are managed by the daemon set.",
            ),
        ],
        "controllerrevisions" => vec![
            name,
            string("Controller", "Controller of the object"),
            string(
                "Revision",
                "Revision indicates the revision of the state represented by Data.",
            ),
            age,
        ],
        "jobs" => vec![
            name,
            string("Status", "Status of the job."),
            string(
                "Completions",
                "The number of pods which reached phase Succeeded.",
            ),
            string("Duration", "Time required to complete the job."),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide(
                "Selector",
                "A label query over pods that should match the pod count.",
            ),
        ],
        "cronjobs" => vec![
            name,
            string(
                "Schedule",
                "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
            ),
            string(
                "Timezone",
                "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
            ),
            col(
                "Suspend",
                "boolean",
                "",
                "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions. Defaults to false.",
                0,
            ),
            integer("Active", "A list of pointers to currently running jobs."),
            string(
                "Last Schedule",
                "Information when was the last time the job was successfully scheduled.",
            ),
            age,
            wide("Containers", CONTAINERS),
            wide("Images", IMAGES),
            wide(
                "Selector",
                "A label query over pods that should match the pod count.",
            ),
        ],
        "services" => vec![
            name,
            string(
                "Type",
                "type determines how the Service is exposed. Defaults to ClusterIP.",
            ),
            string(
                "Cluster-IP",
                "clusterIP is the IP address of the service and is usually assigned randomly.",
            ),
            string(
                "External-IP",
                "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
            ),
            string(
                "Port(s)",
                "The list of ports that are exposed by this service.",
            ),
            age,
            wide(
                "Selector",
                "Route service traffic to pods with label keys and values matching this selector.",
            ),
        ],
        "endpoints" => vec![
            name,
            string(
                "Endpoints",
                "The set of all endpoints is the union of all subsets.",
            ),
            age,
        ],
        "endpointslices" => vec![
            name,
            string(
                "AddressType",
                "addressType specifies the type of address carried by this EndpointSlice.",
            ),
            string(
                "Ports",
                "ports specifies the list of network ports exposed by each endpoint in this slice.",
            ),
            string(
                "Endpoints",
                "endpoints is a list of unique endpoints in this slice.",
            ),
            age,
        ],
        "configmaps" => vec![
            name,
            string("Data", "Data contains the configuration data."),
            age,
        ],
        "secrets" => vec![
            name,
            string(
                "Type",
                "Used to facilitate programmatic handling of secret data.",
            ),
            string(
                "Data",
                "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'.",
            ),
            age,
        ],
        "persistentvolumeclaims" => vec![
            name,
            string(
                "Status",
                "phase represents the current phase of PersistentVolumeClaim.",
            ),
            string(
                "Volume",
                "volumeName is the binding reference to the PersistentVolume backing this claim.",
            ),
            string(
                "Capacity",
                "capacity represents the actual resources of the underlying volume.",
            ),
            string(
                "Access Modes",
                "accessModes contains the actual access modes the volume backing the PVC has.",
            ),
            string("StorageClass", "StorageClass of the pvc"),
            string("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
            age,
            wide(
                "VolumeMode",
                "volumeMode defines what type of volume is required by the claim. Value of Filesystem is implied when not included in claim spec.",
            ),
        ],
        "serviceaccounts" => vec![name, age],
        "limitranges" => vec![
            name,
            col(
                "Created At",
                "date",
                "",
                "CreationTimestamp is a timestamp representing the server time when this object was created.",
                0,
            ),
        ],
        "resourcequotas" => vec![
            name,
            string(
                "Request",
                "Request represents a minimum amount of cpu/memory that a container may consume.",
            ),
            string(
                "Limit",
                "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
            ),
            age,
        ],
        "networkpolicies" => vec![
            name,
            string(
                "Pod-Selector",
                "Selects the pods to which this NetworkPolicy object applies.",
            ),
            age,
        ],
        "horizontalpodautoscalers" => vec![
            name,
            string(
                "Reference",
                "reference to scaled resource; horizontal pod autoscaler will learn the current resource consumption and will set the desired number of pods by using its Scale subresource.",
            ),
            string(
                "Targets",
                "metrics contains the specifications for which to use to calculate the desired replica count.",
            ),
            string(
                "MinPods",
                "minReplicas is the lower limit for the number of replicas to which the autoscaler can scale down.",
            ),
            string(
                "MaxPods",
                "maxReplicas is the upper limit for the number of replicas to which the autoscaler can scale up.",
            ),
            string(
                "Replicas",
                "currentReplicas is current number of replicas of pods managed by this autoscaler.",
            ),
            age,
        ],
        "poddisruptionbudgets" => vec![
            name,
            string(
                "Min Available",
                "The minimum number of pods that must be available.",
            ),
            string(
                "Max Unavailable",
                "The maximum number of pods that may be unavailable.",
            ),
            integer(
                "Allowed Disruptions",
                "Calculated number of pods that may be disrupted at this time.",
            ),
            age,
        ],
        _ => return None,
    })
}

/// The row cells for `obj` of `plural`, None for the kinds this module does not print.
pub fn cells(plural: &str, obj: &Value) -> Option<Vec<Value>> {
    cells_at(plural, obj, OffsetDateTime::now_utc())
}

/// `cells`, with running durations counted to `now`.
pub fn cells_at(plural: &str, obj: &Value, now: OffsetDateTime) -> Option<Vec<Value>> {
    let name = json!(s(obj, "/metadata/name"));
    let template = obj.pointer("/spec/template/spec");
    Some(match plural {
        // printDeployment
        "deployments" => {
            let desired = obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let selector =
                label_selector(obj.pointer("/spec/selector")).unwrap_or_else(|| "<invalid>".into());
            let (names, images) = containers(template);
            vec![
                name,
                json!(format!("{}/{desired}", int(obj, "/status/readyReplicas"))),
                json!(int(obj, "/status/updatedReplicas")),
                json!(int(obj, "/status/availableReplicas")),
                age(obj),
                json!(names),
                json!(images),
                json!(selector),
            ]
        }
        // printReplicaSet
        "replicasets" => {
            let (names, images) = containers(template);
            vec![
                name,
                json!(
                    obj.pointer("/spec/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(1)
                ),
                json!(int(obj, "/status/replicas")),
                json!(int(obj, "/status/readyReplicas")),
                age(obj),
                json!(names),
                json!(images),
                json!(format_label_selector(obj.pointer("/spec/selector"))),
            ]
        }
        // printStatefulSet
        "statefulsets" => {
            let desired = obj
                .pointer("/spec/replicas")
                .and_then(Value::as_i64)
                .unwrap_or(1);
            let (names, images) = containers(template);
            vec![
                name,
                json!(format!("{}/{desired}", int(obj, "/status/readyReplicas"))),
                age(obj),
                json!(names),
                json!(images),
            ]
        }
        // printDaemonSet
        "daemonsets" => {
            let (names, images) = containers(template);
            vec![
                name,
                json!(int(obj, "/status/desiredNumberScheduled")),
                json!(int(obj, "/status/currentNumberScheduled")),
                json!(int(obj, "/status/numberReady")),
                json!(int(obj, "/status/updatedNumberScheduled")),
                json!(int(obj, "/status/numberAvailable")),
                json!(format_labels(
                    obj.pointer("/spec/template/spec/nodeSelector")
                )),
                age(obj),
                json!(names),
                json!(images),
                json!(format_label_selector(obj.pointer("/spec/selector"))),
            ]
        }
        // printControllerRevision: the controlling owner as `kind.group/name`.
        "controllerrevisions" => {
            let controller = list(obj, "/metadata/ownerReferences")
                .iter()
                .find(|o| o.get("controller").and_then(Value::as_bool) == Some(true))
                .map_or_else(
                    || "<none>".to_string(),
                    |o| {
                        let group = s(o, "/apiVersion").rsplit_once('/').map_or("", |(g, _)| g);
                        let kind = s(o, "/kind");
                        let gk = if group.is_empty() {
                            kind.to_string()
                        } else {
                            format!("{kind}.{group}")
                        };
                        if gk.is_empty() {
                            s(o, "/name").to_string()
                        } else {
                            format!("{}/{}", gk.to_lowercase(), s(o, "/name"))
                        }
                    },
                );
            vec![
                name,
                json!(controller),
                json!(int(obj, "/revision")),
                age(obj),
            ]
        }
        "jobs" => job_cells(obj, now),
        // printCronJob
        "cronjobs" => {
            let last = match s(obj, "/status/lastScheduleTime") {
                "" => "<none>".to_string(),
                _ => age_of(obj, "/status/lastScheduleTime"),
            };
            let tz = match obj.pointer("/spec/timeZone").and_then(Value::as_str) {
                Some(tz) => tz.to_string(),
                None => "<none>".into(),
            };
            let suspend = obj.pointer("/spec/suspend").or(Some(&Value::Bool(false)));
            let (names, images) = containers(obj.pointer("/spec/jobTemplate/spec/template/spec"));
            vec![
                name,
                json!(s(obj, "/spec/schedule")),
                json!(tz),
                json!(bool_ptr(suspend)),
                json!(list(obj, "/status/active").len()),
                json!(last),
                age(obj),
                json!(names),
                json!(images),
                json!(format_label_selector(
                    obj.pointer("/spec/jobTemplate/spec/selector")
                )),
            ]
        }
        "services" => service_cells(obj),
        // printEndpoints
        "endpoints" => vec![name, json!(format_endpoints(obj)), age(obj)],
        // printEndpointSlice
        "endpointslices" => {
            let (max, mut ports, mut count) = (3, Vec::new(), 0);
            for p in list(obj, "/ports") {
                if ports.len() < max {
                    ports.push(
                        match (p.get("port").and_then(Value::as_i64), p.get("name")) {
                            (Some(n), _) => n.to_string(),
                            (None, Some(Value::String(n))) => n.clone(),
                            _ => "*".into(),
                        },
                    );
                }
                count += 1;
            }
            let ports = list_with_more(&ports, count > max, count, max);
            let (mut addrs, mut count) = (Vec::new(), 0);
            for e in list(obj, "/endpoints") {
                for a in list(e, "/addresses") {
                    if addrs.len() < max {
                        addrs.push(a.as_str().unwrap_or("").to_string());
                    }
                    count += 1;
                }
            }
            let endpoints = list_with_more(&addrs, count > max, count, max);
            vec![
                name,
                json!(s(obj, "/addressType")),
                json!(ports),
                json!(endpoints),
                age(obj),
            ]
        }
        // printConfigMap
        "configmaps" => {
            let n = |p: &str| obj.get(p).and_then(Value::as_object).map_or(0, |m| m.len());
            vec![name, json!(n("data") + n("binaryData")), age(obj)]
        }
        // printSecret
        "secrets" => vec![
            name,
            json!(s(obj, "/type")),
            json!(
                obj.get("data")
                    .and_then(Value::as_object)
                    .map_or(0, |m| m.len())
            ),
            age(obj),
        ],
        "persistentvolumeclaims" => pvc_cells(obj),
        // printServiceAccount
        "serviceaccounts" => vec![name, age(obj)],
        // The default table convertor: the creation time as `metav1.Time` marshals it.
        "limitranges" => vec![name, json!(s(obj, "/metadata/creationTimestamp"))],
        "resourcequotas" => quota_cells(obj),
        // printNetworkPolicy
        "networkpolicies" => vec![
            name,
            json!(format_label_selector(Some(
                obj.pointer("/spec/podSelector").unwrap_or(&json!({}))
            ))),
            age(obj),
        ],
        // printHorizontalPodAutoscaler
        "horizontalpodautoscalers" => {
            let min = match obj.pointer("/spec/minReplicas").and_then(Value::as_i64) {
                Some(n) => n.to_string(),
                None => "<unset>".into(),
            };
            vec![
                name,
                json!(format!(
                    "{}/{}",
                    s(obj, "/spec/scaleTargetRef/kind"),
                    s(obj, "/spec/scaleTargetRef/name")
                )),
                json!(hpa_metrics(
                    list(obj, "/spec/metrics"),
                    list(obj, "/status/currentMetrics")
                )),
                json!(min),
                json!(int(obj, "/spec/maxReplicas")),
                json!(int(obj, "/status/currentReplicas")),
                age(obj),
            ]
        }
        // printPodDisruptionBudget
        "poddisruptionbudgets" => {
            let or_na = |p: &str| {
                obj.pointer(p)
                    .map_or_else(|| "N/A".to_string(), int_or_string)
            };
            vec![
                name,
                json!(or_na("/spec/minAvailable")),
                json!(or_na("/spec/maxUnavailable")),
                json!(int(obj, "/status/disruptionsAllowed")),
                age(obj),
            ]
        }
        _ => return None,
    })
}

/// `hasJobCondition`: the first condition of the type decides.
fn job_condition(job: &Value, ty: &str) -> bool {
    list(job, "/status/conditions")
        .iter()
        .find(|c| s(c, "/type") == ty)
        .is_some_and(|c| s(c, "/status") == "True")
}

/// `printJob`: STATUS from the conditions (Complete, Failed, then Terminating while
/// deleted, Suspended, FailureTarget, SuccessCriteriaMet, else Running); COMPLETIONS
/// `succeeded/completions`, or `succeeded/1 of parallelism` for a work queue with
/// parallelism above 1; DURATION from startTime to completionTime (or to now).
pub fn job_cells(job: &Value, now: OffsetDateTime) -> Vec<Value> {
    let succeeded = int(job, "/status/succeeded");
    let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
    let parallelism = job.pointer("/spec/parallelism").and_then(Value::as_i64);
    // SetDefaults_Job: neither set means one completion, one at a time.
    let completions = completions.or(parallelism.is_none().then_some(1));
    let completions = match completions {
        Some(c) => format!("{succeeded}/{c}"),
        None => match parallelism.unwrap_or(1) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        when(job, "/status/startTime"),
        when(job, "/status/completionTime"),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration((now - start).whole_seconds()),
        (Some(start), Some(end)) => human_duration((end - start).whole_seconds()),
    };
    let status = if job_condition(job, "Complete") {
        "Complete"
    } else if job_condition(job, "Failed") {
        "Failed"
    } else if job.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else if job_condition(job, "Suspended") {
        "Suspended"
    } else if job_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if job_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    };
    let (names, images) = containers(job.pointer("/spec/template/spec"));
    let created = when(job, "/metadata/creationTimestamp").map_or_else(
        || "<unknown>".into(),
        |t| human_duration((now - t).whole_seconds()),
    );
    vec![
        json!(s(job, "/metadata/name")),
        json!(status),
        json!(completions),
        json!(duration),
        json!(created),
        json!(names),
        json!(images),
        json!(format_label_selector(job.pointer("/spec/selector"))),
    ]
}

/// `loadBalancerStatusStringer` for `-o wide` (the server's Tables are wide): the sorted
/// set of ingress IPs, else host names, comma-joined, unclipped.
fn load_balancer(svc: &Value) -> String {
    load_balancer_ingress(svc).join(",")
}

/// `printService`, with `getServiceExternalIP` and `makePortString`.
pub fn service_cells(svc: &Value) -> Vec<Value> {
    let ty = match s(svc, "/spec/type") {
        "" => "ClusterIP",
        t => t,
    };
    let cluster_ip = match list(svc, "/spec/clusterIPs").first() {
        Some(ip) => ip.as_str().unwrap_or("").to_string(),
        None => match s(svc, "/spec/clusterIP") {
            "" => "<none>".into(),
            ip => ip.to_string(),
        },
    };
    let external: Vec<&str> = list(svc, "/spec/externalIPs")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let external_ip = match ty {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => "<none>".into(),
        "LoadBalancer" => {
            let lb = load_balancer(svc);
            if !external.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').collect()
                };
                all.extend(&external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => s(svc, "/spec/externalName").to_string(),
        _ => "<unknown>".into(),
    };
    let ports: Vec<String> = list(svc, "/spec/ports")
        .iter()
        .map(|p| {
            let protocol = match s(p, "/protocol") {
                "" => "TCP",
                proto => proto,
            };
            let port = int(p, "/port");
            match int(p, "/nodePort") {
                n if n > 0 => format!("{port}:{n}/{protocol}"),
                _ => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let ports = if ports.is_empty() {
        "<none>".to_string()
    } else {
        ports.join(",")
    };
    vec![
        json!(s(svc, "/metadata/name")),
        json!(ty),
        json!(cluster_ip),
        json!(external_ip),
        json!(ports),
        age(svc),
        json!(format_labels(svc.pointer("/spec/selector"))),
    ]
}

/// `formatEndpoints` with every port: `ip:port` per address and port (just `ip` in a
/// subset without ports), the first three, then `+ N more...`; `<none>` without subsets.
pub fn format_endpoints(ep: &Value) -> String {
    let subsets = list(ep, "/subsets");
    if subsets.is_empty() {
        return "<none>".into();
    }
    let (max, mut out, mut more, mut count) = (3, Vec::<String>::new(), false, 0);
    for ss in subsets {
        let addrs = list(ss, "/addresses");
        let ports = list(ss, "/ports");
        if ports.is_empty() {
            count += addrs.len();
            for a in addrs {
                if out.len() == max {
                    more = true;
                    break;
                }
                out.push(s(a, "/ip").to_string());
            }
            continue;
        }
        for p in ports {
            count += addrs.len();
            for a in addrs {
                if out.len() == max {
                    more = true;
                    break;
                }
                out.push(host_port(s(a, "/ip"), int(p, "/port")));
            }
        }
    }
    let ret = out.join(",");
    if more {
        format!("{ret} + {} more...", count - max)
    } else {
        ret
    }
}

/// `printPersistentVolumeClaim`.
fn pvc_cells(pvc: &Value) -> Vec<Value> {
    let phase = if pvc.pointer("/metadata/deletionTimestamp").is_some() {
        "Terminating"
    } else {
        match s(pvc, "/status/phase") {
            "" => "Pending",
            p => p,
        }
    };
    let volume = s(pvc, "/spec/volumeName");
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            s(pvc, "/status/capacity/storage").to_string(),
            access_modes(list(pvc, "/status/accessModes")),
        )
    };
    // GetPersistentVolumeClaimClass: the beta annotation wins over the field.
    let class = pvc
        .pointer("/metadata/annotations/volume.beta.kubernetes.io~1storage-class")
        .and_then(Value::as_str)
        .unwrap_or_else(|| s(pvc, "/spec/storageClassName"));
    let vac = pvc
        .pointer("/spec/volumeAttributesClassName")
        .and_then(Value::as_str)
        .unwrap_or("<unset>");
    let mode = match s(pvc, "/spec/volumeMode") {
        "" => "Filesystem",
        m => m,
    };
    vec![
        json!(s(pvc, "/metadata/name")),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(vac),
        age(pvc),
        json!(mode),
    ]
}

/// `printResourceQuota`: `name: used/hard` for each hard limit, sorted by name; the
/// `limits.*` ones in LIMIT, the rest in REQUEST.
fn quota_cells(q: &Value) -> Vec<Value> {
    let hard: BTreeMap<&str, &Value> = q
        .pointer("/status/hard")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.as_str(), v))
        .collect();
    let (mut request, mut limit) = (Vec::new(), Vec::new());
    for (res, h) in hard {
        let used = q
            .pointer(&format!(
                "/status/used/{}",
                res.replace('~', "~0").replace('/', "~1")
            ))
            .map_or_else(|| "0".to_string(), int_or_string);
        let text = format!("{res}: {used}/{}", int_or_string(h));
        let pieces: Vec<&str> = res.split('.').collect();
        if pieces.len() > 1 && pieces[0] == "limits" {
            limit.push(text);
        } else {
            request.push(text);
        }
    }
    vec![
        json!(s(q, "/metadata/name")),
        json!(request.join(", ")),
        json!(limit.join(", ")),
        age(q),
    ]
}

/// `formatHPAMetrics` over autoscaling/v2 `spec.metrics` and `status.currentMetrics`
/// (matched by position): the first two, then `+ N more...`; `<none>` without metrics.
pub fn hpa_metrics(specs: &[Value], statuses: &[Value]) -> String {
    if specs.is_empty() {
        return "<none>".into();
    }
    let q = |v: &Value, p: &str| v.pointer(p).map(int_or_string);
    let unknown = || "<unknown>".to_string();
    let mut out = Vec::new();
    for (i, spec) in specs.iter().enumerate() {
        let status = statuses.get(i);
        // The status of this metric when it is of the spec's source type.
        let st = |field: &str| status.and_then(|st| st.get(field));
        let text = match s(spec, "/type") {
            "External" => {
                let cur = st("external");
                match q(spec, "/external/target/averageValue") {
                    Some(target) => format!(
                        "{}/{target} (avg)",
                        cur.and_then(|c| q(c, "/current/averageValue"))
                            .unwrap_or_else(unknown)
                    ),
                    None => format!(
                        "{}/{}",
                        cur.map(|c| q(c, "/current/value").unwrap_or_else(|| "0".into()))
                            .unwrap_or_else(unknown),
                        q(spec, "/external/target/value").unwrap_or_else(|| "0".into())
                    ),
                }
            }
            "Pods" => format!(
                "{}/{}",
                st("pods")
                    .map(|c| q(c, "/current/averageValue").unwrap_or_else(|| "0".into()))
                    .unwrap_or_else(unknown),
                q(spec, "/pods/target/averageValue").unwrap_or_else(|| "0".into())
            ),
            "Object" => {
                let cur = st("object");
                match q(spec, "/object/target/averageValue") {
                    Some(target) => format!(
                        "{}/{target} (avg)",
                        cur.and_then(|c| q(c, "/current/averageValue"))
                            .unwrap_or_else(unknown)
                    ),
                    None => format!(
                        "{}/{}",
                        cur.map(|c| q(c, "/current/value").unwrap_or_else(|| "0".into()))
                            .unwrap_or_else(unknown),
                        q(spec, "/object/target/value").unwrap_or_else(|| "0".into())
                    ),
                }
            }
            ty @ ("Resource" | "ContainerResource") => {
                let field = if ty == "Resource" {
                    "resource"
                } else {
                    "containerResource"
                };
                let name = s(spec, &format!("/{field}/name"));
                let cur = st(field);
                match q(spec, &format!("/{field}/target/averageValue")) {
                    Some(target) => format!(
                        "{name}: {}/{target}",
                        cur.map(|c| q(c, "/current/averageValue").unwrap_or_else(|| "0".into()))
                            .unwrap_or_else(unknown)
                    ),
                    None => {
                        let current = cur
                            .and_then(|c| c.pointer("/current/averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(unknown, |u| format!("{u}%"));
                        let target = spec
                            .pointer(&format!("/{field}/target/averageUtilization"))
                            .and_then(Value::as_i64)
                            .map_or_else(|| "<auto>".to_string(), |u| format!("{u}%"));
                        format!("{name}: {current}/{target}")
                    }
                }
            }
            _ => "<unknown type>".into(),
        };
        out.push(text);
    }
    let count = out.len();
    if count > 2 {
        out.truncate(2);
        return format!("{} + {} more...", out.join(", "), count - 2);
    }
    out.join(", ")
}

#[cfg(test)]
mod tests {
    //! Cells against the cases of upstream's `printers_test.go` (named after its test
    //! functions and case names), then kubesim's own cases for the defaults it applies.

    use super::*;
    use time::format_description::well_known::Rfc3339;

    fn at(t: &str) -> OffsetDateTime {
        OffsetDateTime::parse(t, &Rfc3339).unwrap()
    }

    /// Every cell but AGE (which counts to the wall clock here).
    fn without_age(mut cells: Vec<Value>, age: usize) -> Vec<Value> {
        cells.remove(age);
        cells
    }

    #[test]
    fn selectors_print_as_labels_selector_string() {
        assert_eq!(label_selector(None), Some(String::new()));
        assert_eq!(format_label_selector(None), "<none>");
        assert_eq!(format_label_selector(Some(&json!({}))), "<none>");
        let sel = json!({"matchLabels": {"app": "web", "tier": "front"},
            "matchExpressions": [
                {"key": "env", "operator": "In", "values": ["prod", "dev"]},
                {"key": "zone", "operator": "DoesNotExist"},
                {"key": "canary", "operator": "Exists"},
                {"key": "x", "operator": "NotIn", "values": ["b", "a"]}]});
        assert_eq!(
            format_label_selector(Some(&sel)),
            "app=web,canary,env in (dev,prod),tier=front,x notin (a,b),!zone"
        );
        let bad = json!({"matchExpressions": [{"key": "a", "operator": "Near"}]});
        assert_eq!(format_label_selector(Some(&bad)), "<error>");
        assert_eq!(format_labels(Some(&json!({"b": "2", "a": "1"}))), "a=1,b=2");
        assert_eq!(format_labels(None), "<none>");
    }

    fn two_containers(prefix: &str) -> Value {
        json!({"spec": {"containers": [
            {"name": format!("fake-{prefix}container1"), "image": format!("fake-{prefix}image1")},
            {"name": format!("fake-{prefix}container2"), "image": format!("fake-{prefix}image2")}]}})
    }

    /// `TestPrintDeployment`: replicas 5, updated 2, available 1, no ready count:
    /// `test1 0/5 2 1`, wide `fake-container1,fake-container2 fake-image1,fake-image2
    /// foo=bar`.
    #[test]
    fn print_deployment() {
        let d = json!({"metadata": {"name": "test1"},
            "spec": {"replicas": 5, "template": two_containers(""),
                "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 4}});
        assert_eq!(
            without_age(cells("deployments", &d).unwrap(), 4),
            [
                json!("test1"),
                json!("0/5"),
                json!(2),
                json!(1),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("foo=bar")
            ]
        );
        // kubesim: unset replicas are the default 1; an empty selector prints as `""`.
        let bare = json!({"metadata": {"name": "d"}, "spec": {"selector": {}}});
        let c = cells("deployments", &bare).unwrap();
        assert_eq!((c[1].as_str(), c[7].as_str()), (Some("0/1"), Some("")));
    }

    /// `TestPrintDaemonSet`: desired 3, current 2, ready 1, updated 2, available 0, no node
    /// selector: `test1 3 2 1 2 0 <none>`, wide the containers, images and `foo=bar`.
    #[test]
    fn print_daemonset() {
        let ds = json!({"metadata": {"name": "test1"},
            "spec": {"template": two_containers(""), "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1,
                "updatedNumberScheduled": 2, "numberAvailable": 0}});
        assert_eq!(
            without_age(cells("daemonsets", &ds).unwrap(), 7),
            [
                json!("test1"),
                json!(3),
                json!(2),
                json!(1),
                json!(2),
                json!(0),
                json!("<none>"),
                json!("fake-container1,fake-container2"),
                json!("fake-image1,fake-image2"),
                json!("foo=bar")
            ]
        );
        let with_nodes = json!({"metadata": {"name": "agent"},
            "spec": {"template": {"spec": {"nodeSelector": {"kubernetes.io/os": "linux", "a": "b"}}}}});
        assert_eq!(
            cells("daemonsets", &with_nodes).unwrap()[6],
            "a=b,kubernetes.io/os=linux"
        );
    }

    /// `TestPrintJob`, its cases `job1` to `job10`: Running `1/2` with no start; `0/1` for
    /// a job without completions; DURATION `30m` from startTime to completionTime and `20m`
    /// from startTime to now; then Complete, Failed, Suspended, FailureTarget, Terminating
    /// (deleted) and SuccessCriteriaMet from the conditions. Wide: the containers, images
    /// and `job-label=job-label-value`.
    #[test]
    fn print_job() {
        let now = at("2026-01-01T01:00:00Z");
        let job = |name: &str, spec: Value, status: Value| {
            let mut j = json!({"metadata": {"name": name, "creationTimestamp": "2026-01-01T01:00:00Z"},
                "spec": spec, "status": status});
            if name == "job9" {
                j["metadata"]["deletionTimestamp"] = json!("2026-01-01T01:00:00Z");
            }
            j
        };
        let job1 = job(
            "job1",
            json!({"completions": 2, "template": two_containers("job-"),
                "selector": {"matchLabels": {"job-label": "job-label-value"}}}),
            json!({"succeeded": 1}),
        );
        assert_eq!(
            job_cells(&job1, now),
            [
                json!("job1"),
                json!("Running"),
                json!("1/2"),
                json!(""),
                json!("0s"),
                json!("fake-job-container1,fake-job-container2"),
                json!("fake-job-image1,fake-job-image2"),
                json!("job-label=job-label-value")
            ]
        );
        let cases = [
            ("job2", json!({}), "Running", ""),
            (
                "job3",
                json!({"startTime": "2026-01-01T01:01:00Z", "completionTime": "2026-01-01T01:31:00Z"}),
                "Running",
                "30m",
            ),
            (
                "job4",
                json!({"startTime": "2026-01-01T00:40:00Z"}),
                "Running",
                "20m",
            ),
            (
                "job5",
                json!({"conditions": [{"type": "Complete", "status": "True"}]}),
                "Complete",
                "",
            ),
            (
                "job6",
                json!({"conditions": [{"type": "Failed", "status": "True"}]}),
                "Failed",
                "",
            ),
            (
                "job7",
                json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
                "Suspended",
                "",
            ),
            (
                "job8",
                json!({"conditions": [{"type": "FailureTarget", "status": "True"}]}),
                "FailureTarget",
                "",
            ),
            ("job9", json!({}), "Terminating", ""),
            (
                "job10",
                json!({"conditions": [{"type": "SuccessCriteriaMet", "status": "True"}]}),
                "SuccessCriteriaMet",
                "",
            ),
        ];
        for (name, status, want, duration) in cases {
            // `Completions: nil` in the internal object; the v1 defaulting makes it 1,
            // which prints the same `0/1`.
            let c = job_cells(&job(name, json!({}), status), now);
            assert_eq!(
                c[1..4],
                [json!(want), json!("0/1"), json!(duration)],
                "{name}"
            );
        }
        // kubesim: a condition that is not True counts for nothing; Complete wins over
        // FailureTarget; a work queue with parallelism 3 prints `0/1 of 3`.
        let c = job_cells(
            &job(
                "j",
                json!({}),
                json!({"conditions": [{"type": "Complete", "status": "False"}]}),
            ),
            now,
        );
        assert_eq!(c[1], "Running");
        let c = job_cells(
            &job(
                "j",
                json!({"parallelism": 3}),
                json!({"conditions": [{"type": "FailureTarget", "status": "True"}, {"type": "Complete", "status": "True"}]}),
            ),
            now,
        );
        assert_eq!(c[1..3], [json!("Complete"), json!("0/1 of 3")]);
    }

    /// `TestPrintHPA`, every case: `<none>` and `<unset>` without metrics or minReplicas;
    /// external `<unknown>/100m (avg)`, `50m/100m (avg)`, `<unknown>/100m`, `50m/100m`;
    /// pods and object the same without `(avg)`; resource `cpu: <unknown>/100m`,
    /// `cpu: 50m/100m`, `cpu: <unknown>/80%`, `cpu: 50%/80%` (container resource alike);
    /// and three specs `50m/100m, cpu: 50%/80% + 1 more...`.
    #[test]
    fn print_hpa() {
        let base = |metrics: Value, current: Value, min: Option<i64>| {
            let mut h = json!({"metadata": {"name": "some-hpa"},
                "spec": {"scaleTargetRef": {"name": "some-rc", "kind": "ReplicationController"},
                    "maxReplicas": 10, "metrics": metrics},
                "status": {"currentReplicas": 4, "desiredReplicas": 5, "currentMetrics": current}});
            if let Some(m) = min {
                h["spec"]["minReplicas"] = json!(m);
            }
            h
        };
        let c = cells(
            "horizontalpodautoscalers",
            &base(json!([]), json!([]), None),
        )
        .unwrap();
        assert_eq!(
            without_age(c, 6),
            [
                json!("some-hpa"),
                json!("ReplicationController/some-rc"),
                json!("<none>"),
                json!("<unset>"),
                json!(10),
                json!(4)
            ]
        );
        let ext_avg = json!({"type": "External", "external": {"metric": {"name": "some-external-metric"},
            "target": {"type": "AverageValue", "averageValue": "100m"}}});
        let ext_val = json!({"type": "External", "external": {"metric": {"name": "some-external-metric"},
            "target": {"type": "Value", "value": "100m"}}});
        let pods = json!({"type": "Pods", "pods": {"metric": {"name": "some-pods-metric"},
            "target": {"type": "AverageValue", "averageValue": "100m"}}});
        let object = json!({"type": "Object", "object": {"describedObject": {"name": "some-service", "kind": "Service"},
            "metric": {"name": "some-service-metric"}, "target": {"type": "Value", "value": "100m"}}});
        let res_val = json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "AverageValue", "averageValue": "100m"}}});
        let res_util = json!({"type": "Resource", "resource": {"name": "cpu",
            "target": {"type": "Utilization", "averageUtilization": 80}}});
        let cres_val = json!({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "application",
            "target": {"type": "AverageValue", "averageValue": "100m"}}});
        let cres_util = json!({"type": "ContainerResource", "containerResource": {"name": "cpu", "container": "application",
            "target": {"type": "Utilization", "averageUtilization": 80}}});
        let cases = [
            (&ext_avg, None, "<unknown>/100m (avg)"),
            (
                &ext_avg,
                Some(json!({"type": "External", "external": {"current": {"averageValue": "50m"}}})),
                "50m/100m (avg)",
            ),
            (&ext_val, None, "<unknown>/100m"),
            (
                &ext_val,
                Some(json!({"type": "External", "external": {"current": {"value": "50m"}}})),
                "50m/100m",
            ),
            (&pods, None, "<unknown>/100m"),
            (
                &pods,
                Some(json!({"type": "Pods", "pods": {"current": {"averageValue": "50m"}}})),
                "50m/100m",
            ),
            (&object, None, "<unknown>/100m"),
            (
                &object,
                Some(json!({"type": "Object", "object": {"current": {"value": "50m"}}})),
                "50m/100m",
            ),
            (&res_val, None, "cpu: <unknown>/100m"),
            (
                &res_val,
                Some(
                    json!({"type": "Resource", "resource": {"name": "cpu", "current": {"averageValue": "50m"}}}),
                ),
                "cpu: 50m/100m",
            ),
            (&res_util, None, "cpu: <unknown>/80%"),
            (
                &res_util,
                Some(json!({"type": "Resource", "resource": {"name": "cpu",
                    "current": {"averageUtilization": 50, "averageValue": "40m"}}})),
                "cpu: 50%/80%",
            ),
            (&cres_val, None, "cpu: <unknown>/100m"),
            (
                &cres_val,
                Some(
                    json!({"type": "ContainerResource", "containerResource": {"name": "cpu",
                    "container": "application", "current": {"averageValue": "50m"}}}),
                ),
                "cpu: 50m/100m",
            ),
            (&cres_util, None, "cpu: <unknown>/80%"),
            (
                &cres_util,
                Some(
                    json!({"type": "ContainerResource", "containerResource": {"name": "cpu",
                    "container": "application", "current": {"averageUtilization": 50, "averageValue": "40m"}}}),
                ),
                "cpu: 50%/80%",
            ),
        ];
        for (spec, current, want) in cases {
            let current = current.map_or(json!([]), |c| json!([c]));
            let h = base(json!([spec]), current, Some(2));
            let c = cells("horizontalpodautoscalers", &h).unwrap();
            assert_eq!(c[2..4], [json!(want), json!("2")], "{spec}");
        }
        let other = json!({"type": "Pods", "pods": {"metric": {"name": "other-pods-metric"},
            "target": {"type": "AverageValue", "averageValue": "400m"}}});
        let current = json!([
            {"type": "Pods", "pods": {"current": {"averageValue": "50m"}}},
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": 50, "averageValue": "40m"}}}]);
        let h = base(json!([pods, res_util, other]), current, Some(2));
        assert_eq!(
            cells("horizontalpodautoscalers", &h).unwrap()[2],
            "50m/100m, cpu: 50%/80% + 1 more..."
        );
    }

    /// `TestPrintService`, cases `test1` to `test7`: ClusterIP `2233/tcp` with `<none>`
    /// external IP (the selector `foo=bar` only wide), NodePort `8888:9999/tcp`,
    /// LoadBalancer `<pending>`, one external IP `80.11.12.10`, the balancer's IP before
    /// the external IPs, and ExternalName `<none>` cluster IP and ports.
    #[test]
    fn print_service() {
        let svc = |name: &str, spec: Value, status: Value| json!({"metadata": {"name": name}, "spec": spec, "status": status});
        let port = json!([{"protocol": "tcp", "port": 8888}]);
        let cases = [
            (
                svc(
                    "test1",
                    json!({"type": "ClusterIP", "ports": [{"protocol": "tcp", "port": 2233}],
                        "clusterIPs": ["10.9.8.7"], "selector": {"foo": "bar"}}),
                    json!({}),
                ),
                ["ClusterIP", "10.9.8.7", "<none>", "2233/tcp", "foo=bar"],
            ),
            (
                svc(
                    "test2",
                    json!({"type": "NodePort", "ports": [{"protocol": "tcp", "port": 8888, "nodePort": 9999}],
                        "clusterIPs": ["10.9.8.7"]}),
                    json!({}),
                ),
                ["NodePort", "10.9.8.7", "<none>", "8888:9999/tcp", "<none>"],
            ),
            (
                svc(
                    "test3",
                    json!({"type": "LoadBalancer", "ports": port, "clusterIPs": ["10.9.8.7"]}),
                    json!({}),
                ),
                [
                    "LoadBalancer",
                    "10.9.8.7",
                    "<pending>",
                    "8888/tcp",
                    "<none>",
                ],
            ),
            (
                svc(
                    "test4",
                    json!({"type": "LoadBalancer", "ports": port, "clusterIPs": ["10.9.8.7"],
                        "externalIPs": ["80.11.12.10"]}),
                    json!({}),
                ),
                [
                    "LoadBalancer",
                    "10.9.8.7",
                    "80.11.12.10",
                    "8888/tcp",
                    "<none>",
                ],
            ),
            (
                svc(
                    "test5",
                    json!({"type": "LoadBalancer", "ports": port, "clusterIPs": ["10.9.8.7"],
                        "externalIPs": ["80.11.12.10"]}),
                    json!({"loadBalancer": {"ingress": [{"ip": "3.4.5.6", "hostname": "test.cluster.com"}]}}),
                ),
                [
                    "LoadBalancer",
                    "10.9.8.7",
                    "3.4.5.6,80.11.12.10",
                    "8888/tcp",
                    "<none>",
                ],
            ),
            (
                svc(
                    "test6",
                    json!({"type": "LoadBalancer", "ports": port, "clusterIPs": ["10.9.8.7"],
                        "externalIPs": ["80.11.12.10", "80.11.12.11"]}),
                    json!({"loadBalancer": {"ingress": [
                        {"ip": "2.3.4.5", "hostname": "test.cluster.local"},
                        {"ip": "3.4.5.6", "hostname": "test.cluster.com"}]}}),
                ),
                [
                    "LoadBalancer",
                    "10.9.8.7",
                    "2.3.4.5,3.4.5.6,80.11.12.10,80.11.12.11",
                    "8888/tcp",
                    "<none>",
                ],
            ),
            (
                svc(
                    "test7",
                    json!({"type": "ExternalName", "externalName": "my.database.example.com"}),
                    json!({}),
                ),
                [
                    "ExternalName",
                    "<none>",
                    "my.database.example.com",
                    "<none>",
                    "<none>",
                ],
            ),
        ];
        for (svc, want) in cases {
            let c = service_cells(&svc);
            assert_eq!([&c[1], &c[2], &c[3], &c[4], &c[6]], want, "{svc}");
        }
        // kubesim: the defaults of type ClusterIP and protocol TCP; `clusterIP` alone.
        let bare = svc(
            "x",
            json!({"clusterIP": "10.0.0.9", "ports": [{"port": 80}]}),
            json!({}),
        );
        let c = service_cells(&bare);
        assert_eq!([&c[1], &c[2], &c[4]], ["ClusterIP", "10.0.0.9", "80/TCP"]);
    }

    /// `TestPrintEndpoint`: `<none>` without subsets; bare IPs `1.2.3.4,5.6.7.8` without
    /// ports; `1.2.3.4:8001,5.6.7.8:8001`; four addresses
    /// `1.2.3.4:8001,5.6.7.8:8001,9.8.7.6:8001 + 1 more...`.
    #[test]
    fn print_endpoint() {
        let ips = |n: &[&str]| n.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>();
        assert_eq!(format_endpoints(&json!({})), "<none>");
        let no_ports = json!({"subsets": [{"addresses": ips(&["1.2.3.4", "5.6.7.8"])}]});
        assert_eq!(format_endpoints(&no_ports), "1.2.3.4,5.6.7.8");
        let two = json!({"subsets": [{"addresses": ips(&["1.2.3.4", "5.6.7.8"]),
            "ports": [{"port": 8001, "protocol": "tcp"}]}]});
        assert_eq!(format_endpoints(&two), "1.2.3.4:8001,5.6.7.8:8001");
        let four = json!({"subsets": [{"addresses": ips(&["1.2.3.4", "5.6.7.8", "9.8.7.6", "6.6.6.6"]),
            "ports": [{"port": 8001, "protocol": "tcp"}]}]});
        assert_eq!(
            format_endpoints(&four),
            "1.2.3.4:8001,5.6.7.8:8001,9.8.7.6:8001 + 1 more..."
        );
        // kubesim: IPv6 in brackets, as net.JoinHostPort writes it.
        let v6 = json!({"subsets": [{"addresses": [{"ip": "fd00::1"}], "ports": [{"port": 80}]}]});
        assert_eq!(format_endpoints(&v6), "[fd00::1]:80");
    }

    /// `TestPrintEndpointSlice`: `abcslice.123 IPv4 80 10.1.2.3,2001:db8::1234:5678`;
    /// `longerslicename.123 IPv6 80,443 10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...`;
    /// `multiportslice.123` ports `80,443,3000 + 1 more...`.
    #[test]
    fn print_endpointslice() {
        let port = |name: &str, n: i64| json!({"name": name, "port": n, "protocol": "TCP"});
        let two = json!([{"addresses": ["10.1.2.3", "2001:db8::1234:5678"]},
            {"addresses": ["10.2.3.4", "2001:db8::2345:6789"]}]);
        let cases = [
            (
                json!({"metadata": {"name": "abcslice.123"}, "addressType": "IPv4", "ports": [port("http", 80)],
                    "endpoints": [{"addresses": ["10.1.2.3", "2001:db8::1234:5678"]}]}),
                ["IPv4", "80", "10.1.2.3,2001:db8::1234:5678"],
            ),
            (
                json!({"metadata": {"name": "longerslicename.123"}, "addressType": "IPv6",
                    "ports": [port("http", 80), port("https", 443)], "endpoints": two}),
                [
                    "IPv6",
                    "80,443",
                    "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...",
                ],
            ),
            (
                json!({"metadata": {"name": "multiportslice.123"}, "addressType": "IPv4",
                    "ports": [port("http", 80), port("https", 443), port("extra1", 3000), port("extra2", 3001)],
                    "endpoints": two}),
                [
                    "IPv4",
                    "80,443,3000 + 1 more...",
                    "10.1.2.3,2001:db8::1234:5678,10.2.3.4 + 1 more...",
                ],
            ),
        ];
        for (es, want) in cases {
            let c = cells("endpointslices", &es).unwrap();
            assert_eq!([&c[1], &c[2], &c[3]], want);
        }
        // kubesim: formatDiscoveryPorts' name and `*` fallbacks, listWithMoreString's `<unset>`.
        let odd = json!({"metadata": {"name": "e"}, "addressType": "IPv4", "ports": [{"name": "named"}, {}]});
        let c = cells("endpointslices", &odd).unwrap();
        assert_eq!([&c[2], &c[3]], ["named,*", "<unset>"]);
    }

    /// `TestPrintPersistentVolumeClaim`: `test2` Lost without a volume prints no capacity or
    /// access modes; `test3` Pending with `my-volume` `10Gi` `RWX`; `test4` class `my-scn`;
    /// `test5` VolumeAttributesClass `my-vacn`. (Its `<unset>` volume mode is an internal
    /// object's without defaulting; the v1 default Filesystem is kubesim's own case.)
    #[test]
    fn print_persistent_volume_claim() {
        let pvc = |name: &str, spec: Value, status: Value| json!({"metadata": {"name": name}, "spec": spec, "status": status});
        let cases = [
            (
                pvc(
                    "test2",
                    json!({"volumeMode": "Filesystem"}),
                    json!({"phase": "Lost", "accessModes": ["ReadOnlyMany"], "capacity": {"storage": "4Gi"}}),
                ),
                ["Lost", "", "", "", "", "<unset>", "Filesystem"],
            ),
            (
                pvc(
                    "test3",
                    json!({"volumeName": "my-volume", "volumeMode": "Filesystem"}),
                    json!({"phase": "Pending", "accessModes": ["ReadWriteMany"], "capacity": {"storage": "10Gi"}}),
                ),
                [
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWX",
                    "",
                    "<unset>",
                    "Filesystem",
                ],
            ),
            (
                pvc(
                    "test4",
                    json!({"volumeName": "my-volume", "storageClassName": "my-scn", "volumeMode": "Filesystem"}),
                    json!({"phase": "Pending", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}),
                ),
                [
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWO",
                    "my-scn",
                    "<unset>",
                    "Filesystem",
                ],
            ),
            (
                pvc(
                    "test5",
                    json!({"volumeName": "my-volume", "storageClassName": "my-scn",
                        "volumeAttributesClassName": "my-vacn", "volumeMode": "Block"}),
                    json!({"phase": "Pending", "accessModes": ["ReadWriteOnce"], "capacity": {"storage": "10Gi"}}),
                ),
                [
                    "Pending",
                    "my-volume",
                    "10Gi",
                    "RWO",
                    "my-scn",
                    "my-vacn",
                    "Block",
                ],
            ),
        ];
        for (p, want) in cases {
            let c = pvc_cells(&p);
            assert_eq!(
                [&c[1], &c[2], &c[3], &c[4], &c[5], &c[6], &c[8]],
                want,
                "{p}"
            );
        }
        // kubesim: modes deduplicated in RWO, ROX, RWX, RWOP order; phase Pending and
        // volume mode Filesystem by default; the beta class annotation wins.
        let p = pvc(
            "x",
            json!({"volumeName": "v", "storageClassName": "field"}),
            json!({"accessModes": ["ReadWriteOncePod", "ReadOnlyMany", "ReadWriteOnce", "ReadWriteOnce"]}),
        );
        let mut p2 = p.clone();
        p2["metadata"]["annotations"] = json!({"volume.beta.kubernetes.io/storage-class": "beta"});
        let c = pvc_cells(&p);
        assert_eq!(
            [&c[1], &c[4], &c[5], &c[8]],
            ["Pending", "RWO,ROX,RWOP", "field", "Filesystem"]
        );
        assert_eq!(pvc_cells(&p2)[5], "beta");
    }

    /// `TestPrintPodDisruptionBudget`: `pdb1` minAvailable 22 prints `22 N/A 5`; `pdb2`
    /// maxUnavailable 11 prints `N/A 11 5`.
    #[test]
    fn print_pod_disruption_budget() {
        let a = json!({"metadata": {"name": "pdb1", "namespace": "ns1"}, "spec": {"minAvailable": 22},
            "status": {"disruptionsAllowed": 5}});
        let c = cells("poddisruptionbudgets", &a).unwrap();
        assert_eq!(c[1..4], [json!("22"), json!("N/A"), json!(5)]);
        let b = json!({"metadata": {"name": "pdb2", "namespace": "ns2"}, "spec": {"maxUnavailable": 11},
            "status": {"disruptionsAllowed": 5}});
        let c = cells("poddisruptionbudgets", &b).unwrap();
        assert_eq!(c[1..4], [json!("N/A"), json!("11"), json!(5)]);
        // kubesim: a percentage prints as written.
        let pct = json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "10%"}});
        assert_eq!(cells("poddisruptionbudgets", &pct).unwrap()[2], "10%");
    }

    /// `TestPrintControllerRevision`, `test1` to `test4`: `daemonset.apps/foo` for the
    /// controlling owner; `<none>` for a non-controlling owner, none, or nil.
    #[test]
    fn print_controller_revision() {
        let cr = |name: &str, owners: Value, revision: i64| json!({"metadata": {"name": name, "ownerReferences": owners}, "revision": revision});
        let cases = [
            (
                cr(
                    "test1",
                    json!([{"controller": true, "apiVersion": "apps/v1", "kind": "DaemonSet", "name": "foo"}]),
                    1,
                ),
                "daemonset.apps/foo",
            ),
            (
                cr(
                    "test2",
                    json!([{"controller": false, "kind": "ABC", "name": "foo"}]),
                    2,
                ),
                "<none>",
            ),
            (cr("test3", json!([]), 3), "<none>"),
            (cr("test4", Value::Null, 4), "<none>"),
        ];
        for (i, (c, want)) in cases.into_iter().enumerate() {
            let cells = cells("controllerrevisions", &c).unwrap();
            assert_eq!(cells[1..3], [json!(want), json!(i + 1)]);
        }
        // kubesim: a core owner has no group: `pod/p`.
        let core = cr(
            "t",
            json!([{"apiVersion": "v1", "kind": "Pod", "name": "p", "controller": true}]),
            5,
        );
        assert_eq!(cells("controllerrevisions", &core).unwrap()[1], "pod/p");
    }

    /// `TestPrintConfigMap`: 0 entries, 1, and 2 for one data and one binaryData entry.
    #[test]
    fn print_config_map() {
        let cm = |extra: Value| {
            let mut c = json!({"metadata": {"name": "configmap"}});
            if let (Some(c), Some(e)) = (c.as_object_mut(), extra.as_object()) {
                c.extend(e.clone());
            }
            cells("configmaps", &c).unwrap()[1].clone()
        };
        assert_eq!(cm(json!({})), 0);
        assert_eq!(cm(json!({"data": {"foo": "bar"}})), 1);
        assert_eq!(
            cm(json!({"data": {"foo": "bar"}, "binaryData": {"bin": "YmluYXJ5IGRhdGE="}})),
            2
        );
    }

    /// `TestPrintNetworkPolicy`: `<none>` for an empty spec, `foo=bar` for a pod selector.
    #[test]
    fn print_network_policy() {
        let np = json!({"metadata": {"name": "policy1"}, "spec": {}});
        assert_eq!(cells("networkpolicies", &np).unwrap()[1], "<none>");
        let np = json!({"metadata": {"name": "policy2"}, "spec": {"podSelector": {"matchLabels": {"foo": "bar"}}}});
        assert_eq!(cells("networkpolicies", &np).unwrap()[1], "foo=bar");
    }

    /// `TestPrintCronJob`: `0/5 * * * ?`, time zone `<none>` or `LOCAL`, `False`, 0 active;
    /// wide the job template's containers, images and `a=b`; `<none>` without a last
    /// schedule.
    #[test]
    fn print_cron_job() {
        let cj = json!({"metadata": {"name": "cronjob1"}, "spec": {"schedule": "0/5 * * * ?", "suspend": false,
            "jobTemplate": {"spec": {"completions": 2, "template": two_containers("job-"),
                "selector": {"matchLabels": {"a": "b"}}}}}});
        let c = cells("cronjobs", &cj).unwrap();
        assert_eq!(
            without_age(c, 6),
            [
                json!("cronjob1"),
                json!("0/5 * * * ?"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("<none>"),
                json!("fake-job-container1,fake-job-container2"),
                json!("fake-job-image1,fake-job-image2"),
                json!("a=b")
            ]
        );
        let mut local = cj.clone();
        local["spec"]["timeZone"] = json!("LOCAL");
        assert_eq!(cells("cronjobs", &local).unwrap()[2], "LOCAL");
        // kubesim: suspend defaults to false; active counts the references.
        let tz = json!({"metadata": {"name": "x"}, "spec": {"schedule": "@daily"},
            "status": {"active": [{"name": "x-1"}]}});
        let c = cells("cronjobs", &tz).unwrap();
        assert_eq!(c[3..5], [json!("False"), json!(1)]);
    }

    /// printResourceQuota (no case upstream): `name: used/hard` sorted by name, `limits.*`
    /// in LIMIT, an unreported use as `0`.
    #[test]
    fn quota_cells_split_requests_and_limits() {
        let q = json!({"metadata": {"name": "q"}, "status": {
            "hard": {"pods": "10", "cpu": "100m", "limits.memory": "1Gi", "limits.cpu": "2"},
            "used": {"pods": "1", "limits.cpu": "500m"}}});
        let c = quota_cells(&q);
        assert_eq!(
            [&c[1], &c[2]],
            [
                "cpu: 0/100m, pods: 1/10",
                "limits.cpu: 500m/2, limits.memory: 0/1Gi"
            ]
        );
    }

    /// printSecret, printServiceAccount, printStatefulSet and the default table of
    /// LimitRange (no cases upstream for these in printers_test.go's kinds here).
    #[test]
    fn secret_sa_sts_limits() {
        let sec = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}});
        let c = cells("secrets", &sec).unwrap();
        assert_eq!(c[1..3], [json!("kubernetes.io/tls"), json!(2)]);
        let sa = json!({"metadata": {"name": "default"}, "secrets": [{"name": "x"}]});
        assert_eq!(cells("serviceaccounts", &sa).unwrap().len(), 2);
        let sts = json!({"metadata": {"name": "db"}, "spec": {"replicas": 3, "template": two_containers("")},
            "status": {"readyReplicas": 2}});
        let c = cells("statefulsets", &sts).unwrap();
        assert_eq!([&c[1], &c[3]], ["2/3", "fake-container1,fake-container2"]);
        let lr =
            json!({"metadata": {"name": "limits", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        assert_eq!(
            cells("limitranges", &lr).unwrap()[1],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn every_kind_has_as_many_cells_as_columns() {
        for plural in [
            "deployments",
            "replicasets",
            "statefulsets",
            "daemonsets",
            "controllerrevisions",
            "jobs",
            "cronjobs",
            "services",
            "endpoints",
            "endpointslices",
            "configmaps",
            "secrets",
            "persistentvolumeclaims",
            "serviceaccounts",
            "limitranges",
            "resourcequotas",
            "networkpolicies",
            "horizontalpodautoscalers",
            "poddisruptionbudgets",
        ] {
            let cols = columns(plural, json!({}), json!({})).unwrap();
            let cells = cells(plural, &json!({"metadata": {"name": "x"}})).unwrap();
            assert_eq!(cols.len(), cells.len(), "{plural}");
        }
    }
}
