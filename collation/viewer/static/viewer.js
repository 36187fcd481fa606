/*
 * The collation viewer page. Plain JavaScript, no build step: everything comes from the API.
 *
 * - While the collation is queued or running, poll GET /collations/{id} every 2 s and show the stage.
 * - When it is finished, fetch view.json (derived manifests, regions with Image API thumbnails) and the
 *   ranking (GET /correspondences?pair=a,b&score=...&top=3), list it, and open Mirador with the two
 *   derived manifests side by side.
 * - Clicking a candidate points both Mirador windows at the two canvases; Confirm / Reject POST an
 *   assessment (with the reviewer's name and note, reviewer.js), after which the ranking, the matrix and
 *   Mirador's annotations are fetched again and the next illustration is selected.
 * - It is longer than 400 lines because the list, Mirador's windows and the verdicts share one state.
 */
(function () {
  'use strict';

  var page = window.collationPage; // static/common.js: the config, the token, requests
  var $ = page.$, el = page.el, message = page.message, api = page.api;
  var config = page.config, links = config.links, rules = page.rules;
  var POLL_MS = 2000;
  var WINDOW_IDS = ['collation-a', 'collation-b'];

  var state = {
    config: config,
    pair: config.pair,
    score: 'propagated',
    status: null,
    view: null,
    items: [],
    selected: null,
    viewer: null,
    moving: {}, // Mirador window id -> the ticket of the canvas it is to show once its manifest is in
    loaded: false,
    lastAssessment: null
  };
  window.collationViewer = state; // for scripts and tests

  function fmt(value, digits) { return typeof value === 'number' ? value.toFixed(digits) : '–'; }

  function pairParam() { return state.pair[0] + ',' + state.pair[1]; }

  // -- progress --------------------------------------------------------------------------------

  function renderStatus(doc) {
    var status = $('status');
    var bar = $('progress');
    var p = doc.progress || {};
    var text = doc.status;
    if (!page.isTerminal(doc.status)) {
      if (p.stage && p.stage !== doc.status) text += ' · ' + p.stage;
      text += ' ' + (p.done || 0) + '/' + (p.total || 0);
      bar.hidden = false;
      bar.max = Math.max(1, p.total || 0);
      bar.value = p.done || 0;
    } else {
      bar.hidden = true;
    }
    status.textContent = text;
    status.className = 'status ' + doc.status;
    status.setAttribute('data-status', doc.status);
  }

  function fillPairs(doc) {
    var menu = $('pair');
    var ms = doc.manuscripts || [];
    var label = function (m) { return (ms[m] && ms[m].label) || ('Manuscript ' + m); };
    var pairs = [];
    for (var a = 0; a < ms.length; a++) {
      for (var b = a + 1; b < ms.length; b++) pairs.push([a, b]);
    }
    if (!pairs.some(function (p) { return p[0] === state.pair[0] && p[1] === state.pair[1]; })) {
      pairs.unshift(state.pair.slice());
    }
    var texts = pairs.map(function (p) { return label(p[0]) + ' ↔ ' + label(p[1]); });
    if (menu.getAttribute('data-texts') === texts.join('\n')) return; // labels arrive as manuscripts are read
    menu.setAttribute('data-texts', texts.join('\n'));
    menu.textContent = '';
    pairs.forEach(function (p, k) {
      var option = el('option', { value: p[0] + ',' + p[1], text: texts[k] });
      option.selected = p[0] === state.pair[0] && p[1] === state.pair[1];
      menu.appendChild(option);
    });
  }

  function poll() {
    api(links.status).then(function (doc) {
      state.status = doc;
      renderStatus(doc);
      fillPairs(doc);
      if (!page.isTerminal(doc.status)) {
        setTimeout(poll, POLL_MS);
      } else if (doc.status === rules.status.finished) {
        if (!state.loaded) loadPair();
      } else {
        var errors = (doc.errors || []).map(function (e) { return e.message || String(e); });
        message('This collation is ' + doc.status + (errors.length ? ': ' + errors.join('; ') : '.'), true);
      }
    }).catch(function (error) {
      message('Could not read the collation: ' + error.message, true);
      setTimeout(poll, POLL_MS * 2);
    });
  }

  // -- the list --------------------------------------------------------------------------------

  function region(m, index) {
    var regions = (state.view && state.view.regions[String(m)]) || {};
    return regions[String(index)] || null;
  }

  function thumb(m, index) {
    var r = region(m, index);
    if (r && r.thumbnail) {
      return el('img', { className: 'thumb', src: r.thumbnail, alt: 'illustration ' + (index + 1), loading: 'lazy' });
    }
    return el('span', { className: 'nothumb', text: 'no image' });
  }

  // Illustrations are counted from 1 on every page (the API's indices count from 0)
  function where(m, index) {
    var r = region(m, index);
    return 'No. ' + (index + 1) + (r && r.canvas_label ? ' · ' + r.canvas_label : '');
  }
  function witnessLabel(m) {
    var ms = (state.status && state.status.manuscripts) || [];
    return (ms[m] && ms[m].label) || 'witness ' + (m + 1);
  }

  var VERDICTS = rules.verdicts; // categories, aliases, words, marks and buttons (collation/viewer/browser.py)
  // a match found transposed (option transpositions): the same words as the annotations' tagging body
  var TRANSPOSITION_TEXT = rules.transpositions;

  function has(map, key) { return !!key && Object.prototype.hasOwnProperty.call(map, key); }

  // a weak match (docs/concordance.md, "Weak matches"): as little alike as the collation's unrelated
  // images (the server decides, by the floor it learned or the one set), or a blank region
  function weakText(c) {
    return c.blank ? 'weak: a blank region, nothing drawn to match' : 'weak: as little alike as unrelated images';
  }

  // The likeness in words (the statistics are behind "details", with their scale). S, the raw image
  // similarity, runs from 0 to 2: restyled copies score about 0.9 to 1.5, near-identical ones more; hard
  // copies may score as low as 0.2, which is why "hardly alike" is the server's weak verdict, not a number.
  function likeness(c) {
    if (typeof c.S !== 'number') return 'likeness unknown';
    if (c.weak && !c.blank) return 'Hardly alike';
    if (c.S >= 1.5) return 'Very alike';
    return c.S >= 0.9 ? 'Alike' : 'Somewhat alike';
  }
  function statistics(c) {
    var scale = state.weakRule === 'fixed' && typeof state.weakBelow === 'number'
      ? '(this collation calls weak what scores under ' + fmt(state.weakBelow, 2) + ')'
      : '(copies about 0.9 and more; what is weak is learned from what this collation\u2019s unrelated images score)';
    return [
      'Similarity S ' + fmt(c.S, 2) + ' on a scale of 0 to 2 ' + scale + '.',
      'Among its candidates N_S ' + fmt(c.N_S, 2) + ' of 2 (2: each is the other\u2019s best).',
      'With the other matches P_S ' + fmt(c.P_S, 2) + ' (0 and up; the ranking\u2019s score).'
    ].map(function (text) { return el('div', { text: text }); });
  }

  function candidateNode(source, c) {
    var verdict = c.assessment || null;
    var category = c.category || page.category(verdict);
    var look = category ? (page.isMatch(category) ? 'match' : 'no-match') : ''; // viewer.css
    var badges = [];
    if (c.cycle_consistent) {
      badges.push(el('span', { className: 'badge cycle', text: '⟲ each other’s best match',
        title: 'Cycle-consistent: each is the best candidate of the other' }));
    }
    if (c.weak) {
      badges.push(el('span', { className: 'badge weak', text: weakText(c),
        title: 'No true copy was found so little alike: this match joins no concordance group' }));
    }
    if (has(TRANSPOSITION_TEXT, c.transposition)) {
      badges.push(el('span', { className: 'badge transposed', text: TRANSPOSITION_TEXT[c.transposition],
        title: 'Most alike with the counterpart transposed' }));
    }
    if (category) {
      var words = has(VERDICTS.labels, category) ? VERDICTS.marks[category] + ' ' + VERDICTS.labels[category] : category;
      badges.push(el('span', { className: 'badge ' + look, text: words }));
    }
    // one button per category, in the server's order (keys.js: 1, 2, 3, ...); a category with an alias
    // is sent as it (Confirm and Reject: the first API's confirmed and rejected)
    var buttons = VERDICTS.categories.map(function (cat) {
      return el('button', { type: 'button', text: VERDICTS.buttons[cat], title: VERDICTS.labels[cat],
                            'data-verdict': page.verdictOf(cat), 'data-category': cat });
    });
    buttons.forEach(function (button) {
      button.addEventListener('click', function (event) {
        event.stopPropagation();
        assess(source.index, c.index, button.getAttribute('data-verdict'));
      });
    });
    if (verdict) { // a verdict given by mistake can be taken back (key 0, keys.js)
      var clearButton = el('button', { type: 'button', text: 'Clear', className: 'clear', title: 'Clear the verdict' });
      clearButton.addEventListener('click', function (event) { event.stopPropagation(); clear(source.index, c.index); });
      buttons.push(clearButton);
    }
    var node = el('div', {
      className: 'candidate' + (look ? ' ' + look : ''),
      'data-source': source.index, 'data-target': c.index, 'data-rank': c.rank,
      'data-cycle': c.cycle_consistent ? 'true' : 'false', 'data-assessment': verdict || '',
      'data-category': category || '', 'data-transposition': c.transposition || '',
      'data-weak': c.weak ? 'true' : 'false'
    }, [
      thumb(state.pair[1], c.index),
      el('div', { className: 'where', text: '#' + c.rank + ' → ' + where(state.pair[1], c.index) }),
      el('div', { className: 'likeness', text: likeness(c) }),
      el('details', { className: 'scores' }, [el('summary', { text: 'details' })].concat(statistics(c))),
      el('div', {}, badges),
      el('div', { className: 'actions' }, buttons)
    ]);
    node.addEventListener('click', function (event) {
      event.stopPropagation();
      select(source.index, c.index);
    });
    return node;
  }

  function renderList() {
    var body = document.querySelector('#correspondences tbody');
    body.textContent = '';
    state.items.forEach(function (item) {
      var source = item.source;
      var all = el('button', { type: 'button', className: 'grid-open', text: 'All candidates',
        'aria-label': 'All candidates of ' + where(state.pair[0], source.index) });
      all.addEventListener('click', function (event) { event.stopPropagation(); openGrid(source.index); });
      var row = el('tr', { className: 'row', 'data-source': source.index }, [
        el('td', { className: 'source' }, [thumb(state.pair[0], source.index),
          el('div', { text: where(state.pair[0], source.index) }), all]),
        el('td', {}, [el('div', { className: 'candidates' }, item.candidates.map(function (c) {
          return candidateNode(source, c);
        }))])
      ]);
      row.addEventListener('click', function () {
        if (item.candidates.length) select(source.index, item.candidates[0].index);
      });
      body.appendChild(row);
    });
    countReviewed();
    highlight();
  }

  // -- the grid of one illustration's candidates (as AIKON shows a query's): its GRID_TOP best in the other
  // witness, thumbnails in a grid above the list, each with the verdict buttons of the list's candidates
  var GRID_TOP = 24;
  function openGrid(source) {
    var url = links.correspondences + '?pair=' + pairParam() + '&score=' + state.score + '&top=' + GRID_TOP;
    return api(url).then(function (doc) {
      var item = (doc.items || []).find(function (i) { return i.source.index === source; });
      var box = $('grid');
      box.textContent = '';
      var close = el('button', { type: 'button', className: 'grid-close', text: 'Close the grid' });
      close.addEventListener('click', function () { box.hidden = true; box.textContent = ''; });
      box.appendChild(el('div', { className: 'grid-head' }, [thumb(state.pair[0], source),
        el('h2', { text: 'All candidates of ' + where(state.pair[0], source) + ' in ' + witnessLabel(state.pair[1]) }), close]));
      box.appendChild(el('div', { className: 'grid-cards' }, ((item && item.candidates) || []).map(function (c) {
        return candidateNode({ index: source }, c);
      })));
      box.hidden = false;
      box.setAttribute('data-source', source);
      box.scrollIntoView({ block: 'start' });
      highlight();
    }).catch(page.failure('The candidates could not be read: '));
  }

  // "4 of 15 illustrations reviewed": an illustration is reviewed once any of its candidates has a verdict
  function countReviewed() {
    var open = state.items.filter(function (item) { return item.candidates.length; });
    var done = open.filter(function (item) { return item.candidates.some(function (c) { return c.assessment; }); });
    $('reviewed').textContent = done.length + ' of ' + open.length + ' illustrations reviewed';
  }

  // after a verdict, the next illustration's best candidate (the review moves on by itself)
  function nextIllustration(source) {
    var at = state.items.findIndex(function (item) { return item.source.index === source; });
    var next = state.items.slice(at + 1).find(function (item) { return item.candidates.length; });
    if (!next) return;
    select(next.source.index, next.candidates[0].index);
    var row = document.querySelector('#correspondences tr.row[data-source="' + next.source.index + '"]');
    if (row) row.scrollIntoView({ block: 'nearest' });
  }

  function highlight() {
    var sel = state.selected;
    document.querySelectorAll('#correspondences tr.row').forEach(function (row) {
      row.classList.toggle('selected', !!sel && row.getAttribute('data-source') === String(sel.source));
    });
    document.querySelectorAll('#correspondences .candidate, #grid .candidate').forEach(function (node) {
      node.classList.toggle('selected', !!sel && node.getAttribute('data-source') === String(sel.source) &&
        node.getAttribute('data-target') === String(sel.target));
    });
  }

  function refreshMatrix() {
    $('matrix').src = links.matrix + '?pair=' + pairParam() + '&score=' + state.score + '&t=' + Date.now();
  }

  function refreshList() {
    var url = links.correspondences + '?pair=' + pairParam() + '&score=' + state.score + '&top=' + config.top;
    return api(url).then(function (doc) {
      state.items = doc.items || [];
      state.weakBelow = doc.weak_below;
      state.weakRule = doc.weak_rule;
      renderList();
      refreshMatrix();
      return state.items;
    });
  }

  function loadPair() {
    state.loaded = true;
    api(links.view_json + '?pair=' + pairParam()).then(function (view) {
      state.view = view;
      return refreshList();
    }).then(function (items) {
      // open on the match named by ?link= when there is one, else on the first illustration's best candidate
      var focus = config.focus && region(state.pair[0], config.focus[0]) && region(state.pair[1], config.focus[1]) ?
        config.focus : null;
      var first = items.find(function (item) { return item.candidates.length; });
      var pick = focus || (first ? [first.source.index, first.candidates[0].index] : null);
      startMirador(pick ? pick[0] : null, pick ? pick[1] : null);
      if (!pick) return;
      select(pick[0], pick[1], true);
      if (state.viewer) selectMatch(region(state.pair[0], pick[0]), region(state.pair[1], pick[1]));
      var row = document.querySelector('#correspondences tr.row[data-source="' + pick[0] + '"]');
      if (focus && row) row.scrollIntoView({ block: 'center' });
    }).catch(function (error) {
      state.loaded = false;
      message('Could not load the correspondences: ' + error.message, true);
    });
  }

  // -- Mirador ---------------------------------------------------------------------------------

  function manifestOf(m) {
    // Mirador 3.4.3 and 4.0.0 scale #xywh by the image's pixels (mirador#4533): they open the
    // viewer-only variant whose boxes are in that space; any other version opens the derived manifest.
    var ms = (state.view && state.view.manuscripts) || [];
    if (!ms[m]) return null;
    return (config.image_space_targets && ms[m].viewer_manifest) || ms[m].manifest;
  }

  function fragmentOf(annotation) {
    // the box in canvas units: kept as imcol:canvasFragment where the viewer variant rescaled it
    var target = annotation.target || annotation.on || {};
    return annotation['imcol:canvasFragment'] || (target.selector && target.selector.value) || '';
  }

  function startMirador(source, target) {
    if (!window.Mirador || !document.getElementById('mirador')) return;
    $('mirador-wait').hidden = true;
    var ends = [[state.pair[0], source], [state.pair[1], target]];
    var windows = ends.map(function (end, k) {
      var w = { id: WINDOW_IDS[k], manifestId: manifestOf(end[0]) };
      var r = end[1] === null ? null : region(end[0], end[1]);
      if (r) w.canvasId = r.canvas;
      return w;
    });
    state.viewer = window.Mirador.viewer({
      id: 'mirador',
      windows: windows,
      window: {
        sideBarOpen: true,
        sideBarPanel: 'annotations',
        highlightAllAnnotations: true,
        forceDrawAnnotations: true,
        allowClose: false
      },
      // Mirador 3.x and 4.0.x list only these motivations by default; never [] there (it hides all).
      annotations: { filteredMotivations: ['oa:commenting', 'oa:tagging', 'sc:painting', 'commenting', 'tagging'] },
      workspaceControlPanel: { enabled: false },
      workspace: { showZoomControls: true }
    });
    window.viewer = state.viewer;
    stackOnNarrowScreens();
  }

  // On a portrait screen (a tablet), and beside the list on a wide landscape one (viewer.css: Mirador takes
  // 46 % of the width there), the two windows side by side would be a few cm wide each, their annotation
  // panel leaving no room for the page: one above the other, each gets the pane's whole width.
  function stackOnNarrowScreens() {
    if (!window.matchMedia || !window.matchMedia('(orientation: portrait), (min-width: 1000px)').matches) return;
    var layout = { direction: 'column', first: WINDOW_IDS[0], second: WINDOW_IDS[1], splitPercentage: 50 };
    state.viewer.store.dispatch(miradorActions().updateWorkspaceMosaicLayout(layout));
  }

  function miradorActions() {
    // Mirador 3 groups its action creators under Mirador.actions; 4.0 exports them at the top level.
    return window.Mirador.actions || window.Mirador;
  }

  function showInMirador(source, target) {
    if (!state.viewer || !window.Mirador) return;
    var ends = [region(state.pair[0], source), region(state.pair[1], target)];
    ends.forEach(function (r, k) { if (r) moveWindow(WINDOW_IDS[k], r.canvas); });
    if (ends[0] && ends[1]) selectMatch(ends[0], ends[1]);
  }

  /*
   * Points a Mirador window at a canvas. When a window's manifest arrives, Mirador sets the window's
   * starting canvas (its saga runs right after receiveManifest, in the same task), which would undo a
   * canvas set before: so a window whose manifest is not in yet is moved in the task after it arrives.
   * The latest click wins.
   */
  function moveWindow(windowId, canvasId) {
    var store = state.viewer.store;
    if (!(store.getState().windows || {})[windowId]) return;
    var ticket = {};
    state.moving[windowId] = ticket;
    var move = function () {
      if (state.moving[windowId] !== ticket) return;
      state.moving[windowId] = null;
      store.dispatch(miradorActions().setCanvas(windowId, canvasId));
    };
    if (manifestIn(store.getState(), windowId)) { move(); return; }
    var unsubscribe = store.subscribe(function () {
      if (state.moving[windowId] !== ticket) { unsubscribe(); return; }
      if (!manifestIn(store.getState(), windowId)) return;
      unsubscribe();
      window.setTimeout(move, 0);
    });
  }

  function manifestIn(miradorState, windowId) {
    var w = (miradorState.windows || {})[windowId];
    var m = w && (miradorState.manifests || {})[w.manifestId];
    return !!(m && !m.isFetching && (m.json || m.error));
  }

  function annotationsOn(canvasId) {
    var pages = (state.viewer.store.getState().annotations || {})[canvasId] || {};
    return Object.keys(pages).reduce(function (all, key) {
      var json = pages[key].json || {};
      return all.concat(json.items || json.resources || []);
    }, []);
  }

  function annotationId(annotation) { return annotation.id || annotation['@id']; }

  // After a verdict, Mirador's annotation pages are fetched again and handed to its store, so that
  // the annotation says "confirmed" (or "rejected") at once rather than after a reload.
  function refreshAnnotations() {
    if (!state.viewer || !window.Mirador) return;
    var pages = state.viewer.store.getState().annotations || {};
    var receive = miradorActions().receiveAnnotation;
    Object.keys(pages).forEach(function (canvasId) {
      Object.keys(pages[canvasId] || {}).forEach(function (pageId) {
        window.fetch(pageId, { cache: 'no-store' }).then(function (response) {
          return response.ok ? response.json() : null;
        }).then(function (json) {
          if (json) state.viewer.store.dispatch(receive(canvasId, pageId, json));
        }).catch(function () { /* the old page stays: the list already shows the verdict */ });
      });
    });
  }

  /*
   * Selects the display annotation of the match in both windows, once Mirador has fetched the two
   * canvases' annotation pages: on canvas A, the annotation whose imcol:counterpart is an annotation
   * on canvas B (and that targets region A, when a canvas holds several illustrations).
   */
  function selectMatch(regionA, regionB) {
    var store = state.viewer.store;
    var actions = miradorActions();
    var ticket = {};
    state.selecting = ticket;
    var unsubscribe = function () {};
    var attempt = function () {
      if (state.selecting !== ticket) { unsubscribe(); return; }
      var onB = {};
      annotationsOn(regionB.canvas).forEach(function (a) { onB[annotationId(a)] = true; });
      var candidates = annotationsOn(regionA.canvas).filter(function (a) { return onB[a['imcol:counterpart']]; });
      if (!candidates.length) return;
      var box = 'xywh=' + regionA.xywh.join(',');
      var match = candidates.find(function (a) { return fragmentOf(a) === box; }) || candidates[0];
      state.selecting = null;
      unsubscribe();
      var windows = store.getState().windows || {};
      [[WINDOW_IDS[0], annotationId(match)], [WINDOW_IDS[1], match['imcol:counterpart']]].forEach(function (pick) {
        if (windows[pick[0]] && windows[pick[0]].selectedAnnotationId !== pick[1]) {
          store.dispatch(actions.selectAnnotation(pick[0], pick[1]));
        }
      });
    };
    unsubscribe = store.subscribe(attempt);
    attempt();
    setTimeout(function () { if (state.selecting === ticket) { state.selecting = null; unsubscribe(); } }, 30000);
  }

  function select(source, target, quiet) {
    state.selected = { source: source, target: target };
    highlight();
    if (!quiet) showInMirador(source, target);
  }

  // -- assessments -----------------------------------------------------------------------------

  function capital(text) { return text.charAt(0).toUpperCase() + text.slice(1); }
  function verdictWords(verdict) {
    var category = page.category(verdict);
    return has(VERDICTS.labels, category) ? VERDICTS.labels[category] : verdict;
  }
  // "No. 3 of P2 Ott.gr.354 ↔ No. 5 of P3 Marc.gr.IV.35", counted from 1
  function between(source, target) {
    return 'No. ' + (source + 1) + ' of ' + witnessLabel(state.pair[0]) + ' ↔ No. ' + (target + 1) + ' of ' +
      witnessLabel(state.pair[1]);
  }

  function assess(source, target, verdict) {
    var body = window.collationReviewer.extras({ pair: state.pair.slice(), source: source, target: target,
      verdict: verdict }); // reviewer.js: the reviewer's name and note
    return api(links.assessments, { method: 'POST', body: JSON.stringify(body) })
      .then(function (item) {
        state.lastAssessment = item;
        window.collationReviewer.noteUsed();
        // the message sits at the top of the list pane, which stays in view (viewer.css)
        message(capital(verdictWords(verdict)) + ': ' + between(source, target) + '. Ranking updated.');
        return refreshList();
      })
      .then(function () {
        refreshAnnotations();
        if (!$('grid').hidden) return openGrid(Number($('grid').getAttribute('data-source')));
        nextIllustration(source);
        return null;
      })
      .catch(page.failure('The assessment was not stored: '));
  }

  function clear(source, target) {
    var query = '?pair=' + pairParam() + '&source=' + source + '&target=' + target;
    return api(links.assessments + query, { method: 'DELETE' })
      .then(function () {
        message('Verdict cleared: ' + between(source, target) + '.');
        return refreshList();
      })
      .then(function () { refreshAnnotations(); select(source, target, true); })
      .catch(page.failure('The verdict was not cleared: '));
  }

  // -- wiring ----------------------------------------------------------------------------------
  $('pair').addEventListener('change', function (event) {
    var params = new URLSearchParams(window.location.search);
    params.set('pair', event.target.value);
    window.location.search = params.toString();
  });
  $('score').addEventListener('change', function (event) {
    state.score = event.target.value;
    if (state.view) refreshList().catch(function (error) { message(error.message, true); });
  });
  $('matrix-box').addEventListener('toggle', function () { if (state.view) refreshMatrix(); });
  poll();
})();
