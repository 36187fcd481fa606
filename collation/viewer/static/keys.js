// Keyboard walking of the pair page's matches (view.html): j or ↓ the next candidate, k or ↑ the
// previous one (in list order, each shown in Mirador as a click would), and the four verdicts on the
// selected one: 1 exact (Confirm), 2 partial, 3 same subject, 4 no match (Reject). Keys typed in a
// field are left alone. It works on the page's DOM only: a key does what a click on the same thing does.
(function () {
  'use strict';

  var VERDICTS = { 1: 'confirmed', 2: 'partial', 3: 'semantic', 4: 'rejected' };

  function candidates() { return Array.prototype.slice.call(document.querySelectorAll('#correspondences .candidate')); }

  function move(step) {
    var all = candidates();
    if (!all.length) return;
    var at = all.findIndex(function (node) { return node.classList.contains('selected'); });
    var next = all[at < 0 ? 0 : Math.min(all.length - 1, Math.max(0, at + step))];
    next.click();
    next.scrollIntoView({ block: 'nearest' });
  }

  document.addEventListener('keydown', function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable)) return;
    if (event.key === 'j' || event.key === 'ArrowDown') { event.preventDefault(); move(1); return; }
    if (event.key === 'k' || event.key === 'ArrowUp') { event.preventDefault(); move(-1); return; }
    var verdict = VERDICTS[event.key];
    var selected = document.querySelector('#correspondences .candidate.selected');
    if (verdict && selected) {
      event.preventDefault();
      var button = selected.querySelector('button[data-verdict="' + verdict + '"]');
      if (button) button.click();
    }
  });
})();
