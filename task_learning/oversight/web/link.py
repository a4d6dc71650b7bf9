"""The pairing link a phone opens, and its QR code as text for the robot's terminal.

The one-time code travels in the URL's fragment (`#pair=CODE`): browsers never send a fragment to
the server, so it stays out of any access log; the page reads it, redeems it once and drops it
from the address bar.
"""
from __future__ import annotations

import io


def pairing_link(url: str, code: str) -> str:
    return f"{url.rstrip('/')}/#pair={code}"


def qr_text(data: str) -> str:
    """`data` as a QR code drawn with text blocks (a phone's camera reads it off a terminal)."""
    import qrcode

    code = qrcode.QRCode(border=2, error_correction=qrcode.constants.ERROR_CORRECT_L)
    code.add_data(data)
    code.make(fit=True)
    out = io.StringIO()
    code.print_ascii(out=out, invert=True)
    return out.getvalue()
