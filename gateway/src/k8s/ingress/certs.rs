//! TLS Secrets (`kubernetes.io/tls`, keys `tls.crt` and `tls.key`) turned into rustls
//! certificates for the SNI resolver. Each Secret is parsed at most once per build, however
//! many Ingresses name it; a Secret that is missing or does not parse is a problem reported
//! on the Ingress, never a panic and never a reason to drop the Ingress's routes.

use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::Secret;
use rustls::sign::CertifiedKey;

use crate::config::certified_key_from_pem;

/// A Secret's certificate, or why it has none.
type Parsed = Result<Arc<CertifiedKey>, String>;

pub const TLS_SECRET_TYPE: &str = "kubernetes.io/tls";

/// Secrets by `(namespace, name)`, and the certificates parsed from them so far.
#[derive(Debug, Default)]
pub struct Certs<'a> {
    /// Index into `list` and `parsed`.
    secrets: HashMap<(&'a str, &'a str), usize>,
    list: Vec<&'a Secret>,
    parsed: RefCell<Vec<Option<Parsed>>>,
}

impl<'a> Certs<'a> {
    pub fn index(secrets: &'a [Arc<Secret>]) -> Self {
        let mut index = Certs::default();
        for s in secrets {
            if let (Some(ns), Some(name)) = (&s.metadata.namespace, &s.metadata.name) {
                index
                    .secrets
                    .insert((ns.as_str(), name.as_str()), index.list.len());
                index.list.push(s);
            }
        }
        index.parsed = RefCell::new(vec![None; index.list.len()]);
        index
    }

    /// The certificate in Secret `namespace/name`, or why there is none.
    pub fn get(&self, namespace: &str, name: &str) -> Result<Arc<CertifiedKey>, String> {
        let Some(&i) = self.secrets.get(&(namespace, name)) else {
            return Err(format!("secret {namespace}/{name} not found"));
        };
        self.parsed.borrow_mut()[i]
            .get_or_insert_with(|| {
                parse(self.list[i])
                    .map(Arc::new)
                    .map_err(|e| format!("secret {namespace}/{name}: {e}"))
            })
            .clone()
    }
}

fn parse(secret: &Secret) -> Result<CertifiedKey, String> {
    if secret.type_.as_deref() != Some(TLS_SECRET_TYPE) {
        return Err(format!(
            "type is {}, not {TLS_SECRET_TYPE}",
            secret.type_.as_deref().unwrap_or("unset")
        ));
    }
    let data = secret.data.as_ref();
    let field = |k: &str| {
        data.and_then(|d| d.get(k))
            .map(|b| b.0.as_slice())
            .ok_or_else(|| format!("has no {k}"))
    };
    certified_key_from_pem(field("tls.crt")?, field("tls.key")?)
}
