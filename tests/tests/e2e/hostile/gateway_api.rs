//! Route authors against leafgate as a Gateway API implementation: a route in a namespace
//! the listener does not take, a hostname outside the tenant's `hosts`, a backend in
//! another namespace without a ReferenceGrant, one at the gateway's admin port, a route
//! naming 5,000 hostnames, and filters and timeouts that would inject a line, leave the
//! authority or the path, speak in another tenant's name or are out of range, and HTTPS
//! certificates whose key does not fit or that are not PEM at all. Each gets
//! its refusal (in the route's status, or the backend's
//! answer) and is never served. On a shared HTTPS address: a client asking one tenant's
//! name by SNI and another's by `Host` (421), a Gateway asking for another's hostname
//! with its own certificate, a certificate rotated under open connections. Each test owns
//! one suite and address range (150..).

use std::net::SocketAddr;

use leafgate_tests::Config;
use leafgate_tests::config::Tenant;
use leafgate_tests::gateway_api::{
    Expect, INFRA, Suite, V1, WEB, condition, expect, parents, request, until,
};
use leafgate_tests::ingress::list;
use serde_json::{Value, json};

/// An HTTPRoute `ns/name` on Gateway `gateway` (in the infra namespace) with `hostnames`
/// and one rule sending everything to `backend` (in `backend_ns` when given).
fn route(ns: &str, name: &str, gateway: &str, hostnames: &[String], backend: Value) -> Value {
    json!({
        "apiVersion": V1, "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "parentRefs": [{"name": gateway, "namespace": INFRA}],
            "hostnames": hostnames,
            "rules": [{"backendRefs": [backend]}]
        }
    })
}

fn hosts(names: &[&str]) -> Vec<String> {
    names.iter().map(|h| h.to_string()).collect()
}

async fn port_80(suite: &Suite, gateway: &str) -> SocketAddr {
    SocketAddr::new(suite.gateway_address(gateway).await, 80)
}

/// The Warning Events on `kind` `ns/name` with `reason`, as the root stores them.
fn warnings(suite: &Suite, kind: &str, ns: &str, name: &str, reason: &str) -> Vec<Value> {
    list(&suite.sim, "v1", "Event")
        .into_iter()
        .filter(|e| {
            e["involvedObject"]["kind"] == kind
                && e["involvedObject"]["apiVersion"] == V1
                && e["involvedObject"]["name"] == name
                && e["metadata"]["namespace"] == ns
                && e["type"] == "Warning"
                && e["reason"] == reason
        })
        .collect()
}

/// Until the leader has written a Warning Event on `kind` `ns/name` with `reason` whose
/// message holds `says`.
async fn warned(suite: &Suite, kind: &str, ns: &str, name: &str, reason: &str, says: &str) {
    until(
        &format!("a {reason} Warning Event on {kind} {name}"),
        || async {
            warnings(suite, kind, ns, name, reason)
                .iter()
                .any(|e| e["message"].as_str().is_some_and(|m| m.contains(says)))
        },
    )
    .await;
}

/// Exactly one Warning Event on `kind` `ns/name` with `reason`: the leader's own status
/// writes (which bump the object's resourceVersion) and its later passes wrote no other.
fn warned_once(suite: &Suite, kind: &str, ns: &str, name: &str, reason: &str) {
    let found = warnings(suite, kind, ns, name, reason);
    assert_eq!(found.len(), 1, "{kind} {name}: {found:#?}");
}

#[tokio::test]
async fn a_route_in_a_namespace_the_listener_does_not_take_is_refused_and_never_served() {
    let suite = Suite::start(150, Config::new()).await;
    // `same-namespace` takes routes from the infra namespace only.
    suite
        .sim
        .create(route(
            WEB,
            "intruder",
            "same-namespace",
            &hosts(&["victim.example"]),
            json!({"name": "web-backend", "port": 8080}),
        ))
        .unwrap();
    let addr = port_80(&suite, "same-namespace").await;
    suite
        .route_parent(
            WEB,
            "intruder",
            "same-namespace",
            "Accepted",
            false,
            "NotAllowedByListeners",
        )
        .await;
    expect(addr, &Expect::status("victim.example", "/", 404)).await;
    // One Warning Event on the route, naming the Gateway and why.
    warned(
        &suite,
        "HTTPRoute",
        WEB,
        "intruder",
        "NotAllowedByListeners",
        "Gateway gateway-conformance-infra/same-namespace: Accepted: no listener admits",
    )
    .await;
    // A route the listener takes: new models, new leader passes, still one Event.
    suite
        .sim
        .create(route(
            INFRA,
            "allowed",
            "same-namespace",
            &hosts(&["allowed.example"]),
            json!({"name": "infra-backend-v1", "port": 8080}),
        ))
        .unwrap();
    suite
        .route_parent(
            INFRA,
            "allowed",
            "same-namespace",
            "Accepted",
            true,
            "Accepted",
        )
        .await;
    expect(
        addr,
        &Expect::ok("allowed.example", "/", "infra-backend-v1"),
    )
    .await;
    warned_once(
        &suite,
        "HTTPRoute",
        WEB,
        "intruder",
        "NotAllowedByListeners",
    );
    assert!(
        warnings(
            &suite,
            "HTTPRoute",
            INFRA,
            "allowed",
            "NotAllowedByListeners"
        )
        .is_empty()
    );
}

#[tokio::test]
async fn a_hostname_outside_the_tenants_hosts_is_refused_naming_the_tenant() {
    let tenant = Tenant::new("web")
        .namespaces([WEB])
        .hosts(["*.web.example"]);
    let suite = Suite::start(151, Config::new().tenant(tenant)).await;
    let web = json!({"name": "web-backend", "port": 8080});
    suite
        .sim
        .create(route(
            WEB,
            "bank",
            "all-namespaces",
            &hosts(&["bank.example"]),
            web.clone(),
        ))
        .unwrap();
    // One allowed hostname beside one that is not: the route serves the allowed one only.
    suite
        .sim
        .create(route(
            WEB,
            "mixed",
            "all-namespaces",
            &hosts(&["app.web.example", "pay.example"]),
            web,
        ))
        .unwrap();
    let addr = port_80(&suite, "all-namespaces").await;
    let r = suite
        .route_parent(
            WEB,
            "bank",
            "all-namespaces",
            "Accepted",
            false,
            "HostnameNotAllowed",
        )
        .await;
    let message = parents(&r, "all-namespaces")
        .find_map(|p| condition(&p["conditions"], "Accepted"))
        .and_then(|c| c["message"].as_str())
        .unwrap()
        .to_string();
    assert!(
        message.contains("bank.example") && message.contains("tenant web"),
        "{message}"
    );
    // The leader reports it as the Ingress source reports refusals: a Warning Event.
    until("a Warning Event on the refused route", || async {
        list(&suite.sim, "v1", "Event").iter().any(|e| {
            e["involvedObject"]["kind"] == "HTTPRoute"
                && e["involvedObject"]["name"] == "bank"
                && e["metadata"]["namespace"] == WEB
                && e["type"] == "Warning"
                && e["reason"] == "HostnameNotAllowed"
                && e["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("tenant web"))
        })
    })
    .await;
    suite
        .route_parent(WEB, "mixed", "all-namespaces", "Accepted", true, "Accepted")
        .await;
    expect(
        addr,
        &Expect::ok("app.web.example", "/", "web-backend").namespace(WEB),
    )
    .await;
    for host in ["bank.example", "pay.example"] {
        expect(addr, &Expect::status(host, "/", 404)).await;
    }
}

#[tokio::test]
async fn a_backend_in_another_namespace_without_a_grant_is_refused_and_never_reached() {
    let suite = Suite::start(152, Config::new()).await;
    suite
        .sim
        .create(route(
            WEB,
            "steal",
            "all-namespaces",
            &hosts(&["steal.example"]),
            json!({"name": "infra-backend-v1", "namespace": INFRA, "port": 8080}),
        ))
        .unwrap();
    let addr = port_80(&suite, "all-namespaces").await;
    suite
        .route_parent(
            WEB,
            "steal",
            "all-namespaces",
            "ResolvedRefs",
            false,
            "RefNotPermitted",
        )
        .await;
    // Its requests get the spec's 500, never the infra pods.
    expect(addr, &Expect::status("steal.example", "/", 500)).await;
}

/// The Service `admin` in the infra namespace, port 8080, whose one endpoint is the
/// gateway's admin API (its address returned).
fn admin_service(suite: &Suite) -> SocketAddr {
    let admin = suite.gateway.admin();
    suite
        .sim
        .create(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "admin", "namespace": INFRA},
            "spec": {"ports": [{"port": 8080, "targetPort": admin.port()}]}
        }))
        .unwrap();
    suite
        .sim
        .create(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "admin-1", "namespace": INFRA,
                         "labels": {"kubernetes.io/service-name": "admin",
                                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "ports": [{"name": "", "port": admin.port(), "protocol": "TCP"}],
            "endpoints": [{"addresses": [admin.ip().to_string()], "conditions": {"ready": true}}]
        }))
        .unwrap();
    admin
}

#[tokio::test]
async fn a_backend_at_the_admin_port_is_never_dialled() {
    let suite = Suite::start(153, Config::new()).await;
    let admin = admin_service(&suite);
    suite
        .sim
        .create(route(
            INFRA,
            "admin",
            "same-namespace",
            &hosts(&["admin.example"]),
            json!({"name": "admin", "port": 8080}),
        ))
        .unwrap();
    let addr = port_80(&suite, "same-namespace").await;
    suite
        .route_parent(
            INFRA,
            "admin",
            "same-namespace",
            "Accepted",
            true,
            "Accepted",
        )
        .await;
    // The suite lets routes reach the pods' range only: the admin's loopback address is
    // refused, the answer is the 503 that says so, never the admin API's.
    expect(addr, &Expect::status("admin.example", "/status", 503)).await;
    let a = request(addr, "admin.example", "/status", &[])
        .await
        .unwrap();
    let body = a.text();
    assert!(
        body.contains(&format!(
            "endpoint {} port {} is a loopback address",
            admin.ip(),
            admin.port()
        )) && !body.contains("listeners"),
        "{body}"
    );
}

#[tokio::test]
async fn a_route_naming_5000_hostnames_is_refused_at_a_bounded_cost() {
    let suite = Suite::start(154, Config::new()).await;
    let many: Vec<String> = (0..5_000).map(|i| format!("h{i}.example")).collect();
    suite
        .sim
        .create(route(
            INFRA,
            "many",
            "same-namespace",
            &many,
            json!({"name": "infra-backend-v1", "port": 8080}),
        ))
        .unwrap();
    let addr = port_80(&suite, "same-namespace").await;
    suite
        .route_parent(
            INFRA,
            "many",
            "same-namespace",
            "Accepted",
            false,
            "UnsupportedValue",
        )
        .await;
    for host in ["h0.example", "h4999.example"] {
        expect(addr, &Expect::status(host, "/", 404)).await;
    }
    // The translation that refused it took no longer than one of a few objects does.
    let status = leafgate_tests::client::get(suite.gateway.admin(), "admin", "/status")
        .await
        .json();
    let ms = status["gateway"]["last_build_ms"].as_f64().unwrap();
    assert!(ms < 1_000.0, "the build took {ms} ms");
}

#[tokio::test]
async fn a_gateway_whose_port_is_taken_is_port_unavailable_and_fails_no_other() {
    let suite = Suite::start(155, Config::new()).await;
    // Something else holds 127.0.155.200:80 before the Gateway asks for that address.
    let taken: SocketAddr = "127.0.155.200:80".parse().unwrap();
    let _blocker = std::net::TcpListener::bind(taken).unwrap();
    suite
        .sim
        .create(json!({
            "apiVersion": V1, "kind": "Gateway",
            "metadata": {"name": "taken", "namespace": INFRA},
            "spec": {
                "gatewayClassName": "leafgate",
                "addresses": [{"type": "IPAddress", "value": taken.ip().to_string()}],
                "listeners": [{"name": "http", "port": 80, "protocol": "HTTP"}]
            }
        }))
        .unwrap();
    let g = suite
        .until(
            "the listener PortUnavailable",
            "Gateway",
            INFRA,
            "taken",
            |g| {
                condition(&g["status"]["listeners"][0]["conditions"], "Accepted")
                    .is_some_and(|c| c["status"] == "False" && c["reason"] == "PortUnavailable")
            },
        )
        .await;
    assert_eq!(g["status"]["addresses"][0]["value"], taken.ip().to_string());
    let programmed = condition(&g["status"]["conditions"], "Programmed").unwrap();
    assert_eq!(programmed["status"], "False", "{g:#}");
    // The other Gateways are bound and serve.
    suite
        .sim
        .create(route(
            INFRA,
            "fine",
            "same-namespace",
            &hosts(&["fine.example"]),
            json!({"name": "infra-backend-v1", "port": 8080}),
        ))
        .unwrap();
    let addr = port_80(&suite, "same-namespace").await;
    expect(addr, &Expect::ok("fine.example", "/", "infra-backend-v1")).await;
    // The leader reports the listener it could not bind: one Warning Event on the Gateway.
    warned(
        &suite,
        "Gateway",
        INFRA,
        "taken",
        "PortUnavailable",
        "listener http: ",
    )
    .await;
    warned_once(&suite, "Gateway", INFRA, "taken", "PortUnavailable");
    assert!(
        warnings(
            &suite,
            "Gateway",
            INFRA,
            "same-namespace",
            "PortUnavailable"
        )
        .is_empty()
    );
    // `/status` shows the Gateways, their listeners and the refusal; `/metrics` counts them.
    let admin = suite.gateway.admin();
    let gateway_of = |s: &Value, name: &str| -> Value {
        s["gateway"]["gateways"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|g| g["namespace"] == INFRA && g["name"] == name)
            .cloned()
            .unwrap_or(Value::Null)
    };
    until("the gateway section of /status", || async {
        let s = leafgate_tests::client::get(admin, "admin", "/status")
            .await
            .json();
        gateway_of(&s, "same-namespace")["listeners"][0]["attached_routes"] == 1
            && s["gateway"]["routes"]["httproutes"] == 1
    })
    .await;
    let s = leafgate_tests::client::get(admin, "admin", "/status")
        .await
        .json();
    let g = &s["gateway"];
    assert!(
        g["classes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["name"] == "leafgate" && c["accepted"]["status"] == true),
        "{g:#}"
    );
    let taken = gateway_of(&s, "taken");
    assert_eq!(taken["addresses"], json!(["127.0.155.200"]));
    let l = &taken["listeners"][0];
    assert_eq!(l["name"], "http");
    assert_eq!(l["accepted"]["status"], false);
    assert_eq!(l["accepted"]["reason"], "PortUnavailable");
    assert_eq!(l["programmed"]["status"], false);
    assert_eq!(taken["programmed"]["status"], false);
    assert_eq!(g["routes"]["accepted"], 1);
    assert_eq!(g["routes"]["not_accepted"], 0);
    let refusal = g["refusals"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["kind"] == "Gateway" && r["object"] == format!("{INFRA}/taken"))
        .unwrap_or_else(|| panic!("no refusal of taken: {g:#}"));
    assert_eq!(refusal["reason"], "PortUnavailable");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap()
            .starts_with("listener http: "),
        "{refusal}"
    );
    assert!(g["last_build_ms"].is_number() && g["applied"].as_u64() > Some(0));
    let metrics = leafgate_tests::client::get(admin, "admin", "/metrics")
        .await
        .text();
    for line in [
        "leafgate_gateway_refusals{kind=\"Gateway\",reason=\"PortUnavailable\"} 1",
        "leafgate_gateway_routes{state=\"accepted\"} 1",
        "leafgate_gateway_routes{state=\"not_accepted\"} 0",
        // Route `fine` was translated once, whatever the builds since.
        "leafgate_gateway_routes_translated_total 1",
    ] {
        assert!(
            metrics.lines().any(|l| l == line),
            "no `{line}` in:\n{metrics}"
        );
    }
    assert!(metrics.contains("leafgate_gateway_build_seconds_count "));
}

/// An HTTPRoute `name` on `same-namespace` for `host` with one rule: `rule` plus a
/// backendRef to infra-backend-v1.
fn rule_route(name: &str, host: &str, mut rule: Value) -> Value {
    rule["backendRefs"] = json!([{"name": V1, "port": 8080}]);
    json!({
        "apiVersion": leafgate_tests::gateway_api::V1, "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": INFRA},
        "spec": {"parentRefs": [{"name": "same-namespace"}], "hostnames": [host], "rules": [rule]}
    })
}

/// Until the route is refused with `UnsupportedValue` whose message holds `why`, and its
/// host gets 404 (nothing of it served).
async fn unsupported(suite: &Suite, addr: SocketAddr, name: &str, host: &str, why: &str) {
    let r = suite
        .route_parent(
            INFRA,
            name,
            "same-namespace",
            "Accepted",
            false,
            "UnsupportedValue",
        )
        .await;
    let message = parents(&r, "same-namespace")
        .find_map(|p| condition(&p["conditions"], "Accepted"))
        .and_then(|c| c["message"].as_str())
        .unwrap_or("")
        .to_string();
    assert!(message.contains(why), "{name}: {message}");
    expect(addr, &Expect::status(host, "/", 404)).await;
}

/// Creates `make(name, host, rule)` on `same-namespace` for each case, its host
/// `<name>.<domain>`; then each is refused with `UnsupportedValue` whose message holds its
/// words, and never served ([`unsupported`]).
async fn all_refused<W: AsRef<str>>(
    suite: &Suite,
    domain: &str,
    cases: &[(&str, Value, W)],
    make: fn(&str, &str, Value) -> Value,
) {
    for (name, rule, _) in cases {
        let host = format!("{name}.{domain}");
        suite.sim.create(make(name, &host, rule.clone())).unwrap();
    }
    let addr = port_80(suite, "same-namespace").await;
    for (name, _, why) in cases {
        unsupported(suite, addr, name, &format!("{name}.{domain}"), why.as_ref()).await;
    }
}

#[tokio::test]
async fn header_matches_that_are_not_one_header_line_are_refused_and_never_served() {
    let suite = Suite::start(156, Config::new()).await;
    let cases = [
        (
            "crlf-name",
            "x\r\nx-injected",
            "two",
            "is not an HTTP token",
        ),
        (
            "crlf-value",
            "version",
            "two\r\nx-injected: 1",
            "control character",
        ),
        ("colon-name", "version:", "two", "is not an HTTP token"),
    ];
    for (name, header, value, _) in cases {
        let rule = json!({"matches": [{"headers": [{"name": header, "value": value}]}]});
        let host = format!("{name}.example");
        suite.sim.create(rule_route(name, &host, rule)).unwrap();
    }
    let addr = port_80(&suite, "same-namespace").await;
    for (name, _, _, why) in cases {
        unsupported(&suite, addr, name, &format!("{name}.example"), why).await;
    }
}

#[tokio::test]
async fn header_modifiers_that_forge_frame_or_inject_are_refused_and_never_served() {
    let suite = Suite::start(157, Config::new()).await;
    let request = |m: Value| json!({"filters": [{"type": "RequestHeaderModifier", "requestHeaderModifier": m}]});
    let response = |m: Value| json!({"filters": [{"type": "ResponseHeaderModifier", "responseHeaderModifier": m}]});
    let cases = [
        (
            "forged-host",
            request(json!({"set": [{"name": "Host", "value": "bank.example"}]})),
            "cannot be modified",
        ),
        (
            "forged-xff",
            request(json!({"add": [{"name": "X-Forwarded-For", "value": "10.0.0.1"}]})),
            "cannot be modified",
        ),
        (
            "hop-by-hop",
            request(json!({"remove": ["Connection"]})),
            "cannot be modified",
        ),
        (
            "smuggled-length",
            response(json!({"set": [{"name": "Content-Length", "value": "0"}]})),
            "cannot be modified",
        ),
        (
            "crlf-value",
            request(json!({"set": [{"name": "X-A", "value": "a\r\nX-Injected: 1"}]})),
            "control character",
        ),
        (
            "crlf-name",
            response(json!({"add": [{"name": "X-A\r\nX-B", "value": "a"}]})),
            "is not an HTTP token",
        ),
    ];
    all_refused(&suite, "example", &cases, rule_route).await;
}

/// [`rule_route`] for a rule that answers itself (a redirect): no backendRefs, which a
/// redirect may not have.
fn answering_route(name: &str, host: &str, rule: Value) -> Value {
    let mut r = rule_route(name, host, rule);
    if let Some(rule) = r["spec"]["rules"][0].as_object_mut() {
        rule.remove("backendRefs");
    }
    r
}

#[tokio::test]
async fn redirects_that_inject_or_leave_the_authority_are_refused_and_never_served() {
    let suite = Suite::start(160, Config::new()).await;
    let redirect =
        |r: Value| json!({"filters": [{"type": "RequestRedirect", "requestRedirect": r}]});
    let full = |p: &str| json!({"type": "ReplaceFullPath", "replaceFullPath": p});
    let cases = [
        (
            "crlf-host",
            redirect(json!({"hostname": "evil.example\r\nSet-Cookie: a=b"})),
            "is not a lowercase RFC 1123 name",
        ),
        (
            "control-host",
            redirect(json!({"hostname": "evil\u{7}.example"})),
            "is not a lowercase RFC 1123 name",
        ),
        (
            "crlf-path",
            redirect(json!({"path": full("/a\r\nSet-Cookie: a=b")})),
            "is not an absolute path of URL characters",
        ),
        (
            "scheme-relative",
            redirect(json!({"path": full("//evil.example/x")})),
            "is not an absolute path of URL characters",
        ),
        (
            "dot-segments",
            redirect(json!({"path": full("/a/../../admin")})),
            "holds a `.` or `..` segment",
        ),
        (
            "other-scheme",
            redirect(json!({"scheme": "javascript"})),
            "redirect scheme javascript is not supported",
        ),
    ];
    all_refused(&suite, "example", &cases, answering_route).await;
}

#[tokio::test]
async fn rewrites_that_leave_the_path_or_the_tenant_are_refused_and_never_served() {
    let tenant = Tenant::new("infra")
        .namespaces([INFRA])
        .hosts(["*.infra.example"]);
    let suite = Suite::start(161, Config::new().tenant(tenant)).await;
    let rewrite = |r: Value| json!({"filters": [{"type": "URLRewrite", "urlRewrite": r}]});
    let full = |p: &str| json!({"type": "ReplaceFullPath", "replaceFullPath": p});
    let prefix = |p: &str| json!({"matches": [{"path": {"type": "PathPrefix", "value": "/p"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": p}}}]});
    let admin = suite.gateway.admin().ip().to_string();
    let cases = [
        (
            "dot-segments",
            rewrite(json!({"path": full("/a/../../admin")})),
            "holds a `.` or `..` segment".to_string(),
        ),
        (
            "encoded-dots",
            prefix("/%2e%2E"),
            "holds a `.` or `..` segment".to_string(),
        ),
        (
            "absolute-url",
            rewrite(json!({"path": full("http://evil.example/x")})),
            "is not an absolute path of URL characters".to_string(),
        ),
        (
            "admin-address",
            rewrite(json!({"hostname": admin})),
            "is an IP address".to_string(),
        ),
        (
            "other-tenant",
            rewrite(json!({"hostname": "bank.example"})),
            "URLRewrite hostname bank.example is not allowed (tenant infra may claim only hosts matching *.infra.example)".to_string(),
        ),
    ];
    // Served: a prefix taken away, whose request would leave `//` in front.
    let mut strip = rule_route(
        "strip",
        "strip.infra.example",
        json!({"matches": [{"path": {"type": "PathPrefix", "value": "/strip"}}], "filters": [{"type": "URLRewrite", "urlRewrite": {"hostname": "b.infra.example", "path": {"type": "ReplacePrefixMatch", "replacePrefixMatch": ""}}}]}),
    );
    strip["spec"]["rules"][0]["backendRefs"] = json!([{"name": "infra-backend-v1", "port": 8080}]);
    suite.sim.create(strip).unwrap();
    all_refused(&suite, "infra.example", &cases, rule_route).await;
    let addr = port_80(&suite, "same-namespace").await;
    let host = "strip.infra.example";
    expect(
        addr,
        &Expect::ok(host, "/strip/x", "infra-backend-v1").sent("b.infra.example", "/x"),
    )
    .await;
    let answer = request(addr, host, "/strip//evil.example/x", &[])
        .await
        .unwrap();
    assert_eq!(answer.status, 400, "{}", answer.text());
    assert!(
        answer.text().contains("starts with `//`"),
        "{}",
        answer.text()
    );
}

#[tokio::test]
async fn timeouts_out_of_range_are_refused_and_never_served() {
    let suite = Suite::start(162, Config::new()).await;
    let timeouts = |t: Value| json!({"timeouts": t});
    let cases = [
        (
            "negative",
            timeouts(json!({"request": "-1s"})),
            "timeouts.request `-1s` is not a Gateway API duration",
        ),
        (
            "huge",
            timeouts(json!({"backendRequest": "1000000h"})),
            "timeouts.backendRequest `1000000h` is not a Gateway API duration",
        ),
        (
            "no-unit",
            timeouts(json!({"request": "10"})),
            "timeouts.request `10` is not a Gateway API duration",
        ),
        (
            "backend-longer",
            timeouts(json!({"request": "1s", "backendRequest": "2s"})),
            "timeouts.backendRequest must not be longer than timeouts.request",
        ),
    ];
    all_refused(&suite, "example", &cases, rule_route).await;
}

/// What the core ports opened (range 180): a listener whose `allowedRoutes.kinds` names
/// `HTTPRoute` of another group takes no route (`InvalidRouteKinds`, no `supportedKinds`);
/// routes naming `same-namespace` by another kind (`ListenerSet`) or another group's
/// `Gateway` attach to nothing; and IPv6 endpoints at `::1` and `fe80::1` (loopback and
/// link-local, not in `allow_backends`) of a selector-less Service are refused, answered
/// 503 saying so, never dialled (a dialled one would be 502: nothing listens there).
#[tokio::test]
async fn route_kinds_parent_kinds_and_ipv6_endpoints_outside_the_spec_are_refused() {
    let suite = Suite::start_with(
        180,
        Config::new(),
        json!({"allow_unmanaged_endpointslices": true}),
    )
    .await;
    let v1 = json!({"name": "infra-backend-v1", "port": 8080});
    suite
        .sim
        .create(json!({
            "apiVersion": V1, "kind": "Gateway",
            "metadata": {"name": "kinds-elsewhere", "namespace": INFRA},
            "spec": {"gatewayClassName": "leafgate", "listeners": [{
                "name": "http", "port": 80, "protocol": "HTTP",
                "allowedRoutes": {"namespaces": {"from": "All"},
                                  "kinds": [{"group": "evil.example", "kind": "HTTPRoute"}]}
            }]}
        }))
        .unwrap();
    suite
        .sim
        .create(route(
            INFRA,
            "via-elsewhere",
            "kinds-elsewhere",
            &hosts(&["elsewhere.example"]),
            v1.clone(),
        ))
        .unwrap();
    for (name, group, kind) in [
        ("as-listenerset", "gateway.networking.k8s.io", "ListenerSet"),
        ("as-evil-gateway", "evil.example", "Gateway"),
    ] {
        let mut r = route(
            INFRA,
            name,
            "same-namespace",
            &hosts(&[&format!("{name}.example")]),
            v1.clone(),
        );
        r["spec"]["parentRefs"][0]["group"] = json!(group);
        r["spec"]["parentRefs"][0]["kind"] = json!(kind);
        suite.sim.create(r).unwrap();
    }
    suite
        .sim
        .create(json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "v6-local", "namespace": INFRA},
            "spec": {"ports": [{"name": "first-port", "port": 8080, "targetPort": 3000}]}
        }))
        .unwrap();
    suite
        .sim
        .create(json!({
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "v6-local-ip6", "namespace": INFRA,
                         "labels": {"kubernetes.io/service-name": "v6-local"}},
            "addressType": "IPv6",
            "ports": [{"name": "first-port", "port": 3000, "protocol": "TCP"}],
            "endpoints": [
                {"addresses": ["::1"], "conditions": {"ready": true}},
                {"addresses": ["fe80::1"], "conditions": {"ready": true}},
            ]
        }))
        .unwrap();
    suite
        .sim
        .create(route(
            INFRA,
            "v6-local",
            "same-namespace",
            &hosts(&["v6.example"]),
            json!({"name": "v6-local", "port": 8080}),
        ))
        .unwrap();

    let g = suite
        .until(
            "InvalidRouteKinds",
            "Gateway",
            INFRA,
            "kinds-elsewhere",
            |g| {
                let l = &g["status"]["listeners"][0];
                condition(&l["conditions"], "ResolvedRefs").is_some_and(|c| {
                    c["status"] == "False"
                        && c["reason"] == "InvalidRouteKinds"
                        && c["observedGeneration"] == g["metadata"]["generation"]
                })
            },
        )
        .await;
    let l = &g["status"]["listeners"][0];
    assert_eq!(l["supportedKinds"], json!([]), "{g:#}");
    assert_eq!(l["attachedRoutes"], 0, "{g:#}");
    let via = suite
        .until(
            "the route's parent written",
            "HTTPRoute",
            INFRA,
            "via-elsewhere",
            |r| parents(r, "kinds-elsewhere").next().is_some(),
        )
        .await;
    assert!(
        parents(&via, "kinds-elsewhere").all(
            |p| condition(&p["conditions"], "Accepted").is_some_and(|c| c["status"] == "False")
        ),
        "{via:#}"
    );
    if let Some(ip) = g["status"]["addresses"][0]["value"].as_str() {
        let addr = SocketAddr::new(ip.parse().unwrap(), 80);
        if let Ok(a) = request(addr, "elsewhere.example", "/", &[]).await {
            assert_eq!(a.status, 404, "never served: {}", a.text());
        }
    }

    let addr = port_80(&suite, "same-namespace").await;
    suite
        .route_parent(
            INFRA,
            "v6-local",
            "same-namespace",
            "Accepted",
            true,
            "Accepted",
        )
        .await;
    expect(addr, &Expect::status("v6.example", "/", 503)).await;
    let body = request(addr, "v6.example", "/", &[]).await.unwrap().text();
    assert!(
        body.contains("endpoint ::1 port 3000 is a loopback address")
            && body.contains("endpoint fe80::1 port 3000 is a link-local address"),
        "{body}"
    );
    for name in ["as-listenerset", "as-evil-gateway"] {
        expect(addr, &Expect::status(&format!("{name}.example"), "/", 404)).await;
        let r = suite.object("HTTPRoute", INFRA, name).unwrap();
        assert!(
            !parents(&r, "same-namespace")
                .any(|p| condition(&p["conditions"], "Accepted")
                    .is_some_and(|c| c["status"] == "True")),
            "{r:#}"
        );
    }
    let g = suite.object("Gateway", INFRA, "same-namespace").unwrap();
    // The one route it takes is v6-local.
    assert_eq!(g["status"]["listeners"][0]["attachedRoutes"], 1, "{g:#}");
}

/// An HTTPS Gateway on port 443 named `name` whose one listener takes its certificate
/// from Secret `secret` in the infra namespace.
fn https_gateway(name: &str, secret: &str) -> Value {
    json!({
        "apiVersion": V1, "kind": "Gateway",
        "metadata": {"name": name, "namespace": INFRA},
        "spec": {
            "gatewayClassName": leafgate_tests::gateway_api::CLASS,
            "listeners": [{
                "name": "https", "port": 443, "protocol": "HTTPS",
                "tls": {"certificateRefs": [{"kind": "Secret", "name": secret}]}
            }]
        }
    })
}

/// The status of `GET /` for example.org over TLS at `addr`, trusting the suite's CA.
async fn over_tls(suite: &Suite, addr: SocketAddr) -> Result<u16, String> {
    let sent = leafgate_tests::gateway_api::send_over(
        addr,
        Some(suite.tls()),
        "GET",
        "example.org",
        "/",
        &[],
    )
    .await;
    sent.map(|a| a.status.as_u16())
}

#[tokio::test]
async fn certificates_that_do_not_fit_or_are_not_pem_are_refused_and_others_still_serve() {
    let suite = Suite::start(163, Config::new()).await;
    let dir = suite.dir().to_path_buf();
    // A certificate with another certificate's key.
    let a = suite.ca.issue(&dir, "fit-a", &["a.example"]);
    let b = suite.ca.issue(&dir, "fit-b", &["b.example"]);
    let secret = leafgate_tests::ingress::tls_secret;
    suite
        .sim
        .create(secret(INFRA, "mismatched", &a.cert, &b.key))
        .unwrap();
    // Half a mebibyte that only looks like PEM.
    let junk = dir.join("junk.pem");
    let mut text = String::from("-----BEGIN CERTIFICATE-----\n");
    while text.len() < 512 * 1024 {
        text.push_str("bm90IGEgY2VydGlmaWNhdGUgYXQgYWxs!!\n");
    }
    text.push_str("-----END CERTIFICATE-----\n");
    std::fs::write(&junk, text).unwrap();
    suite
        .sim
        .create(secret(INFRA, "junk", &junk, &junk))
        .unwrap();
    for (gateway, secret) in [
        ("mismatched-key", "mismatched"),
        ("junk-pem", "junk"),
        ("valid", "tls-validity-checks-certificate"),
    ] {
        suite.sim.create(https_gateway(gateway, secret)).unwrap();
    }
    for (gateway, why) in [
        ("mismatched-key", "tls.key does not fit tls.crt"),
        ("junk-pem", "tls.crt is not PEM certificates"),
    ] {
        let g = suite
            .until(why, "Gateway", INFRA, gateway, |g| {
                condition(&g["status"]["listeners"][0]["conditions"], "ResolvedRefs").is_some_and(
                    |c| {
                        c["status"] == "False"
                            && c["reason"] == "InvalidCertificateRef"
                            && c["message"].as_str().is_some_and(|m| m.contains(why))
                    },
                )
            })
            .await;
        let programmed = condition(&g["status"]["conditions"], "Programmed").unwrap();
        assert_eq!(programmed["status"], "False", "{gateway}: {g:#}");
        // The leader reports it: a Warning Event on the Gateway naming the listener.
        let listener = g["spec"]["listeners"][0]["name"]
            .as_str()
            .unwrap()
            .to_string();
        warned(
            &suite,
            "Gateway",
            INFRA,
            gateway,
            "InvalidCertificateRef",
            &format!("listener {listener}: "),
        )
        .await;
        // Nothing is bound for it: its address answers no TLS on 443.
        if let Some(ip) = g["status"]["addresses"][0]["value"].as_str() {
            let sent = over_tls(&suite, SocketAddr::new(ip.parse().unwrap(), 443)).await;
            assert!(sent.is_err(), "{gateway} answered: {sent:?}");
        }
    }
    // The valid Gateway beside them serves over TLS (404: no route).
    let ip = suite.gateway_address("valid").await;
    let addr = SocketAddr::new(ip, 443);
    until("the valid Gateway answers over TLS", || async {
        over_tls(&suite, addr).await == Ok(404)
    })
    .await;
    for gateway in ["mismatched-key", "junk-pem"] {
        warned_once(&suite, "Gateway", INFRA, gateway, "InvalidCertificateRef");
    }
    assert!(warnings(&suite, "Gateway", INFRA, "valid", "InvalidCertificateRef").is_empty());
}

/// Two tenants' HTTPS Gateways on one shared address (range `n`, a pool of one): each
/// tenant's namespace, `kubernetes.io/tls` Secret for its hostname, Service with one pod,
/// Gateway with an HTTPS listener on 443 for its hostname, and route.
struct SharedHttps {
    suite: Suite,
    addr: SocketAddr,
}

impl SharedHttps {
    async fn start(n: u8) -> SharedHttps {
        let tenants = Config::new()
            .tenant(
                Tenant::new("tenant-a")
                    .namespaces(["tenant-a"])
                    .hosts(["a.example"]),
            )
            .tenant(
                Tenant::new("tenant-b")
                    .namespaces(["tenant-b", "a-intruder"])
                    .hosts(["b.example"]),
            );
        let addr = SocketAddr::from(([127, 0, n, 10], 443));
        let pool = json!({ "addresses": [addr.ip().to_string()] });
        let mut suite = Suite::start_with(n, tenants, pool).await;
        for (ns, host) in [("tenant-a", "a.example"), ("tenant-b", "b.example")] {
            suite
                .sim
                .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))
                .unwrap();
            suite.apply(&secret_yaml(&suite, ns, "cert", host)).await;
            suite
                .sim
                .create(json!({
                    "apiVersion": "v1", "kind": "Service",
                    "metadata": {"name": "web", "namespace": ns},
                    "spec": {"ports": [{"name": "http", "port": 8080, "targetPort": 3000}]}
                }))
                .unwrap();
            suite.pods_for(ns, "web", "http", 1).await;
            suite
                .sim
                .create(tls_gateway(ns, "gw", host, ns, "cert"))
                .unwrap();
            let mut r = route(
                ns,
                "web",
                "gw",
                &hosts(&[host]),
                json!({"name": "web", "port": 8080}),
            );
            r["spec"]["parentRefs"][0]["namespace"] = json!(ns);
            suite.sim.create(r).unwrap();
        }
        for ns in ["tenant-a", "tenant-b"] {
            suite
                .route_parent(ns, "web", "gw", "Accepted", true, "Accepted")
                .await;
        }
        SharedHttps { suite, addr }
    }

    /// A TLS connection to the shared address asking for `sni`, and the certificate it
    /// was shown.
    async fn connect(&self, sni: &str) -> Result<(TlsStream, Vec<u8>), String> {
        let tcp = tokio::net::TcpStream::connect(self.addr)
            .await
            .map_err(|e| e.to_string())?;
        let name = rustls::pki_types::ServerName::try_from(sni.to_string()).unwrap();
        let tls = tokio_rustls::TlsConnector::from(self.suite.tls())
            .connect(name, tcp)
            .await
            .map_err(|e| format!("TLS handshake: {e}"))?;
        let shown = tls.get_ref().1.peer_certificates().unwrap()[0].to_vec();
        Ok((tls, shown))
    }

    /// `GET /` for `host` on a new connection asking for `sni`: the status and the
    /// namespace of the pod that answered (empty for leafgate's own answer).
    async fn get(&self, sni: &str, host: &str) -> (u16, String, String) {
        let tls = match self.connect(sni).await {
            Ok((tls, _)) => tls,
            Err(e) => return (0, String::new(), e),
        };
        let req = http::Request::get("/")
            .header("host", host)
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap();
        let a = leafgate_tests::client::send_h1(tls, req).await;
        let body: Value = serde_json::from_slice(&a.body).unwrap_or(Value::Null);
        let ns = body["namespace"].as_str().unwrap_or("").to_string();
        (
            a.status.as_u16(),
            ns,
            String::from_utf8_lossy(&a.body).into_owned(),
        )
    }

    /// The requests the pod of tenant `ns` was sent.
    fn served(&self, ns: &str) -> u64 {
        let pod = self.suite.pods.iter().find(|p| p.namespace == ns).unwrap();
        pod.served()
    }
}

type TlsStream = tokio_rustls::client::TlsStream<tokio::net::TcpStream>;

/// A `kubernetes.io/tls` Secret `ns/name` for `host`, issued by the suite's CA anew, as
/// YAML for `kubectl apply` (which creates it or replaces its data).
fn secret_yaml(suite: &Suite, ns: &str, name: &str, host: &str) -> String {
    let stem = format!("{ns}-{name}-{}", rand_stem());
    let files = suite.ca.issue(suite.dir(), &stem, &[host]);
    leafgate_tests::ingress::tls_secret(ns, name, &files.cert, &files.key).to_string()
}

/// A stem no earlier issue in the test used (each rotation writes new files).
fn rand_stem() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A Gateway `ns/name` with one HTTPS listener on 443 for `host`, its certificate the
/// Secret `secret_ns/secret` (same namespace: no grant needed).
fn tls_gateway(ns: &str, name: &str, host: &str, secret_ns: &str, secret: &str) -> Value {
    json!({
        "apiVersion": V1, "kind": "Gateway",
        "metadata": {"name": name, "namespace": ns},
        "spec": {
            "gatewayClassName": leafgate_tests::gateway_api::CLASS,
            "listeners": [{
                "name": "https", "port": 443, "protocol": "HTTPS", "hostname": host,
                "tls": {"certificateRefs": [{"kind": "Secret", "name": secret, "namespace": secret_ns}]},
                "allowedRoutes": {"namespaces": {"from": "Same"}}
            }]
        }
    })
}

/// A client that asks for one tenant's name by SNI and another tenant's host by `Host`
/// on the Gateways' shared address and port gets 421 Misdirected Request (RFC 9110
/// §15.5.20; Envoy Gateway and nginx answer so), from leafgate and never the other
/// tenant's pod, whichever way round; each name asked for consistently is served by its
/// own tenant's pod.
#[tokio::test]
async fn a_host_that_disagrees_with_the_server_name_is_misdirected() {
    let bed = SharedHttps::start(167).await;
    until("tenant-a served over TLS", || async {
        bed.get("a.example", "a.example").await.0 == 200
    })
    .await;
    assert_eq!(bed.get("b.example", "b.example").await.1, "tenant-b");
    assert_eq!(bed.get("a.example", "a.example:443").await.1, "tenant-a");
    let (a, b) = (bed.served("tenant-a"), bed.served("tenant-b"));
    for (sni, host) in [
        ("a.example", "b.example"),
        ("b.example", "a.example"),
        ("a.example", "B.EXAMPLE:443"),
    ] {
        let (status, ns, body) = bed.get(sni, host).await;
        assert_eq!(status, 421, "SNI {sni}, Host {host}: {body}");
        assert!(ns.is_empty(), "a pod answered: {body}");
        assert!(body.contains("another certificate"), "{body}");
    }
    assert_eq!((bed.served("tenant-a"), bed.served("tenant-b")), (a, b));
}

/// A Gateway of another tenant on the shared address asking for tenant-a's hostname with
/// a certificate of its own (a Secret in its namespace, issued for a.example) does not
/// get it: the older Gateway keeps the name, so a client asking for a.example is still
/// shown tenant-a's certificate and served by tenant-a's pod, every time (before, the
/// listeners' order decided, and the intruder's certificate was shown now and then).
#[tokio::test]
async fn a_gateway_on_the_shared_address_cannot_take_another_gateway_s_certificate() {
    let bed = SharedHttps::start(168).await;
    until("tenant-a served over TLS", || async {
        bed.get("a.example", "a.example").await.0 == 200
    })
    .await;
    let (_, theirs) = bed.connect("a.example").await.unwrap();
    // Created a second later (creation times are in seconds): tenant-a's Gateway is the
    // older, though the intruder's namespace sorts first.
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let intruder = "a-intruder";
    let suite = &bed.suite;
    suite
        .sim
        .create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": intruder}}))
        .unwrap();
    suite
        .apply(&secret_yaml(suite, intruder, "cert", "a.example"))
        .await;
    suite
        .sim
        .create(tls_gateway(intruder, "gw", "a.example", intruder, "cert"))
        .unwrap();
    suite
        .until(
            "the intruding Gateway handled",
            "Gateway",
            intruder,
            "gw",
            |g| g["status"]["listeners"][0]["conditions"].is_array(),
        )
        .await;
    // Its listener changes nothing of what a.example is shown and served by.
    for _ in 0..10 {
        let (_, shown) = bed.connect("a.example").await.unwrap();
        assert_eq!(shown, theirs, "a.example was shown another certificate");
        assert_eq!(bed.get("a.example", "a.example").await.1, "tenant-a");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// A Secret updated in place (the certificate rotated) reaches new connections, which are
/// shown the new certificate, while a connection opened before keeps working with the
/// old one.
#[tokio::test]
async fn a_rotated_certificate_reaches_new_connections_and_open_ones_keep_working() {
    let bed = SharedHttps::start(169).await;
    until("tenant-a served over TLS", || async {
        bed.get("a.example", "a.example").await.0 == 200
    })
    .await;
    let (open, before) = bed.connect("a.example").await.unwrap();
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(open))
            .await
            .unwrap();
    tokio::spawn(conn);
    let get = || {
        http::Request::get("/")
            .header("host", "a.example")
            .body(http_body_util::Empty::<bytes::Bytes>::new())
            .unwrap()
    };
    let res = sender.send_request(get()).await.unwrap();
    assert_eq!(res.status(), 200);
    http_body_util::BodyExt::collect(res.into_body())
        .await
        .unwrap();
    bed.suite
        .apply(&secret_yaml(&bed.suite, "tenant-a", "cert", "a.example"))
        .await;
    until("new connections shown the new certificate", || async {
        bed.connect("a.example")
            .await
            .is_ok_and(|(_, shown)| shown != before)
    })
    .await;
    assert_eq!(bed.get("a.example", "a.example").await.1, "tenant-a");
    // The connection opened before the rotation is served still.
    for _ in 0..3 {
        let res = sender.send_request(get()).await.unwrap();
        assert_eq!(res.status(), 200);
        http_body_util::BodyExt::collect(res.into_body())
            .await
            .unwrap();
    }
}

/// A route behind an HTTPS listener to a Service whose endpoint is the gateway's admin
/// API, with `allow_backends` opening all of loopback (range 144): the endpoint is still
/// refused as one of the gateway's own addresses (the admin's bound port, though its
/// config says port 0), the answer over TLS is the 503 that says so, and never the admin
/// API's.
#[tokio::test]
async fn a_backend_at_the_admin_port_is_refused_behind_https_with_loopback_allowed() {
    let loopback = json!({ "allow_backends": ["127.0.0.0/8"] });
    let suite = Suite::start_with(144, Config::new(), loopback).await;
    let admin = admin_service(&suite);
    suite
        .sim
        .create(https_gateway(
            "admin-https",
            "tls-validity-checks-certificate",
        ))
        .unwrap();
    let mut r = route(
        INFRA,
        "admin",
        "admin-https",
        &hosts(&["example.org"]),
        json!({"name": "admin", "port": 8080}),
    );
    r["spec"]["parentRefs"][0]["sectionName"] = json!("https");
    suite.sim.create(r).unwrap();
    suite
        .route_parent(INFRA, "admin", "admin-https", "Accepted", true, "Accepted")
        .await;
    let addr = SocketAddr::new(suite.gateway_address("admin-https").await, 443);
    let tls = Some(suite.tls());
    let send = || {
        leafgate_tests::gateway_api::send_over(
            addr,
            tls.clone(),
            "GET",
            "example.org",
            "/status",
            &[],
        )
    };
    until("the route answers over TLS", || async {
        send().await.is_ok_and(|a| a.status == 503)
    })
    .await;
    let body = send().await.unwrap().text();
    let own = format!(
        "endpoint {} port {} is one of the gateway's own addresses",
        admin.ip(),
        admin.port()
    );
    assert!(body.contains(&own) && !body.contains("listeners"), "{body}");
}
