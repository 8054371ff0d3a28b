//! The only place that converts between the decision types of `api` and the types
//! `bindings` generates from `wit/`: requests to the guest, and a guest's answers back,
//! checked. An answer out of contract is the plugin's error, never passed on.

use http::StatusCode;

use super::api::{
    AddressRewriteRequest, AddressType, Cell, ColumnDefinition, LogContext, NodeAddress, PodRoute,
    PodRouteRequest, Table, TableRequest, Verb, Verdict,
};
use super::bindings::types as wit;

// ---- to the guest ----

/// Writes the request into `slot`, reusing the strings of the request it held before: a
/// pod-router is called on every pod request, and a warm instance's calls then allocate on
/// the host only when a string outgrows the one it replaces.
///
/// Labels and leaves cross as one text each (see `route-request` in `wit/plugin.wit`):
/// `key=value` lines and name lines joined by `\n`. An entry that would break that shape is
/// left out rather than sent garbled: a label whose key holds `=` or `\n` or whose value
/// holds `\n` (Kubernetes accepts no such label), a leaf name that is empty or holds `\n`
/// (the config refuses empty names; a plugin cannot answer with a leaf it was not shown).
pub(crate) fn fill_route_request<'a>(
    slot: &'a mut Option<wit::RouteRequest>,
    tenant: &str,
    r: &PodRouteRequest,
) -> &'a wit::RouteRequest {
    let verb = match r.verb {
        Verb::Exec => wit::Verb::Exec,
        Verb::Attach => wit::Verb::Attach,
        Verb::PortForward => wit::Verb::PortForward,
        Verb::Logs => wit::Verb::Logs,
        Verb::Get => wit::Verb::Get,
    };
    let w = slot.get_or_insert_with(|| wit::RouteRequest {
        tenant: String::new(),
        namespace: String::new(),
        pod: String::new(),
        container: None,
        verb,
        labels: None,
        leaves: String::new(),
    });
    set(&mut w.tenant, tenant);
    set(&mut w.namespace, &r.namespace);
    set(&mut w.pod, &r.pod);
    match (&r.container, &mut w.container) {
        (Some(c), Some(slot)) => set(slot, c),
        (Some(c), slot) => *slot = Some(c.clone()),
        (None, slot) => *slot = None,
    }
    w.verb = verb;
    match &r.labels {
        Some(labels) => {
            let out = w.labels.get_or_insert_with(String::new);
            out.clear();
            let fit = labels
                .iter()
                .filter(|(k, v)| !k.contains(['=', '\n']) && !v.contains('\n'));
            for (key, value) in fit {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(key);
                out.push('=');
                out.push_str(value);
            }
        }
        None => w.labels = None,
    }
    w.leaves.clear();
    for leaf in r
        .leaves
        .iter()
        .filter(|l| !l.is_empty() && !l.contains('\n'))
    {
        if !w.leaves.is_empty() {
            w.leaves.push('\n');
        }
        w.leaves.push_str(leaf);
    }
    w
}

/// Replaces `dst`'s text with `src`'s, in `dst`'s allocation when it is large enough.
fn set(dst: &mut String, src: &str) {
    dst.clear();
    dst.push_str(src);
}

fn address_type_to_wit(t: AddressType) -> wit::AddressType {
    match t {
        AddressType::Hostname => wit::AddressType::Hostname,
        AddressType::ExternalIp => wit::AddressType::ExternalIp,
        AddressType::InternalIp => wit::AddressType::InternalIp,
        AddressType::ExternalDns => wit::AddressType::ExternalDns,
        AddressType::InternalDns => wit::AddressType::InternalDns,
    }
}

fn address_type_from_wit(t: wit::AddressType) -> AddressType {
    match t {
        wit::AddressType::Hostname => AddressType::Hostname,
        wit::AddressType::ExternalIp => AddressType::ExternalIp,
        wit::AddressType::InternalIp => AddressType::InternalIp,
        wit::AddressType::ExternalDns => AddressType::ExternalDns,
        wit::AddressType::InternalDns => AddressType::InternalDns,
    }
}

pub(crate) fn address_request(tenant: &str, r: &AddressRewriteRequest) -> wit::AddressRequest {
    wit::AddressRequest {
        tenant: tenant.to_string(),
        node: r.node.clone(),
        leaf: r.leaf.clone(),
        gateway_address: r.gateway_address.clone(),
        addresses: r
            .addresses
            .iter()
            .map(|a| wit::NodeAddress {
                type_: address_type_to_wit(a.kind),
                address: a.address.clone(),
            })
            .collect(),
    }
}

pub(crate) fn log_context(tenant: &str, c: &LogContext) -> wit::LogContext {
    wit::LogContext {
        tenant: tenant.to_string(),
        namespace: c.namespace.clone(),
        pod: c.pod.clone(),
        container: c.container.clone(),
        leaf: c.leaf.clone(),
    }
}

/// Taken by value: the objects (up to a part of a long list, hundreds of KiB) move into
/// the call rather than being copied for it.
pub(crate) fn table_request(tenant: &str, r: TableRequest) -> wit::TableRequest {
    wit::TableRequest {
        tenant: tenant.to_string(),
        group: r.group,
        version: r.version,
        resource: r.resource,
        wide: r.wide,
        objects: r.objects,
    }
}

// ---- from the guest: an answer out of contract is the plugin's error, never passed on ----

pub(crate) fn pod_route(req: &PodRouteRequest, d: wit::RouteDecision) -> Result<PodRoute, String> {
    match d {
        wit::RouteDecision::Leaf(leaf) if req.leaves.contains(&leaf) => Ok(PodRoute::Leaf(leaf)),
        wit::RouteDecision::Leaf(leaf) => Err(format!(
            "answered leaf `{leaf}`, which is not one of the leaves it was given ({})",
            req.leaves.join(", ")
        )),
        wit::RouteDecision::Reject(r) => match StatusCode::from_u16(r.status) {
            Ok(status) if status.is_client_error() || status.is_server_error() => {
                Ok(PodRoute::Reject {
                    status,
                    message: r.message,
                })
            }
            _ => Err(format!(
                "rejected with status {}, which is not an error status (400-599)",
                r.status
            )),
        },
        wit::RouteDecision::Default => Ok(PodRoute::Default),
    }
}

pub(crate) fn node_addresses(list: Vec<wit::NodeAddress>) -> Result<Vec<NodeAddress>, String> {
    list.into_iter()
        .enumerate()
        .map(|(i, a)| {
            if a.address.trim().is_empty() {
                return Err(format!("address {i} is empty"));
            }
            Ok(NodeAddress {
                kind: address_type_from_wit(a.type_),
                address: a.address,
            })
        })
        .collect()
}

pub(crate) fn verdicts(lines: usize, v: wit::Verdicts) -> Result<Vec<Verdict>, String> {
    if v.actions.len() != lines {
        return Err(format!(
            "answered {} actions for {lines} lines; a log-filter answers one action per line",
            v.actions.len()
        ));
    }
    let replaces = v
        .actions
        .iter()
        .filter(|a| matches!(a, wit::Action::Replace))
        .count();
    if v.replacements.len() != replaces {
        return Err(format!(
            "answered {} replacements for {replaces} `replace` actions; a log-filter answers one replacement per `replace`",
            v.replacements.len()
        ));
    }
    let mut replacements = v.replacements.into_iter();
    Ok(v.actions
        .into_iter()
        .map(|a| match a {
            wit::Action::Keep => Verdict::Keep,
            wit::Action::Drop => Verdict::Drop,
            // Counted above: there is one for every `replace`.
            wit::Action::Replace => Verdict::Replace(replacements.next().unwrap_or_default()),
        })
        .collect())
}

pub(crate) fn table(t: Option<wit::Table>) -> Result<Option<Table>, String> {
    let Some(t) = t else { return Ok(None) };
    if t.columns.is_empty() {
        return Err("answered a table with no columns".into());
    }
    let columns = t
        .columns
        .into_iter()
        .map(|c| {
            if c.name.is_empty() {
                return Err("answered a column with no name".to_string());
            }
            Ok(ColumnDefinition {
                name: c.name,
                kind: match c.type_ {
                    wit::ColumnType::String => "string",
                    wit::ColumnType::Integer => "integer",
                    wit::ColumnType::Number => "number",
                    wit::ColumnType::Boolean => "boolean",
                    wit::ColumnType::Date => "date",
                },
                format: c.format,
                description: c.description,
                priority: c.priority,
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let rows = t
        .rows
        .into_iter()
        .enumerate()
        .map(|(i, row)| {
            if row.cells.len() != columns.len() {
                return Err(format!(
                    "row {i} has {} cells for {} columns",
                    row.cells.len(),
                    columns.len()
                ));
            }
            row.cells
                .into_iter()
                .map(|c| match c {
                    wit::Cell::Text(s) => Ok(Cell::Text(s)),
                    wit::Cell::Integer(n) => Ok(Cell::Integer(n)),
                    wit::Cell::Number(x) if x.is_finite() => Ok(Cell::Number(x)),
                    wit::Cell::Number(x) => Err(format!(
                        "row {i} has the number {x}, which JSON cannot carry"
                    )),
                    wit::Cell::Boolean(b) => Ok(Cell::Boolean(b)),
                    wit::Cell::None => Ok(Cell::None),
                })
                .collect()
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(Table { columns, rows }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(labels: Option<&[(&str, &str)]>, leaves: &[&str]) -> PodRouteRequest {
        PodRouteRequest {
            namespace: "shop".into(),
            pod: "web-1".into(),
            container: None,
            verb: Verb::Exec,
            labels: labels.map(|l| {
                l.iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect()
            }),
            leaves: leaves.iter().map(|l| l.to_string()).collect(),
        }
    }

    #[test]
    fn labels_and_leaves_cross_as_lines() {
        let mut slot = None;
        let req = route(
            Some(&[("site", "edge-3"), ("app", ""), ("example.com/tier", "web")]),
            &["leaf-1", "leaf-2"],
        );
        let w = fill_route_request(&mut slot, "team-a", &req);
        assert_eq!(w.tenant, "team-a");
        // Sorted by key, as the pod's label map is.
        assert_eq!(
            w.labels.as_deref(),
            Some("app=\nexample.com/tier=web\nsite=edge-3")
        );
        assert_eq!(w.leaves, "leaf-1\nleaf-2");

        // A known pod without labels, and no leaves: both empty, not absent.
        let w = fill_route_request(&mut slot, "team-a", &route(Some(&[]), &[]));
        assert_eq!((w.labels.as_deref(), w.leaves.as_str()), (Some(""), ""));
        let w = fill_route_request(&mut slot, "team-a", &route(None, &["x"]));
        assert_eq!((w.labels.as_deref(), w.leaves.as_str()), (None, "x"));
    }

    #[test]
    fn entries_that_would_break_the_lines_are_left_out() {
        let mut slot = None;
        let req = route(
            Some(&[("a=b", "1"), ("nl\nkey", "2"), ("ok", "3"), ("v", "x\ny")]),
            &["", "two\nlines", "leaf-1"],
        );
        let w = fill_route_request(&mut slot, "t", &req);
        assert_eq!(w.labels.as_deref(), Some("ok=3"));
        assert_eq!(w.leaves, "leaf-1");
    }

    #[test]
    fn a_warm_request_is_rewritten_in_place() {
        let mut slot = None;
        let long = route(Some(&[("site", "edge-333333")]), &["leaf-1", "leaf-2"]);
        let w = fill_route_request(&mut slot, "team-a", &long);
        let (labels, leaves) = (w.labels.as_ref().map(|l| l.as_ptr()), w.leaves.as_ptr());
        let short = route(Some(&[("site", "edge-1")]), &["leaf-2"]);
        let w = fill_route_request(&mut slot, "team-a", &short);
        assert_eq!(w.labels.as_deref(), Some("site=edge-1"));
        assert_eq!(w.leaves, "leaf-2");
        assert_eq!(w.labels.as_ref().map(|l| l.as_ptr()), labels);
        assert_eq!(w.leaves.as_ptr(), leaves);
    }

    fn answer(actions: Vec<wit::Action>, replacements: &[&str]) -> wit::Verdicts {
        wit::Verdicts {
            actions,
            replacements: replacements.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn replacements_go_to_the_replace_actions_in_order() {
        use wit::Action::{Drop, Keep, Replace};
        let v = verdicts(4, answer(vec![Replace, Keep, Drop, Replace], &["x", "y"])).unwrap();
        assert_eq!(
            v,
            [
                Verdict::Replace("x".into()),
                Verdict::Keep,
                Verdict::Drop,
                Verdict::Replace("y".into())
            ]
        );
    }

    #[test]
    fn answers_out_of_contract_are_refused() {
        use wit::Action::{Keep, Replace};
        let e = verdicts(2, answer(vec![Keep], &[])).unwrap_err();
        assert!(e.contains("1 actions for 2 lines"), "{e}");
        let e = verdicts(2, answer(vec![Keep, Replace], &[])).unwrap_err();
        assert!(e.contains("0 replacements for 1"), "{e}");
        let e = verdicts(1, answer(vec![Keep], &["extra"])).unwrap_err();
        assert!(e.contains("1 replacements for 0"), "{e}");
    }
}
