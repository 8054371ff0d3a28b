//! Coarse clocks, for what needs a time per request but not a precise one: when an idle
//! connection was put away, when bytes last moved on a body, the `Date` an answer carries.
//!
//! The kernel's coarse clocks (`CLOCK_MONOTONIC_COARSE`, `CLOCK_REALTIME_COARSE`) are read
//! from the vDSO without touching the time-stamp counter, at the price of the scheduler
//! tick's resolution (1-4 ms): ample for timeouts of seconds and a `Date` of seconds. A
//! request's duration, which the latency histogram needs to the microsecond, keeps the
//! precise clock.

use std::cell::RefCell;
use std::time::Duration;

/// A point on the coarse monotonic clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Coarse(Duration);

impl Coarse {
    /// How long after `earlier` this is (zero if it is not after).
    pub fn since(self, earlier: Coarse) -> Duration {
        self.0.saturating_sub(earlier.0)
    }
}

#[allow(
    unsafe_code,
    reason = "clock_gettime(2) has no wrapper in std; it only writes the timespec we own"
)]
fn read(clock: libc::clockid_t) -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the timespec we own; a clock id the kernel does not
    // know leaves it zeroed, which reads as the epoch.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Now, on the coarse monotonic clock.
pub fn now() -> Coarse {
    Coarse(read(libc::CLOCK_MONOTONIC_COARSE))
}

/// An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) is always this long.
pub const DATE_LEN: usize = 29;

thread_local! {
    /// The second last formatted and its text, per serving thread.
    static DATE: RefCell<(u64, [u8; DATE_LEN])> = const { RefCell::new((u64::MAX, [0; DATE_LEN])) };
}

/// The current time as an HTTP `Date` value, formatted at most once a second per thread.
pub fn date() -> [u8; DATE_LEN] {
    let now = read(libc::CLOCK_REALTIME_COARSE);
    DATE.with(|cell| {
        let mut cached = cell.borrow_mut();
        if cached.0 != now.as_secs() {
            let at = std::time::UNIX_EPOCH + Duration::from_secs(now.as_secs());
            let text = httpdate::HttpDate::from(at).to_string();
            if text.len() == DATE_LEN {
                cached.1.copy_from_slice(text.as_bytes());
                cached.0 = now.as_secs();
            }
        }
        cached.1
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_coarse_clock_moves_forward_with_the_precise_one() {
        let a = now();
        std::thread::sleep(Duration::from_millis(30));
        let b = now();
        assert!(b.since(a) >= Duration::from_millis(20), "{a:?} -> {b:?}");
        assert_eq!(a.since(b), Duration::ZERO);
    }

    #[test]
    fn the_date_is_an_http_date_of_this_second() {
        let text = date();
        let parsed = httpdate::parse_http_date(std::str::from_utf8(&text).unwrap()).unwrap();
        let skew = std::time::SystemTime::now()
            .duration_since(parsed)
            .unwrap_or_default();
        assert!(skew < Duration::from_secs(3), "{skew:?}");
    }
}
