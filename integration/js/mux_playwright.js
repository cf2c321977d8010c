// playwright-core through the mux: usage node mux_playwright.js <http endpoint> <url>
// connectOverCDP discovers the browser through /json/version/, auto-attaches with waitForDebuggerOnStart.
'use strict';
const { chromium } = require('playwright-core');
const { command, out, main } = require('./lib');

main(async () => {
  const [endpoint, url] = process.argv.slice(2);
  const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
  const context = browser.contexts()[0];
  const page = await context.newPage();
  await page.goto(url + '?by=playwright');
  const report = async (event) => out({
    event,
    title: await page.title(),
    pages: context.pages().map((p) => p.url()),
  });
  await report('ready');
  for (;;) {
    const cmd = await command();
    if (cmd === 'report') { await report('report'); continue; }
    if (cmd === 'popup') {
      const [popup] = await Promise.all([
        page.waitForEvent('popup', { timeout: 15000 }),
        page.evaluate((u) => { window.open(u + '?popup=playwright'); }, url),
      ]);
      await popup.waitForLoadState();
      out({ event: 'popup', url: popup.url() });
      continue;
    }
    if (cmd === 'context') { // a browser context of its own, with a page in it
      const own = await browser.newContext();
      const p = await own.newPage();
      await p.goto(url + '?in=context');
      out({ event: 'context', title: await p.title(), pages: own.pages().length });
      await own.close();
      continue;
    }
    if (cmd === 'close') break;
  }
  await browser.close();
  out({ event: 'closed' });
});
