// A person answering an agent's --ask-human in the web UI: usage node ui_handoff.js <login url>
// Logs in, waits on command for a handoff to appear on the live overview, reports its card, takes
// screenshots, and answers it: a note typed while the page keeps updating, then Done or Can't help.
'use strict';
const { command, out, main, launchChromium, watchProblems, shoot, unscoped } = require('./lib');

// card reads a handoff's card as the person sees it.
async function card(page, id) {
  return page.evaluate((id) => {
    const art = document.getElementById('handoff-' + id);
    if (!art) return null;
    const rect = art.getBoundingClientRect();
    const section = document.getElementById('handoffs-section').getBoundingClientRect();
    const browsers = document.getElementById('browsers-section').getBoundingClientRect();
    return {
      reason: art.querySelector('.reason').textContent,
      store: art.querySelector('a.store').textContent,
      // Links as paths of the UI, without the session's (the test's unscoped).
      storeHref: new URL(art.querySelector('a.store').href).pathname.replace(/^\/s\/[0-9a-f]{32}/, ''),
      task: art.querySelector('.task').textContent,
      tabs: [...art.querySelectorAll('.handoff-tabs a')].map((a) => ({ title: a.textContent,
        href: new URL(a.href).pathname.replace(/^\/s\/[0-9a-f]{32}/, '') })),
      first: section.top < browsers.top,
      width: rect.width,
      title: document.title,
    };
  }, id);
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { browser, context } = await launchChromium();
  const page = await context.newPage();
  const problems = [];
  watchProblems(page, problems);
  const resp = await page.goto(loginURL);
  await page.waitForSelector('#live.ok', { timeout: 10000 });
  out({ event: 'ready', status: resp.status(), url: unscoped(page.url()) });

  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'wait-handoff') {
      const began = Date.now();
      await page.waitForSelector('#handoff-' + rest[0], { timeout: 5000 });
      out({ event: 'handoff', ms: Date.now() - began, ...(await card(page, rest[0])) });
      continue;
    }
    if (cmd === 'wait-gone') {
      await page.waitForSelector('#handoff-' + rest[0], { state: 'detached', timeout: 5000 });
      out({ event: 'gone', sectionHidden: await page.evaluate(() => document.getElementById('handoffs-section').hidden) });
      continue;
    }
    if (cmd === 'shot') {
      out({ event: 'shot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
    if (cmd === 'viewport') {
      await page.setViewportSize({ width: Number(rest[0]), height: Number(rest[1]) });
      out({ event: 'viewport' });
      continue;
    }
    if (cmd === 'answer') {
      // answer ID done|cant_help NOTE…: the note is typed, then the page is left to redraw (the live
      // stream updates the card's age every second) before the button is pressed.
      const [id, status, ...words] = rest;
      const note = words.join(' ');
      const input = page.locator('#handoff-' + id + ' input[name=note]');
      await input.fill(note);
      await page.waitForTimeout(1500);
      const kept = await input.inputValue();
      await page.click('#handoff-' + id + ' button[value=' + status + ']');
      // Either the overview comes back with its confirmation, or a page says why the answer was refused
      // (the UI's message page, or its access rules' plain refusal).
      await page.waitForFunction(() => document.readyState === 'complete' && (location.search.includes('answered=') ||
        !!document.querySelector('.notice') || location.pathname.endsWith('/answer')), null, { timeout: 10000, polling: 50 });
      const refused = await page.evaluate(() => (location.search.includes('answered=') ? '' : document.body.innerText.trim()));
      if (!refused) await page.waitForSelector('#live.ok', { timeout: 10000 });
      const banner = await page.evaluate(() => {
        const b = document.getElementById('answered');
        return b.hidden ? '' : b.textContent;
      });
      out({ event: 'answered', kept, refused, url: unscoped(page.url()), banner, still: !!(await card(page, id)) });
      continue;
    }
    throw new Error('unknown command ' + cmd);
  }
  out({ event: 'closed', problems });
  await browser.close();
});
