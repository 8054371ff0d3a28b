//! The `leafgate.io/*` annotations of an Ingress, parsed into typed settings. Any key under
//! `leafgate.io/` that is not one of these, or a value that does not parse, refuses the
//! whole Ingress (the provider reports it as an Event): serving it without the limit or
//! tenant its author asked for would be worse than not serving it.
//!
//! | annotation | value |
//! |---|---|
//! | `leafgate.io/tenant` | a configured tenant whose `namespaces` match the Ingress's |
//! | `leafgate.io/bandwidth-per-connection` | a rate such as `1MiB/s` |
//! | `leafgate.io/bandwidth-total` | a rate, all the route's connections together |
//! | `leafgate.io/upgraded-idle-timeout` | a duration such as `1h`, at most [`MAX_UPGRADED_IDLE`] |
//! | `leafgate.io/backend-protocol` | `http`, `h2c`, `https`, `h2` (case-insensitive) |
//!
//! An annotation acts only within its tenant's bounds: it names only a tenant owning the
//! Ingress's namespace, and [`Annotations::clamp`] lowers a rate above the tenant's own
//! limit to it (the Ingress author is not the operator who set that limit).

use std::collections::BTreeMap;
use std::time::Duration;

use super::model::TenantBounds;
use crate::config::{BandwidthConfig, ByteRate, HumanDuration, RateLimit};
use crate::limit::effective_burst;

/// The prefix every leafgate annotation carries.
pub const PREFIX: &str = "leafgate.io/";
pub const TENANT: &str = "leafgate.io/tenant";
pub const BANDWIDTH_PER_CONNECTION: &str = "leafgate.io/bandwidth-per-connection";
pub const BANDWIDTH_TOTAL: &str = "leafgate.io/bandwidth-total";
pub const UPGRADED_IDLE_TIMEOUT: &str = "leafgate.io/upgraded-idle-timeout";
pub const BACKEND_PROTOCOL: &str = "leafgate.io/backend-protocol";

/// The longest `upgraded-idle-timeout` an annotation gets: a longer one is cut to it.
pub const MAX_UPGRADED_IDLE: Duration = Duration::from_secs(24 * 3600);

/// How leafgate speaks to an Ingress's backends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendProtocol {
    /// Plain HTTP/1.1.
    Http,
    /// Plain HTTP/2 with prior knowledge.
    H2c,
    /// TLS, HTTP/2 or HTTP/1.1 as ALPN decides.
    Https,
    /// TLS, HTTP/2 only.
    H2,
}

impl BackendProtocol {
    /// The annotation's value, case-insensitive.
    pub fn parse(value: &str) -> Option<Self> {
        match value.trim().to_ascii_lowercase().as_str() {
            "http" => Some(BackendProtocol::Http),
            "h2c" => Some(BackendProtocol::H2c),
            "https" => Some(BackendProtocol::Https),
            "h2" => Some(BackendProtocol::H2),
            _ => None,
        }
    }

    /// A Service port's `appProtocol`: `kubernetes.io/h2c` -> h2c, `https` or
    /// `kubernetes.io/wss` -> https, anything else (or none) -> http.
    pub fn of_app_protocol(app_protocol: Option<&str>) -> Self {
        match app_protocol {
            Some("kubernetes.io/h2c") => BackendProtocol::H2c,
            Some("https" | "kubernetes.io/wss") => BackendProtocol::Https,
            _ => BackendProtocol::Http,
        }
    }

    pub fn tls(self) -> bool {
        matches!(self, BackendProtocol::Https | BackendProtocol::H2)
    }
}

/// What an Ingress's annotations ask for; all `None`/default when it has none.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Annotations {
    pub tenant: Option<String>,
    pub bandwidth: BandwidthConfig,
    pub upgraded_idle: Option<Duration>,
    pub protocol: Option<BackendProtocol>,
}

/// Why an Ingress's annotations refuse it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{annotation}: {reason}")]
pub struct AnnotationError {
    pub annotation: String,
    pub reason: String,
}

/// Parses the `leafgate.io/*` annotations out of `annotations` (others are left alone) of
/// an Ingress in `namespace`. `tenants` are the configured tenants. The first bad key in
/// key order is reported.
pub fn parse(
    annotations: Option<&BTreeMap<String, String>>,
    namespace: &str,
    tenants: &[TenantBounds],
) -> Result<Annotations, AnnotationError> {
    let mut out = Annotations::default();
    let Some(annotations) = annotations else {
        return Ok(out);
    };
    for (key, value) in annotations.range(PREFIX.to_string()..) {
        if !key.starts_with(PREFIX) {
            break;
        }
        let fail = |reason: String| AnnotationError {
            annotation: key.clone(),
            reason,
        };
        match key.as_str() {
            TENANT => {
                let name = value.trim();
                let Some(tenant) = tenants.iter().find(|t| t.name == name) else {
                    return Err(fail(format!(
                        "`{name}` is not a configured tenant (known: {})",
                        tenant_names(tenants)
                    )));
                };
                // Naming another tenant would spend its budget and count as its traffic.
                if !tenant.owns(namespace) {
                    return Err(fail(format!(
                        "tenant `{name}` does not own namespace {namespace}: an Ingress may name only a tenant whose namespaces match its own"
                    )));
                }
                out.tenant = Some(name.to_string());
            }
            BANDWIDTH_PER_CONNECTION => {
                out.bandwidth.per_connection = Some(rate(value).map_err(fail)?)
            }
            BANDWIDTH_TOTAL => out.bandwidth.total = Some(rate(value).map_err(fail)?),
            UPGRADED_IDLE_TIMEOUT => {
                let HumanDuration(d) = value.parse().map_err(fail)?;
                if d.is_zero() {
                    return Err(fail(format!(
                        "`{value}` is zero: leave the annotation out for the default"
                    )));
                }
                out.upgraded_idle = Some(d.min(MAX_UPGRADED_IDLE));
            }
            BACKEND_PROTOCOL => {
                out.protocol = Some(BackendProtocol::parse(value).ok_or_else(|| {
                    fail(format!(
                        "`{value}` is not a backend protocol: write http, h2c, https or h2"
                    ))
                })?);
            }
            _ => {
                return Err(fail(format!(
                    "unknown leafgate annotation: the known ones are {TENANT}, {BANDWIDTH_PER_CONNECTION}, {BANDWIDTH_TOTAL}, {UPGRADED_IDLE_TIMEOUT} and {BACKEND_PROTOCOL}"
                )));
            }
        }
    }
    Ok(out)
}

impl Annotations {
    /// Lowers each rate above the tenant's own limit of the same kind to that limit; says
    /// what it lowered, for the Ingress's problems.
    pub fn clamp(&mut self, tenant: &TenantBounds) -> Vec<String> {
        let mut notes = Vec::new();
        let pairs = [
            (
                &mut self.bandwidth.per_connection,
                tenant.bandwidth.per_connection,
                BANDWIDTH_PER_CONNECTION,
            ),
            (
                &mut self.bandwidth.total,
                tenant.bandwidth.total,
                BANDWIDTH_TOTAL,
            ),
        ];
        for (asked, bound, key) in pairs {
            if let (Some(a), Some(b)) = (asked.as_mut(), bound)
                && (a.rate.0 > b.rate.0 || effective_burst(a) > effective_burst(&b))
            {
                notes.push(format!(
                    "{key} is above tenant {}'s limit: lowered to it",
                    tenant.name
                ));
                *a = b;
            }
        }
        notes
    }
}

fn rate(value: &str) -> Result<RateLimit, String> {
    let rate: ByteRate = value.parse()?;
    Ok(RateLimit { rate, burst: None })
}

fn tenant_names(tenants: &[TenantBounds]) -> String {
    if tenants.is_empty() {
        return "none configured".to_string();
    }
    tenants
        .iter()
        .map(|t| t.name.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn annotations(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn protocols_parse_case_insensitively_and_app_protocol_maps() {
        assert_eq!(
            BackendProtocol::parse("HTTPS"),
            Some(BackendProtocol::Https)
        );
        assert_eq!(BackendProtocol::parse(" h2c "), Some(BackendProtocol::H2c));
        assert_eq!(BackendProtocol::parse("H2"), Some(BackendProtocol::H2));
        assert_eq!(BackendProtocol::parse("Http"), Some(BackendProtocol::Http));
        assert_eq!(BackendProtocol::parse("grpc"), None);
        let of = BackendProtocol::of_app_protocol;
        assert_eq!(of(Some("kubernetes.io/h2c")), BackendProtocol::H2c);
        assert_eq!(of(Some("https")), BackendProtocol::Https);
        assert_eq!(of(Some("kubernetes.io/wss")), BackendProtocol::Https);
        assert_eq!(of(Some("kubernetes.io/ws")), BackendProtocol::Http);
        assert_eq!(of(None), BackendProtocol::Http);
    }

    #[test]
    fn other_prefixes_are_ignored_and_the_first_bad_key_is_reported() {
        let tenants = vec![TenantBounds {
            name: "t".to_string(),
            namespaces: vec!["ns".to_string()],
            ..TenantBounds::default()
        }];
        let a = annotations(&[
            ("leafgate.io.example/whatever", "x"),
            ("leafgate.iox", "y"),
            ("kubernetes.io/ingress.class", "leafgate"),
            (TENANT, "t"),
        ]);
        assert_eq!(
            parse(Some(&a), "ns", &tenants).unwrap().tenant.as_deref(),
            Some("t")
        );
        let bad = annotations(&[(BACKEND_PROTOCOL, "nope"), (BANDWIDTH_TOTAL, "fast")]);
        let e = parse(Some(&bad), "ns", &tenants).unwrap_err();
        assert_eq!(e.annotation, BACKEND_PROTOCOL);
        assert!(e.reason.contains("`nope`"), "{e}");
        let zero = annotations(&[(UPGRADED_IDLE_TIMEOUT, "0s")]);
        assert!(
            parse(Some(&zero), "ns", &tenants)
                .unwrap_err()
                .reason
                .contains("zero")
        );
        assert_eq!(parse(None, "ns", &tenants), Ok(Annotations::default()));
    }
}
