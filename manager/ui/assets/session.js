// The session's address (access.go, session.go): a login's pages live under /s/<key>/, the only path its
// cookie goes to. A page of the session keeps that path in this origin's own storage, which no page of
// another port or site reads; a link to the UI without it (the one the shim prints for a handoff, a
// notification's) lands on the page asking for a login, which opens the same page in the kept session.
'use strict';
(() => {
  const kept = 'vibe-ui-session';
  const state = document.querySelector('meta[name="vibe-session"]').content;
  const base = document.querySelector('base');
  if (state === 'live' && base) {
    localStorage.setItem(kept, base.getAttribute('href'));
    return;
  }
  if (state !== 'resume') return;
  const mine = localStorage.getItem(kept);
  const inSession = location.pathname.match(/^\/s\/[0-9a-f]+\//);
  if (inSession) {
    // That session is over (the manager restarted, or 12 h idle): forget it, and show the page.
    if (inSession[0] === mine) localStorage.removeItem(kept);
    return;
  }
  if (mine && /^\/s\/[0-9a-f]+\/$/.test(mine)) location.replace(mine + location.pathname.slice(1) + location.search + location.hash);
})();
