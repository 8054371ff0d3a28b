//! Builds the plugins tests load, from source, once per test process.
//!
//! The reference plugins (`plugins/`) and the fault plugins (`tests/fault-plugins/`) are
//! compiled with `cargo build --release --target wasm32-wasip2`, each workspace into its
//! own directory under the workspace's target dir, so the nested cargo never waits on the
//! lock of the cargo running the tests. No checked-in binaries: a test always runs the
//! plugin source next to it.
//!
//! This file uses only std, so `gateway/tests/` includes it by path as well.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the crate sits one level below the repository root")
        .to_path_buf()
}

/// The cargo target dir this test runs from: `CARGO_TARGET_DIR`, else the directory above
/// `debug/deps/<test binary>`.
pub fn target_dir() -> PathBuf {
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR") {
        return PathBuf::from(dir);
    }
    let exe = std::env::current_exe().expect("the test binary has a path");
    exe.ancestors()
        .nth(3)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| repo_root().join("target"))
}

fn build(workspace: &Path, out: &Path) -> PathBuf {
    let status = super::cargo::command()
        .args(["build", "--release", "--target", "wasm32-wasip2", "--quiet"])
        .current_dir(workspace)
        .env("CARGO_TARGET_DIR", out)
        // The outer cargo's flags are for the host, not for wasm32-wasip2.
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET")
        .status()
        .unwrap_or_else(|e| panic!("cannot run cargo to build {}: {e}", workspace.display()));
    assert!(
        status.success(),
        "building the plugins in {} failed (is the target installed? `rustup target add wasm32-wasip2`)",
        workspace.display()
    );
    out.join("wasm32-wasip2").join("release")
}

/// The directory of the reference plugins' `.wasm` files, built on first call.
pub fn build_plugins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build(
            &repo_root().join("plugins"),
            &target_dir().join("plugins-wasm"),
        )
    })
}

/// The directory of the fault plugins' `.wasm` files, built on first call.
pub fn build_fault_plugins() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        build(
            &repo_root().join("tests").join("fault-plugins"),
            &target_dir().join("fault-plugins-wasm"),
        )
    })
}

/// A reference plugin by crate name (`label-router`).
pub fn plugin(name: &str) -> PathBuf {
    wasm(build_plugins(), name)
}

/// A fault plugin by crate name (`faulty-router`).
pub fn fault_plugin(name: &str) -> PathBuf {
    wasm(build_fault_plugins(), name)
}

fn wasm(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(format!("{}.wasm", name.replace('-', "_")));
    assert!(path.is_file(), "{} was not built", path.display());
    path
}

/// The languages a plugin can be written in besides Rust, each built by its pinned tool
/// (scripts/tools.sh installs them under `target/tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Js,
}

impl Lang {
    /// The directory of its SDK and reference plugins (`plugins/python`, `plugins/js`).
    pub fn dir(self) -> PathBuf {
        repo_root().join("plugins").join(match self {
            Lang::Python => "python",
            Lang::Js => "js",
        })
    }
}

/// The pinned tools' directory (`target/tools` of the repository).
pub fn tools_dir() -> PathBuf {
    repo_root().join("target").join("tools")
}

/// The command that builds a component in `lang` from `source` (a Python module `app`
/// directory, or a JavaScript module file) for `world`, into `out`, as plugins/README.md
/// shows it. The SDK is on the path of both (Python: `-p`; JS: imported by relative path).
pub fn build_command(lang: Lang, world: &str, source: &Path, out: &Path) -> Command {
    let wit = repo_root().join("wit");
    match lang {
        Lang::Python => {
            let mut c = Command::new(tools_dir().join("py-venv/bin/componentize-py"));
            c.arg("-d")
                .arg(&wit)
                .args(["-w", world, "componentize", "-p"])
                .arg(Lang::Python.dir().join("sdk"))
                .arg("-p")
                .arg(source)
                .arg("app")
                .arg("-o")
                .arg(out);
            c
        }
        Lang::Js => {
            let mut c = Command::new(tools_dir().join("js/node_modules/.bin/componentize-js"));
            // componentize-js reads the module's imports inside the folder it runs in (when
            // the module is there): the repository, which holds the SDK too.
            c.current_dir(repo_root())
                .arg("--wit")
                .arg(&wit)
                .args(["--world-name", world, "-o"])
                .arg(out)
                .arg(source);
            c
        }
    }
}

/// Builds `source` in `lang` for `world` into `out`, or panics with the tool's output.
pub fn build_component(lang: Lang, world: &str, source: &Path, out: &Path) {
    let output = build_command(lang, world, source, out)
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run the {lang:?} plugin builder (run scripts/tools.sh first): {e}")
        });
    assert!(
        output.status.success() && out.is_file(),
        "building {} ({lang:?}, {world}) failed:\n{}{}",
        source.display(),
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// Every source file under `dir` (`.py`, `.js`, `.wit`, `.json`), sorted, for a content
/// hash.
fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy();
        if name == "__pycache__" || name == "node_modules" || name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            files_under(&path, out);
        } else if path
            .extension()
            .is_some_and(|e| ["py", "js", "wit", "json"].iter().any(|x| e == *x))
        {
            // Sources only: a page or generated types changing builds nothing again.
            out.push(path);
        }
    }
}

/// A stable hash (FNV-1a, 64 bits) of the files a language's components are built from:
/// its SDK and plugins, `wit/`, and the pinned toolchain's lock (the tools' own version).
fn sources_hash(lang: Lang, extra: &[&Path]) -> u64 {
    let mut files = Vec::new();
    files_under(&lang.dir(), &mut files);
    files_under(&repo_root().join("wit"), &mut files);
    for dir in extra {
        files_under(dir, &mut files);
    }
    files.push(repo_root().join("scripts/tools.sh"));
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        for b in file.to_string_lossy().bytes().chain(bytes) {
            hash = (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
    }
    hash
}

/// A component built from `plugins/<lang>/<name>` (or `tests/fault-plugins/<lang>/<name>`
/// for a fault plugin) for `world`, built once per content: the `.wasm` is kept under the
/// target dir by a hash of every source it is made from, so the test binaries after the
/// first, and later runs, reuse it (componentize-py/js take seconds per component).
pub fn lang_plugin(lang: Lang, name: &str, world: &str) -> PathBuf {
    let fault_dir = repo_root().join("tests/fault-plugins").join(match lang {
        Lang::Python => "python",
        Lang::Js => "js",
    });
    let source_dir = if lang.dir().join(name).is_dir() {
        lang.dir().join(name)
    } else {
        fault_dir.join(name)
    };
    let hash = sources_hash(lang, &[&fault_dir]);
    let dir = target_dir()
        .join("plugins-lang")
        .join(format!("{hash:016x}"));
    let out = dir.join(format!("{}-{world}.wasm", name.replace('-', "_")));
    // One build at a time in this process (the tests of a binary run in parallel and ask
    // for the same components; the builds are CPU-bound anyway).
    static BUILDING: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _one = BUILDING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if out.is_file() {
        return out;
    }
    std::fs::create_dir_all(&dir).unwrap();
    // Built beside its final name and renamed: a test binary running beside this one
    // never sees half a component.
    let partial = dir.join(format!(
        "{}-{world}.{}.partial.wasm",
        name.replace('-', "_"),
        std::process::id()
    ));
    let source = match lang {
        Lang::Python => source_dir,
        Lang::Js => source_dir.join("app.js"),
    };
    build_component(lang, world, &source, &partial);
    std::fs::rename(&partial, &out).unwrap();
    out
}
