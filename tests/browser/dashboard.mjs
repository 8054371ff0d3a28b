// Drives the admin dashboard in headless Chromium for tests/tests/e2e/dashboard.rs.
//
//   LEAFGATE_BROWSER_TOOLS=target/tools/browser node dashboard.mjs URL SCREENSHOT_DIR ROUTE HOSTILE_ROUTE LEAF
//
// Talks to the Rust test over stdio, one line each way: it prints `stop-leaf` once the
// page shows the live figures and waits for `stopped` before watching LEAF turn red. The
// last line it prints is a JSON report; it exits non-zero on the first check that fails.
import { createRequire } from "node:module";
import { createInterface } from "node:readline";

// playwright-core from where scripts/tools.sh installed it (LEAFGATE_BROWSER_TOOLS).
const { chromium } = createRequire(`${process.env.LEAFGATE_BROWSER_TOOLS}/`)("playwright-core");

const [url, shots, route, hostile, leaf] = process.argv.slice(2);
const origin = new URL(url).origin;
const lines = createInterface({ input: process.stdin });
const nextLine = () => new Promise((resolve) => lines.once("line", resolve));
const report = { requests: [], counts: [], screenshots: [] };

function check(ok, what) {
  if (!ok) throw new Error(what);
}

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
  ],
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  page.on("request", (r) => report.requests.push(r.url()));
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  await page.goto(url);
  const polls = () => page.evaluate(() => Number(document.body.dataset.polls || 0));
  await page.waitForFunction(() => Number(document.body.dataset.polls || 0) >= 2, null, { timeout: 15000 });

  // The route's request count, as the page shows it, rises while the test sends requests.
  const count = () =>
    page.evaluate((name) => {
      const tr = [...document.querySelectorAll("#routes tr")].find((t) => t.dataset.route === name);
      return tr ? Number(tr.querySelector("td.requests").textContent) : -1;
    }, route);
  const first = await count();
  check(first >= 0, `route ${route} is not on the page`);
  await page.waitForFunction(
    ([name, before]) => {
      const tr = [...document.querySelectorAll("#routes tr")].find((t) => t.dataset.route === name);
      return tr && Number(tr.querySelector("td.requests").textContent) > before;
    },
    [route, first],
    { timeout: 15000 },
  );
  report.counts = [first, await count()];
  // Its rate and sparkline are drawn from the figures.
  const figures = await page.evaluate((name) => {
    const tr = [...document.querySelectorAll("#routes tr")].find((t) => t.dataset.route === name);
    return { cells: [...tr.children].map((td) => td.textContent), points: tr.querySelector("svg polyline").getAttribute("points") };
  }, route);
  check(Number(figures.cells[3]) > 0, `req/s of ${route}: ${figures.cells[3]}`);
  check(figures.points.split(" ").length >= 2, "a sparkline of two points or more");
  report.figures = figures;

  // The hostile route name is text: nothing it holds became an element or ran.
  const hostileShown = await page.evaluate((name) => {
    const tr = [...document.querySelectorAll("#routes tr")].find((t) => t.dataset.route === name);
    return {
      text: tr ? tr.firstChild.textContent : null,
      elements: document.querySelectorAll("main img, main script, main iframe").length,
      ran: window.pwned === true,
    };
  }, hostile);
  check(hostileShown.text === hostile, `hostile route shown as ${JSON.stringify(hostileShown.text)}`);
  check(hostileShown.elements === 0 && !hostileShown.ran, `hostile markup became DOM: ${JSON.stringify(hostileShown)}`);

  // Each panel shows figures (a row, or its "none" line).
  for (const id of ["listeners", "routes", "tenants", "leaves", "vnodes", "ingress", "reloads", "plugins", "certificates"]) {
    const rows = await page.evaluate((id) => document.querySelectorAll(`#${id} tr, #${id} p`).length, id);
    check(rows > 0, `panel ${id} is empty`);
  }
  const leafState = () =>
    page.evaluate((name) => {
      const tr = [...document.querySelectorAll("#leaves tr")].find((t) => t.dataset.leaf === name);
      return tr ? { synced: tr.dataset.synced, bad: tr.classList.contains("bad"), color: getComputedStyle(tr.firstChild).color } : null;
    }, leaf);
  const before = await leafState();
  check(before && before.synced === "true" && !before.bad, `leaf ${leaf} before: ${JSON.stringify(before)}`);
  await page.screenshot({ path: `${shots}/dashboard.png`, fullPage: true });
  report.screenshots.push(`${shots}/dashboard.png`);

  // The leaf stopped in kubesim turns red.
  console.log("stop-leaf");
  check((await nextLine()) === "stopped", "the test stopped the leaf");
  await page.waitForFunction(
    (name) => {
      const tr = [...document.querySelectorAll("#leaves tr")].find((t) => t.dataset.leaf === name);
      return tr && tr.classList.contains("bad");
    },
    leaf,
    { timeout: 30000 },
  );
  report.leaf = { before, after: await leafState() };
  check(report.leaf.after.color === "rgb(198, 40, 40)", `leaf row colour ${report.leaf.after.color}`);
  await page.screenshot({ path: `${shots}/dashboard-leaf-down.png`, fullPage: true });
  report.screenshots.push(`${shots}/dashboard-leaf-down.png`);

  // A narrow screen: one column, nothing wider than the viewport.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.waitForFunction((n) => Number(document.body.dataset.polls || 0) > n, await polls(), { timeout: 10000 });
  report.narrow = await page.evaluate(() => ({ width: document.documentElement.scrollWidth, viewport: window.innerWidth }));
  check(report.narrow.width <= report.narrow.viewport, `narrow page ${report.narrow.width}px wide in ${report.narrow.viewport}px`);
  await page.screenshot({ path: `${shots}/dashboard-narrow.png`, fullPage: true });
  report.screenshots.push(`${shots}/dashboard-narrow.png`);

  // Every request stayed on the admin listener.
  const outside = report.requests.filter((r) => new URL(r).origin !== origin);
  check(outside.length === 0, `requests outside ${origin}: ${outside.join(" ")}`);
  check(errors.length === 0, `page errors: ${errors.join("; ")}`);
  report.polls = await polls();
  report.ok = true;
} catch (e) {
  report.ok = false;
  report.error = String(e && e.stack ? e.stack : e);
} finally {
  await browser.close();
  lines.close();
}
report.requests = [...new Set(report.requests)];
console.log(JSON.stringify(report));
process.exit(report.ok ? 0 : 1);
