//! leafgate as the Kubernetes ingress controller of its class (`[kubernetes.ingress]`).
//!
//! - `model`: the pure translation of Ingress, IngressClass, Service, EndpointSlice and TLS
//!   Secret objects (as the reflector stores hold them) into routes, certificates and the
//!   report of what was served, skipped, in conflict or broken. No I/O, no clock.
//! - `annotations`: the `leafgate.io/*` annotations, parsed into typed settings.
//! - `class`: which Ingresses are ours; `rules`: an Ingress's (host, path, backend)
//!   triples; `backends`: Service port -> ready endpoints;
//!   `certs`: TLS Secrets -> certificates; `incremental`: the provider's [`model::Builder`],
//!   which translates again only the Ingresses a change concerns.
//! - `status`: `status.loadBalancer` on served Ingresses; `events`: Events on skipped ones.
//!
//! The provider that runs all this (reflectors, rebuild, the leader's writers) is
//! `controllers::ingress`.

mod backends;
mod certs;
mod class;
mod incremental;
mod rules;

#[cfg(test)]
mod tests;

pub mod annotations;
pub mod events;
pub mod model;
pub mod status;
