// The UI's buttons that change something, pressed in a real browser: usage node ui_forms.js <login url>
// Commands: "press PATH BUTTON [INPUT TEXT…]" opens PATH, types TEXT into the INPUT selector when given,
// presses the BUTTON selector and reports where the page ended and what its error banner says;
// "forge URL" opens another site's page and presses its #go button, a form posting to the UI;
// "screenshot PATH" screenshots the page where the last press ended (a live view once it shows a frame).
'use strict';
const { command, out, main, launchChromium, shoot, sessionBase, unscoped } = require('./lib');

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { browser, context } = await launchChromium();
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (err) => problems.push(String(err)));
  // Each POST's Origin and Sec-Fetch-Site as the browser sent them, and whether the session cookie went
  // with it.
  const posts = [];
  page.on('request', (r) => {
    if (r.method() === 'POST') {
      r.allHeaders().then((h) => posts.push({ origin: h.origin, site: h['sec-fetch-site'],
        cookie: /(^|; )vibe_ui_session=/.test(h.cookie || '') }));
    }
  });
  await page.goto(loginURL);
  const origin = sessionBase(page.url()); // the login's own pages
  out({ event: 'ready' });
  for (;;) {
    const [cmd, path, selector, input, ...words] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'forge') { // forge URL: another site's page whose #go button posts a form to the UI
      await page.goto(path);
      const [answer] = await Promise.all([page.waitForResponse((r) => r.request().method() === 'POST'), page.click('#go')]);
      await page.waitForLoadState();
      out({ event: 'forged', status: answer.status(), text: await answer.text(), posts: posts.splice(0) });
      continue;
    }
    if (cmd === 'screenshot') { // screenshot PATH
      await page.waitForFunction(() => {
        const s = document.getElementById('screen');
        return !s || s.complete && s.naturalWidth > 0;
      }, null, { timeout: 15000, polling: 100 });
      out({ event: 'screenshot', ...(await shoot(page, path, problems)) });
      continue;
    }
    if (cmd !== 'press') throw new Error('unknown command ' + cmd);
    await page.goto(origin + path);
    if (input) await page.fill(input, words.join(' '));
    const button = page.locator(selector);
    // A mark on this document: the next one (the UI's answer may land on the same URL) has none.
    await page.evaluate(() => { window.pressedHere = true; });
    await button.click();
    let banner;
    for (let tries = 0; ; tries++) {
      try {
        await page.waitForFunction(() => !window.pressedHere && document.readyState === 'complete' ||
          [...document.querySelectorAll('.banner.error')].some((b) => !b.hidden), null, { timeout: 15000, polling: 50 });
        banner = await page.evaluate(() => [...document.querySelectorAll('.banner.error')]
          .filter((b) => !b.hidden).map((b) => b.textContent.trim()).join(' '));
        break;
      } catch (err) {
        // The answer's page went on to another (a CI run saw the read land mid-navigation): read the one
        // it settles on.
        if (tries < 3 && /Execution context was destroyed/.test(String(err))) continue;
        throw err;
      }
    }
    out({ event: 'pressed', url: unscoped(page.url()), banner, posts: posts.splice(0), problems: problems.splice(0) });
  }
  out({ event: 'closed' });
  await browser.close();
});
