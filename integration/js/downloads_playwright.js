// playwright-core downloads through a store's mux: usage node downloads_playwright.js <cdp_http> <url>
// As a new user would: connectOverCDP, waitForEvent('download') on a click, then path() and saveAs(); then
// a download canceled with download.cancel(). Prints {event:'download', …} and {event:'canceled', …}.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { chromium } = require('playwright-core');
const { command, out, main } = require('./lib');

main(async () => {
  const [endpoint, url] = process.argv.slice(2);
  const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
  const context = browser.contexts()[0];
  const page = await context.newPage();
  await page.goto(url);
  const [download] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }), page.click('#dl')]);
  const p = await download.path();
  const saved = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pw-saveas-')), 'saved.csv');
  await download.saveAs(saved);
  out({
    event: 'download', suggested: download.suggestedFilename(), path: p,
    pathBytes: fs.readFileSync(p, 'utf8'), saveAsBytes: fs.readFileSync(saved, 'utf8'),
  });
  fs.rmSync(path.dirname(saved), { recursive: true, force: true });
  const [slow] = await Promise.all([page.waitForEvent('download', { timeout: 20000 }), page.click('#slow')]);
  await slow.cancel();
  out({ event: 'canceled', failure: await slow.failure() });
  await command(); // the test looks at the files first
  await browser.close();
});
