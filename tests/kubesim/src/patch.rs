//! JSON merge patch (RFC 7386) and the strategic merge patch shapes leafgate writes.
//! Owns the algebra only; the store decides what part of an object a patch may touch.

use serde_json::{Map, Value};

/// RFC 7386: objects merge, `null` deletes, everything else replaces.
pub fn merge(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            let t = target.as_object_mut().expect("made an object above");
            for (k, v) in p {
                if v.is_null() {
                    t.remove(k);
                } else {
                    merge(t.entry(k.clone()).or_insert(Value::Null), v);
                }
            }
        }
        other => *target = other.clone(),
    }
}

/// The merge key Kubernetes declares (`patchMergeKey`) for a list field, by field name.
fn merge_key(field: &str) -> Option<&'static str> {
    Some(match field {
        "conditions" | "addresses" | "taints" => match field {
            "taints" => "key",
            _ => "type",
        },
        "containers"
        | "initContainers"
        | "ephemeralContainers"
        | "volumes"
        | "env"
        | "containerStatuses"
        | "initContainerStatuses"
        | "imagePullSecrets" => "name",
        "volumeMounts" => "mountPath",
        "ownerReferences" => "uid",
        "ports" => "containerPort",
        _ => return None,
    })
}

/// Strategic merge patch: maps merge, lists with a merge key merge element-wise
/// (`$patch: delete` removes an element), other lists are replaced, `null` deletes.
pub fn strategic(target: &mut Value, patch: &Value) {
    strategic_in(target, patch)
}

fn strategic_in(target: &mut Value, patch: &Value) {
    let Value::Object(p) = patch else {
        *target = patch.clone();
        return;
    };
    if p.get("$patch").and_then(Value::as_str) == Some("replace") {
        let mut p = p.clone();
        p.remove("$patch");
        *target = Value::Object(p);
        return;
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let t = target.as_object_mut().expect("made an object above");
    for (k, v) in p {
        if k.starts_with("$setElementOrder/") || k == "$patch" || k.starts_with("$retainKeys") {
            continue;
        }
        match (v, merge_key(k)) {
            (Value::Null, _) => {
                t.remove(k);
            }
            (Value::Array(items), Some(key)) => {
                let existing = t
                    .entry(k.clone())
                    .or_insert_with(|| Value::Array(Vec::new()));
                if !existing.is_array() {
                    *existing = Value::Array(Vec::new());
                }
                let list = existing.as_array_mut().expect("made an array above");
                for item in items {
                    let id = item.get(key).cloned();
                    let pos = id
                        .as_ref()
                        .and_then(|id| list.iter().position(|e| e.get(key) == Some(id)));
                    let delete = item.get("$patch").and_then(Value::as_str) == Some("delete");
                    match (pos, delete) {
                        (Some(i), true) => {
                            list.remove(i);
                        }
                        (None, true) => {}
                        (Some(i), false) => strategic_in(&mut list[i], item),
                        (None, false) => list.push(item.clone()),
                    }
                }
            }
            (Value::Object(_), _) => strategic_in(t.entry(k.clone()).or_insert(Value::Null), v),
            _ => {
                t.insert(k.clone(), v.clone());
            }
        }
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// Splits a JSON pointer into its parent pointer and last token.
fn split(path: &str) -> Result<(&str, String), String> {
    let i = path
        .rfind('/')
        .ok_or_else(|| format!("invalid JSON pointer {path:?}: must start with \"/\""))?;
    Ok((&path[..i], unescape(&path[i + 1..])))
}

fn add(doc: &mut Value, path: &str, value: Value) -> Result<(), String> {
    if path.is_empty() {
        *doc = value;
        return Ok(());
    }
    let (parent, last) = split(path)?;
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => {
            m.insert(last, value);
            Ok(())
        }
        Some(Value::Array(a)) => {
            let i = if last == "-" {
                a.len()
            } else {
                last.parse()
                    .map_err(|_| format!("invalid array index {last:?}"))?
            };
            if i > a.len() {
                return Err(format!("array index {i} out of bounds at {path:?}"));
            }
            a.insert(i, value);
            Ok(())
        }
        _ => Err(format!("doc is missing path: {path:?}")),
    }
}

fn remove(doc: &mut Value, path: &str) -> Result<Value, String> {
    let (parent, last) = split(path)?;
    let missing = || format!("doc is missing path: {path:?}");
    match doc.pointer_mut(parent) {
        Some(Value::Object(m)) => m.remove(&last).ok_or_else(missing),
        Some(Value::Array(a)) => {
            let i: usize = last.parse().map_err(|_| missing())?;
            (i < a.len()).then(|| a.remove(i)).ok_or_else(missing)
        }
        _ => Err(missing()),
    }
}

/// RFC 6902 JSON patch: `add`, `remove`, `replace`, `move`, `copy`, `test`. Stops at the
/// first failing operation with the message kube-apiserver's library would give.
pub fn json_patch(doc: &mut Value, ops: &Value) -> Result<(), String> {
    let ops = ops
        .as_array()
        .ok_or("a JSON patch must be an array of operations")?;
    for op in ops {
        let path = op
            .get("path")
            .and_then(Value::as_str)
            .ok_or("operation has no \"path\"")?;
        let value = || {
            op.get("value")
                .cloned()
                .ok_or_else(|| format!("operation at {path:?} has no \"value\""))
        };
        let from = || {
            op.get("from")
                .and_then(Value::as_str)
                .ok_or_else(|| format!("operation at {path:?} has no \"from\""))
        };
        match op.get("op").and_then(Value::as_str) {
            Some("add") => add(doc, path, value()?)?,
            Some("remove") => {
                remove(doc, path)?;
            }
            Some("replace") => {
                remove(doc, path)?;
                add(doc, path, value()?)?;
            }
            Some("move") => {
                let v = remove(doc, from()?)?;
                add(doc, path, v)?;
            }
            Some("copy") => {
                let v = doc
                    .pointer(from()?)
                    .cloned()
                    .ok_or_else(|| format!("doc is missing from path: {path:?}"))?;
                add(doc, path, v)?;
            }
            Some("test") => {
                if doc.pointer(path) != Some(&value()?) {
                    return Err(format!("testing value {path:?} failed: test failed"));
                }
            }
            other => return Err(format!("unexpected kind: {other:?}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn merge_patch_deletes_and_replaces_lists() {
        let mut t = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        merge(&mut t, &json!({"a": {"b": null, "d": 3}, "l": [3]}));
        assert_eq!(t, json!({"a": {"c": 2, "d": 3}, "l": [3]}));
    }

    #[test]
    fn strategic_merges_by_key() {
        let mut node = json!({"status": {
            "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}, {"type": "Hostname", "address": "n1"}],
            "conditions": [{"type": "Ready", "status": "False"}],
            "capacity": {"cpu": "1"}
        }});
        strategic(
            &mut node,
            &json!({"status": {
                "addresses": [{"type": "InternalIP", "address": "10.0.0.2"}, {"type": "Hostname", "$patch": "delete"}],
                "conditions": [{"type": "Ready", "status": "True"}, {"type": "MemoryPressure", "status": "False"}],
                "capacity": {"memory": "1Gi"},
                "images": ["a"]
            }}),
        );
        assert_eq!(
            node["status"]["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.2"}])
        );
        assert_eq!(node["status"]["conditions"][0]["status"], "True");
        assert_eq!(node["status"]["conditions"][1]["type"], "MemoryPressure");
        assert_eq!(
            node["status"]["capacity"],
            json!({"cpu": "1", "memory": "1Gi"})
        );
        assert_eq!(node["status"]["images"], json!(["a"]));
    }

    #[test]
    fn json_patch_ops() {
        let mut d = json!({"metadata": {"labels": {"a/b": "1"}}, "l": [1, 3]});
        json_patch(
            &mut d,
            &json!([
                {"op": "add", "path": "/l/1", "value": 2},
                {"op": "add", "path": "/l/-", "value": 4},
                {"op": "replace", "path": "/metadata/labels/a~1b", "value": "2"},
                {"op": "test", "path": "/l/0", "value": 1},
                {"op": "copy", "from": "/l", "path": "/m"},
                {"op": "remove", "path": "/m/0"}
            ]),
        )
        .unwrap();
        assert_eq!(
            d,
            json!({"metadata": {"labels": {"a/b": "2"}}, "l": [1, 2, 3, 4], "m": [2, 3, 4]})
        );
        assert!(json_patch(&mut d, &json!([{"op": "remove", "path": "/nope"}])).is_err());
        assert!(json_patch(&mut d, &json!([{"op": "test", "path": "/l/0", "value": 9}])).is_err());
    }

    #[test]
    fn strategic_containers_by_name() {
        let mut pod = json!({"spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}});
        strategic(
            &mut pod,
            &json!({"spec": {"containers": [{"name": "b", "image": "z"}]}}),
        );
        assert_eq!(pod["spec"]["containers"][0]["image"], "x");
        assert_eq!(pod["spec"]["containers"][1]["image"], "z");
    }
}
