// leafgate's admin dashboard: polls /status and /metrics of the admin listener it was
// served by, keeps 15 minutes of samples in this tab, and draws tables and SVG
// sparklines. Nothing from the gateway is ever parsed as HTML: every value goes in
// through textContent or an attribute.
"use strict";

const POLL_MS = 2000;
const KEEP_MS = 15 * 60 * 1000;
const TOKEN_KEY = "leafgate-admin-token";
const SVG = "http://www.w3.org/2000/svg";

/** Samples of the metrics, oldest first: {at, m} with m from parseMetrics. */
const history = [];
/** Reload results seen, newest first (/status holds only the last one). */
const reloads = [];

// ---- Prometheus text parsing ----

/** Parses the text exposition into [{name, labels, value}]. */
function parseMetrics(text) {
  const out = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const sample = parseSample(line);
    if (sample) out.push(sample);
  }
  return out;
}

function parseSample(line) {
  let i = 0;
  while (i < line.length && /[A-Za-z0-9_:]/.test(line[i])) i++;
  const name = line.slice(0, i);
  const labels = {};
  if (line[i] === "{") {
    i++;
    while (i < line.length && line[i] !== "}") {
      const eq = line.indexOf("=", i);
      if (eq < 0) return null;
      const key = line.slice(i, eq).trim();
      i = eq + 1;
      if (line[i] !== '"') return null;
      i++;
      let value = "";
      while (i < line.length && line[i] !== '"') {
        if (line[i] === "\\" && i + 1 < line.length) {
          const next = line[i + 1];
          value += next === "n" ? "\n" : next;
          i += 2;
        } else {
          value += line[i++];
        }
      }
      labels[key] = value;
      i++;
      if (line[i] === ",") i++;
    }
    i++;
  }
  const value = parseFloat(line.slice(i).trim().split(" ")[0]);
  return Number.isNaN(value) ? null : { name, labels, value };
}

/** Sums the samples of `name` by the value of `key` (a function of the labels). */
function sumBy(samples, name, key) {
  const out = new Map();
  for (const s of samples) {
    if (s.name !== name) continue;
    const k = key(s.labels);
    if (k === null) continue;
    out.set(k, (out.get(k) || 0) + s.value);
  }
  return out;
}

/** Per route: {requests, errors, buckets: Map(le -> cumulative count)}. */
function routeFigures(samples) {
  const routes = new Map();
  const get = (r) => {
    if (!routes.has(r)) routes.set(r, { requests: 0, errors: 0, buckets: new Map() });
    return routes.get(r);
  };
  for (const s of samples) {
    if (s.name === "leafgate_requests_total") {
      const r = get(s.labels.route);
      r.requests += s.value;
      if (Number(s.labels.status) >= 500) r.errors += s.value;
    } else if (s.name === "leafgate_request_duration_seconds_bucket") {
      const b = get(s.labels.route).buckets;
      const le = s.labels.le === "+Inf" ? Infinity : parseFloat(s.labels.le);
      b.set(le, (b.get(le) || 0) + s.value);
    }
  }
  return routes;
}

/** The q-quantile of the counts between two cumulative bucket maps, as Prometheus's
 *  histogram_quantile interpolates it; null without observations. */
function quantile(q, now, before) {
  const les = [...now.keys()].sort((a, b) => a - b);
  const counts = les.map((le) => now.get(le) - ((before && before.get(le)) || 0));
  const total = counts[counts.length - 1];
  if (!total) return null;
  const rank = q * total;
  for (let i = 0; i < les.length; i++) {
    if (counts[i] >= rank) {
      if (les[i] === Infinity) return les[i - 1] || 0;
      const lower = i === 0 ? 0 : les[i - 1];
      const below = i === 0 ? 0 : counts[i - 1];
      const inBucket = counts[i] - below;
      return inBucket ? lower + (les[i] - lower) * ((rank - below) / inBucket) : les[i];
    }
  }
  return null;
}

function routeSource(name) {
  if (name.startsWith("ingress/")) return "Ingress";
  if (name.startsWith("httproute/")) return "Gateway API";
  return "TOML";
}

// ---- DOM helpers: text only ----

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) e.textContent = String(text);
  if (cls) e.className = cls;
  return e;
}

function row(cells, cls) {
  const tr = el("tr", null, cls);
  for (const c of cells) {
    if (c instanceof Node) {
      const td = el("td");
      td.appendChild(c);
      tr.appendChild(td);
    } else if (c && typeof c === "object") {
      tr.appendChild(el("td", c.text, c.cls));
    } else {
      tr.appendChild(el("td", c));
    }
  }
  return tr;
}

function fill(section, rows, empty) {
  const tbody = document.querySelector(`#${section} tbody`);
  const cols = document.querySelectorAll(`#${section} thead th`).length;
  tbody.replaceChildren();
  if (rows.length === 0) {
    const td = el("td", empty, "empty");
    td.colSpan = cols;
    const tr = el("tr");
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
  for (const r of rows) tbody.appendChild(r);
}

function summary(section, text) {
  document.querySelector(`#${section} .summary`).textContent = text;
}

function num(v, digits) {
  if (v === null || v === undefined || Number.isNaN(v)) return { text: "–", cls: "num" };
  return { text: v.toFixed(digits), cls: "num" };
}

function ms(seconds) {
  return seconds === null ? { text: "–", cls: "num" } : num(seconds * 1000, 1);
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

/** An SVG polyline of `values` (oldest first), scaled to its own maximum. */
function sparkline(values, cls) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", "spark");
  svg.setAttribute("viewBox", "0 0 100 20");
  svg.setAttribute("preserveAspectRatio", "none");
  const line = document.createElementNS(SVG, "polyline");
  if (cls) line.setAttribute("class", cls);
  const max = Math.max(...values, 0) || 1;
  const step = values.length > 1 ? 100 / (values.length - 1) : 0;
  line.setAttribute(
    "points",
    values.map((v, i) => `${(i * step).toFixed(2)},${(19 - (v / max) * 18).toFixed(2)}`).join(" "),
  );
  svg.appendChild(line);
  return svg;
}

// ---- Panels ----

/** Rates over the poll interval: the last sample against the one before it. */
function rate(f, key) {
  if (history.length < 2) return null;
  const a = history[history.length - 2];
  const b = history[history.length - 1];
  const seconds = (b.at - a.at) / 1000;
  const before = f(a.m).get(key) || 0;
  const now = f(b.m).get(key) || 0;
  return seconds > 0 ? Math.max(0, now - before) / seconds : null;
}

/** The per-interval rate series of `pick(routeFigures)` for `route`, oldest first. */
function series(route, pick) {
  const out = [];
  for (let i = 1; i < history.length; i++) {
    const a = history[i - 1].routes.get(route);
    const b = history[i].routes.get(route);
    const seconds = (history[i].at - history[i - 1].at) / 1000;
    const d = (b ? pick(b) : 0) - (a ? pick(a) : 0);
    out.push(seconds > 0 ? Math.max(0, d) / seconds : 0);
  }
  return out;
}

function drawRoutes(status) {
  const last = history[history.length - 1];
  const prev = history.length > 1 ? history[history.length - 2] : null;
  // A minute back (or the oldest sample) for the latency quantiles.
  const windowStart = history.find((h) => last.at - h.at <= 60000) || last;
  const hosts = new Map((status.routes || []).map((r) => [r.name, r.host]));
  const names = new Set([...hosts.keys(), ...last.routes.keys()]);
  const groups = new Map();
  for (const name of [...names].sort()) {
    const source = routeSource(name);
    if (!groups.has(source)) groups.set(source, []);
    groups.get(source).push(name);
  }
  const container = document.querySelector("#routes .groups");
  container.replaceChildren();
  if (groups.size === 0) container.appendChild(el("p", "no routes", "empty"));
  for (const [source, routes] of groups) {
    container.appendChild(el("h3", source));
    const table = el("table");
    const head = el("tr");
    for (const h of ["route", "host", "requests", "req/s", "errors/s", "p50 ms", "p99 ms", "last 15 min"]) {
      head.appendChild(el("th", h));
    }
    table.appendChild(el("thead")).appendChild(head);
    const tbody = table.appendChild(el("tbody"));
    for (const name of routes) {
      const now = last.routes.get(name) || { requests: 0, errors: 0, buckets: new Map() };
      const before = prev && prev.routes.get(name);
      const seconds = prev ? (last.at - prev.at) / 1000 : 0;
      const perSecond = (k) => (before && seconds > 0 ? Math.max(0, now[k] - before[k]) / seconds : null);
      const base = windowStart.routes.get(name);
      const since = base && base !== now ? base.buckets : null;
      const tr = row([
        { text: name, cls: "text" },
        { text: hosts.get(name) || "", cls: "text" },
        { text: String(now.requests), cls: "num requests" },
        num(perSecond("requests"), 1),
        num(perSecond("errors"), 1),
        ms(quantile(0.5, now.buckets, since)),
        ms(quantile(0.99, now.buckets, since)),
        sparkline(series(name, (r) => r.requests)),
      ]);
      tr.dataset.route = name;
      tbody.appendChild(tr);
    }
    container.appendChild(table);
  }
}

function drawListeners(status) {
  fill(
    "listeners",
    (status.listeners || []).map((l) => row([l.name, l.kind, l.address || l.bind, l.tls ? "yes" : "no"])),
    "no listeners",
  );
}

function drawTenants() {
  const m = history[history.length - 1].m;
  const open = sumBy(m, "leafgate_upgraded_connections_active", (l) => l.tenant);
  const spliced = (s) => sumBy(s, "leafgate_spliced_bytes_total", (l) => l.tenant);
  const tenants = new Set([...open.keys(), ...spliced(m).keys()]);
  fill(
    "tenants",
    [...tenants].sort().map((t) => {
      const tr = row([
        { text: t || "(none)", cls: "text" },
        { text: String(open.get(t) || 0), cls: "num" },
        { text: bytes(spliced(m).get(t) || 0), cls: "num" },
        { text: bytes(rate(spliced, t) || 0), cls: "num" },
      ]);
      tr.dataset.tenant = t;
      return tr;
    }),
    "no hijacked connections yet",
  );
}

function drawLeaves(status) {
  fill(
    "leaves",
    (status.leaves || []).map((l) => {
      const tr = row(
        [
          { text: l.name, cls: "text" },
          l.synced ? "yes" : "no",
          { text: String(l.pods), cls: "num" },
          { text: String(l.watch_restarts), cls: "num" },
          { text: l.last_error ? `${l.last_error} (${l.last_error_at})` : "", cls: "text" },
        ],
        l.synced ? "" : "bad",
      );
      tr.dataset.leaf = l.name;
      tr.dataset.synced = String(l.synced);
      return tr;
    }),
    "no leaves configured",
  );
}

function drawVirtualNodes(status) {
  const k = status.kubernetes;
  if (!k) {
    summary("vnodes", "no [kubernetes] section: no virtual nodes");
    fill("vnodes", [], "none");
    return;
  }
  const lead = k.leading ? "this replica leads" : `leader: ${k.leader || "none"}`;
  const errors = [k.election_error, k.connect_error].filter(Boolean).join("; ");
  summary("vnodes", `${k.identity}: ${lead}${errors ? ` (${errors})` : ""}`);
  fill(
    "vnodes",
    (k.virtual_nodes || []).map((n) =>
      row(
        [{ text: n.node, cls: "text" }, n.ready ? "yes" : "no", n.last_written || "", { text: n.error || n.warning || "", cls: "text" }],
        n.ready ? "" : "bad",
      ),
    ),
    "no virtual nodes",
  );
}

function drawIngress(status) {
  const i = status.ingress;
  if (!i) {
    summary("ingress", "no [kubernetes.ingress] or [kubernetes.gateway] provider");
    fill("ingress", [], "none");
    return;
  }
  const g = status.gateway || {};
  const r = g.routes || {};
  summary(
    "ingress",
    `Ingress: ${i.served} served, ${i.routes} routes, last build ${i.last_build_ms ?? "–"} ms` +
      (status.gateway
        ? ` · Gateway API: ${(g.gateways || []).length} Gateways, ${r.accepted ?? 0} of ${r.httproutes ?? 0} HTTPRoutes accepted, last build ${g.last_build_ms ?? "–"} ms`
        : ""),
  );
  const rows = [];
  const text = (v) => ({ text: v ?? "", cls: "text" });
  for (const r of i.refused || []) rows.push(row(["refused", text(r.ingress), text(r.host), text(r.reason)], "bad"));
  for (const c of i.conflicts || []) {
    rows.push(row(["conflict", text((c.losers || []).join(", ")), text(c.host), text(`${c.winner} wins ${c.path}`)]));
  }
  for (const s of i.skipped || []) rows.push(row(["skipped", text(s.ingress), text(""), text(s.reason)], "bad"));
  for (const s of i.shadowed || []) rows.push(row(["shadowed", text(s.ingress), text(s.host), text(`TOML route ${s.route}`)]));
  for (const p of i.problems || []) rows.push(row(["problem", text(p.ingress), text(""), text(p.problem)], "bad"));
  for (const w of g.refusals || []) {
    rows.push(row(["refused", text(`${w.kind} ${w.object}`), text(""), text(`${w.reason}: ${w.message}`)], "bad"));
  }
  for (const [what, e] of [["apply", i.apply_error], ["connect", i.connect_error], ["gateway apply", g.apply_error]]) {
    if (e) rows.push(row(["error", text(what), text(""), text(e)], "bad"));
  }
  fill("ingress", rows, "no refusals or conflicts");
}

function drawReloads(status) {
  const r = status.last_reload;
  if (r && (reloads.length === 0 || reloads[0].at !== r.at)) {
    reloads.unshift(r);
    reloads.length = Math.min(reloads.length, 10);
  }
  const m = history[history.length - 1].m;
  const total = (name) => sumBy(m, name, () => "").get("") || 0;
  summary(
    "reloads",
    `generation ${status.generation}, loaded ${status.loaded_at} · ${total("leafgate_reloads_total")} applied, ` +
      `${total("leafgate_reload_failures_total")} rejected`,
  );
  fill(
    "reloads",
    reloads.map((x) =>
      row([x.at, x.ok ? `generation ${x.generation}` : x.kind, { text: x.error || "", cls: "text" }], x.ok ? "" : "bad"),
    ),
    "no reload since start",
  );
}

function drawPlugins() {
  const m = history[history.length - 1].m;
  const failures = sumBy(m, "leafgate_plugin_errors_total", (l) => JSON.stringify([l.tenant, l.kind]));
  const calls = sumBy(m, "leafgate_plugin_calls_total", (l) => l.tenant);
  fill(
    "plugins",
    [...failures.keys()].sort().map((k) => {
      const [tenant, kind] = JSON.parse(k);
      return row([{ text: tenant, cls: "text" }, kind, { text: String(failures.get(k)), cls: "num" }, { text: String(calls.get(tenant) || 0), cls: "num" }], "bad");
    }),
    "no plugin failures",
  );
}

function drawCertificates() {
  const m = history[history.length - 1].m;
  const certs = m.filter((s) => s.name === "leafgate_certificate_expiry_seconds");
  fill(
    "certificates",
    certs.map((s) => {
      const days = s.value / 86400;
      return row([s.labels.listener, { text: s.labels.hosts, cls: "text" }, num(days, 1)], days < 14 ? "bad" : "");
    }),
    "no TLS listener",
  );
}

// ---- Polling ----

function token() {
  return sessionStorage.getItem(TOKEN_KEY);
}

function setState(text, bad) {
  const s = document.getElementById("state");
  s.textContent = text;
  s.className = bad ? "state bad" : "state";
}

async function fetchText(path) {
  const headers = {};
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  const res = await fetch(path, { headers, cache: "no-store" });
  return { status: res.status, text: await res.text() };
}

async function poll() {
  try {
    const [status, metrics] = await Promise.all([fetchText("/status"), fetchText("/metrics")]);
    if (status.status === 401 || status.status === 403) {
      document.getElementById("token-form").hidden = false;
      setState(status.status === 401 ? "a token is needed for /status" : "/status answers loopback peers only", true);
      return;
    }
    if (status.status !== 200 || metrics.status !== 200) {
      setState(`/status ${status.status}, /metrics ${metrics.status}`, true);
      return;
    }
    const s = JSON.parse(status.text);
    const m = parseMetrics(metrics.text);
    const at = Date.now();
    history.push({ at, m, routes: routeFigures(m) });
    while (history.length > 1 && at - history[0].at > KEEP_MS) history.shift();
    drawListeners(s);
    drawRoutes(s);
    drawTenants();
    drawLeaves(s);
    drawVirtualNodes(s);
    drawIngress(s);
    drawReloads(s);
    drawPlugins();
    drawCertificates();
    setState(`generation ${s.generation} · updated ${new Date(at).toLocaleTimeString()}`, false);
    document.body.dataset.polls = String((Number(document.body.dataset.polls) || 0) + 1);
  } catch (e) {
    setState(`cannot reach the gateway: ${e.message}`, true);
  }
}

document.getElementById("token-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const value = document.getElementById("token").value.trim();
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById("token-form").hidden = true;
  poll();
});

poll();
setInterval(poll, POLL_MS);
