// The person's session in a real browser, against pages an agent serves: usage node ui_session.js <login url>
// Commands (one a line):
//   goto URL                 open URL as the person would (typed, or a link from a chat): its status and text
//   follow URL               from the page shown (a page of the UI), go to URL as a link of that page does
//   resume URL               open a link to the UI without the session's path (the shim's, a notification's)
//                            and wait until the kept session opens it
//   ui PATH                  open a page of the login (its session's path + PATH): its banners and text
//   press PATH BUTTON INPUT TEXT…  open PATH, type TEXT into INPUT, press BUTTON: where it ended, its banners
//   img URL                  open URL (an agent's page showing a picture of the UI) and say whether it loaded
//   shots PATH               open a task page and count the shots it shows
//   show URL STATUS FILE     show FILE's HTML as the UI's answer at URL, with the UI's own stylesheet
//   viewport W H             resize the page; shot FILE: screenshot it; close
'use strict';
const fs = require('fs');
const { command, out, main, shoot, openLoggedIn, sessionBase, unscoped } = require('./lib');

// banners reads the page's banners as the person sees them.
function banners(page) {
  return page.evaluate(() => {
    const shown = (id) => {
      const e = document.getElementById(id);
      return e && !e.hidden ? e.innerText.trim() : '';
    };
    return { answered: shown('answered'), error: shown('error'), text: document.body.innerText };
  });
}

main(async () => {
  const [loginURL] = process.argv.slice(2);
  const { origin, browser, context, page, problems, resp } = await openLoggedIn(loginURL);
  const cookies = (await context.cookies()).filter((c) => c.name === 'vibe_ui_session');
  out({ event: 'ready', status: resp.status(), url: unscoped(page.url()), base: origin, cookies });
  for (;;) {
    const [cmd, ...rest] = (await command()).split(' ');
    if (cmd === 'close') break;
    if (cmd === 'goto') {
      const r = await page.goto(rest[0]);
      out({ event: 'goto', status: r.status(), url: page.url(), text: await page.evaluate(() => document.body.innerText) });
      continue;
    }
    if (cmd === 'follow') {
      await Promise.all([page.waitForURL(rest[0]), page.evaluate((u) => { location.href = u; }, rest[0])]);
      out({ event: 'follow', url: page.url() });
      continue;
    }
    if (cmd === 'resume') {
      await page.goto(rest[0]);
      await page.waitForURL((u) => sessionBase(u.toString()) !== '', { timeout: 10000 });
      await page.waitForLoadState();
      out({ event: 'resume', url: unscoped(page.url()), session: sessionBase(page.url()), text: await page.evaluate(() => document.body.innerText) });
      continue;
    }
    if (cmd === 'ui') {
      const r = await page.goto(origin + rest[0]);
      out({ event: 'ui', status: r.status(), url: unscoped(page.url()), ...(await banners(page)) });
      continue;
    }
    if (cmd === 'press') {
      const [path, button, input, ...words] = rest;
      await page.goto(origin + path);
      await page.fill(input, words.join(' '));
      await Promise.all([page.waitForNavigation(), page.click(button)]);
      out({ event: 'pressed', url: unscoped(page.url()), ...(await banners(page)) });
      continue;
    }
    if (cmd === 'img') {
      await page.goto(rest[0]);
      await page.waitForFunction(() => document.getElementById('stolen').complete, null, { timeout: 10000 });
      const loaded = await page.evaluate(() => document.getElementById('stolen').naturalWidth > 0);
      problems.length = 0; // the refused picture's console error is this command's point, not the page's
      out({ event: 'img', loaded });
      continue;
    }
    if (cmd === 'shots') {
      await page.goto(origin + rest[0]);
      let loaded = 0;
      try {
        await page.waitForFunction(() => [...document.querySelectorAll('figure.shot img')].some((i) => i.complete && i.naturalWidth > 0),
          null, { timeout: 10000 });
        loaded = await page.evaluate(() => [...document.querySelectorAll('figure.shot img')].filter((i) => i.naturalWidth > 0).length);
      } catch (e) { /* none loaded: reported */ }
      out({ event: 'shots', loaded });
      continue;
    }
    if (cmd === 'show') {
      const [url, status, file] = rest;
      const body = fs.readFileSync(file);
      problems.length = 0; // what came before is other commands'
      await page.route(url, (route) => route.fulfill({ status: Number(status), contentType: 'text/html; charset=utf-8', body }));
      await page.goto(url);
      await page.unroute(url);
      // The refusal's own status is its point; anything else (a stylesheet, a script, the CSP) is the page's.
      const own = 'the server responded with a status of ' + status;
      for (let i = problems.length - 1; i >= 0; i--) if (problems[i].includes(own)) problems.splice(i, 1);
      out({ event: 'show', text: await page.evaluate(() => document.body.innerText) });
      continue;
    }
    if (cmd === 'viewport') {
      await page.setViewportSize({ width: Number(rest[0]), height: Number(rest[1]) });
      out({ event: 'viewport' });
      continue;
    }
    if (cmd === 'shot') {
      out({ event: 'shot', ...(await shoot(page, rest[0], problems)) });
      continue;
    }
    throw new Error('unknown command ' + cmd);
  }
  await browser.close();
  out({ event: 'closed' });
});
