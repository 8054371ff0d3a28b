//! faulty-router: a pod-router that misbehaves on demand, chosen by the pod's name.
//!
//! `trap-*` panics, `spin-*` loops forever, `bomb-*` allocates until the memory cap stops
//! it, `lost-*` answers a leaf the gateway does not know, `chatty-*` writes 1 KiB to
//! stderr and answers normally, `count-*` answers the leaf at (calls this instance has
//! served) modulo the leaves, which shows whether instances are reused; any other pod goes
//! to the first known leaf. One plugin for every fault lets a test show that the very same
//! pool recovers.

use std::sync::atomic::{AtomicUsize, Ordering};

use leafgate_plugin::pod_router::{Guest, RouteDecision, RouteRequest};

static SERVED: AtomicUsize = AtomicUsize::new(0);

struct Faulty;

impl Guest for Faulty {
    fn route(req: RouteRequest) -> RouteDecision {
        let pod = req.pod.as_str();
        if pod.starts_with("trap-") {
            panic!("faulty-router was told to trap on {pod}");
        }
        if pod.starts_with("spin-") {
            let mut n: u64 = 0;
            // black_box keeps the optimizer from proving the loop endless and removing it.
            loop {
                n = std::hint::black_box(n.wrapping_add(1));
            }
        }
        if pod.starts_with("bomb-") {
            let mut hoard: Vec<Vec<u8>> = Vec::new();
            loop {
                hoard.push(vec![1u8; 1 << 20]);
                std::hint::black_box(&hoard);
            }
        }
        let known = req.leaves().count();
        if pod.starts_with("count-") && known > 0 {
            let n = SERVED.fetch_add(1, Ordering::Relaxed);
            if let Some(leaf) = req.leaves().nth(n % known) {
                return RouteDecision::Leaf(leaf.to_string());
            }
        }
        if pod.starts_with("chatty-") {
            // A plugin that logs to stderr on every call must not wear its instance out.
            eprintln!("{}", "chatter ".repeat(128));
        }
        if pod.starts_with("lost-") {
            return RouteDecision::Leaf("no-such-leaf".into());
        }
        match req.leaves().next() {
            Some(leaf) => RouteDecision::Leaf(leaf.to_string()),
            None => RouteDecision::Default,
        }
    }
}

leafgate_plugin::export_pod_router!(Faulty);
