//! A typed builder for the leafgate configs tests start gateways on, rendered to TOML by the
//! `toml` crate so quoting is always right (paths, regexes, dotted label keys) and no test
//! writes `{{ }}` escapes into a `format!` string.
//!
//! Each section is a small builder over a `toml::Table`: named methods for the keys tests
//! set often, and `set` for any other key with any serializable value (a `json!` literal
//! reads well for nested tables). The builder knows the config's shape, not its rules: it
//! never fills in a default the gateway would not, so a test still says everything it
//! relies on. Tests that check an error's `line:column` keep their literal TOML, since the
//! rendered layout (keys sorted, nested tables as `[a.b]` headers) is the `toml` crate's.

use std::fmt;
use std::path::Path;

use serde::Serialize;
use toml::{Table, Value};

/// Converts anything serializable (strings, numbers, arrays, `json!` objects, paths) to a
/// TOML value; panics on what TOML cannot hold (a JSON `null`), a bug in the test.
fn value(v: impl Serialize) -> Value {
    Value::try_from(v).unwrap_or_else(|e| panic!("not a TOML value: {e}"))
}

/// A path as the config names it.
fn path(p: impl AsRef<Path>) -> Value {
    Value::String(p.as_ref().display().to_string())
}

/// Strings of anything `Display` (addresses, names).
fn strings<T: fmt::Display>(items: impl IntoIterator<Item = T>) -> Value {
    Value::Array(
        items
            .into_iter()
            .map(|i| Value::String(i.to_string()))
            .collect(),
    )
}

/// One table-shaped section: the struct, `set`, and the table it renders to.
macro_rules! section {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $name(Table);

        impl $name {
            /// Sets `key` to `value`, replacing what was there.
            pub fn set(mut self, key: &str, value: impl Serialize) -> Self {
                self.0.insert(key.to_string(), self::value(value));
                self
            }

            // Not every section has a typed key beyond its constructor's.
            #[allow(dead_code)]
            fn put(mut self, key: &str, value: Value) -> Self {
                self.0.insert(key.to_string(), value);
                self
            }
        }

        impl From<$name> for Value {
            fn from(section: $name) -> Value {
                Value::Table(section.0)
            }
        }
    };
}

section! {
    /// A whole config file: `TestGateway::start(Config::web().route(..))`.
    Config
}
section! {
    /// One `[[listener]]`, bound to `127.0.0.1:0` unless told otherwise.
    Listener
}
section! {
    /// One `[[route]]`.
    Route
}
section! {
    /// One `[[tenant]]`.
    Tenant
}
section! {
    /// One `[[leaf]]`.
    Leaf
}
section! {
    /// The `[kubernetes]` table (the root cluster).
    Kubernetes
}
section! {
    /// One `[[virtual_node]]`.
    VirtualNode
}

impl Default for Config {
    fn default() -> Config {
        Config(Table::new())
    }
}

impl Config {
    /// An empty config: no admin listener, no listeners.
    pub fn new() -> Config {
        Config::default()
    }

    /// A config with one plain listener named `web` on `127.0.0.1:0`, the shape most
    /// routing tests start from.
    pub fn web() -> Config {
        Config::new().listener(Listener::new("web"))
    }

    /// `[admin]` on `127.0.0.1:0`.
    pub fn admin(self) -> Config {
        self.put("admin", Value::Table(Table::from_iter([bind_any()])))
    }

    /// One key of `[timeouts]` (`first_byte`, `shutdown_grace`...), added to the others.
    pub fn timeout(mut self, key: &str, duration: &str) -> Config {
        table_in(&mut self.0, "timeouts").insert(key.into(), duration.into());
        self
    }

    pub fn listener(self, listener: Listener) -> Config {
        self.push("listener", listener)
    }

    pub fn route(self, route: Route) -> Config {
        self.push("route", route)
    }

    pub fn tenant(self, tenant: Tenant) -> Config {
        self.push("tenant", tenant)
    }

    pub fn leaf(self, leaf: Leaf) -> Config {
        self.push("leaf", leaf)
    }

    pub fn kubernetes(self, kubernetes: Kubernetes) -> Config {
        self.put("kubernetes", kubernetes.into())
    }

    pub fn virtual_node(self, node: VirtualNode) -> Config {
        self.push("virtual_node", node)
    }

    /// Appends `item` to the array of tables `key` (`[[key]]`).
    pub fn push(mut self, key: &str, item: impl Into<Value>) -> Config {
        array_in(&mut self.0, key).push(item.into());
        self
    }
}

impl fmt::Display for Config {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = toml::to_string(&self.0).map_err(|_| fmt::Error)?;
        f.write_str(&text)
    }
}

impl Listener {
    /// A plain (`kind = "http"` by default) listener.
    ///
    /// With `LEAFGATE_TEST_HTTP1_FAST_PATH=off` in the environment it serves every
    /// request through hyper (`http1_fast_path = false`), so a suite can run on either
    /// path (`scripts/test.sh` runs the proxy suites on both).
    pub fn new(name: &str) -> Listener {
        let listener = Listener(Table::from_iter([("name".into(), name.into()), bind_any()]));
        match std::env::var("LEAFGATE_TEST_HTTP1_FAST_PATH").as_deref() {
            Ok("off") => listener.set("http1_fast_path", false),
            _ => listener,
        }
    }

    /// A kubelet-compatible node API listener; it needs `tls` with a `client_ca`.
    pub fn node_api(name: &str) -> Listener {
        Listener::new(name).kind("node-api")
    }

    /// A Kubernetes API front for tenants; it needs `tls`.
    pub fn kube_api(name: &str) -> Listener {
        Listener::new(name).kind("kube-api")
    }

    pub fn kind(self, kind: &str) -> Listener {
        self.put("kind", kind.into())
    }

    pub fn bind(self, addr: impl fmt::Display) -> Listener {
        self.put("bind", addr.to_string().into())
    }

    /// `tls = { cert, key }`: the default serving certificate.
    pub fn tls(mut self, cert: impl AsRef<Path>, key: impl AsRef<Path>) -> Listener {
        let tls = table_in(&mut self.0, "tls");
        tls.insert("cert".into(), path(cert));
        tls.insert("key".into(), path(key));
        self
    }

    /// `tls.client_ca`: clients must present a certificate this CA signed.
    pub fn client_ca(mut self, ca: impl AsRef<Path>) -> Listener {
        table_in(&mut self.0, "tls").insert("client_ca".into(), path(ca));
        self
    }

    pub fn allowed_clients<T: fmt::Display>(self, names: impl IntoIterator<Item = T>) -> Listener {
        self.put("allowed_clients", strings(names))
    }

    /// kube-api: `kubernetes_version`, the `/version` reported instead of the leaves'.
    pub fn kubernetes_version(self, version: &str) -> Listener {
        self.put("kubernetes_version", version.into())
    }

    pub fn max_connections(self, n: u32) -> Listener {
        self.put("max_connections", n.into())
    }

    pub fn trusted_proxies<T: fmt::Display>(self, peers: impl IntoIterator<Item = T>) -> Listener {
        self.put("trusted_proxies", strings(peers))
    }

    /// One `[[listener.certificate]]`, chosen by SNI for `hosts`.
    pub fn certificate(
        mut self,
        hosts: &[&str],
        cert: impl AsRef<Path>,
        key: impl AsRef<Path>,
    ) -> Listener {
        let entry = Table::from_iter([
            ("hosts".to_string(), strings(hosts)),
            ("cert".to_string(), path(cert)),
            ("key".to_string(), path(key)),
        ]);
        array_in(&mut self.0, "certificate").push(Value::Table(entry));
        self
    }
}

impl Route {
    /// A route for `host` (`app.example`, `*.example`, `*`), every path.
    pub fn host(host: &str) -> Route {
        Route(Table::from_iter([("host".into(), host.into())]))
    }

    pub fn name(self, name: &str) -> Route {
        self.put("name", name.into())
    }

    /// A path prefix, matched on whole segments.
    pub fn path(self, prefix: &str) -> Route {
        self.put("path", prefix.into())
    }

    pub fn exact(self, path: &str) -> Route {
        self.put("exact", path.into())
    }

    /// Appends one backend (`127.0.0.1:8080`, `https://...`).
    pub fn backend(mut self, addr: impl fmt::Display) -> Route {
        array_in(&mut self.0, "backends").push(addr.to_string().into());
        self
    }

    /// `direct = { status, body }`: leafgate answers itself.
    pub fn direct(self, status: u16, body: &str) -> Route {
        let direct = Table::from_iter([
            ("status".to_string(), i64::from(status).into()),
            ("body".to_string(), body.into()),
        ]);
        self.put("direct", Value::Table(direct))
    }

    pub fn tenant(self, tenant: &str) -> Route {
        self.put("tenant", tenant.into())
    }

    /// A per-connection rate for the route's hijacked connections.
    pub fn bandwidth(self, rate: &str) -> Route {
        self.put("bandwidth", rate.into())
    }

    /// `auto`, `http1`, `h2` or `h2c`.
    pub fn protocol(self, protocol: &str) -> Route {
        self.put("protocol", protocol.into())
    }

    /// One key of the route's `timeouts` table.
    pub fn timeout(mut self, key: &str, duration: &str) -> Route {
        table_in(&mut self.0, "timeouts").insert(key.into(), duration.into());
        self
    }

    /// One key of the route's `tls` table for `https://` backends (`ca`, `cert`, `key`,
    /// `server_name`).
    pub fn tls(mut self, key: &str, value: &str) -> Route {
        table_in(&mut self.0, "tls").insert(key.into(), value.into());
        self
    }
}

impl Tenant {
    pub fn new(name: &str) -> Tenant {
        Tenant(Table::from_iter([("name".into(), name.into())]))
    }

    pub fn namespaces<T: fmt::Display>(self, globs: impl IntoIterator<Item = T>) -> Tenant {
        self.put("namespaces", strings(globs))
    }

    pub fn leaves<T: fmt::Display>(self, leaves: impl IntoIterator<Item = T>) -> Tenant {
        self.put("leaves", strings(leaves))
    }

    pub fn tokens_file(self, file: impl AsRef<Path>) -> Tenant {
        self.put("tokens_file", path(file))
    }

    pub fn client_names<T: fmt::Display>(self, names: impl IntoIterator<Item = T>) -> Tenant {
        self.put("client_names", strings(names))
    }

    /// `resources`: the read-only kinds the kube-api front serves it (`"default"`,
    /// `"secrets"`, `"deployments.apps"`, ...).
    pub fn resources<T: fmt::Display>(self, entries: impl IntoIterator<Item = T>) -> Tenant {
        self.put("resources", strings(entries))
    }

    /// `hosts`: the host patterns the tenant's Ingresses may claim.
    pub fn hosts<T: fmt::Display>(self, patterns: impl IntoIterator<Item = T>) -> Tenant {
        self.put("hosts", strings(patterns))
    }

    /// One key of `bandwidth` (`per_connection`, `total`).
    pub fn bandwidth(mut self, key: &str, rate: &str) -> Tenant {
        table_in(&mut self.0, "bandwidth").insert(key.into(), rate.into());
        self
    }

    /// A key of `[tenant.plugins]` that applies to each of its plugins (`on_error`,
    /// `deadline`, `memory`...).
    pub fn plugins_default(mut self, key: &str, value: impl Serialize) -> Tenant {
        table_in(&mut self.0, "plugins").insert(key.into(), self::value(value));
        self
    }

    /// One entry of `[tenant.plugins]`: `world` is `pod_router`, `log_filter`,
    /// `table_formatter` or `address_rewriter`.
    pub fn plugin(mut self, world: &str, plugin: Plugin) -> Tenant {
        table_in(&mut self.0, "plugins").insert(world.into(), plugin.into());
        self
    }
}

/// A tenant's plugin: the bare path, or `{ path, config, on_error, ... }` once any other
/// key is set.
#[derive(Clone, Debug)]
pub struct Plugin {
    path: Value,
    keys: Table,
}

impl Plugin {
    pub fn new(file: impl AsRef<Path>) -> Plugin {
        Plugin {
            path: path(file),
            keys: Table::new(),
        }
    }

    /// The plugin's own config (handed to it as JSON).
    pub fn config(self, config: impl Serialize) -> Plugin {
        self.set("config", config)
    }

    /// `reject` or `default`: what a failing plugin's request gets.
    pub fn on_error(self, on_error: &str) -> Plugin {
        self.set("on_error", on_error)
    }

    /// Any other key of the plugin's table (`memory`, `deadline`, `max_calls`...).
    pub fn set(mut self, key: &str, value: impl Serialize) -> Plugin {
        self.keys.insert(key.into(), self::value(value));
        self
    }
}

impl From<Plugin> for Value {
    fn from(plugin: Plugin) -> Value {
        if plugin.keys.is_empty() {
            return plugin.path;
        }
        let mut table = plugin.keys;
        table.insert("path".into(), plugin.path);
        Value::Table(table)
    }
}

impl Leaf {
    pub fn new(name: &str, kubeconfig: impl AsRef<Path>) -> Leaf {
        Leaf(Table::from_iter([
            ("name".into(), name.into()),
            ("kubeconfig".into(), path(kubeconfig)),
        ]))
    }
}

impl Kubernetes {
    /// The root cluster behind `kubeconfig`.
    pub fn new(kubeconfig: impl AsRef<Path>) -> Kubernetes {
        Kubernetes(Table::from_iter([("kubeconfig".into(), path(kubeconfig))]))
    }

    /// What the root API server dials to reach this replica's node-api listener.
    pub fn gateway_address(self, address: &str) -> Kubernetes {
        self.put("gateway_address", address.into())
    }

    /// The `kind = "node-api"` listener whose port virtual nodes publish.
    pub fn node_api_listener(self, listener: &str) -> Kubernetes {
        self.put("node_api_listener", listener.into())
    }

    /// This replica's name in the leader Lease.
    pub fn identity(self, identity: &str) -> Kubernetes {
        self.put("identity", identity.into())
    }

    /// Election timings (`lease_duration`, `renew_deadline`, `retry_period`), short in
    /// tests so a replica leads quickly.
    pub fn election(self, lease_duration: &str, renew_deadline: &str, retry: &str) -> Kubernetes {
        let election = Table::from_iter([
            ("lease_duration".to_string(), lease_duration.into()),
            ("renew_deadline".to_string(), renew_deadline.into()),
            ("retry_period".to_string(), retry.into()),
        ]);
        self.put("election", Value::Table(election))
    }

    /// `[kubernetes.ingress]` with `keys` in it (`class`, `publish_address`...); an empty
    /// table takes every default.
    pub fn ingress(self, keys: impl Serialize) -> Kubernetes {
        self.set("ingress", keys)
    }
}

impl VirtualNode {
    /// `mode = "own"`: leafgate creates and keeps the Node `name` for `leaf`.
    pub fn own(name: &str, leaf: &str) -> VirtualNode {
        VirtualNode(Table::from_iter([
            ("name".into(), name.into()),
            ("leaf".into(), leaf.into()),
            ("mode".into(), "own".into()),
        ]))
    }

    /// `mode = "patch"`: Nodes matching `selector` belong to someone else.
    pub fn patch(selector: &str, leaf: &str) -> VirtualNode {
        VirtualNode(Table::from_iter([
            ("selector".into(), selector.into()),
            ("leaf".into(), leaf.into()),
            ("mode".into(), "patch".into()),
        ]))
    }

    pub fn tenant(self, tenant: &str) -> VirtualNode {
        self.put("tenant", tenant.into())
    }
}

fn bind_any() -> (String, Value) {
    ("bind".into(), "127.0.0.1:0".into())
}

/// The table at `key` in `table`, made empty if absent.
fn table_in<'t>(table: &'t mut Table, key: &str) -> &'t mut Table {
    table
        .entry(key)
        .or_insert_with(|| Value::Table(Table::new()))
        .as_table_mut()
        .unwrap_or_else(|| panic!("`{key}` is set and is not a table"))
}

/// The array at `key` in `table`, made empty if absent.
fn array_in<'t>(table: &'t mut Table, key: &str) -> &'t mut Vec<Value> {
    table
        .entry(key)
        .or_insert_with(|| Value::Array(Vec::new()))
        .as_array_mut()
        .unwrap_or_else(|| panic!("`{key}` is set and is not an array"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The rendered text parses back to the same tables, with the quoting TOML needs.
    #[test]
    fn renders_what_a_hand_written_config_says() {
        let config = Config::new()
            .admin()
            .timeout("first_byte", "300ms")
            .listener(
                Listener::node_api("kubelet")
                    .tls("dir with space/srv.pem", "srv-key.pem")
                    .client_ca("ca.pem")
                    .allowed_clients(["kube-apiserver-kubelet-client"]),
            )
            .listener(Listener::new("tls").tls("d.pem", "d-key.pem").certificate(
                &["*.apps.example"],
                "apps.pem",
                "apps-key.pem",
            ))
            .route(
                Route::host("app.example")
                    .path("/api")
                    .backend("127.0.0.1:1")
                    .backend("127.0.0.1:2")
                    .timeout("connect", "500ms"),
            )
            .tenant(
                Tenant::new("acme")
                    .namespaces(["apps", "apps-*"])
                    .bandwidth("total", "2MiB/s")
                    .plugin("table_formatter", Plugin::new("pods.wasm"))
                    .plugin(
                        "log_filter",
                        Plugin::new("redact.wasm").config(json!({"patterns": [r"password=\S+"]})),
                    ),
            )
            .virtual_node(
                VirtualNode::own("vn", "leaf-1")
                    .set("labels", json!({"topology.kubernetes.io/zone": "edge-1"})),
            );
        let expected: Table = toml::from_str(
            r#"
            [admin]
            bind = "127.0.0.1:0"
            [timeouts]
            first_byte = "300ms"
            [[listener]]
            name = "kubelet"
            bind = "127.0.0.1:0"
            kind = "node-api"
            tls = { cert = "dir with space/srv.pem", key = "srv-key.pem", client_ca = "ca.pem" }
            allowed_clients = ["kube-apiserver-kubelet-client"]
            [[listener]]
            name = "tls"
            bind = "127.0.0.1:0"
            tls = { cert = "d.pem", key = "d-key.pem" }
            [[listener.certificate]]
            hosts = ["*.apps.example"]
            cert = "apps.pem"
            key = "apps-key.pem"
            [[route]]
            host = "app.example"
            path = "/api"
            backends = ["127.0.0.1:1", "127.0.0.1:2"]
            timeouts = { connect = "500ms" }
            [[tenant]]
            name = "acme"
            namespaces = ["apps", "apps-*"]
            bandwidth = { total = "2MiB/s" }
            [tenant.plugins]
            table_formatter = "pods.wasm"
            log_filter = { path = "redact.wasm", config = { patterns = ['password=\S+'] } }
            [[virtual_node]]
            name = "vn"
            leaf = "leaf-1"
            mode = "own"
            labels = { "topology.kubernetes.io/zone" = "edge-1" }
            "#,
        )
        .unwrap();
        let rendered = config.to_string();
        let parsed: Table = toml::from_str(&rendered).unwrap();
        assert_eq!(parsed, expected, "rendered:\n{rendered}");
    }

    #[test]
    fn a_plugin_with_only_a_path_is_the_bare_path() {
        assert_eq!(Value::from(Plugin::new("p.wasm")), Value::from("p.wasm"));
        let rejecting = Value::from(Plugin::new("p.wasm").on_error("reject"));
        assert_eq!(rejecting["on_error"].as_str(), Some("reject"));
        assert_eq!(rejecting["path"].as_str(), Some("p.wasm"));
    }
}
