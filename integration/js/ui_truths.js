// What a person sees of a tab is true: usage node ui_truths.js <login url>
// Commands (one a line): open PATH, wait-text TEXT, tab PATH, shot FILE, close. Text is read off the page
// as a person reads it (innerText), never off the data the page was sent.
'use strict';
const { command, out, main, shoot, openLoggedIn, unscoped } = require('./lib');

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { origin, browser, context, page, problems, resp } = await openLoggedIn(loginURL);
  out({ event: 'ready', status: resp.status(), url: unscoped(page.url()) });
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'open') { // open PATH: a page, loaded
      const r = await page.goto(origin + rest[0]);
      out({ event: 'open', status: r.status() });
      continue;
    }
    if (cmd === 'wait-text') { // wait-text TEXT: until the page's text shows TEXT (10 s at most)
      const want = rest.join(' ');
      const began = Date.now();
      let found = true;
      try {
        await page.waitForFunction((want) => document.body.innerText.includes(want), want, { timeout: 10000, polling: 50 });
      } catch (e) { found = false; }
      out({ event: 'text', found, ms: Date.now() - began });
      continue;
    }
    if (cmd === 'tab') { // tab PATH: the tab page, once its picture has settled; its geometry
      await page.goto(origin + rest[0]);
      await page.waitForFunction(() => {
        const s = document.getElementById('screen');
        return s && s.complete && s.naturalWidth > 0 && s.dataset.width > 0;
      }, null, { timeout: 15000 });
      const geometry = () => page.evaluate(() => {
        const s = document.getElementById('screen');
        const r = s.getBoundingClientRect();
        const w = s.parentElement.getBoundingClientRect();
        return {
          width: r.width, height: r.height, naturalWidth: s.naturalWidth, naturalHeight: s.naturalHeight,
          tabWidth: Number(s.dataset.width), tabHeight: Number(s.dataset.height),
          leftGap: r.left - w.left, rightGap: w.right - r.right, dpr: window.devicePixelRatio,
          title: document.getElementById('title').textContent,
        };
      });
      let g = await geometry();
      for (let i = 0; i < 50; i++) {
        await page.waitForTimeout(200);
        const h = await geometry();
        if (JSON.stringify(h) === JSON.stringify(g)) break;
        g = h;
      }
      out({ event: 'tab', ...g });
      continue;
    }
    if (cmd === 'shot') {
      await page.waitForTimeout(800); // a frame or two more
      out({ event: 'shot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
  }
  await browser.close();
  out({ event: 'closed' });
});
