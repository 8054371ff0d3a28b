//! Reading Kubernetes objects from the JSON text the gateway passes, and printing them the
//! way kubectl does (ages, timestamps).
//!
//! Only the fields plugins commonly read are typed; everything is optional because objects
//! arrive partial (a list may omit status). Unknown fields are ignored, not errors: the API
//! grows and a plugin must keep working.

use std::collections::BTreeMap;

use serde::Deserialize;
use serde::de::DeserializeOwned;

/// Reads one object (or any JSON shape) into `T`.
pub fn from_json<T: DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("not a valid object: {e}"))
}

/// Reads the JSON array of objects a table-formatter receives. A `List` object
/// (`{"kind":"PodList","items":[...]}`) is accepted too.
pub fn list_from_json<T: DeserializeOwned>(text: &str) -> Result<Vec<T>, String> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Shape<T> {
        Array(Vec<T>),
        List { items: Vec<T> },
    }
    match serde_json::from_str::<Shape<T>>(text) {
        Ok(Shape::Array(v)) | Ok(Shape::List { items: v }) => Ok(v),
        Err(e) => Err(format!("not a JSON array of objects: {e}")),
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    pub name: String,
    pub namespace: Option<String>,
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub creation_timestamp: Option<String>,
    pub deletion_timestamp: Option<String>,
}

/// The annotation the gateway sets on objects it gathers from leaf clusters: which leaf
/// each came from.
pub const LEAF_ANNOTATION: &str = "leafgate.io/leaf";

impl ObjectMeta {
    /// The leaf cluster this object came from, when the gateway said so.
    pub fn leaf(&self) -> Option<&str> {
        self.annotations.get(LEAF_ANNOTATION).map(String::as_str)
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    pub metadata: ObjectMeta,
    pub spec: PodSpec,
    pub status: PodStatus,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    pub node_name: Option<String>,
    pub containers: Vec<Named>,
    pub init_containers: Vec<Named>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct Named {
    pub name: String,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    pub phase: Option<String>,
    pub reason: Option<String>,
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    pub container_statuses: Vec<ContainerStatus>,
    pub init_container_statuses: Vec<ContainerStatus>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    pub name: String,
    pub ready: bool,
    pub restart_count: i64,
    pub state: ContainerState,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default)]
pub struct ContainerState {
    pub waiting: Option<StateDetail>,
    pub running: Option<serde_json::Value>,
    pub terminated: Option<StateDetail>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StateDetail {
    pub reason: Option<String>,
    pub exit_code: i64,
    pub signal: i64,
}

/// Seconds since the Unix epoch of an RFC 3339 timestamp as Kubernetes writes them
/// (`2024-05-01T12:00:00Z`, fractions and offsets accepted).
pub fn parse_timestamp(text: &str) -> Option<i64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let num = |r: std::ops::Range<usize>| text.get(r)?.parse::<i64>().ok();
    let (year, month, day) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (hour, minute, second) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Skip a fraction, then read the zone: Z or ±hh:mm.
    let mut rest = &text[19..];
    if let Some(frac) = rest.strip_prefix('.') {
        rest = frac.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        zone if zone.len() == 6 => {
            let sign = match &zone[..1] {
                "+" => 1,
                "-" => -1,
                _ => return None,
            };
            let h: i64 = zone[1..3].parse().ok()?;
            let m: i64 = zone[4..6].parse().ok()?;
            sign * (h * 3600 + m * 60)
        }
        _ => return None,
    };
    Some(days_from_civil(year, month, day) * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Seconds since the Unix epoch now, from WASI's wall clock.
pub fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// An age the way kubectl prints it (`45s`, `5m`, `3h`, `2d`, `1y20d`): precise when
/// young, coarser as it grows.
pub fn human_age(seconds: i64) -> String {
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        return match seconds % 60 {
            0 => format!("{minutes}m"),
            s => format!("{minutes}m{s}s"),
        };
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        return match minutes % 60 {
            0 => format!("{hours}h"),
            m => format!("{hours}h{m}m"),
        };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return match hours % 24 {
            0 => format!("{}d", hours / 24),
            h => format!("{}d{h}h", hours / 24),
        };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return match (hours / 24) % 365 {
            0 => format!("{}y", hours / 24 / 365),
            d => format!("{}y{d}d", hours / 24 / 365),
        };
    }
    format!("{}y", hours / 24 / 365)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps() {
        assert_eq!(parse_timestamp("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_timestamp("2024-03-01T00:00:00Z"), Some(1_709_251_200));
        assert_eq!(
            parse_timestamp("2024-03-01T01:00:00+01:00"),
            Some(1_709_251_200)
        );
        assert_eq!(
            parse_timestamp("2024-03-01T00:00:00.123Z"),
            Some(1_709_251_200)
        );
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn ages_read_like_kubectl() {
        assert_eq!(human_age(45), "45s");
        assert_eq!(human_age(300), "5m");
        assert_eq!(human_age(330), "5m30s");
        assert_eq!(human_age(3 * 3600), "3h");
        assert_eq!(human_age(3 * 3600 + 600), "3h10m");
        assert_eq!(human_age(2 * 86_400), "2d");
        assert_eq!(human_age(20 * 86_400), "20d");
        assert_eq!(human_age(800 * 86_400), "2y70d");
    }
}
