//! Byte-rate limits for hijacked connections: token buckets that may run into debt, and the
//! chain of buckets (per connection, per route, per tenant) one direction of a connection is
//! charged to.
//!
//! This module owns the arithmetic and the waiting. It does not read config files, know what
//! a route or a tenant is, or move bytes: the snapshot builds the shared buckets once, and
//! `proxy::splice` charges a [`Limiter`] for every chunk it copies.
//!
//! # Model
//! A [`Bucket`] holds up to `burst` bytes of credit and refills at `rate` bytes per second.
//! [`Limiter::charge`] takes a whole chunk from every bucket of the chain *at once*, even when
//! that drives a bucket negative (debt), and answers how long to wait until every bucket is
//! out of debt again, `debt / rate` for the worst one. So:
//! - a chunk never waits while every bucket has credit (no added latency);
//! - the caller sleeps once per chunk for the longest wait, on tokio's timer (never spins);
//! - connections sharing a tenant bucket queue behind each other's debt, which splits the
//!   total between them without any bookkeeping of who is waiting;
//! - a sleep that overshoots (tokio's timer ticks in milliseconds) loses nothing as long as
//!   the overshoot is shorter than `burst / rate`: the credit earned meanwhile stays in the
//!   bucket. That is why the default burst never falls below a few milliseconds of traffic.
//!
//! The state is kept as the instant the bucket was (or will be) empty, in nanoseconds with
//! the division remainder carried over, so no rounding drifts even at 1 GiB/s.
//!
//! # Why not a crate
//! - `governor` (GCRA) counts time per cell in whole nanoseconds: one byte per cell at
//!   1 GiB/s is 0.93 ns, clamped to 1 ns (7% slow), and 100 MiB/s is 9.54 ns truncated to 9
//!   (6% fast), against an accuracy goal of 2%. `check_n`/`until_n_ready` take
//!   `n <= burst` (a `NonZeroU32`) all or nothing and keep no debt, so a chain of buckets
//!   would have to wait on each in turn, and a big chunk starves behind small ones.
//! - `leaky-bucket` hands out permits through an async fair queue per bucket: charging three
//!   buckets is three awaits, and there is no synchronous "charge now, how long to wait".
//! - `async-speed-limit` (TiKV) has this very debt model (`consume_duration`), but its clock
//!   is `futures-timer`'s own thread rather than tokio's timer (so the paused test clock does
//!   not drive it), it adds a `min_wait` to every throttled sleep, and its burst is a refill
//!   period. Wrapping it in a tokio clock adapter would take as many lines as [`Bucket`].

use std::num::NonZeroU64;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::config::units::RateLimit;

/// Burst given to a bucket whose config has none: a tenth of a second of traffic...
const DEFAULT_BURST_SECONDS_DIVISOR: u64 = 10;
/// ...but at least this much, so a slow limit still lets one 16 KiB TLS record or HTTP/2
/// frame through without waiting...
pub const MIN_DEFAULT_BURST: u64 = 16 << 10;
/// ...and at most this much, so a fresh connection at a very high limit does not get a huge
/// free head start. 4 MiB is still 3.9 ms at 1 GiB/s, above the timer's 1 ms resolution.
pub const MAX_DEFAULT_BURST: u64 = 4 << 20;

/// Largest chunk [`Limiter::chunk_hint`] suggests: the copy buffer size.
pub const MAX_CHUNK: usize = 64 << 10;
/// Smallest chunk [`Limiter::chunk_hint`] suggests, even under a tinier configured burst:
/// below this, system calls cost more than the overshoot of one chunk past the burst.
pub const MIN_CHUNK: usize = 1 << 10;

const NANOS_PER_SEC: u128 = 1_000_000_000;

/// The burst a limit gets: the configured one, or a tenth of a second of traffic clamped to
/// [`MIN_DEFAULT_BURST`]..=[`MAX_DEFAULT_BURST`].
pub fn effective_burst(limit: &RateLimit) -> u64 {
    match limit.burst {
        Some(burst) => burst.get(),
        None => (limit.rate.0.get() / DEFAULT_BURST_SECONDS_DIVISOR)
            .clamp(MIN_DEFAULT_BURST, MAX_DEFAULT_BURST),
    }
}

/// One token bucket: `rate` bytes per second, holding at most `burst` bytes of credit, and
/// allowed to go into debt. Shared (behind an [`Arc`]) by every connection it limits.
#[derive(Debug)]
pub struct Bucket {
    rate: NonZeroU64,
    burst: u64,
    /// How long the bucket takes to fill from empty: credit never exceeds this much time.
    fill_time: Duration,
    state: Mutex<State>,
}

#[derive(Debug)]
struct State {
    /// When the bucket was, or will be once its debt is paid, empty. Credit now is
    /// `(now - empty_at) * rate`, capped at `burst`; a future `empty_at` is debt.
    empty_at: Instant,
    /// `bytes * 1e9 mod rate` left over from turning bytes into nanoseconds, carried so
    /// rounding does not drift.
    remainder: u128,
}

impl Bucket {
    /// A bucket for `limit`, starting full.
    pub fn new(limit: RateLimit) -> Arc<Bucket> {
        let rate = limit.rate.0;
        let burst = effective_burst(&limit);
        let fill_time = nanos_for(burst, rate, 0).0;
        let now = Instant::now();
        // Start full; right after boot the monotonic clock may be too young for that, and
        // starting empty is the harmless fallback.
        let empty_at = now.checked_sub(fill_time).unwrap_or(now);
        Arc::new(Bucket {
            rate,
            burst,
            fill_time,
            state: Mutex::new(State {
                empty_at,
                remainder: 0,
            }),
        })
    }

    /// Bytes per second.
    pub fn rate(&self) -> u64 {
        self.rate.get()
    }

    /// The most credit the bucket holds, in bytes.
    pub fn burst(&self) -> u64 {
        self.burst
    }

    /// Takes `n` bytes now, into debt if need be, and returns how long until the bucket is
    /// out of debt (zero when it had the credit).
    pub fn charge(&self, n: u64, now: Instant) -> Duration {
        // The lock is held for a few arithmetic operations; a poisoned lock can only come
        // from a panic in them, and the state is still consistent then.
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        // Credit beyond the burst is lost: move a long-past `empty_at` up to `now - fill`.
        if let Some(full_since) = now.checked_sub(self.fill_time) {
            if state.empty_at < full_since {
                state.empty_at = full_since;
                state.remainder = 0;
            }
        }
        let (cost, remainder) = nanos_for(n, self.rate, state.remainder);
        state.empty_at += cost;
        state.remainder = remainder;
        state.empty_at.saturating_duration_since(now)
    }
}

/// `bytes / rate` seconds as a [`Duration`], plus the new remainder, given the remainder
/// carried from before (in units of `1 / (rate * 1e9)` seconds).
fn nanos_for(bytes: u64, rate: NonZeroU64, carried: u128) -> (Duration, u128) {
    let rate = u128::from(rate.get());
    let scaled = u128::from(bytes) * NANOS_PER_SEC + carried;
    let nanos = scaled / rate;
    // Fewer than 2^64 ns (584 years) for any u64 byte count at >= 1 B/s would need
    // bytes < 1.8e10; clamp instead of panicking on absurd inputs.
    let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
    (Duration::from_nanos(nanos), scaled % rate)
}

/// The chain of buckets one direction of one connection is charged to, e.g. `[per
/// connection, route total, tenant total]`. Empty means unlimited.
#[derive(Clone, Debug, Default)]
pub struct Limiter {
    buckets: Vec<Arc<Bucket>>,
}

impl Limiter {
    pub fn new(buckets: impl IntoIterator<Item = Arc<Bucket>>) -> Self {
        Limiter {
            buckets: buckets.into_iter().collect(),
        }
    }

    /// No bucket in the chain: charging is free and never waits.
    pub fn is_unlimited(&self) -> bool {
        self.buckets.is_empty()
    }

    /// The largest chunk worth reading at once into a [`MAX_CHUNK`] buffer:
    /// [`chunk_hint_within`](Self::chunk_hint_within) that size.
    pub fn chunk_hint(&self) -> usize {
        self.chunk_hint_within(MAX_CHUNK)
    }

    /// The largest chunk worth reading at once when the carrier holds up to `max` bytes
    /// (a pipe holds more than a copy buffer): the smallest burst in the chain, clamped to
    /// [`MIN_CHUNK`]..=`max` (`max` when unlimited). A chunk larger than the burst would
    /// wait even when the bucket is full, and would let one read overshoot the limit by
    /// that much.
    pub fn chunk_hint_within(&self, max: usize) -> usize {
        let max = max.max(MIN_CHUNK);
        let smallest = self.buckets.iter().map(|b| b.burst()).min();
        match smallest {
            None => max,
            Some(burst) => usize::try_from(burst)
                .unwrap_or(usize::MAX)
                .clamp(MIN_CHUNK, max),
        }
    }

    /// Charges `n` bytes to every bucket now and returns how long to wait before sending
    /// them so the average stays within every rate: zero when every bucket had the credit,
    /// else the longest `debt / rate`. Never waits itself, never spins.
    pub fn charge(&self, n: usize) -> Duration {
        if self.buckets.is_empty() || n == 0 {
            return Duration::ZERO;
        }
        let now = Instant::now();
        let n = n as u64;
        self.buckets
            .iter()
            .map(|bucket| bucket.charge(n, now))
            .max()
            .unwrap_or(Duration::ZERO)
    }

    /// [`charge`](Self::charge), then sleep on tokio's timer for the answer; returns the time
    /// spent asleep (zero when not throttled), which the timer's millisecond ticks round up
    /// from the answer.
    pub async fn throttle(&self, n: usize) -> Duration {
        let start = Instant::now();
        let wait = self.charge(n);
        if wait.is_zero() {
            return Duration::ZERO;
        }
        tokio::time::sleep(wait).await;
        start.elapsed()
    }
}

/// The buckets of one "total" limit (a route's or a tenant's), one per direction, because
/// each direction is limited on its own: uploads do not eat the download budget.
///
/// Built once per snapshot and shared by every connection under that route or tenant.
#[derive(Clone, Debug, Default)]
pub struct SharedLimits {
    /// Charged by bytes going client -> upstream.
    pub up: Option<Arc<Bucket>>,
    /// Charged by bytes going upstream -> client.
    pub down: Option<Arc<Bucket>>,
}

impl SharedLimits {
    pub fn new(total: Option<RateLimit>) -> Self {
        SharedLimits {
            up: total.map(Bucket::new),
            down: total.map(Bucket::new),
        }
    }
}

/// The two limiters of a new connection: `(client -> upstream, upstream -> client)`. Each
/// gets a fresh per-connection bucket (when `per_connection` is set) followed by its
/// direction's bucket from every `shared` total, e.g. `[&route_totals, &tenant_totals]`.
pub fn connection_limiters(
    per_connection: Option<RateLimit>,
    shared: &[&SharedLimits],
) -> (Limiter, Limiter) {
    let chain = |pick: fn(&SharedLimits) -> &Option<Arc<Bucket>>| {
        Limiter::new(
            per_connection
                .map(Bucket::new)
                .into_iter()
                .chain(shared.iter().filter_map(|s| pick(s).clone())),
        )
    };
    (chain(|s| &s.up), chain(|s| &s.down))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::units::ByteRate;

    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;

    fn limit(rate: u64, burst: Option<u64>) -> RateLimit {
        RateLimit {
            rate: ByteRate(NonZeroU64::new(rate).unwrap()),
            burst: burst.map(|b| NonZeroU64::new(b).unwrap()),
        }
    }

    #[test]
    fn default_burst_is_a_tenth_of_a_second_within_bounds() {
        assert_eq!(effective_burst(&limit(10 * MIB, None)), MIB);
        assert_eq!(effective_burst(&limit(KIB, None)), MIN_DEFAULT_BURST);
        assert_eq!(effective_burst(&limit(1 << 30, None)), MAX_DEFAULT_BURST);
        assert_eq!(effective_burst(&limit(1 << 30, Some(123))), 123);
    }

    #[test]
    fn chunk_hint_follows_the_smallest_burst() {
        assert_eq!(Limiter::default().chunk_hint(), MAX_CHUNK);
        let small = Bucket::new(limit(MIB, Some(8 * KIB)));
        let big = Bucket::new(limit(100 * MIB, None));
        assert_eq!(Limiter::new([big.clone()]).chunk_hint(), MAX_CHUNK);
        assert_eq!(Limiter::new([big, small]).chunk_hint(), 8 * KIB as usize);
        let tiny = Bucket::new(limit(MIB, Some(10)));
        assert_eq!(Limiter::new([tiny]).chunk_hint(), MIN_CHUNK);
        // A pipe holds more than the copy buffer: the burst alone bounds the chunk then.
        let fast = Limiter::new([Bucket::new(limit(1 << 30, None))]);
        assert_eq!(fast.chunk_hint_within(1 << 20), 1 << 20);
        assert_eq!(
            fast.chunk_hint_within(usize::MAX),
            MAX_DEFAULT_BURST as usize
        );
        assert_eq!(Limiter::default().chunk_hint_within(1 << 20), 1 << 20);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_bucket_adds_no_wait_until_the_burst_is_spent() {
        let limiter = Limiter::new([Bucket::new(limit(MIB, Some(64 * KIB)))]);
        for _ in 0..4 {
            assert_eq!(limiter.charge(16 << 10), Duration::ZERO);
        }
        // The burst is spent: 16 KiB of debt at 1 MiB/s is 1/64 s.
        assert_eq!(limiter.charge(16 << 10), Duration::from_micros(15_625));
    }

    #[tokio::test(start_paused = true)]
    async fn debt_accumulates_and_is_paid_by_time() {
        let bucket = Bucket::new(limit(1000, Some(1000)));
        let limiter = Limiter::new([bucket]);
        assert_eq!(limiter.charge(1000), Duration::ZERO);
        assert_eq!(limiter.charge(500), Duration::from_millis(500));
        assert_eq!(limiter.charge(500), Duration::from_millis(1000));
        tokio::time::advance(Duration::from_millis(400)).await;
        assert_eq!(
            limiter.charge(0),
            Duration::ZERO,
            "charging nothing never waits"
        );
        assert_eq!(limiter.charge(100), Duration::from_millis(700));
        // After the debt is paid the bucket refills, but never beyond its burst.
        tokio::time::advance(Duration::from_secs(60)).await;
        assert_eq!(limiter.charge(1000), Duration::ZERO);
        assert_eq!(limiter.charge(1), Duration::from_millis(1));
    }

    #[tokio::test(start_paused = true)]
    async fn rounding_does_not_drift_at_high_rates() {
        // 1 GiB/s is 0.93 ns per byte: a million 3-byte charges must cost exactly 3 MB worth.
        let rate = 1 << 30;
        let limiter = Limiter::new([Bucket::new(limit(rate, Some(1)))]);
        let mut last = Duration::ZERO;
        for _ in 0..1_000_000 {
            last = limiter.charge(3);
        }
        let exact = 3_000_000f64 / rate as f64;
        assert!(
            (last.as_secs_f64() - exact).abs() < 2e-9,
            "{last:?} vs {exact}s"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_longest_wait_in_the_chain_wins() {
        let connection = Bucket::new(limit(10 * MIB, Some(MIB)));
        let tenant = Bucket::new(limit(MIB, Some(64 * KIB)));
        let limiter = Limiter::new([connection.clone(), tenant.clone()]);
        assert_eq!(limiter.charge(64 << 10), Duration::ZERO);
        // The tenant is out of credit (64 KiB of debt = 62.5 ms), the connection is not.
        assert_eq!(limiter.charge(64 << 10), Duration::from_micros(62_500));
        // Both buckets were charged: the connection bucket has 128 KiB less credit.
        assert_eq!(
            connection.charge(MIB - 128 * KIB, Instant::now()),
            Duration::ZERO
        );
        assert!(connection.charge(1, Instant::now()) > Duration::ZERO);
    }

    #[tokio::test(start_paused = true)]
    async fn throttled_sends_average_the_rate() {
        // Send 10 MiB in 64 KiB chunks through a 2 MiB/s limit: the time taken must be what
        // the rate allows past the initial burst, to the microsecond on the paused clock.
        let limiter = Limiter::new([Bucket::new(limit(2 * MIB, None))]);
        let burst = effective_burst(&limit(2 * MIB, None));
        let start = Instant::now();
        let mut throttled = Duration::ZERO;
        for _ in 0..160 {
            throttled += limiter.throttle(64 << 10).await;
        }
        let elapsed = start.elapsed();
        let expected = (10 * MIB - burst) as f64 / (2 * MIB) as f64;
        assert!(
            (elapsed.as_secs_f64() - expected).abs() < 0.002,
            "{elapsed:?} vs {expected}s"
        );
        // Every throttled moment is counted, and only those: the first 12 chunks had credit.
        let unthrottled = Duration::from_secs_f64(burst as f64 / (2 * MIB) as f64);
        assert!(
            throttled <= elapsed && throttled + unthrottled >= elapsed,
            "throttled {throttled:?} of {elapsed:?}"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_shared_bucket_splits_its_rate_between_connections() {
        let tenant = SharedLimits::new(Some(limit(2 * MIB, None)));
        let (a, _) = connection_limiters(Some(limit(10 * MIB, None)), &[&tenant]);
        let (b, _) = connection_limiters(Some(limit(10 * MIB, None)), &[&tenant]);
        let start = Instant::now();
        let send = |limiter: Limiter| async move {
            for _ in 0..64 {
                limiter.throttle(64 << 10).await;
            }
            Instant::now()
        };
        // 8 MiB in total through a shared 2 MiB/s: about 4 s, not the 2 s of two 2 MiB/s.
        let (done_a, done_b) = tokio::join!(send(a), send(b));
        for done in [done_a, done_b] {
            let secs = (done - start).as_secs_f64();
            assert!((3.7..4.1).contains(&secs), "finished after {secs}s");
        }
    }

    #[test]
    fn connection_limiters_chain_one_bucket_per_level_and_direction() {
        let route = SharedLimits::new(Some(limit(MIB, None)));
        let tenant = SharedLimits::new(None);
        let (up, down) = connection_limiters(Some(limit(MIB, None)), &[&route, &tenant]);
        assert_eq!(up.buckets.len(), 2);
        assert_eq!(down.buckets.len(), 2);
        // Directions never share a bucket, connections share the route's.
        assert!(!Arc::ptr_eq(&up.buckets[0], &down.buckets[0]));
        assert!(!Arc::ptr_eq(&up.buckets[1], &down.buckets[1]));
        let (up2, _) = connection_limiters(Some(limit(MIB, None)), &[&route]);
        assert!(Arc::ptr_eq(&up.buckets[1], &up2.buckets[1]));
        assert!(!Arc::ptr_eq(&up.buckets[0], &up2.buckets[0]));
        let (up, down) = connection_limiters(None, &[&tenant]);
        assert!(up.is_unlimited() && down.is_unlimited());
    }

    /// On the real clock: no wait at all while there is credit, and the rate holds with
    /// tokio's millisecond timer rounding every sleep up.
    #[tokio::test]
    async fn real_time_rate_holds() {
        let rate = 8 * MIB;
        let limiter = Limiter::new([Bucket::new(limit(rate, None))]);
        let burst = effective_burst(&limit(rate, None));
        let start = std::time::Instant::now();
        let mut sent = 0u64;
        while sent + (16 << 10) <= burst {
            assert_eq!(limiter.charge(16 << 10), Duration::ZERO);
            sent += 16 << 10;
        }
        while sent < 4 * MIB {
            limiter.throttle(16 << 10).await;
            sent += 16 << 10;
        }
        let expected = (sent - burst) as f64 / rate as f64;
        let elapsed = start.elapsed().as_secs_f64();
        // Never faster than the rate (5% for timer granularity); slower only by what a
        // loaded 2-core CI machine adds to real sleeps.
        assert!(
            elapsed >= expected * 0.95 && elapsed <= expected * 2.0 + 0.25,
            "{elapsed}s vs {expected}s"
        );
    }
}
