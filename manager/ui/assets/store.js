// The store page's live part: its clients and tabs redrawn from /live/store/<slug>, and each tab's
// thumbnail refreshed every 1.5 s while the page is visible (nothing is captured while no one looks).
'use strict';

const root = document.getElementById('store');
const slug = root.dataset.slug;
// Thumbnails by tab id: kept across redraws, so a list update does not blank the pictures.
const thumbs = new Map();

function thumb(t) {
  let img = thumbs.get(t.id);
  if (!img) {
    img = el('img', 'thumb');
    img.alt = '';
    img.width = 320;
    img.height = 200;
    img.dataset.src = t.thumb;
    thumbs.set(t.id, img);
    refreshOne(img);
  }
  return img;
}

function tabCard(t) {
  const a = el('a', 'tab', null, thumb(t), el('span', 'title', t.title || '(no title)'),
    el('span', 'url', t.url), el('span', 'used', 'used ' + t.last_used));
  if (t.held) a.append(el('span', 'held', 'taken over by a person'));
  a.href = t.href;
  a.dataset.id = t.id;
  return a;
}

function clientCard(c) {
  const h = el('h2', '', null, el('code', '', c.id), ' ', el('span', 'kind-label', c.label), ' ',
    el('span', 'pill' + (c.connected ? ' running' : ''), c.state));
  if (c.active !== '–') h.append(' ', el('span', 'count', 'active ' + c.active));
  const sec = el('section', 'client ' + c.kind, null, h);
  sec.dataset.id = c.id;
  if (c.tabs.length === 0) sec.append(el('p', 'empty', 'No tabs.'));
  sec.append(el('div', 'tabs', null, ...c.tabs.map(tabCard)));
  return sec;
}

function downloadsCard(g) {
  const rows = g.files.map((f) => {
    const name = el('td', 'name', f.name);
    name.title = f.url;
    return el('tr', '', null, name, el('td', 'size', f.size), el('td', 'when', f.at),
      el('td', 'path', null, el('code', '', f.path)));
  });
  const head = el('tr', '', null, el('th', '', 'File'), el('th', '', 'Size'), el('th', '', 'When'), el('th', '', 'Path'));
  const sec = el('div', 'downloads', null,
    el('h3', '', null, el('code', '', g.owner), ' ', el('span', 'kind-label', g.label), ' ', el('span', 'count', g.count)),
    el('table', 'grid files', null, el('thead', '', null, head), el('tbody', '', null, ...rows)));
  sec.dataset.owner = g.owner;
  return sec;
}

function render(p) {
  const status = document.getElementById('status');
  status.textContent = p.status;
  status.className = 'pill ' + p.status;
  document.getElementById('summary').textContent = p.summary;
  const error = document.getElementById('error');
  const shown = p.error || new URLSearchParams(location.search).get('error') || '';
  error.textContent = shown;
  error.hidden = !shown;
  document.getElementById('stopped').hidden = p.running;
  document.getElementById('human-form').hidden = !p.running;
  document.getElementById('no-clients').hidden = !p.running || p.clients.length > 1;
  const live = new Set();
  for (const c of p.clients) for (const t of c.tabs) live.add(t.id);
  for (const id of thumbs.keys()) if (!live.has(id)) thumbs.delete(id);
  document.getElementById('clients').replaceChildren(...p.clients.map(clientCard));
  document.getElementById('downloads').replaceChildren(...p.downloads.map(downloadsCard));
  document.getElementById('no-downloads').hidden = p.downloads.length > 0;
  const note = document.getElementById('downloads-note');
  note.textContent = p.downloads_note || '';
  note.hidden = !p.downloads_note;
  root.dataset.viewers = p.viewers;
}

// refreshOne loads a new thumbnail unless one is still loading (a slow capture never piles up). The picture
// is fetched aside and swapped in only when it arrived, so a capture that fails (a tab Chrome is not
// rendering, a busy browser) keeps the last good picture, marked stale, instead of a blank.
function refreshOne(img) {
  if (img.dataset.loading === '1') return;
  img.dataset.loading = '1';
  fetch(img.dataset.src + '?t=' + Date.now(), { credentials: 'same-origin', cache: 'no-store' })
    .then((r) => (r.ok ? r.blob() : Promise.reject(new Error(r.status + ' ' + r.statusText))))
    .then((blob) => {
      const old = img.src;
      img.src = URL.createObjectURL(blob);
      if (old.startsWith('blob:')) URL.revokeObjectURL(old);
      img.classList.remove('broken', 'stale');
      img.title = '';
    })
    .catch((err) => {
      img.classList.add(img.naturalWidth > 0 ? 'stale' : 'broken');
      img.title = 'This picture could not be refreshed (' + err.message + '); it is retried every 1.5 s.';
    })
    .finally(() => { img.dataset.loading = ''; });
}

function refreshAll() {
  if (document.visibilityState !== 'visible') return;
  for (const img of thumbs.values()) refreshOne(img);
}

// The server-rendered thumbnails join the map before the first update.
for (const a of document.querySelectorAll('a.tab')) {
  const img = a.querySelector('img.thumb');
  thumbs.set(a.dataset.id, img);
}
refreshAll();
setInterval(refreshAll, 1500);
document.addEventListener('visibilitychange', refreshAll);
vibeLive('/live/store/' + encodeURIComponent(slug), 'store', render);
