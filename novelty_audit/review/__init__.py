"""The review page: the verdict-change audit between two runs, in a browser, with one-click adjudication.

A thin layer over `novelty_audit.audit` (see docs/design/review.md); served on 127.0.0.1 only.
"""

from ._app import FILTERS, create_app
from ._serve import LOOPBACK, bind_loopback, serve

__all__ = ["FILTERS", "LOOPBACK", "bind_loopback", "create_app", "serve"]
