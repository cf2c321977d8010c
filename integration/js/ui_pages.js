// The store and tab pages in a real browser: usage node ui_pages.js <login url>
// Commands (one a line): store PATH SHOT, tab PATH SHOT, login URL, click X Y, type TEXT, paste TEXT, shot SHOT,
// viewers PATH N, hold, release, open-human, leave, close-tab, hosts, page PATH, close. Colours are read off the pixels the page shows (drawn into a canvas),
// never off the DOM.
'use strict';
const { command, out, main, launchChromium, watchProblems, shoot, sessionBase, unscoped } = require('./lib');

// colourOf draws an <img> into a canvas and returns the colour at (fx, fy), fractions of its size.
function colourOf(page, selector, fx, fy) {
  return page.evaluate(([selector, fx, fy]) => {
    const img = document.querySelector(selector);
    if (!img || !img.complete || !img.naturalWidth) return null;
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(Math.floor(c.width * fx), Math.floor(c.height * fy), 1, 1).data;
    return [d[0], d[1], d[2]];
  }, [selector, fx, fy]);
}

// waitColour polls until the picture at selector shows want (within JPEG noise) or 15 s pass.
async function waitColour(page, selector, want) {
  const until = Date.now() + 15000;
  let got = null;
  while (Date.now() < until) {
    got = await colourOf(page, selector, 0.5, 0.5);
    if (got && got.every((v, i) => Math.abs(v - want[i]) <= 16)) return got;
    await page.waitForTimeout(100);
  }
  return got;
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { browser, context } = await launchChromium();
  let page = await context.newPage();
  const problems = [];
  const watch = (p) => watchProblems(p, problems);
  watch(page);
  const resp = await page.goto(loginURL);
  // The UI's paths start at the login's own (its session's path); URLs are reported without it.
  let origin = sessionBase(page.url());
  out({ event: 'ready', status: resp.status(), url: unscoped(page.url()) });

  let watcher = null; // a store page kept open, to see live changes
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'watch-store') { // watch-store PATH: a store page in a tab of its own, kept open
      watcher = await context.newPage();
      watch(watcher);
      await watcher.goto(origin + rest[0]);
      await watcher.waitForSelector('#live.ok', { timeout: 10000 });
      out({ event: 'watching' });
      continue;
    }
    if (cmd === 'wait-tab') { // wait-tab ID: until the watched store page lists the tab
      const began = Date.now();
      await watcher.waitForSelector('a.tab[data-id="' + rest[0] + '"]', { timeout: 10000 });
      out({ event: 'listed', ms: Date.now() - began });
      await watcher.close();
      continue;
    }
    if (cmd === 'close') break;
    if (cmd === 'hosts') { // the overview, in a cluster: its hosts' cards and its stores' rows, and how long until they showed
      const began = Date.now();
      await page.goto(origin + '/');
      await page.waitForSelector('#hosts-section:not([hidden]) .host-card', { timeout: 10000 });
      const ms = Date.now() - began;
      await page.waitForSelector('#live.ok', { timeout: 10000 });
      const hosts = await page.evaluate(() => [...document.querySelectorAll('.host-card')].map((h) => ({
        name: h.dataset.host, state: h.querySelector('.pill').textContent, text: h.innerText,
      })));
      const rows = await page.evaluate(() => [...document.querySelectorAll('#browsers tbody tr')].map((tr) => ({
        slug: tr.querySelector('.slug').textContent, host: (tr.querySelector('td.host') || {}).textContent || '',
        status: tr.querySelector('.status').innerText,
      })));
      out({ event: 'hosts', ms, hosts, rows });
      continue;
    }
    if (cmd === 'page') { // page PATH: any page, with its status, its text and how long it took
      const began = Date.now();
      const r = await page.goto(origin + rest[0]);
      const ms = Date.now() - began;
      const text = await page.evaluate(() => document.querySelector('main').innerText);
      out({ event: 'page', status: r.status(), ms, text, title: await page.title(), url: unscoped(page.url()) });
      continue;
    }
    if (cmd === 'store') { // store PATH TABID R,G,B
      await page.goto(origin + rest[0]);
      await page.waitForSelector('#live.ok', { timeout: 10000 });
      const sel = 'a.tab[data-id="' + rest[1] + '"] img.thumb';
      await page.waitForSelector(sel, { timeout: 10000 });
      const colour = await waitColour(page, sel, rest[2].split(',').map(Number));
      const clients = await page.evaluate(() => [...document.querySelectorAll('section.client')].map((s) => ({
        id: s.dataset.id, kind: s.className.replace('client ', ''),
        tabs: [...s.querySelectorAll('a.tab')].map((a) => a.dataset.id),
      })));
      const downloads = await page.evaluate(() => [...document.querySelectorAll('div.downloads')].map((d) => ({
        owner: d.dataset.owner, files: [...d.querySelectorAll('td.name')].map((td) => td.textContent),
      })));
      const banner = await page.evaluate(() => {
        const e = document.getElementById('error');
        const id = document.querySelector('p.identity');
        return { error: e && !e.hidden ? e.innerText : '', identity: id ? id.innerText : '' };
      });
      out({ event: 'store', colour, clients, downloads, url: unscoped(page.url()), error: banner.error, identity: banner.identity });
      continue;
    }
    if (cmd === 'tab') { // tab PATH R,G,B
      await page.goto(origin + rest[0]);
      const colour = await waitColour(page, '#screen', rest[1].split(',').map(Number));
      const text = await page.evaluate(() => document.querySelector('main').innerText);
      out({ event: 'tab', colour, text, url: unscoped(page.url()) });
      continue;
    }
    if (cmd === 'login') { // login URL: the link of store login, in a fresh browser context
      const fresh = await browser.newContext({ viewport: { width: 1280, height: 800 } });
      page = await fresh.newPage();
      watch(page);
      const r = await page.goto(rest[0]);
      await page.waitForFunction(() => {
        const s = document.getElementById('screen');
        return s && s.complete && s.naturalWidth > 0 && s.dataset.width > 0;
      }, null, { timeout: 15000 });
      origin = sessionBase(page.url()); // the fresh login's own
      out({ event: 'login', status: r.status(), url: unscoped(page.url()) });
      continue;
    }
    if (cmd === 'click') { // click X Y: a point of the tab, in its CSS pixels, clicked on the picture
      const [x, y] = rest.map(Number);
      // The picture settles first: a new frame of another size moves everything under the pointer.
      const geometry = () => page.evaluate(() => {
        const s = document.getElementById('screen');
        const r = s.getBoundingClientRect();
        return [r.x, r.y, r.width, r.height, Number(s.dataset.width), Number(s.dataset.height)];
      });
      let g = await geometry();
      for (let i = 0; i < 50; i++) {
        await page.waitForTimeout(200);
        const h = await geometry();
        if (h.join() === g.join()) break;
        g = h;
      }
      await page.mouse.click(g[0] + x * g[2] / g[4], g[1] + y * g[3] / g[5]);
      await page.waitForTimeout(300);
      const note = await page.evaluate(() => { const n = document.getElementById('note'); return n.hidden ? '' : n.textContent; });
      out({ event: 'clicked', geometry: g, note });
      continue;
    }
    if (cmd === 'navigate') { // navigate URL TITLE: through the address bar, until the title and address follow
      await page.fill('#address', rest[0]);
      await page.press('#address', 'Enter');
      try {
        await page.waitForFunction(([url, title]) => document.getElementById('title').textContent === title &&
          document.getElementById('address').value === url, [rest[0], rest.slice(1).join(' ')], { timeout: 5000, polling: 100 });
      } catch (e) { /* reported below */ }
      out({ event: 'navigated', ...(await page.evaluate(() => ({
        title: document.getElementById('title').textContent, address: document.getElementById('address').value,
      }))) });
      continue;
    }
    if (cmd === 'title') { // title TEXT: the tab page's title follows the tab's
      const want = rest.join(' ');
      try {
        await page.waitForFunction((want) => document.getElementById('title').textContent === want, want,
          { timeout: 5000, polling: 100 });
      } catch (e) { /* reported below */ }
      out({ event: 'title', text: await page.evaluate(() => document.getElementById('title').textContent) });
      continue;
    }
    if (cmd === 'type') {
      await page.keyboard.type(rest.join(' '), { delay: 20 });
      out({ event: 'typed' });
      continue;
    }
    if (cmd === 'paste') { // paste TEXT: a paste on the picture, as the browser fires it for Ctrl+V
      await page.focus('#screen');
      await page.evaluate((text) => {
        const dt = new DataTransfer();
        dt.setData('text/plain', text);
        document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
      }, rest.join(' '));
      await page.waitForTimeout(300);
      out({ event: 'pasted' });
      continue;
    }
    if (cmd === 'shot') {
      await page.waitForTimeout(800); // a frame or two after the last input
      out({ event: 'shot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
    if (cmd === 'viewport') {
      await page.setViewportSize({ width: Number(rest[0]), height: Number(rest[1]) });
      out({ event: 'viewport' });
      continue;
    }
    if (cmd === 'viewers') { // viewers PATH N: a store page in a new tab until it counts N viewers
      const p = await page.context().newPage();
      await p.goto(origin + rest[0]);
      let n = null;
      try {
        await p.waitForFunction((want) => document.getElementById('store').dataset.viewers === want, rest[1],
          { timeout: 10000, polling: 100 });
        n = Number(rest[1]);
      } catch (e) {
        n = Number(await p.evaluate(() => document.getElementById('store').dataset.viewers));
      }
      await p.close();
      out({ event: 'viewers', n });
      continue;
    }
    if (cmd === 'hold' || cmd === 'release') { // Take over / Release on the tab page, until the page says so
      await page.click(cmd === 'hold' ? '#hold' : '#release');
      const held = cmd === 'hold';
      let ok = true;
      try {
        await page.waitForFunction((held) => document.getElementById('tab').classList.contains('held') === held &&
          document.getElementById(held ? 'release' : 'hold').hidden === false, held, { timeout: 5000, polling: 100 });
      } catch (e) { ok = false; }
      const text = await page.evaluate(() => document.querySelector('main').innerText);
      out({ event: cmd, ok, text });
      continue;
    }
    if (cmd === 'open-human') { // the takeover banner's button: the page in a human tab, once it shows a frame
      await Promise.all([page.waitForNavigation(), page.click('#open-human')]);
      await page.waitForFunction(() => {
        const t = document.getElementById('tab');
        const s = document.getElementById('screen');
        return t && t.dataset.human === 'true' && s.complete && s.naturalWidth > 0;
      }, null, { timeout: 15000 });
      const text = await page.evaluate(() => document.querySelector('main').innerText);
      out({ event: 'human', url: unscoped(page.url()), text, address: await page.inputValue('#address') });
      continue;
    }
    if (cmd === 'leave') { // the tab page goes away: its socket closes
      await page.goto('about:blank');
      out({ event: 'left' });
      continue;
    }
  }
  await browser.close();
  out({ event: 'closed' });
});
