//! exec/attach/port-forward to the kubelet, as `UpgradeAwareHandler` does it: dial, write
//! the request over HTTP/1.1 with its upgrade headers unchanged (every
//! `X-Stream-Protocol-Version` line kept, the user's `Authorization` dropped,
//! `X-Forwarded-For` appended), then relay the kubelet's answer: on `101` its headers, then
//! the bytes both ways until either side ends; at `>= 400` its response as it came.
//!
//! WebSocket requests are passed through untranslated, as kube-apiserver 1.36 does for
//! nodes that declare `ExtendWebSocketsToKubelet`; it does not translate to SPDY here
//! (`StreamTranslatorHandler`, `TunnelingHandler`). kubectl tests of the chain force SPDY
//! (`KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`, `KUBECTL_PORT_FORWARD_WEBSOCKETS=false`).

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncWriteExt, copy};

use super::{Endpoint, KubeletClient};
use crate::api::ApiError;
use crate::server::{Body, ClientAddr};

/// How long the kubelet may take to answer the upgrade, and to send a refusal's body.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(30);
const REFUSAL_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of a refusal's body relayed.
const REFUSAL_LIMIT: usize = 1 << 20;

/// Whether any `Connection` value contains `upgrade` (case-insensitive), as
/// `httpstream.IsUpgradeRequest` decides.
pub fn is_upgrade<B>(req: &Request<B>) -> bool {
    req.headers()
        .get_all("connection")
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.to_ascii_lowercase().contains("upgrade"))
}

/// The headers sent to the kubelet: the client's, less `Authorization` and `Host`, with the
/// client's address appended to `X-Forwarded-For`.
pub fn forwarded_headers<B>(req: &Request<B>) -> Vec<(String, String)> {
    let mut prior = Vec::new();
    let mut out = Vec::new();
    for (k, v) in req.headers() {
        let v = String::from_utf8_lossy(v.as_bytes()).into_owned();
        match k.as_str() {
            "authorization" | "host" => {}
            "x-forwarded-for" => prior.push(v),
            _ => out.push((k.to_string(), v)),
        }
    }
    if let Some(ClientAddr(addr)) = req.extensions().get::<ClientAddr>() {
        prior.push(addr.ip().to_string());
    }
    if !prior.is_empty() {
        out.push(("x-forwarded-for".to_string(), prior.join(", ")));
    }
    out
}

/// Proxies one upgrade request to `path_and_query` on the kubelet at `ep`.
pub(crate) async fn proxy(
    client: &KubeletClient,
    ep: &Endpoint,
    path_and_query: &str,
    mut req: Request<Incoming>,
) -> Result<Response<Body>, ApiError> {
    if !is_upgrade(&req) {
        return Err(ApiError::new(400, "BadRequest", "Upgrade request required"));
    }
    let headers = forwarded_headers(&req);
    let method = req.method().to_string();
    client.record(&method, path_and_query, &headers);
    let dial_error = |e: String| ApiError::new(500, "", format!("error dialing backend: {e}"));
    let mut conn = client.dial(ep).await.map_err(dial_error)?;
    crate::http1::write_request(
        &mut conn,
        &method,
        path_and_query,
        &ep.host_port(),
        &headers,
    )
    .await
    .map_err(|e| dial_error(e.to_string()))?;
    let mut buf = BytesMut::new();
    let head = tokio::time::timeout(
        RESPONSE_TIMEOUT,
        crate::http1::read_head(&mut conn, &mut buf),
    )
    .await
    .map_err(|_| dial_error("timed out reading the upgrade response".into()))?
    .map_err(|e| dial_error(e.to_string()))?;
    let mut resp = Response::builder().status(head.status);
    for (k, v) in &head.headers {
        resp = resp.header(k.as_str(), v.as_str());
    }
    match head.status {
        101 => {
            let upgrade = hyper::upgrade::on(&mut req);
            let leftover = buf.freeze();
            tokio::spawn(async move {
                match upgrade.await {
                    Ok(up) => splice(TokioIo::new(up), conn, leftover).await,
                    Err(e) => tracing::debug!(error = %e, "nodeproxy: client upgrade failed"),
                }
            });
            resp.body(Full::new(Bytes::new()).boxed())
                .map_err(|e| ApiError::new(500, "", format!("relaying the 101: {e}")))
        }
        s if s >= 400 => {
            let body =
                crate::http1::read_body(&mut conn, buf, &head, REFUSAL_LIMIT, REFUSAL_TIMEOUT)
                    .await;
            // hyper frames the body itself.
            let mut resp = resp
                .body(Full::new(Bytes::from(body)).boxed())
                .map_err(|e| ApiError::new(500, "", format!("relaying the refusal: {e}")))?;
            resp.headers_mut().remove("transfer-encoding");
            resp.headers_mut().remove("content-length");
            Ok(resp)
        }
        s => Err(ApiError::new(
            500,
            "",
            format!("invalid upgrade response: status code {s}"),
        )),
    }
}

/// Copies both ways until either direction ends, then closes both connections.
async fn splice<C, K>(client: C, kubelet: K, leftover: Bytes)
where
    C: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
    K: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let (mut from_client, mut to_client) = tokio::io::split(client);
    let (mut from_kubelet, mut to_kubelet) = tokio::io::split(kubelet);
    if !leftover.is_empty() && to_client.write_all(&leftover).await.is_err() {
        return;
    }
    tokio::select! {
        _ = copy(&mut from_client, &mut to_kubelet) => {}
        _ = copy(&mut from_kubelet, &mut to_client) => {}
    }
    let _ = to_client.shutdown().await;
    let _ = to_kubelet.shutdown().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_credentials_stay_behind_and_the_client_is_appended() {
        let mut req = Request::post("/api/v1/namespaces/d/pods/p/exec")
            .header("authorization", "Bearer secret")
            .header("host", "apiserver")
            .header("connection", "Upgrade")
            .header("x-stream-protocol-version", "v5.channel.k8s.io")
            .header("x-stream-protocol-version", "v4.channel.k8s.io")
            .header("x-forwarded-for", "10.0.0.1")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(ClientAddr("127.0.0.9:4000".parse().unwrap()));
        assert!(is_upgrade(&req));
        let h = forwarded_headers(&req);
        let get = |n: &str| -> Vec<&str> {
            h.iter()
                .filter(|(k, _)| k == n)
                .map(|(_, v)| v.as_str())
                .collect()
        };
        assert!(get("authorization").is_empty() && get("host").is_empty());
        assert_eq!(
            get("x-stream-protocol-version"),
            ["v5.channel.k8s.io", "v4.channel.k8s.io"]
        );
        assert_eq!(get("x-forwarded-for"), ["10.0.0.1, 127.0.0.9"]);
        let plain = Request::get("/")
            .header("connection", "close")
            .body(())
            .unwrap();
        assert!(!is_upgrade(&plain));
    }
}
