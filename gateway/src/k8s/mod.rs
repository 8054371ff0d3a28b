//! The Kubernetes data and clients: the leaf clusters leafgate forwards to and the live
//! index of the pods they run, the kubelet URL grammar, log filtering, the Ingress model,
//! and kube-apiserver's `Status`.
//!
//! - `leaf/`: one leaf cluster: its TLS (`leaf::tls`), credentials (`leaf::auth`),
//!   `kube::Client` and raw upstream; its `/version`, kept current (`leaf::version`); the
//!   pod reflector that feeds the index and the leaf's change `feed` (`leaf::pods`); its
//!   events (bounded) and namespaces, kept as raw JSON by `leaf::raw`'s reflector
//!   (`leaf::events`, `leaf::namespaces`).
//! - `index`: the pod index (which leaves hold `ns/name`); `feed`: a leaf's pods by
//!   namespace and their recent changes, for lists and watches; `raw_pod`: a pod as the
//!   leaf sent it.
//! - `kubelet`, `logs`, `run`: the node API's routes and verbs, the log filter stream, and
//!   `/run`'s exec over WebSocket.
//! - `names`: namespace, pod and container names as the API validates them, checked before
//!   anything uses a name from a request.
//! - `status`: kube-apiserver's `metav1.Status`, the one place its JSON is written.
//! - `access`: SubjectAccessReviews at the root cluster (who may call the node API), cached.
//! - `root`: the root cluster's client; `vnode`: the virtual Node objects (pure).
//! - `ingress`: the Ingress model (pure) and its status and Event writers.
//! - `gateway`: the Gateway API translation (pure), what the proxy serves of it, and the
//!   leader's status writes.
//!
//! Nothing here imports `snapshot`, `control`, `listener` or `controllers`: the drivers
//! that run on the root cluster are `controllers`, and they use this module.

pub mod access;
pub mod feed;
#[allow(
    dead_code,
    reason = "the Gateway API provider's translation; wired into the snapshot by the next step of issue 46"
)]
pub mod gateway;
pub mod index;
pub mod ingress;
pub mod kubelet;
pub mod leaf;
pub mod logs;
pub mod names;
pub mod raw_pod;
pub mod root;
pub mod run;
pub mod status;
pub mod vnode;

pub use feed::{Change, ChangeKind, Feed};
pub use index::{Held, LeafSlot, PodIndex};
pub use leaf::{Leaf, LeafError};
pub use raw_pod::RawPod;
