//! Issue 45's measurement: how far io_uring takes a proxy past the epoll ceiling on
//! `bench/proxy.sh`'s load. Two binaries, each one thread on one ring, which the script
//! pins as it pins nginx and leafgate:
//!
//! - `uring-relay LISTEN UPSTREAM`: the io_uring twin of the script's nginx-stream relay,
//!   bytes only, one upstream connection per client;
//! - `uring-proxy LISTEN UPSTREAM`: an HTTP/1.1 proxy prototype, the fast path's parse and
//!   rewrite ([`head`]) over pooled keep-alive upstream connections.
//!
//! Both print `listening on ADDR` once bound, and stop on SIGTERM, SIGINT, or when their
//! standard input closes ([`ring::Exit`]).
//!
//! They are written on the `io-uring` crate directly, not on `monoio` or `tokio-uring`:
//! what is measured is the kernel interface (multishot accept, multishot recv into a
//! provided buffer ring, sends batched into one `io_uring_enter` per loop turn), and a
//! runtime would put its own choices between the bench and it: tokio-uring drives its ring
//! from inside tokio's epoll loop (an `epoll_wait` a turn besides `io_uring_enter`) and has
//! no multishot recv or buffer rings; monoio reads into buffers it owns per operation and
//! hides the ring's setup flags. With the crate, every submission and completion is in this
//! code, so a syscall `perf stat` counts is one this code asked for. The cost is `unsafe`
//! (buffers the kernel writes into must outlive their operations), kept to [`ring`].

pub mod head;
pub mod ring;
pub mod serve;
pub mod slab;
