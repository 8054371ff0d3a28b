//! Helpers every kubectl test of the chain needs, whichever crate it lives in: a TCP echo
//! server to forward to, the pod annotation that points a port at it, reading where
//! `kubectl port-forward` listens, running kubectl to completion, and its stderr without
//! client-go's own stream-race log line.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::process::Child;

use crate::KubeSim;

/// A TCP echo server on 127.0.0.1:0, for port-forward tests.
pub async fn echo_server() -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            tokio::spawn(async move {
                let (mut r, mut w) = conn.split();
                let _ = tokio::io::copy(&mut r, &mut w).await;
            });
        }
    });
    addr
}

/// Points pod port `port` of `ns/pod` at `target` (the annotation the simulator's
/// port-forward dials).
pub fn annotate_port(sim: &KubeSim, ns: &str, pod: &str, port: u16, target: SocketAddr) {
    sim.patch(
        "v1",
        "Pod",
        ns,
        pod,
        &json!({"metadata": {"annotations": {format!("kubesim.leafgate.io/port-{port}"): target.to_string()}}}),
        false,
    )
    .unwrap();
}

/// The local address a `kubectl port-forward` child (stdout piped) listens on, from its
/// `Forwarding from 127.0.0.1:P -> Q` line, within 15 s.
pub async fn forwarding_from(child: &mut Child) -> SocketAddr {
    let stdout = child.stdout.take().expect("kubectl's stdout is piped");
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(15), async {
        loop {
            let l = lines.next_line().await.unwrap().expect("kubectl output");
            if l.starts_with("Forwarding from 127.0.0.1:") {
                return l;
            }
        }
    })
    .await
    .expect("kubectl listening within 15 s");
    // Keep draining kubectl's stdout so it never blocks on a full pipe.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    line.trim_start_matches("Forwarding from ")
        .split(" -> ")
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

/// Sends each message on a fresh connection to `local` and checks it comes back whole
/// within 10 s; `what` names the case in failures.
pub async fn assert_echoes(local: SocketAddr, messages: &[Vec<u8>], what: &str) {
    for msg in messages {
        let mut conn = tokio::net::TcpStream::connect(local).await.unwrap();
        conn.write_all(msg).await.unwrap();
        let mut back = vec![0u8; msg.len()];
        tokio::time::timeout(Duration::from_secs(10), conn.read_exact(&mut back))
            .await
            .unwrap_or_else(|_| panic!("{what}: the echo within 10 s"))
            .unwrap();
        assert!(back == *msg, "{what}: {} bytes echoed wrong", msg.len());
    }
}

/// How a kubectl run ended.
pub struct Finished {
    pub code: Option<i32>,
    pub out: String,
    pub err: String,
}

/// Runs `cmd` (kubectl with its arguments and environment set) to completion within 30 s,
/// writing `stdin` to it first when given, and collects its exit code and output.
pub async fn run(mut cmd: tokio::process::Command, stdin: Option<&[u8]>) -> Finished {
    let mut child = cmd
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("kubectl runs");
    if let Some(input) = stdin {
        let mut pipe = child.stdin.take().unwrap();
        pipe.write_all(input).await.unwrap();
        drop(pipe);
    }
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .unwrap_or_else(|_| panic!("{cmd:?} finished within 30 s"))
        .unwrap();
    Finished {
        code: out.status.code(),
        out: String::from_utf8_lossy(&out.stdout).into_owned(),
        err: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// kubectl's stderr without client-go's "Unknown stream id N, discarding message" lines.
///
/// client-go's WebSocket executor (kubectl 1.32) starts reading before it has created its
/// streams, so the empty message the kubelet sends on the lowest writable channel to say the
/// stream is ready may arrive first and be logged and dropped. It carries no bytes, and a
/// real cluster races the same way; every other line is kept, and a dropped message that
/// carried output still shows in the output compared.
pub fn without_unknown_stream_log(stderr: &str) -> String {
    stderr
        .lines()
        .filter(|l| !(l.contains("] Unknown stream id ") && l.ends_with(", discarding message")))
        .flat_map(|l| [l, "\n"])
        .collect()
}

/// A table kubectl printed, cut where its header's columns start (kubectl's tabwriter
/// aligns every cell with its header and pads columns by at least three spaces, so a
/// column starts after two spaces; a cell may hold single spaces, `* * * * *`): the
/// header's names, then each row's cells, trimmed.
pub fn cut_table(text: &str) -> Vec<Vec<String>> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let head = lines.next().unwrap_or("");
    let b = head.as_bytes();
    let mut starts = vec![0];
    starts.extend((2..b.len()).filter(|&i| b[i] != b' ' && b[i - 1] == b' ' && b[i - 2] == b' '));
    let cut = |line: &str| -> Vec<String> {
        (0..starts.len())
            .map(|n| {
                let end = starts
                    .get(n + 1)
                    .copied()
                    .unwrap_or(line.len())
                    .min(line.len());
                line.get(starts[n].min(end)..end)
                    .unwrap_or("")
                    .trim()
                    .to_string()
            })
            .collect()
    };
    std::iter::once(head).chain(lines).map(cut).collect()
}

/// [`cut_table`] without its `AGE` column (the wall clock's), each `AGE` cell checked to
/// be an age kubectl prints of a recent object (`5s`, `2m`).
pub fn cut_table_without_age(out: &str) -> Vec<Vec<String>> {
    let table = cut_table(out);
    let age = table[0]
        .iter()
        .position(|h| h == "AGE")
        .unwrap_or_else(|| panic!("no AGE column: {out}"));
    table
        .into_iter()
        .enumerate()
        .map(|(i, mut row)| {
            let cell = row.remove(age);
            let aged = cell.ends_with('s') || cell.ends_with('m');
            assert!(i == 0 || aged, "{cell:?} is no age: {out}");
            row
        })
        .collect()
}

/// `rows` as owned strings, to compare with [`cut_table`]'s.
pub fn owned_rows(rows: &[&[&str]]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|r| r.iter().map(|c| c.to_string()).collect())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::without_unknown_stream_log;

    #[test]
    fn only_the_unknown_stream_line_is_dropped() {
        let err = "E1129 06:39:56.828036    8970 websocket.go:296] Unknown stream id 1, \
                   discarding message\nerr\ncommand terminated with exit code 3\n";
        assert_eq!(
            without_unknown_stream_log(err),
            "err\ncommand terminated with exit code 3\n"
        );
        let other = "E1129 06:39:56.828036    8970 websocket.go:301] Unknown stream id 1\nerr\n";
        assert_eq!(without_unknown_stream_log(other), other);
    }
}
