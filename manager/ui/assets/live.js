// The live channel of the overview and the store page: one EventSource, at the path in #live's
// data-stream with the page's own query. The server draws the page once, with its templates; each message
// is the parts of it that changed since, drawn by the same templates, and this only puts them in place.
'use strict';
(() => {
  const badge = document.getElementById('live');
  const show = (state, text) => {
    badge.className = 'live ' + state;
    badge.textContent = text;
    // What the page shows may be out of date while the stream is down: say so by dimming it.
    document.body.classList.toggle('stale', state === 'lost');
  };
  // swap puts each part in place of the page's element with its id. Inside a part, an element marked
  // data-keep that the page already has stays the page's own (a form someone is typing in, a picture
  // already loaded), and keeps the focus it had.
  const swap = (html) => {
    const box = document.createElement('div');
    box.innerHTML = html;
    const focused = document.activeElement;
    for (const part of [...box.children]) {
      const old = part.id && document.getElementById(part.id);
      if (!old) continue;
      for (const keep of part.querySelectorAll('[data-keep][id]')) {
        const mine = document.getElementById(keep.id);
        if (mine) keep.replaceWith(mine);
      }
      old.replaceWith(part);
    }
    if (focused && focused.isConnected && document.activeElement !== focused) focused.focus({ preventScroll: true });
    document.dispatchEvent(new Event('vibe:swapped'));
  };
  // When the stream breaks it says so and retries: the browser retries by itself while the server answered
  // before; a refused stream (the manager restarted, the session ended) is closed for good, so it is reopened here.
  const open = () => {
    const es = new EventSource(badge.dataset.stream + location.search);
    es.addEventListener('open', () => show('ok', 'live'));
    es.addEventListener('parts', (msg) => {
      show('ok', 'live');
      swap(msg.data);
    });
    es.addEventListener('error', () => {
      show('lost', 'connection lost: retrying… what you see may be out of date (if this lasts, run vibe-browser ui again)');
      if (es.readyState === EventSource.CLOSED) setTimeout(open, 3000);
    });
  };
  open();
})();
