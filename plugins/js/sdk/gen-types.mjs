// Generates the SDK's TypeScript types from wit/ with jco's guest type generator: one
// `<world>.d.ts` per world, and the interfaces they share once, under `interfaces/`: `node plugins/js/sdk/gen-types.mjs <toolchain dir> <wit dir> <out dir>`
// (the toolchain dir is where scripts/tools.sh installed jco: target/tools/js).
//
// `jco types` runs its generator as a WASI component whose filesystem starts with no
// preopened directory, so it cannot read the WIT it is given; this gives it the root
// directory first, then calls the same generator.
import { createRequire } from 'node:module';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [toolchain, wit, out] = process.argv.slice(2).map((p) => resolve(p));
if (!out) {
  console.error('usage: gen-types.mjs <toolchain dir> <wit dir> <out dir>');
  process.exit(2);
}
const from = createRequire(resolve(toolchain, 'node_modules', '@bytecodealliance', 'jco-transpile', 'package.json'));
const filesystem = await import(pathToFileURL(from.resolve('@bytecodealliance/preview2-shim/filesystem')));
filesystem._setPreopens({ '/': '/' });
const { generateGuestTypes } = await import(pathToFileURL(from.resolve('@bytecodealliance/jco-transpile')));

for (const world of ['pod-router', 'address-rewriter', 'log-filter', 'table-formatter']) {
  const files = await generateGuestTypes(wit, { worldName: world, outDir: `${out}/` });
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, bytes);
  }
}
