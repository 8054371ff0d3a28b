//! `leafgate-arch SRC_ROOT [--alias OLD=NEW]...`: prints the module graph's numbers and
//! every violation of the layer order declared in `tests/layering.rs`; exits 1 on any.
//! `--alias kube=k8s` reads a tree from before a rename with the old name on the new
//! name's layer; `--edges` also prints every import the graph is built from;
//! `--relative` counts bare relative paths as edges too (see `Paths::Relative`), a
//! stricter reading than the architecture test's.

use std::path::PathBuf;
use std::process::ExitCode;

use leafgate_arch::{Layers, Paths, check_with, from_test_source};

/// The test file that holds `const LAYERS`, compiled in so the order is written once.
const LAYERING_TEST: &str = include_str!("../tests/layering.rs");

const USAGE: &str = "usage: leafgate-arch SRC_ROOT [--alias OLD=NEW]... [--edges] [--relative]";

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(message) => {
            eprintln!("leafgate-arch: {message}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let mut root = None;
    let mut aliases = Vec::new();
    let mut edges = false;
    let mut paths = Paths::Anchored;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--alias" => {
                let pair = args.next().ok_or("--alias needs OLD=NEW")?;
                let (old, new) = pair.split_once('=').ok_or("--alias needs OLD=NEW")?;
                aliases.push((old.to_string(), new.to_string()));
            }
            "--edges" => edges = true,
            "--relative" => paths = Paths::Relative,
            "-h" | "--help" => return Err(USAGE.into()),
            _ if root.is_none() => root = Some(PathBuf::from(arg)),
            _ => return Err(format!("unexpected argument {arg:?}")),
        }
    }
    let root = root.ok_or(USAGE)?;
    let mut layers = Layers::parse(&from_test_source(LAYERING_TEST)?)?;
    for (old, new) in &aliases {
        if !layers.alias(old, new) {
            return Err(format!("--alias {old}={new}: {new} is not in LAYERS"));
        }
    }
    let report = check_with(&root, &layers, paths).map_err(|e| e.to_string())?;
    if edges {
        for tie in &report.imports {
            println!("import: {tie}");
        }
    }
    print!("{report}");
    Ok(report.is_clean())
}
