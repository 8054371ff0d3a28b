//! leafgate as a Gateway API implementation (`[kubernetes.gateway]`): the pure
//! translation, as the Ingress model is one (`k8s::ingress`). Not wired into the snapshot,
//! reflectors or proxy yet (issue 46's next steps: the proxy must first learn header and
//! query matches and the filters).
//!
//! A line, each step importing only the ones before it; no I/O, no clock:
//! - types: `types` (the Gateway API objects, as serde types) and `model` (the settings
//!   and objects in, the route entries and statuses out);
//! - reading: `hostnames` (validity, intersection), `grants` (ReferenceGrant checks),
//!   `selector` (label selectors), `listeners` (a Gateway's listeners and conditions),
//!   `rules` (an HTTPRoute's matches, filters, backends and timeouts);
//! - translation: `entries` (one match as a route entry, and its precedence key) and
//!   `translate` (classes, addresses, attachment, the order, statuses).
//!
//! Services, EndpointSlices and TLS Secrets are resolved by the Ingress model's
//! `backends` and `certs`, with the same endpoint rules.

mod entries;
mod grants;
mod hostnames;
mod listeners;
mod rules;
mod selector;
mod translate;
mod values;

#[cfg(test)]
mod tests;

pub mod model;
pub mod types;
