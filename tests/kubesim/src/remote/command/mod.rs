//! Remote commands (`exec`, `attach`): the process a call runs and the `metav1.Status` its
//! end becomes, independent of the transport (`spdy` and `websocket` carry the streams).
//!
//! **exec** runs `command` directly as argv (no shell), with stdin piped when asked. A TTY
//! is not allocated: the process sees pipes, and resize messages are read and dropped.
//!
//! **attach** has no long-lived container process to join here: each attach starts the
//! container's "main process" afresh, from the pod object's `command` + `args` for that
//! container (`args` alone are run as argv; neither means `sh`), and ends when it exits.
//! Attach answers `Success` however that process exits, as the kubelet's attach does.

pub mod spdy;
pub mod status;
pub mod websocket;

pub use status::Status;

use std::process::Stdio;

use bytes::Bytes;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::{RemoteCall, RemoteKind};

/// The call's streams as channels, whatever carries them. A `None` stream was not asked
/// for; a closed `stdin` is end of input; dropping an output sender ends that stream.
#[derive(Default)]
pub struct Streams {
    pub stdin: Option<mpsc::Receiver<Bytes>>,
    pub stdout: Option<mpsc::Sender<Bytes>>,
    pub stderr: Option<mpsc::Sender<Bytes>>,
    pub resize: Option<mpsc::Receiver<Bytes>>,
}

/// The argv a call runs: exec's `command`, or the container's main process for attach.
pub fn argv(call: &RemoteCall) -> Vec<String> {
    match &call.kind {
        RemoteKind::Exec { command } => command.clone(),
        _ => main_process(&call.pod_object, &call.container),
    }
}

fn main_process(pod: &Value, container: &str) -> Vec<String> {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let spec = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .filter_map(|f| pod.pointer(&format!("/spec/{f}")).and_then(Value::as_array))
        .flatten()
        .find(|c| c["name"].as_str() == Some(container));
    let mut argv = spec.map(|c| strings(&c["command"])).unwrap_or_default();
    argv.extend(spec.map(|c| strings(&c["args"])).unwrap_or_default());
    if argv.is_empty() {
        argv.push("sh".to_string());
    }
    argv
}

fn pipe(asked: bool) -> Stdio {
    if asked { Stdio::piped() } else { Stdio::null() }
}

async fn pump_out<R: AsyncRead + Unpin>(src: Option<R>, dst: Option<mpsc::Sender<Bytes>>) {
    let (Some(mut src), Some(dst)) = (src, dst) else {
        return;
    };
    let mut buf = vec![0u8; 32 * 1024];
    // Ends at the pipe's EOF, a read error, or when the transport stops taking output.
    while let Ok(n) = src.read(&mut buf).await {
        if n == 0 || dst.send(Bytes::copy_from_slice(&buf[..n])).await.is_err() {
            return;
        }
    }
}

/// Runs the call's process with `streams` and answers its Status. Output senders are
/// dropped before this returns, so the transport can end those streams first.
///
/// `hangup` resolves when the client is gone: the process is killed then, so a dropped
/// connection does not leave it running on the test machine.
pub async fn run(
    call: &RemoteCall,
    streams: Streams,
    hangup: impl std::future::Future<Output = ()>,
) -> Status {
    let argv = argv(call);
    let Streams {
        stdin,
        stdout,
        stderr,
        resize,
    } = streams;
    let mut cmd = tokio::process::Command::new(&argv[0]);
    cmd.args(&argv[1..])
        .stdin(pipe(stdin.is_some()))
        .stdout(pipe(stdout.is_some()))
        .stderr(pipe(stderr.is_some()))
        .kill_on_drop(true);
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => {
            let what = match call.kind {
                RemoteKind::Exec { .. } => "error executing command in container",
                _ => "error attaching to container",
            };
            return Status::internal(&format!("{what}: failed to start {:?}: {e}", argv[0]));
        }
    };
    let feeder = match (stdin, child.stdin.take()) {
        (Some(mut rx), Some(mut to_child)) => Some(tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                if to_child.write_all(&b).await.is_err() {
                    return;
                }
            }
            // End of input: dropping the pipe is the child's EOF.
        })),
        _ => None,
    };
    let resizer = resize.map(|mut rx| {
        tokio::spawn(async move {
            while let Some(b) = rx.recv().await {
                // A stream of `{"Width":W,"Height":H}` objects (several may share a chunk);
                // the process has pipes, not a terminal, to resize.
                for size in serde_json::Deserializer::from_slice(&b).into_iter::<Value>() {
                    match size {
                        Ok(size) => tracing::debug!(
                            width = %size["Width"],
                            height = %size["Height"],
                            "remote: resize read and ignored (no tty)"
                        ),
                        Err(e) => {
                            tracing::debug!(error = %e, "remote: unreadable resize message");
                            break;
                        }
                    }
                }
            }
        })
    });
    let (out, err) = (child.stdout.take(), child.stderr.take());
    let waited = async {
        tokio::select! {
            status = child.wait() => status,
            () = hangup => {
                tracing::debug!("remote: client gone, killing the process");
                let _ = child.start_kill();
                child.wait().await
            }
        }
    };
    let (status, (), ()) = tokio::join!(waited, pump_out(out, stdout), pump_out(err, stderr));
    for task in feeder.into_iter().chain(resizer) {
        task.abort();
    }
    match (status, &call.kind) {
        (Err(e), _) => Status::internal(&format!("error executing command in container: {e}")),
        (Ok(_), RemoteKind::Attach) => Status::success(),
        (Ok(s), _) => match s.code() {
            Some(0) => Status::success(),
            Some(code) => Status::exit_code(code),
            None => Status::internal(&format!("error executing command in container: {s}")),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(kind: RemoteKind, pod: Value) -> RemoteCall {
        RemoteCall {
            kind,
            namespace: "default".into(),
            pod: "p".into(),
            container: "app".into(),
            stdin: true,
            stdout: true,
            stderr: true,
            tty: false,
            pod_object: pod,
        }
    }

    #[test]
    fn attach_runs_the_containers_command_and_args() {
        let pod = json!({"spec": {"containers": [
            {"name": "other", "command": ["false"]},
            {"name": "app", "command": ["sh", "-c"], "args": ["echo hi"]},
        ]}});
        assert_eq!(
            argv(&call(RemoteKind::Attach, pod)),
            ["sh", "-c", "echo hi"]
        );
        assert_eq!(argv(&call(RemoteKind::Attach, json!({}))), ["sh"]);
    }

    #[tokio::test]
    async fn exec_pipes_stdin_through_and_reports_exit_codes() {
        let (in_tx, in_rx) = mpsc::channel(4);
        let (out_tx, mut out_rx) = mpsc::channel(4);
        let c = call(
            RemoteKind::Exec {
                command: vec!["sh".into(), "-c".into(), "cat; exit 4".into()],
            },
            json!({}),
        );
        in_tx.send(Bytes::from("ping\n")).await.unwrap();
        drop(in_tx);
        let streams = Streams {
            stdin: Some(in_rx),
            stdout: Some(out_tx),
            ..Streams::default()
        };
        let status = run(&c, streams, std::future::pending()).await;
        let mut out = Vec::new();
        while let Some(b) = out_rx.recv().await {
            out.extend_from_slice(&b);
        }
        assert_eq!(out, b"ping\n");
        assert_eq!(status, Status::exit_code(4));
        let missing = call(
            RemoteKind::Exec {
                command: vec!["/nonexistent/kubesim-binary".into()],
            },
            json!({}),
        );
        assert_eq!(
            run(&missing, Streams::default(), std::future::pending())
                .await
                .reason,
            "InternalError"
        );
    }
}
