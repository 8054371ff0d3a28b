//! stuck-start: a pod-router whose start-up never ends. Its `_initialize` (which the
//! component runs when it is instantiated, before any call, as WASI reactors do) loops
//! forever, so the gateway must refuse it when it loads, within its start-up limit, and
//! never let it near a request. Its `route` would send every pod to the first leaf.

use leafgate_plugin::pod_router::{Guest, RouteDecision, RouteRequest};

/// Runs at instantiation: spins.
#[unsafe(no_mangle)]
pub extern "C" fn _initialize() {
    let mut n: u64 = 0;
    // black_box keeps the optimizer from proving the loop endless and removing it.
    loop {
        n = std::hint::black_box(n.wrapping_add(1));
    }
}

struct Stuck;

impl Guest for Stuck {
    fn route(req: RouteRequest) -> RouteDecision {
        req.leaves().next().map_or(RouteDecision::Default, |l| {
            RouteDecision::Leaf(l.to_string())
        })
    }
}

leafgate_plugin::export_pod_router!(Stuck);
