//! What of a caller's request a pod call lets through to the leaf ([`leaf_headers`], with
//! the request's ID and trace context, [`ids_to_leaf`]), and what neither Kubernetes
//! front lets a caller ask ([`impersonation`]).

use http::{HeaderMap, HeaderName, HeaderValue, header};

use crate::config::Config;
use crate::k8s::status::Status;

/// W3C trace context's headers, passed to the leaf under `[tracing] propagate`.
static TRACE_HEADERS: [HeaderName; 2] = [
    HeaderName::from_static("traceparent"),
    HeaderName::from_static("tracestate"),
];

/// The caller's headers a leaf may see, the only ones a pod call forwards: `Accept`,
/// `Content-Type`, `Content-Length`, `User-Agent`, `X-Stream-Protocol-Version`, and on an
/// upgrade `Upgrade` with `Connection: Upgrade` and every `Sec-WebSocket-*`. Everything
/// else the caller sent (`Cookie`, `X-Remote-*`, `Impersonate-*`, `Accept-Encoding`, its
/// `Authorization`, forwarding claims) stays here: the leaf's credentials go with the
/// call, and what rides next to them must not widen it, forge its audit, or (gzip) slip a
/// log body past the filter. The leaf's `Host` and `Authorization` are set after this
/// (`Leaf::prepare`), and an upgrade's forwarding headers naming the real peer by
/// `proxy::prepare`.
pub fn leaf_headers(from: &HeaderMap, upgrade: bool) -> HeaderMap {
    static ALWAYS: [HeaderName; 5] = [
        header::ACCEPT,
        header::CONTENT_TYPE,
        header::CONTENT_LENGTH,
        header::USER_AGENT,
        HeaderName::from_static("x-stream-protocol-version"),
    ];
    let mut out = HeaderMap::with_capacity(from.keys_len().min(16));
    for (name, value) in from {
        let negotiation =
            upgrade && (*name == header::UPGRADE || name.as_str().starts_with("sec-websocket-"));
        if negotiation || ALWAYS.contains(name) {
            out.append(name.clone(), value.clone());
        }
    }
    if upgrade && out.contains_key(header::UPGRADE) {
        out.insert(header::CONNECTION, HeaderValue::from_static("Upgrade"));
    }
    out
}

/// Adds to `out` (a leaf request's headers) the request's ID from `from` (`[request_id]`,
/// as `listener::ids` chose it) and, under `[tracing] propagate`, its trace context: the
/// leaf sees the ID and trace the access log line writes.
pub fn ids_to_leaf(from: &HeaderMap, out: &mut HeaderMap, config: &Config) {
    let id = config.request_id.as_ref().map(|c| &c.header);
    let trace: &[HeaderName] = if config.propagate_trace {
        &TRACE_HEADERS
    } else {
        &[]
    };
    for name in id.into_iter().chain(trace) {
        for value in from.get_all(name) {
            out.append(name.clone(), value.clone());
        }
    }
}

/// kube-apiserver's answer to a caller asking to impersonate (`Impersonate-User`,
/// `-Group`, `-Uid`, `-Extra-*`), which no tenant and no node-api caller may do through
/// leafgate: the 403 for the user (a service account's when it names one), or, when no
/// user is asked for, the 400 for impersonating anything else without one
/// (`k8s.io/apiserver/pkg/endpoints/filters/impersonation`). `None` when the request
/// asks for nothing of the kind.
pub fn impersonation(headers: &HeaderMap, user: &str) -> Option<Status> {
    let text = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
    if let Some(asked) = headers.get("impersonate-user").map(text) {
        let service_account = asked
            .strip_prefix("system:serviceaccount:")
            .and_then(|rest| rest.split_once(':'));
        return Some(match service_account {
            Some((ns, name)) => {
                Status::forbidden(user, "impersonate", "serviceaccounts", Some(name), Some(ns))
            }
            None => Status::forbidden(user, "impersonate", "users", Some(&asked), None),
        });
    }
    // Go's `%v` of each `v1.ObjectReference` asked for: Kind, Namespace, Name, UID,
    // APIVersion, ResourceVersion, FieldPath, space-separated.
    let reference =
        |kind: &str, name: &str, field_path: &str| format!("{{{kind}  {name}    {field_path}}}");
    let mut asked: Vec<String> = headers
        .get_all("impersonate-group")
        .iter()
        .map(|g| reference("Group", &text(g), ""))
        .collect();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("impersonate-extra-") {
            asked.push(reference("UserExtra", &text(value), key));
        }
    }
    if let Some(uid) = headers.get("impersonate-uid") {
        asked.push(reference("UID", &text(uid), ""));
    }
    (!asked.is_empty()).then(|| {
        Status::new(
            400,
            format!(
                "requested [{}] without impersonating a user",
                asked.join(" ")
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile(upgrade: bool) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in [
            ("cookie", "session=x"),
            ("x-remote-user", "system:admin"),
            ("impersonate-user", "system:admin"),
            ("accept-encoding", "gzip"),
            ("authorization", "Bearer callers"),
            ("x-forwarded-for", "6.6.6.6"),
            ("te", "trailers"),
            ("accept", "application/json"),
            ("user-agent", "kubectl/v1.36"),
            ("content-type", "application/json"),
            ("x-stream-protocol-version", "v5.channel.k8s.io"),
            ("x-stream-protocol-version", "v4.channel.k8s.io"),
            ("sec-websocket-protocol", "v5.channel.k8s.io"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ] {
            h.append(k, HeaderValue::from_static(v));
        }
        if upgrade {
            h.append(
                header::CONNECTION,
                HeaderValue::from_static("Upgrade, Cookie"),
            );
            h.append(header::UPGRADE, HeaderValue::from_static("SPDY/3.1"));
        }
        h
    }

    fn names(h: &HeaderMap) -> Vec<&str> {
        let mut n: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        n.sort_unstable();
        n
    }

    #[test]
    fn a_plain_call_keeps_only_content_accept_agent_and_stream_version() {
        let out = leaf_headers(&hostile(false), false);
        assert_eq!(
            names(&out),
            [
                "accept",
                "content-type",
                "user-agent",
                "x-stream-protocol-version"
            ]
        );
        assert_eq!(out.get_all("x-stream-protocol-version").iter().count(), 2);
    }

    #[test]
    fn an_upgrade_keeps_its_negotiation_and_says_only_upgrade_in_connection() {
        let out = leaf_headers(&hostile(true), true);
        assert_eq!(
            names(&out),
            [
                "accept",
                "connection",
                "content-type",
                "sec-websocket-key",
                "sec-websocket-protocol",
                "upgrade",
                "user-agent",
                "x-stream-protocol-version"
            ]
        );
        assert_eq!(out[header::CONNECTION], "Upgrade");
        assert_eq!(out[header::UPGRADE], "SPDY/3.1");
        // Without `Upgrade` there is nothing to switch to, and no `Connection` either.
        assert!(!leaf_headers(&hostile(false), true).contains_key(header::CONNECTION));
    }

    #[test]
    fn impersonation_is_refused_in_kube_apiservers_words() {
        let mut h = HeaderMap::new();
        assert_eq!(impersonation(&h, "tenant:a"), None);
        h.insert(
            "impersonate-group",
            HeaderValue::from_static("system:masters"),
        );
        let no_user = impersonation(&h, "tenant:a").unwrap();
        assert_eq!(no_user.code, 400);
        assert_eq!(
            no_user.message,
            "requested [{Group  system:masters    }] without impersonating a user"
        );
        h.insert("impersonate-user", HeaderValue::from_static("x"));
        let user = impersonation(&h, "tenant:a").unwrap();
        assert_eq!(user.code, 403);
        assert_eq!(
            user.message,
            "users \"x\" is forbidden: User \"tenant:a\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
        );
        h.insert(
            "impersonate-user",
            HeaderValue::from_static("system:serviceaccount:team-b:deployer"),
        );
        assert_eq!(
            impersonation(&h, "tenant:a").unwrap().message,
            "serviceaccounts \"deployer\" is forbidden: User \"tenant:a\" cannot impersonate resource \"serviceaccounts\" in API group \"\" in the namespace \"team-b\""
        );
    }
}
