//! A `[[tenant]]`, typed: the namespaces it owns, the leaves it may reach, how it
//! authenticates on the kube-api front, its bandwidth and its plugins; and the namespace
//! globs and byte-rate limits that routes and the Ingress model share with it.

use sha2::{Digest, Sha256};

use super::host::HostPattern;
use super::kinds::{CustomResource, Gvr};
use super::plugins;
use super::units::RateLimit;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TenantConfig {
    pub name: String,
    pub namespaces: Vec<String>,
    pub bandwidth: BandwidthConfig,
    /// The tenant's policy plugins (`[tenant.plugins]`), paths resolved, not yet compiled.
    pub plugins: plugins::PluginsConfig,
    /// The leaves the tenant's pods may be reached in; `None`: all.
    pub leaves: Option<Vec<String>>,
    /// kube-api front: the bearer tokens read from `tokens_file` (re-read on every reload,
    /// and the file is watched like every file the config names).
    pub tokens: Tokens,
    /// kube-api front: client certificate names (CN, DNS or URI SAN) of this tenant.
    pub client_names: Vec<String>,
    /// Caps on the tenant's open watches, streams and log follows (`[tenant.concurrent]`).
    pub concurrent: Concurrency,
    /// The hosts its namespaces' Ingresses may claim (`hosts`, as route hosts match);
    /// `None`: any host nobody else owns.
    pub hosts: Option<Vec<HostPattern>>,
    /// kube-api front: the built-in read-only kinds it is served (`resources`; absent: the
    /// default ones, never secrets). Any other is kube-apiserver's RBAC 403 to it, and
    /// absent from its discovery.
    pub resources: Vec<&'static Gvr>,
    /// kube-api front: the custom resources it is served (`resources` entries naming
    /// `<plural>.<group>` of no built-in kind), each once, in the order named.
    pub custom: Vec<CustomResource>,
}

/// How many long-lived calls of each kind a tenant may hold open at once. Past a cap the
/// call is refused with kube-apiserver's 429, so a client backs off and retries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Concurrency {
    /// kube-api pod watches.
    pub watches: Cap,
    /// exec, attach and port-forward streams, on either Kubernetes front.
    pub streams: Cap,
    /// Log calls with `follow`, on either Kubernetes front.
    pub log_follows: Cap,
}

/// One kind's cap: over all of the tenant's connections, and on any one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cap {
    pub total: u32,
    pub per_connection: u32,
}

impl Default for Concurrency {
    /// Room for a busy team's kubectl sessions and a few controllers' watches, well short
    /// of what lets one tenant tie up a replica (each watch polls the stores, each stream
    /// holds two sockets). client-go multiplexes a clientset's watches on one HTTP/2
    /// connection, hence the generous per-connection watch cap; each exec or port-forward
    /// is a connection of its own.
    fn default() -> Concurrency {
        Concurrency {
            watches: Cap {
                total: 64,
                per_connection: 32,
            },
            streams: Cap {
                total: 64,
                per_connection: 8,
            },
            log_follows: Cap {
                total: 64,
                per_connection: 16,
            },
        }
    }
}

/// Bearer tokens (a tenant's, or the admin listener's), kept as SHA-256 digests: the
/// tokens themselves are not held past reading the file, and a presented token is checked
/// against every digest in constant time, so neither memory nor timing gives one away.
/// Never printed: `Debug` shows only how many there are.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Tokens(Vec<TokenDigest>);

/// The SHA-256 digest of one token.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct TokenDigest([u8; 32]);

impl TokenDigest {
    pub fn of(token: &str) -> TokenDigest {
        TokenDigest(Sha256::digest(token.as_bytes()).into())
    }

    /// Equal digests, compared without stopping at the first byte that differs.
    fn same(&self, other: &TokenDigest) -> bool {
        let diff = self
            .0
            .iter()
            .zip(&other.0)
            .fold(0u8, |acc, (a, b)| acc | (a ^ b));
        std::hint::black_box(diff) == 0
    }
}

impl std::fmt::Debug for TokenDigest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TokenDigest(<redacted>)")
    }
}

/// The tokens of a tokens file with their 1-based line numbers: one token per line, blank
/// lines and `#` comments skipped, surrounding whitespace trimmed.
pub fn token_lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, l)| (i + 1, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
}

impl Tokens {
    /// Parses a tokens file (see [`token_lines`]).
    pub fn parse(text: &str) -> Tokens {
        let mut digests: Vec<TokenDigest> =
            token_lines(text).map(|(_, t)| TokenDigest::of(t)).collect();
        digests.sort_unstable_by_key(|d| d.0);
        digests.dedup();
        Tokens(digests)
    }

    /// True when `token` is one of these. Every digest is compared, to the last byte.
    pub fn contains(&self, token: &str) -> bool {
        self.holds(&TokenDigest::of(token))
    }

    /// [`Tokens::contains`] for a token already digested (one digest checked against
    /// several tenants).
    pub fn holds(&self, digest: &TokenDigest) -> bool {
        self.0.iter().fold(false, |found, d| found | d.same(digest))
    }

    /// Each token's SHA-256: how revocation re-checks open sessions against a reloaded
    /// tokens file without keeping any token itself.
    pub fn digests(&self) -> impl Iterator<Item = TokenDigest> + '_ {
        self.0.iter().copied()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// The SHA-256 of `token`.
pub fn token_digest(token: &str) -> TokenDigest {
    TokenDigest::of(token)
}

impl std::fmt::Debug for Tokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Tokens(<{} redacted>)", self.0.len())
    }
}

impl TenantConfig {
    /// True when one of the tenant's `namespaces` patterns matches `namespace`.
    pub fn owns(&self, namespace: &str) -> bool {
        self.namespaces.iter().any(|p| glob_matches(p, namespace))
    }

    /// True when the kube-api front serves the tenant kind `gvr` (a built-in kind, or a
    /// custom resource at any version).
    pub fn serves(&self, gvr: &Gvr) -> bool {
        self.resources.contains(&gvr) || self.custom.iter().any(|c| c.is(gvr))
    }

    /// True when the tenant may reach `leaf`.
    pub fn may_reach(&self, leaf: &str) -> bool {
        self.leaves
            .as_ref()
            .is_none_or(|l| l.iter().any(|n| n == leaf))
    }
}

/// A namespace pattern: `*` stands for any run of characters (`team-a-*`, `*-prod`, `*`);
/// everything else matches itself.
pub fn glob_matches(pattern: &str, text: &str) -> bool {
    let mut parts = pattern.split('*');
    let first = parts.next().unwrap_or("");
    let Some(mut rest) = text.strip_prefix(first) else {
        return false;
    };
    let parts: Vec<&str> = parts.collect();
    let Some((last, middle)) = parts.split_last() else {
        return rest.is_empty();
    };
    for part in middle {
        match rest.find(part) {
            Some(i) => rest = &rest[i + part.len()..],
            None => return false,
        }
    }
    rest.len() >= last.len() && rest.ends_with(last)
}

/// Byte-rate limits applied to both directions of a connection, independently.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BandwidthConfig {
    /// Each connection on its own.
    pub per_connection: Option<RateLimit>,
    /// All connections of the route (or tenant) together.
    pub total: Option<RateLimit>,
}

#[cfg(test)]
mod tests {
    use super::{TokenDigest, Tokens, token_lines};

    #[test]
    fn tokens_files_skip_comments_and_blanks_and_never_print_a_token() {
        let t = Tokens::parse("# ci\n\n  abc  \ndef\n#ghi\ndef\n");
        assert!(t.contains("abc") && t.contains("def"));
        assert!(!t.contains("#ghi") && !t.contains("ghi") && !t.contains(""));
        assert!(!t.contains("abc ") && !t.contains("ab") && !t.contains("abcd"));
        assert_eq!(t.len(), 2);
        assert_eq!(format!("{t:?}"), "Tokens(<2 redacted>)");
        assert_eq!(
            format!("{:?}", TokenDigest::of("abc")),
            "TokenDigest(<redacted>)"
        );
        let lines: Vec<_> = token_lines("# ci\n\n  abc  \ndef\n").collect();
        assert_eq!(lines, [(3, "abc"), (4, "def")]);
    }

    #[test]
    fn tokens_are_held_as_sha256_digests() {
        let t = Tokens::parse("abc\n");
        // SHA-256("abc"), FIPS 180-2 appendix B.1.
        let abc = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        let held: String = t.0[0].0.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(held, abc);
        assert!(t.holds(&TokenDigest::of("abc")));
    }

    #[test]
    fn tokens_are_found_by_digest() {
        let t = Tokens::parse("abc\n");
        let digests: Vec<_> = t.digests().collect();
        assert_eq!(digests, vec![super::token_digest("abc")]);
        assert_ne!(digests[0], super::token_digest("abd"));
    }
}
