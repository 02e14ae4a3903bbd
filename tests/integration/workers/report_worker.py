"""A worker for test_worker_reports.py, started without hvdrun (the test
sets hvdrun's variables and runs the rendezvous server itself).

    report_worker.py static <allreduces>
        hvd.init(); <allreduces> allreduces of 256 float32 (1 KiB each) and
        one broadcast of 10 int64 (80 bytes); prints "DONE", then waits for
        a line on stdin before it exits.

    report_worker.py elastic <steps> <first_phase>
        an hvd.elastic.run loop over a torch model with a
        DistributedOptimizer, committing after every step. After
        <first_phase> steps (in the first generation) it prints "PAUSED" and
        waits for a line on stdin, then commits once more (where the test's
        HostsUpdated makes it reset into the next generation) and goes on
        to <steps>; prints "DONE" and waits for a line on stdin.
"""

import sys

import numpy as np


def wait_for_the_test(what):
    print(what, flush=True)
    sys.stdin.readline()


def static(allreduces):
    import hvd
    hvd.init()
    ones = np.ones(256, np.float32)
    for i in range(allreduces):
        hvd.allreduce(ones, name=f"ones.{i}")
    hvd.broadcast(np.zeros(10, np.int64), root_rank=0, name="zeros")
    wait_for_the_test("DONE")


def elastic(steps, first_phase):
    import torch
    import hvd.torch as hvd

    hvd.init()
    torch.manual_seed(0)
    model = torch.nn.Linear(4, 1)
    optimizer = hvd.DistributedOptimizer(
        torch.optim.SGD(model.parameters(), lr=0.01),
        named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model=model, optimizer=optimizer, batch=0)
    paused = []

    @hvd.elastic.run
    def train(state):
        while state.batch < steps:
            optimizer.zero_grad()
            model(torch.ones(2, 4)).sum().backward()
            optimizer.step()
            state.batch += 1
            state.commit()
            if state.batch == first_phase and not paused:
                paused.append(True)
                wait_for_the_test("PAUSED")
                state.commit()

    train(state)
    wait_for_the_test("DONE")


if __name__ == "__main__":
    if sys.argv[1] == "static":
        static(int(sys.argv[2]))
    else:
        elastic(int(sys.argv[2]), int(sys.argv[3]))
