//! The root-cluster bed of the virtual-node suites: a simulator in the root role with the
//! namespaces a real root has, the files a gateway of the root needs, and the config of
//! one replica with a node-api listener, leaf `leaf-1` and one `[[virtual_node]]`.

use kubesim::{Credential, KubeSim};
use serde_json::{Value, json};

use crate::certs::TestCa;
use crate::config::{Kubernetes, Leaf, Listener, Tenant, VirtualNode};

/// The object `kind` `ns/name` as the simulator stores it.
pub fn get(sim: &KubeSim, api_version: &str, kind: &str, ns: &str, name: &str) -> Option<Value> {
    let res = kubesim::api::resource_of(api_version, kind).ok()?;
    sim.store().get(res, ns, name).ok()
}

/// The Node `name`.
pub fn node(sim: &KubeSim, name: &str) -> Option<Value> {
    get(sim, "v1", "Node", "", name)
}

/// The root cluster: the namespaces a real one has (`kube-node-lease`) or the deployment
/// creates (`leafgate-system`) exist.
pub async fn root_sim(builder: kubesim::KubeSimBuilder) -> KubeSim {
    let root = builder.start().await.unwrap();
    for ns in ["kube-node-lease", "leafgate-system"] {
        root.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
            .unwrap();
    }
    root
}

/// The files a gateway of the root needs: the leaf's and the root's kubeconfigs, the
/// node-api certificate and the root's kubelet-client CA. `user` names the root
/// credential, so the root's request record tells replicas apart.
pub fn gateway_dir(root: &KubeSim, leaf: &KubeSim, user: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    leaf.kubeconfig(
        &Credential::ClientCert("leafgate".into()),
        &dir.path().join("leaf.kubeconfig"),
    )
    .unwrap();
    root.kubeconfig(
        &Credential::ClientCert(user.into()),
        &dir.path().join("root.kubeconfig"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("kubelet-client-ca.pem"),
        &root.kubelet_client_cert().ca_pem,
    )
    .unwrap();
    TestCa::new("node-api serving CA").issue(dir.path(), "node-api", &["127.0.0.1"]);
    dir
}

/// `[kubernetes]` on the root for replica `identity`: nodes publish `127.0.0.1` and the
/// `kubelet` listener's port, the Lease lives in `leafgate-system`, the heartbeat is 1 s
/// and the election short so takeover tests run in seconds (the defaults are 15/5/2 s).
pub fn kubernetes(identity: &str) -> Kubernetes {
    Kubernetes::new("root.kubeconfig")
        .gateway_address("127.0.0.1")
        .node_api_listener("kubelet")
        .set("namespace", "leafgate-system")
        .identity(identity)
        .set("heartbeat", "1s")
        .election("4s", "3s", "500ms")
}

/// A config of [`gateway_dir`]'s files: a node-api listener `kubelet`, leaf `leaf-1`,
/// `tenant`, `kubernetes` and one virtual node.
pub fn config(kubernetes: Kubernetes, tenant: Tenant, node: VirtualNode) -> crate::Config {
    crate::Config::new()
        .admin()
        .listener(
            Listener::node_api("kubelet")
                .tls("node-api.pem", "node-api-key.pem")
                .client_ca("kubelet-client-ca.pem"),
        )
        .leaf(Leaf::new("leaf-1", "leaf.kubeconfig"))
        .tenant(tenant)
        .kubernetes(kubernetes)
        .virtual_node(node)
}
