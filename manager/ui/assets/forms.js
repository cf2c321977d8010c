// Every page's forms that change something (POST), sent so the UI's access rules accept them: under the
// UI's Referrer-Policy no-referrer a browser's own form POST carries "Origin: null", which the UI refuses
// as cross-site, so each is sent with fetch and referrerPolicy "same-origin" instead, and the page then goes
// where the UI's answer redirected.
'use strict';

// vibePost sends form (the button submitter pressed included) and resolves with the URL the UI's answer
// ended on; a refusal rejects with the UI's words.
function vibePost(form, submitter) {
  const body = new URLSearchParams(new FormData(form, submitter));
  return fetch(form.action, { method: 'POST', body, credentials: 'same-origin', referrerPolicy: 'same-origin' })
    .then(async (r) => {
      if (!r.ok) throw new Error(await r.text());
      return r.url;
    });
}

// Forms a page's own script does not handle go through vibePost; a refusal is shown in the page's error
// banner (#error, or the tab page's #note).
document.addEventListener('submit', (e) => {
  const form = e.target;
  if (e.defaultPrevented || form.method !== 'post') return;
  e.preventDefault();
  vibePost(form, e.submitter).then((url) => location.assign(url), (err) => {
    const banner = document.getElementById('error') || document.getElementById('note');
    if (!banner) throw err;
    banner.textContent = err.message;
    banner.hidden = false;
  });
});
