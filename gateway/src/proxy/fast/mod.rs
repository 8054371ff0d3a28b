//! The HTTP/1.1 fast path's own codec: the common exchange (an HTTP/1.1 client, a plain
//! HTTP/1.1 backend, no protocol switch) read and written in place, without hyper's
//! per-request machinery (header maps, dispatch channel, connection tasks); and the
//! backend's side of a protocol switch the same way.
//!
//! Files: `lines` (a header line, a length), `request` (the client's head, and the head
//! the backend gets), `response` (the backend's head, and the head the client gets),
//! `chunked` (the chunked coding, both ways), `pool` (raw keep-alive sockets to backends),
//! `buf` (the fixed buffers, timers and timed reads), `exchange` (one request and its
//! answer, sent, streamed and failed), `switch` (an upgrade's head to the backend and its
//! answer, for `proxy::upgrade`). The connection loop that drives the exchange, and the
//! plan that decides whether a request takes it, are the listener's (`listener::fast`);
//! whatever these files do not take is served by hyper's path, which stays the reference:
//! the differential tests hold the two to the same outcomes.

pub mod buf;
pub mod chunked;
pub mod exchange;
pub mod lines;
pub mod pool;
pub mod request;
pub mod response;
pub mod switch;
