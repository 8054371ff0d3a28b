//! Warm connections to one server: a few spares dialled and TLS-established ahead of need,
//! so a stream (a leaf's exec, attach, port-forward or log) starts on one instead of paying
//! TCP and TLS on its own path.
//!
//! One pool per serving thread ([`Spares::group`]): a spare is dialled by the thread's own
//! keeper, so its socket belongs to that thread, as every connection here does. How many a
//! pool keeps follows the server's recent demand, counted across the threads: enough to
//! cover the streams that start while one is being dialled (start rate x dial time,
//! Little's law) plus one, at most [`Policy::max`], and none once no stream has started
//! for [`Policy::idle`]. A pool's keeper starts with its thread's first stream, refills
//! after each take and closes spares when the demand is gone. A stream on a thread whose
//! pool is empty takes a sibling's spare rather than dial: that socket stays driven by the
//! thread that dialled it (a cross-thread wake per readiness event), which costs less than
//! a handshake on the stream's path. A spare lives at most [`Policy::life`] (API servers
//! close a connection that sends no request: kube-apiserver's `ReadHeaderTimeout` is 32
//! s), and is checked before it is handed out: one the server closed or wrote on is dropped
//! and the next tried. A spare serves one stream and never comes back, so it carries no
//! caller's request, credentials or tenant. The connections dialled anyway resume the TLS
//! session (the connector's rustls config keeps the server's tickets) and skip the
//! certificate exchange.
//!
//! It must not know about requests, leaves or tenants: whoever owns the server's
//! connector owns its spares, and drops them with it.

use std::collections::VecDeque;
use std::future::Future;
use std::mem::MaybeUninit;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use http::Uri;
use hyper::rt::{Read, ReadBuf};
use hyper_rustls::MaybeHttpsStream;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tokio::sync::Notify;
use tokio::time::Instant;
use tower_service::Service;

use super::HttpsConnector;

/// A connection the connector dialled: plain TCP or TLS over it.
pub type Io = MaybeHttpsStream<TokioIo<TcpStream>>;

/// Errors from dialling, as the connector reports them.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// How many spares are kept and for how long.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// The most spares kept, however high the demand.
    pub max: usize,
    /// How long after the last stream started spares are still kept.
    pub idle: Duration,
    /// The longest a spare waits for a stream before it is closed (and, while the demand
    /// lasts, replaced): shorter than the server's own timeout for a silent connection.
    pub life: Duration,
    /// The window over which the start rate is counted.
    pub window: Duration,
    /// How long one dial (TCP and TLS) may take.
    pub dial_timeout: Duration,
    /// How long the keeper waits after a failed dial before dialling that server again.
    pub backoff: Duration,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            max: 8,
            idle: Duration::from_secs(60),
            life: Duration::from_secs(20),
            window: Duration::from_secs(1),
            dial_timeout: Duration::from_secs(10),
            backoff: Duration::from_secs(1),
        }
    }
}

/// One serving thread's pool of spares to a server, in the group of every thread's; cloning
/// shares it.
#[derive(Clone)]
pub struct Spares {
    group: Arc<Group>,
    /// This thread's pool in `group.pools`.
    index: usize,
}

struct Group {
    connector: HttpsConnector,
    /// The server: scheme and authority only.
    server: Uri,
    policy: Policy,
    demand: Mutex<Demand>,
    pools: Vec<Pool>,
}

/// When streams started, on any thread.
#[derive(Default)]
struct Demand {
    /// Within `policy.window`, at most `RECENT` of them.
    recent: VecDeque<Instant>,
    last: Option<Instant>,
}

struct Pool {
    state: Mutex<State>,
    /// Wakes the pool's keeper: demand, a finished dial, or the group being dropped.
    wake: Arc<Notify>,
}

#[derive(Default)]
struct State {
    ready: VecDeque<Spare>,
    dialing: usize,
    /// A moving average of how long a dial takes.
    dial_time: Duration,
    /// No dial before this, after one failed.
    backoff_until: Option<Instant>,
    /// No refill before this: a stream that took a spare is setting up (see [`Hold`]).
    hold_until: Option<Instant>,
    /// A stream started on this pool's thread since its keeper last tended it: the
    /// keeper tells the other threads' keepers (the demand is the group's).
    started: bool,
    keeper: bool,
}

struct Spare {
    io: Io,
    since: Instant,
}

/// The most stream starts remembered for the rate (beyond it the rate only says "high").
const RECENT: usize = 256;

/// The longest a stream's hold keeps its pool from refilling: long enough for its setup
/// (a few round trips), short enough that a long stream does not leave the pool short.
pub const HOLD: Duration = Duration::from_millis(50);

/// Keeps a pool's refill out of a stream's setup until dropped; see
/// [`Spares::take_for_stream`].
pub struct Hold(Spares);

impl Drop for Hold {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Spares {
    /// One pool of spares for `server` (its scheme and authority; the path is ignored),
    /// dialled with `connector`, per serving thread (`threads`, at least one). None is
    /// dialled before the first stream asks for one.
    pub fn group(
        connector: HttpsConnector,
        server: &Uri,
        policy: Policy,
        threads: usize,
    ) -> Vec<Spares> {
        let mut parts = http::uri::Parts::default();
        parts.scheme = server.scheme().cloned();
        parts.authority = server.authority().cloned();
        parts.path_and_query = Some(http::uri::PathAndQuery::from_static("/"));
        let server = Uri::from_parts(parts).unwrap_or_else(|_| server.clone());
        let group = Arc::new(Group {
            connector,
            server,
            policy,
            demand: Mutex::new(Demand::default()),
            pools: (0..threads.max(1))
                .map(|_| Pool {
                    state: Mutex::new(State::default()),
                    wake: Arc::new(Notify::new()),
                })
                .collect(),
        });
        (0..group.pools.len())
            .map(|index| Spares {
                group: group.clone(),
                index,
            })
            .collect()
    }

    /// A group of one pool.
    pub fn new(connector: HttpsConnector, server: &Uri, policy: Policy) -> Spares {
        let mut one = Spares::group(connector, server, policy, 1);
        one.remove(0)
    }

    /// A live spare for a stream starting now on this thread: its own pool's, else a
    /// sibling's, if one is ready. Either way the start counts as demand and the keepers
    /// refill behind it.
    pub fn take(&self) -> Option<Io> {
        self.take_held(None)
    }

    /// [`take`](Self::take) for a stream whose first round trips the refill should stay
    /// out of. A refill is a TLS handshake on this thread and on the server, the same
    /// moments the stream's request, answer and first frames pass through both: this
    /// pool's refill waits until the returned [`Hold`] drops (the stream ended or failed)
    /// or [`HOLD`] has passed, whichever comes first. Without a spare there is no hold.
    /// The hold is the pool's, not the stream's: a plain `take` ends it, another stream's
    /// take starts it again, and the end of any held stream on this thread ends it.
    pub fn take_for_stream(&self) -> Option<(Io, Hold)> {
        let until = Instant::now() + HOLD;
        let io = self.take_held(Some(until))?;
        Some((io, Hold(self.clone())))
    }

    fn take_held(&self, hold_until: Option<Instant>) -> Option<Io> {
        let now = Instant::now();
        let group = &self.group;
        {
            let mut demand = lock(&group.demand);
            if demand.recent.len() == RECENT {
                demand.recent.pop_front();
            }
            demand.recent.push_back(now);
            demand.last = Some(now);
        }
        let own = &group.pools[self.index];
        {
            let mut state = lock(&own.state);
            state.hold_until = hold_until;
            state.started = true;
            if !state.keeper {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    state.keeper = true;
                    runtime.spawn(keep(Arc::downgrade(group), self.index, own.wake.clone()));
                }
            }
        }
        // Only this thread's keeper, and it lets the stream go first (`keep`): waking
        // another thread's is a syscall, which would sit between this stream's request
        // and its leaf.
        own.wake.notify_one();
        let others = group
            .pools
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.index);
        let taken = std::iter::once(own)
            .chain(others.map(|(_, pool)| pool))
            .find_map(|pool| group.live(pool, now));
        if taken.is_none() && hold_until.is_some() {
            self.release();
        }
        taken
    }

    /// Ends this pool's hold: its keeper refills now.
    fn release(&self) {
        let pool = &self.group.pools[self.index];
        lock(&pool.state).hold_until = None;
        pool.wake.notify_one();
    }

    /// A fresh connection to the server, not a spare: for a stream whose spare turned out
    /// dead, or when none was ready. Resumes the TLS session where the server allows it.
    pub fn dial(&self) -> impl Future<Output = Result<Io, BoxError>> + Send + 'static {
        self.group.dial()
    }

    /// How many connections the spares of every thread hold now, ready or being dialled.
    pub fn held(&self) -> usize {
        self.group
            .pools
            .iter()
            .map(|pool| {
                let state = lock(&pool.state);
                state.ready.len() + state.dialing
            })
            .sum()
    }

    /// How many spares this thread's pool holds now.
    pub fn ready(&self) -> usize {
        lock(&self.group.pools[self.index].state).ready.len()
    }

    /// Whether `uri` is this server's (scheme and authority): only then may a spare carry it.
    fn serves(&self, uri: &Uri) -> bool {
        let server = &self.group.server;
        uri.scheme() == server.scheme() && uri.authority() == server.authority()
    }
}

/// Dials like the connector, starting on a spare when the URI is the server's: the pooled
/// client of a leaf's forwarded requests (logs among them) connects through it.
impl Service<Uri> for Spares {
    type Response = Io;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Io, BoxError>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        if !self.serves(&uri) {
            return Box::pin(self.group.connector.clone().call(uri));
        }
        match self.take() {
            Some(io) => Box::pin(std::future::ready(Ok(io))),
            None => Box::pin(self.dial()),
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// How many spares a pool keeps for `demand`, its dials taking `dial_time`.
fn target(policy: &Policy, demand: &Demand, dial_time: Duration, now: Instant) -> usize {
    match demand.last {
        Some(at) if now.duration_since(at) < policy.idle => {}
        _ => return 0,
    }
    let starts = demand
        .recent
        .iter()
        .filter(|t| now.duration_since(**t) < policy.window)
        .count();
    let rate = starts as f64 / policy.window.as_secs_f64();
    let in_flight = (rate * dial_time.as_secs_f64()).round() as usize;
    (in_flight + 1).min(policy.max)
}

impl Group {
    /// A live spare of `pool`, the newest first; the dead ones met on the way are dropped.
    fn live(&self, pool: &Pool, now: Instant) -> Option<Io> {
        let mut state = lock(&pool.state);
        while let Some(mut spare) = state.ready.pop_back() {
            if now.duration_since(spare.since) < self.policy.life && alive(&mut spare.io) {
                return Some(spare.io);
            }
        }
        None
    }

    fn target(&self, state: &State, now: Instant) -> usize {
        target(&self.policy, &lock(&self.demand), state.dial_time, now)
    }

    /// Closes pool `index`'s expired and surplus spares, tells the other threads' keepers
    /// of a stream started on this one, starts the dials the demand asks for, and says
    /// when to look again.
    fn tend(self: &Arc<Self>, index: usize) -> Option<Instant> {
        let now = Instant::now();
        let policy = self.policy;
        let mut state = lock(&self.pools[index].state);
        if std::mem::take(&mut state.started) {
            let others = self.pools.iter().enumerate().filter(|(i, _)| *i != index);
            for (_, pool) in others {
                pool.wake.notify_one();
            }
        }
        state
            .ready
            .retain(|s| now.duration_since(s.since) < policy.life);
        let target = self.target(&state, now);
        while state.ready.len() > target {
            state.ready.pop_front();
        }
        let backing_off = state.backoff_until.is_some_and(|t| now < t);
        let held = state.hold_until.filter(|t| now < *t);
        let want = if backing_off || held.is_some() {
            0
        } else {
            target.saturating_sub(state.ready.len() + state.dialing)
        };
        state.dialing += want;
        for _ in 0..want {
            tokio::spawn(dial_spare(Arc::downgrade(self), index, self.dial()));
        }
        let expiry = state.ready.front().map(|s| s.since + policy.life);
        let demand_ends = lock(&self.demand)
            .last
            .filter(|_| target > 0)
            .map(|at| at + policy.idle);
        let retry = state.backoff_until.filter(|_| backing_off);
        [expiry, demand_ends, retry, held]
            .into_iter()
            .flatten()
            .min()
    }

    /// One dial to the server, bounded by the policy's timeout.
    fn dial(&self) -> impl Future<Output = Result<Io, BoxError>> + Send + 'static {
        let mut connector = self.connector.clone();
        let call = connector.call(self.server.clone());
        let limit = self.policy.dial_timeout;
        async move {
            match tokio::time::timeout(limit, call).await {
                Ok(result) => result,
                Err(_) => Err(format!("no connection within {limit:?}").into()),
            }
        }
    }
}

impl Drop for Group {
    fn drop(&mut self) {
        // The keepers hold only a weak reference; this wakes them to find it gone and end.
        for pool in &self.pools {
            pool.wake.notify_one();
        }
    }
}

/// The keeper of pool `index` on its thread: tends it whenever woken or due, and ends once
/// the group is dropped. Woken by a take, it yields first: the stream that took is setting
/// up on this same thread, and its request goes out before the keeper's upkeep (the lock,
/// a new timer, and the self-wake a timer earlier than the runtime's next one costs).
async fn keep(group: Weak<Group>, index: usize, wake: Arc<Notify>) {
    loop {
        let due = match group.upgrade() {
            Some(group) => group.tend(index),
            None => return,
        };
        match due {
            Some(at) => {
                tokio::select! {
                    () = wake.notified() => {}
                    () = tokio::time::sleep_until(at) => {}
                }
            }
            None => wake.notified().await,
        }
        Behind::default().await;
    }
}

/// Ready once the tasks already ready on this thread have run: it wakes itself from inside
/// its own poll, which puts it at the back of the thread's run queue. (`tokio::task::
/// yield_now` defers the wake past the runtime's next poll of its driver instead, and here
/// that cost a self-wake syscall each time: 7.4 eventfd writes per exec against 3.4.)
#[derive(Default)]
struct Behind(bool);

impl Future for Behind {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            return Poll::Ready(());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// Dials one spare for pool `index` and puts it with the others, if they are still wanted.
async fn dial_spare(
    group: Weak<Group>,
    index: usize,
    dial: impl Future<Output = Result<Io, BoxError>>,
) {
    let started = Instant::now();
    let mut result = dial.await;
    let took = started.elapsed();
    if let Ok(io) = &mut result {
        if !settle(io, took.max(SETTLE_AT_LEAST)).await {
            result = Err("the server closed or wrote on the connection before any request".into());
        }
    }
    let Some(group) = group.upgrade() else {
        return;
    };
    let now = Instant::now();
    let pool = &group.pools[index];
    {
        let mut state = lock(&pool.state);
        state.dialing -= 1;
        match result {
            Ok(io) => {
                state.dial_time = if state.dial_time.is_zero() {
                    took
                } else {
                    (state.dial_time * 7 + took) / 8
                };
                state.backoff_until = None;
                if state.ready.len() < group.target(&state, now) {
                    state.ready.push_back(Spare { io, since: now });
                }
            }
            Err(e) => {
                tracing::debug!(server = %group.server, error = %e, "a spare connection could not be dialled");
                state.backoff_until = Some(now + group.policy.backoff);
            }
        }
    }
    pool.wake.notify_one();
}

/// The least a new spare waits for its server's session tickets.
const SETTLE_AT_LEAST: Duration = Duration::from_millis(1);

/// Takes in what a TLS 1.3 server sends once the handshake is done (its session tickets,
/// one round trip after the client's `Finished`), so that the stream that takes this spare
/// does not receive and decrypt them on its way. Waits for the first ticket no longer than
/// `within` (the handshake's own time: a round trip at least); a server that sends none
/// only delays the spare by that. False if the server closed the connection, reset it or
/// wrote on it meanwhile: such a spare is unfit for a request.
async fn settle(io: &mut Io, within: Duration) -> bool {
    fn tickets(io: &Io) -> Option<u32> {
        match io {
            MaybeHttpsStream::Https(tls) => {
                let session = tls.inner().get_ref().1;
                (session.protocol_version() == Some(rustls::ProtocolVersion::TLSv1_3))
                    .then(|| session.tls13_tickets_received())
            }
            MaybeHttpsStream::Http(_) => None,
        }
    }
    if tickets(io).is_none_or(|n| n > 0) {
        return true;
    }
    let mut deadline = std::pin::pin!(tokio::time::sleep(within));
    std::future::poll_fn(|cx| {
        // Records that carry no data (tickets) are taken in and the read waits again.
        match poll_idle_read(io, cx) {
            Poll::Ready(_) => Poll::Ready(false),
            Poll::Pending if tickets(io).is_some_and(|n| n > 0) => Poll::Ready(true),
            Poll::Pending => deadline.as_mut().poll(cx).map(|()| true),
        }
    })
    .await
}

/// Whether an idle connection is still open and silent: a read that would wait. A server
/// that closed it, reset it or wrote on it (a timeout answer) leaves it unfit for a request.
/// A TLS record the server sends after the handshake (a session ticket) is taken in here.
fn alive(io: &mut Io) -> bool {
    poll_idle_read(io, &mut Context::from_waker(Waker::noop())).is_pending()
}

/// A one-byte read on a connection that should be silent: `Pending` while it is open and
/// nothing but TLS records without data (tickets) has come; ready on data, EOF or error.
fn poll_idle_read(io: &mut Io, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
    let mut byte = [MaybeUninit::<u8>::uninit()];
    let mut buf = ReadBuf::uninit(&mut byte);
    Pin::new(io).poll_read(cx, buf.unfilled())
}

#[cfg(test)]
mod tests;
