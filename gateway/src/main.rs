//! The `leafgate` binary. On this branch it carries only the `plugin` subcommands; the
//! core's `run`, `check` and `reload` join them in the same `Command` enum.

use clap::Parser;

#[derive(Debug, Parser)]
#[command(
    name = "leafgate",
    version,
    about = "A WebAssembly-pluggable edge gateway"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, clap::Subcommand)]
enum Command {
    /// Check or try out a policy plugin.
    #[command(subcommand)]
    Plugin(leafgate::plugins::cli::PluginCommand),
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let code = match Cli::parse().command {
        Command::Plugin(cmd) => leafgate::plugins::cli::execute(cmd)?,
    };
    std::process::exit(code)
}
