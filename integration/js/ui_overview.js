// The web UI in a real browser: usage node ui_overview.js <login url>
// Logs in with the one-time URL, reports what the overview lists, waits for live changes on command and
// checks that a reused code and a missing cookie are refused.
'use strict';
const { command, out, main, shoot, openLoggedIn, unscoped } = require('./lib');

// rows reads the overview's tables as the person sees them.
async function rows(page) {
  return page.evaluate(() => {
    const text = (tr, cls) => (tr.querySelector('.' + cls) || { textContent: '' }).textContent.trim();
    return {
      live: document.getElementById('live').className,
      browsers: [...document.querySelectorAll('#browsers tbody tr')].map((tr) => ({
        key: tr.dataset.key, slug: text(tr, 'slug'), status: text(tr, 'status'), pid: text(tr, 'pid'),
        clients: text(tr, 'clients'), tabs: text(tr, 'tabs'), backend: text(tr, 'backend'),
        uptime: text(tr, 'uptime'), relaunches: text(tr, 'relaunches'),
      })),
      tasks: [...document.querySelectorAll('#tasks tbody tr')].map((tr) => ({
        id: tr.dataset.id, store: text(tr, 'store'), status: text(tr, 'status'), lease: text(tr, 'lease'),
      })),
      events: [...document.querySelectorAll('#events tbody tr')].map((tr) => ({
        kind: text(tr, 'kind'), store: text(tr, 'store'), alert: tr.classList.contains('alert'),
      })),
      tasksEmpty: !document.getElementById('no-tasks').hidden,
    };
  });
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { origin, browser, context, page, problems, resp } = await openLoggedIn(loginURL);
  await page.waitForSelector('#live.ok', { timeout: 10000 });
  out({ event: 'ready', status: resp.status(), url: unscoped(page.url()), ...(await rows(page)) });

  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'report') { out({ event: 'report', ...(await rows(page)) }); continue; }
    if (cmd === 'wait-task' || cmd === 'wait-browser' || cmd === 'wait-event') {
      const began = Date.now();
      const [a, b] = rest;
      await page.waitForFunction(([cmd, a, b]) => {
        if (cmd === 'wait-task') {
          const tr = document.querySelector('#tasks tr[data-id="' + CSS.escape(a) + '"]');
          return tr && tr.querySelector('.status').textContent.trim() === b;
        }
        if (cmd === 'wait-browser') {
          const tr = document.querySelector('#browsers tr[data-key="' + CSS.escape(a) + '"]');
          return tr && tr.querySelector('.status').textContent.trim() === b;
        }
        return [...document.querySelectorAll('#events tbody tr .kind')].some((td) => td.textContent.trim() === a);
      }, [cmd, a, b], { timeout: 5000, polling: 50 });
      out({ event: 'changed', ms: Date.now() - began, ...(await rows(page)) });
      continue;
    }
    if (cmd === 'screenshot') {
      out({ event: 'screenshot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
    if (cmd === 'viewport') {
      await page.setViewportSize({ width: Number(rest[0]), height: Number(rest[1]) });
      out({ event: 'viewport' });
      continue;
    }
    if (cmd === 'refusals') {
      const fresh = await browser.newContext();
      const p = await fresh.newPage();
      const reused = await p.goto(loginURL);
      const reusedText = await p.textContent('body');
      const bare = await p.goto(origin + '/');
      const bareText = await p.textContent('body');
      await fresh.close();
      out({ event: 'refusals', reused: reused.status(), reusedText, bare: bare.status(), bareText });
      continue;
    }
    if (cmd === 'lost') {
      // The manager is gone: the page must say the live connection is lost and that it retries.
      await page.waitForSelector('#live.lost', { timeout: 10000 });
      out({ event: 'lost', text: await page.textContent('#live'), stale: await page.evaluate(() => document.body.classList.contains('stale')) });
      continue;
    }
    throw new Error('unknown command ' + cmd);
  }
  out({ event: 'closed', problems });
  await browser.close();
});
