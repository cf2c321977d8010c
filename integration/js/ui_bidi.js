// What a person reads is true (issue 38): usage node ui_bidi.js <login url>
// Commands (one a line):
//   page PATH NEEDLE SHOT   a UI page, once NEEDLE shows on it: how each text holding NEEDLE is drawn, a screenshot
//   file FILE NEEDLE SHOT   an exported file, opened with the network off: the same
//   card PATH               a task page: how many steps the first call's card holds (inside it, issue 35)
//   close
// "How it is drawn" is read off the layout, not the DOM's order: for each text node holding NEEDLE, the x
// of its first and its last character as the browser placed them (Range rectangles). Text drawn left to
// right has its first character left of its last; one that a bidi override reversed has it right.
// body is the text of the page, its folded parts too. tallest is the height of the tallest one-line step of a task page (a long title must not make it tall).
'use strict';
const { command, out, main, shoot, openLoggedIn, openOffline } = require('./lib');

async function read(page, needle) {
  await page.waitForFunction((n) => document.body && document.body.innerText.includes(n), needle, { timeout: 15000 });
  return page.evaluate((n) => {
    const texts = [];
    const walk = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    for (let node = walk.nextNode(); node; node = walk.nextNode()) {
      const s = node.data;
      if (!s.includes(n)) continue;
      const el = node.parentElement;
      if (!el || !el.getClientRects().length) continue; // not drawn (a hidden part)
      const x = (i) => {
        const r = document.createRange();
        r.setStart(node, i);
        r.setEnd(node, i + 1);
        return r.getBoundingClientRect().left;
      };
      // The line of the node that holds the needle (a block of code has many; x is compared on one).
      const at = s.indexOf(n);
      let first = s.lastIndexOf('\n', at) + 1;
      let last = s.indexOf('\n', at);
      last = (last < 0 ? s.length : last) - 1;
      while (first < last && /\s/.test(s[first])) first++;
      while (last > first && /\s/.test(s[last])) last--;
      texts.push({ text: s.slice(first, last + 1).slice(0, 120), where: el.className || el.localName, first: x(first), last: x(last) });
    }
    const tallest = Math.max(0, ...[...document.querySelectorAll('.step.line')].map((e) => e.getBoundingClientRect().height));
    return { texts, tallest, body: document.body.textContent };
  }, needle);
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { origin, browser, page, problems, resp } = await openLoggedIn(loginURL);
  out({ event: 'ready', status: resp.status() });
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'page') {
      await page.goto(origin + rest[0]);
      const got = await read(page, rest[1]);
      out({ event: 'page', ...got, ...(await shoot(page, rest[2], problems)) });
      continue;
    }
    if (cmd === 'card') {
      await page.goto(origin + rest[0]);
      await page.waitForSelector('article.k-call', { timeout: 15000 });
      const inner = await page.evaluate(() => document.querySelector('article.k-call .call-steps').children.length);
      out({ event: 'card', inner });
      continue;
    }
    if (cmd === 'file') {
      const { browser: b2, page: p, problems: seen } = await openOffline(rest[0]);
      const got = await read(p, rest[1]);
      out({ event: 'file', ...got, ...(await shoot(p, rest[2], seen)) });
      await b2.close();
      continue;
    }
    out({ event: 'error', message: 'unknown command ' + cmd });
  }
  await browser.close();
});
