// Keyboard walking of the pair page's matches (view.html): j or ↓ the next candidate, k or ↑ the
// previous one, n and p the next and previous illustration (in list order, each shown in Mirador as a click would), and the verdicts on the
// selected one: 1, 2, ... the server's categories in order (1 exact copy: Confirm, ..., 4 no match:
// Reject; the page's help says which). Keys typed in a field are left alone. It works on the page's
// DOM only: a key does what a click on the same thing does.
(function () {
  'use strict';

  var CATEGORIES = window.collationPage.rules.verdicts.categories; // static/common.js

  function candidates() { return Array.prototype.slice.call(document.querySelectorAll('#correspondences .candidate')); }

  function move(step) {
    var all = candidates();
    if (!all.length) return;
    var at = all.findIndex(function (node) { return node.classList.contains('selected'); });
    var next = all[at < 0 ? 0 : Math.min(all.length - 1, Math.max(0, at + step))];
    next.click();
    next.scrollIntoView({ block: 'nearest' });
  }

  // n and p: the first candidate of the next or previous illustration (row), not the next candidate
  function moveRow(step) {
    var rows = Array.prototype.slice.call(document.querySelectorAll('#correspondences tr.row'))
      .filter(function (row) { return row.querySelector('.candidate'); });
    if (!rows.length) return;
    var at = rows.findIndex(function (row) { return row.classList.contains('selected'); });
    var row = rows[at < 0 ? 0 : Math.min(rows.length - 1, Math.max(0, at + step))];
    row.querySelector('.candidate').click();
    row.scrollIntoView({ block: 'nearest' });
  }

  document.addEventListener('keydown', function (event) {
    var target = event.target;
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (target && (/^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName) || target.isContentEditable)) return;
    if (event.key === 'j' || event.key === 'ArrowDown') { event.preventDefault(); move(1); return; }
    if (event.key === 'k' || event.key === 'ArrowUp') { event.preventDefault(); move(-1); return; }
    if (event.key === 'n') { event.preventDefault(); moveRow(1); return; }
    if (event.key === 'p') { event.preventDefault(); moveRow(-1); return; }
    var category = /^[1-9]$/.test(event.key) ? CATEGORIES[Number(event.key) - 1] : null;
    var selected = document.querySelector('#correspondences .candidate.selected');
    if (event.key === '0' && selected && selected.querySelector('button.clear')) {
      event.preventDefault();
      selected.querySelector('button.clear').click();
      return;
    }
    if (category && selected) {
      event.preventDefault();
      var button = selected.querySelector('button[data-category="' + category + '"]');
      if (button) button.click();
    }
  });
})();
