//! The Gateway API kinds as `kube` resources, so `kube::runtime` can watch and reflect them
//! and the leader can patch their status: kind, group, version and plural as the
//! gateway-api v1.6.1 CRDs serve them (`v1` for every kind; ReferenceGrant is stored at
//! `v1beta1` and served at `v1` too). GatewayClass is cluster-scoped, the others namespaced.

use std::borrow::Cow;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::{ClusterResourceScope, NamespaceResourceScope};

use super::types::{GROUP, Gateway, GatewayClass, HttpRoute, ReferenceGrant};

macro_rules! resource {
    ($type:ty, $scope:ty, $kind:literal, $plural:literal) => {
        impl kube::Resource for $type {
            type DynamicType = ();
            type Scope = $scope;
            fn kind(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($kind)
            }
            fn group(_: &()) -> Cow<'_, str> {
                Cow::Borrowed(GROUP)
            }
            fn version(_: &()) -> Cow<'_, str> {
                Cow::Borrowed("v1")
            }
            fn plural(_: &()) -> Cow<'_, str> {
                Cow::Borrowed($plural)
            }
            fn meta(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn meta_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

resource!(
    GatewayClass,
    ClusterResourceScope,
    "GatewayClass",
    "gatewayclasses"
);
resource!(Gateway, NamespaceResourceScope, "Gateway", "gateways");
resource!(HttpRoute, NamespaceResourceScope, "HTTPRoute", "httproutes");
resource!(
    ReferenceGrant,
    NamespaceResourceScope,
    "ReferenceGrant",
    "referencegrants"
);

#[cfg(test)]
mod tests {
    use kube::Resource;

    use super::*;

    #[test]
    fn each_kind_is_addressed_as_its_crd_serves_it() {
        assert_eq!(
            GatewayClass::url_path(&(), None),
            "/apis/gateway.networking.k8s.io/v1/gatewayclasses"
        );
        assert_eq!(
            HttpRoute::url_path(&(), Some("web")),
            "/apis/gateway.networking.k8s.io/v1/namespaces/web/httproutes"
        );
        assert_eq!(Gateway::api_version(&()), "gateway.networking.k8s.io/v1");
        assert_eq!(ReferenceGrant::kind(&()), "ReferenceGrant");
    }
}
