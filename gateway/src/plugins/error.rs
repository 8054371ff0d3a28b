//! How a plugin call fails: the runtime's classification of one failed call ([`Fault`],
//! by [`FaultKind`]), and [`PluginError`], what the rest of the gateway and the CLI see.
//!
//! Owns the mapping of a plugin failure to an HTTP status; does not decide when a failure
//! is an error at all (that is the hook's `on_error` policy, in `tenant`).

use std::path::PathBuf;

use http::StatusCode;

use super::world::World;

/// Why one plugin call failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FaultKind {
    /// The plugin trapped (a panic, `unreachable`, an out-of-bounds access...).
    Trap = 0,
    /// The call ran past its deadline and was interrupted.
    Timeout = 1,
    /// The plugin tried to grow its memory past its cap.
    Memory = 2,
    /// The plugin answered out of contract (unknown leaf, wrong number of verdicts...).
    InvalidAnswer = 3,
}

impl FaultKind {
    pub const ALL: [FaultKind; 4] = [
        FaultKind::Trap,
        FaultKind::Timeout,
        FaultKind::Memory,
        FaultKind::InvalidAnswer,
    ];

    /// The `kind` label in metrics.
    pub fn label(self) -> &'static str {
        match self {
            FaultKind::Trap => "trap",
            FaultKind::Timeout => "timeout",
            FaultKind::Memory => "memory",
            FaultKind::InvalidAnswer => "invalid_answer",
        }
    }
}

impl std::fmt::Display for FaultKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.label())
    }
}

/// A plugin's failed call, classified.
#[derive(Debug)]
pub(crate) struct Fault {
    pub kind: FaultKind,
    pub message: String,
}

/// A plugin error, as the rest of the gateway and the CLI see it.
#[derive(Debug, thiserror::Error)]
pub enum PluginError {
    /// One call failed and the hook's policy is `on_error = "reject"`.
    #[error("plugin `{plugin}` ({hook}) of tenant `{tenant}` failed: {kind}: {message}")]
    Call {
        tenant: String,
        plugin: String,
        hook: World,
        kind: FaultKind,
        message: String,
    },
    /// A component could not be read, compiled or fitted to its world.
    #[error("{}: {message}", path.display())]
    Load { path: PathBuf, message: String },
    /// The plugin runtime itself could not start.
    #[error("{0}")]
    Runtime(String),
    /// A `leafgate plugin run` request could not be read.
    #[error("invalid request: {0}")]
    Request(String),
    #[error("i/o: {0}")]
    Io(#[from] std::io::Error),
}

impl PluginError {
    /// The HTTP status a request that this error failed should get: 504 when the plugin
    /// ran out of time, 502 when it misbehaved otherwise, 500 when the gateway itself did.
    pub fn status(&self) -> StatusCode {
        match self {
            PluginError::Call {
                kind: FaultKind::Timeout,
                ..
            } => StatusCode::GATEWAY_TIMEOUT,
            PluginError::Call { .. } => StatusCode::BAD_GATEWAY,
            _ => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }
}
