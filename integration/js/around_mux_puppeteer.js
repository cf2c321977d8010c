// puppeteer-core through a store's mux tries to reach past it: usage node around_mux_puppeteer.js <cdp_ws>
// <upload page URL> <refused file> <allowed file>. Prints one JSON line: what each attempt got.
'use strict';
const { out, main } = require('./lib');

main(async () => {
  const [endpoint, uploadURL, refusedFile, allowedFile] = process.argv.slice(2);
  const puppeteer = require('puppeteer-core');
  const browser = await puppeteer.connect({ browserWSEndpoint: endpoint, defaultViewport: null, protocolTimeout: 30000 });
  const page = await browser.newPage();
  const tryIt = async (fn) => {
    try {
      await fn();
      return 'ok';
    } catch (e) {
      return String(e.message || e);
    }
  };
  const got = {};
  got.inspect = await tryIt(() => page.goto('chrome://inspect/#pages'));
  got.file = await tryIt(() => page.goto('file:///etc/hostname'));
  await page.goto(uploadURL);
  const input = await page.$('#f');
  got.refusedUpload = await tryIt(() => input.uploadFile(refusedFile));
  got.allowedUpload = await tryIt(() => input.uploadFile(allowedFile));
  got.read = await page.evaluate(() => new Promise((resolve) => {
    const f = document.querySelector('#f').files[0];
    if (!f) return resolve('no file');
    const r = new FileReader();
    r.onload = () => resolve(r.result);
    r.onerror = () => resolve('read error: ' + r.error);
    r.readAsText(f);
  }));
  got.url = page.url();
  out(got);
  await page.close();
  await browser.disconnect();
});
