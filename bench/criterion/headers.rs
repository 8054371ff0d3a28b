//! The header work every proxied request pays for (issue 15, P1): hop-by-hop removal and the
//! forwarding headers, on the head `wrk` sends and on a browser's. Measures only; never
//! gates CI on time.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use http::{HeaderMap, HeaderValue, Version};
use leafgate::forwarding::{self as headers, ClientSide, Peer};

fn head(lines: &[(&'static str, &'static str)]) -> HeaderMap {
    lines
        .iter()
        .map(|(k, v)| (k.parse().unwrap(), HeaderValue::from_static(v)))
        .collect()
}

fn forwarding(c: &mut Criterion) {
    let wrk = head(&[("host", "bench.example")]);
    let browser = head(&[
        ("host", "shop.example"),
        (
            "user-agent",
            "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        ),
        (
            "accept",
            "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
        ),
        ("accept-language", "en-US,en;q=0.5"),
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("referer", "https://shop.example/cart"),
        ("cookie", "session=4f1c2d; theme=dark"),
        ("upgrade-insecure-requests", "1"),
        ("sec-fetch-dest", "document"),
        ("sec-fetch-mode", "navigate"),
        ("priority", "u=0, i"),
    ]);
    let peer = Peer::new("10.1.2.3".parse().unwrap());
    let mut group = c.benchmark_group("forwarding-headers");
    for (name, head, host) in [
        ("wrk", &wrk, "bench.example"),
        ("browser", &browser, "shop.example"),
    ] {
        let client = ClientSide {
            peer: &peer,
            tls: false,
            host: Some(host),
            trusted: false,
        };
        group.bench_function(name, |b| {
            b.iter_batched_ref(
                || head.clone(),
                |h| {
                    headers::strip_hop_by_hop(h, false);
                    headers::add_forwarded(h, black_box(&client), Version::HTTP_11);
                },
                BatchSize::SmallInput,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, forwarding);
criterion_main!(benches);
