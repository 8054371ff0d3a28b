//! The hostile suite: each hole of issue 23 tried the way a hostile tenant, Ingress author
//! or client certificate would, over real sockets and TLS against the simulator; one
//! module per area.

mod node_api;
