//! kube-apiserver's table printers for the kinds beyond pods that tests read with
//! `kubectl get`: Ingress (`NAME CLASS HOSTS ADDRESS PORTS AGE`), Event
//! (`LAST SEEN TYPE REASON OBJECT MESSAGE`, the rest wide) and Namespace
//! (`NAME STATUS AGE`). Cells are computed as
//! `pkg/printers/internalversion` does; `table` owns the Table around them.

use serde_json::{Value, json};

use crate::table::{age_of, col};

fn s<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

/// The printer's column definitions for `plural`, None when it prints NAME/AGE only.
pub fn columns(plural: &str, name: Value, age: Value) -> Option<Vec<Value>> {
    match plural {
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
        _ => None,
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
        "ingresses" => Some(ingress_cells(obj)),
        "events" => Some(event_cells(obj)),
        // `printNamespace`: name, `status.phase`, age.
        "namespaces" => Some(vec![
            json!(s(obj, "/metadata/name")),
            json!(s(obj, "/status/phase")),
            json!(age_of(obj, "/metadata/creationTimestamp")),
        ]),
        _ => None,
    }
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
    let mut set = std::collections::BTreeSet::new();
    for lb in ing
        .pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match (s(lb, "/ip"), s(lb, "/hostname")) {
            ("", "") => {}
            ("", h) => {
                set.insert(h.to_string());
            }
            (ip, _) => {
                set.insert(ip.to_string());
            }
        }
    }
    let joined = set.into_iter().collect::<Vec<_>>().join(",");
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
