"""torchrun's recovery, for comparison with hvd's: a worker that steps
(sleep + a gloo all_reduce) and, in the first attempt, SIGKILLs the rank
--victim-rank (or local rank 0 of host --victim-host) right after step
--kill-step. torchrun then stops every
worker and starts them all again (--max-restarts); the new attempt runs
--tail-steps steps and exits.

    torchrun --nnodes=1 --nproc_per_node=N --max_restarts=3 ... \
        torchrun_worker.py --log DIR [--compute 0.02] [--kill-step 30]

Records (JSON lines in DIR/rank.<rank>.attempt.<n>.<pid>.jsonl, wall-clock
time.time()): proc_start (before any import), imported (torch),
init_done (init_process_group returned), step, kill, done. Each names the
slot "<host name>:<local rank>" and the world size.
"""

import time

T_PROC_START = time.time()

import argparse  # noqa: E402
import glob  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import socket  # noqa: E402
from datetime import timedelta  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

T_IMPORTED = time.time()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--log", required=True)
    parser.add_argument("--compute", type=float, default=0.02)
    parser.add_argument("--grad-floats", type=int, default=65536)
    parser.add_argument("--kill-step", type=int, default=30)
    parser.add_argument("--victim-rank", type=int, default=1)
    parser.add_argument("--victim-host", default="-")
    parser.add_argument("--tail-steps", type=int, default=15)
    parser.add_argument("--timeout", type=float, default=1800,
                        help="Gloo timeout, seconds (torch's default)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rank = int(os.environ["RANK"])
    slot = f"{socket.gethostname()}:{os.environ['LOCAL_RANK']}"
    # TORCHELASTIC_RESTART_COUNT is per agent, and an agent that restarts
    # its workers because another node came back to the rendezvous does
    # not count that restart (seen with 4 agents on the test bed: those
    # workers ran attempt 0 again). A slot that started before, as the
    # log folder shows, is in a later attempt.
    marker = os.path.join(args.log, f"started.{slot}.")
    attempt = max(int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")),
                  len(glob.glob(glob.escape(marker) + "*")))
    open(marker + str(os.getpid()), "w").close()
    if args.victim_host != "-":
        victim = slot == f"{args.victim_host}:0"
    else:
        victim = rank == args.victim_rank
    path = os.path.join(args.log,
                        f"rank.{rank}.attempt.{attempt}.{os.getpid()}.jsonl")
    out = open(path, "a", buffering=1)

    def log(event, t=None, **fields):
        out.write(json.dumps(dict(
            event=event, time=time.time() if t is None else t, rank=rank,
            slot=slot, attempt=attempt, pid=os.getpid(), **fields)) + "\n")

    log("proc_start", t=T_PROC_START)
    log("imported", t=T_IMPORTED)
    dist.init_process_group("gloo", timeout=timedelta(seconds=args.timeout))
    size = dist.get_world_size()
    log("init_done", size=size)
    grad = torch.ones(args.grad_floats)
    limit = args.kill_step + 1000 if attempt == 0 else args.tail_steps
    for step in range(1, limit + 1):
        time.sleep(args.compute)
        dist.all_reduce(grad)
        grad.fill_(1.0)
        log("step", step=step, size=size)
        if attempt == 0 and victim and step == args.kill_step:
            log("kill", step=step)
            os.kill(os.getpid(), signal.SIGKILL)
    log("done")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
