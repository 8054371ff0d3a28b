//! `leafgate plugin new NAME --lang rust|python|js --world WORLD`: writes a plugin project
//! that builds on its own, in any folder: the WIT (`wit/`), the SDK vendored under `sdk/`
//! and depended on by path, a sample (`samples`) and its cases file, `build.sh` (which
//! installs the pinned toolchain into the project when it is missing and prints the
//! component's path as its last line) and `test.sh` (which builds, then runs the cases
//! with `leafgate plugin test`).
//!
//! Every file comes from this binary (`kit`); with `--repo` the SDK, WIT and lock are read
//! from that checkout instead and its `target/tools` toolchains are used, for work on the
//! SDKs themselves. Owns only the project's layout and scripts; building and checking
//! what it writes is the author's.

use std::path::{Path, PathBuf};

use super::kit::{self, Lang, Origin};
use super::samples;
use super::world::World;

/// What a project is made from: its name, language and world, and where its SDK comes
/// from.
pub struct Skeleton<'a> {
    pub name: &'a str,
    pub lang: Lang,
    pub world: World,
    /// A leafgate checkout to take the SDK, WIT and toolchains from; `None`: this binary.
    pub repo: Option<&'a Path>,
}

/// A name that is a crate, a Python module's directory and a file name alike.
fn valid_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
        && name.len() <= 64
}

impl Skeleton<'_> {
    /// Writes the project into `dir` (which must not exist yet); returns the files written.
    pub fn write(&self, dir: &Path) -> Result<Vec<PathBuf>, String> {
        if !valid_name(self.name) {
            return Err(format!(
                "`{}` is not a plugin name: lower-case letters, digits, `-` and `_`, starting with a letter",
                self.name
            ));
        }
        if dir.exists() {
            return Err(format!("{} exists already", dir.display()));
        }
        let files = self.files()?;
        kit::write_files(dir, &files)
    }

    fn origin(&self) -> Origin<'_> {
        self.repo.map_or(Origin::Binary, Origin::Checkout)
    }

    /// The project's files: relative path and text.
    fn files(&self) -> Result<Vec<(PathBuf, String)>, String> {
        let origin = self.origin();
        let (toolchain, tools) = match self.repo {
            // The checkout's pins and the tools `scripts/tools.sh` installed there.
            Some(repo) => (
                repo.join(match self.lang {
                    Lang::Js => "plugins/js/toolchain",
                    _ => "plugins/python/toolchain",
                })
                .display()
                .to_string(),
                repo.join("target/tools").display().to_string(),
            ),
            None => ("toolchain".to_string(), OWN_TOOLS.to_string()),
        };
        let fill = |t: &str| {
            t.replace("{{name}}", self.name)
                .replace("{{crate}}", &self.name.replace('-', "_"))
                .replace("{{world}}", self.world.name())
                .replace("{{version}}", env!("CARGO_PKG_VERSION"))
                .replace("{{toolchain}}", &toolchain)
                .replace("{{tools}}", &tools)
        };
        let (sample, source) = samples::source(self.lang, self.world);
        let mut files: Vec<(PathBuf, String)> = vec![
            (sample.into(), fill(source)),
            ("cases.json".into(), samples::cases(self.world).to_string()),
            ("wit/plugin.wit".into(), origin.text(&kit::WIT)?),
            ("test.sh".into(), fill(TEST)),
            ("README.md".into(), fill(README)),
            (".gitignore".into(), GITIGNORE.to_string()),
        ];
        let (build, manifest) = match self.lang {
            Lang::Rust => (RUST_BUILD, Some(("Cargo.toml", RUST_CARGO))),
            Lang::Python => (PYTHON_BUILD, None),
            Lang::Js => (JS_BUILD, Some(("package.json", JS_PACKAGE))),
        };
        files.push(("build.sh".into(), fill(build)));
        if let Some((path, text)) = manifest {
            files.push((path.into(), fill(text)));
        }
        for (path, text) in kit::package(self.lang, origin)? {
            files.push((Path::new("sdk").join(path), text));
        }
        match (self.lang, self.repo) {
            // The versions the SDK is tested with: the reference plugins' lock.
            (Lang::Rust, _) => files.push(("Cargo.lock".into(), origin.text(&kit::RUST_LOCK)?)),
            (Lang::Python, None) => files.push((
                "toolchain/requirements.txt".into(),
                kit::PYTHON_TOOLCHAIN.text.to_string(),
            )),
            (Lang::Js, None) => {
                for f in kit::JS_TOOLCHAIN {
                    let name = f.path.rsplit('/').next().unwrap_or(f.path);
                    files.push((Path::new("toolchain").join(name), f.text.to_string()));
                }
            }
            _ => {}
        }
        Ok(files)
    }
}

/// Where a project installs its own toolchains (relative to the project).
const OWN_TOOLS: &str = ".tools";

const README: &str = "# {{name}}\n\nA leafgate `{{world}}` plugin (written by `leafgate plugin new`, leafgate {{version}}).\n\n\
- `./build.sh` builds the component and prints its path (installing the pinned toolchain into \
`.tools/` the first time).\n\
- `./test.sh` builds it and checks `cases.json` with `leafgate plugin test` (each case: `name`, \
`config`?, `request`, `expect`).\n\
- `leafgate plugin check {{name}}.wasm` says it fits the {{world}} world; `leafgate plugin run \
{{name}}.wasm --world {{world}}` runs one call on a request read from stdin.\n\
- `sdk/` is the leafgate SDK this project depends on by path; `wit/plugin.wit` the ABI.\n\n\
Point a tenant at it in the gateway's config (`[tenant.plugins]`, the `{{world}}` hook) and the \
gateway reloads it when the file changes; see leafgate's plugins/README.md.\n";

const GITIGNORE: &str = ".tools/\ntarget/\nnode_modules/\n*.wasm\n";

const TEST: &str = r#"#!/bin/sh
# Builds {{name}}.wasm, then checks it against cases.json with `leafgate plugin test`
# (extra arguments go to it: `./test.sh --deadline 50ms`).
set -eu
cd "$(dirname "$0")"
built="$(./build.sh)"
wasm="$(printf '%s\n' "$built" | tail -n 1)"
echo "built $wasm"
exec leafgate plugin test "$wasm" --world {{world}} --cases cases.json "$@"
"#;

const RUST_CARGO: &str = r#"[package]
name = "{{name}}"
edition = "2024"
version = "0.1.0"
publish = false

[lib]
crate-type = ["cdylib"]

[dependencies]
# The SDK, vendored by `leafgate plugin new` (leafgate {{version}}).
leafgate-plugin = { path = "sdk" }

# A workspace of its own: it builds for wasm32-wasip2, whatever surrounds it.
[workspace]

[profile.release]
opt-level = 3
lto = true
codegen-units = 1
strip = true
"#;

const RUST_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm and prints its path as the last line. The wasm32-wasip2 target is
# installed through rustup when it is missing.
set -eu
cd "$(dirname "$0")"
if command -v rustup >/dev/null 2>&1 && ! rustup target list --installed | grep -qx wasm32-wasip2; then
  echo "installing the wasm32-wasip2 target (rustup)" >&2
  rustup target add wasm32-wasip2 >&2
fi
cargo build --release --target wasm32-wasip2 --quiet
cp "${CARGO_TARGET_DIR:-target}/wasm32-wasip2/release/{{crate}}.wasm" {{name}}.wasm
echo "$PWD/{{name}}.wasm"
"#;

const PYTHON_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm with the pinned componentize-py and prints its path as the last
# line. The tool is installed into .tools/py-venv when it is missing (or set
# LEAFGATE_PY_VENV to a venv that has it). The SDK is the package in sdk/, on the path
# (`pip install ./sdk` installs it into an environment of your own just as well).
set -eu
cd "$(dirname "$0")"
pin="$(sed -n 's/^componentize-py==//p' {{toolchain}}/requirements.txt)"
venv="${LEAFGATE_PY_VENV:-{{tools}}/py-venv}"
if [ "$("$venv/bin/componentize-py" --version 2>/dev/null || true)" != "componentize-py $pin" ]; then
  if [ "$venv" != ".tools/py-venv" ]; then
    echo "$venv has no componentize-py $pin" >&2
    exit 1
  fi
  echo "installing componentize-py $pin into $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet -r {{toolchain}}/requirements.txt >&2
fi
"$venv/bin/componentize-py" -d wit -w {{world}} componentize -p sdk -p . app -o {{name}}.wasm >&2
echo "$PWD/{{name}}.wasm"
"#;

const JS_PACKAGE: &str = r#"{
  "name": "{{name}}",
  "private": true,
  "type": "module",
  "description": "A leafgate {{world}} plugin (componentize-js). app.js imports the SDK by its relative path, ./sdk/leafgate-plugin.js.",
  "dependencies": {
    "leafgate-plugin": "file:sdk"
  }
}
"#;

const JS_BUILD: &str = r#"#!/bin/sh
# Builds {{name}}.wasm with the pinned componentize-js and prints its path as the last
# line. The tool is installed into .tools/js (as toolchain/package-lock.json pins it) when
# it is missing (or set LEAFGATE_JS_TOOLS to a folder that has it).
set -eu
cd "$(dirname "$0")"
tools="${LEAFGATE_JS_TOOLS:-{{tools}}/js}"
if ! cmp -s {{toolchain}}/package-lock.json "$tools/package-lock.json" \
  || ! [ -x "$tools/node_modules/.bin/componentize-js" ]; then
  if [ "$tools" != ".tools/js" ]; then
    echo "$tools has not the componentize-js of {{toolchain}}/package-lock.json" >&2
    exit 1
  fi
  echo "installing componentize-js ({{toolchain}}/package-lock.json) into $tools" >&2
  rm -rf "$tools"
  mkdir -p "$tools"
  cp {{toolchain}}/package.json {{toolchain}}/package-lock.json "$tools/"
  (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
"$tools/node_modules/.bin/componentize-js" --wit wit --world-name {{world}} -o {{name}}.wasm app.js >&2
echo "$PWD/{{name}}.wasm"
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_are_not_a_crate_and_a_file_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        for name in ["", "Big", "1st", "a/b", "../x", "a b", &"x".repeat(65)] {
            let s = Skeleton {
                name,
                lang: Lang::Rust,
                world: World::PodRouter,
                repo: None,
            };
            let e = s.write(&dir.path().join("p")).unwrap_err();
            assert!(e.contains("is not a plugin name"), "{name}: {e}");
        }
    }

    #[test]
    fn a_project_holds_its_sdk_wit_sample_cases_and_scripts() {
        let root = tempfile::tempdir().unwrap();
        for lang in [Lang::Rust, Lang::Python, Lang::Js] {
            for world in World::ALL {
                let dir = root.path().join(format!("{lang:?}-{world}"));
                let s = Skeleton {
                    name: "demo",
                    lang,
                    world,
                    repo: None,
                };
                s.write(&dir).unwrap();
                let wit = std::fs::read_to_string(dir.join("wit/plugin.wit")).unwrap();
                assert_eq!(wit, kit::WIT.text);
                let cases: serde_json::Value =
                    serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap())
                        .unwrap();
                assert!(!cases.as_array().unwrap().is_empty());
                for script in ["build.sh", "test.sh"] {
                    let text = std::fs::read_to_string(dir.join(script)).unwrap();
                    assert!(!text.contains("{{"), "{script}: {text}");
                }
                let vendored = kit::package(lang, Origin::Binary).unwrap();
                for (path, text) in vendored {
                    let on_disk = std::fs::read_to_string(dir.join("sdk").join(&path)).unwrap();
                    assert!(on_disk == text, "{lang:?} sdk/{}", path.display());
                }
                assert!(s.write(&dir).unwrap_err().contains("exists already"));
            }
        }
    }
}
