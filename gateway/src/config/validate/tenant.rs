//! `[[tenant]]`s and `[[leaf]]`s validated: a tenant's leaves exist, its tokens file is read,
//! its plugins are checked (`plugins`); a leaf's kubeconfig is read and resolved
//! (`kubeconfig`), every problem reported at the `[[leaf]]` key.
//!
//! Tenants are checked against each other too: a token, a client name or a namespace
//! belongs to one tenant. One in two would let the first tenant in the file win silently
//! (and a caller of one tenant act as the other), so each is an error at the later
//! tenant's key, naming the earlier one. Tokens shorter than [`SHORT_TOKEN`] characters
//! are a warning: guessable, but the operator's call. Two tenants' `hosts` patterns that
//! match a name in common are a warning too: the oldest Ingress decides which tenant gets
//! such a name, which is legal but rarely meant.

use std::collections::HashMap;
use std::path::Path;

use toml::Spanned;

use crate::config::model::{
    Cap, Concurrency, HostPattern, LeafConfig, TenantConfig, TokenDigest, Tokens, kinds,
    token_lines,
};
use crate::config::raw::{RawCap, RawConfig, RawLeaf, RawTenant};

use super::kubeconfig;
use super::names::{Names, globs_overlap};
use super::plugins::{self, Slots};
use super::validator::{Validator, bandwidth};

/// A tenant's built-in kinds and custom resources.
type Served = (Vec<&'static kinds::Gvr>, Vec<kinds::CustomResource>);

impl Validator<'_, '_> {
    /// Every `[[tenant]]`, and their names for the routes that name one. `path` is the
    /// config file, where plugin errors found later are reported.
    pub(super) fn tenants(&mut self, path: &Path, raw: &RawConfig) -> (Vec<TenantConfig>, Names) {
        let mut names = Names::default();
        let mut slots = Slots::default();
        let mut tenants = Vec::with_capacity(raw.tenants.len());
        let mut token_owners = HashMap::new();
        for (i, t) in raw.tenants.iter().enumerate() {
            names.insert(self.report, &t.name, &format!("tenant[{i}].name"), "tenant");
            let (tenant, tokens) = self.tenant(path, raw, t, i, &mut slots);
            self.tokens_unshared(raw, i, &tokens, &mut token_owners);
            tenants.push(tenant);
        }
        self.client_names_unshared(raw);
        self.namespaces_unshared(raw);
        self.hosts_unshared(raw, &tenants);
        (tenants, names)
    }

    /// Tenant `i`'s `hosts`: each a host pattern as a route's `host` is written.
    fn hosts(&mut self, t: &RawTenant, i: usize) -> Option<Vec<HostPattern>> {
        let list = t.hosts.as_ref()?;
        let raw = list.get_ref();
        if raw.is_empty() {
            self.report.warning(
                list.span(),
                format!("tenant[{i}].hosts"),
                "an empty list lets the tenant's Ingresses claim no host; leave `hosts` out to let them claim any host",
            );
        }
        let mut hosts = Vec::with_capacity(raw.len());
        for (j, h) in raw.iter().enumerate() {
            match HostPattern::parse(h.get_ref()) {
                Ok(host) => hosts.push(host),
                Err(m) => self
                    .report
                    .error(h.span(), format!("tenant[{i}].hosts[{j}]"), m),
            }
        }
        Some(hosts)
    }

    /// A warning for each `hosts` pattern matching a name an earlier tenant's patterns
    /// match too: which tenant gets such a name depends on whose Ingress came first.
    fn hosts_unshared(&mut self, raw: &RawConfig, tenants: &[TenantConfig]) {
        for (i, t) in tenants.iter().enumerate() {
            for (j, host) in t.hosts.iter().flatten().enumerate() {
                let overlap = tenants[..i].iter().find_map(|other| {
                    other
                        .hosts
                        .iter()
                        .flatten()
                        .find(|o| hosts_overlap(host, o))
                        .map(|o| (other, o))
                });
                let Some((other, o)) = overlap else {
                    continue;
                };
                // Parsed patterns line up with the written ones only when every one parsed
                // (else the config is in error anyway).
                let written = raw.tenants[i].hosts.as_ref().map(|h| h.get_ref());
                let Some(at) = written
                    .filter(|w| w.len() == t.hosts.as_ref().map_or(0, Vec::len))
                    .and_then(|w| w.get(j))
                else {
                    continue;
                };
                self.report.warning(
                    at.span(),
                    format!("tenant[{i}].hosts[{j}]"),
                    format!(
                        "`{host}` overlaps tenant `{}`'s `{o}`: a name both match goes to whichever tenant's Ingress names it first",
                        other.name,
                    ),
                );
            }
        }
    }

    /// Tenant `i`'s tokens (`lines`, from its tokens file) held by no earlier tenant; one
    /// error per earlier tenant, with the lines, never the token.
    fn tokens_unshared(
        &mut self,
        raw: &RawConfig,
        i: usize,
        lines: &[(usize, TokenDigest)],
        owners: &mut HashMap<TokenDigest, usize>,
    ) {
        let mut shared: Vec<(usize, Vec<usize>)> = Vec::new();
        for (line, digest) in lines {
            let owner = *owners.entry(*digest).or_insert(i);
            if owner == i {
                continue;
            }
            match shared.iter_mut().find(|(k, _)| *k == owner) {
                Some((_, at)) => at.push(*line),
                None => shared.push((owner, vec![*line])),
            }
        }
        let Some(file) = &raw.tenants[i].tokens_file else {
            return;
        };
        for (k, at) in shared {
            let other = &raw.tenants[k];
            let place = other
                .tokens_file
                .as_ref()
                .map(|f| self.at(f))
                .unwrap_or_default();
            let lines: Vec<String> = at.iter().map(usize::to_string).collect();
            let plural = if at.len() == 1 { "" } else { "s" };
            self.report.error(
                file.span(),
                format!("tenant[{i}].tokens_file"),
                format!(
                    "line{plural} {} of `{}`: tenant `{}` has the same token in its tokens_file{place}; a token must authenticate one tenant",
                    lines.join(", "),
                    file.get_ref(),
                    other.name.get_ref(),
                ),
            );
        }
    }

    /// Every `client_names` entry in one tenant only.
    fn client_names_unshared(&mut self, raw: &RawConfig) {
        let mut owners: HashMap<&str, (usize, &Spanned<String>)> = HashMap::new();
        for (i, t) in raw.tenants.iter().enumerate() {
            for (j, name) in t.client_names.iter().enumerate() {
                let (k, first) = *owners.entry(name.get_ref()).or_insert((i, name));
                if k == i {
                    continue;
                }
                let place = self.at(first);
                self.report.error(
                    name.span(),
                    format!("tenant[{i}].client_names[{j}]"),
                    format!(
                        "client name `{}` is also tenant `{}`'s{place}; a client name must authenticate one tenant",
                        name.get_ref(),
                        raw.tenants[k].name.get_ref(),
                    ),
                );
            }
        }
    }

    /// No namespace matched by two tenants' patterns: each pattern is checked against
    /// every earlier tenant's, and the first overlap is reported.
    fn namespaces_unshared(&mut self, raw: &RawConfig) {
        for (i, t) in raw.tenants.iter().enumerate() {
            for (j, pattern) in t.namespaces.iter().enumerate() {
                let overlap = raw.tenants[..i].iter().find_map(|other| {
                    other
                        .namespaces
                        .iter()
                        .find(|q| globs_overlap(pattern.get_ref(), q.get_ref()))
                        .map(|q| (other, q))
                });
                let Some((other, q)) = overlap else {
                    continue;
                };
                let place = self.at(q);
                self.report.error(
                    pattern.span(),
                    format!("tenant[{i}].namespaces[{j}]"),
                    format!(
                        "namespace `{}` overlaps tenant `{}`'s `{}`{place}: a namespace both match would belong to two tenants; make the patterns disjoint",
                        pattern.get_ref(),
                        other.name.get_ref(),
                        q.get_ref(),
                    ),
                );
            }
        }
    }

    /// ` (at line:column)` of a value, for a message that points at a second place.
    pub(super) fn at<T>(&self, value: &Spanned<T>) -> String {
        if value.span() == (0..0) {
            return String::new();
        }
        let (line, col) = self.report.line_column(value.span().start);
        format!(" (at {line}:{col})")
    }

    /// `tenant[i]`; `slots` counts the plugin instances of the tenants before it.
    fn tenant(
        &mut self,
        path: &Path,
        raw: &RawConfig,
        t: &RawTenant,
        i: usize,
        slots: &mut Slots,
    ) -> (TenantConfig, Vec<(usize, TokenDigest)>) {
        let (tokens, lines) = match &t.tokens_file {
            Some(file) => self.tokens_file(file, &format!("tenant[{i}].tokens_file")),
            None => Default::default(),
        };
        let resources = self.resources(t, i);
        let tenant = TenantConfig {
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
            tokens,
            client_names: t.client_names.iter().map(|c| c.get_ref().clone()).collect(),
            concurrent: self.concurrent(t, &format!("tenant[{i}].concurrent")),
            hosts: self.hosts(t, i),
            resources: resources.0,
            custom: resources.1,
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
        };
        (tenant, lines)
    }

    /// Tenant `i`'s `resources`: the built-in kinds its entries name (absent: the default
    /// ones) and the custom resources, each once; an entry naming none is an error at it.
    fn resources(&mut self, t: &RawTenant, i: usize) -> Served {
        let Some(entries) = &t.resources else {
            return (kinds::DEFAULT.iter().collect(), Vec::new());
        };
        let (mut out, mut custom): Served = (Vec::new(), Vec::new());
        for (j, e) in entries.iter().enumerate() {
            match kinds::entry(e.get_ref()) {
                Ok(kinds::Entry::Builtin(named)) => {
                    for gvr in named {
                        if !out.contains(&gvr) {
                            out.push(gvr);
                        }
                    }
                }
                Ok(kinds::Entry::Custom(cr)) => {
                    if !custom.contains(&cr) {
                        custom.push(cr);
                    }
                }
                Err(m) => self
                    .report
                    .error(e.span(), format!("tenant[{i}].resources[{j}]"), m),
            }
        }
        (out, custom)
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
                    stale: l.stale.unwrap_or_default(),
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

    /// A `tokens_file` (a tenant's or the admin listener's), read now, and each token's
    /// line and digest; the file joins the watched ones so editing it reloads the config.
    /// An unreadable file is an error; an empty one lets nobody in. A short token is a
    /// warning at `key`, by line: no token is ever printed.
    pub(super) fn tokens_file(
        &mut self,
        file: &Spanned<String>,
        key: &str,
    ) -> (Tokens, Vec<(usize, TokenDigest)>) {
        let Some(path) = self.readable_file(file, key) else {
            return Default::default();
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) => {
                self.report.error(
                    file.span(),
                    key.to_string(),
                    format!("cannot read {} as text: {e}", path.display()),
                );
                return Default::default();
            }
        };
        let mut lines = Vec::new();
        for (line, token) in token_lines(&text) {
            let length = token.chars().count();
            if length < SHORT_TOKEN {
                self.report.warning(
                    file.span(),
                    key.to_string(),
                    format!(
                        "line {line} of `{}`: a token of {length} characters is easy to guess; use at least {SHORT_TOKEN} random characters",
                        file.get_ref()
                    ),
                );
            }
            lines.push((line, TokenDigest::of(token)));
        }
        (Tokens::parse(&text), lines)
    }
}

/// Tokens shorter than this are warned about.
pub(super) const SHORT_TOKEN: usize = 16;

/// True when some host name matches both `a` and `b` (route hosts: a wildcard is one or
/// more labels before its suffix).
fn hosts_overlap(a: &HostPattern, b: &HostPattern) -> bool {
    use HostPattern::{Any, Exact, Wildcard, WildcardLabel};
    match (a, b) {
        (Any, _) | (_, Any) => true,
        (Exact(x), Exact(y)) => x == y,
        (Exact(x), w) | (w, Exact(x)) => w.matches(x),
        (Wildcard(s) | WildcardLabel(s), Wildcard(t) | WildcardLabel(t)) => {
            s.ends_with(t.as_str()) || t.ends_with(s.as_str())
        }
    }
}
