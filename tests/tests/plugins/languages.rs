//! Plugins in Python and JavaScript: each language's reference plugins built from source by
//! its pinned tool, checked by `leafgate plugin check`, and run through `leafgate plugin
//! run` (its library entry, the same code) beside the Rust plugin of the same name on the
//! same inputs: the answers must be equal. Then a Python plugin that raises and a
//! JavaScript one that throws fail only their own call, and the Python SDK's own tests.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use leafgate::plugins::cli::{self, RunLimits};
use leafgate::plugins::{FaultKind, PluginError, PodRoute, World};
use leafgate_tests::config::Plugin;
use leafgate_tests::plugins::{Lang, lang_plugin, plugin, repo_root, tools_dir};
use serde_json::{Value, json};

use super::{one_tenant, pod_request};

/// One `leafgate plugin run` of `file` as `world` on `input`: its output, or its error.
/// Each run is a fresh instance under the default limits: a Python or JavaScript one
/// starts its interpreter when it loads, under its `startup` limit, so the call fits the
/// default 10 ms deadline.
fn run(file: &Path, world: World, config: &Value, input: &str) -> Result<String, String> {
    run_under(file, world, config, input, RunLimits::default())
}

/// The limits a Python or JavaScript plugin's answers are compared with the Rust one's
/// under: answers are what those tests check, not speed, and an interpreter's call has
/// outrun the default 10 ms deadline on a busy 2-core machine (in CI: 22 ms wall for a
/// label router, 21.6 ms for a redactor). The Rust plugin runs under the defaults.
fn answers_only() -> RunLimits {
    RunLimits {
        deadline: std::time::Duration::from_millis(500),
        ..RunLimits::default()
    }
}

/// [`run`] under `limits`.
fn run_under(
    file: &Path,
    world: World,
    config: &Value,
    input: &str,
    limits: RunLimits,
) -> Result<String, String> {
    let mut out = Vec::new();
    cli::run_with(
        file,
        world,
        Some(&config.to_string()),
        limits,
        input.as_bytes(),
        &mut out,
    )
    .map_err(|e| e.to_string())?;
    Ok(String::from_utf8(out).unwrap())
}

/// Keeps `file`, compiled, alive while the result is held: each `plugin run` then finds it
/// in the compile cache instead of compiling tens of MB again.
fn keep_compiled(hook: &str, file: &Path) -> std::sync::Arc<leafgate::plugins::TenantPlugins> {
    one_tenant(hook, Plugin::new(file))
}

fn python(name: &str, world: &str) -> PathBuf {
    lang_plugin(Lang::Python, name, world)
}

fn js(name: &str, world: &str) -> PathBuf {
    lang_plugin(Lang::Js, name, world)
}

#[test]
fn every_language_plugin_passes_plugin_check_for_its_world() {
    for (file, world) in [
        (python("label_router", "pod-router"), "pod-router"),
        (python("redact", "log-filter"), "log-filter"),
        (js("label-router", "pod-router"), "pod-router"),
        (js("pods-table", "table-formatter"), "table-formatter"),
        (js("redact", "log-filter"), "log-filter"),
    ] {
        let report = cli::check(&file, None).unwrap_or_else(|e| panic!("{world}: {e}"));
        assert!(
            report.ends_with(&format!("fits the {world} world")),
            "{report}"
        );
    }
}

/// Configs and requests a label router is asked: label rules, namespace and pod globs,
/// a default, a rule naming an unknown leaf, an unknown pod (no labels), no leaves.
fn router_cases() -> Vec<(Value, Value)> {
    let rules = json!({ "rules": [
        { "label": "topology.leafgate.io/site", "value": "edge-*", "leaf": "leaf-2" },
        { "namespace": "batch-*", "leaf": "leaf-1" },
        { "pod": "db-*", "namespace": "data", "leaf": "leaf-3" },
        { "label": "tier" , "leaf": "leaf-1" },
    ], "default_leaf": "leaf-1" });
    let strict = json!({ "rules": [ { "namespace": "prod", "leaf": "leaf-2" } ],
        "reject_unmatched": "only prod routes here" });
    let open = json!({ "rules": [ { "pod": "*-canary", "leaf": "leaf-2" } ] });
    let req = |ns: &str, pod: &str, labels: Value, leaves: Value| {
        json!({ "namespace": ns, "pod": pod, "container": "main", "verb": "exec",
                "labels": labels, "leaves": leaves })
    };
    let two = json!(["leaf-1", "leaf-2"]);
    let mut cases = Vec::new();
    for config in [&rules, &strict, &open] {
        for request in [
            req(
                "apps",
                "web-1",
                json!({"topology.leafgate.io/site": "edge-7"}),
                two.clone(),
            ),
            req(
                "apps",
                "web-1",
                json!({"topology.leafgate.io/site": "core-1"}),
                two.clone(),
            ),
            req("batch-2", "job", json!({}), two.clone()),
            req("data", "db-0", json!({}), two.clone()),
            req("apps", "x", json!({"tier": ""}), two.clone()),
            req("prod", "api", Value::Null, two.clone()),
            req("dev", "api-canary", Value::Null, two.clone()),
            req("dev", "api", json!({"a": "b"}), json!([])),
        ] {
            cases.push((config.clone(), request));
        }
    }
    cases
}

#[test]
fn python_and_js_label_routers_answer_as_the_rust_one() {
    let rust = plugin("label-router");
    let others = [
        ("python", python("label_router", "pod-router")),
        ("js", js("label-router", "pod-router")),
    ];
    let _compiled: Vec<_> = others
        .iter()
        .map(|(_, f)| keep_compiled("pod_router", f))
        .collect();
    for (config, request) in router_cases() {
        let input = request.to_string();
        let want = run(&rust, World::PodRouter, &config, &input);
        assert!(want.is_ok(), "rust on {input}: {want:?}");
        for (lang, file) in &others {
            let got = run_under(file, World::PodRouter, &config, &input, answers_only());
            assert_eq!(
                got, want,
                "{lang} vs rust, config {config}, request {input}"
            );
        }
    }
    // A config the router cannot use fails every call, in each language.
    let bad = json!({ "rules": [ { "leaf": "leaf-1", "colour": "red" } ] });
    let input = router_cases()[0].1.to_string();
    for (lang, file) in others.iter().chain([&("rust", rust.clone())]) {
        let e = run(file, World::PodRouter, &bad, &input).unwrap_err();
        assert!(e.contains("failed"), "{lang}: {e}");
    }
}

#[test]
fn the_python_and_js_redactors_answer_as_the_rust_one() {
    let configs = [
        json!({ "patterns": [r"password=\S+", r"Bearer [A-Za-z0-9._-]+"], "drop": ["GET /healthz"] }),
        json!({ "patterns": [r"(user)=(\w+)", r"token:(?P<tok>[a-f0-9]+)"],
                "replacement": "$1=<${tok}>$$" }),
        json!({ "drop": ["^DEBUG", "noise"] }),
        json!({}),
    ];
    let log = [
        "login user=ann password=hunter2 ok",
        "GET /healthz 200",
        "Authorization: Bearer abc.def-1 password=x",
        "",
        "DEBUG noisy start",
        "token:deadbeef and user=bob and token:00ff",
        "nothing to see",
        "unicode: naïve café password=ünïcode",
        "password= (empty)",
    ]
    .join("\n");
    let rust = plugin("redact");
    let peers = [
        ("python", python("redact", "log-filter")),
        ("js", js("redact", "log-filter")),
    ];
    let _compiled = peers
        .iter()
        .map(|(_, file)| keep_compiled("log_filter", file))
        .collect::<Vec<_>>();
    for config in configs {
        let want = run(&rust, World::LogFilter, &config, &log).unwrap();
        for (lang, file) in &peers {
            let got = run_under(file, World::LogFilter, &config, &log, answers_only()).unwrap();
            assert_eq!(got, want, "{lang}, config {config}");
        }
    }
}

/// The pod shapes of the kubesim catalogue, as one `PodList`.
fn catalogue_pods() -> Value {
    let dir = repo_root().join("tests/kubesim/fixtures/pods");
    let mut pods: Vec<Value> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            let mut shape: Value = serde_json::from_str(&text).unwrap();
            let mut pod = shape["pod"].take();
            pod["metadata"]["annotations"] = json!({ "leafgate.io/leaf": "leaf-2" });
            pod
        })
        .collect();
    assert!(pods.len() >= 12, "the catalogue has {} shapes", pods.len());
    pods.sort_by_key(|p| p["metadata"]["name"].to_string());
    json!({ "apiVersion": "v1", "kind": "PodList", "items": pods })
}

#[test]
fn the_js_pods_table_prints_as_the_rust_one() {
    let input = catalogue_pods().to_string();
    let rust = plugin("pods-table");
    let js = js("pods-table", "table-formatter");
    let _compiled = keep_compiled("table_formatter", &js);
    // Ages are counted to the second each plugin reads the clock: retried if a second
    // turned between the two runs.
    // Not the start-up: the call itself. Printing the whole catalogue in one call is
    // more than 10 ms of the JavaScript interpreter on a busy host (the gateway cuts long
    // lists into parts; this one is a single call).
    let limits = RunLimits {
        deadline: std::time::Duration::from_secs(1),
        ..RunLimits::default()
    };
    let mut last = None;
    for _ in 0..3 {
        let want = run(&rust, World::TableFormatter, &json!({}), &input).unwrap();
        let got = run_under(&js, World::TableFormatter, &json!({}), &input, limits).unwrap();
        if got == want {
            assert!(want.contains("\"LEAF\""), "{want}");
            return;
        }
        last = Some((got, want));
    }
    let (got, want) = last.unwrap();
    assert_eq!(got, want, "js vs rust pods-table");
}

#[test]
fn the_js_pods_table_leaves_other_resources_to_the_default() {
    let js = js("pods-table", "table-formatter");
    let input = json!({ "group": "apps", "version": "v1", "resource": "deployments",
                        "wide": false, "objects": [] })
    .to_string();
    assert_eq!(
        run(&js, World::TableFormatter, &json!({}), &input).unwrap(),
        "null\n"
    );
}

/// Calls `pod` on `t` and says whether it failed as a trap.
async fn traps(t: &leafgate::plugins::TenantPlugins, pod: &str) -> Result<PodRoute, String> {
    match t.route_pod(&pod_request("ns", pod, &[])).await {
        Ok(route) => Ok(route),
        Err(PluginError::Call { kind, message, .. }) => {
            assert_eq!(kind, FaultKind::Trap, "{message}");
            Err(message)
        }
        Err(other) => panic!("not a call error: {other}"),
    }
}

#[tokio::test]
async fn a_python_raise_and_a_js_throw_fail_only_their_own_call() {
    for (lang, file, bad) in [
        ("python", python("raiser", "pod-router"), "raise-1"),
        ("js", js("thrower", "pod-router"), "throw-1"),
    ] {
        let t = one_tenant("pod_router", Plugin::new(&file).on_error("reject"));
        assert_eq!(traps(&t, "ok-1").await, Ok(PodRoute::Leaf("leaf-1".into())));
        let started = Instant::now();
        let message = traps(&t, bad).await.unwrap_err();
        assert!(
            message.contains("refusing to route"),
            "{lang}: the error carries the exception: {message}"
        );
        println!("{lang}: a failed call took {:?}", started.elapsed());
        for i in 0..3 {
            assert_eq!(
                traps(&t, &format!("ok-{i}")).await,
                Ok(PodRoute::Leaf("leaf-1".into())),
                "{lang}: the calls after the failure answer"
            );
        }
    }
}

#[test]
fn the_python_sdk_tests_pass() {
    let bindings = tempfile::tempdir().unwrap();
    let py = tools_dir().join("py-venv/bin");
    let status = Command::new(py.join("componentize-py"))
        .arg("-d")
        .arg(repo_root().join("wit"))
        .args(["-w", "pod-router", "bindings"])
        .arg(bindings.path())
        .status()
        .expect("componentize-py runs (scripts/tools.sh installs it)");
    assert!(status.success());
    let sdk = Lang::Python.dir().join("sdk");
    let output = Command::new(py.join("python"))
        .args(["-m", "unittest", "discover", "-s"])
        .arg(sdk.join("tests"))
        .env(
            "PYTHONPATH",
            format!("{}:{}", bindings.path().display(), sdk.display()),
        )
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("OK"), "{stderr}");
}

/// The `sh` blocks of a page, in order, as one script.
fn page_script(page: &Path) -> String {
    let text = std::fs::read_to_string(page).unwrap();
    let mut script = String::new();
    let mut inside = false;
    for line in text.lines() {
        match (inside, line.trim_end()) {
            (false, "```sh") => inside = true,
            (true, "```") => inside = false,
            (true, line) => {
                script.push_str(line);
                script.push('\n');
            }
            _ => {}
        }
    }
    assert!(!script.is_empty(), "{} has no sh block", page.display());
    script
}

/// Each language page's commands, run as written (`plugin new`, the skeleton's test and
/// build, `plugin check`, `plugin run`, `leafgate check` of a config that loads it) in a
/// fresh folder with `leafgate` on the `PATH`.
#[test]
fn the_python_and_js_pages_commands_run_as_written() {
    let bin = leafgate_tests::binary::leafgate();
    let path = format!(
        "{}:{}",
        bin.parent().unwrap().display(),
        std::env::var("PATH").unwrap_or_default()
    );
    for (page, want) in [
        (Lang::Python.dir().join("README.md"), "\"leaf\": \"leaf-1\""),
        (Lang::Js.dir().join("README.md"), "\"Running\""),
    ] {
        // Each page ends with `leafgate check` on a config that loads the plugin.
        let checked = "(start-up outside it): fits\nleafgate.toml: ok";
        let dir = tempfile::tempdir().unwrap();
        let output = Command::new("bash")
            .args(["-euo", "pipefail", "-c", &page_script(&page)])
            .current_dir(dir.path())
            .env("PATH", &path)
            .env("LEAFGATE", repo_root())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}:\n{stdout}{}",
            page.display(),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("world"), "{}: {stdout}", page.display());
        assert!(stdout.contains(want), "{}: {stdout}", page.display());
        assert!(stdout.contains(checked), "{}: {stdout}", page.display());
    }
}

/// The SDK's TypeScript types are what jco generates from `wit/` now.
#[test]
fn the_js_types_match_the_wit() {
    let out = tempfile::tempdir().unwrap();
    let status = Command::new("node")
        .arg(Lang::Js.dir().join("sdk/gen-types.mjs"))
        .arg(tools_dir().join("js"))
        .arg(repo_root().join("wit"))
        .arg(out.path())
        .status()
        .expect("node runs");
    assert!(status.success());
    let committed = Lang::Js.dir().join("sdk/types");
    let files = [
        "pod-router.d.ts",
        "address-rewriter.d.ts",
        "log-filter.d.ts",
        "table-formatter.d.ts",
        "interfaces/leafgate-plugin-host.d.ts",
        "interfaces/leafgate-plugin-types.d.ts",
    ];
    for file in files {
        let fresh = std::fs::read_to_string(out.path().join(file)).unwrap();
        let kept = std::fs::read_to_string(committed.join(file)).unwrap_or_default();
        assert!(
            fresh == kept,
            "plugins/js/sdk/types/{file} is stale: run `node plugins/js/sdk/gen-types.mjs target/tools/js wit plugins/js/sdk/types`"
        );
    }
}
