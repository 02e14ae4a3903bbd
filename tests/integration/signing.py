"""Signs hvd control-plane requests, written from docs/protocol.md alone:
a client in another language would do exactly this."""

import hashlib
import hmac
import os
import time


def signature_headers(secret, method, target, body=b"", nonce=None,
                      timestamp_ms=None):
    """The four X-Hvd-* headers of one request. `secret` is the text of
    HVD_SECRET_KEY; every request needs a fresh `nonce` (the default)."""
    ts = str(int(time.time() * 1000) if timestamp_ms is None
             else timestamp_ms)
    nonce = os.urandom(16).hex() if nonce is None else nonce
    digest = hashlib.sha256(body).hexdigest()
    message = "\n".join([method, target, ts, nonce, digest]).encode()
    key = secret.encode() if isinstance(secret, str) else secret
    return {
        "X-Hvd-Timestamp": ts,
        "X-Hvd-Nonce": nonce,
        "X-Hvd-Content-Sha256": digest,
        "X-Hvd-Signature": hmac.new(key, message, hashlib.sha256).hexdigest(),
    }
