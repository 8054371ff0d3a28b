//! pods-table: prints pods the way `kubectl get pods` does, plus the leaf each runs in.
//!
//! Columns: NAME, READY ("1/2"), STATUS (kubectl's reasoning: init containers, waiting and
//! terminated reasons, Terminating), RESTARTS (summed over containers), AGE ("5m", "3h",
//! "2d"), LEAF (from the `leafgate.io/leaf` annotation the gateway sets); IP and NODE have
//! priority 1, so kubectl shows them only with `-o wide`, as the API server's own pod
//! printer does. Any resource but `pods` falls back to the gateway's default table.

use leafgate_plugin::k8s::{self, ContainerStatus, Pod};
use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct PodsTable;

fn column(name: &str, format: &str, description: &str, priority: i32) -> Column {
    let type_ = if name == "RESTARTS" {
        ColumnType::Integer
    } else {
        ColumnType::String
    };
    Column {
        name: name.into(),
        type_,
        format: format.into(),
        description: description.into(),
        priority,
    }
}

fn columns() -> Vec<Column> {
    vec![
        column("NAME", "name", "Name must be unique within a namespace.", 0),
        column("READY", "", "The number of containers that are ready.", 0),
        column(
            "STATUS",
            "",
            "The aggregate status of the containers in this pod.",
            0,
        ),
        column(
            "RESTARTS",
            "",
            "The number of times the containers have been restarted.",
            0,
        ),
        column("AGE", "", "Time since the pod was created.", 0),
        column("LEAF", "", "The leaf cluster the pod runs in.", 0),
        column("IP", "", "IP address allocated to the pod.", 1),
        column("NODE", "", "Name of the node the pod is scheduled on.", 1),
    ]
}

/// Why a container is not simply running, as kubectl words it; `None` when it is.
fn container_reason(c: &ContainerStatus) -> Option<String> {
    if let Some(reason) = c.state.waiting.as_ref().and_then(|w| w.reason.clone()) {
        return Some(reason).filter(|r| !r.is_empty());
    }
    let t = c.state.terminated.as_ref()?;
    Some(match t.reason.as_deref() {
        Some(r) if !r.is_empty() => r.to_string(),
        _ if t.signal != 0 => format!("Signal:{}", t.signal),
        _ => format!("ExitCode:{}", t.exit_code),
    })
}

fn status(pod: &Pod) -> String {
    let mut reason = pod
        .status
        .reason
        .clone()
        .filter(|r| !r.is_empty())
        .or_else(|| pod.status.phase.clone())
        .unwrap_or_else(|| "Unknown".into());
    let mut initializing = false;
    for (i, c) in pod.status.init_container_statuses.iter().enumerate() {
        if let Some(t) = &c.state.terminated
            && t.exit_code == 0
        {
            continue;
        }
        initializing = true;
        let waiting = c.state.waiting.as_ref().and_then(|w| w.reason.as_deref());
        reason = match (&c.state.terminated, waiting) {
            (Some(_), _) => format!("Init:{}", container_reason(c).unwrap_or_default()),
            (None, Some(r)) if !r.is_empty() && r != "PodInitializing" => format!("Init:{r}"),
            _ => format!("Init:{i}/{}", pod.spec.init_containers.len()),
        };
        break;
    }
    if !initializing {
        let mut has_running = false;
        for c in pod.status.container_statuses.iter().rev() {
            match container_reason(c) {
                Some(r) => reason = r,
                None if c.ready && c.state.running.is_some() => has_running = true,
                None => {}
            }
        }
        if reason == "Completed" && has_running {
            reason = "Running".into();
        }
    }
    if pod.metadata.deletion_timestamp.is_some() {
        reason = if pod.status.reason.as_deref() == Some("NodeLost") {
            "Unknown".into()
        } else {
            "Terminating".into()
        };
    }
    reason
}

fn row(pod: &Pod, now: i64) -> Row {
    let text = |s: Option<&str>| Cell::Text(s.filter(|s| !s.is_empty()).unwrap_or("<none>").into());
    let ready = pod
        .status
        .container_statuses
        .iter()
        .filter(|c| c.ready)
        .count();
    let restarts: i64 = pod
        .status
        .container_statuses
        .iter()
        .map(|c| c.restart_count)
        .sum();
    let age = pod
        .metadata
        .creation_timestamp
        .as_deref()
        .and_then(k8s::parse_timestamp)
        .map_or_else(
            || "<unknown>".to_string(),
            |created| k8s::human_age(now - created),
        );
    Row {
        cells: vec![
            Cell::Text(pod.metadata.name.clone()),
            Cell::Text(format!("{ready}/{}", pod.spec.containers.len())),
            Cell::Text(status(pod)),
            Cell::Integer(restarts),
            Cell::Text(age),
            text(pod.metadata.leaf()),
            text(pod.status.pod_ip.as_deref()),
            text(pod.spec.node_name.as_deref()),
        ],
    }
}

impl Guest for PodsTable {
    fn format(req: TableRequest) -> Option<Table> {
        if req.resource != "pods" || !req.group.is_empty() {
            return None;
        }
        let pods: Vec<Pod> = match k8s::list_from_json(&req.objects) {
            Ok(pods) => pods,
            Err(e) => {
                leafgate_plugin::log::warn(&format!("pods-table: {e}; using the default table"));
                return None;
            }
        };
        let now = k8s::now();
        Some(Table {
            columns: columns(),
            rows: pods.iter().map(|p| row(p, now)).collect(),
        })
    }
}

leafgate_plugin::export_table_formatter!(PodsTable);
