// Reviewing a witness's regions before a collation (the New collation page, workspace.js): its pages
// with their boxes, to correct what the detector found. The result is a list of {canvas, xywh} in canvas
// coordinates: the request's `regions` for that witness.
//
// The boxes are drawn, selected, moved and resized by Annotorious (vendor/annotorious-*.js, installed by
// scripts/setup.sh), one annotator per page image, in that image's pixels. This file keeps the list of
// boxes in canvas coordinates, its history (undo and redo over every page at once) and the draft kept
// in this browser (localStorage, by manifest URL) until the regions are used or discarded.
(function () {
  'use strict';

  var page = window.collationPage; // static/common.js
  var el = page.el;
  var PAGES_AT_ONCE = 40; // pages shown at a time (the ones with regions first), then "Show more pages"
  var DRAFT_KEY = 'collation.regions-draft:'; // + the manifest URL
  var active = null; // the container of the editor that the keys go to: the last one opened or pressed on
  var HINT = 'Click a box to select it (Shift+click adds one), or select the boxes one after the other with ] and [ ' +
    '("Next box", "Previous box"); drag a box to move it, drag a corner to resize ' +
    'it; Delete removes the selection. "Draw a box", then drag on the page. To split a box, select it, ' +
    'choose "Split across" (a horizontal cut) or "Split down" (a vertical cut), then click on the box where ' +
    'the cut goes. Ctrl+Z undoes, Ctrl+Shift+Z or Ctrl+Y redoes. Your corrections are kept in this browser ' +
    'until you use them or discard them.';

  // -- pure helpers: boxes are [x, y, w, h] ---------------------------------------------------------

  function boundingBox(list) {
    var x0 = Math.min.apply(null, list.map(function (b) { return b[0]; }));
    var y0 = Math.min.apply(null, list.map(function (b) { return b[1]; }));
    var x1 = Math.max.apply(null, list.map(function (b) { return b[0] + b[2]; }));
    var y1 = Math.max.apply(null, list.map(function (b) { return b[1] + b[3]; }));
    return [x0, y0, x1 - x0, y1 - y0];
  }

  // box cut at `at` (canvas coordinates), across (a horizontal line) or down (a vertical one) -> two boxes,
  // or null when the cut is not inside the box
  function splitAt(box, across, at) {
    var start = across ? box[1] : box[0], size = across ? box[3] : box[2];
    var cut = Math.round(at - start);
    if (cut < 1 || cut > size - 1) return null;
    return across ? [[box[0], box[1], box[2], cut], [box[0], box[1] + cut, box[2], box[3] - cut]]
      : [[box[0], box[1], cut, box[3]], [box[0] + cut, box[1], box[2] - cut, box[3]]];
  }

  // canvas box <-> Annotorious rectangle in image pixels; scale = [canvas px per image px (x), (y)]
  function toAnnotation(box, scale) {
    var x = box.xywh[0] / scale[0], y = box.xywh[1] / scale[1], w = box.xywh[2] / scale[0], h = box.xywh[3] / scale[1];
    var bounds = { minX: x, minY: y, maxX: x + w, maxY: y + h };
    return { id: box.id, bodies: [], target: { annotation: box.id,
      selector: { type: 'RECTANGLE', geometry: { x: x, y: y, w: w, h: h, bounds: bounds } } } };
  }
  function fromAnnotation(annotation, scale) {
    var g = annotation.target.selector.geometry;
    return [Math.round(g.x * scale[0]), Math.round(g.y * scale[1]), Math.round(g.w * scale[0]), Math.round(g.h * scale[1])];
  }

  function pageImage(canvas) {
    var image = canvas.images[0];
    if (!image) return null;
    if (image.service_id) return page.fill(page.config.images.page, { service: image.service_id });
    return image.static_url;
  }

  // Annotorious's stylesheet, next to its script (the page lists the script; the version is named once there)
  function loadStylesheet() {
    var script = document.querySelector('script[src*="vendor/annotorious"]');
    var href = script && script.getAttribute('src').replace(/\.js$/, '.css');
    if (href && !document.querySelector('link[href="' + href + '"]')) {
      document.head.appendChild(el('link', { rel: 'stylesheet', href: href }));
    }
  }

  // -- the draft, in this browser ------------------------------------------------------------------

  function readDraft(url) {
    try { return JSON.parse(window.localStorage.getItem(DRAFT_KEY + url) || 'null'); } catch (e) { return null; }
  }
  // state: {regions, history, at} (the boxes as the request's regions, the undo snapshots, the one shown),
  // or null; the page that opened the editor hears of each change (workspace.js keeps it on the server)
  var listeners = [];
  function writeDraft(url, state) {
    try {
      if (state) window.localStorage.setItem(DRAFT_KEY + url, JSON.stringify(state));
      else window.localStorage.removeItem(DRAFT_KEY + url);
    } catch (e) { /* private mode: the draft lasts as long as the page */ }
    listeners.forEach(function (listener) { listener(url); });
  }

  // report: the inspection (regions [{canvas_index, xywh}]) -> the editor, in `container`;
  // done(list of {canvas, xywh}) when accepted, done(null) when closed (the draft stays)
  function open(container, report, done) {
    if (!window.Annotorious) {
      container.textContent = 'The region editor is not installed (scripts/setup.sh installs Annotorious).';
      return;
    }
    var url = report.manifest.url;
    var indexOf = {}; // canvas id -> index
    report.canvases.forEach(function (c) { indexOf[c.id] = c.index; });
    var nextId = 0;
    function box(canvas, xywh) { nextId += 1; return { id: 'box-' + nextId, canvas: canvas, xywh: xywh.slice() }; }
    var initial = report.regions.map(function (r) { return box(r.canvas_index, r.xywh); });
    var given = JSON.stringify(report.regions.map(function (r) { // as regions() writes them
      return { canvas: r.canvas_id, xywh: r.xywh.map(Math.round) };
    }));
    var draft = readDraft(url);
    var boxes = draft ? draft.regions.filter(function (r) { return r.canvas in indexOf; })
      .map(function (r) { return box(indexOf[r.canvas], r.xywh); }) : initial;
    var history = [JSON.stringify(boxes)], at = 0; // snapshots of `boxes`; `at` is the one shown
    if (draft && draft.history && draft.history.length && draft.at < draft.history.length) {
      history = draft.history.slice(); // undo survives a reload: the snapshots come back with the draft
      at = draft.at;
      boxes = JSON.parse(history[at]);
      history.forEach(function (snapshot) { // new boxes get ids no snapshot uses
        JSON.parse(snapshot).forEach(function (b) { var n = /^box-(\d+)$/.exec(b.id); if (n) nextId = Math.max(nextId, Number(n[1])); });
      });
    }
    var selected = []; // box ids
    var splitting = null; // 'across' or 'down' while waiting for the click that places the cut
    var annotators = {}; // canvas index -> {anno, scale}
    var drawing = false; // "Draw a box" is on: a drag on a page draws
    var pointer = { canvas: null, shift: false }; // the last press on a page: whose selection events count
    container.textContent = '';
    active = container;
    container.addEventListener('pointerdown', function () { active = container; }, true);

    function button(text, action) {
      var node = el('button', { type: 'button', text: text });
      node.addEventListener('click', action);
      return node;
    }
    var tools = {
      draw: button('Draw a box', function () { setDrawing(!drawing); }),
      remove: button('Delete selected', removeSelected),
      merge: button('Merge selected', mergeSelected),
      across: button('Split across', function () { startSplit('across'); }),
      down: button('Split down', function () { startSplit('down'); }),
      previous: button('Previous box', function () { cycle(-1); }),
      next: button('Next box', function () { cycle(1); }),
      undo: button('Undo', function () { step(-1); }),
      redo: button('Redo', function () { step(1); }),
    };
    var accept = el('button', { type: 'button', className: 'accept', text: 'Use these regions' });
    var cancel = button('Close', function () { close(); done(null); });
    var status = el('p', { className: 'review-status', role: 'status' });
    var discard = button('Discard', discardDraft);
    var note = el('p', { className: 'review-draft', hidden: !draft },
      [el('span', { text: 'Draft restored: your corrections from last time. ' }), discard]);
    container.appendChild(el('div', { className: 'review-tools' }, Object.keys(tools).map(function (k) { return tools[k]; })
      .concat([accept, cancel, status, note])));
    container.appendChild(el('p', { className: 'hint', text: HINT }));

    // -- pages, the ones with boxes first ------------------------------------------------------------
    var withBoxes = {};
    boxes.forEach(function (b) { withBoxes[b.canvas] = true; });
    var order = report.canvases.map(function (c) { return c.index; })
      .filter(function (i) { return report.canvases[i].width && report.canvases[i].height && pageImage(report.canvases[i]); })
      .sort(function (a, b) { return (withBoxes[a] ? 0 : 1) - (withBoxes[b] ? 0 : 1) || a - b; });
    var pages = el('div', { className: 'review-pages' });
    var more = button('', showMore);
    more.className = 'review-more';
    container.appendChild(pages);
    container.appendChild(more);
    var shown = 0;
    function showMore() {
      order.slice(shown, shown + PAGES_AT_ONCE).forEach(addPage);
      shown = Math.min(order.length, shown + PAGES_AT_ONCE);
      more.hidden = shown >= order.length;
      more.textContent = 'Show more pages (' + shown + ' of ' + order.length + ' shown)';
      describe();
    }
    function addPage(i) {
      var canvas = report.canvases[i];
      var frame = el('div', { className: 'review-page', 'data-canvas': String(i) });
      var img = el('img', { src: pageImage(canvas), alt: 'Page ' + (canvas.label || i + 1), draggable: false });
      frame.appendChild(img);
      frame.appendChild(el('span', { className: 'page-label', text: canvas.label || 'page ' + (i + 1) }));
      pages.appendChild(frame);
      frame.addEventListener('pointerdown', function (event) {
        pointer = { canvas: i, shift: event.shiftKey };
        if (splitting) { event.stopPropagation(); event.preventDefault(); splitHere(event, i, img); }
      }, true); // capture: a split's click goes to the editor, not to Annotorious
      if (img.complete && img.naturalWidth) attach(i, img);
      else img.addEventListener('load', function () { attach(i, img); }, { once: true });
    }
    function attach(i, img) {
      var canvas = report.canvases[i];
      var anno = window.Annotorious.createImageAnnotator(img, { drawingEnabled: drawing, userSelectAction: 'EDIT' });
      annotators[i] = { anno: anno, scale: [canvas.width / img.naturalWidth, canvas.height / img.naturalHeight] };
      anno.on('selectionChanged', function (list) { selectionChanged(i, list.map(function (a) { return a.id; })); });
      anno.on('createAnnotation', function () { readBack(); setDrawing(false); });
      redraw(i);
    }
    function redraw(i) {
      var a = annotators[i];
      a.anno.setAnnotations(boxes.filter(function (b) { return b.canvas === i; })
        .map(function (b) { return toAnnotation(b, a.scale); }), true);
    }
    function eachAnnotator(action) {
      Object.keys(annotators).forEach(function (k) { action(annotators[k], Number(k)); });
    }

    // -- changes: Annotorious's (a drag, a drawing) read back; ours applied to every page ------------
    function readBack() {
      eachAnnotator(function (a, i) {
        a.anno.getAnnotations().forEach(function (annotation) {
          var xywh = fromAnnotation(annotation, a.scale);
          var known = boxes.filter(function (b) { return b.id === annotation.id; })[0];
          if (known) known.xywh = xywh;
          else boxes.push({ id: annotation.id, canvas: i, xywh: xywh });
        });
      });
      record();
    }
    function record() { // a new snapshot when the boxes changed: undo comes back to the one before
      var now = JSON.stringify(boxes);
      if (now !== history[at]) {
        history = history.slice(0, at + 1).concat([now]);
        at += 1;
        saveDraft();
      }
      describe();
    }
    function apply(next) { // our own change (delete, merge, split, undo...): every page shows it
      boxes = next;
      selected = [];
      eachAnnotator(function (a, i) { a.anno.cancelSelected(); redraw(i); });
      record();
    }
    function step(by) {
      if (at + by < 0 || at + by >= history.length) return;
      at += by;
      boxes = JSON.parse(history[at]);
      apply(boxes);
      saveDraft();
    }
    function selectionChanged(i, ids) {
      if (i !== pointer.canvas) return; // a page cleared by us, not by a click on it
      var here = boxes.filter(function (b) { return b.canvas === i; }).map(function (b) { return b.id; });
      var kept = pointer.shift ? selected.filter(function (id) { return here.indexOf(id) >= 0; }) : [];
      var wanted = kept.concat(ids.filter(function (id) { return kept.indexOf(id) < 0; }));
      selected = wanted;
      eachAnnotator(function (a, k) { if (k !== i) a.anno.cancelSelected(); });
      if (wanted.length !== ids.length) annotators[i].anno.setSelected(wanted);
      describe();
    }
    // keyboard selection (issue 39, item 11): "Next box" / "Previous box" or ] and [ select the boxes one
    // after the other, in page order, showing each one's page
    function cycle(by) {
      if (!boxes.length) return;
      var last = selected.length ? boxes.findIndex(function (b) { return b.id === selected[selected.length - 1]; }) : -1;
      var next = boxes[last < 0 ? (by > 0 ? 0 : boxes.length - 1) : (last + by + boxes.length) % boxes.length];
      var a = annotators[next.canvas];
      eachAnnotator(function (other, k) { if (k !== next.canvas) other.anno.cancelSelected(); });
      selected = [next.id];
      pointer = { canvas: next.canvas, shift: false };
      if (a) a.anno.setSelected(next.id);
      var frame = pages.querySelector('.review-page[data-canvas="' + next.canvas + '"]');
      if (frame) frame.scrollIntoView({ block: 'nearest' });
      describe();
    }
    function chosen() { return boxes.filter(function (b) { return selected.indexOf(b.id) >= 0; }); }
    function removeSelected() {
      apply(boxes.filter(function (b) { return selected.indexOf(b.id) < 0; }));
    }
    function mergeSelected() {
      var parts = chosen();
      var merged = box(parts[0].canvas, boundingBox(parts.map(function (b) { return b.xywh; })));
      apply(boxes.filter(function (b) { return parts.indexOf(b) < 0; }).concat([merged]));
    }
    function startSplit(direction) {
      splitting = direction;
      setDrawing(false);
      describe();
    }
    function splitHere(event, i, img) {
      var target = chosen()[0], a = annotators[i], rect = img.getBoundingClientRect();
      var across = splitting === 'across';
      var cut = across ? (event.clientY - rect.top) * img.naturalHeight / rect.height * a.scale[1]
        : (event.clientX - rect.left) * img.naturalWidth / rect.width * a.scale[0];
      var halves = target && target.canvas === i ? splitAt(target.xywh, across, cut) : null;
      splitting = null;
      if (!halves) { describe('Click on the selected box, where the cut goes.'); return; }
      var k = boxes.indexOf(target);
      apply(boxes.slice(0, k).concat([box(i, halves[0]), box(i, halves[1])], boxes.slice(k + 1)));
    }
    function setDrawing(on) {
      drawing = on;
      eachAnnotator(function (a) { a.anno.setDrawingEnabled(on); });
      if (on) splitting = null;
      describe();
    }
    function discardDraft() {
      apply(initial.map(function (b) { return box(b.canvas, b.xywh); }));
      history = [JSON.stringify(boxes)];
      at = 0;
      writeDraft(url, null);
      note.hidden = true;
      describe();
    }
    function saveDraft() { // the draft is what differs from the regions given: undone back to them, none
      var now = regions();
      writeDraft(url, JSON.stringify(now) === given && at === 0 ? null : { regions: now, history: history, at: at });
    }
    function regions() {
      return boxes.map(function (b) { return { canvas: report.canvases[b.canvas].id, xywh: b.xywh.map(Math.round) }; });
    }

    function describe(problem) {
      var parts = chosen();
      status.textContent = problem || (boxes.length + ' illustration(s)' + (parts.length ? ', ' + parts.length + ' selected' : '') +
        (drawing ? '. Drag over an illustration on its page.' : '') +
        (splitting ? '. Click on the selected box where the cut goes.' : '.'));
      tools.remove.disabled = !parts.length;
      tools.merge.disabled = parts.length < 2 || parts.some(function (b) { return b.canvas !== parts[0].canvas; });
      tools.across.disabled = tools.down.disabled = parts.length !== 1;
      tools.undo.disabled = at === 0;
      tools.redo.disabled = at >= history.length - 1;
      tools.draw.setAttribute('aria-pressed', drawing ? 'true' : 'false');
    }

    // -- keys and pointer, while the editor is open (capture: before Annotorious's own undo keys) -----
    function onKey(event) {
      if (!container.isConnected) { close(); return; } // its witness was removed with the editor open
      if (active !== container) return;
      if (/^(INPUT|TEXTAREA|SELECT)$/.test(event.target.tagName || '')) return;
      var key = (event.key || '').toLowerCase(), ctrl = event.ctrlKey || event.metaKey;
      var action = ctrl && key === 'z' ? (event.shiftKey ? 1 : -1) : ctrl && key === 'y' ? 1 : 0;
      if (action) step(action);
      else if ((key === 'delete' || key === 'backspace') && selected.length) removeSelected();
      else if (key === ']' || key === '[') cycle(key === ']' ? 1 : -1);
      else return;
      event.preventDefault();
      event.stopPropagation();
    }
    function onPointerUp() { setTimeout(readBack, 0); } // after Annotorious has stored the move
    window.addEventListener('keydown', onKey, true);
    window.addEventListener('pointerup', onPointerUp, true);
    function close() {
      window.removeEventListener('keydown', onKey, true);
      window.removeEventListener('pointerup', onPointerUp, true);
      eachAnnotator(function (a) { a.anno.destroy(); });
      container.textContent = '';
    }
    accept.addEventListener('click', function () {
      var result = regions();
      writeDraft(url, null);
      close();
      done(result);
    });
    showMore();
  }

  loadStylesheet(); // now, so that the boxes are in place when the editor opens
  window.collationReview = { open: open, boundingBox: boundingBox, splitAt: splitAt, readDraft: readDraft,
    writeDraft: writeDraft, onChange: function (listener) { listeners.push(listener); } };
})();
