//! The log batch the plugin benches filter: 256 lines of a service's log, one in eight
//! holding a password, one in eight a health check to drop, one in eight a bearer token.

use leafgate::plugins::LogBatch;

/// `n` lines of the log.
pub fn log_lines(n: usize) -> LogBatch {
    let lines: Vec<String> = (0..n)
        .map(|i| match i % 8 {
            0 => format!("2024-05-01T12:00:{:02}Z INFO login user=u{i} password=hunter{i} from 10.0.0.{}", i % 60, i % 255),
            1 => format!("2024-05-01T12:00:{:02}Z INFO GET /healthz 200 0.1ms", i % 60),
            2 => format!("2024-05-01T12:00:{:02}Z DEBUG Authorization: Bearer tok.{i}-abc", i % 60),
            _ => format!("2024-05-01T12:00:{:02}Z INFO request id={i} path=/api/v1/items status=200 bytes={}", i % 60, i * 7),
        })
        .collect();
    LogBatch::from_lines(&lines).unwrap()
}
