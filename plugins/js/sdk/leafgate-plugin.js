// leafgate-plugin for JavaScript: write a leafgate policy plugin in a few lines.
//
// The guest side of the plugin ABI for componentize-js: helpers over the `leafgate:plugin`
// imports and the shapes of wit/ (TypeScript types in ./types/<world>/, generated from wit/
// by gen-types.mjs). A plugin is an ES module exporting its world's function:
//
//   import { podRouter } from '../sdk/leafgate-plugin.js';
//   export function route(req) {
//     const leaves = podRouter.leaves(req);
//     return leaves.length ? podRouter.leaf(leaves[0]) : podRouter.byDefault();
//   }
//
// built with `componentize-js --wit wit --world-name pod-router -o x.wasm app.js`.
// See plugins/README.md (JavaScript) for the whole walk.
import { config as hostConfig, log as hostLog } from 'leafgate:plugin/host';

let parsedConfig;

/** The plugin's `config = { ... }` table, as JSON text exactly as the gateway passes it. */
export function configJson() {
  return hostConfig();
}

/**
 * The plugin's config as an object, parsed on first use and kept: the gateway keeps warm
 * instances, so what a plugin builds from it serves many calls. A config that is not a
 * JSON object throws (the call fails, and says why).
 */
export function config() {
  if (parsedConfig === undefined) {
    const parsed = JSON.parse(configJson());
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new Error(`the plugin config is not a table: ${JSON.stringify(parsed)}`);
    }
    parsedConfig = parsed;
  }
  return parsedConfig;
}

/** Structured logging into the gateway's tracing, tagged there with tenant and plugin. */
export const log = {
  trace: (message) => hostLog('trace', message),
  debug: (message) => hostLog('debug', message),
  info: (message) => hostLog('info', message),
  warn: (message) => hostLog('warn', message),
  error: (message) => hostLog('error', message),
};

/**
 * Matches `text` against a glob where `*` stands for any run of characters (`edge-*`,
 * `*-prod`, `team-*-db`), as the Rust SDK's `glob_match` does.
 */
export function globMatch(pattern, text) {
  const star = pattern.indexOf('*');
  if (star < 0) return pattern === text;
  const first = pattern.slice(0, star);
  const rest = pattern.slice(star + 1);
  const lastStar = rest.lastIndexOf('*');
  const middles = lastStar < 0 ? [] : rest.slice(0, lastStar).split('*');
  const last = lastStar < 0 ? rest : rest.slice(lastStar + 1);
  if (text.length < first.length + last.length || !text.startsWith(first) || !text.endsWith(last)) {
    return false;
  }
  let between = text.slice(first.length, text.length - last.length);
  for (const middle of middles) {
    const at = between.indexOf(middle);
    if (at < 0) return false;
    between = between.slice(at + middle.length);
  }
  return true;
}

/** The entries of a `\n`-joined list of a request; none for `""`. */
function entries(text) {
  return text === '' ? [] : text.split('\n');
}

/** The `pod-router` world: `route(req: RouteRequest): RouteDecision`. */
export const podRouter = {
  /** The pod's labels as an object, or `undefined` when the gateway does not know the pod. */
  labels(req) {
    if (req.labels === undefined) return undefined;
    const out = {};
    for (const line of entries(req.labels)) {
      const eq = line.indexOf('=');
      if (eq < 0) out[line] = '';
      else out[line.slice(0, eq)] = line.slice(eq + 1);
    }
    return out;
  },
  /** The value of one pod label, when the gateway knows the pod and it has that label. */
  label(req, key) {
    if (req.labels === undefined) return undefined;
    const head = `${key}=`;
    const line = entries(req.labels).find((l) => l.startsWith(head));
    return line === undefined ? undefined : line.slice(head.length);
  },
  /** The leaf clusters the gateway knows, by name (a `leaf` answer must be one). */
  leaves(req) {
    return entries(req.leaves);
  },
  knowsLeaf(req, name) {
    return entries(req.leaves).includes(name);
  },
  /** Send the request to this leaf cluster. */
  leaf(name) {
    return { tag: 'leaf', val: name };
  },
  /** Answer the client with this error (status 400 to 599). */
  reject(status, message) {
    return { tag: 'reject', val: { status, message } };
  },
  /** Do what the gateway would do with no plugin. */
  byDefault() {
    return { tag: 'default' };
  },
};

/** The `log-filter` world: `filter(ctx: LogContext, lines: string): Verdicts`. */
export const logFilter = {
  /** The lines of a batch, in order (a batch holds at least one; `""` is an empty line). */
  lines(batch) {
    return batch.split('\n');
  },
  /** A collector of one verdict per line, in order; `done()` is the export's answer. */
  verdicts() {
    const actions = [];
    const replacements = [];
    return {
      keep: () => actions.push('keep'),
      drop: () => actions.push('drop'),
      replace: (text) => {
        actions.push('replace');
        replacements.push(text);
      },
      done: () => ({ actions, replacements }),
    };
  },
};

/** The `table-formatter` world: `format(req: TableRequest): Table | undefined`. */
export const tableFormatter = {
  /** The objects to print: the request's JSON array (or a `List` object's `items`). */
  objects(req) {
    const parsed = JSON.parse(req.objects);
    const list = Array.isArray(parsed) ? parsed : parsed?.items ?? [];
    if (!Array.isArray(list)) throw new Error('the objects are neither a JSON array nor a List');
    return list;
  },
  /** A column; priority 1 and up shows only with wide output. */
  column(name, { type = 'string', format = '', description = '', priority = 0 } = {}) {
    return { name, type, format, description, priority };
  },
  /** A cell from a JavaScript value: string, boolean, bigint (integer), number, or null. */
  cell(value) {
    if (value === null || value === undefined) return { tag: 'none' };
    if (typeof value === 'boolean') return { tag: 'boolean', val: value };
    if (typeof value === 'bigint') return { tag: 'integer', val: value };
    if (typeof value === 'number') return { tag: 'number', val: value };
    return { tag: 'text', val: String(value) };
  },
  /** A row from JavaScript values (see `cell`). */
  row(...values) {
    return { cells: values.map((v) => tableFormatter.cell(v)) };
  },
};

/** The `address-rewriter` world: `rewrite(req: AddressRequest): NodeAddress[]`. */
export const addressRewriter = {
  /** One node address (`'internal-ip'`, `'10.0.0.1'`). */
  address(type, address) {
    return { type, address };
  },
};
