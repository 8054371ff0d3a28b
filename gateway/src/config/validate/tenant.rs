//! `[[tenant]]`s and `[[leaf]]`s validated: a tenant's leaves exist, its tokens file is read,
//! its plugins are checked (`plugins`); a leaf's kubeconfig is read and resolved
//! (`kubeconfig`), every problem reported at the `[[leaf]]` key.

use std::path::Path;

use crate::config::model::{Cap, Concurrency, LeafConfig, TenantConfig, Tokens};
use crate::config::raw::{RawCap, RawConfig, RawLeaf, RawTenant};

use super::kubeconfig;
use super::names::Names;
use super::plugins::{self, Slots};
use super::validator::{Validator, bandwidth};

impl Validator<'_, '_> {
    /// Every `[[tenant]]`, and their names for the routes that name one. `path` is the
    /// config file, where plugin errors found later are reported.
    pub(super) fn tenants(&mut self, path: &Path, raw: &RawConfig) -> (Vec<TenantConfig>, Names) {
        let mut names = Names::default();
        let mut slots = Slots::default();
        let mut tenants = Vec::with_capacity(raw.tenants.len());
        for (i, t) in raw.tenants.iter().enumerate() {
            names.insert(self.report, &t.name, &format!("tenant[{i}].name"), "tenant");
            tenants.push(self.tenant(path, raw, t, i, &mut slots));
        }
        (tenants, names)
    }

    /// `tenant[i]`; `slots` counts the plugin instances of the tenants before it.
    fn tenant(
        &mut self,
        path: &Path,
        raw: &RawConfig,
        t: &RawTenant,
        i: usize,
        slots: &mut Slots,
    ) -> TenantConfig {
        TenantConfig {
            name: t.name.get_ref().clone(),
            namespaces: t.namespaces.iter().map(|n| n.get_ref().clone()).collect(),
            leaves: t.leaves.as_ref().map(|ls| {
                for (j, leaf) in ls.iter().enumerate() {
                    if !raw
                        .leaves
                        .iter()
                        .any(|l| l.name.get_ref() == leaf.get_ref())
                    {
                        self.report.error(
                            leaf.span(),
                            format!("tenant[{i}].leaves[{j}]"),
                            format!("no [[leaf]] is named `{}`", leaf.get_ref()),
                        );
                    }
                }
                ls.iter().map(|l| l.get_ref().clone()).collect()
            }),
            tokens: self.tokens(t, &format!("tenant[{i}].tokens_file")),
            client_names: t.client_names.iter().map(|c| c.get_ref().clone()).collect(),
            concurrent: self.concurrent(t, &format!("tenant[{i}].concurrent")),
            bandwidth: bandwidth(&t.bandwidth),
            plugins: plugins::validate(
                self.report,
                path,
                self.base,
                &format!("tenant[{i}].plugins"),
                &t.plugins,
                &mut self.files,
                slots,
            ),
        }
    }

    /// `[tenant.concurrent]`: each kind's cap, its defaults where left out.
    fn concurrent(&mut self, t: &RawTenant, key: &str) -> Concurrency {
        let defaults = Concurrency::default();
        let raw = &t.concurrent;
        Concurrency {
            watches: self.cap(&raw.watches, defaults.watches, &format!("{key}.watches")),
            streams: self.cap(&raw.streams, defaults.streams, &format!("{key}.streams")),
            log_follows: self.cap(
                &raw.log_follows,
                defaults.log_follows,
                &format!("{key}.log_follows"),
            ),
        }
    }

    /// One kind's `{ total, per_connection }`: each at least 1, and a connection's cap no
    /// higher than the tenant's (it could never be reached).
    fn cap(&mut self, raw: &Option<RawCap>, default: Cap, key: &str) -> Cap {
        let Some(raw) = raw else {
            return default;
        };
        let mut one = |value: &Option<toml::Spanned<u64>>, name: &str, default: u32| {
            let Some(v) = value else {
                return default;
            };
            match u32::try_from(*v.get_ref()) {
                Ok(n) if n >= 1 => n,
                _ => {
                    self.report.error(
                        v.span(),
                        format!("{key}.{name}"),
                        format!(
                            "must be a count from 1 to {}; leave it out for the default ({default})",
                            u32::MAX
                        ),
                    );
                    default
                }
            }
        };
        let total = one(&raw.total, "total", default.total);
        let per_connection = one(
            &raw.per_connection,
            "per_connection",
            default.per_connection,
        );
        // A default per-connection cap above a lower total is simply the total.
        if per_connection > total
            && let Some(v) = &raw.per_connection
        {
            self.report.error(
                v.span(),
                format!("{key}.per_connection"),
                format!("{per_connection} is above the tenant's total ({total}), which caps every connection anyway"),
            );
        }
        Cap {
            total,
            per_connection: per_connection.min(total),
        }
    }

    /// Every `[[leaf]]` whose kubeconfig resolves; each name is checked unique.
    pub(super) fn leaves(&mut self, raw: &RawConfig) -> Vec<LeafConfig> {
        let mut names = Names::default();
        let mut leaves = Vec::with_capacity(raw.leaves.len());
        for (i, l) in raw.leaves.iter().enumerate() {
            names.insert(self.report, &l.name, &format!("leaf[{i}].name"), "leaf");
            leaves.extend(self.leaf(l, &format!("leaf[{i}]")));
        }
        leaves
    }

    /// A `[[leaf]]`: its kubeconfig read and checked; a problem inside the kubeconfig is
    /// reported at `kubeconfig` (or `context`) and names the kubeconfig field.
    fn leaf(&mut self, l: &RawLeaf, key: &str) -> Option<LeafConfig> {
        let path = self.readable_file(&l.kubeconfig, &format!("{key}.kubeconfig"))?;
        let context = l.context.as_ref().map(|c| c.get_ref().as_str());
        match kubeconfig::resolve(&path, context) {
            Ok(r) => {
                self.files.extend(r.files);
                Some(LeafConfig {
                    name: l.name.get_ref().clone(),
                    kubeconfig: path,
                    context: r.context,
                    server: r.server,
                    namespace: r.namespace,
                    tls: r.tls,
                    auth: r.auth,
                    fingerprint: r.fingerprint,
                })
            }
            Err(p) => {
                let (span, field) = match (p.at, &l.context) {
                    (kubeconfig::At::Context, Some(c)) => (c.span(), "context"),
                    _ => (l.kubeconfig.span(), "kubeconfig"),
                };
                self.report.error(span, format!("{key}.{field}"), p.message);
                None
            }
        }
    }

    /// A tenant's `tokens_file`, read now; the file joins the watched ones so editing it
    /// reloads the config. An unreadable file is an error; an empty one lets nobody in.
    fn tokens(&mut self, t: &RawTenant, key: &str) -> Tokens {
        let Some(file) = &t.tokens_file else {
            return Tokens::default();
        };
        let Some(path) = self.readable_file(file, key) else {
            return Tokens::default();
        };
        match std::fs::read_to_string(&path) {
            Ok(text) => Tokens::parse(&text),
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read {} as text: {e}", path.display()),
                );
                Tokens::default()
            }
        }
    }
}
