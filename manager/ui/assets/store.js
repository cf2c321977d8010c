// The store page's thumbnails: each refreshed every 1.5 s while the page is visible (nothing is captured
// while no one looks), and a new tab's at once when the live stream (live.js) brings its card.
'use strict';

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

// refresh loads every thumbnail, or with onlyNew the ones that have no picture yet.
function refresh(onlyNew) {
  if (document.visibilityState !== 'visible') return;
  for (const img of document.querySelectorAll('img.thumb')) if (!onlyNew || !img.src) refreshOne(img);
}

refresh(false);
setInterval(refresh, 1500, false);
document.addEventListener('visibilitychange', () => refresh(false));
document.addEventListener('vibe:swapped', () => refresh(true));
