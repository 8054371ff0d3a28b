//! The Gateway API kinds against the real kubectl (every binary `kubesim::kubectl::all`
//! finds), as kube-apiserver serves gateway-api v1.6.1's standard CRDs:
//! discovery as `kubectl api-resources` reads it; `kubectl apply` of the upstream
//! conformance manifests (`tests/fixtures/gateway-api`); `kubectl get` with the CRDs'
//! printer columns and schema defaults; the status subresource and `metadata.generation`;
//! kubectl's strategic patch refused as on custom resources; deletes; ReferenceGrant at
//! both versions; and watches seeing ADDED, MODIFIED and DELETED.
//!
//! kubesim serves no OpenAPI documents, so kubectl's client-side validation is off
//! (`--validate=false`), as in `ingress`.

use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::common::{Fixture, fixture, kubectl, read_until, watching};
use kubesim::KubeSim;
use kubesim::testkit::{Finished, run};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

const TOKEN: &str = "t0ken-for-gateway-api";
const GROUP: &str = "gateway.networking.k8s.io";
const INFRA: &str = "gateway-conformance-infra";
const APPLY: [&str; 4] = ["apply", "--validate=false", "-f", "-"];

async fn ok(bin: &Path, dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let Finished { code, out, err } = run(kubectl(bin, dir, args), stdin).await;
    assert_eq!(
        code,
        Some(0),
        "{} {args:?} failed: {err}\n{out}",
        bin.display()
    );
    out
}

const MERGE: &[&str] = &["--type=merge"];
const STATUS_MERGE: &[&str] = &["--subresource=status", "--type=merge"];
const JSON_PATCH: &[&str] = &["--type=json"];

/// `kubectl patch` of `target` (kind, name and `-n <namespace>`) with `body` of the patch
/// type (and subresource) `how` names, which must succeed.
async fn patch(bin: &Path, dir: &Path, target: &[&str], how: &[&str], body: &str) -> String {
    let args = [&["patch"], target, how, &["-p", body]].concat();
    ok(bin, dir, &args, None).await
}

/// kubectl's stderr for a command that must fail.
async fn fails(bin: &Path, dir: &Path, args: &[&str]) -> String {
    let Finished { code, out, err } = run(kubectl(bin, dir, args), None).await;
    assert_ne!(code, Some(0), "{} {args:?} succeeded: {out}", bin.display());
    err
}

async fn json_of(bin: &Path, dir: &Path, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.extend(["-o", "json"]);
    let out = ok(bin, dir, &args, None).await;
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{args:?}: {e}: {out}"))
}

fn rows(out: &str) -> Vec<Vec<String>> {
    out.lines()
        .map(|l| l.split_whitespace().map(str::to_string).collect())
        .collect()
}

/// The tables of a multi-kind `kubectl get`, split at the blank lines between them.
fn tables(out: &str) -> Vec<Vec<Vec<String>>> {
    out.split("\n\n").map(rows).collect()
}

/// A file of `tests/fixtures/gateway-api`, the suite's class placeholder filled in.
fn fixture_file(name: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fixtures/gateway-api")
        .join(name);
    std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .replace("{GATEWAY_CLASS_NAME}", "leafgate")
}

/// The GatewayClass, the conformance base (Namespaces and Gateways) and three upstream
/// HTTPRoute tests' manifests, as one YAML stream.
fn manifests() -> String {
    [
        "gatewayclass.yaml",
        "base.yaml",
        "httproute-simple-same-namespace.yaml",
        "httproute-reference-grant.yaml",
        "httproute-hostname-intersection.yaml",
    ]
    .iter()
    .map(|f| fixture_file(f))
    .collect::<Vec<_>>()
    .join("\n---\n")
}

/// A fixture with `manifests()` applied by `bin`.
async fn applied(bin: &Path) -> Fixture {
    let f = fixture(TOKEN).await;
    ok(bin, f.dir.path(), &APPLY, Some(manifests().as_bytes())).await;
    f
}

fn stored(sim: &KubeSim, version: &str, kind: &str, ns: &str, name: &str) -> Value {
    let res = kubesim::api::resource_of(&format!("{GROUP}/{version}"), kind).unwrap();
    sim.store().get(res, ns, name).unwrap()
}

#[tokio::test]
async fn discovery_lists_the_kinds_as_their_crds_declare_them() {
    let f = fixture(TOKEN).await;
    let dir = f.dir.path();
    for bin in kubesim::kubectl::all() {
        let out = ok(&bin, dir, &["api-resources", "--api-group", GROUP], None).await;
        let mut r = rows(&out);
        assert_eq!(
            r.remove(0),
            ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
            "{out}"
        );
        r.sort();
        let v1 = format!("{GROUP}/v1");
        assert_eq!(
            r,
            [
                vec!["gatewayclasses", "gc", &v1, "false", "GatewayClass"],
                vec!["gateways", "gtw", &v1, "true", "Gateway"],
                vec!["httproutes", &v1, "true", "HTTPRoute"],
                vec!["referencegrants", "refgrant", &v1, "true", "ReferenceGrant"],
            ],
            "{out}"
        );
        let versions = ok(&bin, dir, &["api-versions"], None).await;
        for v in ["v1", "v1beta1"] {
            assert!(
                versions.lines().any(|l| l == format!("{GROUP}/{v}")),
                "{versions}"
            );
        }

        let group: Value = serde_json::from_str(
            &ok(
                &bin,
                dir,
                &["get", "--raw", &format!("/apis/{GROUP}")],
                None,
            )
            .await,
        )
        .unwrap();
        assert_eq!(group["preferredVersion"]["version"], "v1", "{group}");
        assert_eq!(
            group["versions"],
            json!([{"groupVersion": format!("{GROUP}/v1"), "version": "v1"},
                   {"groupVersion": format!("{GROUP}/v1beta1"), "version": "v1beta1"}])
        );
        for version in ["v1", "v1beta1"] {
            let list: Value = serde_json::from_str(
                &ok(
                    &bin,
                    dir,
                    &["get", "--raw", &format!("/apis/{GROUP}/{version}")],
                    None,
                )
                .await,
            )
            .unwrap();
            let resources = list["resources"].as_array().unwrap();
            let mut names: Vec<&str> = resources
                .iter()
                .map(|r| r["name"].as_str().unwrap())
                .collect();
            names.sort();
            assert_eq!(
                names,
                [
                    "gatewayclasses",
                    "gatewayclasses/status",
                    "gateways",
                    "gateways/status",
                    "httproutes",
                    "httproutes/status",
                    "referencegrants"
                ],
                "ReferenceGrant has no status subresource: {list}"
            );
            let by_name = |n: &str| resources.iter().find(|r| r["name"] == n).unwrap();
            let gw = by_name("gateways");
            assert_eq!(
                gw["verbs"],
                json!([
                    "delete",
                    "deletecollection",
                    "get",
                    "list",
                    "patch",
                    "create",
                    "update",
                    "watch"
                ])
            );
            assert_eq!(gw["categories"], json!(["gateway-api"]));
            assert_eq!(gw["singularName"], "gateway");
            let status = by_name("gateways/status");
            assert_eq!(status["verbs"], json!(["get", "patch", "update"]));
            assert_eq!(status["kind"], "Gateway");
            assert_eq!(by_name("gatewayclasses")["namespaced"], false);
            assert!(by_name("httproutes").get("shortNames").is_none());
        }
    }
}

#[tokio::test]
async fn apply_the_conformance_manifests_and_get_them() {
    for bin in kubesim::kubectl::all() {
        let f = fixture(TOKEN).await;
        let dir = f.dir.path();
        let out = ok(&bin, dir, &APPLY, Some(manifests().as_bytes())).await;
        let created = |kind: &str| {
            out.lines()
                .filter(|l| l.starts_with(&format!("{kind}.")) && l.ends_with(" created"))
                .count()
        };
        assert_eq!(created("gatewayclass"), 1, "{out}");
        assert_eq!(created("gateway"), 6, "{out}");
        assert_eq!(created("httproute"), 8, "{out}");
        assert_eq!(created("referencegrant"), 1, "{out}");
        assert_eq!(
            out.lines().filter(|l| l.starts_with("namespace/")).count(),
            3
        );

        // The printer columns, as the CRDs declare them. Nobody has written status yet, so
        // ACCEPTED and PROGRAMMED show the CRDs' default conditions; ADDRESS is empty.
        let out = ok(
            &bin,
            dir,
            &["get", "gatewayclass,gateway,httproute,referencegrant", "-A"],
            None,
        )
        .await;
        let t = tables(&out);
        assert_eq!(t.len(), 4, "{out}");
        assert_eq!(t[0][0], ["NAME", "CONTROLLER", "ACCEPTED", "AGE"], "{out}");
        assert_eq!(
            t[0][1][..3],
            [
                "gatewayclass.gateway.networking.k8s.io/leafgate",
                "leafgate.io/gateway-controller",
                "Unknown"
            ]
        );
        assert_eq!(
            t[1][0],
            ["NAMESPACE", "NAME", "CLASS", "ADDRESS", "PROGRAMMED", "AGE"],
            "{out}"
        );
        assert_eq!(t[1].len(), 7, "{out}");
        assert_eq!(
            t[1][1][..4],
            [
                INFRA,
                "gateway.gateway.networking.k8s.io/all-namespaces",
                "leafgate",
                "Unknown"
            ],
            "{out}"
        );
        assert_eq!(t[2][0], ["NAMESPACE", "NAME", "HOSTNAMES", "AGE"], "{out}");
        assert_eq!(t[2].len(), 9, "{out}");
        let route = |name: &str| {
            t[2].iter()
                .find(|r| r[1] == format!("httproute.gateway.networking.k8s.io/{name}"))
                .unwrap_or_else(|| panic!("{name} in {out}"))
                .clone()
        };
        // `.spec.hostnames` is a list: the cell is its JSON.
        assert_eq!(
            route("specific-host-matches-listener-specific-host")[2],
            r#"["non.matching.com","*.nonmatchingwildcard.io","very.specific.com"]"#
        );
        assert_eq!(
            route("gateway-conformance-infra-test").len(),
            3,
            "no hostnames, an empty cell"
        );
        assert_eq!(t[3][0], ["NAMESPACE", "NAME", "AGE"], "{out}");
        assert_eq!(
            t[3][1][..2],
            [
                "gateway-conformance-web-backend",
                "referencegrant.gateway.networking.k8s.io/reference-grant"
            ]
        );

        // DESCRIPTION is a priority-1 column: `-o wide` only.
        let out = ok(&bin, dir, &["get", "gc", "-o", "wide"], None).await;
        let first = out.lines().next().unwrap();
        assert!(first.ends_with("DESCRIPTION"), "{out}");
        assert!(
            out.contains("leafgate, a WebAssembly-pluggable edge gateway"),
            "{out}"
        );
        let out = ok(&bin, dir, &["get", "gc"], None).await;
        assert!(!out.contains("DESCRIPTION"), "{out}");

        // The short names and the category.
        let out = ok(
            &bin,
            dir,
            &["get", "gtw,refgrant", "-A", "-o", "name"],
            None,
        )
        .await;
        assert_eq!(out.lines().count(), 7, "{out}");
        let out = ok(&bin, dir, &["get", "gateway-api", "-A", "-o", "name"], None).await;
        assert_eq!(out.lines().count(), 16, "{out}");

        // The object as kubectl prints it: generation 1, the CRD's defaults filled in.
        let yaml = ok(
            &bin,
            dir,
            &[
                "get",
                "gateway",
                "same-namespace",
                "-n",
                INFRA,
                "-o",
                "yaml",
            ],
            None,
        )
        .await;
        for want in [
            "apiVersion: gateway.networking.k8s.io/v1",
            "kind: Gateway",
            "generation: 1",
            "gatewayClassName: leafgate",
            "message: Waiting for controller",
            "reason: Pending",
            "type: Programmed",
        ] {
            assert!(yaml.contains(want), "{want:?} in {yaml}");
        }
        let gw = json_of(
            &bin,
            dir,
            &[
                "get",
                "gateway",
                "same-namespace-with-https-listener",
                "-n",
                INFRA,
            ],
        )
        .await;
        let listener = &gw["spec"]["listeners"][0];
        assert_eq!(listener["tls"]["mode"], "Terminate");
        assert_eq!(
            listener["tls"]["certificateRefs"][0],
            json!({"group": "", "kind": "Secret", "name": "tls-validity-checks-certificate", "namespace": INFRA})
        );
        let route = json_of(
            &bin,
            dir,
            &["get", "httproute", "reference-grant", "-n", INFRA],
        )
        .await;
        assert_eq!(
            route["spec"],
            json!({
                "parentRefs": [{"group": GROUP, "kind": "Gateway", "name": "same-namespace"}],
                "rules": [{
                    "backendRefs": [{"group": "", "kind": "Service", "name": "web-backend",
                                     "namespace": "gateway-conformance-web-backend",
                                     "port": 8080, "weight": 1}],
                    "matches": [{"path": {"type": "PathPrefix", "value": "/"}}]
                }]
            })
        );
        assert!(route.get("status").is_none(), "{route}");

        // ReferenceGrant at both versions, one object stored at v1beta1.
        let get_grant = |resource: &'static str| {
            let bin = bin.clone();
            async move {
                json_of(
                    &bin,
                    dir,
                    &[
                        "get",
                        resource,
                        "reference-grant",
                        "-n",
                        "gateway-conformance-web-backend",
                    ],
                )
                .await
            }
        };
        let v1 = get_grant("referencegrants").await;
        let beta = get_grant("referencegrants.v1beta1.gateway.networking.k8s.io").await;
        assert_eq!(v1["apiVersion"], "gateway.networking.k8s.io/v1");
        assert_eq!(beta["apiVersion"], "gateway.networking.k8s.io/v1beta1");
        assert_eq!(v1["spec"], beta["spec"]);
        assert_eq!(v1["metadata"]["uid"], beta["metadata"]["uid"]);
        let in_store = stored(
            &f.sim,
            "v1",
            "ReferenceGrant",
            "gateway-conformance-web-backend",
            "reference-grant",
        );
        assert_eq!(in_store["apiVersion"], "gateway.networking.k8s.io/v1beta1");
        let beta_gw = json_of(
            &bin,
            dir,
            &[
                "get",
                "gateways.v1beta1.gateway.networking.k8s.io",
                "same-namespace",
                "-n",
                INFRA,
            ],
        )
        .await;
        assert_eq!(beta_gw["apiVersion"], "gateway.networking.k8s.io/v1beta1");

        // The same manifests again store nothing. kubectl's JSON merge patch replaces whole
        // lists, so objects whose list items the schema defaults (listeners' `tls.mode`,
        // rules' `matches`) are sent their lists again and reported "configured"; defaulted
        // once more, they are what is stored, and no write happens.
        let rv = f.sim.store().resource_version();
        let out = ok(&bin, dir, &APPLY, Some(manifests().as_bytes())).await;
        for name in [
            "gatewayclass.gateway.networking.k8s.io/leafgate",
            "gateway.gateway.networking.k8s.io/same-namespace",
            "referencegrant.gateway.networking.k8s.io/reference-grant",
        ] {
            assert!(
                out.contains(&format!("{name} unchanged\n")),
                "{name}: {out}"
            );
        }
        assert!(
            out.contains(
                "gateway.gateway.networking.k8s.io/same-namespace-with-https-listener configured\n"
            ),
            "{out}"
        );
        assert_eq!(f.sim.store().resource_version(), rv, "{out}");
    }
}

#[tokio::test]
async fn status_subresource_and_generation() {
    for bin in kubesim::kubectl::all() {
        let f = applied(&bin).await;
        let dir = f.dir.path();
        let get_gw = || {
            json_of(
                &bin,
                dir,
                &["get", "gateway", "same-namespace", "-n", INFRA],
            )
        };

        // A controller's status write: status changes, spec and generation do not (the
        // spec in the patch is ignored by the status subresource).
        let status = json!({
            "status": {
                "addresses": [{"type": "IPAddress", "value": "10.0.0.10"},
                              {"type": "IPAddress", "value": "10.0.0.11"}],
                "conditions": [
                    {"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                     "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"},
                    {"type": "Programmed", "status": "True", "reason": "Programmed", "message": "",
                     "observedGeneration": 1, "lastTransitionTime": "2026-01-01T00:00:00Z"}]
            },
            "spec": {"gatewayClassName": "other"}
        })
        .to_string();
        let patch_status = || {
            patch(
                &bin,
                dir,
                &["gateway", "same-namespace", "-n", INFRA],
                STATUS_MERGE,
                &status,
            )
        };
        patch_status().await;
        let gw = get_gw().await;
        assert_eq!(gw["metadata"]["generation"], 1, "{gw}");
        assert_eq!(gw["spec"]["gatewayClassName"], "leafgate");
        assert_eq!(gw["status"]["addresses"][1]["value"], "10.0.0.11");
        assert_eq!(gw["status"]["conditions"][1]["status"], "True");
        let r = rows(
            &ok(
                &bin,
                dir,
                &["get", "gateway", "same-namespace", "-n", INFRA],
                None,
            )
            .await,
        );
        // ADDRESS is the first address: the table convertor prints the first result.
        assert_eq!(
            r[1][..4],
            ["same-namespace", "leafgate", "10.0.0.10", "True"],
            "{r:?}"
        );

        // The same status again stores nothing.
        let rv = f.sim.store().resource_version();
        patch_status().await;
        assert_eq!(f.sim.store().resource_version(), rv, "a no-op status write");

        // A spec change (`kubectl edit` writes a merge patch on custom resources) bumps the
        // generation; the status in it is ignored.
        let edit = r#"{"spec":{"listeners":[{"name":"http","port":8080,"protocol":"HTTP"}]},"status":{"addresses":[]}}"#;
        patch(
            &bin,
            dir,
            &["gateway", "same-namespace", "-n", INFRA],
            MERGE,
            edit,
        )
        .await;
        let gw = get_gw().await;
        assert_eq!(gw["metadata"]["generation"], 2, "{gw}");
        assert_eq!(gw["spec"]["listeners"][0]["port"], 8080);
        assert_eq!(
            gw["spec"]["listeners"][0]["allowedRoutes"],
            json!({"namespaces": {"from": "Same"}}),
            "defaulted again"
        );
        assert_eq!(gw["status"]["addresses"][0]["value"], "10.0.0.10");

        // Metadata alone does not.
        ok(
            &bin,
            dir,
            &[
                "label",
                "gateway",
                "same-namespace",
                "-n",
                INFRA,
                "team=edge",
            ],
            None,
        )
        .await;
        let gw = get_gw().await;
        assert_eq!(gw["metadata"]["labels"]["team"], "edge");
        assert_eq!(gw["metadata"]["generation"], 2, "{gw}");

        // A JSON patch of the spec does.
        let op = r#"[{"op":"replace","path":"/spec/listeners/0/port","value":8081}]"#;
        patch(
            &bin,
            dir,
            &["gateway", "same-namespace", "-n", INFRA],
            JSON_PATCH,
            op,
        )
        .await;
        assert_eq!(get_gw().await["metadata"]["generation"], 3);

        // kubectl's default patch is strategic, which custom resources refuse (415).
        let err = fails(
            &bin,
            dir,
            &[
                "patch",
                "gateway",
                "same-namespace",
                "-n",
                INFRA,
                "-p",
                r#"{"spec":{"gatewayClassName":"x"}}"#,
            ],
        )
        .await;
        assert!(
            err.contains("application/strategic-merge-patch+json is not supported by gateway.networking.k8s.io/v1, Kind=Gateway")
                && err.contains("accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"),
            "{err}"
        );

        // Apply of a changed manifest patches the spec and keeps the status.
        let changed = fixture_file("httproute-simple-same-namespace.yaml")
            .replace("port: 8080", "port: 9090");
        let out = ok(&bin, dir, &APPLY, Some(changed.as_bytes())).await;
        assert!(
            out.contains(
                "httproute.gateway.networking.k8s.io/gateway-conformance-infra-test configured"
            ),
            "{out}"
        );
        let route = json_of(
            &bin,
            dir,
            &[
                "get",
                "httproute",
                "gateway-conformance-infra-test",
                "-n",
                INFRA,
            ],
        )
        .await;
        assert_eq!(route["metadata"]["generation"], 2, "{route}");
        assert_eq!(route["spec"]["rules"][0]["backendRefs"][0]["port"], 9090);

        // Route and class status, as the leader writes them.
        let parents = json!({"status": {"parents": [{
            "parentRef": {"name": "same-namespace"},
            "controllerName": "leafgate.io/gateway-controller",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted", "message": "",
                            "observedGeneration": 2, "lastTransitionTime": "2026-01-01T00:00:00Z"}]}]}})
        .to_string();
        patch(
            &bin,
            dir,
            &["httproute", "gateway-conformance-infra-test", "-n", INFRA],
            STATUS_MERGE,
            &parents,
        )
        .await;
        let route = json_of(
            &bin,
            dir,
            &[
                "get",
                "httproute",
                "gateway-conformance-infra-test",
                "-n",
                INFRA,
            ],
        )
        .await;
        assert_eq!(route["metadata"]["generation"], 2);
        assert_eq!(
            route["status"]["parents"][0]["parentRef"],
            json!({"group": GROUP, "kind": "Gateway", "name": "same-namespace"}),
            "the status schema's defaults too"
        );
        let accepted = r#"{"status":{"conditions":[{"type":"Accepted","status":"True","reason":"Accepted","message":"","observedGeneration":1,"lastTransitionTime":"2026-01-01T00:00:00Z"}]}}"#;
        patch(
            &bin,
            dir,
            &["gatewayclass", "leafgate"],
            STATUS_MERGE,
            accepted,
        )
        .await;
        let r = rows(&ok(&bin, dir, &["get", "gatewayclass"], None).await);
        assert_eq!(
            r[1][..3],
            ["leafgate", "leafgate.io/gateway-controller", "True"],
            "{r:?}"
        );

        // ReferenceGrant has no status subresource.
        let err = fails(
            &bin,
            dir,
            &["get", "--raw", &format!("/apis/{GROUP}/v1/namespaces/gateway-conformance-web-backend/referencegrants/reference-grant/status")],
        )
        .await;
        assert!(err.contains("NotFound"), "{err}");

        // A PUT without a resourceVersion is refused: custom resources allow no
        // unconditional update. (`kubectl replace` fills it in; `--raw` sends the file.)
        let mut gw = get_gw().await;
        gw["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("resourceVersion");
        let file = dir.join("gateway.json");
        std::fs::write(&file, gw.to_string()).unwrap();
        let path = format!("/apis/{GROUP}/v1/namespaces/{INFRA}/gateways/same-namespace");
        let err = fails(
            &bin,
            dir,
            &["replace", "--raw", &path, "-f", file.to_str().unwrap()],
        )
        .await;
        assert!(
            err.contains(r#"The gateways "same-namespace" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update"#),
            "{err}"
        );
        ok(
            &bin,
            dir,
            &["replace", "--validate=false", "-f", file.to_str().unwrap()],
            None,
        )
        .await;

        // Delete.
        let out = ok(
            &bin,
            dir,
            &["delete", "gateway", "same-namespace", "-n", INFRA],
            None,
        )
        .await;
        assert!(
            out.starts_with(r#"gateway.gateway.networking.k8s.io "same-namespace" deleted"#),
            "{out}"
        );
        let err = fails(
            &bin,
            dir,
            &["get", "gateway", "same-namespace", "-n", INFRA],
        )
        .await;
        assert!(
            err.contains(r#"Error from server (NotFound): gateways.gateway.networking.k8s.io "same-namespace" not found"#),
            "{err}"
        );
        ok(&bin, dir, &["delete", "gatewayclass", "leafgate"], None).await;
        let r = rows(&ok(&bin, dir, &["get", "gatewayclass"], None).await);
        assert!(r.is_empty(), "{r:?}");
    }
}

#[tokio::test]
async fn watch_sees_added_modified_deleted() {
    for bin in kubesim::kubectl::all() {
        let f = applied(&bin).await;
        let dir = f.dir.path();
        // One watcher prints the table with its events, one the events at v1beta1.
        let spawn = |args: &[&str]| {
            kubectl(&bin, dir, args)
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        };
        let mut table = spawn(&[
            "get",
            "httproute",
            "-n",
            INFRA,
            "-w",
            "--output-watch-events",
        ]);
        let mut beta = spawn(&[
            "get",
            "httproutes.v1beta1.gateway.networking.k8s.io",
            "-n",
            INFRA,
            "-w",
            "--output-watch-events",
            "-o",
            "jsonpath={.type} {.object.apiVersion} {.object.metadata.name} {.object.metadata.generation}{\"\\n\"}",
        ]);
        let mut t = BufReader::new(table.stdout.take().unwrap()).lines();
        let mut b = BufReader::new(beta.stdout.take().unwrap()).lines();
        let header = read_until(&mut t, |_| true).await;
        assert_eq!(
            rows(&header)[0],
            ["EVENT", "NAME", "HOSTNAMES", "AGE"],
            "{header}"
        );
        read_until(&mut t, |l| {
            l.starts_with("ADDED") && l.contains(" reference-grant ")
        })
        .await;
        read_until(&mut b, |l| {
            l == "ADDED gateway.networking.k8s.io/v1beta1 reference-grant 1"
        })
        .await;
        let base = format!("/apis/{GROUP}/v1/namespaces/{INFRA}/httproutes");
        watching(&f.sim, &base, 1).await;
        watching(
            &f.sim,
            &format!("/apis/{GROUP}/v1beta1/namespaces/{INFRA}/httproutes"),
            1,
        )
        .await;

        let route = r#"{"apiVersion":"gateway.networking.k8s.io/v1","kind":"HTTPRoute",
            "metadata":{"name":"watched","namespace":"gateway-conformance-infra"},
            "spec":{"parentRefs":[{"name":"same-namespace"}],"hostnames":["watched.example"],
                    "rules":[{"backendRefs":[{"name":"infra-backend-v1","port":8080}]}]}}"#;
        ok(&bin, dir, &APPLY, Some(route.as_bytes())).await;
        let line = read_until(&mut t, |l| {
            l.starts_with("ADDED") && l.contains(" watched ")
        })
        .await;
        assert!(line.contains(r#"["watched.example"]"#), "{line}");
        read_until(&mut b, |l| {
            l == "ADDED gateway.networking.k8s.io/v1beta1 watched 1"
        })
        .await;

        let spec = r#"{"spec":{"hostnames":["moved.example"]}}"#;
        patch(
            &bin,
            dir,
            &["httproute", "watched", "-n", INFRA],
            MERGE,
            spec,
        )
        .await;
        let line = read_until(&mut t, |l| {
            l.starts_with("MODIFIED") && l.contains(" watched ")
        })
        .await;
        assert!(line.contains(r#"["moved.example"]"#), "{line}");
        read_until(&mut b, |l| {
            l == "MODIFIED gateway.networking.k8s.io/v1beta1 watched 2"
        })
        .await;

        // A status write is an event too, at the same generation.
        let status = r#"{"status":{"parents":[]}}"#;
        patch(
            &bin,
            dir,
            &["httproute", "watched", "-n", INFRA],
            STATUS_MERGE,
            status,
        )
        .await;
        read_until(&mut b, |l| {
            l == "MODIFIED gateway.networking.k8s.io/v1beta1 watched 2"
        })
        .await;

        ok(
            &bin,
            dir,
            &["delete", "httproute", "watched", "-n", INFRA],
            None,
        )
        .await;
        read_until(&mut t, |l| {
            l.starts_with("DELETED") && l.contains(" watched ")
        })
        .await;
        read_until(&mut b, |l| {
            l == "DELETED gateway.networking.k8s.io/v1beta1 watched 2"
        })
        .await;
        table.kill().await.unwrap();
        beta.kill().await.unwrap();
    }
}

#[tokio::test]
async fn server_side_apply() {
    for bin in kubesim::kubectl::all() {
        let f = fixture(TOKEN).await;
        let dir = f.dir.path();
        let ssa = ["apply", "--server-side", "--validate=false", "-f", "-"];
        let objects =
            [fixture_file("gatewayclass.yaml"), fixture_file("base.yaml")].join("\n---\n");
        let out = ok(&bin, dir, &ssa, Some(objects.as_bytes())).await;
        assert!(
            out.contains("gatewayclass.gateway.networking.k8s.io/leafgate serverside-applied")
                && out.contains(
                    "gateway.gateway.networking.k8s.io/all-namespaces serverside-applied"
                ),
            "{out}"
        );
        let gw = json_of(
            &bin,
            dir,
            &["get", "gateway", "all-namespaces", "-n", INFRA],
        )
        .await;
        assert_eq!(gw["metadata"]["generation"], 1, "{gw}");
        assert_eq!(gw["status"]["conditions"][0]["reason"], "Pending");

        // The same again stores nothing; a changed port is a new generation.
        let rv = f.sim.store().resource_version();
        ok(&bin, dir, &ssa, Some(objects.as_bytes())).await;
        assert_eq!(f.sim.store().resource_version(), rv);
        let moved = objects.replace("port: 80\n", "port: 8080\n");
        ok(&bin, dir, &ssa, Some(moved.as_bytes())).await;
        let gw = json_of(
            &bin,
            dir,
            &["get", "gateway", "all-namespaces", "-n", INFRA],
        )
        .await;
        assert_eq!(gw["metadata"]["generation"], 2, "{gw}");
        assert_eq!(gw["spec"]["listeners"][0]["port"], 8080);
    }
}

/// kube-apiserver labels every Namespace `kubernetes.io/metadata.name: <name>`
/// (`SetDefaults_Namespace`), on create and on every update, a written value replaced; a
/// selector on that label (as a listener's `allowedRoutes.namespaces.selector`) finds it.
#[tokio::test]
async fn namespaces_are_labelled_with_their_name() {
    const LABEL: &str = "kubernetes.io/metadata.name";
    for bin in kubesim::kubectl::all() {
        let f = applied(&bin).await;
        let dir = f.dir.path();
        let label = |ns: Value| ns["metadata"]["labels"][LABEL].clone();
        // From the base: its own labels kept, the name's added.
        let infra = json_of(&bin, dir, &["get", "namespace", INFRA]).await;
        assert_eq!(label(infra.clone()), INFRA);
        assert_eq!(infra["metadata"]["labels"]["gateway-conformance"], "infra");
        ok(
            &bin,
            dir,
            &APPLY,
            Some(b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: plain\n"),
        )
        .await;
        assert_eq!(
            label(json_of(&bin, dir, &["get", "namespace", "plain"]).await),
            "plain"
        );
        // A value written for it does not stay, by label or by patch.
        ok(
            &bin,
            dir,
            &[
                "label",
                "namespace",
                "plain",
                &format!("{LABEL}=other"),
                "--overwrite",
            ],
            None,
        )
        .await;
        patch(
            &bin,
            dir,
            &["namespace", "plain"],
            MERGE,
            &json!({"metadata": {"labels": {LABEL: "forged", "team": "a"}}}).to_string(),
        )
        .await;
        let plain = json_of(&bin, dir, &["get", "namespace", "plain"]).await;
        assert_eq!(label(plain.clone()), "plain");
        assert_eq!(plain["metadata"]["labels"]["team"], "a");
        let out = ok(
            &bin,
            dir,
            &[
                "get",
                "namespaces",
                "-l",
                &format!("{LABEL}=plain"),
                "-o",
                "name",
            ],
            None,
        )
        .await;
        assert_eq!(out.trim(), "namespace/plain", "{out}");
    }
}
