//! Request IDs: a client's `X-Request-Id` kept when a trusted proxy sent it and it is a
//! sane token, else a new one, 128 random bits written as 32 lowercase hex digits.
//!
//! IDs come from a per-thread xoshiro256** generator seeded once per thread from the OS
//! (std's `RandomState`, whose first keys on a thread are the OS's random bytes): no
//! syscall, lock or allocation per request. Unpredictable enough to tell requests apart;
//! not a secret (an ID is no capability).

use std::cell::Cell;
use std::hash::{BuildHasher, Hasher};

/// An ID as leafgate makes it: 32 lowercase hex digits.
pub const LEN: usize = 32;

/// The longest ID taken from a trusted proxy; longer ones are replaced.
pub const MAX_KEPT: usize = 128;

/// Whether a value a trusted proxy sent may be kept as the request's ID: 1 to
/// [`MAX_KEPT`] visible ASCII characters (no space, no control character, nothing past
/// 0x7e), so that it goes on to the backend and into a log line as it came.
pub fn is_sane(value: &[u8]) -> bool {
    !value.is_empty() && value.len() <= MAX_KEPT && value.iter().all(|b| (0x21..=0x7e).contains(b))
}

/// A new ID.
pub fn generate() -> [u8; LEN] {
    let (a, b) = next_pair();
    let mut out = [0u8; LEN];
    hex(&mut out[..16], a);
    hex(&mut out[16..], b);
    out
}

/// Lowercase hex of `n` into `out` (16 bytes, or fewer for the low digits).
pub fn hex(out: &mut [u8], n: u64) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let len = out.len();
    for (i, o) in out.iter_mut().enumerate() {
        let shift = 4 * (len - 1 - i);
        *o = DIGITS[((n >> shift) & 0xf) as usize];
    }
}

/// Two 64-bit random numbers, neither both zero (an all-zero ID is what W3C trace
/// context calls invalid).
pub fn next_pair() -> (u64, u64) {
    loop {
        let (a, b) = (next(), next());
        if a != 0 || b != 0 {
            return (a, b);
        }
    }
}

/// One 64-bit random number from this thread's generator.
pub fn next() -> u64 {
    thread_local! {
        static STATE: Cell<[u64; 4]> = Cell::new(seed());
    }
    STATE.with(|s| {
        let mut x = s.get();
        let out = x[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = x[1] << 17;
        x[2] ^= x[0];
        x[3] ^= x[1];
        x[1] ^= x[2];
        x[0] ^= x[3];
        x[2] ^= t;
        x[3] = x[3].rotate_left(45);
        s.set(x);
        out
    })
}

/// 256 bits from the OS (through `RandomState`'s keys), never all zero.
fn seed() -> [u64; 4] {
    let keys = std::collections::hash_map::RandomState::new();
    let mut state = [0u64; 4];
    for (i, s) in state.iter_mut().enumerate() {
        let mut h = keys.build_hasher();
        h.write_usize(i);
        *s = h.finish();
    }
    if state == [0; 4] {
        state[0] = 0x9E37_79B9_7F4A_7C15;
    }
    state
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_32_lowercase_hex_digits_and_ids_differ() {
        let ids: std::collections::HashSet<[u8; LEN]> = (0..10_000).map(|_| generate()).collect();
        assert_eq!(ids.len(), 10_000);
        for id in ids.iter().take(100) {
            assert!(
                id.iter()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
            );
        }
        let other = std::thread::spawn(generate).join().unwrap();
        assert!(
            !ids.contains(&other),
            "another thread's generator is seeded apart"
        );
    }

    #[test]
    fn only_a_short_visible_token_is_kept() {
        assert!(is_sane(b"abc-123_4.5"));
        assert!(is_sane(&[b'a'; MAX_KEPT]));
        assert!(!is_sane(&[b'a'; MAX_KEPT + 1]));
        assert!(!is_sane(b""));
        assert!(!is_sane(b"a b"));
        assert!(!is_sane(b"a\r\nX-Injected: 1"));
        assert!(!is_sane("caf\u{e9}".as_bytes()));
        assert!(!is_sane(b"a\x7f"));
    }

    #[test]
    fn hex_writes_the_low_digits_in_order() {
        let mut out = [0u8; 16];
        hex(&mut out, 0x0123_4567_89ab_cdef);
        assert_eq!(&out, b"0123456789abcdef");
        let mut two = [0u8; 2];
        hex(&mut two, 0x1f);
        assert_eq!(&two, b"1f");
    }
}
