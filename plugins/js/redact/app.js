// redact (JavaScript): hides secrets in container logs and drops noisy lines.
//
// The same plugin as the Rust plugins/redact, with the same config and answers:
//
//   config = { patterns = ["password=\\S+", "Bearer [A-Za-z0-9._-]+"],
//              drop = ["GET /healthz"], replacement = "***" }
//
// A line matching any `drop` pattern is dropped; otherwise every match of every `patterns`
// entry is replaced by `replacement` (`***` by default; `$1` and `${name}` in it stand for
// a match's groups, counted across all patterns, as in the Rust plugin). Patterns are
// JavaScript regular expressions (with the `u` flag), which agree with the Rust `regex`
// crate's on the usual classes, groups and repetitions; a named group may be written
// `(?P<name>...)` as in Rust or `(?<name>...)`.
import { config, log, logFilter as lf } from '../sdk/leafgate-plugin.js';

const CONFIG_KEYS = ['patterns', 'drop', 'replacement'];

// `$$`, `${name}` or `$name` in a replacement, as the Rust `regex` crate reads them.
const GROUP_REF = /\$(?:(\$)|\{([^}]*)\}|([_0-9A-Za-z]+))/g;

/** One global regex matching any of `patterns`, or `null` for an empty list. */
function compile(patterns, which) {
  if (!Array.isArray(patterns) || patterns.some((p) => typeof p !== 'string')) {
    throw new Error(`\`${which}\` is not a list of patterns`);
  }
  if (patterns.length === 0) return null;
  const source = patterns.map((p) => `(?:${p.replaceAll('(?P<', '(?<')})`).join('|');
  try {
    return new RegExp(source, 'gu');
  } catch (e) {
    throw new Error(`a \`${which}\` pattern is invalid: ${e.message}`);
  }
}

/** The replacement for one match: `template` with its group references filled in. */
function expand(template, groups, named) {
  return template.replace(GROUP_REF, (_ref, dollar, braced, bare) => {
    if (dollar) return '$';
    const name = braced ?? bare;
    const value = /^[0-9]+$/.test(name) ? groups[Number(name)] : named?.[name];
    // No such group, or one that did not take part: empty, as in Rust.
    return value ?? '';
  });
}

function redactor() {
  const table = config();
  const unknown = Object.keys(table).filter((k) => !CONFIG_KEYS.includes(k));
  if (unknown.length) throw new Error(`unknown config field(s): ${unknown.sort().join(', ')}`);
  const drop = compile(table.drop ?? [], 'drop');
  const secrets = compile(table.patterns ?? [], 'patterns');
  const replacement = table.replacement ?? '***';
  const templated = replacement.includes('$');
  const replace = (...args) => {
    // (match, group 1..n, offset, whole, [named groups])
    const named = typeof args.at(-1) === 'object' ? args.at(-1) : undefined;
    const groupsEnd = args.length - (named === undefined ? 2 : 3);
    return expand(replacement, args.slice(0, groupsEnd), named);
  };
  return {
    verdict(line, out) {
      if (drop !== null) {
        drop.lastIndex = 0;
        if (drop.test(line)) return out.drop();
      }
      if (secrets === null) return out.keep();
      let matched = false;
      const replaced = line.replace(secrets, (...args) => {
        matched = true;
        return templated ? replace(...args) : replacement;
      });
      return matched ? out.replace(replaced) : out.keep();
    },
  };
}

let loaded;

function load() {
  try {
    return redactor();
  } catch (e) {
    log.error(`redact: ${e.message}`);
    throw new Error(`redact: ${e.message}`);
  }
}

export function filter(_ctx, lines) {
  loaded ??= load();
  const out = lf.verdicts();
  for (const line of lf.lines(lines)) loaded.verdict(line, out);
  return out.done();
}
