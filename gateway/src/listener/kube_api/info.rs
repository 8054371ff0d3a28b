//! What kube-apiserver's `RequestInfoFactory` (`k8s.io/apiserver/pkg/endpoints/request/
//! requestinfo.go`) makes of a request, as far as the access log writes it: the verb (as
//! kube-apiserver's audit log names it), the namespace, and the name. A path it does not
//! read as a resource request gets the method in lowercase as its verb, as there.

use http::Method;

/// A request as kube-apiserver reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Info {
    pub verb: &'static str,
    pub namespace: Option<String>,
    pub resource: Option<String>,
    pub name: Option<String>,
}

/// The info of a request with `method` on the path made of `segments` (the path split on
/// `/`, the leading empty one left out), with `query`.
pub fn of(method: &Method, segments: &[&str], query: Option<&str>) -> Info {
    let non_resource = Info {
        verb: lower(method),
        namespace: None,
        resource: None,
        name: None,
    };
    if segments.len() < 3 {
        return non_resource;
    }
    let mut parts = match segments {
        ["api", _version, rest @ ..] => rest,
        ["apis", _group, _version, rest @ ..] if !rest.is_empty() => rest,
        _ => return non_resource,
    };
    let mut verb = match parts {
        // The deprecated `/watch/` and `/proxy/` prefixes name their verb.
        [special @ ("watch" | "proxy"), rest @ ..] if !rest.is_empty() => {
            parts = rest;
            if *special == "watch" {
                "watch"
            } else {
                "proxy"
            }
        }
        _ => by_method(method),
    };
    let mut namespace = None;
    if let ["namespaces", ns, rest @ ..] = parts {
        namespace = Some(decoded(ns));
        // Past the namespace's name, a resource of its own unless it is the namespace's
        // own subresource.
        if !rest.is_empty() && !matches!(rest[0], "status" | "finalize") {
            parts = rest;
        }
    }
    let resource = parts.first().map(|r| decoded(r));
    let mut name = parts.get(1).map(|n| decoded(n));
    if name.is_none() && verb == "get" {
        verb = if watches(query) { "watch" } else { "list" };
        name = name_selected(query);
    }
    if name.is_none() && verb == "delete" {
        verb = "deletecollection";
    }
    Info {
        verb,
        namespace,
        resource,
        name,
    }
}

fn by_method(method: &Method) -> &'static str {
    match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
}

/// The method in lowercase, as kube-apiserver names a non-resource request's verb.
fn lower(method: &Method) -> &'static str {
    match *method {
        Method::GET => "get",
        Method::HEAD => "head",
        Method::POST => "post",
        Method::PUT => "put",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        Method::OPTIONS => "options",
        _ => "",
    }
}

fn decoded(segment: &str) -> String {
    crate::k8s::names::decode_segment(segment).unwrap_or_else(|| segment.to_string())
}

/// Whether the query's first `watch` asks to watch: anything but `false` and `0`, as
/// kube-apiserver reads it.
fn watches(query: Option<&str>) -> bool {
    form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "watch")
        .is_some_and(|(_, v)| !matches!(v.to_ascii_lowercase().as_str(), "false" | "0"))
}

/// The name a list's `fieldSelector` asks for exactly (`metadata.name=x` or `==x`), as
/// kube-apiserver names such a list's object.
fn name_selected(query: Option<&str>) -> Option<String> {
    let (_, selector) = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "fieldSelector")?;
    selector.split(',').find_map(|term| {
        let value = term.trim().strip_prefix("metadata.name")?;
        let value = value
            .strip_prefix("==")
            .or_else(|| value.strip_prefix('='))?;
        crate::k8s::names::path_segment_problems(value)
            .is_empty()
            .then(|| value.to_string())
    })
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::of;

    /// What a request reads as: verb, namespace, resource, name (`""`: none).
    type Read<'a> = (&'a str, &'a str, &'a str, &'a str);

    /// (method, path, query) -> what it reads as, as `requestinfo.go` reads it (the
    /// shapes its `TestGetAPIRequestInfo` checks: collections, names, `/watch/`, the
    /// namespace's own subresource, `deletecollection`).
    #[test]
    fn requests_read_as_kube_apiserver_reads_them() {
        let cases: &[(Method, &str, Option<&str>, Read<'_>)] = &[
            (
                Method::GET,
                "/api/v1/namespaces",
                None,
                ("list", "", "namespaces", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other",
                None,
                ("get", "other", "namespaces", "other"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                None,
                ("list", "other", "pods", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo",
                None,
                ("get", "other", "pods", "foo"),
            ),
            (
                Method::HEAD,
                "/api/v1/namespaces/other/pods/foo",
                None,
                ("get", "other", "pods", "foo"),
            ),
            (Method::GET, "/api/v1/pods", None, ("list", "", "pods", "")),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods/foo/exec",
                None,
                ("get", "other", "pods", "foo"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/other/pods/foo/exec",
                None,
                ("create", "other", "pods", "foo"),
            ),
            (
                Method::GET,
                "/api/v1/watch/pods",
                None,
                ("watch", "", "pods", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods",
                Some("watch=true"),
                ("watch", "", "pods", ""),
            ),
            (
                Method::GET,
                "/api/v1/pods",
                Some("watch=false"),
                ("list", "", "pods", ""),
            ),
            (
                Method::GET,
                "/api/v1/watch/namespaces/other/pods",
                None,
                ("watch", "other", "pods", ""),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/other/pods",
                None,
                ("create", "other", "pods", ""),
            ),
            (
                Method::PUT,
                "/api/v1/namespaces/other/pods/foo",
                None,
                ("update", "other", "pods", "foo"),
            ),
            (
                Method::PATCH,
                "/api/v1/namespaces/other/pods/foo",
                None,
                ("patch", "other", "pods", "foo"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods/foo",
                None,
                ("delete", "other", "pods", "foo"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/other/pods",
                None,
                ("deletecollection", "other", "pods", ""),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                Some("fieldSelector=metadata.name%3Dfoo"),
                ("list", "other", "pods", "foo"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/pods",
                Some("fieldSelector=metadata.name%3D%3Dfoo&watch=1"),
                ("watch", "other", "pods", "foo"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/other/status",
                None,
                ("get", "other", "namespaces", "other"),
            ),
            (
                Method::GET,
                "/apis/apps/v1/namespaces/other/deployments/web",
                None,
                ("get", "other", "deployments", "web"),
            ),
            (
                Method::GET,
                "/apis/events.k8s.io/v1/events",
                None,
                ("list", "", "events", ""),
            ),
            (
                Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
                None,
                ("create", "", "selfsubjectaccessreviews", ""),
            ),
        ];
        for (method, path, query, (verb, ns, resource, name)) in cases {
            let segments: Vec<&str> = path.split('/').skip(1).collect();
            let info = of(method, &segments, *query);
            let got = (
                info.verb,
                info.namespace.as_deref().unwrap_or(""),
                info.resource.as_deref().unwrap_or(""),
                info.name.as_deref().unwrap_or(""),
            );
            assert_eq!(
                got,
                (*verb, *ns, *resource, *name),
                "{method} {path} {query:?}"
            );
        }
    }

    #[test]
    fn other_paths_are_non_resource_requests_named_by_their_method() {
        for (method, path, verb) in [
            (Method::GET, "/version", "get"),
            (Method::GET, "/api", "get"),
            (Method::GET, "/api/v1", "get"),
            (Method::GET, "/apis/apps", "get"),
            (Method::GET, "/apis/apps/v1", "get"),
            (Method::POST, "/healthz", "post"),
            (Method::GET, "/openapi/v3/api/v1", "get"),
        ] {
            let segments: Vec<&str> = path.split('/').skip(1).collect();
            let info = of(&method, &segments, None);
            assert_eq!(info.verb, verb, "{path}");
            assert_eq!(
                (info.namespace, info.resource, info.name),
                (None, None, None),
                "{path}"
            );
        }
    }
}
