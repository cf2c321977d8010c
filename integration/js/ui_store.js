// The store page kept open in a real browser while its tabs change: usage node ui_store.js <login url> <path>
// Commands (one a line): "wait-tab ID ASPECT" until the open page lists the tab and shows its thumbnail,
// reporting how the picture reads at the edges of what the card shows; "shot PATH"; "close".
'use strict';
const { command, out, main, launchChromium, watchProblems, shoot, sessionBase } = require('./lib');

// edges reads a PNG of a thumbnail as drawn (an element screenshot) in the page: the picture's box
// inside the card (whatever is not the letterbox's colour), and the colour runs at its edges.
function edges(page, png) {
  return page.evaluate(async (b64) => {
    const img = new Image();
    img.src = 'data:image/png;base64,' + b64;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.naturalWidth;
    c.height = img.naturalHeight;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    const d = g.getImageData(0, 0, c.width, c.height).data;
    const at = (x, y) => { const i = (y * c.width + x) * 4; return [d[i], d[i + 1], d[i + 2]]; };
    const box = getComputedStyle(document.querySelector('img.thumb')).backgroundColor.match(/\d+/g).map(Number);
    const isBox = (p) => p.every((v, i) => Math.abs(v - box[i]) <= 6);
    const midY = Math.floor(c.height / 2);
    const midX = Math.floor(c.width / 2);
    // The picture's extent along the middle row and column: from each edge of the card, past the letterbox
    // (and the white a rounded corner's edge leaves), to the first coloured pixel.
    const plain = (p) => isBox(p) || p.every((v) => v >= 245);
    let left = 0; while (left < c.width && plain(at(left, midY))) left++;
    let right = c.width - 1; while (right > left && plain(at(right, midY))) right--;
    let top = 0; while (top < c.height && plain(at(midX, top))) top++;
    let bottom = c.height - 1; while (bottom > top && plain(at(midX, bottom))) bottom--;
    // run counts the pixels from (x, y) stepping (dx, dy) while they are near colour.
    const run = (x, y, dx, dy, colour) => {
      let n = 0;
      for (; x >= 0 && y >= 0 && x < c.width && y < c.height; x += dx, y += dy, n++) {
        if (!at(x, y).every((v, i) => Math.abs(v - colour[i]) <= 60)) break;
      }
      return n;
    };
    return {
      size: [c.width, c.height], picture: [left, top, right - left + 1, bottom - top + 1],
      left: run(left, midY, 1, 0, [255, 0, 0]), right: run(right, midY, -1, 0, [0, 0, 255]),
      top: run(midX, top, 0, 1, [255, 200, 0]), bottom: run(midX, bottom, 0, -1, [0, 160, 0]),
    };
  }, png.toString('base64'));
}

main(async () => {
  const [loginURL, path] = process.argv.slice(2);
  const { browser, context } = await launchChromium();
  const page = await context.newPage();
  const problems = [];
  watchProblems(page, problems);
  await page.goto(loginURL);
  await page.goto(sessionBase(page.url()) + path); // the login's own pages
  await page.waitForSelector('#live.ok', { timeout: 10000 });
  out({ event: 'ready' });
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'wait-tab') {
      const began = Date.now();
      const sel = 'a.tab[data-id="' + rest[0] + '"] img.thumb';
      await page.waitForSelector(sel, { timeout: 10000 });
      const listed = Date.now() - began;
      // Until the picture has the tab's aspect (ASPECT, width by height): an emulated viewport takes a moment.
      await page.waitForFunction(([sel, aspect]) => {
        const img = document.querySelector(sel);
        return img && img.src.startsWith('blob:') && img.complete && img.naturalWidth > 0 &&
          Math.abs(img.naturalWidth / img.naturalHeight - aspect) < 0.1;
      }, [sel, Number(rest[1])], { timeout: 15000, polling: 100 });
      const natural = await page.$eval(sel, (img) => [img.naturalWidth, img.naturalHeight]);
      out({ event: 'tab', listed, natural, ...(await edges(page, await page.locator(sel).screenshot())) });
      continue;
    }
    if (cmd === 'shot') {
      out({ event: 'shot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
    throw new Error('unknown command ' + cmd);
  }
  out({ event: 'closed', problems });
  await browser.close();
});
