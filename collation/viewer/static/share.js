/*
 * "Share this view" on the pair page: the IIIF Content State link of the selected match (its `share`,
 * from GET /correspondences), shown in a field to copy and put on the clipboard when the browser
 * allows it. The link opens this page on the same two regions (?iiif-content=); its `iiif-content`
 * value opens them in any viewer that reads content states. Kept apart from viewer.js, which it only
 * reads (window.collationViewer).
 */
(function () {
  'use strict';

  var button = document.getElementById('share');
  var field = document.getElementById('share-link');
  if (!button || !field) return;

  function selectedLink() {
    var state = window.collationViewer;
    var picked = state && state.selected;
    if (!picked) return null;
    var item = state.items.find(function (i) { return i.source.index === picked.source; });
    var candidate = item && item.candidates.find(function (c) { return c.index === picked.target; });
    return candidate ? candidate.share : null;
  }

  button.addEventListener('click', function () {
    var link = selectedLink();
    field.hidden = !link;
    field.value = link || '';
    if (!link) { window.collationPage.message('Select a match first: its link opens both regions.', true); return; }
    field.select();
    var clipboard = window.navigator.clipboard;
    if (clipboard) clipboard.writeText(link).catch(function () { /* the field shows it */ });
  });
})();
