//! Human-readable quantities in the config file: byte sizes (`"64KiB"`), byte rates
//! (`"10MiB/s"`) and durations (`"30s"`, `"250ms"`).
//!
//! Each type parses in its `Deserialize` impl, so a malformed value is reported by the TOML
//! layer with the line and column of the value. Nothing here knows about config keys.

use std::fmt;
use std::num::NonZeroU64;
use std::str::FromStr;
use std::time::Duration;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};

/// A number of bytes, written with a binary or decimal unit: `"512"`, `"64KiB"`, `"1.5 MB"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ByteSize(pub u64);

impl FromStr for ByteSize {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let text = s.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let number: f64 = number.parse().map_err(|_| {
            format!("`{s}` is not a size: expected a number and a unit, like \"64KiB\" or \"10MB\"")
        })?;
        let multiplier: u64 = match unit.trim() {
            "" | "B" => 1,
            "KB" | "kB" => 1_000,
            "MB" => 1_000_000,
            "GB" => 1_000_000_000,
            "KiB" => 1 << 10,
            "MiB" => 1 << 20,
            "GiB" => 1 << 30,
            other => {
                return Err(format!(
                    "`{s}` has an unknown unit `{other}`: use B, KB, MB, GB, KiB, MiB or GiB"
                ));
            }
        };
        let bytes = number * multiplier as f64;
        if !bytes.is_finite() || bytes > u64::MAX as f64 {
            return Err(format!("`{s}` is too large"));
        }
        Ok(ByteSize(bytes.round() as u64))
    }
}

/// A byte rate: a [`ByteSize`] per second, written `"10MiB/s"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteRate(pub NonZeroU64);

impl FromStr for ByteRate {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        let Some(size) = s.trim().strip_suffix("/s") else {
            return Err(format!(
                "`{s}` is not a rate: write a size per second, like \"10MiB/s\""
            ));
        };
        let ByteSize(bytes) = size.parse()?;
        NonZeroU64::new(bytes)
            .map(ByteRate)
            .ok_or_else(|| format!("`{s}` is zero: leave the limit out for no limit"))
    }
}

/// A duration written the humane way: `"30s"`, `"250ms"`, `"2m"`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HumanDuration(pub Duration);

impl FromStr for HumanDuration {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        humantime::parse_duration(s.trim())
            .map(HumanDuration)
            .map_err(|e| {
                format!("`{s}` is not a duration ({e}): write it like \"30s\" or \"250ms\"")
            })
    }
}

/// A bandwidth limit: `"10MiB/s"`, or `{ rate = "10MiB/s", burst = "1MiB" }`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateLimit {
    pub rate: ByteRate,
    pub burst: Option<NonZeroU64>,
}

macro_rules! deserialize_from_str {
    ($($ty:ty => $expecting:literal),* $(,)?) => {$(
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct V;
                impl Visitor<'_> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($expecting)
                    }
                    fn visit_str<E: de::Error>(self, v: &str) -> Result<$ty, E> {
                        v.parse().map_err(E::custom)
                    }
                }
                deserializer.deserialize_str(V)
            }
        }
    )*};
}

deserialize_from_str! {
    ByteSize => "a size like \"64KiB\"",
    ByteRate => "a rate like \"10MiB/s\"",
    HumanDuration => "a duration like \"30s\"",
}

impl<'de> Deserialize<'de> for RateLimit {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            rate: ByteRate,
            burst: Option<ByteSize>,
        }

        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = RateLimit;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str(
                    "a rate like \"10MiB/s\" or a table { rate = \"10MiB/s\", burst = \"1MiB\" }",
                )
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<RateLimit, E> {
                Ok(RateLimit {
                    rate: v.parse().map_err(E::custom)?,
                    burst: None,
                })
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<RateLimit, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                let burst = match t.burst {
                    Some(ByteSize(0)) => return Err(de::Error::custom("burst must be above zero")),
                    Some(ByteSize(b)) => NonZeroU64::new(b),
                    None => None,
                };
                Ok(RateLimit {
                    rate: t.rate,
                    burst,
                })
            }
        }
        deserializer.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_take_decimal_and_binary_units() {
        assert_eq!("512".parse(), Ok(ByteSize(512)));
        assert_eq!("64KiB".parse(), Ok(ByteSize(65_536)));
        assert_eq!("1.5 MB".parse(), Ok(ByteSize(1_500_000)));
        assert_eq!("2GiB".parse(), Ok(ByteSize(2 << 30)));
        assert!("ten".parse::<ByteSize>().is_err());
        assert!(
            "5 parsecs"
                .parse::<ByteSize>()
                .unwrap_err()
                .contains("unknown unit")
        );
    }

    #[test]
    fn rates_need_per_second_and_a_positive_size() {
        assert_eq!("10MiB/s".parse::<ByteRate>().unwrap().0.get(), 10 << 20);
        assert!(
            "10MiB"
                .parse::<ByteRate>()
                .unwrap_err()
                .contains("per second")
        );
        assert!("0/s".parse::<ByteRate>().unwrap_err().contains("zero"));
    }

    #[test]
    fn durations_are_humane() {
        assert_eq!(
            "250ms".parse(),
            Ok(HumanDuration(Duration::from_millis(250)))
        );
        assert_eq!("2m".parse(), Ok(HumanDuration(Duration::from_secs(120))));
        assert!("soon".parse::<HumanDuration>().is_err());
    }

    #[test]
    fn rate_limits_are_a_string_or_a_table() {
        #[derive(Debug, Deserialize)]
        struct Doc {
            a: RateLimit,
            b: RateLimit,
        }
        let doc: Doc =
            toml::from_str("a = \"1MiB/s\"\nb = { rate = \"2MiB/s\", burst = \"64KiB\" }").unwrap();
        assert_eq!(doc.a.rate.0.get(), 1 << 20);
        assert_eq!(doc.a.burst, None);
        assert_eq!(doc.b.burst.map(NonZeroU64::get), Some(65_536));
        let err = toml::from_str::<Doc>("a = \"1MiB/s\"\nb = { rate = \"2MiB/s\", brust = \"1\" }")
            .unwrap_err();
        assert!(err.message().contains("brust"), "{err}");
    }
}
