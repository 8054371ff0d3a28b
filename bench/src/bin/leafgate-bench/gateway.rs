//! `gateway LEAFGATE ROUTES ROUNDS`: leafgate as the Gateway API implementation of a root
//! cluster holding one GatewayClass of its controller, one Gateway (an HTTP listener) and
//! ROUTES HTTPRoutes on it (each its own hostname `i{n}.bench`, its own Service and
//! EndpointSlice), measured from outside as users see it, as `ingress` measures Ingresses.
//!
//! Starts a kubesim root and two upstreams (`main`, `alt`) in this process, then LEAFGATE
//! (`run`, pinned with `taskset` to the CPUs in `LEAFGATE_CPUS`, default `1`). Figures:
//! - first sync: process start -> the first, middle and last hosts answer from `main` on
//!   the Gateway's address and port (polled every 2 ms), then a sweep checks that every
//!   host answers (its time is reported apart, it measures the client);
//! - one change, ROUNDS times each: a moved backend (a route's EndpointSlice now lists
//!   `alt`'s address and port: write -> that host answers from `alt`), and a new HTTPRoute
//!   (write -> its host answers from `alt`); p50, p90 and max. Each write goes straight
//!   into the simulator's store, as the API server commits it; the time includes the watch
//!   event, leafgate's debounce, translation and swap.
//!
//! The address pool is the one address 127.0.0.1, shared by the Gateway (its listener on a
//! free port there). The leader writes every route's status, as it must: those writes load
//! the simulator, which shares the client's CPU. `LEAFGATE_LOG=path` keeps leafgate's
//! stderr there. Prints one JSON object.

use kubesim::KubeSim;
use leafgate_tests::TestUpstream;
use leafgate_tests::gateway_api::{CLASS, CONTROLLER, V1};
use serde_json::{Value, json};

use crate::exec::free_port;
use crate::ingress::{NS, Objects, measure};

const GATEWAY: &str = "bench";

/// HTTPRoute `name` on the bench's Gateway: `hostname` to Service `service` port 80.
fn http_route(name: &str, hostname: &str, service: &str) -> Value {
    json!({
        "apiVersion": V1, "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "parentRefs": [{"name": GATEWAY}],
            "hostnames": [hostname],
            "rules": [{"backendRefs": [{"name": service, "port": 80}]}]
        }
    })
}

pub async fn run(leafgate: &str, routes: usize, rounds: usize) {
    let sim = KubeSim::builder().start().await.unwrap();
    let main = TestUpstream::start("main").await;
    let alt = TestUpstream::start("alt").await;
    let listen = free_port();
    sim.create(json!({
        "apiVersion": V1, "kind": "GatewayClass",
        "metadata": {"name": CLASS},
        "spec": {"controllerName": CONTROLLER}
    }))
    .unwrap();
    sim.create(json!({
        "apiVersion": V1, "kind": "Gateway",
        "metadata": {"name": GATEWAY, "namespace": NS},
        "spec": {
            "gatewayClassName": CLASS,
            "listeners": [{"name": "http", "port": listen, "protocol": "HTTP"}]
        }
    }))
    .unwrap();
    let figures = measure(
        leafgate,
        &sim,
        (&main, &alt),
        routes,
        rounds,
        "[kubernetes.gateway]\naddresses = [\"127.0.0.1/32\"]\nallow_backends = [\"127.0.0.0/8\"]\n",
        listen,
        Objects {
            what: "HTTPRoutes",
            create: &|name, host, svc| {
                sim.create(http_route(name, host, svc)).unwrap();
            },
            // The route's EndpointSlice lists `alt`'s address and port.
            move_backend: &|i| {
                sim.patch(
                    "discovery.k8s.io/v1",
                    "EndpointSlice",
                    NS,
                    &format!("s{i}-1"),
                    &json!({
                        "ports": [{"name": "http", "port": alt.addr.port(), "protocol": "TCP"}],
                        "endpoints": [{
                            "addresses": [alt.addr.ip().to_string()],
                            "conditions": {"ready": true, "serving": true, "terminating": false}
                        }]
                    }),
                    false,
                )
                .unwrap();
            },
        },
    )
    .await;
    println!("{}", figures.json("routes", "new_route_ms"));
}
