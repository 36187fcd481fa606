// Reviewing a witness's regions before a collation (the New collation page, workspace.js): its pages
// with their boxes, to remove a wrong box, draw a missing one, merge two or split one. The result is a
// list of {canvas, xywh} in canvas coordinates: the request's `regions` for that witness.
//
// Boxes are buttons (Tab reaches them; Enter selects; Delete removes); drawing is a drag on a page.
(function () {
  'use strict';

  var page = window.collationPage; // static/common.js
  var el = page.el;
  var PAGES_AT_ONCE = 40; // pages shown at a time (the ones with regions first), then "Show more pages"

  function pageImage(canvas) {
    var image = canvas.images[0];
    if (!image) return null;
    if (image.service_id) return page.fill(page.config.images.page, { service: image.service_id });
    return image.static_url;
  }

  // regions: [{canvas_id, canvas_index, xywh}] -> the editor, in `container`; done(list) when accepted
  function open(container, report, done) {
    var boxes = report.regions.map(function (r) {
      return { canvas: r.canvas_index, xywh: r.xywh.slice() };
    });
    var selected = [];
    var drawing = false;
    container.textContent = '';

    var status = el('p', { className: 'review-status', role: 'status' });
    var draw = el('button', { type: 'button', text: 'Draw a missing box' });
    var remove = el('button', { type: 'button', text: 'Remove selected' });
    var merge = el('button', { type: 'button', text: 'Merge selected' });
    var split = el('button', { type: 'button', text: 'Split selected in two' });
    var accept = el('button', { type: 'button', className: 'accept', text: 'Use these regions' });
    var cancel = el('button', { type: 'button', text: 'Cancel' });
    container.appendChild(el('p', { className: 'hint', text: 'Select a box (click, or Tab then Enter) to remove, ' +
      'merge or split it; "Draw a missing box", then drag over the illustration on its page.' }));
    container.appendChild(el('div', { className: 'review-tools' }, [draw, remove, merge, split, accept, cancel]));
    container.appendChild(status);

    var with_regions = {};
    boxes.forEach(function (b) { with_regions[b.canvas] = true; });
    var order = report.canvases.map(function (c) { return c.index; })
      .filter(function (i) { return report.canvases[i].width && report.canvases[i].height && pageImage(report.canvases[i]); })
      .sort(function (a, b) { return (with_regions[a] ? 0 : 1) - (with_regions[b] ? 0 : 1) || a - b; });
    var pages = el('div', { className: 'review-pages' });
    container.appendChild(pages);
    var more = el('button', { type: 'button', className: 'review-more' });
    container.appendChild(more);
    var frames = {};
    var shown = 0;
    function showMore() {
      order.slice(shown, shown + PAGES_AT_ONCE).forEach(addPage);
      shown = Math.min(order.length, shown + PAGES_AT_ONCE);
      more.hidden = shown >= order.length;
      more.textContent = 'Show more pages (' + shown + ' of ' + order.length + ' shown)';
      render();
    }
    more.addEventListener('click', showMore);
    function addPage(i) {
      var canvas = report.canvases[i];
      var frame = el('div', { className: 'review-page' });
      frame.setAttribute('data-canvas', String(i));
      frame.appendChild(el('img', { src: pageImage(canvas), alt: 'Page ' + (canvas.label || i + 1), draggable: false }));
      frame.appendChild(el('span', { className: 'page-label', text: canvas.label || 'page ' + (i + 1) }));
      frames[i] = frame;
      pages.appendChild(frame);
      frame.addEventListener('pointerdown', function (event) { if (drawing) startDrawing(event, frame, canvas); });
    }

    function render() {
      Object.keys(frames).forEach(function (i) {
        frames[i].querySelectorAll('.review-box').forEach(function (n) { n.remove(); });
      });
      boxes.forEach(function (b, k) {
        var frame = frames[b.canvas];
        if (!frame) return;
        var c = report.canvases[b.canvas];
        var node = el('button', { type: 'button', className: 'review-box' + (selected.indexOf(k) >= 0 ? ' selected' : '') });
        node.setAttribute('aria-pressed', selected.indexOf(k) >= 0 ? 'true' : 'false');
        node.setAttribute('aria-label', 'Illustration box ' + (k + 1) + ' on ' + (c.label || 'page ' + (b.canvas + 1)));
        node.style.left = (100 * b.xywh[0] / c.width) + '%';
        node.style.top = (100 * b.xywh[1] / c.height) + '%';
        node.style.width = (100 * b.xywh[2] / c.width) + '%';
        node.style.height = (100 * b.xywh[3] / c.height) + '%';
        node.addEventListener('click', function (event) { event.stopPropagation(); toggle(k); });
        node.addEventListener('keydown', function (event) {
          if (event.key === 'Delete' || event.key === 'Backspace') { event.preventDefault(); selected = [k]; removeSelected(); }
        });
        frame.appendChild(node);
      });
      status.textContent = boxes.length + ' illustration(s)' + (selected.length ? ', ' + selected.length + ' selected' : '') +
        (drawing ? '. Drag over an illustration on its page.' : '.');
      remove.disabled = !selected.length;
      merge.disabled = selected.length < 2 || !sameCanvas(selected);
      split.disabled = selected.length !== 1;
      draw.setAttribute('aria-pressed', drawing ? 'true' : 'false');
    }
    function sameCanvas(list) { return list.every(function (k) { return boxes[k].canvas === boxes[list[0]].canvas; }); }
    function toggle(k) {
      var at = selected.indexOf(k);
      if (at >= 0) selected.splice(at, 1); else selected.push(k);
      render();
    }
    function removeSelected() {
      boxes = boxes.filter(function (_, k) { return selected.indexOf(k) < 0; });
      selected = [];
      render();
    }
    function mergeSelected() {
      var parts = selected.map(function (k) { return boxes[k].xywh; });
      var x0 = Math.min.apply(null, parts.map(function (b) { return b[0]; }));
      var y0 = Math.min.apply(null, parts.map(function (b) { return b[1]; }));
      var x1 = Math.max.apply(null, parts.map(function (b) { return b[0] + b[2]; }));
      var y1 = Math.max.apply(null, parts.map(function (b) { return b[1] + b[3]; }));
      var canvas = boxes[selected[0]].canvas;
      boxes = boxes.filter(function (_, k) { return selected.indexOf(k) < 0; });
      boxes.push({ canvas: canvas, xywh: [x0, y0, x1 - x0, y1 - y0] });
      selected = [];
      render();
    }
    function splitSelected() {
      var b = boxes[selected[0]], x = b.xywh[0], y = b.xywh[1], w = b.xywh[2], h = b.xywh[3];
      var halves = w >= h ? [[x, y, Math.floor(w / 2), h], [x + Math.floor(w / 2), y, w - Math.floor(w / 2), h]]
        : [[x, y, w, Math.floor(h / 2)], [x, y + Math.floor(h / 2), w, h - Math.floor(h / 2)]];
      boxes.splice(selected[0], 1, { canvas: b.canvas, xywh: halves[0] }, { canvas: b.canvas, xywh: halves[1] });
      selected = [];
      render();
    }
    function startDrawing(event, frame, canvas) {
      event.preventDefault();
      var rect = frame.querySelector('img').getBoundingClientRect();
      var at = function (e) {
        return [Math.min(Math.max(e.clientX - rect.left, 0), rect.width), Math.min(Math.max(e.clientY - rect.top, 0), rect.height)];
      };
      var start = at(event);
      var ghost = el('div', { className: 'review-ghost' });
      frame.appendChild(ghost);
      function move(e) {
        var p = at(e);
        ghost.style.left = Math.min(start[0], p[0]) + 'px';
        ghost.style.top = Math.min(start[1], p[1]) + 'px';
        ghost.style.width = Math.abs(p[0] - start[0]) + 'px';
        ghost.style.height = Math.abs(p[1] - start[1]) + 'px';
      }
      function up(e) {
        document.removeEventListener('pointermove', move);
        document.removeEventListener('pointerup', up);
        ghost.remove();
        var p = at(e), sx = canvas.width / rect.width, sy = canvas.height / rect.height;
        var x0 = Math.min(start[0], p[0]), y0 = Math.min(start[1], p[1]);
        var w = Math.abs(p[0] - start[0]), h = Math.abs(p[1] - start[1]);
        if (w > 4 && h > 4) {
          boxes.push({ canvas: canvas.index, xywh: [Math.round(x0 * sx), Math.round(y0 * sy), Math.round(w * sx), Math.round(h * sy)] });
          drawing = false;
        }
        render();
      }
      document.addEventListener('pointermove', move);
      document.addEventListener('pointerup', up);
    }

    draw.addEventListener('click', function () { drawing = !drawing; render(); });
    remove.addEventListener('click', removeSelected);
    merge.addEventListener('click', mergeSelected);
    split.addEventListener('click', splitSelected);
    accept.addEventListener('click', function () {
      container.textContent = '';
      done(boxes.map(function (b) { return { canvas: report.canvases[b.canvas].id, xywh: b.xywh.map(Math.round) }; }));
    });
    cancel.addEventListener('click', function () { container.textContent = ''; done(null); });
    showMore();
  }

  window.collationReview = { open: open };
})();
