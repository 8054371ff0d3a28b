//! Config errors found by `Config::load` on a file on disk, each at its key and
//! line:column. Moved here from the end-to-end suite: they start no gateway.

use std::path::Path;

use crate::config::Config;

/// Writes `toml` as `leafgate.toml` in `dir` and loads it; the errors, one a line.
fn load_errors(dir: &Path, toml: &str) -> String {
    let path = dir.join("leafgate.toml");
    std::fs::write(&path, toml).unwrap();
    Config::load(&path).unwrap_err().to_string()
}

#[test]
fn a_kube_api_listener_without_tls_and_an_unreadable_tokens_file_are_config_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_errors(
        dir.path(),
        "[[listener]]\nname = \"kube\"\nbind = \"127.0.0.1:0\"\nkind = \"kube-api\"\n\n[[tenant]]\nname = \"acme\"\nnamespaces = [\"apps\"]\ntokens_file = \"missing.tokens\"\n",
    );
    assert!(err.contains("listener[0].kind"), "{err}");
    assert!(err.contains(":4:"), "the line of `kind`: {err}");
    assert!(err.contains("needs `tls`"), "{err}");
    assert!(err.contains("tenant[0].tokens_file"), "{err}");
    assert!(err.contains("missing.tokens"), "{err}");
}

#[test]
fn a_node_api_listener_without_client_ca_is_a_config_error_at_its_kind() {
    let dir = tempfile::tempdir().unwrap();
    let srv = rcgen::generate_simple_self_signed(vec!["leafgate.node".to_string()]).unwrap();
    std::fs::write(dir.path().join("srv.pem"), srv.cert.pem()).unwrap();
    std::fs::write(
        dir.path().join("srv-key.pem"),
        srv.signing_key.serialize_pem(),
    )
    .unwrap();
    let err = load_errors(
        dir.path(),
        "[[listener]]\nname = \"kubelet\"\nbind = \"127.0.0.1:0\"\nkind = \"node-api\"\ntls = { cert = \"srv.pem\", key = \"srv-key.pem\" }\n",
    );
    assert!(err.contains("listener[0].kind"), "{err}");
    assert!(err.contains(":4:"), "the line of `kind`: {err}");
    assert!(err.contains("client_ca"), "{err}");
}

#[test]
fn a_bad_trusted_proxy_range_is_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let err = load_errors(
        dir.path(),
        "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\ntrusted_proxies = [\"10.0.0.0/8\", \"10.1.2.3/8\"]\n",
    );
    assert!(err.contains("listener[0].trusted_proxies[1]"), "{err}");
    assert!(err.contains(":4:"), "names the line: {err}");
    assert!(err.contains("host bits"), "{err}");
}

#[test]
fn kubeconfig_problems_are_config_errors_at_the_leaf_key() {
    let dir = tempfile::tempdir().unwrap();
    let exec = "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\nusers:\n- name: eks\n  user:\n    exec:\n      apiVersion: client.authentication.k8s.io/v1beta1\n      command: aws\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: eks\ncurrent-context: c\n";
    std::fs::write(dir.path().join("exec.kubeconfig"), exec).unwrap();
    let path = dir.path().join("leafgate.toml");
    std::fs::write(
        &path,
        "[[leaf]]\nname = \"gone\"\nkubeconfig = \"missing.kubeconfig\"\n\
         [[leaf]]\nname = \"ctx\"\nkubeconfig = \"exec.kubeconfig\"\ncontext = \"nope\"\n\
         [[leaf]]\nname = \"exec\"\nkubeconfig = \"exec.kubeconfig\"\n",
    )
    .unwrap();
    // `leafgate check` prints exactly these, one a line.
    let errors = Config::load(&path).unwrap_err();
    let lines: Vec<String> = errors.0.iter().map(ToString::to_string).collect();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let file = path.display().to_string();
    assert!(
        lines[0].starts_with(&format!("{file}:3:14: leaf[0].kubeconfig: cannot read ")),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].starts_with(&format!(
            "{file}:7:11: leaf[1].context: context `nope` is not in "
        )),
        "{}",
        lines[1]
    );
    assert!(
        lines[2].starts_with(&format!(
            "{file}:10:14: leaf[2].kubeconfig: users[eks].user.exec: exec credential plugins are not supported"
        )),
        "{}",
        lines[2]
    );
}

#[test]
fn request_ids_take_a_header_name_leafgate_does_not_set_else_an_error_at_its_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    std::fs::write(
        &path,
        "[request_id]\nheader = \"X-Trace-Ref\"\nresponse = false\n",
    )
    .unwrap();
    let config = Config::load(&path).unwrap();
    let ids = config.request_id.expect("[request_id] gives requests IDs");
    assert_eq!((ids.header.as_str(), ids.response), ("x-trace-ref", false));
    std::fs::write(&path, "[request_id]\n").unwrap();
    let ids = Config::load(&path).unwrap().request_id.unwrap();
    assert_eq!((ids.header.as_str(), ids.response), ("x-request-id", true));
    std::fs::write(&path, "\n").unwrap();
    assert!(
        Config::load(&path).unwrap().request_id.is_none(),
        "off unless asked"
    );
    for (header, why) in [
        ("X Request", "not a header name"),
        ("X-Forwarded-For", "leafgate sets"),
        ("Content-Length", "leafgate sets"),
        ("", "not a header name"),
    ] {
        let err = load_errors(
            dir.path(),
            &format!("\n[request_id]\nheader = \"{header}\"\n"),
        );
        assert!(err.contains("request_id.header"), "{header}: {err}");
        assert!(err.contains(":3:"), "{header}: names the line: {err}");
        assert!(err.contains(why), "{header}: {err}");
    }
    let err = load_errors(dir.path(), "[request_id]\nheadr = \"X-Id\"\n");
    assert!(err.contains("headr"), "an unknown key: {err}");
}

#[test]
fn tracing_propagates_only_when_asked_and_takes_no_other_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("leafgate.toml");
    for (toml, on) in [
        ("[tracing]\npropagate = true\n", true),
        ("[tracing]\npropagate = false\n", false),
        ("[tracing]\n", false),
        ("\n", false),
    ] {
        std::fs::write(&path, toml).unwrap();
        assert_eq!(Config::load(&path).unwrap().propagate_trace, on, "{toml}");
    }
    let err = load_errors(dir.path(), "[tracing]\npropagate = \"yes\"\n");
    assert!(err.contains("propagate") && err.contains(":2:"), "{err}");
    let err = load_errors(dir.path(), "[tracing]\nexport = true\n");
    assert!(err.contains("export"), "{err}");
}
