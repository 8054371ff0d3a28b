//! What a plugin author needs, carried in the binary: `wit/plugin.wit`, the three SDKs,
//! the crate the Rust SDK prints pods with, and the pinned toolchains' manifests.
//!
//! Every file is the repository's own, taken at build time (`include_str!`): there is one
//! source, and a test checks that each SDK folder holds exactly the files listed here with
//! the same bytes. Owns only the list and writing a package out (`leafgate plugin sdk`, and
//! `plugin new`'s vendored `sdk/`); the projects around them are `scaffold`'s.

use std::path::{Path, PathBuf};

/// The languages a plugin can be written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Lang {
    Rust,
    Python,
    Js,
}

/// Where a package's files are read from: the copies in this binary, or a leafgate
/// checkout's files on disk (`plugin new --repo`, to work on the SDKs themselves).
#[derive(Debug, Clone, Copy)]
pub enum Origin<'a> {
    Binary,
    Checkout(&'a Path),
}

impl Origin<'_> {
    /// The text of `file` from this origin.
    pub fn text(self, file: &Embedded) -> Result<String, String> {
        match self {
            Origin::Binary => Ok(file.text.to_string()),
            Origin::Checkout(repo) => {
                let path = repo.join(file.path);
                std::fs::read_to_string(&path).map_err(|e| {
                    format!(
                        "{}: {e} (is {} a leafgate checkout? leave out --repo to use the SDKs this binary carries)",
                        path.display(),
                        repo.display()
                    )
                })
            }
        }
    }
}

/// One embedded file: its path in the repository and its text.
#[derive(Debug, Clone, Copy)]
pub struct Embedded {
    pub path: &'static str,
    pub text: &'static str,
}

/// The repository's files at `paths`, embedded (paths from the repository root).
macro_rules! embed {
    ($($path:literal),* $(,)?) => {
        &[$(Embedded {
            path: $path,
            text: include_str!(concat!(env!("CARGO_MANIFEST_DIR"), "/../", $path)),
        }),*]
    };
}

/// The WIT package `leafgate:plugin`, the ABI every world is declared in.
pub const WIT: Embedded = embed!["wit/plugin.wit"][0];

/// The Rust SDK (crate `leafgate-plugin`) without its WIT, which is [`WIT`] (the crate's
/// `wit/plugin.wit` is a link to it).
pub const RUST_SDK: &[Embedded] = embed![
    "plugins/sdk/Cargo.toml",
    "plugins/sdk/README.md",
    "plugins/sdk/src/lib.rs",
    "plugins/sdk/src/k8s.rs",
];

/// `leafgate-k8s-print`'s sources, which the Rust SDK depends on (its manifest inherits
/// from the root workspace, so a vendored copy gets [`k8s_print_manifest`] instead).
pub const K8S_PRINT: &[Embedded] = embed![
    "crates/k8s-print/src/lib.rs",
    "crates/k8s-print/src/pod.rs",
    "crates/k8s-print/src/summary.rs",
    "crates/k8s-print/src/table.rs",
    "crates/k8s-print/src/time.rs",
];

/// The Python SDK (package `leafgate-plugin`, module `leafgate_plugin`).
pub const PYTHON_SDK: &[Embedded] = embed![
    "plugins/python/sdk/pyproject.toml",
    "plugins/python/sdk/README.md",
    "plugins/python/sdk/leafgate_plugin/__init__.py",
    "plugins/python/sdk/leafgate_plugin/address_rewriter.py",
    "plugins/python/sdk/leafgate_plugin/common.py",
    "plugins/python/sdk/leafgate_plugin/log_filter.py",
    "plugins/python/sdk/leafgate_plugin/pod_router.py",
    "plugins/python/sdk/leafgate_plugin/py.typed",
    "plugins/python/sdk/leafgate_plugin/table_formatter.py",
];

/// The JavaScript SDK (package `leafgate-plugin`), with the TypeScript types of the WIT.
pub const JS_SDK: &[Embedded] = embed![
    "plugins/js/sdk/package.json",
    "plugins/js/sdk/README.md",
    "plugins/js/sdk/leafgate-plugin.js",
    "plugins/js/sdk/leafgate-plugin.d.ts",
    "plugins/js/sdk/k8s.js",
    "plugins/js/sdk/types/pod-router.d.ts",
    "plugins/js/sdk/types/address-rewriter.d.ts",
    "plugins/js/sdk/types/log-filter.d.ts",
    "plugins/js/sdk/types/table-formatter.d.ts",
    "plugins/js/sdk/types/interfaces/leafgate-plugin-host.d.ts",
    "plugins/js/sdk/types/interfaces/leafgate-plugin-types.d.ts",
];

/// The pinned toolchains: componentize-py's requirement, componentize-js's manifest and
/// lock (what `scripts/tools.sh` installs), and the lock the Rust SDK is tested with.
pub const PYTHON_TOOLCHAIN: Embedded = embed!["plugins/python/toolchain/requirements.txt"][0];
pub const JS_TOOLCHAIN: &[Embedded] = embed![
    "plugins/js/toolchain/package.json",
    "plugins/js/toolchain/package-lock.json",
];
pub const RUST_LOCK: Embedded = embed!["plugins/Cargo.lock"][0];

/// The folder each SDK lives in, in the repository.
pub fn sdk_dir(lang: Lang) -> &'static str {
    match lang {
        Lang::Rust => "plugins/sdk",
        Lang::Python => "plugins/python/sdk",
        Lang::Js => "plugins/js/sdk",
    }
}

/// The embedded files of `lang`'s SDK.
pub fn sdk(lang: Lang) -> &'static [Embedded] {
    match lang {
        Lang::Rust => RUST_SDK,
        Lang::Python => PYTHON_SDK,
        Lang::Js => JS_SDK,
    }
}

/// Where the Rust SDK finds `leafgate-k8s-print` in the repository, and in a package
/// written out (beside it, under `k8s-print/`).
const K8S_PRINT_IN_REPO: &str = "path = \"../../crates/k8s-print\"";
const K8S_PRINT_VENDORED: &str = "path = \"k8s-print\"";

/// `leafgate-k8s-print`'s manifest for a vendored copy: the root workspace's values it
/// inherits, spelt out (the version is the gateway's, as the SDK's is).
pub fn k8s_print_manifest() -> String {
    format!(
        "[package]\nname = \"leafgate-k8s-print\"\n\
         description = \"kubectl's pod table over a minimal Pod shape, without IO (leafgate-plugin's printer).\"\n\
         version = \"{}\"\nedition = \"2024\"\nlicense = \"Apache-2.0\"\n\n\
         [dependencies]\nserde = {{ version = \"1\", features = [\"derive\"] }}\nserde_json = \"1\"\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The files of `lang`'s SDK package as it is written out: path inside the package, text.
/// The Rust one gets its WIT under `wit/` and `leafgate-k8s-print` under `k8s-print/`,
/// its manifest pointing there; the others are the repository's files as they are.
pub fn package(lang: Lang, origin: Origin) -> Result<Vec<(PathBuf, String)>, String> {
    let under = |prefix: &str, f: &Embedded| {
        let rel = f.path.strip_prefix(prefix).unwrap_or(f.path);
        PathBuf::from(rel.trim_start_matches('/'))
    };
    let mut files = Vec::new();
    for f in sdk(lang) {
        files.push((under(sdk_dir(lang), f), origin.text(f)?));
    }
    if lang == Lang::Rust {
        for (path, text) in &mut files {
            if path == Path::new("Cargo.toml") {
                *text = text.replace(K8S_PRINT_IN_REPO, K8S_PRINT_VENDORED);
            }
        }
        files.push(("wit/plugin.wit".into(), origin.text(&WIT)?));
        files.push(("k8s-print/Cargo.toml".into(), k8s_print_manifest()));
        for f in K8S_PRINT {
            let rel = under("crates/k8s-print", f);
            files.push((Path::new("k8s-print").join(rel), origin.text(f)?));
        }
    }
    Ok(files)
}

/// Writes `files` under `dir`, creating folders; returns the paths written. Scripts
/// (`*.sh`) are made executable.
pub fn write_files(dir: &Path, files: &[(PathBuf, String)]) -> Result<Vec<PathBuf>, String> {
    let mut written = Vec::with_capacity(files.len());
    for (rel, text) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
        }
        std::fs::write(&path, text).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        if path.extension().is_some_and(|e| e == "sh") {
            make_executable(&path)?;
        }
        written.push(path);
    }
    Ok(written)
}

/// Writes `lang`'s SDK package into `dir` (which must not exist, or be empty).
pub fn write_sdk(lang: Lang, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let occupied = std::fs::read_dir(dir).is_ok_and(|mut d| d.next().is_some());
    if occupied {
        return Err(format!("{} exists already and is not empty", dir.display()));
    }
    write_files(dir, &package(lang, Origin::Binary)?)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn repo() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
    }

    /// Files under `dir` (relative to the repository), skipping what is not part of the
    /// package: caches, build leftovers, the SDKs' own tests and tools.
    fn on_disk(dir: &str) -> Vec<String> {
        fn walk(root: &Path, at: &Path, out: &mut Vec<String>) {
            for entry in std::fs::read_dir(at).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().to_string();
                let skipped = ["__pycache__", "tests", "build", "target", "node_modules"];
                if skipped.contains(&name.as_str())
                    || name.ends_with(".egg-info")
                    || name == "gen-types.mjs"
                    || name == "Cargo.lock"
                {
                    continue;
                }
                if path.is_dir() {
                    walk(root, &path, out);
                } else {
                    let rel = path.strip_prefix(root).unwrap();
                    out.push(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
        let mut out = Vec::new();
        walk(&repo(), &repo().join(dir), &mut out);
        out.sort();
        out
    }

    fn assert_same(what: &str, embedded: &[Embedded], mut on_disk: Vec<String>) {
        let mut listed: Vec<String> = embedded.iter().map(|f| f.path.to_string()).collect();
        listed.sort();
        on_disk.sort();
        assert_eq!(
            listed, on_disk,
            "{what}: the embedded list (plugins/kit.rs) is not the folder's files"
        );
        for f in embedded {
            let disk = std::fs::read_to_string(repo().join(f.path)).unwrap();
            assert!(
                disk == f.text,
                "{what}: the embedded {} differs from the repository's",
                f.path
            );
        }
    }

    #[test]
    fn the_embedded_files_are_the_repositorys() {
        assert_same("wit", &[WIT], on_disk("wit"));
        let mut rust = on_disk("plugins/sdk");
        // The crate's WIT is a link to wit/plugin.wit, embedded once as WIT.
        rust.retain(|p| p != "plugins/sdk/wit/plugin.wit");
        assert_same("rust sdk", RUST_SDK, rust);
        assert_same("k8s-print", K8S_PRINT, on_disk("crates/k8s-print/src"));
        assert_same("python sdk", PYTHON_SDK, on_disk("plugins/python/sdk"));
        assert_same("js sdk", JS_SDK, on_disk("plugins/js/sdk"));
        assert_same(
            "js toolchain",
            JS_TOOLCHAIN,
            on_disk("plugins/js/toolchain"),
        );
        assert_same(
            "python toolchain",
            &[PYTHON_TOOLCHAIN],
            on_disk("plugins/python/toolchain"),
        );
        let lock = std::fs::read_to_string(repo().join(RUST_LOCK.path)).unwrap();
        assert!(lock == RUST_LOCK.text, "plugins/Cargo.lock differs");
    }

    #[test]
    fn the_rust_sdks_wit_is_the_repositorys() {
        let carried = std::fs::read_to_string(repo().join("plugins/sdk/wit/plugin.wit")).unwrap();
        assert!(
            carried == WIT.text,
            "plugins/sdk/wit/plugin.wit differs from wit/"
        );
    }

    #[test]
    fn every_package_is_at_the_gateways_version() {
        let version = env!("CARGO_PKG_VERSION");
        let manifest = |lang: Lang, name: &str| {
            package(lang, Origin::Binary)
                .unwrap()
                .into_iter()
                .find(|(p, _)| p == Path::new(name))
                .unwrap()
                .1
        };
        let toml: toml::Table = manifest(Lang::Rust, "Cargo.toml").parse().unwrap();
        assert_eq!(toml["package"]["version"].as_str(), Some(version));
        let k8s: toml::Table = k8s_print_manifest().parse().unwrap();
        assert_eq!(k8s["package"]["version"].as_str(), Some(version));
        let py: toml::Table = manifest(Lang::Python, "pyproject.toml").parse().unwrap();
        assert_eq!(py["project"]["version"].as_str(), Some(version));
        assert_eq!(py["project"]["name"].as_str(), Some("leafgate-plugin"));
        let js: serde_json::Value =
            serde_json::from_str(&manifest(Lang::Js, "package.json")).unwrap();
        assert_eq!(js["version"], version);
        assert_eq!(js["name"], "leafgate-plugin");
    }

    #[test]
    fn the_written_rust_sdk_points_at_its_vendored_printer() {
        let files = package(Lang::Rust, Origin::Binary).unwrap();
        let manifest = &files
            .iter()
            .find(|(p, _)| p == Path::new("Cargo.toml"))
            .unwrap()
            .1;
        assert!(manifest.contains(K8S_PRINT_VENDORED), "{manifest}");
        assert!(!manifest.contains("../"), "{manifest}");
        for (path, text) in &files {
            assert!(
                !text.contains(".workspace = true"),
                "{} inherits from a workspace a vendored copy has not",
                path.display()
            );
        }
    }

    #[test]
    fn write_sdk_refuses_a_folder_with_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "").unwrap();
        let e = write_sdk(Lang::Js, dir.path()).unwrap_err();
        assert!(e.contains("not empty"), "{e}");
        let out = dir.path().join("sdk");
        let written = write_sdk(Lang::Python, &out).unwrap();
        assert_eq!(written.len(), PYTHON_SDK.len());
        assert!(out.join("leafgate_plugin/py.typed").is_file());
    }
}
