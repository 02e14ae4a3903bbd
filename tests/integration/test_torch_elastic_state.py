"""hvd.torch.elastic: TorchState and ElasticSampler in this process
(``hvd.init()`` without hvdrun: rank 0 of 1): save and restore round trips
of a model, an optimizer, a scheduler, attributes and a sampler's progress.
On several workers under hvdrun: test_torch_elastic_jobs.py.
"""

import copy
import math
import random
import types

import pytest

import torch

import hvd.torch as hvd
from hvd.torch.elastic import sampler as sampler_module
from hvd.torch.elastic.sampler import _shard


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
