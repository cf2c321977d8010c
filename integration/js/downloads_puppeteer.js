// puppeteer-core with its own download behaviour through a store's mux:
// usage node downloads_puppeteer.js <browserWSEndpoint> <url> <downloadPath>
// Connects with downloadBehavior {allow, downloadPath} (puppeteer sends Browser.setDownloadBehavior), opens
// url, and clicks #same on "click". Prints {event:'ready'}, then {event:'clicked'}.
'use strict';
const puppeteer = require('puppeteer-core');
const { command, out, main } = require('./lib');

main(async () => {
  const [endpoint, url, dir] = process.argv.slice(2);
  const browser = await puppeteer.connect({
    browserWSEndpoint: endpoint, defaultViewport: null, protocolTimeout: 30000,
    downloadBehavior: { policy: 'allow', downloadPath: dir },
  });
  const page = await browser.newPage();
  await page.goto(url);
  out({ event: 'ready' });
  for (;;) {
    const cmd = await command();
    // A script click: page.click() scrolls the element into view and waits for an IntersectionObserver,
    // which never fires in a background tab of a headless browser shared with other clients.
    if (cmd === 'click') {
      await page.evaluate(() => document.getElementById('same').click());
      out({ event: 'clicked' });
      continue;
    }
    if (cmd === 'close') break;
  }
  await browser.disconnect();
});
