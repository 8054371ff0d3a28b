//! http-caller: a pod-router that sends an HTTP request through `wasi:http`, for the
//! sandbox tests.
//!
//! Every call sends `GET http://<address>/` to the address in the pod's name
//! (`call-127.0.0.1:8080`, else 127.0.0.1:9), waits for the answer, and rejects with status
//! 503 and a message saying what came back (`response 200` or `error: <code>`), so a test
//! sees from the guest's side whether the sandbox let the request out. It never answers a
//! leaf.

use leafgate_plugin::pod_router::{Guest, Rejection, RouteDecision, RouteRequest};
use wasip2::http::outgoing_handler;
use wasip2::http::types::{Fields, OutgoingRequest, Scheme};

struct HttpCaller;

/// What sending `GET http://{authority}/` came to, as the guest sees it.
fn call(authority: &str) -> String {
    let request = OutgoingRequest::new(Fields::new());
    if request.set_scheme(Some(&Scheme::Http)).is_err()
        || request.set_authority(Some(authority)).is_err()
        || request.set_path_with_query(Some("/")).is_err()
    {
        return format!("cannot address {authority}");
    }
    let pending = match outgoing_handler::handle(request, None) {
        Ok(pending) => pending,
        Err(code) => return format!("error: {code:?}"),
    };
    pending.subscribe().block();
    match pending.get() {
        Some(Ok(Ok(response))) => format!("response {}", response.status()),
        Some(Ok(Err(code))) => format!("error: {code:?}"),
        Some(Err(())) => "error: the response was taken twice".to_string(),
        None => "error: no response after it was ready".to_string(),
    }
}

impl Guest for HttpCaller {
    fn route(req: RouteRequest) -> RouteDecision {
        let authority = req.pod.strip_prefix("call-").unwrap_or("127.0.0.1:9");
        RouteDecision::Reject(Rejection {
            status: 503,
            message: format!("GET http://{authority}/: {}", call(authority)),
        })
    }
}

leafgate_plugin::export_pod_router!(HttpCaller);
