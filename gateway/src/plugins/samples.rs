//! The sample plugin `plugin new` starts a project with, per language and world, and the
//! cases file its `test.sh` checks it against.
//!
//! One behaviour per world whatever the language, so one cases file per world serves all
//! three: a pod-router refuses `kube-system` and sends the rest to the first leaf the
//! gateway knows; an address-rewriter puts the gateway's address first as the node's
//! internal IP, the node's other addresses after it (its own earlier answer among them
//! only once, since a patched node hands it back); a log-filter drops `DEBUG` lines and
//! redacts lines that hold a password; a table-formatter prints each pod's name and phase
//! (one row per pod, as the world requires) and leaves other tables alone.
//! `{{name}}` in a sample is the plugin's name.

use super::kit::Lang;
use super::world::World;

/// The sample's file name and source for `lang` and `world`.
pub fn source(lang: Lang, world: World) -> (&'static str, &'static str) {
    match lang {
        Lang::Rust => ("src/lib.rs", rust(world)),
        Lang::Python => ("app.py", python(world)),
        Lang::Js => ("app.js", js(world)),
    }
}

/// The cases `plugin test` checks the sample against (the samples of every language
/// answer them alike).
pub fn cases(world: World) -> &'static str {
    match world {
        World::PodRouter => POD_ROUTER_CASES,
        World::AddressRewriter => ADDRESS_REWRITER_CASES,
        World::LogFilter => LOG_FILTER_CASES,
        World::TableFormatter => TABLE_FORMATTER_CASES,
    }
}

const POD_ROUTER_CASES: &str = r#"[
  {
    "name": "the first leaf the gateway knows",
    "request": { "namespace": "shop", "pod": "web-1", "verb": "exec", "leaves": ["leaf-2", "leaf-1"] },
    "expect": { "leaf": "leaf-2" }
  },
  {
    "name": "kube-system is refused",
    "request": { "namespace": "kube-system", "pod": "coredns-1", "verb": "exec", "leaves": ["leaf-1"] },
    "expect": { "reject": { "status": 403, "message": "not here" } }
  },
  {
    "name": "no leaf known: the gateway decides",
    "request": { "namespace": "shop", "pod": "web-1", "verb": "logs", "leaves": [] },
    "expect": "default"
  }
]
"#;

const ADDRESS_REWRITER_CASES: &str = r#"[
  {
    "name": "the gateway's address first",
    "request": { "node": "edge-1", "leaf": "leaf-1", "gateway_address": "10.0.0.9",
                 "addresses": [ { "type": "Hostname", "address": "edge-1" } ] },
    "expect": [ { "type": "InternalIP", "address": "10.0.0.9" }, { "type": "Hostname", "address": "edge-1" } ]
  },
  {
    "name": "its own earlier answer is not repeated",
    "request": { "node": "edge-1", "leaf": "leaf-1", "gateway_address": "10.0.0.9",
                 "addresses": [ { "type": "InternalIP", "address": "10.0.0.9" }, { "type": "Hostname", "address": "edge-1" } ] },
    "expect": [ { "type": "InternalIP", "address": "10.0.0.9" }, { "type": "Hostname", "address": "edge-1" } ]
  }
]
"#;

const LOG_FILTER_CASES: &str = r#"[
  {
    "name": "DEBUG lines dropped, passwords redacted",
    "request": ["GET / 200", "DEBUG cache warm", "login password=hunter2", ""],
    "expect": ["GET / 200", "[redacted]", ""]
  }
]
"#;

const TABLE_FORMATTER_CASES: &str = r#"[
  {
    "name": "a pod list prints each pod's name and phase",
    "request": { "group": "", "version": "v1", "resource": "pods", "wide": false,
                 "objects": [ { "metadata": { "name": "web-1" }, "status": { "phase": "Running" } },
                              { "metadata": { "name": "web-2" } } ] },
    "expect": {
      "apiVersion": "meta.k8s.io/v1",
      "kind": "Table",
      "metadata": {},
      "columnDefinitions": [
        { "name": "NAME", "type": "string", "format": "name", "description": "The pod's name.", "priority": 0 },
        { "name": "PHASE", "type": "string", "format": "", "description": "The pod's phase.", "priority": 0 }
      ],
      "rows": [ { "cells": ["web-1", "Running"] }, { "cells": ["web-2", null] } ]
    }
  },
  {
    "name": "other lists get the gateway's table",
    "request": { "group": "", "version": "v1", "resource": "services", "wide": false, "objects": [] },
    "expect": null
  }
]
"#;

fn rust(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"//! {{name}}: a leafgate pod-router plugin. It refuses kube-system and sends every other
//! request to the first leaf the gateway knows.

use leafgate_plugin::pod_router::{Guest, Rejection, RouteDecision, RouteRequest};

struct Plugin;

impl Guest for Plugin {
    fn route(req: RouteRequest) -> RouteDecision {
        if req.namespace == "kube-system" {
            let message = "not here".to_string();
            return RouteDecision::Reject(Rejection { status: 403, message });
        }
        match req.leaves().next() {
            Some(leaf) => RouteDecision::Leaf(leaf.to_string()),
            None => RouteDecision::Default,
        }
    }
}

leafgate_plugin::export_pod_router!(Plugin);
"#
        }
        World::AddressRewriter => {
            r#"//! {{name}}: a leafgate address-rewriter plugin. It puts the gateway's address first, as
//! the node's internal IP; the node's other addresses follow, minus any copy of that entry
//! (a patched node hands back the list this plugin answered last time).

use leafgate_plugin::address_rewriter::{AddressRequest, AddressType, Guest, NodeAddress};

struct Plugin;

impl Guest for Plugin {
    fn rewrite(req: AddressRequest) -> Vec<NodeAddress> {
        let address = req.gateway_address;
        let others = req
            .addresses
            .into_iter()
            .filter(|a| !(a.type_ == AddressType::InternalIp && a.address == address));
        let others: Vec<NodeAddress> = others.collect();
        let gateway = NodeAddress { type_: AddressType::InternalIp, address };
        std::iter::once(gateway).chain(others).collect()
    }
}

leafgate_plugin::export_address_rewriter!(Plugin);
"#
        }
        World::LogFilter => {
            r#"//! {{name}}: a leafgate log-filter plugin. It drops DEBUG lines and redacts lines that
//! hold a password.

use leafgate_plugin::log_filter::{Guest, LogContext, Verdict, Verdicts, lines};

struct Plugin;

impl Guest for Plugin {
    fn filter(_ctx: LogContext, batch: String) -> Verdicts {
        lines(&batch)
            .map(|line| {
                if line.starts_with("DEBUG") {
                    Verdict::Drop
                } else if line.contains("password") {
                    Verdict::Replace("[redacted]".into())
                } else {
                    Verdict::Keep
                }
            })
            .collect()
    }
}

leafgate_plugin::export_log_filter!(Plugin);
"#
        }
        World::TableFormatter => {
            r#"//! {{name}}: a leafgate table-formatter plugin. It prints each pod's name and phase, one
//! row per pod (a long list comes in parts, so a row may depend on its own pod only), and
//! leaves every other table to the gateway.

use leafgate_plugin::k8s::{Pod, list_from_json};
use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct Plugin;

fn column(name: &str, format: &str, description: &str) -> Column {
    Column {
        name: name.into(),
        type_: ColumnType::String,
        format: format.into(),
        description: description.into(),
        priority: 0,
    }
}

impl Guest for Plugin {
    fn format(req: TableRequest) -> Option<Table> {
        if req.resource != "pods" {
            return None;
        }
        // Objects that do not read as pods: the gateway's own table prints them.
        let pods: Vec<Pod> = list_from_json(&req.objects).ok()?;
        let columns = vec![
            column("NAME", "name", "The pod's name."),
            column("PHASE", "", "The pod's phase."),
        ];
        let rows = pods
            .into_iter()
            .map(|pod| Row {
                cells: vec![
                    Cell::Text(pod.metadata.name),
                    pod.status.phase.map_or(Cell::None, Cell::Text),
                ],
            })
            .collect();
        Some(Table { columns, rows })
    }
}

leafgate_plugin::export_table_formatter!(Plugin);
"#
        }
    }
}

fn python(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#""""{{name}}: a leafgate pod-router plugin. It refuses kube-system and sends every
other request to the first leaf the gateway knows."""

from leafgate_plugin import pod_router as pr


class WitWorld:
    def route(self, req: pr.RouteRequest) -> pr.RouteDecision:
        if req.namespace == "kube-system":
            return pr.reject(403, "not here")
        leaves = pr.leaves(req)
        return pr.leaf(leaves[0]) if leaves else pr.default()
"#
        }
        World::AddressRewriter => {
            r#""""{{name}}: a leafgate address-rewriter plugin. It puts the gateway's address first,
as the node's internal IP; the node's other addresses follow, minus any copy of that
entry (a patched node hands back the list this plugin answered last time)."""

from leafgate_plugin import address_rewriter as ar


class WitWorld:
    def rewrite(self, req: ar.AddressRequest) -> list:
        gateway = ar.address(ar.AddressType.INTERNAL_IP, req.gateway_address)
        return [gateway] + [a for a in req.addresses if a != gateway]
"#
        }
        World::LogFilter => {
            r#""""{{name}}: a leafgate log-filter plugin. It drops DEBUG lines and redacts lines
that hold a password."""

from leafgate_plugin import log_filter as lf


class WitWorld:
    def filter(self, ctx: lf.LogContext, lines: str):
        out = lf.Verdicts()
        for line in lf.lines(lines):
            if line.startswith("DEBUG"):
                out.drop()
            elif "password" in line:
                out.replace("[redacted]")
            else:
                out.keep()
        return out.done()
"#
        }
        World::TableFormatter => {
            r#""""{{name}}: a leafgate table-formatter plugin. It prints each pod's name and phase,
one row per pod (a long list comes in parts, so a row may depend on its own pod only),
and leaves every other table to the gateway."""

from leafgate_plugin import table_formatter as tf


class WitWorld:
    def format(self, req: tf.TableRequest):
        if req.resource != "pods":
            return None
        columns = [
            tf.column("NAME", format="name", description="The pod's name."),
            tf.column("PHASE", description="The pod's phase."),
        ]
        rows = [
            tf.row(pod.get("metadata", {}).get("name", ""), pod.get("status", {}).get("phase"))
            for pod in tf.objects(req)
        ]
        return tf.Table(columns, rows)
"#
        }
    }
}

fn js(world: World) -> &'static str {
    match world {
        World::PodRouter => {
            r#"// {{name}}: a leafgate pod-router plugin. It refuses kube-system and sends every other
// request to the first leaf the gateway knows.
import { podRouter as pr } from './sdk/leafgate-plugin.js';

/** @param {import('leafgate:plugin/types').RouteRequest} req */
export function route(req) {
  if (req.namespace === 'kube-system') return pr.reject(403, 'not here');
  const leaves = pr.leaves(req);
  return leaves.length ? pr.leaf(leaves[0]) : pr.byDefault();
}
"#
        }
        World::AddressRewriter => {
            r#"// {{name}}: a leafgate address-rewriter plugin. It puts the gateway's address first, as
// the node's internal IP; the node's other addresses follow, minus any copy of that entry
// (a patched node hands back the list this plugin answered last time).
import { addressRewriter as ar } from './sdk/leafgate-plugin.js';

/** @param {import('leafgate:plugin/types').AddressRequest} req */
export function rewrite(req) {
  const isGateway = (a) => a.type === 'internal-ip' && a.address === req.gatewayAddress;
  return [ar.address('internal-ip', req.gatewayAddress), ...req.addresses.filter((a) => !isGateway(a))];
}
"#
        }
        World::LogFilter => {
            r#"// {{name}}: a leafgate log-filter plugin. It drops DEBUG lines and redacts lines that
// hold a password.
import { logFilter as lf } from './sdk/leafgate-plugin.js';

export function filter(ctx, batch) {
  const out = lf.verdicts();
  for (const line of lf.lines(batch)) {
    if (line.startsWith('DEBUG')) out.drop();
    else if (line.includes('password')) out.replace('[redacted]');
    else out.keep();
  }
  return out.done();
}
"#
        }
        World::TableFormatter => {
            r#"// {{name}}: a leafgate table-formatter plugin. It prints each pod's name and phase, one
// row per pod (a long list comes in parts, so a row may depend on its own pod only), and
// leaves every other table to the gateway.
import { tableFormatter as tf } from './sdk/leafgate-plugin.js';

/** @param {import('leafgate:plugin/types').TableRequest} req */
export function format(req) {
  if (req.resource !== 'pods') return undefined;
  const columns = [
    tf.column('NAME', { format: 'name', description: "The pod's name." }),
    tf.column('PHASE', { description: "The pod's phase." }),
  ];
  const rows = tf.objects(req).map((pod) => tf.row(pod.metadata?.name ?? '', pod.status?.phase));
  return { columns, rows };
}
"#
        }
    }
}
