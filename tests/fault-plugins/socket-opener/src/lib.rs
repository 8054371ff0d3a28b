//! socket-opener: a pod-router that tries to reach the network, for the sandbox tests.
//!
//! Every call tries `TcpStream::connect` to the address in the pod's name
//! (`connect-127.0.0.1:8080`, else 127.0.0.1:9) and `UdpSocket::bind` on 127.0.0.1:0, and
//! rejects with status 503 and a message listing what each attempt returned, so a test sees
//! from the guest's side whether the sandbox let it open a socket. It never answers a leaf.

use std::net::{TcpStream, UdpSocket};

use leafgate_plugin::pod_router::{Guest, Rejection, RouteDecision, RouteRequest};

struct SocketOpener;

fn outcome<T>(r: std::io::Result<T>) -> String {
    match r {
        Ok(_) => "opened".to_string(),
        Err(e) => format!("error: {e}"),
    }
}

impl Guest for SocketOpener {
    fn route(req: RouteRequest) -> RouteDecision {
        let target = req
            .pod
            .strip_prefix("connect-")
            .unwrap_or("127.0.0.1:9")
            .to_string();
        let tcp = outcome(TcpStream::connect(target.as_str()));
        let udp = outcome(UdpSocket::bind("127.0.0.1:0"));
        RouteDecision::Reject(Rejection {
            status: 503,
            message: format!("tcp {target}: {tcp}; udp bind: {udp}"),
        })
    }
}

leafgate_plugin::export_pod_router!(SocketOpener);
