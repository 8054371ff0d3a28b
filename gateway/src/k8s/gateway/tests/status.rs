//! The leader's status writes (`status::desired`): what is written, what an unchanged
//! status costs (nothing), a condition's transition time, and another controller's entries
//! on a route, which stay.

use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};

use super::{INFRA, World, arc, backend, http};
use crate::k8s::gateway::incremental::Translator;
use crate::k8s::gateway::status::{Checked, Write, desired};
use crate::k8s::gateway::types::HttpRoute;

const CONTROLLER: &str = "leafgate.io/gateway-controller";

fn at(s: &str) -> Time {
    Time(s.parse().unwrap())
}

/// The world's objects with each written status applied, as the API server would hold them.
fn apply(w: &mut World, writes: &[Write]) {
    for write in writes {
        let set = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
            meta.name.as_deref() == Some(&write.name)
        };
        match write.plural {
            "gatewayclasses" => {
                for c in w.classes.iter_mut().filter(|c| set(&c.metadata)) {
                    let mut v = serde_json::to_value(c.as_ref()).unwrap();
                    v["status"] = write.status.clone();
                    *c = arc(v);
                }
            }
            "gateways" => {
                for g in w.gateways.iter_mut().filter(|g| set(&g.metadata)) {
                    let mut v = serde_json::to_value(g.as_ref()).unwrap();
                    v["status"] = write.status.clone();
                    *g = arc(v);
                }
            }
            _ => {
                for r in w.routes.iter_mut().filter(|r| set(&r.metadata)) {
                    let mut v = serde_json::to_value(r.as_ref()).unwrap();
                    v["status"] = write.status.clone();
                    *r = arc(v);
                }
            }
        }
    }
}

fn writes(w: &World, now: &Time) -> Vec<Write> {
    desired(
        &w.classes,
        &w.gateways,
        &w.routes,
        &w.model(),
        CONTROLLER,
        now,
        &mut Checked::default(),
    )
}

#[test]
fn statuses_are_written_once_and_keep_their_transition_times() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    w.route(INFRA, "r", "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}));
    let first = writes(&w, &at("2026-01-01T00:00:00Z"));
    let kinds: Vec<&str> = first.iter().map(|w| w.plural).collect();
    assert_eq!(
        kinds,
        ["gatewayclasses", "gateways", "httproutes"],
        "ours only"
    );
    let g = &first[1].status;
    assert_eq!(
        g["addresses"],
        json!([{"type": "IPAddress", "value": "10.0.0.10"}])
    );
    assert_eq!(g["listeners"][0]["attachedRoutes"], 1);
    apply(&mut w, &first);
    // Nothing changed: nothing to write, whatever the clock says.
    assert!(writes(&w, &at("2026-01-01T01:00:00Z")).is_empty());
    // The route's backend goes away: its ResolvedRefs changes and takes the new time; its
    // Accepted keeps the old one.
    w.services
        .retain(|s| s.metadata.name.as_deref() != Some("infra-backend-v1"));
    let second = writes(&w, &at("2026-01-01T02:00:00Z"));
    let route = second.iter().find(|w| w.plural == "httproutes").unwrap();
    let conds = &route.status["parents"][0]["conditions"];
    let time = |t: &str| -> Value {
        conds
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == t)
            .unwrap()["lastTransitionTime"]
            .clone()
    };
    assert_eq!(time("Accepted"), json!("2026-01-01T00:00:00Z"));
    assert_eq!(time("ResolvedRefs"), json!("2026-01-01T02:00:00Z"));
}

#[test]
fn another_controllers_parent_entries_stay() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    let theirs = json!({"parentRef": {"name": "elsewhere"}, "controllerName": "example.com/other", "conditions": []});
    let route: Arc<HttpRoute> = arc(json!({
        "metadata": {"name": "r", "namespace": INFRA, "generation": 1, "creationTimestamp": "2026-01-02T00:00:00Z"},
        "spec": {"parentRefs": [{"name": "same-namespace"}, {"name": "elsewhere"}], "rules": [{"backendRefs": [backend("infra-backend-v1")]}]},
        "status": {"parents": [theirs.clone()]}
    }));
    w.routes.push(route);
    let out = writes(&w, &at("2026-01-01T00:00:00Z"));
    let parents = &out
        .iter()
        .find(|w| w.plural == "httproutes")
        .unwrap()
        .status["parents"];
    assert_eq!(parents.as_array().unwrap().len(), 2);
    assert_eq!(parents[0], theirs);
    assert_eq!(parents[1]["controllerName"], CONTROLLER);
}

#[test]
fn a_route_found_with_its_status_is_not_compared_again_until_it_or_its_status_changes() {
    let mut w = World::new();
    w.gateway("same-namespace", json!([http("http", "Same")]));
    for name in ["a", "b", "c"] {
        w.route(INFRA, name, "2026-01-02T00:00:00Z", json!({"parentRefs": [{"name": "same-namespace"}], "rules": [{"backendRefs": [backend("infra-backend-v1")]}]}));
    }
    let mut t = Translator::default();
    let mut checked = Checked::default();
    let now = at("2026-01-01T00:00:00Z");
    let plan = |w: &World, t: &mut Translator, checked: &mut Checked| {
        let m = t.translate(&w.objects(), &w.settings);
        desired(
            &w.classes,
            &w.gateways,
            &w.routes,
            &m,
            CONTROLLER,
            &now,
            checked,
        )
    };
    let first = plan(&w, &mut t, &mut checked);
    assert_eq!(checked.compared, 3);
    apply(&mut w, &first);
    // Written: compared once more, found as asked.
    assert!(plan(&w, &mut t, &mut checked).is_empty());
    assert_eq!(checked.compared, 3);
    // Then neither the routes nor their statuses changed: not compared.
    assert!(plan(&w, &mut t, &mut checked).is_empty());
    assert_eq!(checked.compared, 0);
    // Route b's backend goes away (a new status of the model): b alone, and written.
    let mut b = serde_json::to_value(w.routes[1].as_ref()).unwrap();
    b["metadata"]["generation"] = json!(3);
    b["spec"]["rules"][0]["backendRefs"][0]["name"] = json!("gone");
    w.routes[1] = arc(b);
    let third = plan(&w, &mut t, &mut checked);
    assert_eq!(checked.compared, 1);
    assert_eq!(third.len(), 1);
    assert_eq!(third[0].name, "b");
    // Someone else writes route c's object (a new resourceVersion): c is compared again.
    let mut c = serde_json::to_value(w.routes[2].as_ref()).unwrap();
    c["metadata"]["resourceVersion"] = json!("42");
    w.routes[2] = arc(c);
    plan(&w, &mut t, &mut checked);
    assert_eq!(checked.compared, 2, "b (not written yet) and c");
}
