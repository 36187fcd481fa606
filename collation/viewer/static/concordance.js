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

  var page = window.collationPage; // static/common.js: the config, the token, requests
  var $ = page.$, el = page.el, message = page.message, api = page.api;
  var links = page.config.links, VERDICTS = page.rules.verdicts; // the categories and their words
  var state = { doc: null, loaded: false, sort: null };
  window.collationConcordance = state; // for scripts and tests

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
      ? el('img', { className: 'thumb', src: cell.thumbnail, alt: 'No. ' + (cell.index + 1), loading: 'lazy' })
      : el('span', { className: 'nothumb', text: 'no image service' });
    var link = el('a', { href: cell.view || '#', title: 'Open Mirador on it' }, [image]);
    // counted from 1, as on every page; the confidence (a statistic) behind "details" with its scale
    var lines = [link, el('div', { text: 'No. ' + (cell.index + 1) + (cell.label ? ' · ' + cell.label : '') })];
    if (cell.confidence !== null) lines.push(details('confidence ' + fmt(cell.confidence) + ' of 1'));
    // the expert's verdict stands out: it is what a reader trusts most
    if (cell.verdict) lines.push(el('div', { className: 'verdict-shown', text: 'Judged: ' + verdictWords(cell.verdict) }));
    return el('td', { className: 'member', 'data-manuscript': cell.manuscript, 'data-index': cell.index }, lines);
  }

  function details(text) {
    return el('details', { className: 'scores' }, [el('summary', { text: 'details' }), el('div', { text: text })]);
  }

  function verdictWords(verdict) {
    var category = page.category(verdict) || verdict;
    return VERDICTS.labels[category] || verdict;
  }

  // The menu starts on an empty "choose…": a row is judged only when someone picks a verdict
  // (a preselected one made every row look judged, and "Apply" would have confirmed it).
  function verdictNode(row) {
    var members = row.cells.filter(function (c) { return c; });
    if (members.length < 2) return el('td', { className: 'actions' });
    var choices = [el('option', { value: '', text: 'choose…', selected: true })];
    var menu = el('select', { 'aria-label': 'Verdict on the row' }, choices.concat(VERDICTS.categories.map(function (cat) {
      return el('option', { value: cat, text: VERDICTS.labels[cat] });
    })));
    var button = el('button', { type: 'button', text: 'Apply to row', disabled: true });
    menu.addEventListener('change', function () { button.disabled = !menu.value; });
    button.addEventListener('click', function () {
      if (!menu.value) return;
      assess(members.map(function (c) { return { manuscript: c.manuscript, index: c.index }; }), menu.value, button);
    });
    return el('td', { className: 'actions' }, [menu, button]);
  }

  // The row's IIIF Content State link (its `share`): its regions side by side in the pair view.
  function shareLink(row) {
    return el('div', {}, [el('a', { className: 'share', href: row.share, text: 'open together',
      title: 'A link (IIIF Content State) that opens these illustrations side by side' })]);
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
      var lines = [
        el('div', { text: row.size > 1 ? row.size + ' witnesses' : 'alone' })
      ];
      if (row.confidence !== null && row.size > 1) {
        lines.push(details('confidence ' + fmt(row.confidence) + ' of 1 (1: each is the other\u2019s best candidate, ' +
          'or an expert said so)'));
      }
      if (row.weak) {
        lines.push(el('div', { className: 'weak', text: 'weak match left out: it scores as low as unrelated images',
          title: 'Its best match is as little alike as unrelated images, or a blank region: it joins no group' }));
      }
      if (row.share && row.size > 1) lines.push(shareLink(row));
      var first = el('td', { className: 'group' }, lines);
      body.appendChild(el('tr', { className: 'group-row' + (row.size > 1 ? '' : ' alone') + (row.weak ? ' weak' : ''),
                                  'data-group': row.id, 'data-size': row.size, 'data-weak': row.weak ? 'true' : 'false' },
        [first].concat(row.cells.map(cellNode)).concat([verdictNode(row)])));
    });
    $('status').textContent = doc.matched + ' groups, ' + doc.unmatched + ' illustrations alone' +
      (doc.weak ? ' (' + doc.weak + ' of them with only a weak match, as little alike as unrelated images)' : '');
    $('csv').href = links.concordance_csv + '?' + query();
    state.loaded = true;
  }

  function load() {
    return api(links.concordance + '?' + query()).then(function (doc) {
      if (state.sort === null) {
        state.sort = doc.sort;
        doc.witnesses.filter(function (w) { return w.usable; }).forEach(function (w) {
          $('sort').appendChild(el('option', { value: w.index, text: w.label, selected: w.index === doc.sort }));
        });
      }
      render(doc);
    }).catch(function (error) { message('The concordance could not be read: ' + error.message, true); });
  }

  // the confirmation is shown next to the row judged (found again after the table is redrawn)
  function assess(members, verdict, button) {
    var group = button.closest('tr').getAttribute('data-group');
    var body = window.collationReviewer.extras({ members: members, verdict: verdict }); // reviewer.js
    return api(links.assessments_batch, { method: 'POST', body: JSON.stringify(body) })
      .then(function (doc) {
        window.collationReviewer.noteUsed();
        return load().then(function () {
          var row = document.querySelector('#concordance tr[data-group="' + group + '"] td.actions');
          var text = verdictWords(verdict) + ': ' + doc.items.length + ' verdicts stored.';
          if (row) row.appendChild(el('div', { className: 'row-message', role: 'status', text: text }));
          else message(text);
        });
      })
      .catch(page.failure('The verdicts were not stored: '));
  }

  function waitFinished() {
    return api(links.status).then(function (doc) {
      if (doc.status === page.rules.status.finished) return load();
      $('status').textContent = doc.status + (doc.progress ? ' · ' + doc.progress.stage : '');
      if (!page.isTerminal(doc.status)) window.setTimeout(waitFinished, 2000);
      return null;
    }).catch(page.failure(''));
  }
  $('sort').addEventListener('change', function (event) { state.sort = Number(event.target.value); load(); });
  $('score').addEventListener('change', load);
  $('min-score').addEventListener('change', load);
  waitFinished();
}());
