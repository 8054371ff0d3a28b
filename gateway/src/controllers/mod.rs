//! The root-cluster drivers: long-running tasks that read the snapshot and act through
//! [`Control`](crate::control::Control), beside `admin` and `watch`.
//!
//! - `election`: the leader election on a `coordination.k8s.io` Lease; one replica writes.
//! - `vnodes`: while this replica leads, the `[[virtual_node]]` Nodes, their status and
//!   heartbeat Leases in the root cluster.
//! - `ingress`: the route provider of both Kubernetes sources, Ingress and the Gateway API:
//!   one set of reflectors, the debounced rebuild that swaps their routes into the
//!   snapshot (and has the Gateways' addresses bound), and the leader's status and Event
//!   writers.
//!
//! The Kubernetes data they work with (leaves, the pod index, the Ingress model, the node
//! objects) is in `k8s`, which imports nothing from here.

pub mod election;
pub mod ingress;
pub mod vnodes;
