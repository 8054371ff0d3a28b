//! Bodies: [`Body`], the one type of every request and response leafgate sends, and the
//! wrappers the proxy puts around streamed bodies. [`IdleTimeout`] fails a stream which
//! stops moving: no frame for `idle` is an error, so a stalled upstream (or client) cannot
//! hold a connection and its buffers forever. [`SignalSent`] tells when a request body has
//! been sent whole; [`unread`] tells a request whose body has not been read to its end.
//!
//! The timer is re-armed lazily: frames only record the time they arrived, and the sleep is
//! pushed back when it fires early. A body moving at line rate costs one `Instant::now()` per
//! frame, not a timer-wheel update.

use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body as HttpBody, Frame, SizeHint};
use http_body_util::combinators::{BoxBody, UnsyncBoxBody};
use http_body_util::{BodyExt, Full};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body type of every request and response leafgate sends.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// A request body on its way to a backend or leaf: hyper's `Incoming`, or none
/// (`http_body_util::Empty`) for a request whose head leafgate read itself
/// (`listener::upgrades`).
pub trait Inbound: HttpBody<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static {}

impl<B> Inbound for B where B: HttpBody<Data = Bytes, Error: Into<BoxError>> + Send + Unpin + 'static
{}

/// A request body of one type whoever read its head: hyper's `Incoming` or
/// `listener::upgrades`' none, boxed ([`boxed`]). `Sync`, unlike [`Body`], so a front may
/// hold a `&Request` across an await.
pub type InBody = BoxBody<Bytes, InError>;

/// An [`InBody`]'s error. A type of its own, not [`BoxError`]: a future generic over a
/// body whose error is a boxed `dyn Error` is not `Send` to the compiler (the trait
/// object's lifetime is not general enough), and the pod calls are generic.
#[derive(Debug)]
pub struct InError(BoxError);

impl std::fmt::Display for InError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for InError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// `body` as an [`InBody`].
pub fn boxed(body: impl Inbound + Sync) -> InBody {
    body.map_err(|e| InError(e.into())).boxed()
}

/// True for an HTTP/1 request whose body has not been read to its end. An answer made
/// then (leafgate's own, without the body) must end the connection
/// (`proxy::own_answer`): hyper drains such a body after the answer when all of it
/// has already arrived and closes the connection when it has not, so whether the client's
/// next request were served would depend on timing. The fast path (`listener::fast`)
/// closes in the same case. HTTP/2 resets only the stream.
pub fn unread<B: HttpBody>(req: &http::Request<B>) -> bool {
    req.version() <= http::Version::HTTP_11 && !req.body().is_end_stream()
}

pin_project! {
    /// A request body that notes when it has been read to its end ([`tracked`]), for a
    /// front whose answer may come before it reads the body or without reading it.
    pub struct Tracked<B> {
        #[pin]
        inner: B,
        read: Option<Arc<AtomicBool>>,
    }
}

/// Whether a [`Tracked`] body was read to its end.
pub struct ReadToEnd(Option<Arc<AtomicBool>>);

impl ReadToEnd {
    /// For a request whose body was never [`unread`].
    pub fn none() -> Self {
        ReadToEnd(None)
    }

    /// True when the request's body was [`unread`] as it came and has not been read to its
    /// end since.
    pub fn unread(&self) -> bool {
        self.0
            .as_ref()
            .is_some_and(|read| !read.load(Ordering::Relaxed))
    }
}

/// `req` with its body [`Tracked`]. Only a body [`unread`] as it came is watched (one
/// allocation); any other passes through as it is.
pub fn tracked<B: HttpBody>(req: http::Request<B>) -> (http::Request<Tracked<B>>, ReadToEnd) {
    let read = unread(&req).then(|| Arc::new(AtomicBool::new(false)));
    let watch = ReadToEnd(read.clone());
    (req.map(|inner| Tracked { inner, read }), watch)
}

impl<B: HttpBody> HttpBody for Tracked<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let mut this = self.project();
        let polled = this.inner.as_mut().poll_frame(cx);
        if let Some(read) = this.read
            && (matches!(polled, Poll::Ready(None)) || this.inner.is_end_stream())
        {
            read.store(true, Ordering::Relaxed);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// A body with all its bytes in hand.
pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed_unsync()
}

/// The error an [`IdleTimeout`] body ends with.
#[derive(Debug, thiserror::Error)]
#[error("no body bytes moved for {0:?}")]
pub struct BodyIdle(pub Duration);

pin_project! {
    pub struct IdleTimeout<B> {
        #[pin]
        inner: B,
        #[pin]
        sleep: Sleep,
        idle: Duration,
        last: Instant,
    }
}

impl<B> IdleTimeout<B> {
    pub fn new(inner: B, idle: Duration) -> Self {
        let now = Instant::now();
        Self {
            inner,
            sleep: tokio::time::sleep_until(now + idle),
            idle,
            last: now,
        }
    }
}

impl<B> HttpBody for IdleTimeout<B>
where
    B: HttpBody<Data = Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let mut this = self.project();
        if let Poll::Ready(frame) = this.inner.poll_frame(cx) {
            *this.last = Instant::now();
            return Poll::Ready(frame.map(|f| f.map_err(Into::into)));
        }
        loop {
            ready!(this.sleep.as_mut().poll(cx));
            let deadline = *this.last + *this.idle;
            if deadline <= Instant::now() {
                return Poll::Ready(Some(Err(BodyIdle(*this.idle).into())));
            }
            this.sleep.as_mut().reset(deadline);
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

pin_project! {
    /// A request body that tells, through [`BodySent`], when the client's last byte has
    /// been handed to the upstream connection: the response-header timer starts there, so
    /// a long upload is not cut off by a timer meant for a slow backend.
    pub struct SignalSent<B> {
        #[pin]
        inner: B,
        // Sent on the last frame; dropped with the body (the exchange ended another way).
        done: Option<tokio::sync::oneshot::Sender<()>>,
    }
}

/// Resolves once the wrapped body has been sent in full (or dropped).
pub struct BodySent(Option<tokio::sync::oneshot::Receiver<()>>);

impl BodySent {
    /// True while some of the body is still to be sent.
    pub fn pending(&self) -> bool {
        self.0.is_some()
    }

    /// True once the body has been sent whole; false while it is still coming or when it
    /// was dropped before its end (the exchange failed first).
    pub fn sent_whole(&mut self) -> bool {
        let Some(rx) = self.0.as_mut() else {
            return true;
        };
        let whole = rx.try_recv().is_ok();
        if whole {
            self.0 = None;
        }
        whole
    }

    /// Waits for the body's end. Already over for a body that had nothing to send.
    pub async fn wait(&mut self) {
        if let Some(rx) = self.0.as_mut() {
            let _ = rx.await;
            self.0 = None;
        }
    }
}

impl<B: HttpBody> SignalSent<B> {
    pub fn new(inner: B) -> (Self, BodySent) {
        if inner.is_end_stream() {
            return (Self { inner, done: None }, BodySent(None));
        }
        let (tx, rx) = tokio::sync::oneshot::channel();
        (
            Self {
                inner,
                done: Some(tx),
            },
            BodySent(Some(rx)),
        )
    }
}

impl<B: HttpBody> HttpBody for SignalSent<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let mut this = self.project();
        let frame = ready!(this.inner.as_mut().poll_frame(cx));
        // hyper stops polling a body whose length is known once `is_end_stream` says so,
        // so the end is noticed after the last frame, not only at `None`.
        if frame.is_none() || this.inner.is_end_stream() {
            if let Some(done) = this.done.take() {
                let _ = done.send(());
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::{BodyExt, StreamBody};

    #[tokio::test(start_paused = true)]
    async fn a_stalled_body_fails_after_idle_and_a_moving_one_does_not() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, BoxError>>(1);
        let stream = tokio_stream_from(rx);
        let mut body = Box::pin(IdleTimeout::new(
            StreamBody::new(stream),
            Duration::from_secs(5),
        ));
        for _ in 0..3 {
            tokio::time::sleep(Duration::from_secs(4)).await;
            tx.send(Ok(Frame::data(Bytes::from_static(b"x"))))
                .await
                .unwrap();
            let f = body.frame().await.unwrap().unwrap();
            assert_eq!(f.into_data().unwrap(), "x");
        }
        let err = body.frame().await.unwrap().unwrap_err();
        assert!(err.to_string().contains("no body bytes moved"), "{err}");
    }

    #[tokio::test]
    async fn sent_resolves_after_the_last_frame_and_at_once_for_no_body() {
        let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, BoxError>>(1);
        let (body, mut sent) = SignalSent::new(StreamBody::new(tokio_stream_from(rx)));
        let mut body = Box::pin(body);
        tx.send(Ok(Frame::data(Bytes::from_static(b"x"))))
            .await
            .unwrap();
        body.frame().await.unwrap().unwrap();
        assert!(!sent.sent_whole(), "a body still open is not sent whole");
        let pending = tokio::time::timeout(Duration::from_millis(20), sent.wait()).await;
        assert!(pending.is_err(), "a body still open is not sent");
        drop(tx);
        assert!(body.frame().await.is_none());
        assert!(sent.sent_whole(), "the end of the body is signalled");
        assert!(sent.sent_whole(), "and stays so");
        tokio::time::timeout(Duration::from_secs(1), sent.wait())
            .await
            .expect("the end of the body is signalled");

        let (_body, mut sent) = SignalSent::new(http_body_util::Empty::<Bytes>::new());
        assert!(sent.sent_whole(), "an empty body is sent before it starts");
        tokio::time::timeout(Duration::from_millis(1), sent.wait())
            .await
            .expect("an empty body is sent before it starts");
    }

    #[test]
    fn a_body_dropped_before_its_end_was_not_sent_whole() {
        let (body, mut sent) = SignalSent::new(Full::new(Bytes::from_static(b"x")));
        drop(body);
        assert!(!sent.sent_whole());
    }

    #[test]
    fn only_an_http1_body_not_at_its_end_is_unread() {
        let with = |version, body: &'static [u8]| {
            http::Request::builder()
                .version(version)
                .body(Full::new(Bytes::from_static(body)))
                .unwrap()
        };
        assert!(unread(&with(http::Version::HTTP_11, b"abc")));
        assert!(!unread(&with(http::Version::HTTP_11, b"")));
        assert!(!unread(&with(http::Version::HTTP_2, b"abc")));
    }

    #[tokio::test]
    async fn a_tracked_body_is_unread_until_read_to_its_end() {
        let request = |body: &'static [u8]| {
            http::Request::new(StreamBody::new(futures_util::stream::iter(
                body.chunks(2)
                    .map(|c| Ok::<_, std::convert::Infallible>(Frame::data(Bytes::from_static(c))))
                    .collect::<Vec<_>>(),
            )))
        };
        let (req, read) = tracked(request(b"abcd"));
        assert!(read.unread());
        let mut body = req.into_body();
        body.frame().await.unwrap().unwrap();
        assert!(read.unread(), "half read");
        body.frame().await.unwrap().unwrap();
        assert!(body.frame().await.is_none());
        assert!(!read.unread(), "read to its end");
        // Dropped unread, it stays unread; a body at its end as it came was never unread.
        let (req, read) = tracked(request(b"abcd"));
        drop(req);
        assert!(read.unread());
        let (_, read) = tracked(http::Request::new(Full::new(Bytes::new())));
        assert!(!read.unread());
    }

    fn tokio_stream_from<T>(
        mut rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures_util::Stream<Item = T> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
