// Shared plumbing of the node CDP client scripts the Go integration tests drive: one JSON object per
// stdout line, commands from the test one per stdin line.
'use strict';
const readline = require('readline');

const rl = readline.createInterface({ input: process.stdin });
const queued = [];
const waiting = [];
rl.on('line', (line) => {
  const w = waiting.shift();
  if (w) w(line.trim());
  else queued.push(line.trim());
});
rl.on('close', () => { while (waiting.length) waiting.shift()('close'); queued.push('close'); });

// command resolves with the test's next stdin line ("close" once stdin ends).
function command() {
  if (queued.length) return Promise.resolve(queued.shift());
  return new Promise((resolve) => waiting.push(resolve));
}

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function main(fn) {
  fn().then(() => { rl.close(); process.exit(0); }, (err) => {
    out({ event: 'error', message: String(err && err.stack || err) });
    process.exit(1);
  });
}

// launchChromium starts the headless Chromium the UI scripts drive (VIBE_CHROME, else the OS package's,
// through chromium.sh), with --no-sandbox only as root, and a 1280x800 context.
async function launchChromium() {
  const { chromium } = require('playwright-core');
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({
    executablePath: require('path').join(__dirname, 'chromium.sh'), headless: true, args,
  });
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  return { browser, context };
}

// watchProblems collects a page's script errors and console errors into problems, for a screenshot's report.
function watchProblems(page, problems) {
  page.on('console', (msg) => { if (msg.type() === 'error') problems.push(msg.text()); });
  page.on('pageerror', (err) => problems.push(String(err)));
}

// shoot screenshots the whole page to path and reports its scroll width (wider than the window: it needs
// sideways scrolling) and the problems seen so far.
async function shoot(page, path, problems) {
  await page.screenshot({ path, fullPage: true });
  const scrollWidth = await page.evaluate(() => document.documentElement.scrollWidth);
  return { scrollWidth, problems: problems.slice() };
}

// A login's pages live under its own path, /s/<key>/ (manager/ui/session.go): sessionBase is that of a
// page's URL (its origin with the path, no final slash; "" for a page outside a session), unscoped the URL
// without it, as the UI's paths are named elsewhere ("http://127.0.0.1:9399/store/acme").
const sessionPath = /^(https?:\/\/[^/]+)(\/s\/[0-9a-f]{32})(?=\/|$)/;
function sessionBase(url) {
  const m = sessionPath.exec(url);
  return m ? m[1] + m[2] : '';
}
function unscoped(url) {
  return url.replace(sessionPath, '$1');
}

// openLoggedIn starts Chromium and opens the UI's login link in a page whose problems (script errors,
// failed loads) are collected; it returns what a script needs of that. Its origin is where the UI's paths
// start for this login: the UI's origin and the session's path, so that origin + '/store/acme' opens a page.
async function openLoggedIn(loginURL) {
  const { browser, context } = await launchChromium();
  const page = await context.newPage();
  const problems = [];
  watchProblems(page, problems);
  const resp = await page.goto(loginURL);
  const origin = sessionBase(page.url()) || new URL(loginURL).origin;
  return { origin, browser, context, page, problems, resp };
}

// openOffline opens a file (an export) in a browser of its own with the network off, noting every request
// that is not for a file: or data: URL, and the page's problems. The caller closes the browser.
async function openOffline(file) {
  const { browser, context } = await launchChromium();
  await context.setOffline(true);
  const requests = [];
  context.on('request', (r) => { if (!r.url().startsWith('file:') && !r.url().startsWith('data:')) requests.push(r.url()); });
  const page = await context.newPage();
  const problems = [];
  watchProblems(page, problems);
  await page.goto('file://' + file);
  return { browser, page, requests, problems };
}

module.exports = { command, out, main, launchChromium, watchProblems, shoot, openLoggedIn, openOffline, sessionBase, unscoped };
