//! `wasi:http` for plugins, with every outgoing request refused.
//!
//! The types and the outgoing handler are linked so components that import them load
//! (componentize-js builds import both by default); a request a plugin sends fails with
//! `HTTP-request-denied` when it awaits the response. No connection is ever made: the
//! linked crate is built without its client, and [`RefuseOutgoing`] is the only sender.
//!
//! Owns nothing else of the sandbox (`sandbox` holds the store's state).

use wasmtime_wasi_http::{Error, RequestOptions, WasiBody, WasiHttpHooks};

/// The hooks of every plugin's `wasi:http`: each outgoing request is refused.
#[derive(Debug, Default)]
pub(crate) struct RefuseOutgoing;

/// What `send_request` hands back: the response (never made) and its I/O future.
type Sent = Box<
    dyn Future<
            Output = Result<
                (
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = Result<(), Error>> + Send>,
                ),
                Error,
            >,
        > + Send,
>;

impl WasiHttpHooks for RefuseOutgoing {
    fn send_request(
        &mut self,
        _request: http::Request<WasiBody>,
        _options: Option<RequestOptions>,
        _fut: Box<dyn Future<Output = Result<(), Error>> + Send>,
    ) -> Sent {
        Box::new(std::future::ready(Err(Error::HttpRequestDenied)))
    }
}
