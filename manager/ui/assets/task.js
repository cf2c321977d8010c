// The task page while its task runs: every data-every ms (while the page is visible) it asks for the
// steps after the last one shown, drawn by the page's own templates, and puts them in place: the head
// again, each new step at the end, a shot of a call already shown into that call's card, and a step that
// happened in a call already shown into that card's steps. A new call's card holds the steps that happened
// in it, which the page showed between the cards while it ran: those go.
'use strict';
(() => {
  const page = document.getElementById('task');
  const badge = document.getElementById('live');
  let last = page.dataset.last;
  const show = (state, text) => {
    badge.className = 'live ' + state;
    badge.textContent = text;
  };
  const put = (html) => {
    const box = document.createElement('div');
    box.innerHTML = html;
    const got = box.firstElementChild;
    const head = got.querySelector('#task-head');
    if (head) document.getElementById('task-head').replaceWith(head);
    const steps = document.getElementById('steps');
    for (const step of [...got.querySelector('.new-steps').children]) {
      const card = step.dataset.afterOf && document.getElementById('shots-' + step.dataset.afterOf);
      const within = step.dataset.inCall && document.getElementById('call-steps-' + step.dataset.inCall);
      if (card) {
        card.append(...step.querySelectorAll('figure.shot'));
        card.hidden = false;
      } else if (within) {
        within.append(step);
        within.hidden = false;
      } else {
        for (const old of step.querySelectorAll('.call-steps > [id]')) {
          const shown = document.getElementById(old.id);
          if (shown) shown.remove();
        }
        steps.append(step);
      }
    }
    document.getElementById('no-steps').hidden = steps.children.length > 0;
    last = got.dataset.last;
    return got.dataset.live === 'true';
  };
  const poll = async () => {
    if (document.visibilityState === 'visible') {
      try {
        const r = await fetch(page.dataset.entries + '?after=' + last, { credentials: 'same-origin', cache: 'no-store' });
        if (!r.ok) throw new Error(r.status + ' ' + r.statusText);
        if (!put(await r.text())) {
          show('connecting', 'finished');
          return; // the task ended: no more steps come
        }
        show('ok', 'live');
      } catch (err) {
        show('lost', 'connection lost: retrying… (' + err.message + '; if this lasts, run vibe-browser ui again)');
      }
    }
    setTimeout(poll, Number(page.dataset.every) || 2000);
  };
  setTimeout(poll, Number(page.dataset.every) || 2000);
})();
