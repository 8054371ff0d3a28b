//! The conformance tests of `RequestRedirect`, ported: each case is one of the upstream
//! test's `ExpectedResponse`s, its `Location` checked as `http.go` checks it (scheme,
//! host, port and path; no port, or the scheme's own, when none is expected). A redirect
//! is leafgate's own answer: no backend is asked.

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, Redirected, Suite, expect, fixture};

/// The suite on range `n` with `manifest` applied and route `route` accepted with its
/// references resolved on `same-namespace`; then each of `cases`.
async fn redirects(n: u8, manifest: &str, route: &str, cases: &[Expect<'_>]) {
    let suite = Suite::start(n, Config::new()).await;
    suite.apply(&fixture(manifest)).await;
    let addr = suite.accepted("same-namespace", INFRA, route).await;
    suite.resolved(INFRA, route, "same-namespace").await;
    for e in cases {
        expect(addr, e).await;
    }
}

fn to(host: &'static str, path: &'static str) -> Redirected<'static> {
    Redirected {
        host,
        path,
        ..Redirected::default()
    }
}

#[tokio::test]
async fn http_route_redirect_host_and_status() {
    redirects(
        130,
        "httproute-redirect-host-and-status.yaml",
        "redirect-host-and-status",
        &[
            Expect::redirect("", "/hostname-redirect", 302, to("example.org", "")),
            Expect::redirect("", "/host-and-status", 301, to("example.org", "")),
        ],
    )
    .await;
}

#[tokio::test]
async fn http_route_redirect_scheme() {
    let https = |host| Redirected {
        scheme: "https",
        host,
        ..Redirected::default()
    };
    redirects(
        131,
        "httproute-redirect-scheme.yaml",
        "redirect-scheme",
        &[
            Expect::redirect("", "/scheme", 302, https("")),
            Expect::redirect("", "/scheme-and-host", 302, https("example.org")),
            Expect::redirect("", "/scheme-and-status", 301, https("")),
            Expect::redirect("", "/scheme-and-host-and-status", 302, https("example.org")),
        ],
    )
    .await;
}

#[tokio::test]
async fn http_route_redirect_path() {
    redirects(
        132,
        "httproute-redirect-path.yaml",
        "redirect-path",
        &[
            Expect::redirect(
                "",
                "/original-prefix/lemon",
                302,
                to("", "/replacement-prefix/lemon"),
            ),
            Expect::redirect(
                "",
                "/full/path/original",
                302,
                to("", "/full-path-replacement"),
            ),
            Expect::redirect(
                "",
                "/path-and-host",
                302,
                to("example.org", "/replacement-prefix"),
            ),
            Expect::redirect("", "/path-and-status", 301, to("", "/replacement-prefix")),
            Expect::redirect(
                "",
                "/full-path-and-host",
                302,
                to("example.org", "/replacement-full"),
            ),
            Expect::redirect(
                "",
                "/full-path-and-status",
                301,
                to("", "/replacement-full"),
            ),
        ],
    )
    .await;
}

#[tokio::test]
async fn http_route_redirect_port() {
    let port = |host| Redirected {
        host,
        port: "8083",
        ..Redirected::default()
    };
    redirects(
        133,
        "httproute-redirect-port.yaml",
        "redirect-port",
        &[
            Expect::redirect("", "/port", 302, port("")),
            Expect::redirect("", "/port-and-host", 302, port("example.org")),
            Expect::redirect("", "/port-and-status", 301, port("")),
            Expect::redirect("", "/port-and-host-and-status", 302, port("example.org")),
        ],
    )
    .await;
}

#[tokio::test]
async fn http_route_303_redirect() {
    redirects(
        134,
        "httproute-303-redirect.yaml",
        "303-redirect",
        &[Expect::redirect("", "/see-other", 303, to("", "/see-other")).method("POST")],
    )
    .await;
}

#[tokio::test]
async fn http_route_307_redirect() {
    redirects(
        135,
        "httproute-307-redirect.yaml",
        "307-redirect",
        &[Expect::redirect(
            "",
            "/temporary",
            307,
            to("", "/temporary"),
        )],
    )
    .await;
}

#[tokio::test]
async fn http_route_308_redirect() {
    redirects(
        136,
        "httproute-308-redirect.yaml",
        "308-redirect",
        &[Expect::redirect(
            "",
            "/permanent",
            308,
            to("", "/permanent"),
        )],
    )
    .await;
}
