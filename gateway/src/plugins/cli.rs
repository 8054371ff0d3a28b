//! `leafgate plugin check`, `plugin run` and `plugin new`: the plugin author's tools.
//!
//! Both go through the same code as the gateway (`engine` compile and fit checks, a
//! `TenantPlugins` with the same sandbox and limits), so what works here works when
//! loaded. The library functions take readers and writers; [`execute`] is the thin clap
//! entry the binary calls.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::config::plugins::{
    DEFAULT_DEADLINE, DEFAULT_MEMORY, Isolation, OnError, PluginConfig, PluginOrigin,
};
use crate::config::units::{ByteSize, HumanDuration};

use super::api::{AddressRewriteRequest, LogContext, PodRouteRequest, TableRequest};
use super::engine::runtime;
use super::error::PluginError;
use super::load::build_hook;
use super::metrics::PluginMetrics;
use super::scaffold::{Lang, Skeleton};
use super::tenant::TenantPlugins;
use super::world::World;

/// Lines sent to a log-filter per call, as the gateway batches a log stream.
pub const LOG_BATCH: usize = 256;

/// `leafgate plugin ...`
#[derive(Debug, clap::Subcommand)]
pub enum PluginCommand {
    /// Say which world(s) a component fits, or exactly what it is missing.
    Check {
        /// The component (`.wasm`, built for wasm32-wasip2).
        file: PathBuf,
        /// Check against this world only.
        #[arg(long, value_enum)]
        world: Option<World>,
    },
    /// Run one call as the gateway would, on a request read from stdin, and print the
    /// decision: JSON for pod-router, address-rewriter and table-formatter; for log-filter,
    /// stdin is log lines and the filtered lines are printed.
    Run {
        file: PathBuf,
        #[arg(long, value_enum)]
        world: World,
        /// The plugin's config as JSON text, or `@file.json`.
        #[arg(long)]
        config: Option<String>,
        /// Memory cap, like "64MiB".
        #[arg(long, default_value = "64MiB")]
        memory: ByteSize,
        /// Deadline per call, like "10ms".
        #[arg(long, default_value = "10ms")]
        deadline: HumanDuration,
    },
    /// Write a plugin skeleton that builds (`build.sh`) and tests itself (`test.sh`).
    New {
        /// The plugin's name (a crate, a directory and a `.wasm` file name).
        name: String,
        #[arg(long, value_enum)]
        lang: Lang,
        #[arg(long, value_enum)]
        world: World,
        /// Where to write it (default: `./NAME`).
        #[arg(long)]
        dir: Option<PathBuf>,
        /// The leafgate checkout whose `wit/`, SDKs and `target/tools` it builds with
        /// (default: the current directory).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
}

/// Runs a `plugin` subcommand; returns the process exit code.
pub fn execute(cmd: PluginCommand) -> anyhow::Result<i32> {
    match cmd {
        PluginCommand::New {
            name,
            lang,
            world,
            dir,
            repo,
        } => {
            let repo = std::path::absolute(repo.unwrap_or_else(|| PathBuf::from(".")))?;
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            let skeleton = Skeleton {
                name: &name,
                lang,
                world,
                repo: &repo,
            };
            match skeleton.write(&dir) {
                Ok(files) => {
                    for f in files {
                        println!("wrote {}", f.display());
                    }
                    Ok(0)
                }
                Err(e) => {
                    eprintln!("{e}");
                    Ok(1)
                }
            }
        }
        PluginCommand::Check { file, world } => match check(&file, world) {
            Ok(report) => {
                println!("{report}");
                Ok(0)
            }
            Err(e) => {
                eprintln!("{e}");
                Ok(1)
            }
        },
        PluginCommand::Run {
            file,
            world,
            config,
            memory,
            deadline,
        } => {
            let config_json = match config {
                Some(c) => Some(read_config_arg(&c)?),
                None => None,
            };
            let limits = RunLimits {
                memory,
                deadline: deadline.0,
            };
            let stdin = std::io::stdin().lock();
            let stdout = std::io::stdout().lock();
            match run_with(&file, world, config_json.as_deref(), limits, stdin, stdout) {
                Ok(()) => Ok(0),
                Err(e) => {
                    eprintln!("{e}");
                    Ok(1)
                }
            }
        }
    }
}

fn read_config_arg(arg: &str) -> anyhow::Result<String> {
    let text = match arg.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("cannot read --config {path}: {e}"))?,
        None => arg.to_string(),
    };
    serde_json::from_str::<serde_json::Value>(&text)
        .map_err(|e| anyhow::anyhow!("--config is not JSON: {e}"))?;
    Ok(text)
}

/// Says which worlds `path` fits (all four are tried when `world` is `None`), or why it
/// fits none / not the one asked.
pub fn check(path: &Path, world: Option<World>) -> Result<String, PluginError> {
    let rt = runtime().map_err(PluginError::Runtime)?;
    let load = |message| PluginError::Load {
        path: path.to_path_buf(),
        message,
    };
    let component = rt.compile_file(path).map_err(load)?;
    let worlds: Vec<World> = world.map_or_else(|| World::ALL.to_vec(), |w| vec![w]);
    let mut fits = Vec::new();
    let mut misses = Vec::new();
    for w in worlds {
        match rt.prepare(&component, w) {
            Ok(_) => fits.push(w),
            Err(why) => misses.push(format!("{w}: {why}")),
        }
    }
    if fits.is_empty() {
        return Err(load(format!(
            "fits no leafgate world\n  {}",
            misses.join("\n  ")
        )));
    }
    let names: Vec<&str> = fits.iter().map(|w| w.name()).collect();
    Ok(format!(
        "{}: fits the {} world",
        path.display(),
        names.join(", ")
    ))
}

/// Limits for `run`, as a tenant's config would set them.
#[derive(Debug, Clone, Copy)]
pub struct RunLimits {
    pub memory: ByteSize,
    pub deadline: Duration,
}

impl Default for RunLimits {
    fn default() -> Self {
        Self {
            memory: ByteSize(DEFAULT_MEMORY),
            deadline: DEFAULT_DEADLINE,
        }
    }
}

/// One call of `path` as `world`, with the default limits; see [`run_with`].
pub fn run(
    path: &Path,
    world: World,
    config_json: Option<&str>,
    input: impl Read,
    output: impl Write,
) -> Result<(), PluginError> {
    run_with(
        path,
        world,
        config_json,
        RunLimits::default(),
        input,
        output,
    )
}

/// Runs `path` as `world` on the request in `input` and writes the decision to `output`.
/// A request may carry `"tenant"` (default `cli`). Failures are errors, never defaults:
/// the point is to see them.
pub fn run_with(
    path: &Path,
    world: World,
    config_json: Option<&str>,
    limits: RunLimits,
    input: impl Read,
    mut output: impl Write,
) -> Result<(), PluginError> {
    let plugin = PluginConfig {
        path: path.to_path_buf(),
        config_json: config_json.unwrap_or("{}").to_string(),
        on_error: OnError::Reject,
        memory: limits.memory,
        deadline: limits.deadline,
        startup: crate::config::plugins::DEFAULT_STARTUP,
        // As the gateway runs it by default: log batches reuse a warm instance.
        isolation: Isolation::Pooled,
        max_calls: crate::config::plugins::DEFAULT_MAX_CALLS,
        instances: crate::config::plugins::DEFAULT_INSTANCES,
        origin: PluginOrigin {
            file: path.to_path_buf(),
            position: None,
            key: "--world".into(),
        },
    };
    let metrics = PluginMetrics::default();
    let tokio = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let load = |message| PluginError::Load {
        path: path.to_path_buf(),
        message,
    };

    if world == World::LogFilter {
        // Lines, not JSON: a log as it comes, sent in batches as the gateway does (one
        // newline-joined string per call; `lines()` has taken every newline out).
        let mut tenant = TenantPlugins::none("cli");
        tenant.log_filter = Some(build_hook("cli", world, &plugin, &metrics).map_err(load)?);
        let ctx = LogContext::default();
        let mut batch = Vec::with_capacity(LOG_BATCH);
        let mut lines = BufReader::new(input).lines();
        loop {
            let line = lines.next().transpose()?;
            let end = line.is_none();
            batch.extend(line);
            if batch.len() == LOG_BATCH || (end && !batch.is_empty()) {
                let kept = tokio.block_on(tenant.filter_logs(&ctx, std::mem::take(&mut batch)))?;
                for l in kept {
                    writeln!(output, "{l}")?;
                }
            }
            if end {
                return Ok(output.flush()?);
            }
        }
    }

    let mut text = String::new();
    BufReader::new(input).read_to_string(&mut text)?;
    let mut value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| PluginError::Request(format!("stdin is not JSON: {e}")))?;
    let tenant_name = value
        .as_object_mut()
        .and_then(|o| o.remove("tenant"))
        .and_then(|t| t.as_str().map(str::to_string))
        .unwrap_or_else(|| "cli".into());
    let mut tenant = TenantPlugins::none(&tenant_name);
    let request_error = |world: World, e: serde_json::Error| {
        PluginError::Request(format!("not a {world} request: {e}"))
    };
    let decision = match world {
        World::PodRouter => {
            tenant.pod_router =
                Some(build_hook(&tenant_name, world, &plugin, &metrics).map_err(load)?);
            let req: PodRouteRequest =
                serde_json::from_value(value).map_err(|e| request_error(world, e))?;
            serde_json::to_value(tokio.block_on(tenant.route_pod(&req))?)
        }
        World::AddressRewriter => {
            tenant.address_rewriter =
                Some(build_hook(&tenant_name, world, &plugin, &metrics).map_err(load)?);
            let req: AddressRewriteRequest =
                serde_json::from_value(value).map_err(|e| request_error(world, e))?;
            serde_json::to_value(tokio.block_on(tenant.rewrite_addresses(&req))?)
        }
        World::TableFormatter => {
            tenant.table_formatter =
                Some(build_hook(&tenant_name, world, &plugin, &metrics).map_err(load)?);
            let req = table_request(value).map_err(|e| request_error(world, e))?;
            serde_json::to_value(tokio.block_on(tenant.format_table(req))?)
        }
        World::LogFilter => unreachable!("handled above"),
    }
    .map_err(|e| PluginError::Request(format!("cannot print the decision: {e}")))?;
    serde_json::to_writer_pretty(&mut output, &decision).map_err(std::io::Error::from)?;
    writeln!(output)?;
    Ok(output.flush()?)
}

/// A table request from stdin: either the request itself (with `objects` as a JSON array
/// or as JSON text), or a Kubernetes list (`kubectl get pods -o json`), whose kind names
/// the resource.
fn table_request(mut value: serde_json::Value) -> Result<TableRequest, serde_json::Error> {
    use serde::de::Error;
    let list_kind = value
        .get("kind")
        .and_then(|k| k.as_str())
        .and_then(|k| k.strip_suffix("List"))
        .map(str::to_string);
    if let Some(kind) = list_kind.filter(|_| value.get("items").is_some()) {
        let api_version = value
            .get("apiVersion")
            .and_then(|v| v.as_str())
            .unwrap_or("v1");
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        return Ok(TableRequest {
            group: group.to_string(),
            version: version.to_string(),
            resource: format!("{}s", kind.to_ascii_lowercase()),
            wide: false,
            objects: value["items"].to_string(),
        });
    }
    if let Some(objects) = value.get_mut("objects")
        && !objects.is_string()
    {
        *objects = serde_json::Value::String(objects.to_string());
    }
    if value.get("objects").is_none() {
        return Err(serde_json::Error::custom(
            "missing `objects` (a JSON array of the objects to print)",
        ));
    }
    serde_json::from_value(value)
}
