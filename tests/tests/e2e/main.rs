//! leafgate end to end over real sockets. One test binary for all of it, so a build links
//! wasmtime once rather than once per file. `plugins.rs` stays its own binary: it counts
//! the sockets its process holds, which other tests in the same process would disturb.

mod access_log;
mod connections;
mod dashboard;
mod docs;
mod examples;
mod fast_path;
mod gateway_api;
mod h2_raw;
mod hijack;
mod hostile;
mod ingress;
mod ingress_smoke;
mod kosmos;
mod kube_api;
mod kube_api_routers;
mod kube_auth;
mod kube_custom;
mod kube_events;
mod kube_resources;
mod kube_tables;
mod kube_tenant_resources;
mod kube_watch;
mod leaves;
mod log_stream;
mod node_api;
mod observability;
mod proxy;
mod reload;
mod vnodes;
