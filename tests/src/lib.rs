//! leafgate's end-to-end test harness: helpers shared by the tests in `tests/tests/`.
//!
//! Tests speak to leafgate the way users do (real sockets, real TLS, real plugins compiled
//! from `plugins/`); this library builds what they need and nothing else.

pub mod plugins;
