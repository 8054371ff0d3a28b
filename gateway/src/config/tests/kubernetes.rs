//! `[kubernetes]`, `[kubernetes.ingress]`, `[kubernetes.gateway]` and `[[virtual_node]]`
//! through `Config::parse`.

use std::path::Path;

use crate::config::{
    Config, DEFAULT_GATEWAY_CONTROLLER, DEFAULT_INGRESS_CLASS, HostOwner, PublishAddress,
};

const BASE: &str = "[[listener]]\nname = \"kubelet\"\nbind = \"127.0.0.1:0\"\n[[leaf]]\nname = \"leaf-1\"\nkubeconfig = \"/nonexistent\"\n";

fn errors(src: &str) -> String {
    Config::parse(Path::new("t.toml"), src)
        .unwrap_err()
        .to_string()
}

#[test]
fn errors_point_at_the_key() {
    let e = errors(&format!(
        "{BASE}[kubernetes]\nkubeconfig = \"/nonexistent-root\"\ngateway_address = {{ env = \"LEAFGATE_TEST_UNSET_VAR\" }}\nnode_api_listener = \"kubelet\"\npreferred_address_types = [\"InternalIP\", \"Bogus\"]\n"
    ));
    assert!(
        e.contains("t.toml:8:14: kubernetes.kubeconfig: cannot read"),
        "{e}"
    );
    let e = errors(&format!(
        "{BASE}[kubernetes]\nkubeconfig = \"/proc/self/cmdline\"\ngateway_address = {{ env = \"LEAFGATE_TEST_UNSET_VAR\" }}\nnode_api_listener = \"nope\"\n"
    ));
    assert!(e.contains("kubernetes.kubeconfig"), "{e}");
    let e = errors(&format!(
        "{BASE}[[virtual_node]]\nleaf = \"leaf-2\"\nmode = \"own\"\ntaints = [\"x\"]\n"
    ));
    assert!(
        e.contains("virtual_node[0]: `mode = \"own\"` needs `name`"),
        "{e}"
    );
    assert!(
        e.contains("t.toml:8:8: virtual_node[0].leaf: no [[leaf]]"),
        "{e}"
    );
    assert!(e.contains("needs [kubernetes]"), "{e}");
    let e = errors(&format!(
        "{BASE}[[virtual_node]]\nleaf = \"leaf-1\"\nmode = \"sideways\"\n"
    ));
    assert!(e.contains("t.toml:9:8: virtual_node[0].mode"), "{e}");
    let twice = "[[virtual_node]]\nname = \"vn\"\nleaf = \"leaf-1\"\nmode = \"own\"\n";
    let e = errors(&format!("{BASE}{twice}{twice}"));
    assert!(
        e.contains(
            "t.toml:12:8: virtual_node[1].name: duplicate virtual node name `vn` (first at 8:8)"
        ),
        "{e}"
    );
}

fn root_kubeconfig() -> tempfile::NamedTempFile {
    let mut f = tempfile::NamedTempFile::new().unwrap();
    std::io::Write::write_all(
        &mut f,
        b"apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: http://127.0.0.1:1\ncontexts:\n- name: x\n  context:\n    cluster: c\n    user: u\nusers:\n- name: u\n  user: {}\ncurrent-context: x\n",
    )
    .unwrap();
    f
}

#[test]
fn ingress_alone_needs_no_node_keys_and_defaults_its_settings() {
    let kc = root_kubeconfig();
    let src = format!(
        "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[[listener]]\nname = \"api\"\nbind = \"127.0.0.1:0\"\nkind = \"kube-api\"\ntls = {{ cert = \"/nonexistent\", key = \"/nonexistent\" }}\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\n",
        kc.path().display()
    );
    // The kube-api listener's missing files fail the config; what matters here is
    // that nothing about [kubernetes] does.
    let e = errors(&src);
    assert!(!e.contains("kubernetes"), "{e}");
    let src = format!(
        "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\npublish_address = \"LB.example.com\"\n",
        kc.path().display()
    );
    let c = Config::parse(Path::new("t.toml"), &src).unwrap();
    let k = c.kubernetes.unwrap();
    assert_eq!((k.gateway_address, k.node_api_listener), (None, None));
    let i = k.ingress.unwrap();
    assert_eq!(i.class, DEFAULT_INGRESS_CLASS);
    assert_eq!(i.listeners, vec!["web".to_string()]);
    assert_eq!(i.namespaces, None);
    assert_eq!(
        i.publish_address,
        Some(PublishAddress::Hostname("lb.example.com".into()))
    );
    // Only pod endpoints unless the operator says otherwise.
    assert!(i.deny_backends.is_empty() && i.allow_backends.is_empty());
    assert!(!i.allow_unmanaged_endpointslices);
    assert_eq!(i.host_owner, HostOwner::Namespace);
}

#[test]
fn host_owner_is_the_namespace_or_the_tenant() {
    let kc = root_kubeconfig();
    let src = |value: &str| {
        format!(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\nhost_owner = {value}\n",
            kc.path().display()
        )
    };
    for (value, owner) in [
        ("\"namespace\"", HostOwner::Namespace),
        ("\"tenant\"", HostOwner::Tenant),
    ] {
        let c = Config::parse(Path::new("t.toml"), &src(value)).unwrap();
        assert_eq!(c.kubernetes.unwrap().ingress.unwrap().host_owner, owner);
    }
    let e = errors(&src("\"team\""));
    assert!(
        e.contains("t.toml:7:14: kubernetes.ingress.host_owner: unknown variant `team`"),
        "{e}"
    );
}

#[test]
fn backend_ranges_parse_and_errors_name_their_key() {
    let kc = root_kubeconfig();
    let src = |keys: &str| {
        format!(
            "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\n{keys}",
            kc.path().display()
        )
    };
    let c = Config::parse(
        Path::new("t.toml"),
        &src("deny_backends = [\"10.96.0.0/12\", \"fd00::1\"]\nallow_backends = [\"127.0.0.0/8\"]\nallow_unmanaged_endpointslices = true\n"),
    )
    .unwrap();
    let i = c.kubernetes.unwrap().ingress.unwrap();
    let text =
        |v: &[crate::config::cidr::Cidr]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(text(&i.deny_backends), ["10.96.0.0/12", "fd00::1/128"]);
    assert_eq!(text(&i.allow_backends), ["127.0.0.0/8"]);
    assert!(i.allow_unmanaged_endpointslices);
    let e = Config::parse(
        Path::new("t.toml"),
        &src("deny_backends = [\"10.0.0.0/8\", \"10.0.0.1/8\"]\nallow_backends = [\"lo\"]\n"),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains(
            "t.toml:7:32: kubernetes.ingress.deny_backends[1]: `10.0.0.1/8` has host bits set"
        ),
        "{e}"
    );
    assert!(
        e.contains("t.toml:8:19: kubernetes.ingress.allow_backends[0]: `lo` is not an address"),
        "{e}"
    );
}

#[test]
fn ingress_errors_name_their_key() {
    let kc = root_kubeconfig();
    let src = format!(
        "{BASE}[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.ingress]\nclass = \"\"\nnamespaces = [\"\"]\nlisteners = [\"web\", \"nope\"]\npublish_address = \"not an address!\"\n",
        kc.path().display()
    );
    let e = errors(&src);
    assert!(
        e.contains("t.toml:13:9: kubernetes.ingress.class: must not be empty"),
        "{e}"
    );
    assert!(
        e.contains("t.toml:14:15: kubernetes.ingress.namespaces[0]"),
        "{e}"
    );
    assert!(
        e.contains(
            "t.toml:15:21: kubernetes.ingress.listeners[1]: no [[listener]] is named `nope`"
        ),
        "{e}"
    );
    assert!(
        e.contains(
            "t.toml:16:19: kubernetes.ingress.publish_address: `not an address!` is neither"
        ),
        "{e}"
    );
}

#[test]
fn virtual_nodes_need_the_node_keys_reported_at_the_kubernetes_table() {
    let kc = root_kubeconfig();
    let src = format!(
        "{BASE}[kubernetes]\nkubeconfig = \"{}\"\n[[virtual_node]]\nname = \"vn\"\nleaf = \"leaf-1\"\nmode = \"own\"\n",
        kc.path().display()
    );
    let e = errors(&src);
    assert!(
        e.contains(":7:1: kubernetes.gateway_address: [[virtual_node]]s need"),
        "{e}"
    );
    assert!(
        e.contains(":7:1: kubernetes.node_api_listener: [[virtual_node]]s need"),
        "{e}"
    );
}

/// A config of one http listener and `[kubernetes.gateway]` with `keys`.
fn gateway_src(kc: &tempfile::NamedTempFile, keys: &str) -> String {
    format!(
        "[[listener]]\nname = \"web\"\nbind = \"127.0.0.1:0\"\n[kubernetes]\nkubeconfig = \"{}\"\n[kubernetes.gateway]\n{keys}",
        kc.path().display()
    )
}

#[test]
fn gateway_api_defaults_its_controller_and_parses_its_pool() {
    let kc = root_kubeconfig();
    let c = Config::parse(
        Path::new("t.toml"),
        &gateway_src(
            &kc,
            "addresses = [\"10.0.0.10\", \"127.0.5.0/24\", \"fd00::1\"]\n",
        ),
    )
    .unwrap();
    let k = c.kubernetes.unwrap();
    assert!(k.ingress.is_none());
    let g = k.gateway.unwrap();
    assert_eq!(g.controller_name, DEFAULT_GATEWAY_CONTROLLER);
    let text =
        |v: &[crate::config::cidr::Cidr]| v.iter().map(ToString::to_string).collect::<Vec<_>>();
    assert_eq!(
        text(&g.addresses),
        ["10.0.0.10/32", "127.0.5.0/24", "fd00::1/128"]
    );
    assert!(g.deny_backends.is_empty() && g.allow_backends.is_empty());
    assert!(!g.allow_unmanaged_endpointslices);
    assert!(g.http1_fast_path);
    let c = Config::parse(
        Path::new("t.toml"),
        &gateway_src(
            &kc,
            "controller_name = \"example.net/gateway-controller\"\naddresses = [\"10.0.0.10\"]\ndeny_backends = [\"10.96.0.0/12\"]\nallow_backends = [\"127.0.0.0/8\"]\nallow_unmanaged_endpointslices = true\nhttp1_fast_path = false\n",
        ),
    )
    .unwrap();
    let g = c.kubernetes.unwrap().gateway.unwrap();
    assert_eq!(g.controller_name, "example.net/gateway-controller");
    assert_eq!(text(&g.deny_backends), ["10.96.0.0/12"]);
    assert_eq!(text(&g.allow_backends), ["127.0.0.0/8"]);
    assert!(g.allow_unmanaged_endpointslices);
    assert!(!g.http1_fast_path);
}

#[test]
fn gateway_api_errors_point_at_the_key() {
    let kc = root_kubeconfig();
    let e = errors(&gateway_src(&kc, ""));
    assert!(
        e.contains("t.toml:6:1: kubernetes.gateway.addresses: missing"),
        "{e}"
    );
    let e = errors(&gateway_src(&kc, "addresses = []\n"));
    assert!(
        e.contains("t.toml:7:13: kubernetes.gateway.addresses: no address"),
        "{e}"
    );
    let e = errors(&gateway_src(
        &kc,
        "controller_name = \"leafgate.io\"\naddresses = [\"10.0.0.1/8\", \"0.0.0.0/0\", \"224.0.0.1\", \"10.1.0.0/16\", \"10.1.2.3\"]\n",
    ));
    assert!(
        e.contains("t.toml:7:19: kubernetes.gateway.controller_name: `leafgate.io` is not a Gateway API controller name"),
        "{e}"
    );
    assert!(
        e.contains("t.toml:8:14: kubernetes.gateway.addresses[0]: `10.0.0.1/8` has host bits set"),
        "{e}"
    );
    // The pool is judged as a whole only once every entry parses.
    assert!(!e.contains("overlaps"), "{e}");
    let e = errors(&gateway_src(
        &kc,
        "addresses = [\"0.0.0.0/0\", \"224.0.0.1\", \"10.1.0.0/16\", \"10.1.2.3\"]\ndeny_backends = [\"x\"]\nallow_backends = [\"10.0.0.0/33\"]\nbogus = 1\n",
    ));
    assert!(
        e.contains("t.toml:10:1: kubernetes.gateway.bogus: unknown field `bogus`"),
        "{e}"
    );
    let e = errors(&gateway_src(
        &kc,
        "addresses = [\"10.0.0.10\"]\nhttp1_fast_path = \"yes\"\n",
    ));
    assert!(
        e.contains("t.toml:8:19: kubernetes.gateway.http1_fast_path: invalid type: string \"yes\", expected a boolean"),
        "{e}"
    );
    let e = errors(&gateway_src(
        &kc,
        "addresses = [\"0.0.0.0/0\", \"224.0.0.1\", \"10.1.0.0/16\", \"10.1.2.3\"]\ndeny_backends = [\"x\"]\nallow_backends = [\"10.0.0.0/33\"]\n",
    ));
    for want in [
        "t.toml:7:14: kubernetes.gateway.addresses[0]: `0.0.0.0/0` is not an address a Gateway can be reached on",
        "t.toml:7:27: kubernetes.gateway.addresses[1]: `224.0.0.1/32` is not an address",
        "t.toml:7:55: kubernetes.gateway.addresses[3]: `10.1.2.3/32` overlaps `10.1.0.0/16` (at 7:40)",
        "t.toml:8:18: kubernetes.gateway.deny_backends[0]: `x` is not an address",
        "t.toml:9:19: kubernetes.gateway.allow_backends[0]: `10.0.0.0/33`: the prefix length must be 0 to 32",
    ] {
        assert!(e.contains(want), "{want}\nin\n{e}");
    }
}

#[test]
fn gateway_api_controller_names_are_domain_prefixed_paths() {
    let kc = root_kubeconfig();
    for good in ["a.b/c", "leafgate.io/gateway-controller", "x/y/z:1"] {
        let src = gateway_src(
            &kc,
            &format!("controller_name = \"{good}\"\naddresses = [\"10.0.0.1\"]\n"),
        );
        assert!(Config::parse(Path::new("t.toml"), &src).is_ok(), "{good}");
    }
    for bad in [
        "",
        "example.com",
        "Example.com/x",
        "-a.com/x",
        "a..b/x",
        "a.com/",
        "a.com/x y",
    ] {
        let e = errors(&gateway_src(
            &kc,
            &format!("controller_name = \"{bad}\"\naddresses = [\"10.0.0.1\"]\n"),
        ));
        assert!(
            e.contains("kubernetes.gateway.controller_name"),
            "{bad}: {e}"
        );
    }
}
