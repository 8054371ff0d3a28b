//! The Ingress model build: `k8s::ingress::build` over 10,000 Ingresses, each with
//! one host and one path to its own Service (one named port) and EndpointSlice (two ready
//! endpoints, one not ready), plus the IngressClass. This is the pure translation the
//! provider runs on every change before it swaps the snapshot; the issue asks the whole
//! apply to take well under 100 ms. Measures only; never gates CI.
//!
//! - `ingress-model/build/10000`: a full build (the objects indexed, every route resolved).
//! - `ingress-model/build/10000-tls`: the same with every 10th Ingress naming one shared
//!   TLS Secret (parsed once per build).
//!
//! - `ingress-model/change/10000`: what the provider pays per change: a kept
//!   [`Builder`] told that one Ingress changed (its `resourceVersion` moved) updates the
//!   model.
//!
//! Run: `taskset -c 1 cargo bench -p leafgate-benches --bench ingress_model`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use base64::Engine;
use criterion::{Criterion, criterion_group, criterion_main};
use k8s_openapi::api::core::v1::{Secret, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::networking::v1::{Ingress, IngressClass};
use leafgate::kubernetes::{Builder, Changes, Indexed, build};
use leafgate::kubernetes::{Objects, Settings, TenantBounds};
use serde_json::json;

const INGRESSES: usize = 10_000;

struct World {
    ingresses: Vec<Arc<Ingress>>,
    classes: Vec<Arc<IngressClass>>,
    services: Vec<Arc<Service>>,
    slices: Vec<Arc<EndpointSlice>>,
    secrets: Vec<Arc<Secret>>,
}

fn obj<T: serde::de::DeserializeOwned>(v: serde_json::Value) -> Arc<T> {
    Arc::new(serde_json::from_value(v).expect("a valid object"))
}

fn world(tls: bool) -> World {
    let mut w = World {
        ingresses: Vec::with_capacity(INGRESSES),
        classes: vec![obj(json!({
            "metadata": {"name": "leafgate"},
            "spec": {"controller": "leafgate.io/ingress-controller"}
        }))],
        services: Vec::with_capacity(INGRESSES),
        slices: Vec::with_capacity(INGRESSES),
        secrets: Vec::new(),
    };
    let namespaces = 50;
    if tls {
        let key = rcgen::generate_simple_self_signed(vec!["*.bench.example".to_string()]).unwrap();
        let b64 = |b: &[u8]| base64::engine::general_purpose::STANDARD.encode(b);
        for n in 0..namespaces {
            w.secrets.push(obj(json!({
                "metadata": {"namespace": format!("team-{n}"), "name": "wildcard"},
                "type": "kubernetes.io/tls",
                "data": {"tls.crt": b64(key.cert.pem().as_bytes()),
                         "tls.key": b64(key.signing_key.serialize_pem().as_bytes())}
            })));
        }
    }
    for i in 0..INGRESSES {
        let ns = format!("team-{}", i % namespaces);
        let name = format!("app-{i}");
        let host = format!("app-{i}.bench.example");
        let mut spec = json!({
            "ingressClassName": "leafgate",
            "rules": [{"host": host, "http": {"paths": [{
                "path": "/", "pathType": "Prefix",
                "backend": {"service": {"name": name, "port": {"name": "http"}}}
            }]}}]
        });
        if tls && i % 10 == 0 {
            spec["tls"] = json!([{"hosts": [host], "secretName": "wildcard"}]);
        }
        w.ingresses.push(obj(json!({
            "metadata": {"namespace": ns, "name": name, "uid": format!("uid-{i}"),
                         "resourceVersion": "1",
                         "creationTimestamp": format!("2026-01-01T00:{:02}:{:02}Z", (i / 60) % 60, i % 60)},
            "spec": spec
        })));
        w.services.push(obj(json!({
            "metadata": {"namespace": ns, "name": name},
            "spec": {"ports": [{"name": "http", "port": 80}]}
        })));
        let ip = |k: usize| format!("10.{}.{}.{}", k, (i >> 8) & 255, i & 255);
        w.slices.push(obj(json!({
            "metadata": {"namespace": ns, "name": format!("{name}-x1"),
                         "labels": {"kubernetes.io/service-name": name,
                                    "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 8080}],
            "endpoints": [
                {"addresses": [ip(1)], "conditions": {"ready": true}},
                {"addresses": [ip(2)], "conditions": {"ready": true}},
                {"addresses": [ip(3)], "conditions": {"ready": false}},
            ]
        })));
    }
    w
}

fn settings() -> Settings {
    Settings {
        class: "leafgate".into(),
        namespaces: None,
        tenants: (0..10)
            .map(|t| TenantBounds::new(&format!("tenant-{t}"), &[&format!("team-{t}*")]))
            .collect(),
        ..Settings::default()
    }
}

fn objects(w: &World) -> Objects<'_> {
    Objects {
        ingresses: &w.ingresses,
        classes: &w.classes,
        services: &w.services,
        slices: &w.slices,
        secrets: &w.secrets,
    }
}

fn run(w: &World) -> usize {
    let model = build(&objects(w), &settings());
    assert_eq!(model.routes.len(), INGRESSES);
    model.routes.len() + model.certs.len()
}

/// Moves the `resourceVersion` of the Ingress at `i`, as an update through the watch does.
fn touch(w: &mut World, i: usize, version: u64) {
    let mut changed = (*w.ingresses[i]).clone();
    changed.metadata.resource_version = Some(version.to_string());
    w.ingresses[i] = Arc::new(changed);
}

/// This thread's CPU time in milliseconds.
#[allow(
    unsafe_code,
    reason = "std has no thread CPU clock; clock_gettime writes only our timespec"
)]
fn thread_cpu_ms() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `ts` is a valid, writable timespec; the clock id is a constant Linux knows.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 * 1e3 + ts.tv_nsec as f64 / 1e6
}

fn bench(c: &mut Criterion) {
    let plain = world(false);
    let tls = world(true);
    // Ten timed builds each before criterion, so a plain run shows the figure at once:
    // wall time and this thread's CPU time (the machine is shared; CPU time is what the
    // build costs when it has a core to itself).
    for (label, w) in [("plain", &plain), ("tls", &tls)] {
        let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
        for _ in 0..10 {
            let (start, cpu_start) = (Instant::now(), thread_cpu_ms());
            black_box(run(w));
            wall = wall.min(start.elapsed().as_secs_f64() * 1e3);
            cpu = cpu.min(thread_cpu_ms() - cpu_start);
        }
        println!(
            "ingress-model: build of {INGRESSES} Ingresses ({label}), best of 10: {wall:.2} ms wall, {cpu:.2} ms CPU"
        );
    }
    // The provider's case: one Ingress changed since the kept builder's last build.
    let mut changing = world(false);
    let mut index = Indexed::new(&objects(&changing));
    let mut builder = Builder::default();
    let settings = settings();
    builder.apply(&index, Changes::everything(), &settings);
    let mut version = 1;
    let mut change = move || {
        version += 1;
        let i = (version as usize * 7919) % INGRESSES;
        touch(&mut changing, i, version);
        let mut changes = Changes::default();
        changes
            .ingresses
            .insert(index.put_ingress(changing.ingresses[i].clone()));
        let model = builder.apply(&index, changes, &settings);
        model.routes.len()
    };
    let (mut wall, mut cpu) = (f64::MAX, f64::MAX);
    for _ in 0..10 {
        let (start, cpu_start) = (Instant::now(), thread_cpu_ms());
        black_box(change());
        wall = wall.min(start.elapsed().as_secs_f64() * 1e3);
        cpu = cpu.min(thread_cpu_ms() - cpu_start);
    }
    println!(
        "ingress-model: build after one change of {INGRESSES} Ingresses, best of 10: {wall:.2} ms wall, {cpu:.2} ms CPU"
    );
    let mut group = c.benchmark_group("ingress-model/change");
    group.sample_size(20);
    group.bench_function(format!("{INGRESSES}"), |b| b.iter(|| black_box(change())));
    group.finish();

    let mut group = c.benchmark_group("ingress-model/build");
    group.sample_size(20);
    group.bench_function(format!("{INGRESSES}"), |b| {
        b.iter(|| black_box(run(&plain)))
    });
    group.bench_function(format!("{INGRESSES}-tls"), |b| {
        b.iter(|| black_box(run(&tls)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
