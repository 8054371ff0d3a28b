//! The simulator's own tests: its API, then kubectl against it. One binary for both.

mod api;
mod chain;
mod common;
mod crontabs;
mod gateway;
mod ingress;
mod kubectl;
mod workloads;
