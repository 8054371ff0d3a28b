//! Which Ingresses are ours, as the Ingress spec and ingress-nginx decide it:
//! `spec.ingressClassName` naming our IngressClass (whose `spec.controller` is
//! [`CONTROLLER`](super::model::CONTROLLER)); no class at all when that IngressClass is
//! marked default; or the legacy `kubernetes.io/ingress.class` annotation naming the class.
//! An Ingress that names a class, even a missing one, is never taken as default.

use std::sync::Arc;

use k8s_openapi::api::networking::v1::{Ingress, IngressClass};

use super::model::CONTROLLER;

/// The annotation that marks an IngressClass as the cluster's default.
pub const DEFAULT_CLASS_ANNOTATION: &str = "ingressclass.kubernetes.io/is-default-class";
/// The annotation Ingresses used before `spec.ingressClassName` existed.
pub const LEGACY_CLASS_ANNOTATION: &str = "kubernetes.io/ingress.class";

/// The class decision, made once per build from the IngressClass objects.
#[derive(Debug)]
pub struct ClassSelector<'a> {
    class: &'a str,
    /// Our IngressClass exists and names our controller.
    registered: bool,
    /// ... and is marked default.
    default: bool,
}

/// Whether our IngressClass exists (naming our controller) and is the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClassDecision {
    registered: bool,
    default: bool,
}

impl<'a> ClassSelector<'a> {
    pub fn new(classes: &[Arc<IngressClass>], class: &'a str) -> Self {
        let ours = classes.iter().find(|c| {
            c.metadata.name.as_deref() == Some(class)
                && c.spec.as_ref().and_then(|s| s.controller.as_deref()) == Some(CONTROLLER)
        });
        ClassSelector {
            class,
            registered: ours.is_some(),
            default: ours.is_some_and(|c| {
                c.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get(DEFAULT_CLASS_ANNOTATION))
                    .is_some_and(|v| v == "true")
            }),
        }
    }

    /// What this selector decided from the IngressClasses, to tell whether the same
    /// Ingresses are ours as at another build.
    pub fn decision(&self) -> ClassDecision {
        ClassDecision {
            registered: self.registered,
            default: self.default,
        }
    }

    /// True when `ingress` belongs to our class (the namespace is checked apart).
    pub fn ours(&self, ingress: &Ingress) -> bool {
        if let Some(name) = ingress
            .spec
            .as_ref()
            .and_then(|s| s.ingress_class_name.as_deref())
        {
            return self.registered && name == self.class;
        }
        match ingress
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(LEGACY_CLASS_ANNOTATION))
        {
            Some(legacy) => legacy == self.class,
            None => self.default,
        }
    }
}
