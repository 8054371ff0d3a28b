//! `leafgate_certificate_expiry_seconds`: what each listener serves now, read from the
//! snapshot at scrape time. The value counts down between reloads, so it is computed when
//! asked, not when the certificates were loaded.
//!
//! A listener's certificates are its TOML ones (`default` and `by_host`) and, on the
//! listeners `[kubernetes.ingress] listeners` names, the Ingress Secrets' certificates of
//! the provider's last build (those it refused are not in it). The Gateway API listeners
//! terminate no TLS yet, so they have none.

use std::sync::Arc;
use std::time::SystemTime;

use rustls::sign::CertifiedKey;
use x509_parser::prelude::{FromDer, X509Certificate};

use crate::config::{HostPattern, ServerTls};
use crate::metrics::CertificateLabels;
use crate::snapshot::Snapshot;

/// Seconds from `now` to each served certificate's `notAfter`, by listener and hosts.
pub fn expiries(snapshot: &Snapshot, now: SystemTime) -> Vec<(CertificateLabels, i64)> {
    let ingress_listeners = snapshot
        .config
        .kubernetes
        .as_ref()
        .and_then(|k| k.ingress.as_ref())
        .map_or(&[][..], |i| &i.listeners[..]);
    let ingress_certs = snapshot
        .ingress
        .model
        .as_ref()
        .map_or(&[][..], |m| &m.certs[..]);
    let now = unix_seconds(now);
    let mut names: Vec<&String> = snapshot.listeners.keys().collect();
    names.sort();
    let mut out = Vec::new();
    for name in names {
        let Some(tls) = &snapshot.listeners[name].config.tls else {
            continue;
        };
        let extra = match ingress_listeners.contains(name) {
            true => ingress_certs,
            false => &[],
        };
        for (hosts, cert) in served(tls, extra) {
            if let Some(not_after) = not_after(&cert) {
                let labels = CertificateLabels {
                    listener: name.clone(),
                    hosts,
                };
                out.push((labels, not_after - now));
            }
        }
    }
    out
}

/// Each distinct certificate of `tls` and `extra` with the hosts it is chosen for, `*`
/// for the default, comma-separated in the order they are listed.
fn served(
    tls: &ServerTls,
    extra: &[(HostPattern, Arc<CertifiedKey>)],
) -> Vec<(String, Arc<CertifiedKey>)> {
    let mut out: Vec<(Vec<String>, Arc<CertifiedKey>)> =
        vec![(vec!["*".to_string()], tls.default.clone())];
    for (host, cert) in tls.by_host.iter().chain(extra) {
        let host = host.to_string();
        match out.iter_mut().find(|(_, c)| Arc::ptr_eq(c, cert)) {
            Some((hosts, _)) if !hosts.contains(&host) => hosts.push(host),
            Some(_) => {}
            None => out.push((vec![host], cert.clone())),
        }
    }
    out.into_iter()
        .map(|(hosts, cert)| (hosts.join(","), cert))
        .collect()
}

/// The leaf certificate's `notAfter`, in Unix seconds; `None` if it does not parse (it
/// was parsed when loaded, so this does not happen for a served one).
fn not_after(cert: &CertifiedKey) -> Option<i64> {
    let der = cert.end_entity_cert().ok()?;
    let (_, parsed) = X509Certificate::from_der(der).ok()?;
    Some(parsed.validity().not_after.timestamp())
}

fn unix_seconds(t: SystemTime) -> i64 {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => d.as_secs() as i64,
        Err(e) => -(e.duration().as_secs() as i64),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    /// A self-signed certificate for `name`, valid until `not_after` (Unix seconds).
    fn cert(name: &str, not_after: i64) -> Arc<CertifiedKey> {
        let mut params = rcgen::CertificateParams::new(vec![name.to_string()]).unwrap();
        params.not_after = rcgen::date_time_ymd(1970, 1, 1) + Duration::from_secs(not_after as u64);
        let key = rcgen::KeyPair::generate().unwrap();
        let der = params.self_signed(&key).unwrap().der().clone();
        let private = rustls::pki_types::PrivateKeyDer::try_from(key.serialize_der()).unwrap();
        let provider = rustls::crypto::ring::default_provider();
        Arc::new(CertifiedKey::from_der(vec![der], private, &provider).unwrap())
    }

    #[test]
    fn not_after_reads_the_certificates_validity() {
        // 2031-05-06T07:08:09Z.
        let at = 1_935_990_489;
        assert_eq!(not_after(&cert("a.example", at)), Some(at));
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(at as u64 - 86_400);
        assert_eq!(unix_seconds(now), at - 86_400);
        let before_epoch = SystemTime::UNIX_EPOCH - Duration::from_secs(5);
        assert_eq!(unix_seconds(before_epoch), -5);
    }

    #[test]
    fn each_certificate_is_listed_once_with_every_host_it_is_chosen_for() {
        let default = cert("default.example", 2_000_000_000);
        let shared = cert("a.example", 2_000_000_100);
        let ingress = cert("ing.example", 2_000_000_200);
        let tls = ServerTls {
            default: default.clone(),
            by_host: vec![
                (HostPattern::parse("a.example").unwrap(), shared.clone()),
                (HostPattern::parse("*.b.example").unwrap(), shared.clone()),
                (HostPattern::parse("default.example").unwrap(), default),
            ],
            client_ca: None,
            client_cert_optional: false,
        };
        let extra = [(HostPattern::parse("ing.example").unwrap(), ingress)];
        let got: Vec<(String, Option<i64>)> = served(&tls, &extra)
            .into_iter()
            .map(|(hosts, c)| (hosts, not_after(&c)))
            .collect();
        assert_eq!(
            got,
            [
                ("*,default.example".to_string(), Some(2_000_000_000)),
                ("a.example,*.b.example".to_string(), Some(2_000_000_100)),
                ("ing.example".to_string(), Some(2_000_000_200)),
            ]
        );
    }
}
