//! Gateway API routes on the HTTP/1.1 fast path against hyper's path, differentially:
//! one root with the suite's leafgate (its Gateway listeners on the fast path, the
//! default) and a second replica with `[kubernetes.gateway] http1_fast_path = false`,
//! both serving the same Gateway; the same bytes sent to each. Every answer (status,
//! reason, headers, and the echo of what reached the backend: method, path, host and
//! headers) must be the same, the pod that answered aside (each replica keeps its own
//! round robin): header, query-parameter and method matches, both header modifiers
//! (the backend's own headers set, added to and removed, leafgate's 502 with them
//! applied), path and host rewrites, and a weighted split, whose shares are compared.
//! A route the fast path does not serve (a split with an invalid backend) answers alike
//! and is left to hyper on both.

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, expect};
use leafgate_tests::wire::{self, Outcome};
use serde_json::{Value, json};
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use super::Suite;

/// How long a client waits for more after the last byte it read.
const QUIET: Duration = Duration::from_millis(300);

const ROUTES: &str = r#"
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: differential
  namespace: gateway-conformance-infra
spec:
  parentRefs:
  - name: same-namespace
  hostnames: ["differential.example"]
  rules:
  - matches:
    - path: {type: PathPrefix, value: /}
      headers: [{name: version, value: one}]
    filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Set, value: set-value}]
        add: [{name: X-Add, value: add-value}]
        remove: [X-Remove]
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set: [{name: X-Answer-Set, value: set}, {name: Content-Type, value: text/x-modified}]
        add: [{name: X-Answer-Add, value: add}]
        remove: [X-Content-Type-Options, X-Answer-Gone]
    backendRefs: [{name: infra-backend-v1, port: 8080}]
  - matches:
    - path: {type: PathPrefix, value: /}
      queryParams: [{name: animal, value: whale}]
      method: POST
    backendRefs: [{name: infra-backend-v2, port: 8080}]
  - matches:
    - path: {type: Exact, value: /weighted}
    backendRefs:
    - {name: infra-backend-v1, port: 8080, weight: 70}
    - {name: infra-backend-v2, port: 8080, weight: 30}
  - matches: [{path: {type: PathPrefix, value: /prefix/one}}]
    filters: [{type: URLRewrite, urlRewrite: {hostname: rewritten.example, path: {type: ReplacePrefixMatch, replacePrefixMatch: /one}}}]
    backendRefs: [{name: infra-backend-v3, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /full}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplaceFullPath, replaceFullPath: /replaced}}}]
    backendRefs: [{name: infra-backend-v3, port: 8080}]
  - matches: [{path: {type: PathPrefix, value: /strip}}]
    filters: [{type: URLRewrite, urlRewrite: {path: {type: ReplacePrefixMatch, replacePrefixMatch: /}}}]
    backendRefs: [{name: infra-backend-v3, port: 8080}]
  - matches:
    - path: {type: PathPrefix, value: /down}
    filters:
    - type: ResponseHeaderModifier
      responseHeaderModifier:
        set: [{name: Cache-Control, value: max-age=5}]
        add: [{name: X-Answer-Add, value: add}]
        remove: [Content-Type]
    backendRefs: [{name: down-backend, port: 8080}]
---
apiVersion: gateway.networking.k8s.io/v1
kind: HTTPRoute
metadata:
  name: differential-slow
  namespace: gateway-conformance-infra
spec:
  parentRefs:
  - name: same-namespace
  hostnames: ["slow.example"]
  rules:
  - filters:
    - type: RequestHeaderModifier
      requestHeaderModifier:
        set: [{name: X-Set, value: set-value}]
    backendRefs:
    - {name: infra-backend-v1, port: 8080, weight: 1}
    - {name: no-such-backend, port: 8080, weight: 1}
---
apiVersion: v1
kind: Service
metadata:
  name: down-backend
  namespace: gateway-conformance-infra
spec:
  ports:
  - {name: first-port, protocol: TCP, port: 8080, targetPort: 3000}
"#;

/// An EndpointSlice for `down-backend` at an address of the pods' range nothing
/// listens on: every connection refused.
fn down_slice(range: u8) -> String {
    format!(
        r#"
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: down-backend-ip4
  namespace: gateway-conformance-infra
  labels:
    kubernetes.io/service-name: down-backend
addressType: IPv4
ports:
- {{name: first-port, port: 3000, protocol: TCP}}
endpoints:
- addresses: ["127.{range}.0.250"]
  conditions: {{ready: true}}
"#
    )
}

/// `outcome` without what differs by the pod that answered: the echo's `pod` (and the
/// body's length with it).
fn without_pod(mut outcome: Outcome) -> Outcome {
    for a in &mut outcome.answers {
        a.framing.clear();
        a.headers.retain(|(n, _)| n != "content-length");
        if let Ok(mut body) = serde_json::from_str::<Value>(&a.body) {
            if let Some(fields) = body.as_object_mut() {
                fields.remove("pod");
            }
            a.body = body.to_string();
        }
    }
    outcome
}

/// The Service that answered each answer of `outcome`.
fn services(outcome: &Outcome) -> Vec<String> {
    let service = |body: &str| {
        let body: Value = serde_json::from_str(body).unwrap_or(Value::Null);
        let pod = body["pod"].as_str().unwrap_or("").to_string();
        pod.rsplit_once('-')
            .map_or(pod.clone(), |(s, _)| s.to_string())
    };
    outcome.answers.iter().map(|a| service(&a.body)).collect()
}

#[tokio::test]
async fn gateway_routes_are_served_alike_on_the_fast_path_and_on_hyper_s() {
    let unmanaged = json!({ "allow_unmanaged_endpointslices": true });
    let mut keys = unmanaged.clone();
    keys["http1_fast_path"] = json!(true);
    let suite = Suite::start_with(164, Config::new(), keys).await;
    suite.apply(ROUTES).await;
    suite.apply(&down_slice(suite.range)).await;
    let fast = suite
        .accepted("same-namespace", INFRA, "differential")
        .await;
    let mut keys = unmanaged;
    keys["http1_fast_path"] = json!(false);
    let twin = suite.replica(165, keys).await;
    let IpAddr::V4(ip) = fast.ip() else {
        panic!("{fast}")
    };
    let hyper = SocketAddr::from(([127, 0, 165, ip.octets()[3]], fast.port()));
    for addr in [fast, hyper] {
        expect(
            addr,
            &Expect::ok("differential.example", "/weighted", "infra-backend-v"),
        )
        .await;
    }
    async fn served(listener: SocketAddr, gw: &leafgate_tests::TestGateway) -> u64 {
        gw.read_in_place(&format!("gateway/{listener}")).await
    }
    let before = served(fast, &suite.gateway).await;
    let request = |head: &str, body: &str| {
        format!("{head}\r\nHost: differential.example\r\nConnection: close\r\n\r\n{body}")
            .into_bytes()
    };
    let cases: &[(&str, Vec<u8>, &str)] = &[
        (
            "header match and both modifiers",
            request(
                "GET /any?x=1 HTTP/1.1\r\nversion: one\r\nX-Set: client\r\nx-set: again\r\nX-Add: client\r\nX-Remove: r\r\nX-Kept: k",
                "",
            ),
            "GET",
        ),
        (
            "the backend's own headers set, added to and removed",
            request(
                "GET / HTTP/1.1\r\nversion: one\r\nX-Echo-Set-Header: X-Answer-Set:backend,X-Answer-Add:backend,X-Answer-Gone:g,X-Answer-Kept:k",
                "",
            ),
            "GET",
        ),
        (
            "the first of two version lines decides",
            request("GET / HTTP/1.1\r\nversion: two\r\nversion: one", ""),
            "GET",
        ),
        (
            "a query parameter and a method",
            request(
                "POST /p?animal=whale&animal=dolphin HTTP/1.1\r\nContent-Length: 5",
                "hello",
            ),
            "POST",
        ),
        (
            "the query's first value decides",
            request(
                "POST /p?animal=dolphin&animal=whale HTTP/1.1\r\nContent-Length: 0",
                "",
            ),
            "POST",
        ),
        (
            "the method is not the rule's",
            request("GET /p?animal=whale HTTP/1.1", ""),
            "GET",
        ),
        (
            "a prefix and the host rewritten",
            request("GET /prefix/one/two?q=1 HTTP/1.1\r\nAccept: */*", ""),
            "GET",
        ),
        (
            "a prefix rewritten on its own segment",
            request("GET /prefix/one HTTP/1.1", ""),
            "GET",
        ),
        (
            "not the prefix's segment",
            request("GET /prefix/onex HTTP/1.1", ""),
            "GET",
        ),
        (
            "a full path replaced",
            request("GET /full/a/b?keep=this HTTP/1.1", ""),
            "GET",
        ),
        (
            "a prefix replaced by /",
            request("GET /strip/x/y HTTP/1.1", ""),
            "GET",
        ),
        (
            "leafgate's own 502 with the response modifier",
            request("GET /down HTTP/1.1", ""),
            "GET",
        ),
    ];
    for (what, bytes, method) in cases {
        let pieces = vec![bytes.clone()];
        let methods = [*method];
        let (f, h) = tokio::join!(
            wire::exchange(fast, &pieces, &methods, QUIET),
            wire::exchange(hyper, &pieces, &methods, QUIET),
        );
        assert_eq!(f.answers.len(), 1, "{what}: {f:?}");
        assert_eq!(
            without_pod(f.clone()),
            without_pod(h),
            "{what}: the fast path and hyper's differ"
        );
        let status = f.answers[0].status;
        assert!(matches!(status, 200 | 404 | 502), "{what}: {f:?}");
    }
    // What reached the backends, as the rules say (beyond agreeing).
    let pieces = vec![cases[0].1.clone()];
    let first = wire::exchange(fast, &pieces, &["GET"], QUIET).await;
    let answer = &first.answers[0];
    let echo: Value = serde_json::from_str(&answer.body).unwrap();
    let sent = &echo["headers"];
    assert_eq!(sent["X-Set"], json!(["set-value"]), "{echo}");
    assert_eq!(sent["X-Add"], json!(["client", "add-value"]), "{echo}");
    assert!(
        sent.get("X-Remove").is_none() && sent["X-Kept"] == json!(["k"]),
        "{echo}"
    );
    let has = |name: &str, value: &str| answer.headers.contains(&(name.into(), value.into()));
    assert!(
        has("x-answer-set", "set") && has("content-type", "text/x-modified"),
        "{answer:?}"
    );
    assert!(
        !answer
            .headers
            .iter()
            .any(|(n, _)| n == "x-content-type-options"),
        "{answer:?}"
    );
    let pieces = vec![cases[6].1.clone()];
    let rewritten = wire::exchange(fast, &pieces, &["GET"], QUIET).await;
    let echo: Value = serde_json::from_str(&rewritten.answers[0].body).unwrap();
    assert_eq!(echo["path"], "/one/two?q=1", "{echo}");
    assert_eq!(echo["host"], "rewritten.example", "{echo}");

    // Every request above but the four 404s (hyper's, handed over) was the fast path's
    // on the suite's leafgate, and none on the replica's.
    let on_fast = served(fast, &suite.gateway).await - before;
    assert_eq!(
        on_fast,
        cases.len() as u64 - 4 + 2,
        "requests on the fast path"
    );
    assert_eq!(
        served(hyper, &twin).await,
        0,
        "the replica's listener is hyper's"
    );

    // The weighted split: 100 requests each, the same shares within one request.
    let hundred: Vec<u8> = (0..100)
        .flat_map(|i| {
            let close = if i == 99 { "Connection: close\r\n" } else { "" };
            format!("GET /weighted HTTP/1.1\r\nHost: differential.example\r\n{close}\r\n")
                .into_bytes()
        })
        .collect();
    let methods = ["GET"; 100];
    let pieces = vec![hundred];
    let (f, h) = tokio::join!(
        wire::exchange(fast, &pieces, &methods, QUIET),
        wire::exchange(hyper, &pieces, &methods, QUIET),
    );
    let count = |o: &Outcome, service: &str| services(o).iter().filter(|s| *s == service).count();
    for (o, path) in [(&f, "fast"), (&h, "hyper")] {
        assert_eq!(o.answers.len(), 100, "{path}");
        let (v1, v2) = (count(o, "infra-backend-v1"), count(o, "infra-backend-v2"));
        assert!(
            (68..=72).contains(&v1) && v1 + v2 == 100,
            "{path}: {v1} and {v2}"
        );
    }
    assert!(count(&f, "infra-backend-v1").abs_diff(count(&h, "infra-backend-v1")) <= 1);

    // A route the fast path lacks a feature for (an invalid backend's 500 in its split)
    // answers alike (the same answers over a run: each replica keeps its own place in
    // the split), and by hyper on both.
    let before = served(fast, &suite.gateway).await;
    let mut answers = [Vec::new(), Vec::new()];
    for _ in 0..4 {
        let pieces =
            vec![b"GET /s HTTP/1.1\r\nHost: slow.example\r\nConnection: close\r\n\r\n".to_vec()];
        for (addr, seen) in [fast, hyper].into_iter().zip(&mut answers) {
            let o = without_pod(wire::exchange(addr, &pieces, &["GET"], QUIET).await);
            let a = &o.answers[0];
            assert!(matches!(a.status, 200 | 500), "{o:?}");
            seen.push(format!("{} {:?} {}", a.status, a.headers, a.body));
        }
    }
    answers.iter_mut().for_each(|a| a.sort());
    assert_eq!(answers[0], answers[1], "slow.example");
    assert!(
        answers[0].iter().any(|a| a.starts_with("500")),
        "{answers:?}"
    );
    assert_eq!(served(fast, &suite.gateway).await, before);
}
