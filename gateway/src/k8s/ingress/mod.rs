//! leafgate as the Kubernetes ingress controller of its class (`[kubernetes.ingress]`).
//!
//! The model is a line, each step importing only the ones before it; no I/O, no clock
//! before `status`/`events`:
//! - types: `model` (the objects in, the settings, the routes, certificates and report out);
//! - reading the objects: `annotations` (the `leafgate.io/*` annotations, typed), `class`
//!   (which Ingresses are ours), `rules` (an Ingress's (host, path, backend) triples),
//!   `backends` (Service port -> ready endpoints), `certs` (TLS Secrets -> certificates);
//! - translation: `translate` (one Ingress on its own, then the merge: who wins a host
//!   and path, the report);
//! - the incremental builder: `incremental` ([`Builder`], which translates and merges
//!   again only what a change concerns, and [`build`] from scratch);
//! - writing back: `status` (`status.loadBalancer` on served Ingresses) and `events`
//!   (Events on skipped ones).
//!
//! The provider that runs all this (reflectors, rebuild, the leader's writers) is
//! `controllers::ingress`.

// The Gateway API translation (`k8s::gateway`) resolves Service backends and TLS Secrets
// the same way.
pub(in crate::k8s) mod backends;
pub(in crate::k8s) mod certs;
mod class;
mod incremental;
mod rules;
mod translate;

#[cfg(test)]
mod tests;

pub mod annotations;
pub mod events;
pub mod model;
pub mod status;

pub use self::incremental::{Builder, Changes, Indexed, Key, Source, build, key_of, slice_service};
