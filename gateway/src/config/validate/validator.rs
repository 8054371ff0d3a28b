//! The [`Validator`]: what every section's validation writes to (the error report, the
//! files named) and reads (the config's folder), and the small conversions several
//! sections share (addresses, URL paths, bandwidth, timeouts).

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use toml::Spanned;

use crate::config::error::Reporter;
use crate::config::model::units::HumanDuration;
use crate::config::model::{BandwidthConfig, Timeouts};
use crate::config::raw::{RawBandwidth, RawTimeouts};

/// Validation of one file: each section's checks are its methods, written in the file of
/// that section.
pub(in crate::config) struct Validator<'r, 'a> {
    pub(in crate::config) report: &'r mut Reporter<'a>,
    pub(in crate::config) base: &'r Path,
    pub(in crate::config) files: BTreeSet<PathBuf>,
}

impl Validator<'_, '_> {
    pub(super) fn socket_addr(&mut self, text: &Spanned<String>, key: &str) -> Option<SocketAddr> {
        text.get_ref()
            .parse()
            .map_err(|_| {
                self.report.error(
                    text.span(),
                    key.to_string(),
                    format!("`{}` is not an address: write IP:port, like \"127.0.0.1:8080\" or \"[::]:8443\"", text.get_ref()),
                )
            })
            .ok()
    }

    pub(super) fn url_path(&mut self, p: &Spanned<String>, key: &str) -> Option<String> {
        let path = p.get_ref();
        if path.starts_with('/') && !path.contains(['?', '#', ' ']) {
            Some(path.clone())
        } else {
            self.report.error(
                p.span(),
                key.to_string(),
                format!("`{path}` is not a path: start it with `/`, without query or fragment"),
            );
            None
        }
    }
}

/// A tenant's or route's `bandwidth`, typed.
pub(super) fn bandwidth(raw: &RawBandwidth) -> BandwidthConfig {
    BandwidthConfig {
        per_connection: raw.per_connection,
        total: raw.total,
    }
}

/// `defaults` with every timeout `raw` sets put in its place.
pub(super) fn timeouts(defaults: Timeouts, raw: &RawTimeouts) -> Timeouts {
    let pick = |v: Option<HumanDuration>, d: Duration| v.map_or(d, |h| h.0);
    Timeouts {
        connect: pick(raw.connect, defaults.connect),
        response_header: pick(raw.response_header, defaults.response_header),
        idle: pick(raw.idle, defaults.idle),
        upgraded_idle: pick(raw.upgraded_idle, defaults.upgraded_idle),
        shutdown_grace: pick(raw.shutdown_grace, defaults.shutdown_grace),
        first_byte: pick(raw.first_byte, defaults.first_byte),
        client_idle: pick(raw.client_idle, defaults.client_idle),
        shutdown_delay: pick(raw.shutdown_delay, defaults.shutdown_delay),
    }
}
