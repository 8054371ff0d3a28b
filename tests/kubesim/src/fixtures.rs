//! The catalogue of pod shapes (`fixtures/pods/*.json`): one pod per file, with what
//! kube-apiserver's `printPod` prints for it, worked out by hand from the reference
//! (`shared/reference/kubernetes-protocols.md` section 9), not by running any printer.
//!
//! Every printer is checked against it: the simulator's own (`printers`), leafgate's shared
//! one (`crates/k8s-print`, which reads the same files in its unit tests), and end to end,
//! kubectl through leafgate against kubectl straight at the simulator.
//!
//! The times in a file are written as seen at `FIXTURE_NOW`; `PodShape::pod_at` moves them
//! all by the same amount so that a live simulator prints the same ages. Each time an
//! expected age is printed from sits one second past its minute (`15m ago` is 15m01s before
//! the instant, and reads so until 15m59s), so a test on a loaded machine has nearly a
//! minute before an age turns; half a minute was once too little for a CI run.

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::Value;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// The instant the fixtures' times are written for: 2024-03-01T00:00:00Z.
pub const FIXTURE_NOW: i64 = 1_709_251_200;

/// The fields of a pod holding a time, which `pod_at` moves.
const TIME_FIELDS: [&str; 6] = [
    "creationTimestamp",
    "deletionTimestamp",
    "startedAt",
    "finishedAt",
    "lastTransitionTime",
    "lastProbeTime",
];

/// The cells `printPod` gives a shape at `FIXTURE_NOW` (wide columns included).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Printed {
    pub ready: String,
    pub status: String,
    pub restarts: String,
    pub ip: String,
    pub node: String,
    pub nominated: String,
    pub gates: String,
}

/// One pod shape of the catalogue.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PodShape {
    /// What the shape stands for, in a sentence.
    pub about: String,
    pub printed: Printed,
    /// The pod as a kube-apiserver stores it (namespace `shapes`, named as its file).
    pub pod: Value,
}

impl PodShape {
    pub fn name(&self) -> &str {
        self.pod["metadata"]["name"].as_str().unwrap_or("")
    }

    pub fn namespace(&self) -> &str {
        self.pod["metadata"]["namespace"].as_str().unwrap_or("")
    }

    /// The pod with every time moved as if `now` (seconds since the Unix epoch) were
    /// `FIXTURE_NOW`.
    pub fn pod_at(&self, now: i64) -> Value {
        let mut pod = self.pod.clone();
        shift(&mut pod, now - FIXTURE_NOW);
        pod
    }
}

fn shift(v: &mut Value, by: i64) {
    match v {
        Value::Object(map) => {
            for (key, value) in map.iter_mut() {
                match value {
                    Value::String(text) if TIME_FIELDS.contains(&key.as_str()) => {
                        let t = OffsetDateTime::parse(text, &Rfc3339)
                            .unwrap_or_else(|e| panic!("{key}: {text:?} is not RFC 3339: {e}"));
                        *text = (t + time::Duration::seconds(by))
                            .format(&Rfc3339)
                            .expect("RFC 3339 formats any UTC time");
                    }
                    other => shift(other, by),
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| shift(i, by)),
        _ => {}
    }
}

/// Where the catalogue lives.
pub fn pods_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pods")
}

/// Every shape of the catalogue, by name. Panics on a file that does not read: the
/// catalogue is part of the tests.
pub fn pod_shapes() -> Vec<PodShape> {
    let dir = pods_dir();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let shape: PodShape =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let stem = path.file_stem().and_then(|s| s.to_str()).unwrap_or("");
            assert_eq!(shape.name(), stem, "{}: named as its file", path.display());
            shape
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_catalogue_reads_and_moves_its_times() {
        let shapes = pod_shapes();
        assert!(shapes.len() >= 12, "{} shapes", shapes.len());
        let crash = shapes.iter().find(|s| s.name() == "crash-loop").unwrap();
        let moved = crash.pod_at(FIXTURE_NOW + 3600);
        let at = "/status/containerStatuses/0/lastState/terminated/finishedAt";
        assert_eq!(crash.pod.pointer(at).unwrap(), "2024-02-29T23:44:59Z");
        assert_eq!(moved.pointer(at).unwrap(), "2024-03-01T00:44:59Z");
    }
}
