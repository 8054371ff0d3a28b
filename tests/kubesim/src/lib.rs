//! kubesim: a kube-apiserver simulator for leafgate's tests.
//!
//! It plays one cluster's API server on `127.0.0.1:0`, faithful wherever leafgate touches the
//! API (the facts in `shared/reference/kubernetes-protocols.md`), and is itself proven
//! against the real `kubectl` before leafgate stands in between. Where kubectl and the
//! simulator disagree, the simulator is wrong.
//!
//! - `server`: `KubeSim` (TLS, authentication, start/stop/restart, kubeconfigs, request record).
//! - `api`: the router (discovery, CRUD, list/watch, Table, logs, streaming hand-off).
//! - `access`: `SubjectAccessReview`, answered from a policy the test sets.
//! - `store`: objects, resourceVersions, watch history, log buffers.
//! - `select`, `patch`, `table` (+ `printers`: the Pod, Ingress and Event columns; `kinds`:
//!   the workload, service, config, storage, autoscaling and policy kinds' columns; `crd`:
//!   the custom resources' printer columns, by `jsonpath`), `discovery`, `resources`,
//!   `query`: the pieces they use. The Gateway API kinds (GatewayClass, Gateway,
//!   HTTPRoute, ReferenceGrant) are served as their gateway-api v1.6.1 CRDs declare them.
//! - `defaults`: kube-apiserver's defaulting of the workload, batch, storage and
//!   autoscaling kinds' specs, applied to every write.
//! - `fixtures`: the catalogue of pod shapes and what `printPod` prints for each.
//! - `kubectl`: which real kubectl binaries tests run against.
//! - `status`: `metav1.Status` bodies, as kube-apiserver writes them.
//! - `remote`: the streaming pod subresources (`exec`, `attach`, `portforward`) over SPDY/3.1
//!   and WebSocket.
//! - `nodeproxy`: the root role, proxying pod subresources to the node's kubelet.
//! - `kubelet`: the kubelet role, serving the kubelet's node API for its own store's pods.
//! - `client`: exec and port-forward clients (SPDY, WebSocket) for tests.
//! - `http1`, `tls`: hand-written HTTP/1.1 heads for upgrades; rustls configs from PEM.

pub mod access;
pub mod api;
pub mod client;
pub mod crd;
pub mod defaults;
pub mod discovery;
pub mod fixtures;
pub mod http1;
pub mod jsonpath;
pub mod kinds;
pub mod kubectl;
pub mod kubelet;
pub mod nodeproxy;
pub mod patch;
pub mod printers;
pub mod query;
pub mod remote;
pub mod resources;
pub mod select;
pub mod server;
pub mod status;
pub mod store;
pub mod table;
pub mod testkit;
pub mod tls;

pub use nodeproxy::KubeletClientCert;
pub use server::{Credential, KubeSim, KubeSimBuilder, Recorded, SimError};
pub use store::Store;
