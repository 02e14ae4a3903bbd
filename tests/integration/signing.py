"""Signs hvd control-plane requests, written from docs/protocol.md alone:
a client in another language would do exactly this."""

import hashlib
import hmac
import os
import time


def worker_key(secret, worker, slot):
    """The key hvdrun gives worker `worker` of `slot` (HVD_WORKER_KEY)."""
    message = f"hvd worker key\n{worker}\n{slot}".encode()
    return hmac.new(secret.encode(), message, hashlib.sha256).hexdigest()


def job_public_key(secret):
    """The job signing key's public half (HVD_JOB_PUBLIC_KEY), hex."""
    from cryptography.hazmat.primitives import serialization
    raw = serialization.Encoding.Raw
    return _job_signing_key(secret).public_key().public_bytes(
        raw, serialization.PublicFormat.Raw).hex()


def open_signed_etcd_value(secret, key, signed):
    """The value hvdrun signed for etcd key `key` (etcd_seal.h), its
    Ed25519 signature checked against the job's public key; raises
    AssertionError when it does not verify."""
    from cryptography.exceptions import InvalidSignature
    signature, value = signed[:128], signed[128:]
    message = b"hvd etcd signed\n" + key.encode() + b"\n" + value.encode()
    try:
        _job_signing_key(secret).public_key().verify(bytes.fromhex(signature),
                                                     message)
    except (InvalidSignature, ValueError):
        raise AssertionError(f"{key} is not signed by the job: {signed}")
    return value


def _job_signing_key(secret):
    """common/job_signing_key.h: Ed25519 from HMAC(secret, label)."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey)
    seed = hmac.new(secret.encode(), b"hvd job signing key",
                    hashlib.sha256).digest()
    return Ed25519PrivateKey.from_private_bytes(seed)


def worker_identity_from_environment(env=None):
    """(HVD_WORKER_KEY, "<id>@<slot>") of the worker whose environment
    `env` is (this process's by default)."""
    env = os.environ if env is None else env
    slot = f"{env['HOROVOD_HOSTNAME']}:{env['HOROVOD_LOCAL_RANK']}"
    return env["HVD_WORKER_KEY"], f"{env['HVD_WORKER_ID']}@{slot}"


def signature_headers(secret, method, target, body=b"", nonce=None,
                      timestamp_ms=None, worker=None):
    """The X-Hvd-* headers of one request. `secret` is the key that signs:
    the job secret, or with `worker` ("<id>@<slot>", sent as X-Hvd-Worker)
    that worker's own key; `target` the request target exactly as sent
    (str, or bytes for targets that are not text); every request needs a
    fresh `nonce` (the default)."""
    ts = str(int(time.time() * 1000) if timestamp_ms is None
             else timestamp_ms)
    nonce = os.urandom(16).hex() if nonce is None else nonce
    digest = hashlib.sha256(body).hexdigest()
    if isinstance(target, str):
        target = target.encode()
    message = b"\n".join([method.encode(), target, ts.encode(),
                          nonce.encode(), digest.encode()])
    key = secret.encode() if isinstance(secret, str) else secret
    headers = {
        "X-Hvd-Timestamp": ts,
        "X-Hvd-Nonce": nonce,
        "X-Hvd-Content-Sha256": digest,
        "X-Hvd-Signature": hmac.new(key, message, hashlib.sha256).hexdigest(),
    }
    if worker is not None:
        headers["X-Hvd-Worker"] = worker
    return headers


def signed_request_bytes(secret, method, target, body=b"", worker=None):
    """A whole signed HTTP/1.1 request as bytes (target may be bytes)."""
    if isinstance(target, str):
        target = target.encode()
    headers = signature_headers(secret, method, target, body, worker=worker)
    head = method.encode() + b" " + target + b" HTTP/1.1\r\nHost: hvd\r\n"
    for name, value in headers.items():
        head += f"{name}: {value}\r\n".encode()
    head += f"Content-Length: {len(body)}\r\n\r\n".encode()
    return head + body
