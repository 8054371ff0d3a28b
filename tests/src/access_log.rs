//! Reading an access log a test gateway writes as JSON lines.

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;

/// The lines of the JSON access log at `path` that `keep` keeps, parsed, once there are
/// at least `n` (panics after 15 s with the file's text; `n = 0` reads it once). A last
/// line not yet ended by its newline is left for the next read.
pub async fn lines_where(path: &Path, n: usize, keep: impl Fn(&Value) -> bool) -> Vec<Value> {
    let started = Instant::now();
    loop {
        let mut text = std::fs::read_to_string(path).unwrap_or_default();
        // The writer may be halfway through a write: only whole lines are read.
        text.truncate(text.rfind('\n').map_or(0, |end| end + 1));
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .filter(|l| keep(l))
            .collect();
        if lines.len() >= n {
            return lines;
        }
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{} lines, not {n}, in:\n{text}",
            lines.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
