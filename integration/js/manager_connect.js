// A third-party client on a store's printed endpoints: usage node manager_connect.js puppeteer <cdp_ws> <url>
// or playwright <cdp_http> <url>. Opens url in a new page and prints {title, urls} (the pages it sees).
// puppeteer takes the ws form: its browserURL discovery resolves "/json/version" against the URL's root,
// dropping the token path segment every mux request must carry.
'use strict';
const { out, main } = require('./lib');

main(async () => {
  const [client, endpoint, url] = process.argv.slice(2);
  if (client === 'puppeteer') {
    const puppeteer = require('puppeteer-core');
    const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null, protocolTimeout: 30000 });
    const page = await browser.newPage();
    await page.goto(url);
    out({ title: await page.title(), urls: (await browser.pages()).map((p) => p.url()) });
    await browser.disconnect();
    return;
  }
  const { chromium } = require('playwright-core');
  const browser = await chromium.connectOverCDP(endpoint, { timeout: 30000 });
  const context = browser.contexts()[0];
  const page = await context.newPage();
  await page.goto(url);
  out({ title: await page.title(), urls: context.pages().map((p) => p.url()) });
  await browser.close();
});
