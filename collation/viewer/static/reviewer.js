// Who is reviewing, and their note: the #reviewer and #note fields of the pair and concordance pages.
// The name is kept in this browser (localStorage) so that it need be typed once; it is sent as the
// verdict's "creator" and published as the annotation's creator. The note goes with the next verdict
// only, then the field is emptied.
(function () {
  'use strict';

  var KEY = 'collation.reviewer';

  function field(id) { return document.getElementById(id); }

  function stored() {
    try { return (window.localStorage.getItem(KEY) || '').trim(); } catch (e) { return ''; }
  }

  var name = field('reviewer');
  if (name) {
    name.value = stored();
    name.addEventListener('change', function () {
      try { window.localStorage.setItem(KEY, name.value.trim()); } catch (e) { /* private mode: this page only */ }
    });
  }

  // the verdict body's extra fields: creator and note, only when given
  function extras(body) {
    var who = name ? name.value.trim() : stored();
    var note = field('note') ? field('note').value.trim() : '';
    if (who) body.creator = who;
    if (note) body.note = note;
    return body;
  }

  function noteUsed() { if (field('note')) field('note').value = ''; }

  window.collationReviewer = { extras: extras, noteUsed: noteUsed };
})();
