//! Validation: the raw TOML tree checked for meaning (names unique, references resolved,
//! addresses, hosts, paths, rates) into the typed `Config`, every problem reported with its
//! key and line:column, all at once.
//!
//! Reads `raw` and builds `model`; neither imports from here. One file per section, each
//! adding the [`Validator`] methods of its section:
//! - `config`: the whole file, section by section, in a fixed order;
//! - `listener`; `tenant` (tenants and leaves, with `plugins` and `kubeconfig`);
//!   `route` (routes and their upstreams); `kubernetes` (the root cluster, Ingress,
//!   virtual nodes);
//! - `names`: names that must be unique and routes that must not overlap;
//! - `access_log`: `[access_log]` and the listeners' own tables over it;
//! - `request_id`: `[request_id]`;
//! - `validator` (what every section shares) and `pem` (the PEM files a section names).

mod access_log;
mod config;
mod kubeconfig;
mod kubernetes;
mod listener;
mod names;
mod pem;
mod plugins;
mod request_id;
mod route;
mod tenant;
mod validator;

pub use pem::certified_key_from_pem;
pub(super) use route::{Prior, RouteContext};
pub(super) use validator::Validator;
