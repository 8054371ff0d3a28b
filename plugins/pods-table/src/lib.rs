//! pods-table: prints pods the way `kubectl get pods` does, plus the leaf each runs in.
//!
//! Columns: NAME, READY ("2/2", native sidecars counted), STATUS (kube-apiserver's
//! `printPod` reasoning: init containers and sidecars, waiting and terminated reasons,
//! SchedulingGated, NotReady, Terminating), RESTARTS ("5 (3m ago)"), AGE ("5m", "3h",
//! "2d"), LEAF (from the `leafgate.io/leaf` annotation the gateway sets); IP and NODE have
//! priority 1, so kubectl shows them only with `-o wide`, as the API server's own pod
//! printer does. Any resource but `pods` falls back to the gateway's default table.
//!
//! The cells come from `leafgate-k8s-print` (through `leafgate_plugin::k8s`), the printer
//! the gateway's built-in table uses; this plugin only chooses its columns: upper-case
//! names, LEAF before the wide IP and NODE. Every cell is text, RESTARTS included, as
//! kube-apiserver types its column (`5 (3m ago)` is no integer).

use leafgate_plugin::k8s::{self, Pod, PodRow, table};
use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct PodsTable;

fn column(name: &str, format: &str, description: &str, priority: i32) -> Column {
    Column {
        name: name.into(),
        type_: ColumnType::String,
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
            "The number of times the containers have been restarted, and how long ago the last one was.",
            0,
        ),
        column("AGE", "", "Time since the pod was created.", 0),
        column("LEAF", "", "The leaf cluster the pod runs in.", 0),
        column("IP", "", "IP address allocated to the pod.", 1),
        column("NODE", "", "Name of the node the pod is scheduled on.", 1),
    ]
}

/// A pod's row in this plugin's layout; every cell is worked out by the shared printer
/// (`leafgate-k8s-print`, the gateway's built-in table's too).
fn row(pod: &Pod, now: i64) -> Row {
    let cells = PodRow::new(pod, now);
    Row {
        cells: vec![
            Cell::Text(cells.name),
            Cell::Text(cells.ready),
            Cell::Text(cells.status),
            Cell::Text(cells.restarts),
            Cell::Text(cells.age),
            Cell::Text(table::or_none(pod.metadata.leaf())),
            Cell::Text(cells.ip),
            Cell::Text(cells.node),
        ],
    }
}

/// The pods of the request: the gateway sends a JSON array, read straight into the printer's
/// `Pod` (only the fields it prints are kept, the rest skipped as it is read). Anything else
/// goes through the SDK's reader, which also takes a `List` object: it buffers the whole
/// document first to try both shapes, which for 10,000 pods costs more than the plugin's
/// default memory and deadline allow.
fn parse(objects: &str) -> Result<Vec<Pod>, String> {
    if objects.trim_start().starts_with('[') {
        serde_json::from_str(objects).map_err(|e| format!("not a JSON array of pods: {e}"))
    } else {
        k8s::list_from_json(objects)
    }
}

impl Guest for PodsTable {
    fn format(req: TableRequest) -> Option<Table> {
        if req.resource != "pods" || !req.group.is_empty() {
            return None;
        }
        let pods: Vec<Pod> = match parse(&req.objects) {
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
