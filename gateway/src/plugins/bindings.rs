//! Host bindings generated from `wit/`, the one source of truth for the plugin ABI.
//!
//! One `bindgen!` per world; the `host` and `types` interfaces are generated once (with
//! `pod-router`) and shared by the others through `with`, so every world speaks the same
//! Rust types. Exports are async: calls run on the caller's task and yield at every epoch
//! tick (see `engine`). Nothing outside `plugins` sees these types: `convert` converts them.

pub mod pod_router {
    wasmtime::component::bindgen!({
        world: "pod-router",
        path: "../wit",
        exports: { default: async },
    });
}

pub mod address_rewriter {
    wasmtime::component::bindgen!({
        world: "address-rewriter",
        path: "../wit",
        with: {
            "leafgate:plugin/host": super::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": super::pod_router::leafgate::plugin::types,
        },
        exports: { default: async },
    });
}

pub mod log_filter {
    wasmtime::component::bindgen!({
        world: "log-filter",
        path: "../wit",
        with: {
            "leafgate:plugin/host": super::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": super::pod_router::leafgate::plugin::types,
        },
        exports: { default: async },
    });
}

pub mod table_formatter {
    wasmtime::component::bindgen!({
        world: "table-formatter",
        path: "../wit",
        with: {
            "leafgate:plugin/host": super::pod_router::leafgate::plugin::host,
            "leafgate:plugin/types": super::pod_router::leafgate::plugin::types,
        },
        exports: { default: async },
    });
}

pub use pod_router::leafgate::plugin::{host, types};
