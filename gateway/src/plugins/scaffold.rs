//! `leafgate plugin new NAME --lang rust|python|js --world WORLD`: writes a plugin skeleton
//! that builds, with a test of its decision and the scripts that build and test it
//! (`build.sh`, `test.sh`), against this checkout's `wit/`, SDKs and pinned tools.
//!
//! Owns only the templates and writing them out; building and checking what it writes is
//! the author's (`build.sh`, then `leafgate plugin check`).

use std::path::{Path, PathBuf};

use super::world::World;

/// The languages a plugin can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

/// What a skeleton is made from: its name, world, language, and the leafgate checkout whose
/// `wit/`, SDKs and `target/tools` it builds with.
pub struct Skeleton<'a> {
    pub name: &'a str,
    pub lang: Lang,
    pub world: World,
    pub repo: &'a Path,
}

/// A name that is a crate, a Python module's directory and a file name alike.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 64
}

impl Skeleton<'_> {
    /// Writes the skeleton into `dir` (which must not exist yet); returns the files written.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        if !valid_name(self.name) {
            return Err(format!(
                "`{}` is not a plugin name: lower-case letters, digits, `-` and `_`, starting with a letter",
                self.name
            ));
        }
        if !self.repo.join("wit/plugin.wit").is_file() {
            return Err(format!(
                "{} is not a leafgate checkout (no wit/plugin.wit); pass --repo",
                self.repo.display()
            ));
        }
        if dir.exists() {
            return Err(format!("{} exists already", dir.display()));
        }
        let files = self.files();
        let mut written = Vec::new();
        for (path, text) in files {
            let path = dir.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
            }
            std::fs::write(&path, text)
                .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
            if path.extension().is_some_and(|e| e == "sh") {
                make_executable(&path)?;
            }
            written.push(path);
        }
        if self.lang == Lang::Rust {
            // The reference plugins' lock as a start: the same versions as the SDK is
            // tested with, and already built where they were.
            let lock = dir.join("Cargo.lock");
            if std::fs::copy(self.repo.join("plugins/Cargo.lock"), &lock).is_ok() {
                written.push(lock);
            }
        }
        Ok(written)
    }

    /// The skeleton's files: relative path and text.
    fn files(&self) -> Vec<(&'static str, String)> {
        let fill = |t: &str| {
            t.replace("{{name}}", self.name)
                .replace("{{crate}}", &self.name.replace('-', "_"))
                .replace("{{world}}", self.world.name())
                .replace("{{repo}}", &self.repo.display().to_string())
        };
        let mut files: Vec<(&'static str, &str)> = match self.lang {
            Lang::Rust => vec![
                ("Cargo.toml", RUST_CARGO),
                ("src/lib.rs", rust_lib(self.world)),
                ("build.sh", RUST_BUILD),
                ("test.sh", RUST_TEST),
            ],
            Lang::Python => vec![
                ("app.py", python_app(self.world)),
                ("test_app.py", python_test(self.world)),
                ("build.sh", PYTHON_BUILD),
                ("test.sh", PYTHON_TEST),
            ],
            Lang::Js => vec![
                ("decide.js", js_decide(self.world)),
                ("app.js", js_app(self.world)),
                ("decide.test.js", js_test(self.world)),
                ("build.sh", JS_BUILD),
                ("test.sh", JS_TEST),
            ],
        };
        files.push(("README.md", README));
        files.into_iter().map(|(p, t)| (p, fill(t))).collect()
    }
}

#[cfg(unix)]
fn make_executable(path: &Path) -> Result<(), String> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755))
        .map_err(|e| format!("cannot make {} executable: {e}", path.display()))
}

#[cfg(not(unix))]
fn make_executable(_path: &Path) -> Result<(), String> {
    Ok(())
}

const README: &str = "# {{name}}\n\nA leafgate `{{world}}` plugin.\n\n\
- `./test.sh` runs its test.\n\
- `./build.sh` builds `{{name}}.wasm`.\n\
- `leafgate plugin check {{name}}.wasm` says it fits the {{world}} world; `leafgate plugin run \
{{name}}.wasm --world {{world}}` runs one call on a request read from stdin.\n\n\
See plugins/README.md in {{repo}} for the whole walk (config, limits, loading it).\n";

const RUST_CARGO: &str = r#"[package]
name = "{{name}}"
edition = "2024"
version = "0.1.0"
publish = false

[lib]
crate-type = ["cdylib", "rlib"]

[dependencies]
leafgate-plugin = { path = "{{repo}}/plugins/sdk" }

# A workspace of its own: it builds for wasm32-wasip2, whatever surrounds it.
[workspace]

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
strip = true
"#;

const RUST_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm (rustup target add wasm32-wasip2 once).
set -eu
cd "$(dirname "$0")"
cargo build --release --target wasm32-wasip2 --quiet
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" {{name}}.wasm
echo "built {{name}}.wasm"
"#;

const RUST_TEST: &str = r#"#!/bin/sh
# Tests the decision on the host.
set -eu
cd "$(dirname "$0")"
cargo test --quiet
"#;

fn rust_lib(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"//! {{name}}: a leafgate pod-router plugin. It sends every request to the first leaf
//! the gateway knows.

use leafgate_plugin::pod_router::{Guest, RouteDecision, RouteRequest};

/// The decision, apart from the export so a host test can call it.
pub fn decide(req: &RouteRequest) -> RouteDecision {
    match req.leaves().next() {
        Some(leaf) => RouteDecision::Leaf(leaf.to_string()),
        None => RouteDecision::Default,
    }
}

struct Plugin;

impl Guest for Plugin {
    fn route(req: RouteRequest) -> RouteDecision {
        decide(&req)
    }
}

leafgate_plugin::export_pod_router!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use leafgate_plugin::pod_router::Verb;

    fn request(leaves: &str) -> RouteRequest {
        RouteRequest {
            tenant: "t".into(),
            namespace: "ns".into(),
            pod: "p".into(),
            container: None,
            verb: Verb::Exec,
            labels: None,
            leaves: leaves.into(),
        }
    }

    #[test]
    fn routes_to_the_first_leaf() {
        assert!(matches!(decide(&request("leaf-1\nleaf-2")), RouteDecision::Leaf(l) if l == "leaf-1"));
        assert!(matches!(decide(&request("")), RouteDecision::Default));
    }
}
"#
        }
        World::AddressRewriter => {
            r#"//! {{name}}: a leafgate address-rewriter plugin. It puts the gateway's address first, as
//! the node's internal IP.

use leafgate_plugin::address_rewriter::{AddressRequest, AddressType, Guest, NodeAddress};

/// The decision, apart from the export so a host test can call it.
pub fn decide(req: AddressRequest) -> Vec<NodeAddress> {
    let mut out = vec![NodeAddress {
        type_: AddressType::InternalIp,
        address: req.gateway_address,
    }];
    out.extend(req.addresses);
    out
}

struct Plugin;

impl Guest for Plugin {
    fn rewrite(req: AddressRequest) -> Vec<NodeAddress> {
        decide(req)
    }
}

leafgate_plugin::export_address_rewriter!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn puts_the_gateway_first() {
        let req = AddressRequest {
            tenant: "t".into(),
            node: "n".into(),
            leaf: "leaf-1".into(),
            gateway_address: "10.0.0.9".into(),
            addresses: vec![NodeAddress { type_: AddressType::Hostname, address: "n".into() }],
        };
        let out = decide(req);
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].address, "10.0.0.9");
    }
}
"#
        }
        World::LogFilter => {
            r#"//! {{name}}: a leafgate log-filter plugin. It drops empty lines and keeps the rest.

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict, Verdicts, lines};

/// The decision, apart from the export so a host test can call it.
pub fn decide(batch: &str) -> Verdicts {
    lines(batch)
        .map(|line| if line.is_empty() { Verdict::Drop } else { Verdict::Keep })
        .collect()
}

struct Plugin;

impl Guest for Plugin {
    fn filter(_ctx: LogContext, batch: String) -> Verdicts {
        decide(&batch)
    }
}

leafgate_plugin::export_log_filter!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;
    use leafgate_plugin::log_filter::Action;

    #[test]
    fn drops_empty_lines() {
        let v = decide("a\n\nb");
        assert!(matches!(v.actions.as_slice(), [Action::Keep, Action::Drop, Action::Keep]));
    }
}
"#
        }
        World::TableFormatter => {
            r##"//! {{name}}: a leafgate table-formatter plugin. It prints how many objects a list
//! holds, and leaves every other table to the gateway.

use leafgate_plugin::table_formatter::{
    Cell, Column, ColumnType, Guest, Row, Table, TableRequest,
};

/// The decision, apart from the export so a host test can call it.
pub fn decide(req: &TableRequest) -> Option<Table> {
    if req.resource != "pods" {
        return None;
    }
    // Each object is a JSON object at the array's top level: count its opening braces
    // at depth one.
    let mut depth = 0i32;
    let mut count = 0i64;
    let mut in_string = false;
    let mut escaped = false;
    for b in req.objects.bytes() {
        match (in_string, escaped, b) {
            (true, true, _) => escaped = false,
            (true, false, b'\\') => escaped = true,
            (true, false, b'"') => in_string = false,
            (true, false, _) => {}
            (false, _, b'"') => in_string = true,
            (false, _, b'[' | b'{') => {
                depth += 1;
                if depth == 2 && b == b'{' {
                    count += 1;
                }
            }
            (false, _, b']' | b'}') => depth -= 1,
            _ => {}
        }
    }
    Some(Table {
        columns: vec![Column {
            name: "PODS".into(),
            type_: ColumnType::Integer,
            format: String::new(),
            description: "How many pods the list holds.".into(),
            priority: 0,
        }],
        rows: vec![Row { cells: vec![Cell::Integer(count)] }],
    })
}

struct Plugin;

impl Guest for Plugin {
    fn format(req: TableRequest) -> Option<Table> {
        decide(&req)
    }
}

leafgate_plugin::export_table_formatter!(Plugin);

#[cfg(test)]
mod tests {
    use super::*;

    fn request(resource: &str, objects: &str) -> TableRequest {
        TableRequest {
            tenant: "t".into(),
            group: String::new(),
            version: "v1".into(),
            resource: resource.into(),
            wide: false,
            objects: objects.into(),
        }
    }

    #[test]
    fn counts_the_pods() {
        let t = decide(&request("pods", r#"[{"a":{"b":"}"}},{}]"#)).unwrap();
        assert!(matches!(t.rows[0].cells[0], Cell::Integer(2)));
        assert!(decide(&request("services", "[]")).is_none());
    }
}
"##
        }
    }
}

const PYTHON_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm with the pinned componentize-py (scripts/tools.sh installs it).
set -eu
cd "$(dirname "$0")"
"{{repo}}/target/tools/py-venv/bin/componentize-py" -d "{{repo}}/wit" -w {{world}} \
  componentize -p "{{repo}}/plugins/python/sdk" -p . app -o {{name}}.wasm
"#;

const PYTHON_TEST: &str = r#"#!/bin/sh
# Tests the plugin on the host's Python, with the bindings generated from wit/.
set -eu
cd "$(dirname "$0")"
rm -rf .bindings
"{{repo}}/target/tools/py-venv/bin/componentize-py" -d "{{repo}}/wit" -w {{world}} bindings .bindings
PYTHONPATH=".bindings:{{repo}}/plugins/python/sdk:." \
  "{{repo}}/target/tools/py-venv/bin/python" -m unittest test_app
"#;

fn python_app(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#""""{{name}}: a leafgate pod-router plugin. It sends every request to the first leaf
the gateway knows."""

from leafgate_plugin import pod_router as pr


class WitWorld:
    def route(self, req: pr.RouteRequest) -> pr.RouteDecision:
        leaves = pr.leaves(req)
        return pr.leaf(leaves[0]) if leaves else pr.default()
"#
        }
        World::AddressRewriter => {
            r#""""{{name}}: a leafgate address-rewriter plugin. It puts the gateway's address first,
as the node's internal IP."""

from leafgate_plugin import address_rewriter as ar


class WitWorld:
    def rewrite(self, req: ar.AddressRequest) -> list:
        return [ar.address(ar.AddressType.INTERNAL_IP, req.gateway_address)] + list(req.addresses)
"#
        }
        World::LogFilter => {
            r#""""{{name}}: a leafgate log-filter plugin. It drops empty lines and keeps the rest."""

from leafgate_plugin import log_filter as lf


class WitWorld:
    def filter(self, ctx: lf.LogContext, lines: str):
        out = lf.Verdicts()
        for line in lf.lines(lines):
            if line:
                out.keep()
            else:
                out.drop()
        return out.done()
"#
        }
        World::TableFormatter => {
            r#""""{{name}}: a leafgate table-formatter plugin. It prints how many pods a list holds,
and leaves every other table to the gateway."""

from leafgate_plugin import table_formatter as tf


class WitWorld:
    def format(self, req: tf.TableRequest):
        if req.resource != "pods":
            return None
        column = tf.column("PODS", tf.ColumnType.INTEGER, description="How many pods the list holds.")
        return tf.Table([column], [tf.row(len(tf.objects(req)))])
"#
        }
    }
}

fn python_test(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"import unittest

from wit_world.imports import types

import app


class RouteTest(unittest.TestCase):
    def test_routes_to_the_first_leaf(self):
        req = types.RouteRequest("t", "ns", "p", None, types.Verb.EXEC, None, "leaf-1\nleaf-2")
        self.assertEqual(app.WitWorld().route(req), types.RouteDecision_Leaf("leaf-1"))
"#
        }
        World::AddressRewriter => {
            r#"import unittest

from wit_world.imports import types

import app


class RewriteTest(unittest.TestCase):
    def test_puts_the_gateway_first(self):
        node = types.NodeAddress(types.AddressType.HOSTNAME, "n")
        req = types.AddressRequest("t", "n", "leaf-1", "10.0.0.9", [node])
        out = app.WitWorld().rewrite(req)
        self.assertEqual([a.address for a in out], ["10.0.0.9", "n"])
"#
        }
        World::LogFilter => {
            r#"import unittest

from wit_world.imports import types

import app


class FilterTest(unittest.TestCase):
    def test_drops_empty_lines(self):
        ctx = types.LogContext("t", "ns", "p", "c", "leaf-1")
        out = app.WitWorld().filter(ctx, "a\n\nb")
        self.assertEqual(out.actions, [types.Action.KEEP, types.Action.DROP, types.Action.KEEP])
"#
        }
        World::TableFormatter => {
            r#"import unittest

from wit_world.imports import types

import app


class FormatTest(unittest.TestCase):
    def test_counts_the_pods(self):
        req = types.TableRequest("t", "", "v1", "pods", False, '[{"a": 1}, {}]')
        table = app.WitWorld().format(req)
        self.assertEqual(table.rows[0].cells, [types.Cell_Integer(2)])
        other = types.TableRequest("t", "", "v1", "services", False, "[]")
        self.assertIsNone(app.WitWorld().format(other))
"#
        }
    }
}

const JS_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm with the pinned componentize-js (scripts/tools.sh installs it).
set -eu
cd "$(dirname "$0")"
"{{repo}}/target/tools/js/node_modules/.bin/componentize-js" --wit "{{repo}}/wit" \
  --world-name {{world}} -o {{name}}.wasm app.js
"#;

const JS_TEST: &str = r#"#!/bin/sh
# Tests the decision on the host's Node.js.
set -eu
cd "$(dirname "$0")"
node --test decide.test.js
"#;

fn js_decide(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"// {{name}}: a leafgate pod-router plugin's decision: every request goes to the first
// leaf the gateway knows. Plain JavaScript (no imports), so `node --test` runs it.

/** @param {import('leafgate:plugin/types').RouteRequest} req */
export function decide(req) {
  const leaves = req.leaves === '' ? [] : req.leaves.split('\n');
  return leaves.length ? { tag: 'leaf', val: leaves[0] } : { tag: 'default' };
}
"#
        }
        World::AddressRewriter => {
            r#"// {{name}}: a leafgate address-rewriter plugin's decision: the gateway's address
// first, as the node's internal IP. Plain JavaScript (no imports), so `node --test` runs it.

/** @param {import('leafgate:plugin/types').AddressRequest} req */
export function decide(req) {
  return [{ type: 'internal-ip', address: req.gatewayAddress }, ...req.addresses];
}
"#
        }
        World::LogFilter => {
            r#"// {{name}}: a leafgate log-filter plugin's decision: empty lines dropped, the rest
// kept. Plain JavaScript (no imports), so `node --test` runs it.

/** @param {string} lines */
export function decide(lines) {
  return { actions: lines.split('\n').map((l) => (l === '' ? 'drop' : 'keep')), replacements: [] };
}
"#
        }
        World::TableFormatter => {
            r#"// {{name}}: a leafgate table-formatter plugin's decision: how many pods a list
// holds; every other table is the gateway's. Plain JavaScript (no imports), so
// `node --test` runs it.

/** @param {import('leafgate:plugin/types').TableRequest} req */
export function decide(req) {
  if (req.resource !== 'pods') return undefined;
  const column = { name: 'PODS', type: 'integer', format: '', description: 'How many pods the list holds.', priority: 0 };
  return { columns: [column], rows: [{ cells: [{ tag: 'integer', val: BigInt(JSON.parse(req.objects).length) }] }] };
}
"#
        }
    }
}

fn js_app(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            "// {{name}}: the component's export.\nimport { decide } from './decide.js';\n\nexport function route(req) {\n  return decide(req);\n}\n"
        }
        World::AddressRewriter => {
            "// {{name}}: the component's export.\nimport { decide } from './decide.js';\n\nexport function rewrite(req) {\n  return decide(req);\n}\n"
        }
        World::LogFilter => {
            "// {{name}}: the component's export.\nimport { decide } from './decide.js';\n\nexport function filter(ctx, lines) {\n  return decide(lines);\n}\n"
        }
        World::TableFormatter => {
            "// {{name}}: the component's export.\nimport { decide } from './decide.js';\n\nexport function format(req) {\n  return decide(req);\n}\n"
        }
    }
}

fn js_test(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from './decide.js';

test('routes to the first leaf', () => {
  const req = { tenant: 't', namespace: 'ns', pod: 'p', verb: 'exec', leaves: 'leaf-1\nleaf-2' };
  assert.deepEqual(decide(req), { tag: 'leaf', val: 'leaf-1' });
  assert.deepEqual(decide({ ...req, leaves: '' }), { tag: 'default' });
});
"#
        }
        World::AddressRewriter => {
            r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from './decide.js';

test('puts the gateway first', () => {
  const req = { tenant: 't', node: 'n', leaf: 'leaf-1', gatewayAddress: '10.0.0.9', addresses: [{ type: 'hostname', address: 'n' }] };
  assert.deepEqual(decide(req).map((a) => a.address), ['10.0.0.9', 'n']);
});
"#
        }
        World::LogFilter => {
            r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from './decide.js';

test('drops empty lines', () => {
  assert.deepEqual(decide('a\n\nb').actions, ['keep', 'drop', 'keep']);
});
"#
        }
        World::TableFormatter => {
            r#"import { test } from 'node:test';
import assert from 'node:assert/strict';
import { decide } from './decide.js';

test('counts the pods', () => {
  const req = { tenant: 't', group: '', version: 'v1', resource: 'pods', wide: false, objects: '[{"a":1},{}]' };
  assert.equal(decide(req).rows[0].cells[0].val, 2n);
  assert.equal(decide({ ...req, resource: 'services' }), undefined);
});
"#
        }
    }
}
