// puppeteer-core through the mux: usage node mux_puppeteer.js <browserWSEndpoint> <url>
// Opens two pages, reports what puppeteer sees, then on "close" calls browser.close().
'use strict';
const puppeteer = require('puppeteer-core');
const { command, out, main } = require('./lib');

main(async () => {
  const [endpoint, url] = process.argv.slice(2);
  const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null, protocolTimeout: 30000 });
  const page = await browser.newPage();
  await page.goto(url + '?by=puppeteer');
  const second = await browser.newPage();
  await second.goto(url + '?by=puppeteer-2');
  const report = async (event) => out({
    event,
    title: await page.title(),
    pages: (await browser.pages()).map((p) => p.url()),
    targets: browser.targets().filter((t) => t.type() === 'page').map((t) => t.url()),
  });
  await report('ready');
  for (;;) {
    const cmd = await command();
    if (cmd === 'report') { await report('report'); continue; }
    if (cmd === 'close') break;
  }
  await browser.close();
  out({ event: 'closed', connected: browser.connected });
});
