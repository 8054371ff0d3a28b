//! The four decisions as the rest of the gateway sees them: plain Rust types with serde
//! shapes (the `leafgate plugin run` JSON, the Kubernetes JSON for addresses and tables),
//! and [`LogBatch`], the shape a log stream crosses into the sandbox in.
//!
//! Knows nothing of WIT or wasmtime: `convert` turns these into the generated types and a
//! plugin's answer back into them, so the core never depends on `bindings`.

use std::collections::BTreeMap;

use http::StatusCode;
use serde::{Deserialize, Serialize};

/// What a request does to a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verb {
    Exec,
    Attach,
    PortForward,
    Logs,
    Get,
}

/// The question a pod-router answers: which leaf serves this pod's request?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodRouteRequest {
    pub namespace: String,
    pub pod: String,
    #[serde(default)]
    pub container: Option<String>,
    pub verb: Verb,
    /// The pod's labels when the gateway knows the pod.
    #[serde(default)]
    pub labels: Option<BTreeMap<String, String>>,
    /// The leaves the gateway knows; a `leaf` answer must name one of them.
    pub leaves: Vec<String>,
}

/// A pod-router's decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PodRoute {
    /// Send the request to this leaf (one of the request's `leaves`).
    Leaf(String),
    /// Answer the client with this status (400-599) and message.
    Reject {
        #[serde(with = "status_code")]
        status: StatusCode,
        message: String,
    },
    /// Do what the gateway does with no plugin.
    Default,
}

mod status_code {
    pub fn serialize<S: serde::Serializer>(
        s: &http::StatusCode,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        ser.serialize_u16(s.as_u16())
    }
}

/// Kubernetes' `NodeAddressType`, spelled as in the API.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum AddressType {
    Hostname,
    #[serde(rename = "ExternalIP")]
    ExternalIp,
    #[serde(rename = "InternalIP")]
    InternalIp,
    #[serde(rename = "ExternalDNS")]
    ExternalDns,
    #[serde(rename = "InternalDNS")]
    InternalDns,
}

/// One entry of a node's `status.addresses`, in the API's JSON shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeAddress {
    #[serde(rename = "type")]
    pub kind: AddressType,
    pub address: String,
}

/// The question an address-rewriter answers: what should this virtual node publish?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddressRewriteRequest {
    pub node: String,
    pub leaf: String,
    pub gateway_address: String,
    pub addresses: Vec<NodeAddress>,
}

/// Where a batch of log lines comes from.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct LogContext {
    pub namespace: String,
    pub pod: String,
    pub container: String,
    pub leaf: String,
}

/// What a log-filter says about one line.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Keep,
    Drop,
    Replace(String),
}

/// A batch of log lines as a log-filter receives it: the lines joined by `\n` in one
/// text, so the whole batch crosses into the sandbox as one string (one allocation and
/// one copy) instead of one string per line.
///
/// The contract that makes this work: a log line never contains `\n`. The gateway cuts
/// the leaf's stream at every newline before it batches, and [`LogBatch::push`] refuses
/// a line that holds one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogBatch {
    text: String,
    lines: usize,
}

/// A line given to a [`LogBatch`] contained a newline, which would make it two lines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a log line may not contain a newline (lines are cut at every `\\n`)")]
pub struct NewlineInLine;

impl LogBatch {
    pub fn new() -> Self {
        LogBatch::default()
    }

    /// An empty batch with room for `bytes` of text.
    pub fn with_capacity(bytes: usize) -> Self {
        LogBatch {
            text: String::with_capacity(bytes),
            lines: 0,
        }
    }

    /// A batch of these lines, in order.
    pub fn from_lines<S: AsRef<str>>(
        lines: impl IntoIterator<Item = S>,
    ) -> Result<Self, NewlineInLine> {
        let mut batch = LogBatch::new();
        for line in lines {
            batch.push(line.as_ref())?;
        }
        Ok(batch)
    }

    /// Appends one line (without its newline).
    pub fn push(&mut self, line: &str) -> Result<(), NewlineInLine> {
        if line.contains('\n') {
            return Err(NewlineInLine);
        }
        if self.lines > 0 {
            self.text.push('\n');
        }
        self.text.push_str(line);
        self.lines += 1;
        Ok(())
    }

    /// How many lines the batch holds.
    pub fn len(&self) -> usize {
        self.lines
    }

    pub fn is_empty(&self) -> bool {
        self.lines == 0
    }

    /// The lines, in order.
    pub fn lines(&self) -> impl Iterator<Item = &str> {
        // `split` of an empty text yields one empty item; an empty batch has no lines.
        self.text.split('\n').take(self.lines)
    }

    /// The batch as the plugin receives it: the lines joined by `\n`.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Empties the batch, keeping its allocation.
    pub fn clear(&mut self) {
        self.text.clear();
        self.lines = 0;
    }
}

/// The question a table-formatter answers: how do these objects print?
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableRequest {
    /// API group, empty for the core group.
    #[serde(default)]
    pub group: String,
    pub version: String,
    /// Plural resource name: `pods`.
    pub resource: String,
    #[serde(default)]
    pub wide: bool,
    /// The objects, as one JSON array.
    pub objects: String,
}

/// A `meta.k8s.io/v1` Table; serializes to the API's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub columns: Vec<ColumnDefinition>,
    pub rows: Vec<Vec<Cell>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnDefinition {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    #[serde(rename = "type")]
    pub kind: &'static str,
    pub format: String,
    pub description: String,
    pub priority: i32,
}

/// One cell: JSON string, number, boolean or null.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Cell {
    Text(String),
    Integer(i64),
    Number(f64),
    Boolean(bool),
    None,
}

impl Serialize for Table {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Row<'a> {
            cells: &'a [Cell],
        }
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            kind: &'static str,
            api_version: &'static str,
            metadata: BTreeMap<String, String>,
            column_definitions: &'a [ColumnDefinition],
            rows: Vec<Row<'a>>,
        }
        Wire {
            kind: "Table",
            api_version: "meta.k8s.io/v1",
            metadata: BTreeMap::new(),
            column_definitions: &self.columns,
            rows: self.rows.iter().map(|cells| Row { cells }).collect(),
        }
        .serialize(ser)
    }
}

/// Applies verdicts to their lines: kept lines move, replaced lines are swapped, dropped
/// lines go.
pub fn apply_verdicts(lines: Vec<String>, verdicts: Vec<Verdict>) -> Vec<String> {
    lines
        .into_iter()
        .zip(verdicts)
        .filter_map(|(line, v)| match v {
            Verdict::Keep => Some(line),
            Verdict::Drop => None,
            Verdict::Replace(text) => Some(text),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_its_lines_joined_by_newlines() {
        let batch = LogBatch::from_lines(["a", "", "c"]).unwrap();
        assert_eq!(batch.text(), "a\n\nc");
        assert_eq!(batch.len(), 3);
        assert_eq!(batch.lines().collect::<Vec<_>>(), ["a", "", "c"]);

        let one_empty = LogBatch::from_lines([""]).unwrap();
        assert_eq!((one_empty.len(), one_empty.lines().count()), (1, 1));
        let none = LogBatch::new();
        assert_eq!((none.len(), none.lines().count()), (0, 0));
    }

    #[test]
    fn a_line_with_a_newline_is_refused_and_leaves_the_batch_as_it_was() {
        let mut batch = LogBatch::from_lines(["a"]).unwrap();
        assert_eq!(batch.push("b\nc"), Err(NewlineInLine));
        assert_eq!(batch.text(), "a");
        assert_eq!(batch.len(), 1);
    }
}
