"""See a collation in a browser: the workspace (Home, New collation, Follow), the pair view beside Mirador,
the concordance and the score matrix. Pages get what their scripts need from the server
(``browser.page_config``). The map of the modules is docs/architecture.md.
"""
