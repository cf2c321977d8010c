// A task's timeline in a real browser: usage node timeline_pages.js <login url>
// Commands (one a line):
//   task PATH SHOT     the UI's task page: its call cards, its shots' colours, a screenshot at 1280 px
//   export FILE SHOT   an exported file, opened with the network off: its shots' colours, a screenshot
//   close
// Colours are read off the pixels the page shows (each shot drawn into a canvas), never off the DOM.
'use strict';
const { command, out, main, shoot, openLoggedIn, openOffline } = require('./lib');

// shotsOf waits for the page's shot pictures and returns the colour at the middle of each.
async function shotsOf(page) {
  await page.evaluate(() => document.querySelectorAll('img[loading=lazy]').forEach((i) => { i.loading = 'eager'; }));
  await page.waitForFunction(() => [...document.querySelectorAll('figure.shot img')].every((i) => i.complete), null, { timeout: 15000 });
  return page.evaluate(() => [...document.querySelectorAll('figure.shot img')].map((img) => {
    if (!img.naturalWidth) return null;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(Math.floor(c.width / 2), Math.floor(c.height / 2), 1, 1).data;
    return [d[0], d[1], d[2]];
  }));
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { origin, browser, page, problems, resp } = await openLoggedIn(loginURL);
  out({ event: 'ready', status: resp.status() });
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'task') {
      await page.goto(origin + rest[0]);
      const colours = await shotsOf(page);
      const calls = await page.locator('article.k-call').count();
      const text = await page.locator('#timeline').innerText();
      out({ event: 'task', calls, colours, text, ...(await shoot(page, rest[1], problems)) });
      continue;
    }
    if (cmd === 'export') {
      // A fresh browser with the network off: the file must show everything from itself.
      const { browser: b2, page: p, requests, problems: seen } = await openOffline(rest[0]);
      const colours = await shotsOf(p);
      const scripts = await p.locator('script').count();
      out({ event: 'export', colours, scripts, requests, ...(await shoot(p, rest[1], seen)) });
      await b2.close();
      continue;
    }
    out({ event: 'error', message: 'unknown command ' + cmd });
  }
  await browser.close();
});
