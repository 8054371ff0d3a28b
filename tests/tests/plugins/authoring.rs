//! Plugin authoring outside the repository, with the built `leafgate` binary alone: from an
//! empty folder, `leafgate plugin new` in Rust, Python and JavaScript writes a project
//! whose `build.sh` builds a component (its path the last line), which `plugin check`
//! accepts and whose `test.sh` passes its cases with `plugin test`; then a gateway with a
//! tenant pointing at each project does as its sample says: the pod-router and log-filter
//! route and filter a `kubectl logs`, the address-rewriter rewrites the addresses the
//! virtual nodes publish in the root cluster, the table-formatter prints `kubectl get
//! pods`. The SDK packages install the ecosystems' way (`pip install`, `npm pack`, `cargo
//! package`), and `plugin test` fails the cases it must.
//!
//! The scripts reuse the toolchains the suite installed (`target/tools`, through
//! `LEAFGATE_PY_VENV` and `LEAFGATE_JS_TOOLS`; the reference plugins' cargo target dir),
//! not a copy per test, and a project's compiled component is kept for its next command.
//! The address-rewriter and table-formatter projects are `#[ignore]`d as slow
//! (`cargo test --test plugins authoring -- --ignored` runs them).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use kubesim::KubeSim;
use leafgate_tests::TestGateway;
use leafgate_tests::config::{Plugin, Tenant, VirtualNode};
use leafgate_tests::ingress::eventually;
use leafgate_tests::kube::{self, KubeUser, TwoLeaves};
use leafgate_tests::plugins::{fault_plugin, repo_root, target_dir, tools_dir};
use leafgate_tests::vnodes::{config, gateway_dir, kubernetes, node, root_sim};
use serde_json::{Value, json};

/// An empty folder outside the repository.
fn outside() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    assert!(
        !dir.path().starts_with(repo_root()),
        "{}",
        dir.path().display()
    );
    dir
}

/// A command run in `dir` as an author's shell would: the built `leafgate` first on the
/// `PATH`, the suite's toolchains for the scripts, no cargo flags of the outer build.
fn command(dir: &Path, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let bin = leafgate_tests::binary::leafgate();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let mut cmd = Command::new(program);
    cmd.current_dir(dir)
        .env("PATH", path)
        .env("LEAFGATE_PY_VENV", tools_dir().join("py-venv"))
        .env("LEAFGATE_JS_TOOLS", tools_dir().join("js"))
        // The Rust projects' dependencies build where the reference plugins' did.
        .env("CARGO_TARGET_DIR", target_dir().join("plugins-wasm"))
        // test.sh's `plugin test` compiles the component; `plugin check` after it, run in
        // the same folder, finds it compiled (the folder goes with the test).
        .env("LEAFGATE_PLUGIN_CACHE", dir.join(".plugin-cache"))
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .env_remove("CARGO_BUILD_TARGET");
    cmd
}

/// Runs `cmd`; its output, or a panic with everything it printed.
fn succeeds(what: &str, cmd: &mut Command) -> String {
    let output = cmd.output().unwrap_or_else(|e| panic!("{what}: {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(
        output.status.success(),
        "{what} failed:\n{stdout}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

fn leafgate(dir: &Path, args: &[&str]) -> Output {
    command(dir, "leafgate").args(args).output().unwrap()
}

/// A project of `plugin new`, built and tested by its own scripts.
struct Project {
    wasm: PathBuf,
    _root: tempfile::TempDir,
}

/// `plugin new my-WORLD --lang LANG --world WORLD` in an empty folder; then its `test.sh`
/// (which builds with `build.sh` and says what it built) passes every case, and `plugin
/// check` says the component fits its world.
fn project(lang: &str, world: &str) -> Project {
    let root = outside();
    let name = format!("my-{world}");
    let what = format!("{lang} {world}");
    succeeds(
        &format!("{what}: plugin new"),
        command(root.path(), "leafgate")
            .args(["plugin", "new", &name, "--lang", lang, "--world", world]),
    );
    let dir = root.path().join(&name);
    assert!(
        dir.join("sdk").is_dir() && dir.join("wit/plugin.wit").is_file(),
        "{what}"
    );
    let started = Instant::now();
    // The cases are about answers: an interpreter's first calls on a busy 2-core machine
    // have outrun the default 10 ms (the gateway's defaults are the loaded test's below).
    let out = succeeds(
        &format!("{what}: test.sh"),
        command(&dir, dir.join("test.sh")).args(["--deadline", "1s"]),
    );
    println!("{what}: test.sh took {:?}\n{out}", started.elapsed());
    let built = out
        .lines()
        .find_map(|l| l.strip_prefix("built "))
        .unwrap_or_else(|| panic!("{what}: test.sh named no component:\n{out}"));
    let wasm = PathBuf::from(built);
    assert_eq!(wasm, dir.join(format!("{name}.wasm")), "{what}");
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).unwrap()).unwrap();
    let n = cases.as_array().unwrap().len();
    assert!(
        out.contains(&format!("{n} cases: {n} passed, 0 failed")),
        "{what}: {out}"
    );
    let check = leafgate(&dir, &["plugin", "check", built]);
    let report = String::from_utf8_lossy(&check.stdout);
    assert!(
        check.status.success()
            && report
                .trim_end()
                .ends_with(&format!("fits the {world} world")),
        "{what}: {report}{}",
        String::from_utf8_lossy(&check.stderr)
    );
    Project { wasm, _root: root }
}

/// The project's plugin as a tenant loads it: a failure refuses the request rather than
/// falling back, so a broken sample cannot pass for the gateway's default; 1 s for an
/// interpreter's first calls on a busy machine.
fn loaded(p: &Project) -> Plugin {
    Plugin::new(&p.wasm)
        .on_error("reject")
        .set("deadline", "1s")
}

/// Pod `apps/name` in phase `phase`, as a leaf holds it.
fn pod(name: &str, phase: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"namespace": "apps", "name": name},
        "spec": {"nodeName": "n", "containers": [{"name": "app", "image": "busybox"}]},
        "status": {"phase": phase}
    })
}

/// `kubectl ARGS` as tenant `acme` (namespace `apps`) through `two`'s kube-api front; its
/// stdout, after it exited 0.
async fn kubectl_as_acme(two: &TwoLeaves, args: &[&str], what: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let config = kube::kubeconfig(
        dir.path(),
        &two.ca,
        two.gw.addr("kube"),
        KubeUser::Token("acme-token-1"),
        Some("apps"),
    );
    let mut kubectl = tokio::process::Command::new(kubesim::kubectl::pinned());
    kubectl
        .arg("--kubeconfig")
        .arg(config)
        .arg("--cache-dir")
        .arg(dir.path().join("cache"))
        .args(args)
        .kill_on_drop(true);
    let done = kubesim::testkit::run(kubectl, None).await;
    assert_eq!(done.code, Some(0), "{what}: {}{}", done.out, done.err);
    done.out
}

/// Waits until the gateway's index holds each of `pods` (in `apps`) on `holders` leaves.
async fn indexed(two: &TwoLeaves, pods: &[&str], holders: usize) {
    eventually(
        "the pods indexed",
        Duration::from_secs(10),
        move || async move {
            let snapshot = two.gw.gateway.snapshot();
            pods.iter()
                .all(|p| snapshot.pods.holders("apps", p).len() == holders)
        },
    )
    .await;
}

/// A gateway with tenant `acme`'s `pod_router` and `log_filter` the two projects' plugins:
/// `kubectl logs` of a pod both leaves hold reaches the first leaf (the sample router's
/// choice) and comes back without its DEBUG line and with its password line redacted.
async fn routes_and_filters_as_the_samples_say(lang: &str) {
    let router = project(lang, "pod-router");
    let filter = project(lang, "log-filter");
    let two = TwoLeaves::start_with("acme-token-1", "other-token-1", |acme| {
        acme.plugin("pod_router", loaded(&router))
            .plugin("log_filter", loaded(&filter))
    })
    .await;
    for (leaf, name) in [(&two.leaf_a, "leaf-a"), (&two.leaf_b, "leaf-b")] {
        leaf.create(pod("api", "Running")).unwrap();
        for line in [
            &format!("GET / 200 from {name}"),
            "DEBUG cache warm",
            "login password=hunter2",
        ] {
            leaf.append_log("apps", "api", "app", line);
        }
    }
    indexed(&two, &["api"], 2).await;
    let out = kubectl_as_acme(&two, &["logs", "api"], lang).await;
    assert_eq!(out, "GET / 200 from leaf-a\n[redacted]\n", "{lang}");
}

#[tokio::test]
async fn a_rust_project_routes_and_filters_in_a_gateway() {
    routes_and_filters_as_the_samples_say("rust").await;
}

#[tokio::test]
async fn a_python_project_routes_and_filters_in_a_gateway() {
    routes_and_filters_as_the_samples_say("python").await;
}

#[tokio::test]
async fn a_js_project_routes_and_filters_in_a_gateway() {
    routes_and_filters_as_the_samples_say("js").await;
}

/// The patch-mode node's request the writer sends every tick: the list of the Nodes its
/// selector matches.
fn patch_ticks(root: &KubeSim) -> usize {
    root.requests()
        .iter()
        .filter(|r| r.method == "GET" && r.path == "/api/v1/nodes")
        .filter(|r| r.query.contains("labelSelector"))
        .count()
}

/// How often `name`'s status was written (patched or replaced).
fn status_writes(root: &KubeSim, name: &str) -> usize {
    let path = format!("/api/v1/nodes/{name}/status");
    root.requests()
        .iter()
        .filter(|r| r.method != "GET" && r.path == path)
        .count()
}

/// A gateway of a root cluster whose tenant `team-a`'s `address_rewriter` is the
/// project's plugin, with two virtual nodes of `leaf-1` for `team-a`: `vn-leaf-1`, which
/// leafgate owns, and `edge-1`, another owner's Node leafgate patches. As the sample says,
/// each lists the gateway's address (`127.0.0.1`) first as its internal IP, then its own
/// addresses: none for the owned node, the owner's in order for the patched one. The
/// patched node hands that list back to the plugin every tick, and it stays as it is:
/// written once, the gateway's entry not repeated.
async fn rewrites_addresses_as_the_sample_says(lang: &str) {
    let rewriter = project(lang, "address-rewriter");
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let owners = json!([
        {"type": "InternalDNS", "address": "10.9.9.9"},
        {"type": "Hostname", "address": "edge-1"}
    ]);
    root.create(json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "edge-1", "labels": {"owner": "edge"}},
        "status": {"addresses": owners, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}}}
    }))
    .unwrap();
    let tenant = Tenant::new("team-a")
        .namespaces(["team-a"])
        .plugin("address_rewriter", loaded(&rewriter));
    let owned = VirtualNode::own("vn-leaf-1", "leaf-1").tenant("team-a");
    let patched = VirtualNode::patch("owner=edge", "leaf-1").tenant("team-a");
    let config = config(kubernetes(lang), tenant, owned).virtual_node(patched);
    let _gw = TestGateway::start_in(gateway_dir(&root, &leaf, lang), config).await;

    let gateway = json!({"type": "InternalIP", "address": "127.0.0.1"});
    let patched_list = json!([gateway, owners[0], owners[1]]);
    let root = &root;
    let addresses =
        move |name: &'static str| node(root, name).map(|n| n["status"]["addresses"].clone());
    for (name, want) in [("vn-leaf-1", &json!([gateway])), ("edge-1", &patched_list)] {
        eventually(
            &format!("{lang}: {name}'s addresses as the sample rewrites them"),
            Duration::from_secs(15),
            move || async move { addresses(name).as_ref() == Some(want) },
        )
        .await;
    }
    let ticks = patch_ticks(root);
    eventually(
        &format!("{lang}: three more ticks"),
        Duration::from_secs(15),
        move || async move { patch_ticks(root) >= ticks + 3 },
    )
    .await;
    assert_eq!(
        (addresses("edge-1"), status_writes(root, "edge-1")),
        (Some(patched_list), 1),
        "{lang}: the patched node's list handed back is answered unchanged"
    );
}

/// A gateway with tenant `acme`'s `table_formatter` the project's plugin: `kubectl get
/// pods` prints each pod of both leaves with its name and phase, as the sample says, one
/// row per pod.
async fn prints_tables_as_the_sample_says(lang: &str) {
    let formatter = project(lang, "table-formatter");
    let two = TwoLeaves::start_with("acme-token-1", "other-token-1", |acme| {
        acme.plugin("table_formatter", loaded(&formatter))
    })
    .await;
    two.leaf_a.create(pod("api", "Running")).unwrap();
    two.leaf_b.create(pod("batch", "Pending")).unwrap();
    indexed(&two, &["api", "batch"], 1).await;
    let out = kubectl_as_acme(&two, &["get", "pods"], lang).await;
    let printed: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        printed,
        [["NAME", "PHASE"], ["api", "Running"], ["batch", "Pending"]],
        "{lang}: {out}"
    );
}

#[tokio::test]
#[ignore = "slow: two more worlds in each language (run with --ignored)"]
async fn address_rewriter_and_table_formatter_projects_rewrite_and_print_in_a_gateway() {
    for lang in ["rust", "python", "js"] {
        rewrites_addresses_as_the_sample_says(lang).await;
        prints_tables_as_the_sample_says(lang).await;
    }
}

/// The Rust SDK's package lists its WIT; written out by `plugin sdk`, it is a crate whose
/// every file is inside it (its printer vendored beside it).
#[test]
fn the_rust_sdk_packages_its_wit() {
    let repo_sdk = repo_root().join("plugins/sdk");
    let listed = succeeds(
        "cargo package --list",
        command(&repo_sdk, "cargo").args(["package", "--list", "--allow-dirty", "--quiet"]),
    );
    assert!(listed.lines().any(|l| l == "wit/plugin.wit"), "{listed}");
    let root = outside();
    let out = root.path().join("leafgate-plugin");
    succeeds(
        "plugin sdk --lang rust",
        command(root.path(), "leafgate")
            .arg("plugin")
            .args(["sdk", "--lang", "rust", "--out"])
            .arg(&out),
    );
    let listed = succeeds(
        "cargo package --list (written out)",
        command(&out, "cargo").args(["package", "--list", "--allow-dirty", "--quiet"]),
    );
    for file in ["wit/plugin.wit", "src/lib.rs", "Cargo.toml", "README.md"] {
        assert!(listed.lines().any(|l| l == file), "{file}: {listed}");
    }
}

/// The first bytes of a WebAssembly component (magic, then the component layer).
fn is_component(path: &Path) -> bool {
    let bytes = std::fs::read(path).unwrap_or_default();
    bytes.starts_with(b"\0asm\x0d\x00\x01\x00")
}

/// An empty folder outside the repository holding `lang`'s SDK package as `plugin sdk`
/// writes it (`sdk/`) and a pod-router project of `plugin new` without its vendored copy
/// (`app/`): the package installed the ecosystem's way is all the sample has.
struct Sample {
    root: tempfile::TempDir,
    sdk: PathBuf,
    app: PathBuf,
}

fn sdk_and_sample(lang: &str) -> Sample {
    let root = outside();
    let sdk = root.path().join("sdk");
    succeeds(
        &format!("plugin sdk --lang {lang}"),
        command(root.path(), "leafgate")
            .args(["plugin", "sdk", "--lang", lang, "--out"])
            .arg(&sdk),
    );
    let new = [
        "plugin",
        "new",
        "app",
        "--lang",
        lang,
        "--world",
        "pod-router",
    ];
    succeeds("plugin new", command(root.path(), "leafgate").args(new));
    let app = root.path().join("app");
    std::fs::remove_dir_all(app.join("sdk")).unwrap();
    Sample { root, sdk, app }
}

/// `pip install` of the Python SDK (as `plugin sdk` writes it) into a fresh venv, then
/// componentize-py builds the pod-router sample against that environment alone.
#[test]
fn the_python_sdk_installs_with_pip_and_builds_the_sample() {
    let Sample { root, app, .. } = sdk_and_sample("python");
    let venv = root.path().join("venv");
    succeeds(
        "python3 -m venv",
        command(root.path(), "python3")
            .args(["-m", "venv"])
            .arg(&venv),
    );
    succeeds(
        "pip install ./sdk",
        command(root.path(), venv.join("bin/python"))
            .args(["-m", "pip", "install", "--quiet", "./sdk"]),
    );
    let site = succeeds(
        "the venv's site-packages",
        command(root.path(), venv.join("bin/python")).args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ]),
    );
    let site = site.trim();
    assert!(
        Path::new(site).join("leafgate_plugin/py.typed").is_file(),
        "{site}"
    );
    let wasm = root.path().join("app.wasm");
    succeeds(
        "componentize-py",
        command(&app, tools_dir().join("py-venv/bin/componentize-py"))
            .args([
                "-d",
                "wit",
                "-w",
                "pod-router",
                "componentize",
                "-p",
                site,
                "-p",
                ".",
                "app",
                "-o",
            ])
            .arg(&wasm),
    );
    assert!(is_component(&wasm), "{}", wasm.display());
}

/// `npm pack` of the JavaScript SDK, the tarball installed into a fresh folder, then the
/// JavaScript toolchain builds the pod-router sample importing the installed package.
#[test]
fn the_js_sdk_packs_installs_and_builds_the_sample() {
    let Sample { root, sdk, app } = sdk_and_sample("js");
    let packed = succeeds("npm pack", command(&sdk, "npm").args(["pack", "--silent"]));
    let tarball = sdk.join(packed.trim());
    assert!(tarball.is_file(), "{packed}");
    std::fs::write(
        app.join("package.json"),
        r#"{"name": "app", "private": true, "type": "module"}"#,
    )
    .unwrap();
    succeeds(
        "npm install the tarball",
        command(&app, "npm")
            .args([
                "install",
                "--offline",
                "--no-audit",
                "--no-fund",
                "--silent",
            ])
            .arg(&tarball),
    );
    let source = std::fs::read_to_string(app.join("app.js")).unwrap();
    let installed = "./node_modules/leafgate-plugin/leafgate-plugin.js";
    std::fs::write(
        app.join("app.js"),
        source.replace("./sdk/leafgate-plugin.js", installed),
    )
    .unwrap();
    assert!(app.join(installed).is_file());
    let wasm = root.path().join("app.wasm");
    succeeds(
        "componentize-js",
        command(
            &app,
            tools_dir().join("js/node_modules/.bin/componentize-js"),
        )
        .args(["--wit", "wit", "--world-name", "pod-router", "-o"])
        .arg(&wasm)
        .arg("app.js"),
    );
    assert!(is_component(&wasm), "{}", wasm.display());
}

/// `leafgate plugin test` of the fault plugin `faulty-router` (a pod-router that traps,
/// spins or eats memory as the pod's name says) over `cases`, run in `dir`. Under a 1 s
/// deadline: growing to the 64 MiB cap has taken over the default 10 ms on a busy machine,
/// and that case is about the cap.
fn test_faulty_router(dir: &Path, cases: &Path) -> Output {
    let plugin = fault_plugin("faulty-router");
    let args = [
        "plugin",
        "test",
        plugin.to_str().unwrap(),
        "--world",
        "pod-router",
    ];
    command(dir, "leafgate")
        .args(args)
        .args(["--deadline", "1s", "--cases"])
        .arg(cases)
        .output()
        .unwrap()
}

/// `plugin test` on cases that must fail: a wrong leaf, a plugin that loops and one that
/// panics each fail their own case, named, with the reason (the panic's message), and
/// the cases around them still run and pass; exit 1. A case's name cannot write control
/// characters to the terminal.
#[test]
fn plugin_test_fails_the_cases_it_must_and_runs_the_rest() {
    let root = outside();
    let cases = root.path().join("cases.yaml");
    std::fs::write(
        &cases,
        "- name: wrong leaf\n  request: {namespace: ns, pod: web-1, verb: exec, leaves: [leaf-1, leaf-2]}\n  expect: {leaf: leaf-2}\n\
         - name: loops\n  request: {namespace: ns, pod: spin-1, verb: exec, leaves: [leaf-1]}\n  expect: default\n\
         - name: panics\n  request: {namespace: ns, pod: trap-1, verb: exec, leaves: [leaf-1]}\n  expect: {leaf: leaf-1}\n\
         - name: \"after them \\e[2J\"\n  request: {namespace: ns, pod: web-2, verb: exec, leaves: [leaf-1]}\n  expect: {leaf: leaf-1}\n\
         - name: a loop that must time out\n  request: {namespace: ns, pod: spin-2, verb: exec, leaves: [leaf-1]}\n  expect: {error: deadline}\n\
         - name: a hoard that must hit the cap\n  request: {namespace: ns, pod: bomb-1, verb: exec, leaves: [leaf-1]}\n  expect: {error: memory}\n",
    )
    .unwrap();
    let out = test_faulty_router(root.path(), &cases);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let line = |prefix: &str| {
        stdout
            .lines()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("no `{prefix}` line:\n{stdout}"))
    };
    assert!(
        line("FAIL  wrong leaf (").ends_with("the answer differs"),
        "{stdout}"
    );
    let answers = "      expected: {\"leaf\":\"leaf-2\"}\n           got: {\"leaf\":\"leaf-1\"}\n";
    assert!(stdout.contains(answers), "{stdout}");
    assert!(line("FAIL  loops (").ends_with("deadline"), "{stdout}");
    assert!(line("FAIL  panics (").ends_with("trap"), "{stdout}");
    assert!(
        stdout.contains("faulty-router was told to trap on trap-1"),
        "{stdout}"
    );
    line("ok    after them \\u{1b}[2J (");
    line("ok    a loop that must time out (");
    line("ok    a hoard that must hit the cap (");
    assert!(!stdout.contains('\u{1b}'), "{stdout}");
    assert!(
        line("6 cases: ").starts_with("6 cases: 3 passed, 3 failed"),
        "{stdout}"
    );
}

/// A cases file that does not parse is refused at its line and column, JSON and YAML.
#[test]
fn plugin_test_refuses_a_malformed_cases_file_at_its_line_and_column() {
    let root = outside();
    for (name, text, at) in [
        (
            "cases.json",
            "[\n  {\"name\": \"a\",\n   \"request\": {} \"expect\": 1}\n]\n",
            "cases.json:3:18: expected `,` or `}`",
        ),
        (
            "cases.yaml",
            "- name: a\n  request: {pod: [}\n  expect: 1\n",
            "cases.yaml:2:",
        ),
        (
            "missing.json",
            "[{\"name\": \"a\", \"request\": {}}]",
            "missing.json:1:",
        ),
    ] {
        let path = root.path().join(name);
        std::fs::write(&path, text).unwrap();
        let out = test_faulty_router(root.path(), &path);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
        assert!(stderr.contains(at), "{name}: {stderr}");
        assert!(out.stdout.is_empty(), "{name}: no case ran");
    }
}
