//! The `leafgate` binary as users run it. One test binary for all its commands.

mod commands;
mod plugin;
