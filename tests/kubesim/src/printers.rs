//! kube-apiserver's table printers for the kinds tests read with `kubectl get`: Pod
//! (`printPod`: `NAME READY STATUS RESTARTS AGE`, then IP, NODE, NOMINATED NODE, READINESS
//! GATES wide), Ingress (`NAME CLASS HOSTS ADDRESS PORTS AGE`), Event (`LAST SEEN TYPE
//! REASON OBJECT MESSAGE`, the rest wide) and Namespace (`NAME STATUS AGE`); the other
//! built-in kinds' printers are in `kinds`. Cells are
//! computed as
//! `pkg/printers/internalversion` does; `table` owns the Table around them.
//!
//! The pod printer is the oracle leafgate's own (`crates/k8s-print`) is tested against, so
//! it is written separately, straight from the reference (section 9) over the raw JSON, and
//! shares no code with it: two printers agreeing with each other and with the hand-worked
//! catalogue (`fixtures`) is the evidence.

use serde_json::{Value, json};
use time::OffsetDateTime;

use crate::table::{age_of, col, human_duration, list, load_balancer_ingress, s, when};

/// The printer's column definitions for `plural`, None when it prints NAME/AGE only.
pub fn columns(plural: &str, name: Value, age: Value) -> Option<Vec<Value>> {
    match plural {
        "pods" => Some(vec![
            name,
            col(
                "Ready",
                "string",
                "",
                "The aggregate readiness state of this pod for accepting traffic.",
                0,
            ),
            col(
                "Status",
                "string",
                "",
                "The aggregate status of the containers in this pod.",
                0,
            ),
            col(
                "Restarts",
                "string",
                "",
                "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
                0,
            ),
            age,
            col(
                "IP",
                "string",
                "",
                "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
                1,
            ),
            col(
                "Node",
                "string",
                "",
                "NodeName is a request to schedule this pod onto a specific node. If it is non-empty, the scheduler simply schedules this pod onto that node, assuming that it fits resource requirements.",
                1,
            ),
            col(
                "Nominated Node",
                "string",
                "",
                "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot schedule right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
                1,
            ),
            col(
                "Readiness Gates",
                "string",
                "",
                "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
                1,
            ),
        ]),
        "ingresses" => Some(vec![
            name,
            col(
                "Class",
                "string",
                "",
                "The name of the IngressClass resource that should be used for additional configuration",
                0,
            ),
            col(
                "Hosts",
                "string",
                "",
                "Hosts that incoming requests are matched against before the ingress rule",
                0,
            ),
            col(
                "Address",
                "string",
                "",
                "Address is a list containing ingress points for the load-balancer",
                0,
            ),
            col(
                "Ports",
                "string",
                "",
                "Ports of TLS configurations that open",
                0,
            ),
            age,
        ]),
        "namespaces" => Some(vec![
            name,
            col("Status", "string", "", "The status of the namespace", 0),
            age,
        ]),
        "events" => Some(vec![
            col(
                "Last Seen",
                "string",
                "",
                "The time at which the most recent occurrence of this event was recorded.",
                0,
            ),
            col(
                "Type",
                "string",
                "",
                "Type of this event (Normal, Warning), new types could be added in the future",
                0,
            ),
            col(
                "Reason",
                "string",
                "",
                "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
                0,
            ),
            col(
                "Object",
                "string",
                "",
                "The object that this event is about.",
                0,
            ),
            col(
                "Subobject",
                "string",
                "",
                "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].",
                1,
            ),
            col(
                "Source",
                "string",
                "",
                "The component reporting this event. Should be a short machine understandable string.",
                1,
            ),
            col(
                "Message",
                "string",
                "",
                "A human-readable description of the status of this operation.",
                0,
            ),
            col(
                "First Seen",
                "string",
                "",
                "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
                1,
            ),
            col(
                "Count",
                "string",
                "",
                "The number of times this event has occurred.",
                1,
            ),
            wide(name),
        ]),
        _ => crate::kinds::columns(plural, name, age),
    }
}

/// `column` shown with `-o wide` only.
fn wide(mut column: Value) -> Value {
    column["priority"] = json!(1);
    column
}

/// The row cells for `obj` of `plural`, None when it prints NAME/AGE only.
pub fn cells(plural: &str, obj: &Value) -> Option<Vec<Value>> {
    match plural {
        "pods" => Some(pod_cells(obj, OffsetDateTime::now_utc())),
        "ingresses" => Some(ingress_cells(obj)),
        "events" => Some(event_cells(obj)),
        // `printNamespace`: name, `status.phase`, age.
        "namespaces" => Some(vec![
            json!(s(obj, "/metadata/name")),
            json!(s(obj, "/status/phase")),
            json!(age_of(obj, "/metadata/creationTimestamp")),
        ]),
        _ => crate::kinds::cells(plural, obj),
    }
}

/// `printPod`'s cells for `pod`, its ages counted to `now`.
pub fn pod_cells(pod: &Value, now: OffsetDateTime) -> Vec<Value> {
    let ago = |t: OffsetDateTime| human_duration((now - t).whole_seconds());
    let list = |p: &str| list(pod, p);
    let count = |c: &Value| c.get("restartCount").and_then(Value::as_i64).unwrap_or(0);
    let conditions = list("/status/conditions");
    let condition_is_true = |ty: &str| {
        conditions
            .iter()
            .any(|c| s(c, "/type") == ty && s(c, "/status") == "True")
    };
    // `restartPolicy: Always` on an init container: a native sidecar.
    let init_specs = list("/spec/initContainers");
    let restartable = |name: &str| {
        init_specs
            .iter()
            .any(|c| s(c, "/name") == name && s(c, "/restartPolicy") == "Always")
    };

    let phase = s(pod, "/status/phase");
    let mut reason = match s(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    for c in conditions {
        if s(c, "/type") == "PodScheduled" && s(c, "/reason") == "SchedulingGated" {
            reason = "SchedulingGated".into();
        }
    }
    let total = list("/spec/containers").len()
        + init_specs
            .iter()
            .filter(|c| s(c, "/restartPolicy") == "Always")
            .count();
    let mut ready = 0;
    let (mut restarts, mut sidecar_restarts) = (0, 0);
    let (mut last, mut sidecar_last): (Option<OffsetDateTime>, Option<OffsetDateTime>) =
        (None, None);

    let mut initializing = false;
    let init_total = init_specs.len();
    for (i, c) in list("/status/initContainerStatuses").iter().enumerate() {
        let finished = when(c, "/lastState/terminated/finishedAt");
        restarts += count(c);
        last = last.max(finished);
        let sidecar = restartable(s(c, "/name"));
        if sidecar {
            sidecar_restarts += count(c);
            sidecar_last = sidecar_last.max(finished);
        }
        let terminated = c.pointer("/state/terminated");
        let exit = |t: &Value| t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
        if terminated.is_some_and(|t| exit(t) == 0) {
            continue;
        }
        if sidecar && c.get("started").and_then(Value::as_bool) == Some(true) {
            if c.get("ready").and_then(Value::as_bool) == Some(true) {
                ready += 1;
            }
            continue;
        }
        initializing = true;
        let waiting = s(c, "/state/waiting/reason");
        reason = if let Some(t) = terminated {
            let signal = t.get("signal").and_then(Value::as_i64).unwrap_or(0);
            match s(t, "/reason") {
                "" if signal != 0 => format!("Init:Signal:{signal}"),
                "" => format!("Init:ExitCode:{}", exit(t)),
                r => format!("Init:{r}"),
            }
        } else if !waiting.is_empty() && waiting != "PodInitializing" {
            format!("Init:{waiting}")
        } else {
            format!("Init:{i}/{init_total}")
        };
        break;
    }

    if !initializing || condition_is_true("Initialized") {
        restarts = sidecar_restarts;
        last = sidecar_last;
        let mut has_running = false;
        for c in list("/status/containerStatuses").iter().rev() {
            restarts += count(c);
            last = last.max(when(c, "/lastState/terminated/finishedAt"));
            let waiting = s(c, "/state/waiting/reason");
            let terminated = c.pointer("/state/terminated");
            if !waiting.is_empty() {
                reason = waiting.to_string();
            } else if let Some(t) = terminated {
                let signal = t.get("signal").and_then(Value::as_i64).unwrap_or(0);
                let code = t.get("exitCode").and_then(Value::as_i64).unwrap_or(0);
                reason = match s(t, "/reason") {
                    "" if signal != 0 => format!("Signal:{signal}"),
                    "" => format!("ExitCode:{code}"),
                    r => r.to_string(),
                };
            } else if c.get("ready").and_then(Value::as_bool) == Some(true)
                && c.pointer("/state/running").is_some()
            {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if condition_is_true("Ready") {
                "Running".into()
            } else {
                "NotReady".into()
            };
        }
    }

    if pod.pointer("/metadata/deletionTimestamp").is_some() {
        if s(pod, "/status/reason") == "NodeLost" {
            reason = "Unknown".into();
        } else if phase != "Succeeded" && phase != "Failed" {
            reason = "Terminating".into();
        }
    }

    let restarts_cell = match last {
        Some(t) if restarts != 0 => format!("{restarts} ({} ago)", ago(t)),
        _ => restarts.to_string(),
    };
    let age = when(pod, "/metadata/creationTimestamp").map_or_else(|| "<unknown>".into(), ago);
    // The v1 -> internal conversion fills podIPs from podIP when only that is set.
    let ip = match list("/status/podIPs").first() {
        Some(first) => s(first, "/ip"),
        None => s(pod, "/status/podIP"),
    };
    let none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let gates = list("/spec/readinessGates");
    let gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let met = gates
            .iter()
            .filter(|g| {
                conditions
                    .iter()
                    .find(|c| s(c, "/type") == s(g, "/conditionType"))
                    .is_some_and(|c| s(c, "/status") == "True")
            })
            .count();
        format!("{met}/{}", gates.len())
    };
    vec![
        json!(s(pod, "/metadata/name")),
        json!(format!("{ready}/{total}")),
        json!(reason),
        json!(restarts_cell),
        json!(age),
        json!(none(ip)),
        json!(none(s(pod, "/spec/nodeName"))),
        json!(none(s(pod, "/status/nominatedNodeName"))),
        json!(gates),
    ]
}

fn ingress_cells(ing: &Value) -> Vec<Value> {
    let class = match s(ing, "/spec/ingressClassName") {
        "" => "<none>",
        c => c,
    };
    vec![
        json!(s(ing, "/metadata/name")),
        json!(class),
        json!(hosts(ing)),
        json!(address(ing)),
        json!(if ing
            .pointer("/spec/tls")
            .and_then(Value::as_array)
            .is_some_and(|t| !t.is_empty())
        {
            "80, 443"
        } else {
            "80"
        }),
        json!(age_of(ing, "/metadata/creationTimestamp")),
    ]
}

/// `formatHosts`: the first three rule hosts, then `+ N more...`; `*` when none.
fn hosts(ing: &Value) -> String {
    let rules = ing
        .pointer("/spec/rules")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let mut list = Vec::new();
    let mut more = false;
    for rule in &rules {
        if list.len() == 3 {
            more = true;
        }
        let host = s(rule, "/host");
        if !more && !host.is_empty() {
            list.push(host);
        }
    }
    if list.is_empty() {
        return "*".into();
    }
    let joined = list.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - 3)
    } else {
        joined
    }
}

/// `ingressLoadBalancerStatusStringer`, not wide: the sorted set of IPs (else host names),
/// cut to 16 characters with `...`.
fn address(ing: &Value) -> String {
    let joined = load_balancer_ingress(ing).join(",");
    if joined.len() > 16 {
        format!("{}...", &joined[..13])
    } else {
        joined
    }
}

fn event_cells(ev: &Value) -> Vec<Value> {
    // `translateTimestampSince` of lastTimestamp, falling back to eventTime then
    // firstTimestamp as printEvent does.
    let last = ["/lastTimestamp", "/eventTime", "/firstTimestamp"]
        .iter()
        .find(|p| !s(ev, p).is_empty())
        .map_or_else(|| "<unknown>".to_string(), |p| age_of(ev, p));
    let first = match s(ev, "/firstTimestamp") {
        "" => "<unknown>".to_string(),
        _ => age_of(ev, "/firstTimestamp"),
    };
    let source = match (s(ev, "/source/component"), s(ev, "/source/host")) {
        ("", _) => s(ev, "/reportingComponent").to_string(),
        (c, "") => c.to_string(),
        (c, h) => format!("{c}, {h}"),
    };
    vec![
        json!(last),
        json!(s(ev, "/type")),
        json!(s(ev, "/reason")),
        json!(format!(
            "{}/{}",
            s(ev, "/involvedObject/kind").to_lowercase(),
            s(ev, "/involvedObject/name")
        )),
        json!(s(ev, "/involvedObject/fieldPath")),
        json!(source),
        json!(s(ev, "/message").trim()),
        json!(first),
        json!(ev.get("count").and_then(Value::as_i64).unwrap_or(0)),
        json!(s(ev, "/metadata/name")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::{FIXTURE_NOW, pod_shapes};

    /// Every shape of the catalogue prints as worked out by hand, wide columns included.
    #[test]
    fn pods_print_as_the_catalogue_says() {
        let now = OffsetDateTime::from_unix_timestamp(FIXTURE_NOW).unwrap();
        for shape in pod_shapes() {
            let cells = pod_cells(&shape.pod, now);
            let p = &shape.printed;
            let want = [
                shape.name(),
                &p.ready,
                &p.status,
                &p.restarts,
                "150m",
                &p.ip,
                &p.node,
                &p.nominated,
                &p.gates,
            ];
            assert_eq!(cells, want, "{}: {}", shape.name(), shape.about);
        }
    }

    #[test]
    fn pod_row() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}, {"name": "b"}], "nodeName": "n1"},
            "status": {"phase": "Running", "podIP": "10.0.0.1", "containerStatuses": [
                {"name": "a", "ready": true, "restartCount": 1, "state": {"running": {}}},
                {"name": "b", "ready": false, "restartCount": 0, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]}});
        let r = cells("pods", &pod).unwrap();
        assert_eq!(r[1], "1/2");
        assert_eq!(r[2], "CrashLoopBackOff");
        // A string column, as kube-apiserver's: `N` alone while no restart is dated.
        assert_eq!(r[3], "1");
        assert_eq!(r[5], "10.0.0.1");
        assert_eq!(r[6], "n1");
    }

    #[test]
    fn ingress_row() {
        let ing = json!({"metadata": {"name": "web"}, "spec": {
            "ingressClassName": "leafgate",
            "rules": [{"host": "a.example"}, {"host": "b.example"}, {}, {"host": "c.example"}, {"host": "d.example"}],
            "tls": [{"secretName": "x"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.7"}]}}});
        let c = ingress_cells(&ing);
        assert_eq!(c[1], "leafgate");
        assert_eq!(c[2], "a.example,b.example,c.example + 2 more...");
        assert_eq!(c[3], "203.0.113.7");
        assert_eq!(c[4], "80, 443");
        let bare = json!({"metadata": {"name": "x"}, "spec": {}});
        let c = ingress_cells(&bare);
        assert_eq!(
            (c[1].as_str(), c[2].as_str(), c[3].as_str(), c[4].as_str()),
            (Some("<none>"), Some("*"), Some(""), Some("80"))
        );
        let long = json!({"status": {"loadBalancer": {"ingress": [{"hostname": "lb.very-long.example"}]}}});
        // The first 13 characters, then `...`.
        assert_eq!(address(&long), "lb.very-long....");
    }

    #[test]
    fn event_row() {
        let ev = json!({"metadata": {"name": "web.1"}, "type": "Warning", "reason": "InvalidAnnotation",
            "involvedObject": {"kind": "Ingress", "name": "web"}, "message": "bad\n", "count": 2,
            "source": {"component": "leafgate"}});
        let c = event_cells(&ev);
        assert_eq!(c[0], "<unknown>");
        assert_eq!(c[3], "ingress/web");
        assert_eq!(c[5], "leafgate");
        assert_eq!(c[6], "bad");
        assert_eq!(c[8], 2);
    }
}
