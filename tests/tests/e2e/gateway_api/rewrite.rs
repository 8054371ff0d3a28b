//! The conformance tests of `URLRewrite`, ported: each case is one of the upstream test's
//! `ExpectedResponse`s, the backend's echo checked for the host and path it was sent
//! (`ExpectedRequest`), the request's own header modifier applied beside the rewrite.

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, Suite, expect, fixture};

const V1: &str = "infra-backend-v1";
const V2: &str = "infra-backend-v2";

/// The headers both tests send with a header modifier beside the rewrite, and what the
/// backend must get of them.
const MODIFIED_SENT: [(&str, &str); 3] = [
    ("X-Header-Remove", "remove-val"),
    ("X-Header-Add-Append", "append-val-1"),
    ("X-Header-Set", "set-val"),
];
const MODIFIED_RECEIVED: [(&str, &str); 3] = [
    ("X-Header-Add", "header-val-1"),
    ("X-Header-Add-Append", "append-val-1,header-val-2"),
    ("X-Header-Set", "set-overwrites-values"),
];

#[tokio::test]
async fn http_route_rewrite_host() {
    let suite = Suite::start(137, Config::new()).await;
    suite.apply(&fixture("httproute-rewrite-host.yaml")).await;
    let addr = suite
        .accepted("same-namespace", INFRA, "rewrite-host")
        .await;
    suite
        .resolved(INFRA, "rewrite-host", "same-namespace")
        .await;
    let host = "rewrite.example";
    for e in [
        Expect::ok(host, "/one", V1).sent("one.example.org", "/one"),
        Expect::ok(host, "/two", V2).sent("example.org", "/two"),
        Expect::ok(host, "/rewrite-host-and-modify-headers", V2)
            .headers(&MODIFIED_SENT[..2])
            .sent("test.example.org", "/rewrite-host-and-modify-headers")
            .received(&MODIFIED_RECEIVED, &["X-Header-Remove"]),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_rewrite_path() {
    let suite = Suite::start(138, Config::new()).await;
    suite.apply(&fixture("httproute-rewrite-path.yaml")).await;
    let addr = suite
        .accepted("same-namespace", INFRA, "rewrite-path")
        .await;
    suite
        .resolved(INFRA, "rewrite-path", "same-namespace")
        .await;
    for e in [
        Expect::ok("", "/prefix/one/two", V1).sent("", "/one/two"),
        Expect::ok("", "/strip-prefix/three", V1).sent("", "/three"),
        Expect::ok("", "/strip-prefix", V1).sent("", "/"),
        Expect::ok("", "/full/one/two", V1).sent("", "/one"),
        Expect::ok("", "/full/rewrite-path-and-modify-headers/test", V1)
            .headers(&MODIFIED_SENT)
            .sent("", "/test")
            .received(&MODIFIED_RECEIVED, &["X-Header-Remove"]),
        Expect::ok("", "/prefix/rewrite-path-and-modify-headers/one", V1)
            .headers(&MODIFIED_SENT)
            .sent("", "/prefix/one")
            .received(&MODIFIED_RECEIVED, &["X-Header-Remove"]),
        // Not upstream: the query is kept.
        Expect::ok("", "/strip-prefix/three?a=1&b", V1).sent("", "/three?a=1&b"),
    ] {
        expect(addr, &e).await;
    }
}
