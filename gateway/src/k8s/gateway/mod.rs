//! leafgate as a Gateway API implementation (`[kubernetes.gateway]`): the pure
//! translation, as the Ingress model is one (`k8s::ingress`), what the proxy serves of it,
//! and the leader's status writes. The provider that runs it (reflectors, builds, the
//! leader) is `controllers::ingress`, beside the Ingress source.
//!
//! A line, each step importing only the ones before it; no I/O, no clock:
//! - types: `types` (the Gateway API objects, as serde types) and `model` (the settings
//!   and objects in, the route entries and statuses out);
//! - reading: `hostnames` (validity, intersection), `grants` (ReferenceGrant checks),
//!   `selector` (label selectors), `listeners` (a Gateway's listeners and conditions),
//!   `rules` (an HTTPRoute's matches, filters, backends and timeouts);
//! - translation: `entries` (one match as a route entry, and its precedence key),
//!   `translate` (classes, addresses, one route's attachment, entries and status) and
//!   `incremental` (each route's translation kept between builds with a digest of its
//!   inputs, the assembly in the spec's order);
//! - out: `table` (one address's hosts and paths, each with its candidates in precedence
//!   order), `serve` (what the proxy routes today on each Gateway address: that table and
//!   the Service backends as Ingress routes, and the statuses told what it does not serve
//!   yet) and `status` (the status
//!   subresource writes, with I/O); `resource` makes the kinds `kube` resources.
//!
//! Services, EndpointSlices and TLS Secrets are resolved by the Ingress model's
//! `backends` and `certs`, with the same endpoint rules.

mod entries;
mod grants;
mod hostnames;
pub mod incremental;
mod listeners;
mod rules;
mod selector;
pub mod translate;
mod values;

#[cfg(test)]
mod tests;

pub mod model;
pub mod resource;
pub mod serve;
pub mod status;
pub mod table;
pub mod types;
