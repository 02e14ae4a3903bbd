"""Signs hvd control-plane requests, written from docs/protocol.md alone:
a client in another language would do exactly this."""

import hashlib
import hmac
import os
import time


def signature_headers(secret, method, target, body=b"", nonce=None,
                      timestamp_ms=None):
    """The four X-Hvd-* headers of one request. `secret` is the text of
    HVD_SECRET_KEY; `target` the request target exactly as sent (str, or
    bytes for targets that are not text); every request needs a fresh
    `nonce` (the default)."""
    ts = str(int(time.time() * 1000) if timestamp_ms is None
             else timestamp_ms)
    nonce = os.urandom(16).hex() if nonce is None else nonce
    digest = hashlib.sha256(body).hexdigest()
    if isinstance(target, str):
        target = target.encode()
    message = b"\n".join([method.encode(), target, ts.encode(),
                          nonce.encode(), digest.encode()])
    key = secret.encode() if isinstance(secret, str) else secret
    return {
        "X-Hvd-Timestamp": ts,
        "X-Hvd-Nonce": nonce,
        "X-Hvd-Content-Sha256": digest,
        "X-Hvd-Signature": hmac.new(key, message, hashlib.sha256).hexdigest(),
    }


def signed_request_bytes(secret, method, target, body=b""):
    """A whole signed HTTP/1.1 request as bytes (target may be bytes)."""
    if isinstance(target, str):
        target = target.encode()
    headers = signature_headers(secret, method, target, body)
    head = method.encode() + b" " + target + b" HTTP/1.1\r\nHost: hvd\r\n"
    for name, value in headers.items():
        head += f"{name}: {value}\r\n".encode()
    head += f"Content-Length: {len(body)}\r\n\r\n".encode()
    return head + body
