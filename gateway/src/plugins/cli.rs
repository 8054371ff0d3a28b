//! `leafgate plugin check`, `run`, `test`, `new` and `sdk`: the plugin author's tools.
//!
//! They go through the same code as the gateway (`engine` compile and fit checks, a
//! `TenantPlugins` with the same sandbox and limits, in `oneshot`), so what works here
//! works when loaded. The library functions take readers and writers; [`execute`] is the
//! thin clap entry the binary calls.

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use crate::config::units::{ByteSize, HumanDuration};

use super::api::LogContext;
use super::cases;
use super::engine::runtime;
use super::error::PluginError;
use super::kit::{self, Lang};
use super::oneshot;
pub use super::oneshot::{LOG_BATCH, RunLimits};
use super::scaffold::Skeleton;
use super::trial;
use super::world::World;

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
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Run a file of cases (JSON or YAML: `[{name, config?, request, expect}]`) through the
    /// plugin in the gateway's sandbox and check each answer; exit 1 on any failure.
    Test {
        file: PathBuf,
        #[arg(long, value_enum)]
        world: World,
        /// The cases file (`.json`, else YAML).
        #[arg(long)]
        cases: PathBuf,
        #[command(flatten)]
        limits: LimitArgs,
    },
    /// Write a plugin project that builds (`build.sh`) and tests itself (`test.sh`), in any
    /// folder: the SDK and WIT come from this binary.
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
        /// Take the SDK, WIT and toolchains from this leafgate checkout instead (to work on
        /// the SDKs themselves).
        #[arg(long)]
        repo: Option<PathBuf>,
    },
    /// Write one SDK package (the Rust crate, the Python or the JavaScript package), for
    /// projects that keep their own layout.
    Sdk {
        #[arg(long, value_enum)]
        lang: Lang,
        /// The folder to write it into (new, or empty).
        #[arg(long)]
        out: PathBuf,
    },
}

/// The limits `plugin run` and `plugin test` call under, as a tenant's config sets them.
#[derive(Debug, Clone, Copy, clap::Args)]
pub struct LimitArgs {
    /// Memory cap, like "64MiB".
    #[arg(long, default_value = "64MiB")]
    memory: ByteSize,
    /// Deadline per call, like "10ms".
    #[arg(long, default_value = "10ms")]
    deadline: HumanDuration,
}

impl From<LimitArgs> for RunLimits {
    fn from(a: LimitArgs) -> Self {
        RunLimits {
            memory: a.memory,
            deadline: a.deadline.0,
        }
    }
}

/// Prints `files` as written, or the error; the exit code.
fn report_written(result: Result<Vec<PathBuf>, String>) -> i32 {
    match result {
        Ok(files) => {
            for f in files {
                println!("wrote {}", f.display());
            }
            0
        }
        Err(e) => {
            eprintln!("{e}");
            1
        }
    }
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
            let repo = repo.map(std::path::absolute).transpose()?;
            let dir = dir.unwrap_or_else(|| PathBuf::from(&name));
            let skeleton = Skeleton {
                name: &name,
                lang,
                world,
                repo: repo.as_deref(),
            };
            Ok(report_written(skeleton.write(&dir)))
        }
        PluginCommand::Sdk { lang, out } => Ok(report_written(kit::write_sdk(lang, &out))),
        PluginCommand::Test {
            file,
            world,
            cases,
            limits,
        } => {
            let cases = match cases::read(&cases) {
                Ok(cases) => cases,
                Err(e) => {
                    eprintln!("{e}");
                    return Ok(1);
                }
            };
            let tally = trial::run(
                &file,
                world,
                &cases,
                limits.into(),
                std::io::stdout().lock(),
            )?;
            Ok(i32::from(tally.failed > 0))
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
            limits,
        } => {
            let config_json = match config {
                Some(c) => Some(read_config_arg(&c)?),
                None => None,
            };
            let limits = limits.into();
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
    let config_json = config_json.unwrap_or("{}");
    if world == World::LogFilter {
        // Lines, not JSON: a log as it comes, sent in batches as the gateway does (one
        // newline-joined string per call; `lines()` has taken every newline out).
        let tenant = oneshot::load(path, world, "cli", config_json, limits)?;
        let tokio = current_thread()?;
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
    let mut request: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| PluginError::Request(format!("stdin is not JSON: {e}")))?;
    let tenant_name = oneshot::take_tenant(&mut request);
    let tenant = oneshot::load(path, world, &tenant_name, config_json, limits)?;
    let decision = current_thread()?.block_on(oneshot::decide(&tenant, world, request))?;
    serde_json::to_writer_pretty(&mut output, &decision).map_err(std::io::Error::from)?;
    writeln!(output)?;
    Ok(output.flush()?)
}

fn current_thread() -> std::io::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
}
