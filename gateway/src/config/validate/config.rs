//! The whole file validated, section by section: `[admin]` and `[timeouts]` here, then
//! listeners, tenants, leaves, routes, `[kubernetes]` and virtual nodes, each in the file
//! of its section. A section reads what the ones before it produced (routes read the
//! listener and tenant names), so the order is fixed, and so is the order of the errors.

use std::path::Path;

use crate::config::model::{AdminConfig, Config, Timeouts};
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
        let admin = self.admin(raw);
        let (listeners, listener_names) = self.listeners(raw, admin.as_ref());
        let (tenants, tenant_names) = self.tenants(path, raw);
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
        let config = Config {
            path: path.to_path_buf(),
            kubernetes,
            virtual_nodes,
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

    /// `[admin]`, when its address is one; its `tokens_file` read like a tenant's.
    fn admin(&mut self, raw: &RawConfig) -> Option<AdminConfig> {
        let a = raw.admin.as_ref()?;
        let bind = self.socket_addr(&a.bind, "admin.bind");
        let tokens = a
            .tokens_file
            .as_ref()
            .map(|file| self.tokens_file(file, "admin.tokens_file").0);
        Some(AdminConfig {
            bind: bind?,
            tokens,
        })
    }
}
