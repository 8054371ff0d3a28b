//! The whole file validated, section by section: `[admin]` and `[timeouts]` here, then
//! listeners, tenants, leaves, routes, `[kubernetes]` and virtual nodes, each in the file
//! of its section. A section reads what the ones before it produced (routes read the
//! listener and tenant names), so the order is fixed, and so is the order of the errors.

use std::path::Path;

use std::collections::HashSet;

use crate::config::model::{AdminConfig, Config, TenantConfig, Timeouts, TokenDigest};
use crate::config::raw::RawConfig;

use super::route::{Prior, RouteContext};
use super::validator::{Validator, timeouts};

impl Validator<'_, '_> {
    /// The config `raw` says, and the context its routes were validated in.
    pub(in crate::config) fn config(
        mut self,
        path: &Path,
        raw: &RawConfig,
        prior: Option<Prior<'_>>,
    ) -> (Config, RouteContext) {
        let timeouts = timeouts(Timeouts::default(), &raw.timeouts);
        let (admin, admin_tokens) = self.admin(raw).unzip();
        let (listeners, listener_names) = self.listeners(raw, admin.as_ref());
        let (tenants, tenant_names) = self.tenants(path, raw);
        self.admin_tokens_unshared(raw, admin_tokens.as_deref().unwrap_or_default(), &tenants);
        let leaves = self.leaves(raw);
        let context = RouteContext::new(self.base, timeouts, &listener_names, &tenant_names);
        let routes = self.routes(raw, &context, prior, &listener_names, &tenant_names);
        let kubernetes = raw.kubernetes.as_ref().and_then(|k| {
            self.kubernetes(
                k.get_ref(),
                k.span(),
                &listeners,
                !raw.virtual_nodes.is_empty(),
            )
        });
        let virtual_nodes = self.virtual_nodes(raw, &tenants);
        let access_log = self.access_logs(raw);
        let request_id = self.request_id(raw);
        let config = Config {
            path: path.to_path_buf(),
            kubernetes,
            virtual_nodes,
            access_log,
            request_id,
            propagate_trace: raw.tracing.as_ref().and_then(|t| t.propagate) == Some(true),
            admin,
            timeouts,
            listeners,
            tenants,
            leaves,
            routes,
            files: self.files,
            warnings: Vec::new(),
        };
        (config, context)
    }

    /// `[admin]`, when its address is one, and its tokens' lines; its `tokens_file` read
    /// like a tenant's.
    fn admin(&mut self, raw: &RawConfig) -> Option<(AdminConfig, Vec<(usize, TokenDigest)>)> {
        let a = raw.admin.as_ref()?;
        let bind = self.socket_addr(&a.bind, "admin.bind");
        let (tokens, lines) = match &a.tokens_file {
            Some(file) => {
                let (tokens, lines) = self.tokens_file(file, "admin.tokens_file");
                (Some(tokens), lines)
            }
            None => (None, Vec::new()),
        };
        Some((
            AdminConfig {
                bind: bind?,
                tokens,
            },
            lines,
        ))
    }

    /// No admin token is also a tenant's: with it a tenant would read every tenant's
    /// config at `/status` and reload the gateway. One error per tenant, with the lines of
    /// the admin tokens file, never the token.
    fn admin_tokens_unshared(
        &mut self,
        raw: &RawConfig,
        admin: &[(usize, TokenDigest)],
        tenants: &[TenantConfig],
    ) {
        let Some(file) = raw.admin.as_ref().and_then(|a| a.tokens_file.as_ref()) else {
            return;
        };
        for (i, tenant) in tenants.iter().enumerate() {
            let held: HashSet<TokenDigest> = tenant.tokens.digests().collect();
            let lines: Vec<String> = admin
                .iter()
                .filter(|(_, digest)| held.contains(digest))
                .map(|(line, _)| line.to_string())
                .collect();
            if lines.is_empty() {
                continue;
            }
            let place = raw.tenants[i]
                .tokens_file
                .as_ref()
                .map(|f| self.at(f))
                .unwrap_or_default();
            let plural = if lines.len() == 1 { "" } else { "s" };
            self.report.error(
                file.span(),
                "admin.tokens_file".to_string(),
                format!(
                    "line{plural} {} of `{}`: tenant `{}` has the same token in its tokens_file{place}; an admin token must not be a tenant's, or that tenant could read /status and reload the gateway",
                    lines.join(", "),
                    file.get_ref(),
                    tenant.name,
                ),
            );
        }
    }
}
