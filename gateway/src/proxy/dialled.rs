//! How long a new connection to a backend took to make, for the access log's
//! `upstream_connect_ms`: the plain HTTP/1.1 pool (`http1`) puts it on the answer that
//! waited for the connection, and the TLS backends' pooled client's connector is timed
//! ([`Timed`]: the connection's extra, which that client puts on every answer on it, and
//! the first answer to ask takes it, [`Dialled::first`]). An answer on a reused
//! connection has none. An HTTP/2 backend's connection (`h2`) is timed as it is dialled,
//! and the request that waited for it carries the time; the streams sharing it after
//! carry none.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection};
use tower_service::Service;

use crate::tls::HttpsConnector as Connector;

type Stream = <Connector as Service<Uri>>::Response;
type Error = <Connector as Service<Uri>>::Error;

/// [`Connector`], each connection it makes timed.
#[derive(Clone)]
pub struct Timed(pub Connector);

/// A connection [`Timed`] made.
pub struct TimedIo {
    io: Stream,
    dialled: Dialled,
}

/// On an answer (the connection's extra, which the pooled client puts on each answer on
/// it): how long the connection took to make, for the first answer to ask.
#[derive(Clone, Debug)]
pub struct Dialled {
    took: Duration,
    unclaimed: Arc<AtomicBool>,
}

impl Dialled {
    /// A connection made in `took`, its time not yet claimed.
    pub fn new(took: Duration) -> Dialled {
        Dialled {
            took,
            unclaimed: Arc::new(AtomicBool::new(true)),
        }
    }

    /// The time the connection took to make, for the first answer on it; `None` after.
    pub fn first(&self) -> Option<Duration> {
        self.unclaimed
            .swap(false, Ordering::Relaxed)
            .then_some(self.took)
    }
}

impl Service<Uri> for Timed {
    type Response = TimedIo;
    type Error = Error;
    type Future = Pin<Box<dyn Future<Output = Result<TimedIo, Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let began = Instant::now();
        let connecting = self.0.call(uri);
        Box::pin(async move {
            let io = connecting.await?;
            Ok(TimedIo {
                io,
                dialled: Dialled::new(began.elapsed()),
            })
        })
    }
}

impl Connection for TimedIo {
    fn connected(&self) -> Connected {
        self.io.connected().extra(self.dialled.clone())
    }
}

impl Read for TimedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl Write for TimedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}
