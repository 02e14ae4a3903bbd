"""Runs Horovod-style tests one after the other in this process, as
unittest does in Horovod's CI: a test that raises is recorded and the next
one runs. Prints one ``STEP <json>`` line per test ({"test", "outcome",
"detail", "seconds"}) and ``DONE`` at the end."""

import json
import time


def run_in_sequence(tests):
    for test in tests:
        start = time.monotonic()
        try:
            test()
            outcome, detail = "ok", ""
        except Exception as e:  # unittest records and goes on
            outcome, detail = type(e).__name__, str(e)
        print("STEP " + json.dumps({
            "test": test.__name__, "outcome": outcome, "detail": detail,
            "seconds": round(time.monotonic() - start, 2)}), flush=True)
    print("DONE", flush=True)
