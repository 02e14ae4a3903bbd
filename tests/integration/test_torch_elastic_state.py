"""hvd.torch.elastic: TorchState and ElasticSampler.

Two kinds of tests:

* in this process (``hvd.init()`` without hvdrun: rank 0 of 1): save and
  restore round trips of a model, an optimizer, a scheduler, attributes and
  a sampler's progress;
* on 2 and 3 workers under the static hvdrun: ``sync()`` makes every rank
  equal to rank 0; the sampler covers every sample of an epoch exactly once
  across a commit, a restore and a re-shard, and across a restart on a
  different number of workers; ``hvd.elastic.run`` recovers from a
  HorovodInternalError and ends with the very model a run without the fault
  reaches.

Each worker script records what it saw in a dict ``R``, printed as one
``RESULT <json>`` line per rank; the tests assert on those values.
"""

import copy
import math
import random
import types

import pytest

import torch

from conftest import run_torch_workers

import hvd.torch as hvd  # noqa: E402
from hvd.torch.elastic import sampler as sampler_module  # noqa: E402
from hvd.torch.elastic.sampler import _shard  # noqa: E402


# ---------------------------------------------------------------------------
# Helpers


def epoch_order(n, seed, epoch):
    """The order the sampler should visit ``range(n)`` in (shuffle=True):
    Horovod's, so that a Horovod checkpoint's ``processed_num`` names the
    same samples."""
    order = list(range(n))
    random.Random(seed + epoch).shuffle(order)
    return order


def expected_shard(remaining, rank, size):
    """DistributedSampler's padding and striding, written out again here."""
    per_rank = math.ceil(len(remaining) / size)
    padded = list(remaining)
    while len(padded) < per_rank * size:
        padded += remaining[:per_rank * size - len(padded)]
    return padded[rank::size]


@pytest.fixture(scope="module", autouse=True)
def single_process():
    hvd.init()
    assert (hvd.rank(), hvd.size()) == (0, 1)
    yield
    hvd.shutdown()


def make_model_and_sgd():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    return model, optimizer


def train_steps(model, optimizer, steps, seed):
    generator = torch.Generator().manual_seed(seed)
    for _ in range(steps):
        x = torch.randn(5, 4, generator=generator)
        optimizer.zero_grad()
        model(x).pow(2).sum().backward()
        optimizer.step()


def weights(model):
    return {k: v.clone() for k, v in model.state_dict().items()}


def momenta(model, optimizer):
    return [optimizer.state[p]["momentum_buffer"].clone()
            for p in model.parameters()]


def assert_same_tensors(got, want):
    assert len(got) == len(want)
    items = zip(got, want) if isinstance(got, list) else \
        ((got[k], want[k]) for k in want)
    for a, b in items:
        assert torch.equal(a, b), (a, b)


# ---------------------------------------------------------------------------
# One process: save and restore


def test_restore_after_training_returns_exactly_to_the_commit():
    model, optimizer = make_model_and_sgd()
    train_steps(model, optimizer, 2, seed=1)
    state = hvd.elastic.TorchState(model, optimizer, epoch=3, history=[1, 2])
    assert state.model is model and state.optimizer is optimizer
    built = weights(model)

    train_steps(model, optimizer, 3, seed=2)
    state.epoch = 4
    state.history.append(3)
    state.commit()
    committed_w, committed_m = weights(model), momenta(model, optimizer)
    assert not torch.equal(committed_w["0.weight"], built["0.weight"])

    train_steps(model, optimizer, 4, seed=3)
    reached = weights(model)
    state.epoch = 9
    state.history.append(4)
    assert not torch.equal(reached["0.weight"], committed_w["0.weight"])

    state.restore()
    assert_same_tensors(weights(model), committed_w)
    assert_same_tensors(momenta(model, optimizer), committed_m)
    assert state.epoch == 4 and state.history == [1, 2, 3]
    # Model and optimizer keep their identity (the optimizer still updates
    # the model's parameters), and the momentum came back: the same steps
    # reach the same weights again.
    assert state.model is model and state.optimizer is optimizer
    train_steps(model, optimizer, 4, seed=3)
    assert_same_tensors(weights(model), reached)


def test_restore_before_any_commit_returns_to_construction():
    model, optimizer = make_model_and_sgd()
    state = hvd.elastic.TorchState(model, optimizer, batch=0)
    built = weights(model)
    train_steps(model, optimizer, 2, seed=1)
    state.batch = 2
    state.restore()
    assert_same_tensors(weights(model), built)
    assert optimizer.state_dict()["state"] == {}
    assert state.batch == 0


def test_adam_step_count_and_lr_are_restored():
    torch.manual_seed(0)
    model = torch.nn.Linear(3, 2)
    adam = torch.optim.Adam(model.parameters(), lr=0.01)
    train_steps_lin = lambda n: [  # noqa: E731
        (adam.zero_grad(), model(torch.ones(2, 3)).sum().backward(),
         adam.step()) for _ in range(n)]
    train_steps_lin(2)
    state = hvd.elastic.TorchState(model=model, optimizer=adam)
    exp_avg = [adam.state[p]["exp_avg"].clone() for p in model.parameters()]
    train_steps_lin(3)
    adam.param_groups[0]["lr"] = 0.5
    assert [float(adam.state[p]["step"]) for p in model.parameters()] == \
        [5.0, 5.0]
    state.restore()
    assert [float(adam.state[p]["step"]) for p in model.parameters()] == \
        [2.0, 2.0]
    assert adam.param_groups[0]["lr"] == 0.01
    assert_same_tensors([adam.state[p]["exp_avg"] for p in model.parameters()],
                        exp_avg)


def test_saved_state_is_not_aliased_by_restore():
    """A restore, more steps, and a second restore: the saved copy must not
    have been updated in place by the steps between."""
    model, optimizer = make_model_and_sgd()
    train_steps(model, optimizer, 1, seed=1)
    state = hvd.elastic.TorchState(model, optimizer)
    saved_w, saved_m = weights(model), momenta(model, optimizer)
    for seed in (2, 3):
        train_steps(model, optimizer, 2, seed=seed)
        state.restore()
        assert_same_tensors(weights(model), saved_w)
        assert_same_tensors(momenta(model, optimizer), saved_m)


def test_assigning_a_new_model_saves_it():
    model, optimizer = make_model_and_sgd()
    state = hvd.elastic.TorchState(model, optimizer)
    torch.manual_seed(5)
    other = torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.ReLU(),
                                torch.nn.Linear(3, 2))
    assigned = weights(other)
    state.model = other
    assert state.model is other
    with torch.no_grad():
        for p in other.parameters():
            p.add_(1.0)
        for p in model.parameters():
            p.mul_(0.0)
    state.restore()
    assert_same_tensors(weights(other), assigned)
    # The old model is no longer part of the state: restore left it alone.
    assert all(float(p.abs().sum()) == 0.0 for p in model.parameters())


def test_lr_scheduler_is_restored_through_its_state_dict():
    model, optimizer = make_model_and_sgd()
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1,
                                                gamma=0.5)
    state = hvd.elastic.TorchState(model, optimizer, scheduler=scheduler)
    train_steps(model, optimizer, 1, seed=1)
    scheduler.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.025)
    state.restore()
    assert state.scheduler is scheduler and scheduler.optimizer is optimizer
    assert scheduler.last_epoch == 0
    assert optimizer.param_groups[0]["lr"] == 0.1
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)


def test_sync_alone_then_restore_returns_to_the_sync():
    model, optimizer = make_model_and_sgd()
    state = hvd.elastic.TorchState(model, optimizer, epoch=0)
    train_steps(model, optimizer, 2, seed=1)
    state.epoch = 1
    state.sync()  # size 1: nothing changes, but the synced state is saved
    synced = weights(model)
    train_steps(model, optimizer, 2, seed=2)
    state.epoch = 2
    state.restore()
    assert_same_tensors(weights(model), synced)
    assert state.epoch == 1


# ---------------------------------------------------------------------------
# One process: the sampler


def test_shard_pads_like_distributed_sampler():
    remaining = [10, 11, 12, 13, 14, 15, 16]
    assert [_shard(remaining, r, 3) for r in range(3)] == \
        [[10, 13, 16], [11, 14, 10], [12, 15, 11]]
    assert [_shard([7], r, 3) for r in range(3)] == [[7], [7], [7]]
    assert [_shard([7, 8], r, 4) for r in range(4)] == [[7], [8], [7], [8]]
    assert _shard([], 1, 3) == []
    assert _shard([1, 2, 3, 4], 1, 2) == [2, 4]


def test_sampler_in_order_records_batches():
    sampler = hvd.elastic.ElasticSampler(list("abcdefghij"), shuffle=False)
    assert list(sampler) == list(range(10)) and len(sampler) == 10
    sampler.record_batch(0, 4)
    assert sampler.processed_indices == {0, 1, 2, 3}
    assert sampler.get_indices(2, 4) == [8, 9]
    assert sampler.get_indices(3, 4) == []
    sampler.record_batch(2, 4)
    sampler.record_indices(torch.tensor([5]))
    assert sampler.processed_indices == {0, 1, 2, 3, 5, 8, 9}
    # Recording does not re-shard; a reset does.
    assert len(sampler) == 10
    sampler.reset()
    assert list(sampler) == [4, 6, 7] and len(sampler) == 3
    assert sampler.get_indices(0, 2) == [4, 6]


def test_sampler_shuffles_by_seed_and_epoch():
    sampler = hvd.elastic.ElasticSampler(range(10), shuffle=True, seed=5)
    assert list(sampler) == epoch_order(10, 5, 0)
    sampler.set_epoch(2)
    order = epoch_order(10, 5, 2)
    assert list(sampler) == order and order != list(range(10))
    sampler.record_batch(0, 3)
    assert sampler.processed_indices == set(order[:3])
    sampler.reset()
    assert list(sampler) == order[3:]
    sampler.set_epoch(3)
    assert sampler.processed_indices == set()
    assert list(sampler) == epoch_order(10, 5, 3) != order


def test_sampler_state_dict_round_trip():
    first = hvd.elastic.ElasticSampler(range(12), seed=1)
    first.set_epoch(4)
    first.record_batch(0, 5)
    saved = first.state_dict()
    first.record_batch(1, 5)  # the saved dict is a copy
    assert saved == {"epoch": 4, "processed_num": 5,
                     "processed_indices": set(epoch_order(12, 1, 4)[:5])}
    second = hvd.elastic.ElasticSampler(range(12), seed=1)
    second.load_state_dict(saved)
    assert second.epoch == 4
    assert list(second) == epoch_order(12, 1, 4)[5:] and len(second) == 7


def test_torch_state_saves_and_restores_sampler_progress():
    sampler = hvd.elastic.ElasticSampler(range(10), shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler, batch=0)
    assert state.sampler is sampler
    sampler.record_batch(0, 4)
    state.batch = 1
    state.commit()
    sampler.record_batch(1, 4)
    state.batch = 2
    assert sampler.processed_indices == set(range(8))
    state.restore()
    assert sampler.processed_indices == {0, 1, 2, 3}
    assert state.batch == 1
    # The restore re-shards: what is left of the epoch.
    assert list(sampler) == [4, 5, 6, 7, 8, 9] and len(sampler) == 6
    # A new epoch committed, then lost progress: back to its start.
    sampler.set_epoch(1)
    state.commit()
    sampler.record_batch(0, 4)
    state.restore()
    assert sampler.epoch == 1 and sampler.processed_indices == set()
    assert list(sampler) == list(range(10))


def test_on_reset_reshards_samplers_before_the_callbacks():
    sampler = hvd.elastic.ElasticSampler(range(6), shuffle=False)
    state = hvd.elastic.TorchState(sampler=sampler)
    seen = []
    state.register_reset_callbacks([lambda: seen.append(list(sampler))])
    sampler.record_batch(0, 2)
    state.on_reset()
    assert seen == [[2, 3, 4, 5]]


# ---------------------------------------------------------------------------
# One process: Horovod's constructors, reset() and on_hosts_updated


def test_states_take_horovods_constructor_arguments():
    sent = []

    def bcast(obj):  # Horovod calls bcast_object with the object only
        sent.append(copy.deepcopy(obj))
        return {"epoch": 7, "batch": 8}

    state = hvd.elastic.ObjectState(bcast, hvd.rank, epoch=1, batch=2)
    state.sync()
    assert sent == [{"epoch": 1, "batch": 2}]
    assert (state.epoch, state.batch) == (7, 8)
    keyword = hvd.elastic.ObjectState(bcast_object=bcast, get_rank=hvd.rank,
                                      epoch=3)
    assert keyword.epoch == 3
    # hvd's own forms go on working: no broadcast function given.
    plain = hvd.elastic.ObjectState(epoch=4)
    plain.epoch = 5
    plain.sync()  # rank 0 of 1: its own saved state comes back
    assert plain.epoch == 4
    assert isinstance(hvd.elastic.State(bcast, hvd.rank), hvd.elastic.State)
    assert isinstance(hvd.elastic.State(), hvd.elastic.State)
    empty = hvd.elastic.TorchState(model=None, optimizer=None, epoch=0)
    assert empty.model is None and empty.optimizer is None
    empty.epoch = 1
    empty.commit()
    empty.epoch = 2
    empty.restore()
    assert empty.epoch == 1


def test_on_reset_calls_reset_before_the_callbacks():
    events = []

    class Tracked(hvd.elastic.ObjectState):
        def reset(self):
            events.append(("reset", self.epoch))

    state = Tracked(epoch=1)
    state.register_reset_callbacks([lambda: events.append("callback")])
    state.on_reset()
    assert events == [("reset", 1), "callback"]

    class TrackedTorch(hvd.elastic.TorchState):
        def reset(self):
            events.append(("torch reset", len(self.sampler)))

    sampler = hvd.elastic.ElasticSampler(range(10), shuffle=False)
    torch_state = TrackedTorch(sampler=sampler)
    sampler.record_batch(0, 3)
    events.clear()
    torch_state.on_reset()
    # The samplers have worked out what is left before reset() runs.
    assert events == [("torch reset", 7)]


def test_on_hosts_updated_interrupts_the_next_commit_once():
    state = hvd.elastic.ObjectState(epoch=0)
    state.commit()
    state.on_hosts_updated(10, hvd.elastic.HostUpdateResult.added)
    state.epoch = 1
    with pytest.raises(hvd.HostsUpdatedInterrupt) as raised:
        state.commit()
    assert raised.value.skip_sync is False
    # The commit saved before it raised.
    state.epoch = 2
    state.restore()
    assert state.epoch == 1
    state.commit()  # the update was acted on: no second interrupt
    state.on_hosts_updated(9, hvd.elastic.HostUpdateResult.removed)
    state.check_host_updates()  # older than the one acted on: ignored
    state.on_hosts_updated(11, hvd.elastic.HostUpdateResult.removed)
    with pytest.raises(hvd.HostsUpdatedInterrupt) as raised:
        state.check_host_updates()
    # Only hosts removed: Horovod's skip_sync.
    assert raised.value.skip_sync is True
    # A reset handles what was queued before it.
    state.on_hosts_updated(12, hvd.elastic.HostUpdateResult.mixed)
    state.on_reset()
    state.commit()


def test_a_handler_class_written_for_horovods_registry():
    class Counter:
        n = 0

    class CounterHandler(hvd.elastic.StateHandler):
        def __init__(self, counter):  # Horovod's handlers take the value
            super().__init__(counter)
            self.save()

        def save(self):
            self._saved = self.value.n

        def restore(self):
            self.value.n = self._saved

        def sync(self):
            pass

    registry = hvd.elastic.get_handler_registry()
    hvd.elastic.set_handler_registry([(Counter, CounterHandler)] + registry)
    try:
        counter = Counter()
        state = hvd.elastic.TorchState(counter=counter)
    finally:
        hvd.elastic.set_handler_registry(registry)
    counter.n = 3
    state.commit()
    counter.n = 5
    state.restore()
    assert state.counter is counter and counter.n == 3


# ---------------------------------------------------------------------------
# One process: the sampler's timing and Horovod's progress count


class Indexed(torch.utils.data.Dataset):
    """Sample i is i: a loader's batches show which samples it yielded."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return i


def test_record_batch_after_a_restore_records_what_the_loader_yielded():
    sampler = hvd.elastic.ElasticSampler(Indexed(10), shuffle=True, seed=2)
    state = hvd.elastic.TorchState(sampler=sampler)
    loader = torch.utils.data.DataLoader(sampler.dataset, batch_size=2,
                                         sampler=sampler)
    batches = enumerate(loader)
    i, first = next(batches)
    sampler.record_batch(i, 2)
    state.commit()
    i, _lost = next(batches)
    sampler.record_batch(i, 2)
    state.restore()
    assert sampler.processed_indices == set(first.tolist())
    assert sampler.processed_num == 2 and len(sampler) == 8
    # The loop goes on with the same iteration: the share in use.
    i, third = next(batches)
    sampler.record_batch(i, 2)
    assert sampler.processed_indices == set(first.tolist() + third.tolist())
    assert epoch_order(10, 2, 0)[:6] == \
        first.tolist() + _lost.tolist() + third.tolist()
    # The next iteration is cut from what was left at the restore, as
    # Horovod's: in hvd.elastic.run nothing is recorded between a restore
    # and that iteration, so this is every sample not committed.
    assert [int(b) for batch in loader for b in batch] == \
        epoch_order(10, 2, 0)[2:]


def test_sampler_loads_a_horovod_state_dict():
    sampler = hvd.elastic.ElasticSampler(range(11), seed=3)
    sampler.load_state_dict({"epoch": 2, "processed_num": 4})
    order = epoch_order(11, 3, 2)
    assert sampler.epoch == 2 and sampler.processed_num == 4
    assert sampler.processed_indices == set(order[:4])
    assert list(sampler) == order[4:] and len(sampler) == 7
    # hvd's own state_dict: the indices win over the count.
    sampler.load_state_dict({"epoch": 2, "processed_num": 4,
                             "processed_indices": {order[5]}})
    assert list(sampler) == order[:5] + order[6:]


@pytest.fixture
def fake_world(monkeypatch):
    """The sampler's view of hvd.rank()/hvd.size(), set by the test: several
    ranks' samplers in this one process."""
    world = types.SimpleNamespace(rank=0, size=1)
    monkeypatch.setattr(sampler_module, "_hvd", types.SimpleNamespace(
        rank=lambda: world.rank, size=lambda: world.size))
    return world


def test_sampler_covers_an_epoch_once_over_resizes_and_a_failure(fake_world):
    """The protocol TorchState drives, on several ranks in one process:
    each world loads the committed progress (sync), iterates its share in
    batches in step, records them, and commits the union of every rank's
    records; a failure rolls back to the commit. Every sample of the epoch
    is in exactly one committed batch, but for the padding of the last
    world; and at every commit the progress is Horovod's: the first
    processed_num samples of the epoch's order."""
    n, bs, seed, epoch = 61, 3, 4, 2
    order = epoch_order(n, seed, epoch)
    committed = {"epoch": epoch, "processed_num": 0}
    done = []          # the indices of every committed batch
    horovod_count = 0  # Horovod's processed_num: batch_size * size per batch
    # (world size, batches per rank, failure after the commit); None: all.
    for size, batches, failure in [(3, 2, False), (2, 3, True),
                                   (4, 1, False), (3, None, False)]:
        samplers, iterators = [], []
        for rank in range(size):
            fake_world.rank, fake_world.size = rank, size
            sampler = sampler_module.ElasticSampler(range(n), seed=seed)
            sampler.load_state_dict(committed)
            samplers.append(sampler)
            iterators.append(iter(sampler))
        remaining = [i for i in order if i not in done]
        assert [len(s) for s in samplers] == \
            [math.ceil(len(remaining) / size)] * size
        if batches is None:
            batches = math.ceil(len(samplers[0]) / bs)
        for b in range(batches):
            for sampler, it in zip(samplers, iterators):
                take = min(bs, len(sampler) - b * bs)
                batch = [next(it) for _ in range(take)]
                sampler.record_batch(b, bs)
                done += batch
            horovod_count += bs * size
        union = set().union(*(s.processed_indices for s in samplers))
        committed = {"epoch": epoch, "processed_indices": union}
        if horovod_count < n:
            assert union == set(order[:horovod_count])
        if failure:
            for sampler, it in zip(samplers, iterators):
                sampler.record_batch(batches, bs)  # lost with the failure
                sampler.load_state_dict(committed)
                assert sampler.processed_indices == union
    assert sorted(set(done)) == list(range(n))
    padding = len(done) - n
    assert 0 <= padding < 3
    extra = list(done)
    for i in range(n):
        extra.remove(i)
    assert sorted(extra) == sorted(remaining[:padding])
    # A commit would merge them all: the whole epoch.
    assert committed["processed_indices"] == set(range(n))


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
