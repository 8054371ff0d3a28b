//! `deploy/observability/` against a running gateway: every metric a Grafana panel or an
//! alert names is one the gateway exports, the PrometheusRule fits prometheus-operator's
//! CRD schema (vendored in `tests/schemas/prometheus-operator/`), each alert has its
//! runbook in `docs/operations.md`, and `leafgate_certificate_expiry_seconds` tells the
//! served certificate's time left. The gateway scraped serves routes, a leaf and a virtual
//! node of a kubesim root cluster.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use kubesim::KubeSim;

use leafgate_tests::TestGateway;
use leafgate_tests::certs::TestCa;
use leafgate_tests::client::get;
use leafgate_tests::config::{Listener, Route, Tenant, VirtualNode};
use leafgate_tests::vnodes::{self, gateway_dir, kubernetes, root_sim};
use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .into()
}

/// The sample names `/metrics` can hold, from its `# TYPE` lines (a family is described
/// before it has series): a counter's `_total`, a histogram's `_bucket`, `_sum` and
/// `_count`, a gauge's own name.
fn exported_names(metrics: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in metrics.lines() {
        let Some(rest) = line.strip_prefix("# TYPE ") else {
            continue;
        };
        let (name, kind) = rest.split_once(' ').expect("# TYPE name kind");
        let suffixes: &[&str] = match kind {
            "counter" => &["_total"],
            "histogram" => &["_bucket", "_sum", "_count"],
            _ => &[""],
        };
        names.extend(suffixes.iter().map(|s| format!("{name}{s}")));
    }
    names
}

/// PromQL's aggregations, functions and keywords: the identifiers that are not metrics.
const PROMQL_FUNCTIONS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "topk",
    "bottomk",
    "quantile",
    "rate",
    "irate",
    "increase",
    "delta",
    "changes",
    "resets",
    "histogram_quantile",
    "label_replace",
    "max_over_time",
    "min_over_time",
    "avg_over_time",
    "absent",
    "clamp_min",
    "vector",
    "time",
];
/// Followed by a parenthesised list of label names, not of expressions.
const LABEL_LISTS: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];
const KEYWORDS: &[&str] = &["and", "or", "unless", "bool", "offset"];

/// The metric names `expr` reads: each identifier outside strings, label matchers
/// (`{...}`), ranges (`[...]`) and label lists (`by (...)`) that is no function, aggregation
/// or keyword. A function this does not know fails, so a misspelt one is caught too.
fn promql_metrics(expr: &str) -> Vec<String> {
    let chars: Vec<char> = expr.chars().collect();
    let mut names = Vec::new();
    let mut i = 0;
    // Skips from an opening bracket to its closing one, strings inside included.
    let skip_group = |mut i: usize, open: char, close: char| -> usize {
        let mut depth = 0;
        while i < chars.len() {
            match chars[i] {
                c if c == open => depth += 1,
                c if c == close => {
                    depth -= 1;
                    if depth == 0 {
                        return i + 1;
                    }
                }
                '"' | '\'' => i = skip_string(&chars, i) - 1,
                _ => {}
            }
            i += 1;
        }
        panic!("unbalanced {open} in {expr}");
    };
    while i < chars.len() {
        match chars[i] {
            '"' | '\'' => i = skip_string(&chars, i),
            '{' => i = skip_group(i, '{', '}'),
            '[' => i = skip_group(i, '[', ']'),
            c if c.is_ascii_digit() => {
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '.') {
                    i += 1;
                }
            }
            c if c.is_ascii_alphabetic() || c == '_' || c == ':' => {
                let start = i;
                while i < chars.len()
                    && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == ':')
                {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut next = i;
                while next < chars.len() && chars[next].is_whitespace() {
                    next += 1;
                }
                let call = chars.get(next) == Some(&'(');
                if LABEL_LISTS.contains(&word.as_str()) {
                    if call {
                        i = skip_group(next, '(', ')');
                    }
                } else if PROMQL_FUNCTIONS.contains(&word.as_str()) {
                    // `sum by (x) (...)`: an aggregation is no metric, called or not.
                } else if call {
                    panic!("unknown PromQL function {word} in {expr}");
                } else if !KEYWORDS.contains(&word.as_str()) {
                    names.push(word);
                }
            }
            _ => i += 1,
        }
    }
    names
}

/// The index just past the string literal opening at `start`.
fn skip_string(chars: &[char], start: usize) -> usize {
    let quote = chars[start];
    let mut i = start + 1;
    while i < chars.len() && chars[i] != quote {
        i += if chars[i] == '\\' { 2 } else { 1 };
    }
    i + 1
}

#[test]
fn the_tokenizer_finds_metrics_and_only_metrics() {
    assert_eq!(
        promql_metrics(
            r#"sum by (le, route) (rate(a_bucket{x="y}", instance=~"$i"}[$__rate_interval])) / on () group_left (z) b > 0.5 and c_total offset 5m"#
        ),
        ["a_bucket", "b", "c_total"]
    );
    assert_eq!(
        promql_metrics(
            r#"label_replace(m, "source", "ingress", "route", "ingress/.*") < 14 * 86400"#
        ),
        ["m"]
    );
    assert!(promql_metrics("histogram_quantile(0.99, sum(x)) without (a)") == ["x"]);
    let misspelt = std::panic::catch_unwind(|| promql_metrics("rat(x[5m])"));
    assert!(misspelt.is_err(), "an unknown function is refused");
}

/// Every PromQL expression of the Grafana dashboard, with where it is: the panels' targets
/// and the `label_values(metric, label)` queries of its variables (the metric only).
fn dashboard_exprs(dashboard: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let title = panel["title"].as_str().unwrap().to_string();
            out.push((title, target["expr"].as_str().unwrap().to_string()));
        }
    }
    for var in dashboard["templating"]["list"].as_array().unwrap() {
        if let Some(query) = var["query"]["query"].as_str() {
            let args = query
                .strip_prefix("label_values(")
                .and_then(|q| q.strip_suffix(')'))
                .unwrap_or_else(|| panic!("variable query {query}"));
            let metric = args.split(',').next().unwrap().trim().to_string();
            out.push((format!("variable {}", var["name"]), metric));
        }
    }
    out
}

/// The PrometheusRule as JSON, read with PyYAML (from scripts/tools.sh's target/tools/py).
fn python(script: &str, args: &[&Path]) -> std::process::Output {
    let py = repo_root().join("target/tools/py");
    assert!(
        py.join("yaml").is_dir() && py.join("jsonschema").is_dir(),
        "{} lacks PyYAML or jsonschema: run scripts/tools.sh",
        py.display()
    );
    std::process::Command::new("python3")
        .args(["-c", script])
        .args(args)
        .env("PYTHONPATH", &py)
        .output()
        .expect("python3 runs")
}

fn rule_json(path: &Path) -> Value {
    let out = python(
        "import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        &[path],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Validates `rule` against the vendored CRD's `openAPIV3Schema`, strictly: an object
/// schema with `properties` and no `additionalProperties` or
/// `x-kubernetes-preserve-unknown-fields` takes no other field (what `kubectl
/// --validate=strict` and the API server's field validation refuse).
const VALIDATE: &str = r#"
import sys, yaml, jsonschema
crd = yaml.safe_load(open(sys.argv[1]))
schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
def strict(s):
    if isinstance(s, dict):
        if s.get("pattern", "").startswith("^(?i)"):
            s["pattern"] = "(?i)^" + s["pattern"][5:]  # Go's inline flag; Python wants it first
        if "properties" in s and "additionalProperties" not in s and not s.get("x-kubernetes-preserve-unknown-fields"):
            s["additionalProperties"] = False
        for v in s.values():
            strict(v)
    elif isinstance(s, list):
        for v in s:
            strict(v)
strict(schema)
doc = yaml.safe_load(open(sys.argv[2]))
assert doc["apiVersion"] == "monitoring.coreos.com/v1", doc["apiVersion"]
assert doc["kind"] == crd["spec"]["names"]["kind"], doc["kind"]
jsonschema.validate(doc, schema)
"#;

fn validate_rule(rule: &Path) -> std::process::Output {
    let crd = repo_root()
        .join("tests/schemas/prometheus-operator/monitoring.coreos.com_prometheusrules.yaml");
    python(VALIDATE, &[&crd, rule])
}

#[test]
fn the_prometheus_rule_fits_the_prometheus_operator_schema() {
    let rule = repo_root().join("deploy/observability/prometheusrule.yaml");
    let out = validate_rule(&rule);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The check does refuse: a misspelt field, and a rule without its expression.
    let text = std::fs::read_to_string(&rule).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    for (from, to) in [("      for: 5m\n", "      fro: 5m\n"), ("expr:", "exp:")] {
        assert!(text.contains(from), "{from:?} in the rule");
        let broken = tmp.path().join("broken.yaml");
        std::fs::write(&broken, text.replacen(from, to, 1)).unwrap();
        assert!(
            !validate_rule(&broken).status.success(),
            "{to:?} passed the schema"
        );
    }
}

/// The alerts' names, each with its expression.
fn alerts() -> Vec<(String, String)> {
    let rule = rule_json(&repo_root().join("deploy/observability/prometheusrule.yaml"));
    rule["spec"]["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap())
        .map(|r| {
            let name = r["alert"].as_str().expect("alerting rules only");
            (name.to_string(), r["expr"].as_str().unwrap().to_string())
        })
        .collect()
}

#[test]
fn each_alert_has_its_runbook_in_the_operations_chapter() {
    let docs = std::fs::read_to_string(repo_root().join("docs/operations.md")).unwrap();
    let headings: BTreeSet<&str> = docs
        .lines()
        .filter_map(|l| l.strip_prefix("### "))
        .collect();
    let alerts = alerts();
    for wanted in [
        "LeafgateLeafDown",
        "LeafgateReloadFailing",
        "LeafgateUpstreamErrorRatio",
        "LeafgateListenerSaturated",
        "LeafgatePluginFailures",
        "LeafgateLeaderLost",
        "LeafgateCertificateExpiring",
    ] {
        assert!(alerts.iter().any(|(a, _)| a == wanted), "no alert {wanted}");
    }
    for (alert, _) in &alerts {
        assert!(
            headings.contains(alert.as_str()),
            "docs/operations.md has no `### {alert}` runbook"
        );
    }
}

/// The families `gateway/src` registers (the literal after each `.register(`), prefixed:
/// the metrics a gateway exports once they have a series. The registry leaves a family
/// out of `/metrics` until then, and some need a whole cluster's traffic.
fn registered_families() -> BTreeSet<String> {
    let mut families = BTreeSet::new();
    let mut dirs = vec![repo_root().join("gateway/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                for (at, _) in text.match_indices(".register(") {
                    let rest = &text[at..];
                    let Some(open) = rest.find('"') else { continue };
                    // Only a literal right after the parenthesis (whitespace between).
                    if !rest[".register(".len()..open].trim().is_empty() {
                        continue;
                    }
                    let name = &rest[open + 1..];
                    let name = &name[..name.find('"').unwrap()];
                    families.insert(format!("leafgate_{name}"));
                }
            }
        }
    }
    families
}

/// Whether `name` is a sample of a registered family, with the suffixes its type gives.
fn of_a_family(name: &str, families: &BTreeSet<String>) -> bool {
    families.contains(name)
        || ["_total", "_bucket", "_sum", "_count"]
            .iter()
            .any(|s| name.strip_suffix(s).is_some_and(|f| families.contains(f)))
}

#[tokio::test]
async fn grafana_panels_and_alerts_name_only_metrics_the_gateway_exports() {
    // A root cluster with a virtual node over a kubesim leaf, so the leaf's, the leader's
    // and the node writes' families have series too.
    let root = root_sim(KubeSim::builder()).await;
    let leaf = KubeSim::builder().start().await.unwrap();
    let dir = gateway_dir(&root, &leaf, "replica-a");
    let ca = TestCa::new("observability-ca");
    let cert = ca.issue(dir.path(), "web", &["web.example"]);
    // A closed port: the route's requests fail upstream.
    let closed = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let config = vnodes::config(
        kubernetes("replica-a"),
        Tenant::new("team-a").namespaces(["team-a"]),
        VirtualNode::own("vn-leaf-1", "leaf-1"),
    )
    .listener(Listener::new("plain"))
    .listener(Listener::new("web").tls(&cert.cert, &cert.key))
    .route(Route::host("ok.example").direct(200, "ok\n"))
    .route(Route::host("down.example").backend(closed));
    let gw = TestGateway::start_in(dir, &config).await;
    get(gw.addr("plain"), "ok.example", "/").await;
    get(gw.addr("plain"), "down.example", "/").await;
    // A rejected reload, then an applied one.
    std::fs::write(&gw.config, "[[listener]]\nname = 1\n").unwrap();
    assert!(
        gw.gateway.reload().await.is_err(),
        "a bad config is rejected"
    );
    std::fs::write(&gw.config, config.to_string()).unwrap();
    gw.gateway.reload().await.unwrap();

    // Bounded: the election and the first node writes take a few seconds.
    let started = Instant::now();
    let metrics = loop {
        let metrics = get(gw.admin(), "admin", "/metrics").await.text();
        if metrics.contains("leafgate_leader 1") && metrics.contains("leafgate_root_writes_total{")
        {
            break metrics;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no leader or node writes within 20 s: {metrics}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    let exported = exported_names(&metrics);
    for wanted in [
        "leafgate_leaf_up",
        "leafgate_leaf_pods",
        "leafgate_requests_total",
        "leafgate_request_duration_seconds_bucket",
        "leafgate_upstream_errors_total",
        "leafgate_reload_failures_total",
        "leafgate_certificate_expiry_seconds",
    ] {
        assert!(exported.contains(wanted), "{wanted} not in {exported:?}");
    }
    let families = registered_families();
    for name in &exported {
        assert!(
            of_a_family(name, &families),
            "{name} exported, but its registration not found"
        );
    }

    let path = repo_root().join("deploy/observability/grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(
        dashboard["schemaVersion"].as_u64().unwrap() >= 36,
        "Grafana 10+"
    );
    let mut exprs = dashboard_exprs(&dashboard);
    assert!(exprs.len() >= 20, "{} panel expressions", exprs.len());
    for panel in dashboard["panels"].as_array().unwrap() {
        if panel["type"] != "row" {
            assert_eq!(
                panel["datasource"]["uid"], "${datasource}",
                "{}",
                panel["title"]
            );
        }
    }
    exprs.extend(alerts());
    let (mut missing, mut scraped, mut registered) = (Vec::new(), 0, 0);
    for (place, expr) in &exprs {
        let names = promql_metrics(expr);
        assert!(!names.is_empty(), "{place}: no metric in {expr}");
        for name in names {
            if exported.contains(&name) {
                scraped += 1;
            } else if of_a_family(&name, &families) {
                registered += 1;
            } else {
                missing.push(format!("{place}: {name}"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "metrics the gateway does not export: {missing:#?}"
    );
    println!(
        "{} expressions: {scraped} metric names with series in the scrape, {registered} of families registered but without series here",
        exprs.len()
    );

    // The served certificate's time left: rcgen's default notAfter, minus now.
    let not_after = rcgen::CertificateParams::default()
        .not_after
        .unix_timestamp();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let line = metrics
        .lines()
        .find(|l| {
            l.starts_with("leafgate_certificate_expiry_seconds{") && l.contains(r#"listener="web""#)
        })
        .unwrap_or_else(|| panic!("no certificate expiry series in {metrics}"));
    assert!(
        line.contains(r#"listener="web""#) && line.contains(r#"hosts="*""#),
        "{line}"
    );
    let left: i64 = line.rsplit(' ').next().unwrap().parse().unwrap();
    assert!(
        (not_after - now - left).abs() <= 5,
        "{line}: {} s left expected",
        not_after - now
    );
}
