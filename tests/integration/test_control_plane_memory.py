"""hvdrun's memory against a client that holds a key (issue 33, part 3).

A static job of two sleeping workers runs through hvdrun. The attacker
holds a worker's own key (read from its /proc/<pid>/environ, as someone who
took the worker over would), so every request is signed and allowed where a
worker may write: the `gloo` scope, under generation 0. Each phase tries to
make hvdrun hold memory without bound:
  (a) the store filled with 8 MiB values until it refuses;
  (b) prefix waits with prefixes of 8 KiB, each a new one;
  (c) 16 MiB bodies sent while long-polls hold every handler thread;
  (d) a 16 MiB prefix answer read by 64 clients at once, none reading it.
hvdrun's RSS is sampled throughout; the test asserts its peak stays under
200 MB in every phase (docs/protocol.md gives the bounds that make it so)
and that the job still ends successfully.
"""

import base64
import json
import os
import select
import socket
import threading
import time

from signing import signed_request_bytes, worker_identity_from_environment
from test_control_plane_attack import (RssSampler, check_target, environ_of,
                                       read_answer, status_of, wait_for)

RSS_LIMIT_KB = 200 * 1024
MIB = 1 << 20


class Attacker:
    """Signed requests as the worker whose environment `env` is."""

    def __init__(self, env):
        self.key, self.worker = worker_identity_from_environment(env)
        self.host = env["HOROVOD_GLOO_RENDEZVOUS_ADDR"]
        self.port = int(env["HOROVOD_GLOO_RENDEZVOUS_PORT"])
        check_target(self.host)

    def request(self, method, target, body=b""):
        return signed_request_bytes(self.key, method, target, body,
                                    worker=self.worker)

    def connect(self):
        return socket.create_connection((self.host, self.port), timeout=30)

    def exchange(self, method, target, body=b""):
        with self.connect() as sock:
            sock.sendall(self.request(method, target, body))
            return status_of(read_answer(sock, 30))


def read_body(sock, answer):
    """The rest of the answer whose headers (and first body bytes)
    `answer` holds, by its Content-Length (the socket's timeout bounds each
    read)."""
    length = int(answer.split(b"Content-Length: ")[1].split(b"\r\n")[0])
    body = answer.split(b"\r\n\r\n", 1)[1]
    while len(body) < length:
        chunk = sock.recv(min(length - len(body), 1 << 20))
        assert chunk, "the answer ended early"
        body += chunk
    return body


def fill_the_store(attacker):
    """PUTs of 8 MiB until the store refuses; their statuses."""
    statuses = []
    value = os.urandom(8 * MIB)
    for i in range(200):  # 1.6 GiB at most
        status = attacker.exchange("PUT", f"/v1/kv/gloo/g0/fill/{i}", value)
        statuses.append(status)
        if status != 200:
            break
    for i, status in enumerate(statuses):
        if status == 200:
            assert attacker.exchange(
                "DELETE", f"/v1/kv/gloo/g0/fill/{i}") == 200
    return statuses


def distinct_prefixes(attacker, count=30000, threads=4):
    """`count` prefix waits of 8 KiB prefixes, each new, on kept-alive
    connections; their statuses."""
    statuses = {}
    lock = threading.Lock()

    def run(part):
        with attacker.connect() as sock:
            for i in range(part, count, threads):
                prefix = f"g0/{i:08d}".ljust(8 * 1024, "p")
                sock.sendall(attacker.request(
                    "GET", f"/v1/kv/gloo?prefix={prefix}&count=0"))
                answer = read_answer(sock, 30)
                status = status_of(answer)
                read_body(sock, answer)
                with lock:
                    statuses[status] = statuses.get(status, 0) + 1
                if b"Connection: close" in answer:
                    sock.close()
                    sock = attacker.connect()

    workers = [threading.Thread(target=run, args=(p,)) for p in
               range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=300)
    return statuses


def bodies_behind_long_polls(attacker, polls=128, bodies=24):
    """`polls` long-polls of 10 s for a key that never comes (every handler
    thread of a static job's server), then `bodies` PUTs of 16 MiB; the
    PUTs' statuses, once the polls ended and the PUTs let in were handled.
    (While the polls hold every thread, a PUT that fits the body budget
    waits for one, and one past it is refused.)"""
    polling = []
    for _ in range(polls):
        sock = attacker.connect()
        sock.sendall(attacker.request(
            "GET", "/v1/kv/gloo/g0/never?wait_ms=10000"))
        polling.append(sock)
    statuses = []
    lock = threading.Lock()
    body = os.urandom(16 * MIB)

    def put(i):
        request = attacker.request("PUT", f"/v1/kv/gloo/g0/body/{i}", body)
        head_end = request.index(b"\r\n\r\n") + 4
        with attacker.connect() as sock:
            sock.sendall(request[:head_end])
            try:
                # In pieces, stopping at an answer that comes first: a
                # refusal, sent before the server reads any of the body.
                for start in range(head_end, len(request), 64 * 1024):
                    if select.select([sock], [], [], 0)[0]:
                        break
                    sock.sendall(request[start:start + 64 * 1024])
            except OSError:
                pass  # closed after a refusal: its answer came first
            status = status_of(read_answer(sock, 90))
        with lock:
            statuses.append(status)

    putters = [threading.Thread(target=put, args=(i,)) for i in range(bodies)]
    for putter in putters:
        putter.start()
    # The refused ones answer at once; the others wait for a thread.
    wait_for(lambda: len(statuses) >= bodies - 2, 60,
             "the PUTs past the body budget to be refused")
    for sock in polling:
        assert status_of(read_answer(sock, 60)) == 408
        sock.close()
    for putter in putters:
        putter.join(timeout=120)
    for i in range(bodies):
        attacker.exchange("DELETE", f"/v1/kv/gloo/g0/body/{i}")
    return statuses


def answered(attacker):
    """The server's 2xx answers so far, less those to these status
    requests: what other requests it answered, up to a constant."""
    with attacker.connect() as sock:
        sock.sendall(attacker.request("GET", "/v1/status"))
        body = read_body(sock, read_answer(sock, 30))
    attacker.status_calls = getattr(attacker, "status_calls", 0) + 1
    return json.loads(body)["requests"]["2xx"] - attacker.status_calls


def readers_that_do_not_read(attacker, readers=64):
    """A prefix of 16 MiB, asked for by `readers` clients that then read
    nothing for a while; the first reader's answer, checked whole."""
    values = {f"g0/big/{i}": os.urandom(4 * MIB) for i in range(4)}
    for key, value in values.items():
        assert attacker.exchange("PUT", f"/v1/kv/gloo/{key}", value) == 200
    before = answered(attacker)
    socks = []
    for _ in range(readers):
        sock = attacker.connect()
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        sock.sendall(attacker.request(
            "GET", "/v1/kv/gloo?prefix=g0/big/&count=4"))
        socks.append(sock)
    # Every answer made, and held unread while RSS is sampled.
    wait_for(lambda: answered(attacker) >= before + readers, 60,
             "the server to answer every reader")
    for sock in socks:
        sock.close()
    # What they were sent, read whole by a reader that reads.
    with attacker.connect() as sock:
        sock.sendall(attacker.request(
            "GET", "/v1/kv/gloo?prefix=g0/big/&count=4"))
        answer = read_answer(sock, 30)
        assert status_of(answer) == 200, answer[:200]
        body = read_body(sock, answer)
    got = json.loads(body)["values"]
    assert {k: base64.b64decode(v) for k, v in got.items()} == values
    for key in values:
        assert attacker.exchange("DELETE", f"/v1/kv/gloo/{key}") == 200


def test_a_key_holder_cannot_grow_hvdrun_past_its_bounds(hvdrun, tmp_path):
    script = (f"echo $$ > {tmp_path}/pid.$HOROVOD_RANK; "
              f"while [ ! -e {tmp_path}/stop ]; do sleep 0.2; done")
    job = hvdrun.start(["-np", "2", "sh", "-c", script])
    pid_file = tmp_path / "pid.0"
    wait_for(lambda: pid_file.exists() and
             pid_file.read_text().endswith("\n"), 60, "the workers to start")
    attacker = Attacker(environ_of(int(pid_file.read_text())))
    rss = RssSampler({"hvdrun": job.proc.pid})
    rss.start()
    peaks = {}
    outcomes = {}
    took = {}
    try:
        for name, phase in (("store fill", fill_the_store),
                            ("distinct prefixes", distinct_prefixes),
                            ("bodies behind long-polls",
                             bodies_behind_long_polls),
                            ("readers that do not read",
                             readers_that_do_not_read)):
            rss.peak_kb["hvdrun"] = 0
            started = time.monotonic()
            outcomes[name] = phase(attacker)
            peaks[name] = rss.peak_kb["hvdrun"]
            took[name] = time.monotonic() - started
    finally:
        (tmp_path / "stop").touch()
        result = job.finish(60)
        rss.stop()
    print("\nhvdrun's peak RSS by phase:")
    for name, peak in peaks.items():
        print(f"  {name:26} {peak / 1024:6.0f} MB  {took[name]:5.1f} s  "
              f"{outcomes[name]!r:.60}")
    assert result.returncode == 0, result.stdout + result.stderr
    for name, peak in peaks.items():
        assert peak < RSS_LIMIT_KB, (name, peak, peaks)
    # How each attack was refused (docs/protocol.md).
    fill = outcomes["store fill"]
    assert fill[-1] == 413 and 1 < fill.count(200) <= 8, fill
    assert outcomes["distinct prefixes"] == {413: 30000}, outcomes
    bodies = outcomes["bodies behind long-polls"]
    assert set(bodies) == {200, 503} and bodies.count(200) <= 2, bodies
