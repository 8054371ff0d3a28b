//! A body wrapper that fails a stream which stops moving: no frame for `idle` is an error,
//! so a stalled upstream (or client) cannot hold a connection and its buffers forever.
//!
//! The timer is re-armed lazily: frames only record the time they arrived, and the sleep is
//! pushed back when it fires early. A body moving at line rate costs one `Instant::now()` per
//! frame, not a timer-wheel update.

use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use pin_project_lite::pin_project;
use tokio::time::{Instant, Sleep};

use super::BoxError;

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

impl<B> Body for IdleTimeout<B>
where
    B: Body<Data = Bytes>,
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

    fn tokio_stream_from<T>(
        mut rx: tokio::sync::mpsc::Receiver<T>,
    ) -> impl futures_util::Stream<Item = T> {
        futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
    }
}
