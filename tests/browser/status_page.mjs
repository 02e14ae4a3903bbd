// Opens hvdrun's status page in Debian's chromium (headless, through
// playwright-core), waits until it shows generation >= the one asked for,
// saves a screenshot, tries to change the job from the page, and prints
// what the page shows as one JSON line for the Python test to check.
//
//   node status_page.mjs URL GENERATION SCREENSHOT.png [TIMEOUT_S]
//
// Exits 1 with a message when the page never shows that generation.
import { chromium } from "playwright-core";

const [url, generation, screenshot, timeoutArg] = process.argv.slice(2);
const timeout = 1000 * Number(timeoutArg || 60);

const browser = await chromium.launch({
  executablePath: "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  timeout,
});
try {
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const pageErrors = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));
  await page.goto(url, { timeout });
  await page.waitForFunction(
    (g) => document.body.dataset.loaded === "1" &&
      Number(document.body.dataset.generation) >= g &&
      document.querySelector(`#recoveries tr[data-generation="${document.body.dataset.generation}"]`)?.dataset.complete === "1",
    Number(generation), { timeout });
  await page.screenshot({ path: screenshot, fullPage: true });

  const shown = await page.evaluate(() => {
    const text = (el) => (el ? el.textContent.trim() : null);
    const rows = (selector) => [...document.querySelectorAll(selector)];
    return {
      state: document.body.dataset.state,
      generation: Number(document.body.dataset.generation),
      size: Number(text(document.getElementById("job-size"))),
      resets: Number(text(document.getElementById("job-resets"))),
      hosts: Object.fromEntries(rows("#hosts tbody tr").map((tr) =>
        [tr.dataset.host, { state: tr.dataset.state, note: text(tr.querySelector(".note")) }])),
      ranks: rows("#ranks tbody tr").map((tr) => ({
        rank: Number(tr.dataset.rank), slot: tr.dataset.slot,
        pid: Number(tr.dataset.pid), steps: text(tr.querySelector(".steps")),
        age: text(tr.querySelector(".age")),
      })),
      recoveries: rows("#recoveries tbody tr").map((tr) => ({
        generation: Number(tr.dataset.generation), cause: tr.dataset.cause,
        complete: tr.dataset.complete === "1",
        phases: Object.fromEntries([...tr.querySelectorAll("td[data-phase]")].map((td) =>
          [td.dataset.phase, td.textContent.trim()])),
        bars: tr.querySelectorAll(".bar div").length,
        reason: text(tr.querySelector(".reason")),
      })),
      failures: rows("#failures li").map((li) => ({
        slot: li.dataset.slot, host: li.dataset.host,
        exitCode: Number(li.dataset.exitCode), text: li.firstChild.textContent,
      })),
    };
  });

  // The page may not change anything: every writing request is refused,
  // from the page's own origin and with its token.
  shown.writes = await page.evaluate(async () => {
    const statuses = {};
    for (const [method, path] of [["POST", "status.json"], ["PUT", "v1/kv/x/y"],
      ["DELETE", "status.json"], ["POST", "metrics"]]) {
      const answer = await fetch(path + location.search, { method, body: method === "DELETE" ? undefined : "x" });
      statuses[`${method} /${path}`] = answer.status;
    }
    return statuses;
  });
  shown.pageErrors = pageErrors;
  console.log(JSON.stringify(shown));
} catch (e) {
  console.error(`status page check failed: ${e.message}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
