//! Host patterns, as routes, certificates, tenants' `hosts` and Ingress rules write them:
//! an exact name, a wildcard (one or more labels, or exactly one for Ingress hosts), or
//! `*`. Parsing and matching only; who owns a host is decided where it is used.

/// Which hosts a route or certificate serves. Matching is case-insensitive and without port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum HostPattern {
    /// `app.example.com`, stored lowercase.
    Exact(String),
    /// `*.example.com`, stored as the suffix `.example.com`: one or more labels before it.
    Wildcard(String),
    /// `*.example.com` as a Kubernetes Ingress means it, stored as the suffix
    /// `.example.com`: exactly ONE label before it (`a.example.com`, not `a.b.example.com`).
    /// Never produced by TOML parsing; only Ingress hosts make it.
    WildcardLabel(String),
    /// `*`: any host.
    Any,
}

impl HostPattern {
    pub fn parse(text: &str) -> Result<Self, String> {
        let host = text.trim().to_ascii_lowercase();
        if host == "*" {
            return Ok(HostPattern::Any);
        }
        let (wild, name) = match host.strip_prefix("*.") {
            Some(rest) => (true, rest),
            None => (false, host.as_str()),
        };
        let valid = !name.is_empty()
            && name.split('.').all(|label| {
                !label.is_empty()
                    && label
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            });
        if !valid {
            return Err(format!(
                "`{text}` is not a host name: write `app.example.com`, `*.example.com` or `*` (no scheme, port or path)"
            ));
        }
        Ok(if wild {
            HostPattern::Wildcard(format!(".{name}"))
        } else {
            HostPattern::Exact(name.to_string())
        })
    }

    pub fn matches(&self, host: &str) -> bool {
        match self {
            HostPattern::Exact(h) => h.eq_ignore_ascii_case(host),
            HostPattern::Wildcard(suffix) => {
                host.len() > suffix.len()
                    && host.as_bytes()[host.len() - suffix.len()..]
                        .eq_ignore_ascii_case(suffix.as_bytes())
            }
            HostPattern::WildcardLabel(suffix) => one_label_before(host, suffix),
            HostPattern::Any => true,
        }
    }

    /// Whether every host `other` matches, this pattern matches too: `*` covers all; an
    /// exact name or a wildcard covers the exact names it matches; a wildcard `*.t` (one or
    /// more labels) covers a wildcard on `t` or on a longer suffix ending in it; a one-label
    /// wildcard covers only itself among wildcards; only `*` covers `*`. Tenants' `hosts`
    /// bound Ingress hosts with it, and Gateway API hostnames intersect by it.
    pub fn covers(&self, other: &HostPattern) -> bool {
        match (self, other) {
            (HostPattern::Any, _) => true,
            (_, HostPattern::Exact(name)) => self.matches(name),
            (
                HostPattern::Wildcard(t),
                HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s),
            ) => s.ends_with(t.as_str()),
            (HostPattern::WildcardLabel(t), HostPattern::WildcardLabel(s)) => s == t,
            _ => false,
        }
    }

    /// An Ingress rule's `host`: exact (lowercased) or `*.suffix` matching one label.
    /// The same syntax as TOML hosts; only the wildcard's meaning differs.
    pub fn parse_ingress(text: &str) -> Result<Self, String> {
        Ok(match Self::parse(text)? {
            HostPattern::Wildcard(suffix) => HostPattern::WildcardLabel(suffix),
            other => other,
        })
    }
}

/// True when `host` is one non-empty label followed by `suffix` (`.example.com`), compared
/// without regard to ASCII case.
pub fn one_label_before(host: &str, suffix: &str) -> bool {
    host.len() > suffix.len()
        && host.as_bytes()[host.len() - suffix.len()..].eq_ignore_ascii_case(suffix.as_bytes())
        && !host.as_bytes()[..host.len() - suffix.len()].contains(&b'.')
}

impl std::fmt::Display for HostPattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostPattern::Exact(h) => f.write_str(h),
            HostPattern::Wildcard(s) | HostPattern::WildcardLabel(s) => write!(f, "*{s}"),
            HostPattern::Any => f.write_str("*"),
        }
    }
}
