"""See a collation in a browser: the correspondences of two manuscripts beside Mirador, the score
matrix as an image, and the progress of a running collation.

``bp`` is the Flask blueprint (``collation.viewer.pages``); ``create_app`` mounts it at /api/v1.
The pieces that are not web-specific are plain functions: ``render_matrix_png`` (``matrix``) and
``pair_view`` / ``matrix_data`` (``data``). What each page's script is given by the server (the rules,
Image API templates and links, so that the browser copies none of them) is ``browser.page_config``.
"""
