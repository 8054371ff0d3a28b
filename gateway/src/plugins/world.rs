//! The four kinds of decision a plugin makes, each a WIT world in `wit/`: their names,
//! exports and signatures as error messages and metrics spell them.
//!
//! Plain vocabulary: this file imports nothing from the rest of `plugins`, so every other
//! file may name a world without pulling in the runtime.

/// The four kinds of decision, each a WIT world in `wit/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum World {
    PodRouter,
    AddressRewriter,
    LogFilter,
    TableFormatter,
}

impl World {
    pub const ALL: [World; 4] = [
        World::PodRouter,
        World::AddressRewriter,
        World::LogFilter,
        World::TableFormatter,
    ];

    /// The world's name in `wit/`.
    pub fn name(self) -> &'static str {
        match self {
            World::PodRouter => "pod-router",
            World::AddressRewriter => "address-rewriter",
            World::LogFilter => "log-filter",
            World::TableFormatter => "table-formatter",
        }
    }

    /// The function the world exports.
    pub fn export(self) -> &'static str {
        match self {
            World::PodRouter => "route",
            World::AddressRewriter => "rewrite",
            World::LogFilter => "filter",
            World::TableFormatter => "format",
        }
    }

    /// The exported function's WIT signature, for error messages.
    pub fn signature(self) -> &'static str {
        match self {
            World::PodRouter => "route: func(req: route-request) -> route-decision",
            World::AddressRewriter => "rewrite: func(req: address-request) -> list<node-address>",
            World::LogFilter => "filter: func(ctx: log-context, lines: string) -> verdicts",
            World::TableFormatter => "format: func(req: table-request) -> option<table>",
        }
    }
}

impl std::fmt::Display for World {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}
