// ESLint's flat config for the viewer's browser scripts: collation/viewer/static/*.js (not vendor/).
// Run by tests/viewer/test_js_lint.py, from the repository's root:
//   tools/eslint/node_modules/.bin/eslint --config tools/eslint/eslint.config.mjs collation/viewer/static
//
// They are classic scripts (not modules) that the templates load in order, each an IIFE that is
// 'use strict' and leaves one global on window: common.js window.collationPage (the one module for the
// page's config, the token and requests, loaded first), review.js window.collationReview, viewer.js
// window.collationViewer, concordance.js window.collationConcordance; the vendor bundle (Mirador, from
// scripts/setup.sh) defines Mirador. What the server gives them (collation/viewer/browser.py) must not be
// copied: the rules below refuse the strings that were.
import js from '@eslint/js';

const browser = Object.fromEntries(
  ['window', 'document', 'fetch', 'setTimeout', 'clearTimeout', 'URLSearchParams', 'URL', 'Node', 'Event', 'console']
    .map((name) => [name, 'readonly']),
);

// the token's storage and header: only in common.js
const tokenCopies = [
  { selector: 'Literal[value=/Bearer/]', message: 'the Authorization header is set by common.js (collationPage.api)' },
  { selector: 'Literal[value=/^collation\\.token$/]', message: 'the token is kept by common.js (collationPage.token)' },
];
// what the server's config or JSON says: nowhere
const serverCopies = [
  { selector: 'Literal[value=/default\\.jpg|\\/full\\/|\\/pct:/]',
    message: 'Image API requests come from the server (config.images, or a thumbnail in its JSON)' },
  { selector: 'Literal[value=/^(queued|running|finished|failed|cancelled)$/]',
    message: 'status strings come from the server (collationPage.rules.status, collationPage.isTerminal)' },
  { selector: 'Literal[value=/^(confirmed|rejected|exact|semantic)$/]',
    message: 'verdicts come from the server (collationPage.rules.verdicts)' },
  { selector: 'Literal[value=/^\\/collations/]', message: 'URLs come from the server (collationPage.config.links)' },
];
const documentWrite = { object: 'document', property: 'write' };

export default [
  { ignores: ['**/vendor/**'] },
  js.configs.recommended,
  {
    files: ['**/*.js'],
    languageOptions: {
      ecmaVersion: 2020,
      sourceType: 'script',
      globals: { ...browser, Mirador: 'readonly' },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      strict: ['error', 'function'],
      'no-implicit-globals': 'error',
      eqeqeq: ['error', 'always'],
      'no-shadow': 'error',
      'no-use-before-define': ['error', { functions: false, variables: false }],
      'no-unused-vars': ['error', { args: 'after-used', caughtErrors: 'none' }],
      'no-throw-literal': 'error',
      'no-eval': 'error',
      'no-implied-eval': 'error',
      'no-new-func': 'error',
      'prefer-promise-reject-errors': 'error',
      'no-restricted-properties': ['error', documentWrite,
        { object: 'window', property: 'localStorage', message: 'the token is kept by common.js (collationPage.token)' }],
      'no-restricted-syntax': ['error', ...tokenCopies, ...serverCopies],
    },
  },
  {
    // reviewer.js keeps the reviewer's name, review.js the draft of corrected regions (not the token)
    files: ['**/reviewer.js', '**/review.js'],
    rules: { 'no-restricted-properties': ['error', documentWrite] },
  },
  {
    files: ['**/common.js'],
    rules: {
      'no-restricted-properties': ['error', documentWrite],
      'no-restricted-syntax': ['error', ...serverCopies],
    },
  },
];
