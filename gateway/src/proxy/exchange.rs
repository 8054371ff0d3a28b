//! A proxied request's surroundings: the route it is counted under, who the client is,
//! and the metrics its failures go to. Both ways to a backend (`forward` in the parent
//! module, and `upgrade`) take one.

use crate::metrics::{Metrics, UpstreamErrorLabels};

use super::error::ProxyError;
use super::headers::ClientSide;

/// Everything about the request's surroundings the proxy needs.
pub struct Exchange<'a> {
    pub route: &'a str,
    pub client: ClientSide<'a>,
    pub metrics: &'a Metrics,
}

impl Exchange<'_> {
    pub fn count_error(&self, err: &ProxyError) {
        self.metrics
            .upstream_errors
            .get_or_create(&UpstreamErrorLabels {
                route: self.route.to_string(),
                backend: err.backend().to_string(),
                kind: err.kind(),
            })
            .inc();
    }
}
