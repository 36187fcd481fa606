// The one module every page's script uses (the pair and concordance pages, the workspace's Home, New
// and Follow), loaded first: window.collationPage.
//
// - config: the JSON the server put in <script id="config" type="application/json"> (collation/viewer/
//   browser.py): the API root, whether tokens are asked, the page's links, the Image API templates, and
//   the rules (verdicts, status strings, ...) taken from the Python that owns them: nothing is copied here.
// - DOM building (el), the message bar (message), templates of the server's URLs (fill).
// - The bearer token: kept in this browser (localStorage), shown in the #token field where the page
//   has one, sent as "Authorization: Bearer" on every API request (api).
// - JSON requests whose errors carry the RFC 9457 problem's detail and status; a 401 opens the token
//   field and says so in words.
(function () {
  'use strict';

  var TOKEN_KEY = 'collation.token';
  var NEEDS_TOKEN = 'This needs a token: enter yours under "Token" (top right), then try again.';

  var $ = function (id) { return document.getElementById(id); };
  var config = $('config') ? JSON.parse($('config').textContent) : {};
  var rules = config.rules || {};
  var tokenListeners = [];

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === 'text') node.textContent = attrs[key];
      else if (key === 'className') node.className = attrs[key];
      else if (key.slice(0, 5) === 'data-' || key.slice(0, 5) === 'aria-' || key === 'role') node.setAttribute(key, attrs[key]);
      else node[key] = attrs[key];
    });
    (children || []).forEach(function (child) { if (child) node.appendChild(child); });
    return node;
  }

  function message(text, isError) {
    var box = $('message');
    box.hidden = !text;
    box.textContent = text || '';
    box.className = 'message' + (isError ? ' error' : '');
  }

  // A URL template of the server's ("{service}/full/...", "/collations/{id}") with its values put in.
  function fill(template, values) {
    return template.replace(/\{(\w+)\}/g, function (all, name) {
      return Object.prototype.hasOwnProperty.call(values, name) ? String(values[name]) : all;
    });
  }

  // -- the token -------------------------------------------------------------------------------

  function storedToken() {
    try { return (window.localStorage.getItem(TOKEN_KEY) || '').trim(); } catch (e) { return ''; }
  }

  function token() {
    var field = $('token');
    return field ? (field.value || '').trim() : storedToken();
  }

  function onTokenChange(listener) { tokenListeners.push(listener); }

  function askForToken() {
    var field = $('token');
    if (!field) return false;
    var box = field.closest('details');
    if (box) box.open = true;
    field.focus();
    return true;
  }

  if ($('token')) { // shown only when the service asks for tokens (API_TOKENS)
    $('token').value = storedToken();
    $('token').addEventListener('change', function () {
      try { window.localStorage.setItem(TOKEN_KEY, token()); } catch (e) { /* private mode: this page only */ }
      tokenListeners.forEach(function (listener) { listener(token()); });
    });
  }

  // What a page keeps in this browser besides the token (the workspace's labels of witnesses it looked at):
  // JSON under `key`, nothing in private mode
  function remember(key, value) {
    try { window.localStorage.setItem(key, JSON.stringify(value)); } catch (e) { /* private mode: not kept */ }
  }
  function recall(key) {
    try { return JSON.parse(window.localStorage.getItem(key) || 'null'); } catch (e) { return null; }
  }

  // -- requests --------------------------------------------------------------------------------

  // fetch, then the JSON body; an error's message is the problem's detail (or title), its status the HTTP one
  function request(url, options) {
    return fetch(url, options).then(function (response) {
      return response.text().then(function (text) {
        var body;
        try { body = text ? JSON.parse(text) : null; } catch (e) { body = null; }
        if (!response.ok) {
          var error = new Error(body && (body.detail || body.title) || response.status + ' ' + response.statusText);
          error.status = response.status;
          throw error;
        }
        return body;
      });
    });
  }

  // A request to the API (a path under config.api, or a full URL) with the token and, for a body, JSON.
  // A 401 where the page has a token field opens it; the error then says so (error.needsToken).
  function api(path, options) {
    options = Object.assign({}, options);
    var headers = Object.assign({}, options.headers);
    if (options.body && !headers['Content-Type']) headers['Content-Type'] = 'application/json';
    if (token()) headers.Authorization = 'Bearer ' + token();
    options.headers = headers;
    var url = /^https?:/.test(path) ? path : config.api + path;
    return request(url, options).catch(function (error) {
      if (error.status === 401 && askForToken()) {
        error.message = NEEDS_TOKEN;
        error.needsToken = true;
      }
      throw error;
    });
  }

  // A catch handler that shows the error in the message bar, after `what` ("The verdicts were not
  // stored: ") unless it is the token's message, which says all.
  function failure(what) {
    return function (error) {
      var text = error && error.message || String(error);
      message(what && !(error && error.needsToken) ? what + text : text, true);
    };
  }

  // -- the rules -------------------------------------------------------------------------------

  function isTerminal(status) { return (rules.terminal || []).indexOf(status) >= 0; }

  function category(verdict) {
    var aliases = (rules.verdicts && rules.verdicts.aliases) || {};
    return verdict && Object.prototype.hasOwnProperty.call(aliases, verdict) ? aliases[verdict] : verdict;
  }

  function isMatch(verdict) { return ((rules.verdicts && rules.verdicts.match) || []).indexOf(category(verdict)) >= 0; }

  // what a category is sent as: its alias where it has one (the first API's verdicts), else itself
  function verdictOf(cat) {
    var aliases = (rules.verdicts && rules.verdicts.aliases) || {};
    return Object.keys(aliases).find(function (alias) { return aliases[alias] === cat; }) || cat;
  }

  window.collationPage = {
    $: $, el: el, message: message, fill: fill, config: config, rules: rules,
    token: token, onTokenChange: onTokenChange, request: request, api: api, failure: failure,
    remember: remember, recall: recall,
    isTerminal: isTerminal, category: category, isMatch: isMatch, verdictOf: verdictOf
  };
})();
