//! The `leafgate` command: run the gateway, check a config, ask a running gateway to reload.
//! The tracing subscriber is installed here and nowhere else.

#![deny(unsafe_code)]

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};
use leafgate::Config;
use leafgate::Gateway;
use leafgate::{BuildError, Snapshot};
use tracing::{error, info};

/// mimalloc's per-thread free lists suit a gateway whose serving threads each allocate and
/// free their own requests' headers, bodies and futures: with glibc's malloc, allocation was
/// about 9% of a proxy core's time under load (`bench/proxy.sh`, see `bench/RESULTS.md`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const DEFAULT_CONFIG: &str = "config/leafgate.toml";

#[derive(Parser)]
#[command(
    name = "leafgate",
    version,
    about = "A WebAssembly-pluggable edge gateway"
)]
struct Cli {
    /// Log format on stderr.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (the default, with config/leafgate.toml).
    Run {
        #[arg(long, short, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Parse and validate a config, load its certificates; print every error.
    Check {
        #[arg(long, short, default_value = DEFAULT_CONFIG)]
        config: PathBuf,
    },
    /// Ask a running gateway to reload its config.
    Reload {
        /// The gateway's admin address.
        #[arg(long, default_value = "127.0.0.1:9901")]
        admin: SocketAddr,
        /// A file holding the bearer token to send (the first token of a file laid out
        /// like `[admin] tokens_file`): needed when the admin listener is not reached
        /// from 127.0.0.1 or ::1.
        #[arg(long)]
        token_file: Option<PathBuf>,
    },
    /// Check or try out a policy plugin.
    #[command(subcommand)]
    Plugin(leafgate::plugins::cli::PluginCommand),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_tracing(cli.log_format);
    let command = cli.command.unwrap_or(Command::Run {
        config: DEFAULT_CONFIG.into(),
    });
    let result = match command {
        Command::Run { config } => {
            match leafgate::raise_nofile_limit() {
                Ok((old, new)) => tracing::info!(old, new, "descriptor limit (RLIMIT_NOFILE)"),
                Err(e) => tracing::warn!(error = %e, "cannot raise the descriptor limit"),
            }
            run(config)
        }
        Command::Check { config } => check(config),
        Command::Reload { admin, token_file } => reload(admin, token_file),
        Command::Plugin(cmd) => leafgate::plugins::cli::execute(cmd)
            .map(|code| ExitCode::from(u8::try_from(code).unwrap_or(1))),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("leafgate: {e:#}");
            ExitCode::FAILURE
        }
    }
}

fn init_tracing(format: LogFormat) {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        // Colours only for a person at a terminal, not for a log file or collector.
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .init(),
        LogFormat::Json => builder
            .json()
            .with_current_span(true)
            .with_span_list(true)
            .init(),
    }
}

fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

fn run(config: PathBuf) -> anyhow::Result<ExitCode> {
    runtime()?.block_on(async move {
        // Before anything is served: once `/readyz` answers 200 an orchestrator may send
        // SIGTERM, and a signal arriving before its handler exists ends the process at once,
        // with no drain.
        let signals = Signals::install()?;
        let gateway = match Gateway::start(&config).await {
            Ok(g) => g,
            Err(e) => {
                error!("cannot start");
                eprintln!("{e}");
                return Ok(ExitCode::FAILURE);
            }
        };
        for warning in &gateway.snapshot().config.warnings {
            tracing::warn!("{warning}");
        }
        for leafgate::ListenerAddr {
            name, local: addr, ..
        } in gateway.listener_addrs()
        {
            info!(listener = %name, %addr, "serving");
        }
        signals.wait(&gateway).await;
        gateway.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// The signals `run` acts on, listened for from before the gateway starts.
struct Signals {
    term: tokio::signal::unix::Signal,
    int: tokio::signal::unix::Signal,
    hup: tokio::signal::unix::Signal,
    usr1: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> anyhow::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let listen = |kind: SignalKind| signal(kind).context("listening for signals");
        Ok(Self {
            term: listen(SignalKind::terminate())?,
            int: listen(SignalKind::interrupt())?,
            hup: listen(SignalKind::hangup())?,
            usr1: listen(SignalKind::user_defined1())?,
        })
    }

    /// Returns on SIGTERM or SIGINT; reloads on SIGHUP; reopens the access logs on SIGUSR1.
    async fn wait(mut self, gateway: &Gateway) {
        loop {
            tokio::select! {
                _ = self.term.recv() => return,
                _ = self.int.recv() => return,
                _ = self.hup.recv() => {
                    info!("SIGHUP: reloading");
                    // The outcome is logged and recorded in /status by `reload` itself.
                    let _ = gateway.reload().await;
                }
                _ = self.usr1.recv() => {
                    info!("SIGUSR1: reopening the access logs");
                    gateway.reopen_access_logs();
                }
            }
        }
    }
}

fn check(config: PathBuf) -> anyhow::Result<ExitCode> {
    let loaded = match Config::load(&config) {
        Ok(c) => c,
        Err(errors) => {
            for e in &errors.0 {
                eprintln!("{e}");
            }
            eprintln!("{}: {} error(s)", config.display(), errors.0.len());
            return Ok(ExitCode::FAILURE);
        }
    };
    for warning in &loaded.warnings {
        eprintln!("warning: {warning}");
    }
    // Compiling the snapshot checks what only rustls can (a key matches its certificate)
    // and compiles every plugin against its world.
    let metrics = leafgate::Metrics::new();
    let loaded = Arc::new(loaded);
    let built = runtime()?.block_on(async { Snapshot::build(loaded.clone(), 0, None, &metrics) });
    match built {
        Ok(snapshot) => {
            // What each tenant's plugins need (measured as they loaded), against their limits.
            for tenant in &loaded.tenants {
                for fit in snapshot.tenants[&tenant.name].plugins.fits() {
                    println!("tenant {}: {fit}", tenant.name);
                    for warning in fit.warnings() {
                        eprintln!("warning: {}: {warning}", fit.key);
                    }
                }
            }
        }
        Err(BuildError::Plugins(errors)) => {
            for e in &errors.0 {
                eprintln!("{e}");
            }
            eprintln!("{}: {} error(s)", config.display(), errors.0.len());
            return Ok(ExitCode::FAILURE);
        }
        Err(e) => {
            eprintln!("{}: {e}", config.display());
            return Ok(ExitCode::FAILURE);
        }
    }
    println!("{}: ok", config.display());
    Ok(ExitCode::SUCCESS)
}

fn reload(admin: SocketAddr, token_file: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    use std::io::{Read, Write};
    let authorization = match token_file {
        Some(file) => {
            let text = std::fs::read_to_string(&file)
                .with_context(|| format!("reading the token file {}", file.display()))?;
            let (_, token) = leafgate::token_lines(&text)
                .next()
                .with_context(|| format!("{} holds no token", file.display()))?;
            format!("Authorization: Bearer {token}\r\n")
        }
        None => String::new(),
    };
    let mut stream = std::net::TcpStream::connect(admin)
        .with_context(|| format!("connecting to the admin listener at {admin}"))?;
    write!(
        stream,
        "POST /reload HTTP/1.1\r\nHost: {admin}\r\n{authorization}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = String::new();
    stream.read_to_string(&mut response)?;
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let ok = head.starts_with("HTTP/1.1 200");
    let parsed: serde_json::Value = serde_json::from_str(body.trim()).unwrap_or_default();
    if ok {
        println!("reloaded: generation {}", parsed["generation"]);
        Ok(ExitCode::SUCCESS)
    } else if head.starts_with("HTTP/1.1 401") || head.starts_with("HTTP/1.1 403") {
        eprintln!("the admin listener refused the reload (see --token-file): {body}");
        Ok(ExitCode::FAILURE)
    } else {
        let error = parsed["error"].as_str().unwrap_or(body);
        eprintln!("reload rejected; the gateway keeps its running config:\n{error}");
        Ok(ExitCode::FAILURE)
    }
}
