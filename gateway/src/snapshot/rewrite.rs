//! What a Gateway API rule makes of a request's URL: a path modifier's path
//! (`ReplaceFullPath`, or `ReplacePrefixMatch` on whole segments, as the table in
//! `httproute_types.go` says for trailing slashes), a `URLRewrite`'s request target, and
//! a `RequestRedirect`'s `Location` (`scheme://host[:port]path`, the query kept). Pure,
//! so the spec's cases are unit tested here.
//!
//! The request path is the one routed: normalised by the front (`routing::path`), so it
//! holds no dot segment, and the translation refused every value that would add one
//! (`k8s::gateway::values`). What is left to refuse is what the request itself brings: a
//! `Host` that is not a host name (never written into a `Location`) and a rewritten path
//! starting with `//` (which a backend may read as an authority); those get 400.

use http::{HeaderValue, Uri};

use crate::k8s::gateway::model::{PathModifier, Redirect};

/// The path `path` (as routed) becomes under `modifier`. For `ReplacePrefixMatch` the
/// matched prefix (trimmed of a trailing `/`, as the translation keeps it) is replaced by
/// the replacement without its trailing `/`; an empty result is `/`.
pub fn modified(path: &str, modifier: &PathModifier) -> String {
    let (head, rest) = pieces(path, modifier);
    format!("{head}{rest}")
}

/// [`modified`] as two pieces that follow each other, borrowed from `path` and
/// `modifier` (the fast path writes them into the backend's head as they are).
pub fn pieces<'a>(path: &'a str, modifier: &'a PathModifier) -> (&'a str, &'a str) {
    match modifier {
        PathModifier::Full(full) => (full, ""),
        PathModifier::Prefix {
            matched,
            replacement,
        } => {
            let rest = match matched.as_str() {
                "/" => path,
                m => path.strip_prefix(m).unwrap_or(""),
            };
            match (replacement.trim_end_matches('/'), rest) {
                ("", "") => ("/", ""),
                (head, rest) => (head, rest),
            }
        }
    }
}

/// `uri` with its path modified and its query kept (scheme and authority, if it has
/// them, too), or why it cannot be sent.
pub fn rewritten(uri: &Uri, modifier: &PathModifier) -> Result<Uri, String> {
    let path = modified(uri.path(), modifier);
    if path.starts_with("//") {
        return Err(format!(
            "the rewritten path `{path}` starts with `//`, which a backend may read as an authority"
        ));
    }
    let target = match uri.query() {
        Some(q) => format!("{path}?{q}"),
        None => path,
    };
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(target.parse().map_err(|e| format!("{target}: {e}"))?);
    Uri::from_parts(parts).map_err(|e| e.to_string())
}

/// The host name of a request's `Host` (`name`, `name:port`, `[v6]:port`), without its
/// port, if it is one a `Location` may name: letters, digits, `-` and `.`, or a bracketed
/// IPv6 literal; never a `/`, `@` or anything else that would end the authority.
fn host_name(host: &str) -> Option<&str> {
    let name = match host.strip_prefix('[') {
        Some(v6) => &host[..v6.find(']')? + 2],
        None => host.rsplit_once(':').map_or(host, |(h, _)| h),
    };
    let literal = |n: &str| {
        n.strip_prefix('[')
            .and_then(|n| n.strip_suffix(']'))
            .is_some_and(|n| n.parse::<std::net::Ipv6Addr>().is_ok())
    };
    let dns = |n: &str| {
        n.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
    };
    (!name.is_empty() && (dns(name) || literal(name))).then_some(name)
}

/// The `Location` of `redirect` for a request to `host` (as sent) at `path` (as routed)
/// with `query`: the redirect's hostname or the request's (without its port), its port
/// if it is not the scheme's own, its path modifier's path or the request's, the query
/// as sent.
pub fn location(
    redirect: &Redirect,
    host: Option<&str>,
    path: &str,
    query: Option<&str>,
) -> Result<HeaderValue, String> {
    let host = match &redirect.hostname {
        Some(h) => h.as_str(),
        None => host.and_then(host_name).ok_or_else(|| {
            format!(
                "the request's host `{}` cannot be written in a Location",
                host.unwrap_or("").escape_debug()
            )
        })?,
    };
    let port = redirect.port.map(|p| format!(":{p}")).unwrap_or_default();
    let path = match &redirect.path {
        Some(m) => modified(path, m),
        None => path.to_string(),
    };
    let query = query.map(|q| format!("?{q}")).unwrap_or_default();
    let location = format!("{}://{host}{port}{path}{query}", redirect.scheme);
    HeaderValue::from_str(&location).map_err(|_| format!("`{location}` is not a header value"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prefix(matched: &str, replacement: &str) -> PathModifier {
        PathModifier::Prefix {
            matched: matched.into(),
            replacement: replacement.into(),
        }
    }

    /// The table in `HTTPPathModifier.ReplacePrefixMatch`'s doc (a prefix match of
    /// `/foo/` is kept as `/foo`, as the translation trims it).
    #[test]
    fn a_prefix_is_replaced_as_the_spec_s_table_says() {
        for (path, replacement, want) in [
            ("/foo/bar", "/xyz", "/xyz/bar"),
            ("/foo/bar", "/xyz/", "/xyz/bar"),
            ("/foo", "/xyz", "/xyz"),
            ("/foo/", "/xyz", "/xyz/"),
            ("/foo/bar", "", "/bar"),
            ("/foo/", "", "/"),
            ("/foo", "", "/"),
            ("/foo/", "/", "/"),
            ("/foo", "/", "/"),
        ] {
            assert_eq!(
                modified(path, &prefix("/foo", replacement)),
                want,
                "{path} with {replacement}"
            );
        }
        assert_eq!(modified("/a/b", &prefix("/", "/x")), "/x/a/b");
        assert_eq!(modified("/a/b", &PathModifier::Full("/one".into())), "/one");
    }

    #[test]
    fn a_rewrite_keeps_the_query_and_refuses_a_leading_double_slash() {
        let uri: Uri = "/prefix/one/two?a=1&b".parse().unwrap();
        let out = rewritten(&uri, &prefix("/prefix/one", "/one")).unwrap();
        assert_eq!(out.to_string(), "/one/two?a=1&b");
        let absolute: Uri = "http://h.example/strip/x".parse().unwrap();
        let out = rewritten(&absolute, &prefix("/strip", "/")).unwrap();
        assert_eq!(out.to_string(), "http://h.example/x");
        let uri: Uri = "/strip//evil.example/x".parse().unwrap();
        let err = rewritten(&uri, &prefix("/strip", "")).unwrap_err();
        assert!(err.contains("`//evil.example/x`"), "{err}");
    }

    fn redirect(hostname: Option<&str>, port: Option<u16>, path: Option<PathModifier>) -> Redirect {
        Redirect {
            scheme: "https",
            hostname: hostname.map(Into::into),
            path,
            port,
            status: 302,
        }
    }

    #[test]
    fn a_location_is_absolute_with_the_query_kept() {
        let loc = |r: &Redirect, host, path, query| {
            location(r, host, path, query).map(|v| v.to_str().unwrap().to_string())
        };
        let r = redirect(None, None, None);
        assert_eq!(
            loc(&r, Some("a.example:8080"), "/p", Some("x=1")).unwrap(),
            "https://a.example/p?x=1"
        );
        assert_eq!(
            loc(&r, Some("[::1]:80"), "/", None).unwrap(),
            "https://[::1]/"
        );
        let r = redirect(
            Some("example.org"),
            Some(8083),
            Some(prefix("/original-prefix", "/replacement-prefix")),
        );
        assert_eq!(
            loc(&r, Some("ignored"), "/original-prefix/lemon", None).unwrap(),
            "https://example.org:8083/replacement-prefix/lemon"
        );
        // A request host that would end the authority early is never written.
        let r = redirect(None, None, None);
        for host in ["evil.example/x", "a@evil.example", "", "[::1", "a b"] {
            assert!(loc(&r, Some(host), "/", None).is_err(), "{host}");
        }
        assert!(loc(&r, None, "/", None).is_err());
    }
}
