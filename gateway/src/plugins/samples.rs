//! The sample plugin `plugin new` starts a project with, per language and world, and the
//! cases file its `test.sh` checks it against.
//!
//! One behaviour per world whatever the language, so one cases file per world serves all
//! three: a pod-router refuses `kube-system` and sends the rest to the first leaf the
//! gateway knows; an address-rewriter puts the gateway's address first as the node's
//! internal IP; a log-filter drops `DEBUG` lines and redacts lines that hold a password;
//! a table-formatter prints how many pods a list holds and leaves other tables alone.
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
    "name": "a pod list prints its count",
    "request": { "group": "", "version": "v1", "resource": "pods", "wide": false, "objects": [ {}, {} ] },
    "expect": {
      "apiVersion": "meta.k8s.io/v1",
      "kind": "Table",
      "metadata": {},
      "columnDefinitions": [ { "name": "PODS", "type": "integer", "format": "",
                               "description": "How many pods the list holds.", "priority": 0 } ],
      "rows": [ { "cells": [2] } ]
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
//! the node's internal IP.

use leafgate_plugin::address_rewriter::{AddressRequest, AddressType, Guest, NodeAddress};

struct Plugin;

impl Guest for Plugin {
    fn rewrite(req: AddressRequest) -> Vec<NodeAddress> {
        let gateway = NodeAddress { type_: AddressType::InternalIp, address: req.gateway_address };
        std::iter::once(gateway).chain(req.addresses).collect()
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
            r#"//! {{name}}: a leafgate table-formatter plugin. It prints how many pods a list holds,
//! and leaves every other table to the gateway.

use leafgate_plugin::k8s::{Pod, list_from_json};
use leafgate_plugin::table_formatter::{Cell, Column, ColumnType, Guest, Row, Table, TableRequest};

struct Plugin;

impl Guest for Plugin {
    fn format(req: TableRequest) -> Option<Table> {
        if req.resource != "pods" {
            return None;
        }
        let pods: Vec<Pod> = list_from_json(&req.objects).unwrap_or_default();
        let column = Column {
            name: "PODS".into(),
            type_: ColumnType::Integer,
            format: String::new(),
            description: "How many pods the list holds.".into(),
            priority: 0,
        };
        let count = i64::try_from(pods.len()).unwrap_or(i64::MAX);
        Some(Table { columns: vec![column], rows: vec![Row { cells: vec![Cell::Integer(count)] }] })
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
as the node's internal IP."""

from leafgate_plugin import address_rewriter as ar


class WitWorld:
    def rewrite(self, req: ar.AddressRequest) -> list:
        return [ar.address(ar.AddressType.INTERNAL_IP, req.gateway_address)] + list(req.addresses)
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
            r#""""{{name}}: a leafgate table-formatter plugin. It prints how many pods a list holds,
and leaves every other table to the gateway."""

from leafgate_plugin import table_formatter as tf


class WitWorld:
    def format(self, req: tf.TableRequest):
        if req.resource != "pods":
            return None
        column = tf.column("PODS", tf.ColumnType.INTEGER, description="How many pods the list holds.")
        return tf.Table([column], [tf.row(len(tf.objects(req)))])
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
// the node's internal IP.
import { addressRewriter as ar } from './sdk/leafgate-plugin.js';

/** @param {import('leafgate:plugin/types').AddressRequest} req */
export function rewrite(req) {
  return [ar.address('internal-ip', req.gatewayAddress), ...req.addresses];
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
            r#"// {{name}}: a leafgate table-formatter plugin. It prints how many pods a list holds,
// and leaves every other table to the gateway.
import { tableFormatter as tf } from './sdk/leafgate-plugin.js';

/** @param {import('leafgate:plugin/types').TableRequest} req */
export function format(req) {
  if (req.resource !== 'pods') return undefined;
  const column = tf.column('PODS', { type: 'integer', description: 'How many pods the list holds.' });
  return { columns: [column], rows: [tf.row(BigInt(tf.objects(req).length))] };
}
"#
        }
    }
}
