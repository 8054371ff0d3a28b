//! The conformance tests of what a rule does to a request beyond choosing it, ported:
//! weighted backends and the header modifiers. Each case is one of the upstream test's
//! `ExpectedResponse`s.

use std::collections::BTreeMap;
use std::net::SocketAddr;

use leafgate_tests::Config;
use leafgate_tests::gateway_api::{Expect, INFRA, Suite, expect, fixture, request};

const V1: &str = "infra-backend-v1";

/// `weight.TestWeightedDistribution`: 500 requests, 10 at a time, each answered 200 by a
/// pod of one of `weights`' backends; each backend's share within 0.05 of its weight.
async fn distribution(addr: SocketAddr, weights: &[(&str, f64)]) -> Result<(), String> {
    const TOTAL: usize = 500;
    const CONCURRENT: usize = 10;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let host = addr.to_string();
    for _ in 0..TOTAL / CONCURRENT {
        let batch = (0..CONCURRENT).map(|_| request(addr, &host, "/", &[]));
        for answer in futures_util::future::join_all(batch).await {
            let answer = answer?;
            if answer.status != 200 {
                return Err(format!("status {}", answer.status));
            }
            let pod = answer.json()["pod"].as_str().unwrap_or("").to_string();
            // The pod `name-<k>` of Service `name`.
            let backend = pod.rsplit_once('-').map_or(pod.as_str(), |(b, _)| b);
            *seen.entry(backend.to_string()).or_default() += 1;
        }
    }
    let active = weights.iter().filter(|(_, w)| *w > 0.0).count();
    if seen.len() != active {
        return Err(format!(
            "{} backends got traffic, not {active}: {seen:?}",
            seen.len()
        ));
    }
    for (backend, want) in weights {
        let got = seen.get(*backend).copied().unwrap_or(0) as f64 / TOTAL as f64;
        if (got - want).abs() > 0.05 {
            return Err(format!(
                "{backend}: {got} of the requests, not {want} (+/-0.05): {seen:?}"
            ));
        }
    }
    Ok(())
}

#[tokio::test]
async fn http_route_weight() {
    let suite = Suite::start(125, Config::new()).await;
    suite.apply(&fixture("httproute-weight.yaml")).await;
    let addr = suite
        .accepted("same-namespace", INFRA, "weighted-backends")
        .await;
    suite
        .resolved(INFRA, "weighted-backends", "same-namespace")
        .await;
    expect(addr, &Expect::ok("", "/", "infra-backend-v")).await;
    let weights = [
        (V1, 0.7),
        ("infra-backend-v2", 0.3),
        ("infra-backend-v3", 0.0),
    ];
    // As upstream, a run that misses by chance is tried again, 10 runs at most.
    let mut failures = Vec::new();
    for _ in 0..10 {
        match distribution(addr, &weights).await {
            Ok(()) => return,
            Err(why) => failures.push(why),
        }
    }
    panic!("the weighted distribution failed 10 times: {failures:#?}");
}

#[tokio::test]
async fn http_route_request_header_modifier() {
    let suite = Suite::start(126, Config::new()).await;
    suite
        .apply(&fixture("httproute-request-header-modifier.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "request-header-modifier")
        .await;
    suite
        .resolved(INFRA, "request-header-modifier", "same-namespace")
        .await;
    let at = |path| Expect::ok("", path, V1);
    for e in [
        at("/set")
            .headers(&[("Some-Other-Header", "val")])
            .received(
                &[
                    ("Some-Other-Header", "val"),
                    ("X-Header-Set", "set-overwrites-values"),
                ],
                &[],
            ),
        at("/set")
            .headers(&[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "some-other-value"),
            ])
            .received(
                &[
                    ("Some-Other-Header", "val"),
                    ("X-Header-Set", "set-overwrites-values"),
                ],
                &[],
            ),
        at("/add")
            .headers(&[("Some-Other-Header", "val")])
            .received(
                &[
                    ("Some-Other-Header", "val"),
                    ("X-Header-Add", "add-appends-values"),
                ],
                &[],
            ),
        at("/add")
            .headers(&[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "some-other-value"),
            ])
            .received(
                &[
                    ("Some-Other-Header", "val"),
                    ("X-Header-Add", "some-other-value,add-appends-values"),
                ],
                &[],
            ),
        at("/remove")
            .headers(&[("X-Header-Remove", "val")])
            .received(&[], &["X-Header-Remove"]),
        at("/multiple")
            .headers(&[
                ("X-Header-Set-2", "set-val-2"),
                ("X-Header-Add-2", "add-val-2"),
                ("X-Header-Remove-2", "remove-val-2"),
                ("Another-Header", "another-header-val"),
            ])
            .received(
                &[
                    ("X-Header-Set-1", "header-set-1"),
                    ("X-Header-Set-2", "header-set-2"),
                    ("X-Header-Add-1", "header-add-1"),
                    ("X-Header-Add-2", "add-val-2,header-add-2"),
                    ("X-Header-Add-3", "header-add-3"),
                    ("Another-Header", "another-header-val"),
                ],
                &["X-Header-Remove-1", "X-Header-Remove-2"],
            ),
        at("/case-insensitivity")
            .headers(&[
                ("x-header-set", "original-val-set"),
                ("x-header-add", "original-val-add"),
                ("x-header-remove", "original-val-remove"),
                ("Another-Header", "another-header-val"),
            ])
            .received(
                &[
                    ("X-Header-Set", "header-set"),
                    ("X-Header-Add", "original-val-add,header-add"),
                    ("Another-Header", "another-header-val"),
                ],
                &["x-header-remove", "X-Header-Remove"],
            ),
    ] {
        expect(addr, &e).await;
    }
}

#[tokio::test]
async fn http_route_response_header_modifier() {
    let suite = Suite::start(127, Config::new()).await;
    suite
        .apply(&fixture("httproute-response-header-modifier.yaml"))
        .await;
    let addr = suite
        .accepted("same-namespace", INFRA, "response-header-modifier")
        .await;
    suite
        .resolved(INFRA, "response-header-modifier", "same-namespace")
        .await;
    let at = |path| Expect::ok("", path, V1);
    for e in [
        at("/set").answered(
            &[("Some-Other-Header", "val")],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "set-overwrites-values"),
            ],
            &[],
        ),
        at("/set").answered(
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "some-other-value"),
            ],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Set", "set-overwrites-values"),
            ],
            &[],
        ),
        at("/add").answered(
            &[("Some-Other-Header", "val")],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "add-appends-values"),
            ],
            &[],
        ),
        at("/add").answered(
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "some-other-value"),
            ],
            &[
                ("Some-Other-Header", "val"),
                ("X-Header-Add", "some-other-value,add-appends-values"),
            ],
            &[],
        ),
        at("/remove").answered(&[("X-Header-Remove", "val")], &[], &["X-Header-Remove"]),
        at("/multiple").answered(
            &[
                ("X-Header-Set-2", "set-val-2"),
                ("X-Header-Add-2", "add-val-2"),
                ("X-Header-Remove-2", "remove-val-2"),
                ("Another-Header", "another-header-val"),
                ("X-Header-Remove-1", "val"),
            ],
            &[
                ("X-Header-Set-1", "header-set-1"),
                ("X-Header-Set-2", "header-set-2"),
                ("X-Header-Add-1", "header-add-1"),
                ("X-Header-Add-2", "add-val-2,header-add-2"),
                ("X-Header-Add-3", "header-add-3"),
                ("Another-Header", "another-header-val"),
            ],
            &["X-Header-Remove-1", "X-Header-Remove-2"],
        ),
        at("/case-insensitivity").answered(
            &[
                ("x-header-set", "original-val-set"),
                ("x-header-add", "original-val-add"),
                ("x-header-remove", "original-val-remove"),
                ("Another-Header", "another-header-val"),
            ],
            &[
                ("X-Header-Set", "header-set"),
                ("X-Header-Add", "original-val-add,header-add"),
                ("X-Lowercase-Add", "lowercase-add"),
                ("X-Mixedcase-Add-1", "mixedcase-add-1"),
                ("X-Mixedcase-Add-2", "mixedcase-add-2"),
                ("X-Uppercase-Add", "uppercase-add"),
                ("Another-Header", "another-header-val"),
            ],
            &["x-header-remove", "X-Header-Remove"],
        ),
        Expect::ok("", "/response-and-request-header-modifiers", V1)
            .headers(&[
                ("X-Header-Remove", "remove-val"),
                ("X-Header-Add-Append", "append-val-1"),
                ("X-Header-Echo", "echo"),
            ])
            .received(
                &[
                    ("X-Header-Add", "header-val-1"),
                    ("X-Header-Set", "set-overwrites-values"),
                    ("X-Header-Add-Append", "append-val-1,header-val-2"),
                    ("X-Header-Echo", "echo"),
                ],
                &["X-Header-Remove"],
            )
            .answered(
                &[
                    ("X-Header-Set-2", "set-val-2"),
                    ("X-Header-Add-2", "add-val-2"),
                    ("X-Header-Remove-2", "remove-val-2"),
                    ("Another-Header", "another-header-val"),
                    ("X-Header-Remove-1", "remove-val-1"),
                    ("X-Header-Echo", "echo"),
                ],
                &[
                    ("X-Header-Set-1", "header-set-1"),
                    ("X-Header-Set-2", "header-set-2"),
                    ("X-Header-Add-1", "header-add-1"),
                    ("X-Header-Add-2", "add-val-2,header-add-2"),
                    ("Another-Header", "another-header-val"),
                    ("X-Header-Echo", "echo"),
                ],
                &["X-Header-Remove-1", "X-Header-Remove-2"],
            ),
    ] {
        expect(addr, &e).await;
    }
}
