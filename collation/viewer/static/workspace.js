// The workspace's pages (templates/workspace): Home lists the collations, New inspects the pasted
// manifests and starts a collation, Follow shows its progress and, when finished, its results.
// Everything goes through the public API; errors are shown in words (the problem's detail).
// It is longer than 400 lines because the New page's witnesses, their detection on the workers
// (/detections), the reviewed regions and the draft kept on the server (/drafts) share one state.
(function () {
  'use strict';

  var page = window.collationPage; // static/common.js: the config, the token, requests
  var $ = page.$, el = page.el, message = page.message, api = page.api, token = page.token;
  var config = page.config, links = config.links, STATUS = page.rules.status;
  var fail = page.failure('');

  function when(stamp) { return stamp ? new Date(stamp).toLocaleString() : ''; }
  function percent(p) { return p && p.total ? Math.round(100 * p.done / p.total) + '%' : ''; }
  function capital(text) { return text.charAt(0).toUpperCase() + text.slice(1); }
  // "1 witness", "3 witnesses": counts read as words, not as a form to fill
  function plural(n, one, many) { return n + ' ' + (n === 1 ? one : many || one + 's'); }
  // A message as a sentence: the service's bare "HTTP 404" says nothing to a reader
  var HTTP_WORDS = { 401: 'asks for a login', 403: 'refuses access to it', 404: 'does not know this address',
    410: 'says it is gone' };
  function sentence(text) {
    var http = /^HTTP (\d{3})\b/.exec(text || '');
    if (http) {
      var code = Number(http[1]);
      text = 'The library\u2019s server ' + (HTTP_WORDS[code] ||
        (code >= 500 ? 'had a problem answering (try again later)' : 'did not give the manifest')) +
        ' (HTTP ' + code + ')' + text.slice(http[0].length).replace(/^[\s:.]+$/, '');
    }
    text = (text || '').trim();
    return /[.!?]$/.test(text) ? text : text + '.';
  }
  // the concordance is the first page of a collation of this many witnesses or more (the server's rule)
  function manyWitnesses(count) { return count >= page.rules.concordance_witnesses; }

  if ($('token-box') && !token()) $('token-box').open = true;
  page.onTokenChange(function () { if (config.view === 'home') home(1); });

  // -- Home ----------------------------------------------------------------------------------------
  // Every row offers the same buttons in every state (Rename, Delete; Retry when it failed), so that a
  // button never changes meaning under the pointer when the list is redrawn.
  function home(number) {
    var status = $('filter').value;
    var query = links.collations + '?limit=20&page=' + number + (status ? '&status=' + status : '');
    api(query).then(function (doc) {
      var body = document.querySelector('#collations tbody');
      body.textContent = '';
      doc.items.forEach(function (item) {
        var again = function () { home(number); };
        var open = el('td', { className: 'open' }, [el('a', { href: page.fill(links.follow, { id: item.id }), text: 'Follow' })]);
        if (item.status === STATUS.finished) {
          open.appendChild(document.createTextNode(' · '));
          open.appendChild(el('a', { href: item.links.view, text: 'Pairs' }));
          if (manyWitnesses(item.witnesses.length)) {
            open.appendChild(document.createTextNode(' · '));
            open.appendChild(el('a', { href: item.links.concordance_view, text: 'Concordance' }));
          }
        }
        var name = el('td', { className: 'name' }, [el('span', { className: 'name-text', text: item.name })]);
        var actions = el('td', { className: 'row-actions' });
        if (item.status === STATUS.failed) {
          actions.appendChild(el('button', { type: 'button', className: 'retry', text: 'Retry',
            onclick: function () { retry(item.links.status).then(again).catch(fail); } }));
        }
        actions.appendChild(el('button', { type: 'button', className: 'rename', text: 'Rename',
          'aria-label': 'Rename ' + item.name,
          onclick: function () { renameInline(name, item.links.status, item.name, again); } }));
        actions.appendChild(el('button', { type: 'button', className: 'delete', text: 'Delete',
          'aria-label': 'Delete ' + item.name,
          onclick: function () { deleteCollation(item.links.status, item.name, item.status).then(again); } }));
        body.appendChild(el('tr', { className: 'collation', 'data-id': item.id }, [
          el('td', { text: when(item.created) }), name,
          el('td', { text: statusWords(item) }), open, actions,
        ]));
      });
      var empty = doc.items.length === 0;
      $('empty').hidden = !empty;
      if (empty && config.tokens && !token()) {
        $('empty').textContent = 'Enter your token under "Token" to see your collations.';
      }
      $('prev').hidden = !doc.links.prev;
      $('next').hidden = !doc.links.next;
      $('prev').onclick = function () { home(number - 1); };
      $('next').onclick = function () { home(number + 1); };
    }).catch(fail);
  }
  var STATUS_WORDS = {}; // the status in words: "queued" reads "waiting"
  STATUS_WORDS[STATUS.queued] = 'waiting';
  function statusWords(item) {
    return (STATUS_WORDS[item.status] || item.status) + (item.status === STATUS.running ? ' ' + percent(item.progress) : '');
  }

  // Rename in place: the name becomes a field with Save and Cancel (Enter saves, Escape cancels); the
  // server trims and checks it (a 400 naming `name` is shown in words). `done(doc)` after a rename.
  function renameInline(holder, url, current, done) {
    if (holder.querySelector('form')) return;
    var shown = Array.prototype.slice.call(holder.childNodes);
    var field = el('input', { type: 'text', className: 'rename-field', value: current, maxLength: 200,
      'aria-label': 'New name of the collation' });
    var form = el('form', { className: 'rename-form' }, [field,
      el('button', { type: 'submit', text: 'Save' }),
      el('button', { type: 'button', className: 'rename-cancel', text: 'Cancel' })]);
    function close() { form.remove(); shown.forEach(function (n) { n.hidden = false; }); }
    shown.forEach(function (n) { n.hidden = true; });
    holder.appendChild(form);
    field.focus();
    field.select();
    form.querySelector('.rename-cancel').addEventListener('click', close);
    field.addEventListener('keydown', function (event) { if (event.key === 'Escape') close(); });
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      api(url, { method: 'PATCH', body: JSON.stringify({ name: field.value }) }).then(function (doc) {
        message('');
        close();
        done(doc);
      }).catch(function (error) { fail(error); field.focus(); });
    });
  }

  // -- New collation -------------------------------------------------------------------------------
  var inspected = {}; // manifest URL -> report (or {error})
  var corrected = {}; // manifest URL -> the regions the user reviewed ([{canvas, xywh}]), the request's `regions`

  function lines() {
    return $('manifests').value.split(/\s+/).map(function (s) { return s.trim(); }).filter(Boolean);
  }
  function regionThumb(report, region) {
    var canvas = report.canvases[region.canvas_index];
    var image = canvas && canvas.images[0];
    if (!image || !canvas.width || !canvas.height) return null;
    if (!image.service_id) return image.static_url ? croppedThumb(report, region, canvas, image.static_url) : null;
    var b = region.xywh, share = function (v, whole) { return (100 * v / whole).toFixed(2); };
    var src = page.fill(config.images.region_thumbnail, { service: image.service_id, x: share(b[0], canvas.width),
      y: share(b[1], canvas.height), w: share(b[2], canvas.width), h: share(b[3], canvas.height) });
    return el('img', { className: 'region-thumb', src: src,
      alt: 'Illustration ' + (region.index + 1) + ' of ' + (report.manifest.label || 'this witness'), loading: 'lazy' });
  }
  // A plain image (no Image service to cut the region): the whole page, scaled and shifted inside a
  // 120 px window so that only the region shows (the page image is taken to paint the whole canvas)
  function croppedThumb(report, region, canvas, url) {
    var b = region.xywh, scale = 120 / Math.max(b[2], b[3]);
    var img = el('img', { src: url, loading: 'lazy',
      alt: 'Illustration ' + (region.index + 1) + ' of ' + (report.manifest.label || 'this witness') });
    img.style.width = Math.round(canvas.width * scale) + 'px';
    img.style.height = Math.round(canvas.height * scale) + 'px';
    img.style.left = Math.round(-b[0] * scale + (120 - b[2] * scale) / 2) + 'px';
    img.style.top = Math.round(-b[1] * scale + (120 - b[3] * scale) / 2) + 'px';
    return el('span', { className: 'region-thumb region-crop' }, [img]);
  }
  var SOURCES = {
    annotations: 'the manifest\u2019s own region annotations', detected: 'detected on the page images',
    given: 'the regions you gave', whole_canvases: 'whole pages',
  };
  function witnessCard(url, report) {
    var remove = el('button', { type: 'button', className: 'remove', text: 'Remove this witness' });
    remove.addEventListener('click', function () {
      $('manifests').value = lines().filter(function (u) { return u !== url; }).join('\n');
      delete inspected[url];
      delete corrected[url];
      card.remove();
      estimate();
      keepDraft();
      $('manifests').focus();
    });
    var card = el('article', { className: 'witness' + (report.error ? ' problem' : '') });
    card.setAttribute('data-manifest', url);
    if (report.error) {
      card.appendChild(el('h3', { text: url }));
      card.appendChild(el('p', { className: 'message error', text: 'This manifest cannot be used. ' +
        sentence(report.error) + ' Check the address, or remove this witness.' }));
      card.appendChild(remove);
      return card;
    }
    var s = report.summary;
    card.appendChild(el('h3', { text: report.manifest.label || url }));
    var summary = el('p', { className: 'summary' });
    function describe() {
      summary.textContent = corrected[url] ? s.canvases + ' pages, ' + corrected[url].length +
        ' illustrations (reviewed by you; ' + s.regions + ' ' + (SOURCES[report.regions_source] || 'found') + ')' :
        s.canvases + ' pages, ' + s.regions + ' illustrations (' +
        (SOURCES[report.regions_source] || report.regions_source || 'annotations') + ')' +
        (report.regions_note ? ': ' + report.regions_note : '');
    }
    describe();
    card.appendChild(summary);
    var thumbs = el('div', { className: 'thumbs' });
    // the first six of the regions used: the reviewed ones once the historian chose them (a box deleted in
    // the editor is gone from here too), else those the manifest or the detector gave
    function drawThumbs() {
      thumbs.textContent = '';
      reviewedRegions(report, url).slice(0, 6).forEach(function (r) { var t = regionThumb(report, r); if (t) thumbs.appendChild(t); });
    }
    drawThumbs();
    card.appendChild(thumbs);
    // a manuscript searched on the workers: that it has no annotations is no problem, the search says so
    var problems = needsDetection(report) ? report.problems.filter(function (p) {
      return !/links no annotations/.test(p.message); }) : report.problems;
    if (problems.length) {
      var list = el('ul', { className: 'problems' });
      problems.slice(0, 5).forEach(function (p) { list.appendChild(el('li', { text: p.message })); });
      card.appendChild(el('p', { text: problems.length + ' problem(s); the collation goes on without what they concern:' }));
      card.appendChild(list);
    }
    if (needsDetection(report)) card.appendChild(detectionProgress(url, report, function () {
      describe();
      drawThumbs();
      estimate();
    }));
    var editor = el('div', { className: 'review' });
    var review = el('button', { type: 'button', className: 'review-open', text: 'Review the regions on the pages' });
    review.addEventListener('click', function () {
      review.hidden = true;
      var shown = Object.assign({}, report, { regions: reviewedRegions(report, url) });
      window.collationReview.open(editor, shown, function (regions) {
        review.hidden = false;
        if (regions) corrected[url] = regions;
        describe();
        drawThumbs();
        estimate();
        keepDraft();
        review.focus();
      });
    });
    card.appendChild(review);
    card.appendChild(editor);
    card.appendChild(remove);
    return card;
  }
  // -- detection for review (POST /detections): a manifest without region annotations is searched on the
  // workers, page by page; its card shows the pages done and the illustrations found so far, and the
  // report's regions grow as they come (the editor opens on what is found). Once finished, its regions
  // go with the request (the collation does not detect again).
  function needsDetection(report) {
    return !report.regions.length && report.regions_source === 'annotations' && report.summary.canvases_with_image > 0;
  }
  function detectionProgress(url, report, changed) {
    var line = el('p', { className: 'detecting', role: 'status', text: 'Finding the illustrations on the pages\u2026' });
    var bar = el('progress', { className: 'detecting-bar', 'aria-label': 'Pages searched for illustrations' });
    var box = el('div', { className: 'detection' }, [line, bar]);
    function show(doc) {
      report.regions = doc.regions;
      report.regions_source = 'detected';
      report.summary.regions = doc.regions.length;
      report.detection = doc;
      var done = doc.status === STATUS.finished, failed = doc.status === STATUS.failed;
      report.regions_note = plural(doc.done, 'page') + ' of ' + (doc.total === null ? '?' : doc.total) + ' searched' +
        (done ? '' : ' so far');
      if (doc.total) { bar.max = doc.total; bar.value = doc.done; }
      line.textContent = failed ? 'The illustrations could not be found: ' + sentence(doc.error) :
        done ? 'All ' + plural(doc.total, 'page') + ' searched: ' + plural(doc.regions.length, 'illustration') + ' found.' :
        'Finding the illustrations on the pages: ' + doc.done + ' of ' + (doc.total === null ? '?' : doc.total) +
          ' pages searched, ' + plural(doc.regions.length, 'illustration') + ' found so far. You can review them now.';
      bar.hidden = done || failed;
      changed();
      // asked often until the first page is shown (it comes within a second or two of a worker taking the job),
      // then every second
      if (!done && !failed && box.isConnected) setTimeout(poll, doc.done ? 1000 : 250);
    }
    function poll() { api(links.detections + '/' + report.detection.id).then(show).catch(retryLater); }
    function retryLater(error) { line.textContent = 'Finding the illustrations: ' + error.message; setTimeout(poll, 3000); }
    api(links.detections, { method: 'POST', body: JSON.stringify({ manifest: url }) }).then(function (doc) {
      report.detection = doc;
      show(doc);
    }).catch(function (error) {
      line.textContent = 'The illustrations will be found when the collation starts (' + error.message + ').';
      bar.hidden = true;
    });
    return box;
  }
  function detectedRegions(url) {
    var report = inspected[url];
    var doc = report && report.detection;
    if (!doc || doc.status !== STATUS.finished || !doc.regions.length) return null;
    return doc.regions.map(function (r) { return { canvas: r.canvas_id, xywh: r.xywh }; });
  }

  // The regions a witness is collated with: the reviewed ones ({canvas, xywh}) as the inspection's
  // regions ({index, canvas_index, canvas_id, xywh}), or the inspection's own
  function reviewedRegions(report, url) {
    if (!corrected[url]) return report.regions;
    return corrected[url].map(function (r, k) {
      var index = report.canvases.findIndex(function (c) { return c.id === r.canvas; });
      return { index: k, canvas_index: index, canvas_id: r.canvas, xywh: r.xywh };
    }).filter(function (r) { return r.canvas_index >= 0; });
  }

  // -- the draft on the server (/drafts): a reload, another browser or a colleague with the page's
  // address (/new?draft=<id>) finds the same addresses, chosen regions and region editors, undo included.
  // Each change is sent a moment later (PUT; the first one creates it, POST, and puts its id in the address).
  var draftId = new URLSearchParams(window.location.search).get('draft');
  var draftTimer = null, draftBusy = null;
  function keepDraft() {
    if (config.view !== 'new') return;
    clearTimeout(draftTimer);
    draftTimer = setTimeout(sendDraft, 500);
  }
  function sendDraft() {
    if (draftBusy) { draftBusy.then(keepDraft); return; } // one at a time: the last state is sent last
    var urls = lines(), editors = {};
    urls.forEach(function (u) { editors[u] = window.collationReview ? window.collationReview.readDraft(u) : null; });
    var regions = {};
    urls.forEach(function (u) { if (corrected[u]) regions[u] = corrected[u]; });
    var body = JSON.stringify({ text: $('manifests').value, regions: regions, editors: editors });
    var request = draftId ? api(links.drafts + '/' + draftId, { method: 'PUT', body: body })
      : api(links.drafts, { method: 'POST', body: body });
    draftBusy = request.then(function (doc) {
      if (!draftId) {
        draftId = doc.id;
        var params = new URLSearchParams(window.location.search);
        params.set('draft', doc.id);
        window.history.replaceState(null, '', window.location.pathname + '?' + params.toString());
      }
      $('draft-status').textContent = 'Kept on the server: a reload, another browser or a colleague with this ' +
        'page\u2019s address finds the same work.';
      $('draft-status').setAttribute('data-saved', doc.updated);
    }).catch(function (error) {
      $('draft-status').textContent = 'Not kept on the server (' + error.message + '): it stays in this page only.';
    }).then(function () { draftBusy = null; });
  }
  // Opening /new?draft=<id>: its addresses, chosen regions and editors come back, then each witness is
  // looked at again (the editors open from the restored state, as after a reload)
  function restoreDraft() {
    return api(links.drafts + '/' + draftId).then(function (doc) {
      $('manifests').value = doc.text || '';
      Object.keys(doc.regions || {}).forEach(function (u) { corrected[u] = doc.regions[u]; });
      Object.keys(doc.editors || {}).forEach(function (u) {
        if (window.collationReview) window.collationReview.writeDraft(u, doc.editors[u]);
      });
      if (lines().length) inspectAll(newLook());
    }).catch(function (error) {
      draftId = null;
      message('The saved work could not be read (' + error.message + '); start again here.', true);
    });
  }

  // One look at the list (a click on "Look at these manifests") is bounded, whatever the collections in
  // it say: each collection is opened once (one that lists itself, or two that list each other, would be
  // opened again without end), MAX_COLLECTIONS at most (a chain of collections listed as manifests), and
  // at most max_manifests + MAX_COLLECTIONS addresses are looked at (GET /inspect) in all.
  var MAX_COLLECTIONS = 4;
  function newLook() { return { opened: {}, collections: 0, looks: 0 }; }
  function lookLimit() { return config.max_manifests + MAX_COLLECTIONS; }

  function inspectAll(look) {
    var urls = lines().filter(function (u) { return !look.opened[u]; });
    var preview = $('preview');
    preview.textContent = '';
    if (!urls.length) { message('Paste the addresses of two or more manifests, one per line.', true); return; }
    // One manifest at a time: the service inspects one at a time for each client (429 beyond that),
    // and a busy service asks to come back later (429 or 503 with Retry-After): wait and ask again.
    var slots = urls.map(function (url) {
      var slot = el('article', { className: 'witness', text: 'Waiting to look at ' + url + '…' });
      preview.appendChild(slot);
      return slot;
    });
    function inspectOne(url, attempt) {
      // a manuscript of more than config.detect_in_inspection pages without annotations is not searched by
      // the inspection (its time limit) but on the workers, page by page (POST /detections, below)
      return api(links.inspect + '?detect_up_to=' + config.detect_in_inspection + '&manifest=' +
        encodeURIComponent(url)).catch(function (error) {
        if ((error.status === 429 || error.status === 503) && attempt < 5) {
          return new Promise(function (resolve) { setTimeout(resolve, 1000 * (attempt + 1)); })
            .then(function () { return inspectOne(url, attempt + 1); });
        }
        throw error;
      });
    }
    var stopped = false; // a collection took the list's place, or a bound was reached
    function stop(k, text) {
      stopped = true;
      message(text, true);
      slots.slice(k).forEach(function (slot, i) { slot.textContent = 'Not looked at: ' + urls[k + i]; });
    }
    urls.reduce(function (previous, url, k) {
      return previous.then(function () {
        if (stopped) return null;
        var known = inspected[url] && !inspected[url].error ? inspected[url] : null; // a failure is asked again
        if (!known && look.looks >= lookLimit()) {
          stop(k, 'The page stopped after looking at ' + look.looks + ' addresses (a collation takes at most ' +
            config.max_manifests + ' manifests). Remove some, or paste the manifests you want, and look again.');
          return null;
        }
        slots[k].textContent = 'Looking at ' + url + '…';
        if (!known) look.looks += 1;
        return (known ? Promise.resolve(known) : inspectOne(url, 0)).then(function (report) {
          if (!report.collection) { inspected[url] = report; return; }
          if (look.collections >= MAX_COLLECTIONS) {
            stop(k, (report.collection.label || url) + ' is a IIIF Collection too: the page has opened ' +
              look.collections + ' collections for this look and opens no more. Paste the addresses of ' +
              'manifests instead of collections inside collections.');
            return;
          }
          stopped = true;
          expandCollection(url, report, look);
        }, function (error) {
          inspected[url] = { error: error.status === 504 ? 'The library took too long to answer. Try again in a ' +
            'moment with \u201cLook at these manifests\u201d.' : error.message };
        }).then(function () {
          if (stopped) return;
          slots[k].replaceWith(witnessCard(url, inspected[url]));
          estimate();
        });
      });
    }, Promise.resolve());
  }
  // A IIIF Collection: its manifests take its place in the list (up to what one collation takes),
  // then every witness is looked at. Collections already opened in this look are not listed again.
  function expandCollection(url, report, look) {
    look.opened[url] = true;
    if (report.collection.id) look.opened[report.collection.id] = true;
    look.collections += 1;
    var listed = report.manifests.map(function (m) { return m.id; });
    var again = listed.filter(function (m) { return look.opened[m]; });
    var members = listed.filter(function (m) { return !look.opened[m]; });
    var rest = lines().filter(function (u) { return !look.opened[u]; });
    var room = Math.max(0, config.max_manifests - rest.length);
    var added = members.filter(function (m) { return rest.indexOf(m) < 0; }).slice(0, room);
    $('manifests').value = rest.concat(added).join('\n');
    var name = report.collection.label || url;
    var text = name + ' is a IIIF Collection of ' + report.summary.manifests + ' manifest(s)' +
      (report.summary.collections ? ' and ' + report.summary.collections + ' collection(s), not opened' : '') + '. ' +
      (again.length ? 'It lists itself or a collection already opened, which the page does not open again. ' : '');
    if (!added.length) {
      message(text + 'It lists no manifest to add: paste manifest addresses instead.', true);
      if (rest.length) inspectAll(look);
      return;
    }
    message(text + 'Its ' + (added.length < members.length ? 'first ' + added.length + ' ' : '') +
      'manifests are now in the list (a collation takes at most ' + config.max_manifests +
      '): remove those you do not want.');
    inspectAll(look);
  }
  function estimate() {
    var reports = lines().map(function (u) { return inspected[u]; }).filter(function (r) { return r && !r.error; });
    var counts = lines().filter(function (u) { return inspected[u] && !inspected[u].error; }).map(function (u) {
      return corrected[u] ? corrected[u].length : inspected[u].summary.regions;
    });
    var pairs = 0;
    for (var i = 0; i < counts.length; i++) for (var j = i + 1; j < counts.length; j++) pairs += counts[i] * counts[j];
    var total = counts.reduce(function (a, b) { return a + b; }, 0);
    $('estimate').textContent = reports.length ? plural(reports.length, 'witness', 'witnesses') + ', ' +
      plural(total, 'illustration') + ', ' + plural(pairs, 'pair') + ' of illustrations to compare.' : '';
  }
  function options() {
    var o = {};
    if ($('backbone').value) o.backbone = $('backbone').value;
    if ($('transpositions').value) o.transpositions = $('transpositions').value;
    if ($('partial').checked) o.partial = true;
    if ($('candidates').value) o.candidates = parseInt($('candidates').value, 10);
    return o;
  }
  function start(event) {
    event.preventDefault();
    var urls = lines();
    var bad = urls.filter(function (u) { return inspected[u] && inspected[u].error; });
    if (bad.length) { message('Remove the witnesses that cannot be used first: ' + bad.join(', '), true); return; }
    if (urls.length < 2) { message('A collation needs two or more manifests.', true); return; }
    $('start').disabled = true;
    var regions = {};
    urls.forEach(function (u, m) {
      var chosen = corrected[u] || detectedRegions(u);
      if (chosen) regions[String(m)] = chosen;
    });
    var body = { manifests: urls, options: options() };
    if (Object.keys(regions).length) body.regions = regions;
    rememberLabels(urls);
    api(links.collations, { method: 'POST', body: JSON.stringify(body) })
      .then(function (doc) { window.location.href = page.fill(links.follow, { id: doc.id }); })
      .catch(function (error) { $('start').disabled = false; fail(error); });
  }

  // -- Follow --------------------------------------------------------------------------------------
  // The stages in words (jobs.planning's stages and the progress the steps report)
  var STAGES = { queued: 'Waiting for a free worker', preparing: 'Reading the manifests and finding the illustrations',
    features: 'Looking at each illustration', scoring: 'Comparing the illustrations with each other',
    finalizing: 'Putting the results together', running: 'Working' };
  var STEP_ORDER = ['preparing', 'features', 'scoring', 'finalizing']; // the stages of jobs.planning, in order
  var WITNESS_STATES = { pending: 'waiting', ready: 'ready', failed: 'cannot be used' };
  var seen = null; // where the current stage started: {stage, done, t}, and the last time left shown
  // Seconds left in the stage from its average rate since it started; never more than last shown,
  // so the time left falls (a slow step does not make it count up)
  function secondsLeft(p, now) {
    if (!seen || seen.stage !== p.stage) { seen = { stage: p.stage, done: p.done || 0, t: now, left: null }; }
    if (!p.total || !(p.done > seen.done) || now <= seen.t) return null;
    var left = Math.max(1, Math.round((p.total - p.done) / ((p.done - seen.done) / (now - seen.t)) / 1000));
    seen.left = seen.left === null ? left : Math.min(seen.left, left);
    return seen.left;
  }
  // A queued witness has no label yet: its place and the manifest's host, not a long raw address
  function witnessName(m) {
    if (m.label) return m.label;
    var host;
    try { host = new URL(m.manifest).host; } catch (e) { host = ''; }
    return 'Witness ' + (m.index + 1) + (host ? ' (from ' + host + ')' : '');
  }
  // The service's failures, in words that say what to do, naming the witness (the problem's own text
  // names a manifest by its address): a known message is rewritten, any other one kept after the name.
  function inWords(text, name) {
    text = text || '';
    var http = /^manifest \S+: (?:unexpected )?HTTP (\d{3})/.exec(text);
    if (http) {
      var code = Number(http[1]);
      return 'The library\u2019s server ' + (HTTP_WORDS[code] || (code >= 500 ? 'had a problem answering' :
        'did not give the manifest')) + ' for ' + name + ' (HTTP ' + code + '). Check its address in the ' +
        'library\u2019s catalogue; once the library answers again, Retry. Or start a new collation without it.';
    }
    if (/^manifest \S+: no illustration regions found/.test(text)) {
      return 'No illustration was found on the pages of ' + name + '. Start a new collation and draw its ' +
        'illustrations with \u201cReview the regions on the pages\u201d, or leave it out.';
    }
    var few = /^fewer than two manuscripts could be read \((\d+) of (\d+)\)/.exec(text);
    if (few) {
      return 'Only ' + few[1] + ' of the ' + few[2] + ' witnesses could be read, and a comparison needs two. ' +
        'See what went wrong with each witness above, then Retry, or start a new collation with other witnesses.';
    }
    return name + ': ' + sentence(text.replace(/^(manifest|image service) \S+:\s*/, ''));
  }
  // What the New page learnt of a witness (its label) before the collation read it: kept in this browser
  var LABELS_KEY = 'collation.labels';
  function knownLabels() { return page.recall(LABELS_KEY) || {}; }
  function rememberLabels(urls) {
    var known = knownLabels();
    urls.forEach(function (u) {
      var r = inspected[u];
      if (r && !r.error && r.manifest && r.manifest.label) known[u] = r.manifest.label;
    });
    page.remember(LABELS_KEY, known);
  }
  var followed = null; // the last status document: its name, for the confirmation of Delete
  function follow() {
    api(links.status).then(function (doc) {
      followed = doc;
      var p = doc.progress || {};
      var done = page.isTerminal(doc.status);
      var words = STAGES[p.stage] || capital(p.stage || doc.status);
      var left = done ? null : secondsLeft(p, Date.now());
      // every step counted ("Step 3 of 4"), the finishing one included; nothing counted yet in a long
      // step: how long it has run, without a bar stuck at 0%
      var k = STEP_ORDER.indexOf(p.stage);
      var counted = p.total && p.done ? ' \u2014 ' + p.done + ' of ' + p.total + ' (' + percent(p) + ')' :
        seen && seen.stage === p.stage && k >= 0 ? '\u2026 (' + Math.round((Date.now() - seen.t) / 1000) + ' s so far)' : '\u2026';
      var stepWords = k >= 0 ? 'Step ' + (k + 1) + ' of ' + STEP_ORDER.length + ': ' : '';
      $('state').textContent = done ? capital(STATUS_WORDS[doc.status] || doc.status) +
        '.' + (doc.status === STATUS.finished ? ' All ' + STEP_ORDER.length + ' steps done.' : '') : stepWords + words + counted;
      $('state').className = 'status ' + doc.status;
      var bar = $('progress');
      bar.hidden = done; // a failed or cancelled collation shows no bar, a finished one its results
      bar.max = p.total || 1;
      if (p.done) bar.value = p.done; else bar.removeAttribute('value'); // indeterminate: it moves
      $('eta').textContent = left === null ? '' : 'About ' + left + ' s left in this step.';
      // its name: the one given, or its witnesses' labels (the server's default)
      if (!$('name-box').querySelector('form')) $('title').textContent = doc.name;
      document.title = doc.name + ' \u2014 Image collation';
      var list = $('witnesses');
      list.textContent = '';
      var labels = knownLabels();
      doc.manuscripts.forEach(function (m) {
        var name = m.label || labels[m.manifest] || witnessName(m);
        var item = el('li', { text: name + ': ' + (WITNESS_STATES[m.status] || m.status) +
          (m.regions ? ', ' + plural(m.regions, 'illustration') : '') });
        if (!m.label) item.title = m.manifest;
        m.errors.forEach(function (e) { item.appendChild(el('div', { className: 'problem', text: inWords(e.message, name) })); });
        list.appendChild(item);
      });
      doc.errors.forEach(function (e) { list.appendChild(el('li', { className: 'problem', text: inWords(e.message, 'The collation') })); });
      $('retry').hidden = doc.status !== STATUS.failed;
      if (doc.status === STATUS.finished) {
        $('finish').hidden = false;
        $('eta').textContent = '';
        var many = manyWitnesses(doc.manuscripts.length);
        $('open').href = many ? doc.links.concordance_view : doc.links.view;
        $('open').textContent = many ? 'Open the concordance' : 'Open the matches (pairs and Mirador)';
        var exports = $('exports');
        exports.textContent = '';
        [['Concordance (CSV spreadsheet)', links.concordance_csv],
          ['Concordance (Excel workbook)', links.concordance_xlsx],
          ['Annotations (JSON-LD)', doc.links.annotations]].concat(doc.links.manifests.map(function (u, i) {
          return ['Manifest of witness ' + (i + 1) + ' with its matches (IIIF)', u];
        })).forEach(function (pair) {
          exports.appendChild(el('li', {}, [el('a', { href: pair[1], text: pair[0], download: '' })]));
        });
      }
      if (!done) setTimeout(follow, 1000);
    }).catch(function (error) {
      if (error.status === 404) { message('This collation has been deleted.', true); return; }
      fail(error);
      setTimeout(follow, 5000);
    });
  }
  // DELETE once the reader confirms, in a question naming the collation (and saying that a running one
  // stops); resolves to whether it was deleted
  function deleteCollation(url, name, status) {
    var running = !page.isTerminal(status);
    var question = 'Delete the collation \u201c' + name + '\u201d?' + (running ? ' It is still running: it stops.' : '') +
      ' Its results and verdicts are removed for everyone who has its address. This cannot be undone.';
    if (!window.confirm(question)) return Promise.resolve(false);
    return api(url, { method: 'DELETE' }).then(function () { return true; }).catch(function (e) { fail(e); return false; });
  }
  // A failed collation runs again under its id (POST .../retry): what was computed is reused
  function retry(url) { return api(url + '/retry', { method: 'POST' }); }

  if (config.view === 'home') { $('filter').addEventListener('change', function () { home(1); }); home(1); }
  if (config.view === 'new') {
    $('inspect').addEventListener('click', function () { message(''); inspectAll(newLook()); });
    $('manifests').addEventListener('input', keepDraft);
    if (window.collationReview) window.collationReview.onChange(keepDraft);
    if (draftId) restoreDraft();
    $('new-form').addEventListener('submit', start);
  }
  if (config.view === 'follow') {
    $('delete').addEventListener('click', function () {
      var doc = followed || {};
      deleteCollation(links.status, doc.name || $('title').textContent, doc.status)
        .then(function (done) { if (done) window.location.href = links.home; });
    });
    $('rename').addEventListener('click', function () {
      renameInline($('name-box'), links.status, $('title').textContent, function (doc) {
        $('title').textContent = doc.name;
        document.title = doc.name + ' \u2014 Image collation';
      });
    });
    $('retry').addEventListener('click', function () {
      retry(links.status).then(function () { seen = null; message(''); follow(); }).catch(fail);
    });
    follow();
  }
})();
