//! Address ranges in CIDR notation (`10.0.0.0/8`, `2001:db8::/32`, or a bare address for a
//! single host), for `trusted_proxies`.

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

/// A range of addresses: the network's first address and its prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cidr {
    network: IpAddr,
    prefix: u8,
}

impl Cidr {
    /// The range's first address.
    pub fn network(&self) -> IpAddr {
        self.network
    }

    /// The prefix length.
    pub fn prefix(&self) -> u8 {
        self.prefix
    }

    /// Whether the two ranges share an address (one holds the other's first address).
    pub fn overlaps(&self, other: &Cidr) -> bool {
        self.contains(other.network) || other.contains(self.network)
    }

    /// True when `addr` is in the range. IPv4-mapped IPv6 peers (`::ffff:10.0.0.1`, as a
    /// dual-stack socket reports IPv4 clients) are compared as the IPv4 address they are.
    pub fn contains(&self, addr: IpAddr) -> bool {
        match (self.network, addr.to_canonical()) {
            (IpAddr::V4(net), IpAddr::V4(a)) => {
                mask_v4(u32::from(a), self.prefix) == u32::from(net)
            }
            (IpAddr::V6(net), IpAddr::V6(a)) => {
                mask_v6(u128::from(a), self.prefix) == u128::from(net)
            }
            _ => false,
        }
    }
}

/// The first `prefix` bits of `bits`; a shift by the full width (prefix 0) keeps none.
fn mask_v4(bits: u32, prefix: u8) -> u32 {
    bits & u32::MAX.checked_shl(32 - u32::from(prefix)).unwrap_or(0)
}

fn mask_v6(bits: u128, prefix: u8) -> u128 {
    bits & u128::MAX.checked_shl(128 - u32::from(prefix)).unwrap_or(0)
}

impl FromStr for Cidr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let (addr, prefix) = match text.split_once('/') {
            Some((a, p)) => (a, Some(p)),
            None => (text, None),
        };
        let addr: IpAddr = addr.parse().map_err(|_| {
            format!("`{text}` is not an address or a CIDR range (10.0.0.0/8, fd00::/8)")
        })?;
        let addr = addr.to_canonical();
        let max = if addr.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            None => max,
            Some(p) => p
                .parse::<u8>()
                .ok()
                .filter(|p| *p <= max)
                .ok_or_else(|| format!("`{text}`: the prefix length must be 0 to {max}"))?,
        };
        let network = match addr {
            IpAddr::V4(a) => IpAddr::V4(mask_v4(u32::from(a), prefix).into()),
            IpAddr::V6(a) => IpAddr::V6(mask_v6(u128::from(a), prefix).into()),
        };
        if network != addr {
            return Err(format!(
                "`{text}` has host bits set; the range is {network}/{prefix}"
            ));
        }
        Ok(Cidr { network, prefix })
    }
}

impl fmt::Display for Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.network, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn ranges_contain_their_addresses_only() {
        let net: Cidr = "10.0.0.0/8".parse().unwrap();
        assert!(net.contains(ip("10.255.0.1")));
        assert!(!net.contains(ip("11.0.0.1")));
        assert!(
            net.contains(ip("::ffff:10.1.2.3")),
            "IPv4-mapped peers count as IPv4"
        );
        assert!(!net.contains(ip("fd00::1")));

        let host: Cidr = "127.0.0.1".parse().unwrap();
        assert!(host.contains(ip("127.0.0.1")));
        assert!(!host.contains(ip("127.0.0.2")));

        let all: Cidr = "0.0.0.0/0".parse().unwrap();
        assert!(all.contains(ip("203.0.113.9")));

        let v6: Cidr = "fd00::/8".parse().unwrap();
        assert!(v6.contains(ip("fd12::1")));
        assert!(!v6.contains(ip("fe80::1")));
        assert_eq!(v6.to_string(), "fd00::/8");
    }

    #[test]
    fn bad_ranges_say_why() {
        for (text, why) in [
            ("10.0.0.1/8", "host bits"),
            ("10.0.0.0/33", "0 to 32"),
            ("fd00::/129", "0 to 128"),
            ("ten", "not an address"),
        ] {
            let err = text.parse::<Cidr>().unwrap_err();
            assert!(err.contains(why), "{text}: {err}");
        }
    }
}
