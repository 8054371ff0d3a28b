//! The conformance tests of matches beyond the path, ported: headers, query parameters
//! and methods, within one route and across routes, with the spec's precedence. Each
//! case is one of the upstream test's `ExpectedResponse`s.

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, Suite, expect, fixture};

const V1: &str = "infra-backend-v1";
const V2: &str = "infra-backend-v2";
const V3: &str = "infra-backend-v3";

#[tokio::test]
async fn http_route_header_matching() {
    let suite = Suite::start(120, Config::new()).await;
    suite
        .apply(&fixture("httproute-header-matching.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "header-matching")
        .await;
    suite
        .resolved(INFRA, "header-matching", "same-namespace")
        .await;
    let ok = |headers: &'static [(&'static str, &'static str)], backend| {
        Expect::ok("", "/", backend).headers(headers)
    };
    let missing = |headers: &'static [(&'static str, &'static str)]| {
        Expect::status("", "/", 404).headers(headers)
    };
    for e in [
        ok(&[("Version", "one")], V1),
        ok(&[("Version", "two")], V2),
        ok(&[("Version", "two"), ("Color", "orange")], V1),
        ok(&[("Version", "two"), ("Color", "blue")], V2),
        missing(&[("Color", "orange")]),
        missing(&[("Some-Other-Header", "one")]),
        ok(&[("Color", "blue")], V1),
        ok(&[("Color", "green")], V1),
        ok(&[("Color", "red")], V2),
        ok(&[("Color", "yellow")], V2),
        missing(&[("Color", "purple")]),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_matching() {
    let suite = Suite::start(121, Config::new()).await;
    suite.apply(&fixture("httproute-matching.yaml")).await;
    let addr = suite.accepted("same-namespace", INFRA, "matching").await;
    suite.resolved(INFRA, "matching", "same-namespace").await;
    for e in [
        Expect::ok("", "/", V1),
        Expect::ok("", "/example", V1),
        Expect::ok("", "/", V1).headers(&[("Version", "one")]),
        Expect::ok("", "/v2", V2),
        Expect::ok("", "/v2/example", V2),
        Expect::ok("", "/", V2).headers(&[("Version", "two")]),
        Expect::ok("", "/v2/", V2),
        // Not a path segment prefix so should not match /v2.
        Expect::ok("", "/v2example", V1),
        Expect::ok("", "/foo/v2/example", V1),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_matching_across_routes() {
    let suite = Suite::start(122, Config::new()).await;
    suite
        .apply(&fixture("httproute-matching-across-routes.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "matching-part1")
        .await;
    suite
        .accepted("same-namespace", INFRA, "matching-part2")
        .await;
    suite
        .resolved(INFRA, "matching-part1", "same-namespace")
        .await;
    suite
        .resolved(INFRA, "matching-part2", "same-namespace")
        .await;
    for e in [
        Expect::ok("example.com", "/", V1),
        Expect::ok("example.com", "/example", V1),
        Expect::ok("example.net", "/example", V1),
        Expect::ok("example.com", "/example", V1).headers(&[("Version", "one")]),
        Expect::ok("example.com", "/v2", V2),
        // v2 matches are limited to example.com
        Expect::ok("example.net", "/v2", V1),
        Expect::ok("example.com", "/v2/example", V2),
        Expect::ok("example.com", "/", V2).headers(&[("Version", "two")]),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_query_param_matching() {
    let suite = Suite::start(123, Config::new()).await;
    suite
        .apply(&fixture("httproute-query-param-matching.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "query-param-matching")
        .await;
    suite
        .resolved(INFRA, "query-param-matching", "same-namespace")
        .await;
    for e in [
        Expect::ok("", "/?animal=whale", V1),
        Expect::ok("", "/?animal=dolphin", V2),
        Expect::ok("", "/?animal=dolphin&color=blue", V3),
        Expect::ok("", "/?ANIMAL=Whale", V3),
        Expect::ok("", "/?animal=whale&otherparam=irrelevant", V1),
        Expect::ok("", "/?animal=dolphin&color=yellow", V2),
        Expect::status("", "/?color=blue", 404),
        Expect::status("", "/?animal=dog", 404),
        Expect::status("", "/?animal=whaledolphin", 404),
        Expect::status("", "/", 404),
        // Combinations of query param matching with other core matches.
        Expect::ok("", "/path1?animal=whale", V1),
        Expect::ok("", "/?animal=whale", V2).headers(&[("version", "one")]),
        Expect::ok("", "/path2?animal=whale", V3).headers(&[("version", "two")]),
        // Matches OR'd together match when only one of them is used.
        Expect::ok("", "/path3?animal=shark", V1),
        Expect::ok("", "/path4?animal=kraken", V1).headers(&[("version", "three")]),
        // Match types AND'd together do not match on a subset.
        Expect::status("", "/?animal=shark", 404),
        Expect::status("", "/path4?animal=kraken", 404),
        // The spec's precedence among several matches.
        Expect::ok("", "/path5?animal=hydra", V1),
        Expect::ok("", "/?animal=hydra", V3).headers(&[("version", "four")]),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_method_matching() {
    let suite = Suite::start(124, Config::new()).await;
    suite
        .apply(&fixture("httproute-method-matching.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "method-matching")
        .await;
    suite
        .resolved(INFRA, "method-matching", "same-namespace")
        .await;
    for e in [
        Expect::ok("", "/", V1).method("POST"),
        Expect::ok("", "/", V2).method("GET"),
        Expect::status("", "/", 404).method("HEAD"),
        // Combinations of method matching with other core matches.
        Expect::ok("", "/path1", V1).method("GET"),
        Expect::ok("", "/", V2)
            .method("PUT")
            .headers(&[("version", "one")]),
        Expect::ok("", "/path2", V3)
            .method("POST")
            .headers(&[("version", "two")]),
        // Matches OR'd together match when only one of them is used.
        Expect::ok("", "/path3", V1).method("PATCH"),
        Expect::ok("", "/path4", V1)
            .method("DELETE")
            .headers(&[("version", "three")]),
        // Match types AND'd together do not match on a subset.
        Expect::status("", "/", 404).method("PUT"),
        Expect::status("", "/path4", 404).method("DELETE"),
        // The spec's precedence among several matches.
        Expect::ok("", "/path5", V1).method("PATCH"),
        Expect::ok("", "/", V2)
            .method("PATCH")
            .headers(&[("version", "four")]),
    ] {
        expect(addr, &e).await;
    }
}
