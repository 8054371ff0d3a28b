//! The hostile suite: each module tries one area of tenant isolation the way a hostile
//! tenant, Ingress author or client certificate would (issue 23), over real sockets and TLS
//! against the simulator, and proves the hole closed.

mod admin;
mod gateway_api;
mod ingress;
mod leaf_calls;
mod logs;
mod node_api;
mod revocation;
