/*
 * The concordance page: one row per group of corresponding illustrations across all witnesses.
 * Plain JavaScript, no build step: everything comes from GET /collations/{id}/concordance.
 *
 * - While the collation is queued or running, poll GET /collations/{id} every 2 s.
 * - Then list the groups: a thumbnail (Image API) per witness, its canvas label and confidence; clicking
 *   one opens the viewer's Mirador compare view on it and its partner.
 * - Sort by any witness, choose the score and a minimum score; a verdict applies to a whole row
 *   (POST /assessments/batch), after which the concordance is fetched again.
 */
(function () {
  'use strict';

  var config = JSON.parse(document.getElementById('concordance-config').textContent);
  var root = config.api + '/collations/' + config.id;
  var TOKEN_KEY = 'collation.token';
  var VERDICTS = [['exact', 'exact copy'], ['partial', 'partial copy'],
                  ['semantic', 'same subject (different composition)'], ['none', 'no match']];
  var state = { doc: null, loaded: false, sort: null };
  window.collationConcordance = state; // for scripts and tests

  var page = window.collationPage; // static/common.js
  var $ = page.$, el = page.el, message = page.message, token = page.token, request = page.request;

  function fmt(value) { return typeof value === 'number' ? value.toFixed(2) : '–'; }

  function query() {
    var params = new URLSearchParams();
    if (state.sort !== null) params.set('sort', state.sort);
    params.set('score', $('score').value);
    var min = ($('min-score').value || '').trim();
    if (min !== '') params.set('min_score', min);
    return params.toString();
  }

  // -- the table ------------------------------------------------------------------------------

  function cellNode(cell) {
    if (!cell) return el('td', { className: 'member empty', text: '—' });
    var image = cell.thumbnail
      ? el('img', { className: 'thumb', src: cell.thumbnail, alt: 'No. ' + cell.index, loading: 'lazy' })
      : el('span', { className: 'nothumb', text: 'no image service' });
    var link = el('a', { href: cell.view || '#', title: 'Open Mirador on it' }, [image]);
    var lines = [link, el('div', { text: 'No. ' + cell.index + (cell.label ? ' · ' + cell.label : '') })];
    var notes = [];
    if (cell.confidence !== null) notes.push('confidence ' + fmt(cell.confidence));
    if (cell.verdict) notes.push('expert: ' + cell.verdict);
    if (notes.length) lines.push(el('div', { className: 'scores', text: notes.join(' · ') }));
    return el('td', { className: 'member', 'data-manuscript': cell.manuscript, 'data-index': cell.index }, lines);
  }

  function verdictNode(row) {
    var members = row.cells.filter(function (c) { return c; });
    if (members.length < 2) return el('td', { className: 'actions' });
    var select = el('select', { 'aria-label': 'Verdict on the row' },
      VERDICTS.map(function (v) { return el('option', { value: v[0], text: v[1] }); }));
    var button = el('button', { type: 'button', text: 'Apply to row' });
    button.addEventListener('click', function () {
      assess(members.map(function (c) { return { manuscript: c.manuscript, index: c.index }; }), select.value);
    });
    return el('td', { className: 'actions' }, [select, button]);
  }

  function render(doc) {
    state.doc = doc;
    var head = $('concordance').querySelector('thead');
    head.textContent = '';
    head.appendChild(el('tr', {}, [el('th', { text: 'Group' })].concat(doc.witnesses.map(function (w) {
      return el('th', { text: w.label, 'data-manuscript': w.index });
    })).concat([el('th', { text: 'Verdict' })])));
    var body = $('concordance').querySelector('tbody');
    body.textContent = '';
    doc.rows.forEach(function (row) {
      var first = el('td', { className: 'group' }, [
        el('div', { text: row.size > 1 ? row.size + ' witnesses' : 'alone' }),
        el('div', { className: 'scores', text: row.confidence !== null ? 'confidence ' + fmt(row.confidence) : '' })
      ]);
      body.appendChild(el('tr', { className: 'group-row' + (row.size > 1 ? '' : ' alone'), 'data-group': row.id,
                                  'data-size': row.size },
        [first].concat(row.cells.map(cellNode)).concat([verdictNode(row)])));
    });
    $('status').textContent = doc.matched + ' groups, ' + doc.unmatched + ' illustrations alone';
    $('csv').href = root + '/concordance.csv?' + query();
    state.loaded = true;
  }

  function load() {
    return request(root + '/concordance?' + query()).then(function (doc) {
      if (state.sort === null) {
        state.sort = doc.sort;
        doc.witnesses.filter(function (w) { return w.usable; }).forEach(function (w) {
          $('sort').appendChild(el('option', { value: w.index, text: w.label, selected: w.index === doc.sort }));
        });
      }
      render(doc);
    }).catch(function (error) { message('The concordance could not be read: ' + error.message, true); });
  }

  function assess(members, verdict) {
    var headers = { 'Content-Type': 'application/json' };
    if (token()) headers.Authorization = 'Bearer ' + token();
    return request(root + '/assessments/batch', { method: 'POST', headers: headers,
                                                   body: JSON.stringify({ members: members, verdict: verdict }) })
      .then(function (doc) {
        message(verdict + ': ' + doc.items.length + ' verdicts stored. Concordance updated.');
        return load();
      })
      .catch(function (error) {
        if (error.status === 401) {
          var details = document.querySelector('details.token');
          if (details) details.open = true;
          message('The service needs a bearer token for verdicts: enter it under "Token".', true);
        } else {
          message('The verdicts were not stored: ' + error.message, true);
        }
      });
  }

  function waitFinished() {
    return request(root).then(function (doc) {
      if (doc.status === 'finished') return load();
      $('status').textContent = doc.status + (doc.progress ? ' · ' + doc.progress.stage : '');
      if (doc.status === 'queued' || doc.status === 'running') window.setTimeout(waitFinished, 2000);
      return null;
    }).catch(function (error) { message(error.message, true); });
  }

  if ($('token')) {
    $('token').value = window.localStorage.getItem(TOKEN_KEY) || '';
    $('token').addEventListener('change', function () { window.localStorage.setItem(TOKEN_KEY, token()); });
  }
  $('sort').addEventListener('change', function (event) { state.sort = Number(event.target.value); load(); });
  $('score').addEventListener('change', load);
  $('min-score').addEventListener('change', load);
  waitFinished();
}());
