// Helpers shared by the viewer's pages (view.html, concordance.html): DOM building, the message
// bar, the bearer token field, and JSON requests whose errors carry the RFC 9457 problem's detail.
(function () {
  'use strict';

  var $ = function (id) { return document.getElementById(id); };

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (key) {
      if (key === 'text') node.textContent = attrs[key];
      else if (key === 'className') node.className = attrs[key];
      else if (key.slice(0, 5) === 'data-') node.setAttribute(key, attrs[key]);
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

  function token() { return $('token') ? ($('token').value || '').trim() : ''; }

  function request(url, options) {
    return fetch(url, options).then(function (response) {
      return response.text().then(function (text) {
        var body = null;
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

  window.collationPage = { $: $, el: el, message: message, token: token, request: request };
})();
