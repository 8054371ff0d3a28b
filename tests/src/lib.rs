//! The end-to-end test harness: leafgate in-process on `127.0.0.1:0`, real upstream servers,
//! real TLS with `rcgen` certificates, and clients that speak to the gateway the way users
//! do. Each test builds what it needs from these parts; nothing here fixes a port.

pub mod access_log;
pub mod backends;
pub mod binary;
pub mod cargo;
pub mod certs;
pub mod client;
pub mod config;
pub mod echo;
pub mod gateway;
pub mod gateway_api;
pub mod ingress;
pub mod kube;
pub mod plugins;
pub mod upstream;
pub mod vnodes;
pub mod wire;

pub use config::Config;
pub use gateway::TestGateway;
pub use upstream::TestUpstream;
