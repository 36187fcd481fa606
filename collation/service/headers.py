"""The security headers of every response (README, "A public deployment"), in one place: the app adds
them to what Flask answers (``collation.app.add_security_headers``) and the server to the errors waitress
answers itself (``service.serving``)."""

from __future__ import annotations

PAGE_POLICY = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self'",  # our scripts and the Mirador bundles, all under /api/v1/viewer/static
        "style-src 'self' 'unsafe-inline'",  # Mirador (Material UI) writes <style> elements and style attributes
        "img-src * data: blob:",  # page images and thumbnails come from any IIIF Image API server
        "connect-src *",  # Mirador reads manifests and info.json wherever they are
        "font-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",  # no page of another origin frames ours (clickjacking the Cancel button)
    )
)
"""Content-Security-Policy of the HTML pages (README, "A public deployment"): no inline or foreign script."""

DOCUMENT_POLICY = "default-src 'none'; frame-ancestors 'none'"
"""Content-Security-Policy of everything else (JSON, images, downloads): nothing to run, never framed."""

SECURITY_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",  # frame-ancestors for browsers that predate it
    "Referrer-Policy": "no-referrer",  # page URLs hold collation ids: image servers need not learn them
}


def security_headers(mimetype: str) -> dict[str, str]:
    """The security headers of a response of this media type: the pages' policy on HTML, the documents'
    on everything else."""
    policy = PAGE_POLICY if mimetype == "text/html" else DOCUMENT_POLICY
    return {"Content-Security-Policy": policy, **SECURITY_HEADERS}
