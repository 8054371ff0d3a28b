//! leafgate-k8s-print: kubectl's pod table, written once for the gateway's built-in Table
//! and the `pods-table` plugin.
//!
//! - `pod`: the one Pod shape both read (serde, every field optional);
//! - `time`: RFC 3339 timestamps in, kubectl's ages (`HumanDuration`) out;
//! - `summary`: `printPod`'s walk over the containers: READY, STATUS, RESTARTS;
//! - `table`: kube-apiserver's pod columns and the row of each pod.
//!
//! No IO, not even a clock (callers pass "now"), and no dependency beyond serde: it builds
//! for the host and for wasm32-wasip2 alike.

pub mod pod;
pub mod summary;
pub mod table;
pub mod time;

pub use pod::{LEAF_ANNOTATION, ObjectMeta, Pod};
pub use summary::{Summary, summarize};
pub use table::{Column, POD_COLUMNS, PodRow};
pub use time::{human_age, parse_timestamp};
