"""hvd.torch.elastic on 2 and 3 workers under the static hvdrun: ``sync()``
makes every rank equal to rank 0; the sampler covers every sample of an
epoch exactly once across a commit, a restore and a re-shard, and across a
restart on a different number of workers; ``hvd.elastic.run`` recovers
from a HorovodInternalError and ends with the very model a run without the
fault reaches. (In one process: test_torch_elastic_state.py.)

Each worker script records what it saw in a dict ``R``, printed as one
``RESULT <json>`` line per rank; the tests assert on those values.
"""

import math

import pytest

from conftest import run_torch_workers
from test_torch_elastic_state import epoch_order, expected_shard


# ---------------------------------------------------------------------------
# Several workers under hvdrun

SYNC_BODY = """
def dump(state):
    opt = state.optimizer.state_dict()
    return {
        "model": {k: v.tolist() for k, v in state.model.state_dict().items()},
        "momentum": [s["momentum_buffer"].tolist()
                     for s in opt["state"].values()],
        "lr": opt["param_groups"][0]["lr"],
        "scheduler_epoch": state.scheduler.last_epoch,
        "sampler_epoch": state.sampler.epoch,
        "processed": sorted(state.sampler.processed_indices),
        "shard": list(state.sampler),
        "epoch": state.epoch,
        "names": list(state.names),
    }

torch.manual_seed(rank)
model = torch.nn.Linear(3, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1 * (rank + 1), momentum=0.9)
for _ in range(rank + 1):
    opt.zero_grad()
    model(torch.ones(1, 3) * (rank + 1)).sum().backward()
    opt.step()
scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.25)
for _ in range(rank):
    scheduler.step()
sampler = hvd.elastic.ElasticSampler(range(20), shuffle=False)
sampler.set_epoch(7 + rank)
sampler.record_indices(range(3 * rank, 3 * rank + 2))
state = hvd.elastic.TorchState(model, opt, sampler=sampler,
                               scheduler=scheduler, epoch=10 + rank,
                               names=["r%d" % rank])
R["before"] = dump(state)
state.sync()
R["after"] = dump(state)

# Diverge locally, then restore: back to the synced state, not the own one.
opt.zero_grad()
model(torch.ones(1, 3) * (rank + 5)).sum().backward()
opt.step()
scheduler.step()
state.epoch = 99
state.names.append("x")
sampler.record_indices([19])
state.restore()
R["restored"] = dump(state)
"""


@pytest.mark.parametrize("np_", [2, 3])
def test_sync_makes_every_rank_equal_to_rank_0(hvdrun, tmp_path, np_):
    r = run_torch_workers(hvdrun, tmp_path, SYNC_BODY, np_)
    zero = r[0]["before"]
    for rank in range(1, np_):
        before = r[rank]["before"]
        for key in ("model", "momentum", "lr", "scheduler_epoch",
                    "sampler_epoch", "processed", "epoch", "names"):
            assert before[key] != zero[key], key
    union = sorted(i for rank in range(np_) for i in (3 * rank, 3 * rank + 1))
    remaining = [i for i in range(20) if i not in union]
    for rank in range(np_):
        after = r[rank]["after"]
        for key in ("model", "momentum", "lr", "scheduler_epoch"):
            assert after[key] == zero[key], (rank, key)
        assert after["epoch"] == 10 and after["names"] == ["r0"]
        # The sampler: rank 0's epoch, every rank's processed indices, and
        # this rank's share of what is left.
        assert after["sampler_epoch"] == 7
        assert after["processed"] == union
        assert after["shard"] == expected_shard(remaining, rank, np_)
        assert r[rank]["restored"] == after, rank
    assert zero["lr"] == 0.1 and zero["epoch"] == 10


EXACTLY_ONCE_BODY = """
N, BS = 23, 2
sampler = hvd.elastic.ElasticSampler(range(N), shuffle=True, seed=7)
state = hvd.elastic.TorchState(sampler=sampler, epoch=0)
R["epochs"] = []
for epoch in range(2):
    sampler.set_epoch(epoch)
    state.epoch = epoch
    state.commit()
    e = {"len": len(sampler), "first": [], "lost": [], "second": []}
    batches = math.ceil(len(sampler) / BS)
    for i in range(batches // 2):
        e["first"] += sampler.get_indices(i, BS)
        sampler.record_batch(i, BS)
    state.commit()
    e["committed"] = sorted(sampler.processed_indices)
    # One more batch, then a failure before the next commit: roll back.
    i = batches // 2
    e["lost"] = sampler.get_indices(i, BS)
    sampler.record_batch(i, BS)
    state.restore()
    state.on_reset()
    e["restored"] = sorted(sampler.processed_indices)
    e["len_after_reset"] = len(sampler)
    for i, index in enumerate(sampler):
        e["second"].append(index)
        sampler.record_indices([index])
    state.commit()
    e["end"] = sorted(sampler.processed_indices)
    R["epochs"].append(e)
"""


@pytest.mark.parametrize("np_", [2, 3])
def test_sampler_covers_each_epoch_exactly_once(hvdrun, tmp_path, np_):
    n, bs = 23, 2
    r = run_torch_workers(hvdrun, tmp_path, "import math\n" + EXACTLY_ONCE_BODY,
                    np_)
    for epoch in range(2):
        order = epoch_order(n, 7, epoch)
        per_rank = math.ceil(n / np_)
        half = (math.ceil(per_rank / bs) // 2) * bs
        first = {rank: expected_shard(order, rank, np_)[:half]
                 for rank in range(np_)}
        committed = sorted(i for f in first.values() for i in f)
        # The first halves do not reach the padding: no index twice.
        assert len(committed) == len(set(committed)) == half * np_
        remaining = [i for i in order if i not in committed]
        for rank in range(np_):
            e = r[rank]["epochs"][epoch]
            assert e["len"] == per_rank
            assert e["first"] == first[rank]
            # Every rank committed every rank's progress.
            assert e["committed"] == committed
            shard = expected_shard(order, rank, np_)
            assert e["lost"] == shard[half:half + bs]
            assert e["restored"] == committed
            assert e["second"] == expected_shard(remaining, rank, np_)
            assert e["len_after_reset"] == len(e["second"])
            assert e["end"] == list(range(n))
        # After the restore, the batches lost to the failure come again, and
        # nothing committed does; every sample of the epoch was processed in
        # exactly one committed batch, except the padding, which repeats the
        # first of the remaining indices as DistributedSampler does.
        lost = {i for rank in range(np_)
                for i in r[rank]["epochs"][epoch]["lost"]}
        second = [i for rank in range(np_)
                  for i in r[rank]["epochs"][epoch]["second"]]
        assert lost <= set(second)
        assert not set(second) & set(committed)
        assert sorted(committed + sorted(set(second))) == list(range(n))
        padding = len(second) - len(remaining)
        assert 0 <= padding < np_
        extra = sorted(second)
        for i in set(second):
            extra.remove(i)
        assert extra == sorted(remaining[:padding])


RESUME_BODY = """
N, BS = 29, 3
phase, path = sys.argv[1], sys.argv[2]
sampler = hvd.elastic.ElasticSampler(range(N), shuffle=True, seed=11)
state = hvd.elastic.TorchState(sampler=sampler, step=0)
if phase == "first":
    sampler.set_epoch(5)
    for i in range(2):
        sampler.record_batch(i, BS)
        state.step += 1
    state.commit()
    R["done"] = [sampler.get_indices(i, BS) for i in range(2)]
    if rank == 0:
        import pickle
        with open(path, "wb") as f:
            pickle.dump({"sampler": sampler.state_dict(), "step": state.step},
                        f)
else:
    import pickle
    with open(path, "rb") as f:
        saved = pickle.load(f)
    # As a restart would: load the checkpoint, then sync from rank 0.
    if rank == 0:
        sampler.load_state_dict(saved["sampler"])
        state.step = saved["step"]
    state.sync()
    R["epoch"] = sampler.epoch
    R["step"] = state.step
    R["done"] = list(sampler)
    sampler.record_indices(sampler)
    state.commit()
    R["end"] = sorted(sampler.processed_indices)
"""


@pytest.mark.parametrize("before,after", [(3, 2), (2, 3)])
def test_sampler_resumes_on_a_different_number_of_workers(
        hvdrun, tmp_path, before, after):
    """Stands in for a membership change: half an epoch on `before`
    workers, committed and checkpointed; the rest on `after` workers."""
    n, bs = 29, 3
    path = tmp_path / "sampler.pkl"
    first = run_torch_workers(hvdrun, tmp_path, RESUME_BODY, before,
                        args=("first", path), name="first.py")
    second = run_torch_workers(hvdrun, tmp_path, RESUME_BODY, after,
                         args=("second", path), name="second.py")
    order = epoch_order(n, 11, 5)
    done_first = []
    for rank in range(before):
        shard = expected_shard(order, rank, before)
        assert first[rank]["done"] == [shard[:bs], shard[bs:2 * bs]]
        done_first += shard[:2 * bs]
    assert len(set(done_first)) == len(done_first) == 2 * bs * before
    remaining = [i for i in order if i not in done_first]
    done_second = []
    for rank in range(after):
        assert second[rank]["epoch"] == 5 and second[rank]["step"] == 2
        assert second[rank]["done"] == expected_shard(remaining, rank, after)
        assert second[rank]["end"] == list(range(n))
        done_second += second[rank]["done"]
    assert not set(done_first) & set(done_second)
    assert set(done_first) | set(done_second) == set(range(n))
    assert len(done_second) == math.ceil(len(remaining) / after) * after


def test_commit_refuses_samplers_at_different_epochs(hvdrun, tmp_path):
    r = run_torch_workers(hvdrun, tmp_path, """
        sampler = hvd.elastic.ElasticSampler(range(8))
        state = hvd.elastic.TorchState(sampler=sampler)
        sampler.set_epoch(rank)
        try:
            state.commit()
            R["error"] = None
        except RuntimeError as e:
            R["error"] = str(e)
    """, 2)
    for rank in (0, 1):
        assert r[rank]["error"] == (
            "hvd.elastic.TorchState.commit: the ranks' samplers 'sampler' are "
            "at different epochs (by rank: [0, 1]); call set_epoch on every "
            "rank alike")


RUN_BODY = """
fault = sys.argv[1] == "fault"
N, BS, EPOCHS = 12 * size, 3, 2


class Numbered(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.x = torch.randn(N, 5, generator=g)
        self.y = torch.randn(N, 1, generator=g)

    def __len__(self):
        return N

    def __getitem__(self, i):
        return i, self.x[i], self.y[i]


dataset = Numbered()
torch.manual_seed(rank)  # different models: the first sync equalizes them
model = torch.nn.Linear(5, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
opt = hvd.DistributedOptimizer(opt, named_parameters=model.named_parameters())
sampler = hvd.elastic.ElasticSampler(dataset, shuffle=True, seed=3)
loader = torch.utils.data.DataLoader(dataset, batch_size=BS, sampler=sampler)
state = hvd.elastic.TorchState(model, opt, sampler=sampler, epoch=0, batch=0)
R["resets"] = []
state.register_reset_callbacks([lambda: R["resets"].append(hvd.size())])
R["steps"] = []  # [epoch, batch, indices] of every step taken
injected = []


@hvd.elastic.run
def train(state):
    while state.epoch < EPOCHS:
        for i, (index, x, y) in enumerate(loader):
            opt.zero_grad()
            ((model(x) - y) ** 2).mean().backward()
            opt.step()
            state.batch += 1
            R["steps"].append([state.epoch, state.batch, index.tolist()])
            state.sampler.record_batch(i, BS)
            if fault and not injected and state.epoch == 0 and \\
                    state.batch == 3:
                injected.append(1)
                raise hvd.HorovodInternalError("injected after batch 3")
            if state.batch % 2 == 0:
                state.commit()
        state.epoch += 1
        state.batch = 0
        state.sampler.set_epoch(state.epoch)
        state.commit()


train(state)
R["model"] = {k: v.tolist() for k, v in model.state_dict().items()}
"""


@pytest.mark.parametrize("np_", [2, 3])
def test_elastic_run_recovers_to_the_model_of_a_run_without_fault(
        hvdrun, tmp_path, np_):
    """hvd.elastic.run on the static launcher: a HorovodInternalError after
    an uncommitted step restores the last commit, re-initializes hvd, runs
    the reset callbacks, re-shards the sampler, syncs, and goes on. The data
    set divides evenly, so the run with the fault takes the same committed
    steps as the run without, and ends with the same weights, bit for bit."""
    n = 12 * np_
    clean = run_torch_workers(hvdrun, tmp_path, RUN_BODY, np_, args=("clean",),
                        name="clean.py")
    faulty = run_torch_workers(hvdrun, tmp_path, RUN_BODY, np_, args=("fault",),
                         name="faulty.py")
    for rank in range(np_):
        assert clean[rank]["resets"] == []
        assert faulty[rank]["resets"] == [np_]
        assert faulty[rank]["model"] == clean[rank]["model"] == \
            clean[0]["model"]
        # The clean run: 4 batches of 3 per epoch, this rank's stride.
        for epoch in range(2):
            shard = expected_shard(epoch_order(n, 3, epoch), rank, np_)
            steps = [s for s in clean[rank]["steps"] if s[0] == epoch]
            assert steps == [[epoch, b + 1, shard[3 * b:3 * b + 3]]
                             for b in range(4)]
        # The faulty run: batch 3 of epoch 0 ran, was rolled back, and ran
        # again as the first batch after the reset; then the same as clean.
        steps = faulty[rank]["steps"]
        assert [s[:2] for s in steps[:5]] == [[0, 1], [0, 2], [0, 3], [0, 3],
                                              [0, 4]]
        assert steps[2] == steps[3]
        assert steps[:2] + steps[3:] == clean[rank]["steps"]
    for epoch in range(2):
        committed = sorted(i for rank in range(np_)
                           for s in clean[rank]["steps"] if s[0] == epoch
                           for i in s[2])
        assert committed == list(range(n))


HOSTS_UPDATED_BODY = """
class Tracked(hvd.elastic.ObjectState):
    def reset(self):
        R["events"].append(["reset", hvd.size(), self.commits])


R["events"] = []
state = Tracked(hvd.broadcast_object, hvd.rank, commits=0)
state.register_reset_callbacks([lambda: R["events"].append(["callback"])])
attempts = []


@hvd.elastic.run
def train(state):
    attempts.append(1)
    R["events"].append(["attempt", len(attempts)])
    while state.commits < 6:
        state.commits += 1
        # Only rank 1 hears of the update, in the first attempt.
        if len(attempts) == 1 and rank == 1 and state.commits == 3:
            state.on_hosts_updated(100.0,
                                   hvd.elastic.HostUpdateResult.removed)
        # Then only rank 0, of one older than the update acted on.
        if len(attempts) == 2 and rank == 0 and state.commits == 5:
            state.on_hosts_updated(50.0, hvd.elastic.HostUpdateResult.added)
        try:
            state.commit()
        except hvd.HostsUpdatedInterrupt as e:
            R["events"].append(["interrupt", state.commits, e.skip_sync])
            raise


train(state)
R["commits"] = state.commits
"""


def test_on_hosts_updated_interrupts_every_rank_at_the_same_commit(
        hvdrun, tmp_path):
    """A host message given to one rank only (Horovod's notification hook)
    interrupts both ranks at the same commit; hvd.elastic.run re-initializes,
    calls reset() before the callbacks, syncs through the Horovod-style
    bcast_object and goes on; a message older than the one acted on, on the
    other rank, interrupts no one."""
    r = run_torch_workers(hvdrun, tmp_path, HOSTS_UPDATED_BODY, 2)
    for rank in (0, 1):
        assert r[rank]["events"] == [
            ["attempt", 1], ["interrupt", 3, True], ["reset", 2, 3],
            ["callback"], ["attempt", 2]], rank
        assert r[rank]["commits"] == 6
