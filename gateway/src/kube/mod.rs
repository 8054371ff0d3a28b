//! The Kubernetes half: the kubelet node API leafgate answers for virtual nodes, and the
//! leaf clusters it forwards to.

pub mod kubelet;
pub mod logs;
