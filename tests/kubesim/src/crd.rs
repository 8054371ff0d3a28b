//! The custom resources' tables: each kind's `additionalPrinterColumns`, copied from
//! gateway-api v1.6.1's standard CRDs (`config/crd/standard/gateway.networking.k8s.io_*.yaml`;
//! the `v1` and `v1beta1` columns are the same there), rendered as the apiextensions
//! table convertor (`registry/customresource/tableconvertor`) renders them: a `Name`
//! column, then one per printer column, the cell the first JSONPath result (`string`
//! columns printed by `PrintResults`, `date` columns as a human age), `null` when the path
//! reaches nothing.
//!
//! And their structural schemas (`crd_schemas.json`, written by `scripts/crd-schemas.py`
//! from the upstream YAML: every property's name and the `default:` values), applied to
//! every object written as the apiextensions handler applies them: first pruning
//! (`apiserver/schema/pruning`): a field no `properties` of its object names is dropped
//! (a `status` given to a ReferenceGrant, whose schema has none; an unknown `spec.foo`),
//! maps by `additionalProperties`, list items by `items`, the root's `metadata` left to
//! ObjectMeta; then defaulting (`apiserver/schema/defaulting`): a property with a default
//! that is absent (or null; none of these is nullable) gets it, then every property is
//! defaulted in turn, list items by `items`. So a Gateway nobody has written status for reads with the CRD's default
//! conditions (`Accepted` and `Programmed` `Unknown`, reason `Pending`), and an HTTPRoute
//! rule without matches matches `PathPrefix /`, as in a cluster.

use std::sync::LazyLock;

use serde_json::{Value, json};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::jsonpath::{self, Path};
use crate::resources::Resource;
use crate::table::{col, human_duration};

/// One `additionalPrinterColumns` entry.
#[derive(Debug, Clone, Copy)]
pub struct PrinterColumn {
    pub name: &'static str,
    pub type_: &'static str,
    pub json_path: &'static str,
    pub priority: u8,
}

const fn c(name: &'static str, type_: &'static str, json_path: &'static str) -> PrinterColumn {
    PrinterColumn {
        name,
        type_,
        json_path,
        priority: 0,
    }
}

const AGE: PrinterColumn = c("Age", "date", ".metadata.creationTimestamp");

const GATEWAYCLASS: &[PrinterColumn] = &[
    c("Controller", "string", ".spec.controllerName"),
    c(
        "Accepted",
        "string",
        r#".status.conditions[?(@.type=="Accepted")].status"#,
    ),
    AGE,
    PrinterColumn {
        priority: 1,
        ..c("Description", "string", ".spec.description")
    },
];

const GATEWAY: &[PrinterColumn] = &[
    c("Class", "string", ".spec.gatewayClassName"),
    c("Address", "string", ".status.addresses[*].value"),
    c(
        "Programmed",
        "string",
        r#".status.conditions[?(@.type=="Programmed")].status"#,
    ),
    AGE,
];

const HTTPROUTE: &[PrinterColumn] = &[c("Hostnames", "string", ".spec.hostnames"), AGE];

const REFERENCEGRANT: &[PrinterColumn] = &[AGE];

/// The documentation's CronTab columns (`Spec`, `Replicas`, `Age`), and an `Image` shown
/// only by `-o wide` (priority 1).
const CRONTAB: &[PrinterColumn] = &[
    c("Spec", "string", ".spec.cronSpec"),
    c("Replicas", "integer", ".spec.replicas"),
    AGE,
    PrinterColumn {
        priority: 1,
        ..c("Image", "string", ".spec.image")
    },
];

/// What the apiextensions handler gives a CRD version without `additionalPrinterColumns`:
/// one `Age` column (`creationTimestamp`).
const DEFAULT: &[PrinterColumn] = &[AGE];

/// The printer columns of a custom resource, by plural.
pub fn printer_columns(plural: &str) -> &'static [PrinterColumn] {
    match plural {
        "gatewayclasses" => GATEWAYCLASS,
        "gateways" => GATEWAY,
        "httproutes" => HTTPROUTE,
        "referencegrants" => REFERENCEGRANT,
        "crontabs" => CRONTAB,
        _ => DEFAULT,
    }
}

/// The schema skeletons, by `<plural>/<version>`.
static SCHEMAS: LazyLock<Value> = LazyLock::new(|| {
    serde_json::from_str(include_str!("crd_schemas.json")).expect("crd_schemas.json is JSON")
});

fn schema(res: &Resource) -> Option<&'static Value> {
    SCHEMAS["kinds"].get(format!("{}/{}", res.plural, res.version).as_str())
}

/// Prunes from `obj` what `res`'s schema does not declare, then applies its defaults.
pub fn structure(res: &Resource, obj: &mut Value) {
    if let Some(node) = schema(res) {
        prune_in(obj, node);
        default_in(obj, node);
    }
}

/// Applies `res`'s schema defaults to `obj`.
pub fn default(res: &Resource, obj: &mut Value) {
    if let Some(node) = schema(res) {
        default_in(obj, node);
    }
}

/// `pruning.Prune`: the fields of an object whose schema has `properties` are kept only
/// where named; a map's values and a list's items are pruned by their schemas. A node
/// with neither (a scalar, the root's `metadata`) is left as it is.
fn prune_in(x: &mut Value, s: &Value) {
    match x {
        Value::Object(m) => {
            if let Some(props) = s.get("properties").and_then(Value::as_object) {
                m.retain(|k, _| props.contains_key(k));
                for (k, v) in m.iter_mut() {
                    prune_in(v, &props[k]);
                }
            } else if let Some(extra) = s.get("additionalProperties") {
                for v in m.values_mut() {
                    prune_in(v, extra);
                }
            }
        }
        Value::Array(items) => {
            if let Some(each) = s.get("items") {
                for v in items {
                    prune_in(v, each);
                }
            }
        }
        _ => {}
    }
}

fn default_in(x: &mut Value, s: &Value) {
    match x {
        Value::Object(m) => {
            let props = s.get("properties").and_then(Value::as_object);
            for (k, prop) in props.into_iter().flatten() {
                if let Some(d) = prop.get("default")
                    && m.get(k).is_none_or(Value::is_null)
                {
                    m.insert(k.clone(), d.clone());
                }
            }
            for (k, v) in m.iter_mut() {
                match props.and_then(|p| p.get(k)) {
                    Some(prop) => default_in(v, prop),
                    None => {
                        if let Some(extra) = s.get("additionalProperties") {
                            default_in(v, extra)
                        }
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(each) = s.get("items") {
                for v in items {
                    default_in(v, each);
                }
            }
        }
        _ => {}
    }
}

/// The Table's column definitions for custom resource `res`; `name` is the `Name` column.
pub fn columns(res: &Resource, name: Value) -> Vec<Value> {
    let mut cols = vec![name];
    for pc in printer_columns(res.plural) {
        // A column without a description gets the convertor's.
        let description = format!(
            "Custom resource definition column (in JSONPath format): {}",
            pc.json_path
        );
        cols.push(col(pc.name, pc.type_, "", &description, pc.priority));
    }
    cols
}

/// The row cells of `obj`.
pub fn cells(res: &Resource, obj: &Value) -> Vec<Value> {
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut cells = vec![json!(name)];
    for pc in printer_columns(res.plural) {
        let path = Path::parse(pc.json_path).expect("the printer columns parse");
        let found = path.find(obj);
        let cell = match found.first() {
            None => Value::Null,
            Some(v) if pc.type_ == "string" => jsonpath::print(v).map_or(Value::Null, Value::from),
            Some(v) => typed(pc.type_, v),
        };
        cells.push(cell);
    }
    cells
}

/// `cellForJSONValue` for the non-string column types.
fn typed(type_: &str, v: &Value) -> Value {
    match (type_, v) {
        ("date", Value::String(t)) => match OffsetDateTime::parse(t, &Rfc3339) {
            Ok(t) => json!(human_duration(
                (OffsetDateTime::now_utc() - t).whole_seconds()
            )),
            Err(_) => json!("<invalid>"),
        },
        ("integer", Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map_or(Value::Null, Value::from),
        ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
        ("boolean", Value::Bool(b)) => json!(b),
        _ => Value::Null,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resources::find;

    #[test]
    fn every_printer_column_parses() {
        for plural in [
            "gatewayclasses",
            "gateways",
            "httproutes",
            "referencegrants",
        ] {
            for pc in printer_columns(plural) {
                Path::parse(pc.json_path).unwrap();
            }
        }
    }

    #[test]
    fn defaults_as_the_crds_declare_them() {
        let gw = find("gateway.networking.k8s.io", "v1", "gateways").unwrap();
        let mut obj = json!({"spec": {"gatewayClassName": "x", "listeners": [
            {"name": "http", "port": 80, "protocol": "HTTP"},
            {"name": "https", "port": 443, "protocol": "HTTPS",
             "allowedRoutes": {"namespaces": {"from": "All"}, "kinds": [{"kind": "HTTPRoute"}]},
             "tls": {"certificateRefs": [{"name": "cert"}]}}]}});
        default(gw, &mut obj);
        let l = &obj["spec"]["listeners"];
        assert_eq!(
            l[0]["allowedRoutes"],
            json!({"namespaces": {"from": "Same"}})
        );
        assert_eq!(l[1]["allowedRoutes"]["namespaces"]["from"], "All");
        assert_eq!(
            l[1]["allowedRoutes"]["kinds"][0]["group"],
            "gateway.networking.k8s.io"
        );
        assert_eq!(l[1]["tls"]["mode"], "Terminate");
        assert_eq!(
            l[1]["tls"]["certificateRefs"][0],
            json!({"group": "", "kind": "Secret", "name": "cert"})
        );
        let conditions = &obj["status"]["conditions"];
        assert_eq!(conditions[0]["type"], "Accepted");
        assert_eq!(conditions[1]["type"], "Programmed");
        assert_eq!(conditions[1]["reason"], "Pending");
        assert_eq!(conditions[1]["status"], "Unknown");

        let route = find("gateway.networking.k8s.io", "v1beta1", "httproutes").unwrap();
        let mut obj = json!({"spec": {"parentRefs": [{"name": "gw"}],
                                      "rules": [{"backendRefs": [{"name": "svc", "port": 8080}]},
                                                {"matches": [{"headers": [{"name": "a", "value": "b"}]}]}]}});
        default(route, &mut obj);
        assert_eq!(
            obj["spec"]["parentRefs"][0],
            json!({"group": "gateway.networking.k8s.io", "kind": "Gateway", "name": "gw"})
        );
        let rules = &obj["spec"]["rules"];
        assert_eq!(
            rules[0]["matches"],
            json!([{"path": {"type": "PathPrefix", "value": "/"}}])
        );
        assert_eq!(
            rules[0]["backendRefs"][0],
            json!({"group": "", "kind": "Service", "name": "svc", "port": 8080, "weight": 1})
        );
        assert_eq!(
            rules[1]["matches"][0]["path"],
            json!({"type": "PathPrefix", "value": "/"})
        );
        assert_eq!(rules[1]["matches"][0]["headers"][0]["type"], "Exact");
        assert!(
            obj.get("status").is_none(),
            "HTTPRoute's status has no default"
        );

        let mut obj = json!({"spec": {}});
        default(route, &mut obj);
        assert_eq!(
            obj["spec"]["rules"],
            json!([{"matches": [{"path": {"type": "PathPrefix", "value": "/"}}]}])
        );
    }

    #[test]
    fn a_gateway_row() {
        let gw = find("gateway.networking.k8s.io", "v1", "gateways").unwrap();
        let obj = json!({
            "metadata": {"name": "same-namespace", "creationTimestamp": "2020-01-01T00:00:00Z"},
            "spec": {"gatewayClassName": "leafgate"},
        });
        let cells = cells(gw, &obj);
        assert_eq!(
            cells[..4],
            [
                json!("same-namespace"),
                json!("leafgate"),
                Value::Null,
                Value::Null
            ]
        );
        assert!(
            cells[4]
                .as_str()
                .is_some_and(|a| a.ends_with('y') || a.contains('y')),
            "{cells:?}"
        );
        let cols = columns(gw, json!({"name": "Name"}));
        let names: Vec<&str> = cols.iter().map(|c| c["name"].as_str().unwrap()).collect();
        assert_eq!(names, ["Name", "Class", "Address", "Programmed", "Age"]);
    }
}
