//! The `kubesim` binary: starts one simulator, prints its URL and a token, writes a
//! kubeconfig, and loads objects (pods and any served kind) from a JSON or YAML-as-JSON file.

use std::path::PathBuf;

use anyhow::Context;
use kubesim::{Credential, KubeSim};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut args = std::env::args().skip(1);
    let mut kubeconfig = PathBuf::from("kubesim.kubeconfig");
    let mut objects = None;
    while let Some(a) = args.next() {
        match a.as_str() {
            "--kubeconfig" => kubeconfig = args.next().context("--kubeconfig needs a path")?.into(),
            "--objects" => {
                objects = Some(PathBuf::from(
                    args.next().context("--objects needs a path")?,
                ))
            }
            "-h" | "--help" => {
                println!("usage: kubesim [--kubeconfig PATH] [--objects FILE.json]");
                return Ok(());
            }
            other => anyhow::bail!("unknown argument {other:?} (try --help)"),
        }
    }
    let token = format!("kubesim-{}", std::process::id());
    let sim = KubeSim::builder().token(&token, "admin").start().await?;
    if let Some(path) = objects {
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("reading {}", path.display()))?;
        let v: serde_json::Value = serde_json::from_str(&text)
            .with_context(|| format!("{} is not JSON", path.display()))?;
        let items = match v.get("items") {
            Some(serde_json::Value::Array(items)) => items.clone(),
            _ => match v {
                serde_json::Value::Array(items) => items,
                one => vec![one],
            },
        };
        for obj in items {
            sim.create(obj)
                .with_context(|| format!("loading {}", path.display()))?;
        }
    }
    sim.kubeconfig(&Credential::Token(token.clone()), &kubeconfig)?;
    println!("url: {}", sim.url());
    println!("token: {token}");
    println!("kubeconfig: {}", kubeconfig.display());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
