"""hvd.torch is a drop-in for horovod.torch: every public name Horovod's
module exports is here, and every function takes Horovod's parameters, by
position in Horovod's order and by keyword.

The tables below are horovod.torch's public API (Horovod 0.28, the last
release), written out as data: a name missing from hvd, or a parameter
that moved, fails the test. Names hvd deliberately lacks would be listed in
NOT_APPLICABLE with their reason; today there are none. hvdrun's side (every
horovodrun option) is tested in test_hvdrun_horovod_flags.py.
"""

import inspect

import hvd.torch as hvd
import hvd.torch.elastic as hvd_elastic

PS = "process_set"
# Functions: name -> Horovod's parameters in order.
HOROVOD_FUNCTIONS = {
    "init": ["comm", "process_sets"],
    "shutdown": [],
    "is_initialized": [],
    "size": [], "local_size": [], "cross_size": [],
    "rank": [], "local_rank": [], "cross_rank": [],
    "mpi_threads_supported": [], "mpi_enabled": [], "mpi_built": [],
    "gloo_enabled": [], "gloo_built": [], "nccl_built": [],
    "ddl_built": [], "ccl_built": [], "cuda_built": [], "rocm_built": [],
    "start_timeline": ["file_path", "mark_cycles"],
    "stop_timeline": [],
    "allreduce": ["tensor", "average", "name", "compression", "op",
                  "prescale_factor", "postscale_factor", PS],
    "allreduce_async": ["tensor", "average", "name", "op",
                        "prescale_factor", "postscale_factor", PS],
    "allreduce_": ["tensor", "average", "name", "op", "prescale_factor",
                   "postscale_factor", PS],
    "allreduce_async_": ["tensor", "average", "name", "op",
                         "prescale_factor", "postscale_factor", PS],
    "grouped_allreduce": ["tensors", "average", "name", "compression", "op",
                          "prescale_factor", "postscale_factor", PS],
    "grouped_allreduce_async": ["tensors", "average", "name", "op",
                                "prescale_factor", "postscale_factor", PS],
    "grouped_allreduce_": ["tensors", "average", "name", "op",
                           "prescale_factor", "postscale_factor", PS],
    "grouped_allreduce_async_": ["tensors", "average", "name", "op",
                                 "prescale_factor", "postscale_factor", PS],
    "sparse_allreduce_async": ["tensor", "name", "op", PS],
    "allgather": ["tensor", "name", PS],
    "allgather_async": ["tensor", "name", PS],
    "grouped_allgather": ["tensors", "name", PS],
    "grouped_allgather_async": ["tensors", "name", PS],
    "broadcast": ["tensor", "root_rank", "name", PS],
    "broadcast_async": ["tensor", "root_rank", "name", PS],
    "broadcast_": ["tensor", "root_rank", "name", PS],
    "broadcast_async_": ["tensor", "root_rank", "name", PS],
    "alltoall": ["tensor", "splits", "name", PS],
    "alltoall_async": ["tensor", "splits", "name", PS],
    "reducescatter": ["tensor", "name", "compression", "op", PS,
                      "prescale_factor", "postscale_factor"],
    "reducescatter_async": ["tensor", "name", "op", PS, "prescale_factor",
                            "postscale_factor"],
    "grouped_reducescatter": ["tensors", "name", "compression", "op", PS,
                              "prescale_factor", "postscale_factor"],
    "grouped_reducescatter_async": ["tensors", "name", "op", PS,
                                    "prescale_factor", "postscale_factor"],
    "join": ["device"],
    "barrier": [PS],
    "poll": ["handle"],
    "synchronize": ["handle"],
    "add_process_set": ["process_set"],
    "remove_process_set": ["process_set"],
    "broadcast_parameters": ["params", "root_rank", PS],
    "broadcast_optimizer_state": ["optimizer", "root_rank", "model", PS],
    "broadcast_object": ["obj", "root_rank", "name", PS],
    "allgather_object": ["obj", "name", PS],
    "DistributedOptimizer": ["optimizer", "named_parameters", "compression",
                             "backward_passes_per_step", "op",
                             "gradient_predivide_factor", "num_groups",
                             "groups", "sparse_as_dense", PS],
}
# Classes: name -> Horovod's constructor parameters in order (after self).
HOROVOD_CLASSES = {
    "ProcessSet": ["ranks_or_comm"],
    "SyncBatchNorm": ["num_features", "eps", "momentum", "affine",
                      "track_running_stats"],
    "HorovodInternalError": None,  # exception types: only that they are
}
# Other values: name -> what it must be.
HOROVOD_VALUES = {
    "Average": int, "Sum": int, "Adasum": int, "Min": int, "Max": int,
    "Product": int,
    "Compression": None,
    "global_process_set": None,
    "elastic": None,
}
# horovod.torch.elastic (with State and ObjectState of horovod.common).
HOROVOD_ELASTIC = {
    "run": ["func"],
    "TorchState": ["model", "optimizer"],
    "ElasticSampler": ["dataset", "shuffle", "seed"],
    "State": ["bcast_object", "get_rank"],
    "ObjectState": ["bcast_object", "get_rank"],
}
# Horovod names hvd deliberately lacks: name -> reason.
NOT_APPLICABLE = {}


def positional(callable_):
    """Its parameters that can be given by position, in order."""
    return [p.name for p in inspect.signature(callable_).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]


def takes_horovods_parameters(owner, name, params):
    """What is wrong with `owner.name` against Horovod's `params`, or
    None. A parameter Horovod has must be at Horovod's position (so
    positional calls mean the same) unless Horovod's own order puts it after
    one hvd takes only by keyword, and must be accepted by keyword."""
    if not hasattr(owner, name):
        return f"{name}: missing"
    obj = getattr(owner, name)
    target = obj.__init__ if inspect.isclass(obj) else obj
    sig = inspect.signature(target)
    ours = [p for p in positional(target) if p != "self"]
    accepts_kwargs = any(p.kind == p.VAR_KEYWORD
                         for p in sig.parameters.values())
    for i, param in enumerate(params):
        if i < len(ours) and ours[i] != param:
            return (f"{name}: Horovod's parameter {i} is {param!r}, hvd's "
                    f"is {ours[i]!r} (hvd: {sig})")
        if param not in sig.parameters and not accepts_kwargs:
            return f"{name}: no parameter {param!r} (hvd: {sig})"
    return None


def test_every_horovod_torch_name_is_here_with_horovods_parameters():
    problems = [f"{name}: listed as not applicable without a reason"
                for name, why in NOT_APPLICABLE.items() if len(why) < 20]
    for name, params in HOROVOD_FUNCTIONS.items():
        if name in NOT_APPLICABLE:
            continue
        problem = takes_horovods_parameters(hvd, name, params)
        if problem:
            problems.append(problem)
    for name, params in HOROVOD_CLASSES.items():
        if not inspect.isclass(getattr(hvd, name, None)):
            problems.append(f"{name}: missing or not a class")
        elif params is not None:
            problem = takes_horovods_parameters(hvd, name, params)
            if problem:
                problems.append(problem)
    for name, kind in HOROVOD_VALUES.items():
        if not hasattr(hvd, name):
            problems.append(f"{name}: missing")
        elif kind is not None and not isinstance(getattr(hvd, name), kind):
            problems.append(f"{name}: not a {kind.__name__}")
    for name, params in HOROVOD_ELASTIC.items():
        problem = takes_horovods_parameters(hvd_elastic, name, params)
        if problem:
            problems.append(f"elastic.{problem}")
    assert not problems, "\n".join(problems)


def test_names_hvd_adds_are_horovods_where_horovod_has_them():
    # Every reduce op is distinct (a copy-paste slip would alias two).
    ops = [hvd.Average, hvd.Sum, hvd.Adasum, hvd.Min, hvd.Max, hvd.Product]
    assert len(set(ops)) == len(ops)
    assert issubclass(hvd.HorovodInternalError, RuntimeError)
    assert issubclass(hvd.SyncBatchNorm, hvd_torch_batchnorm())
    assert set(hvd.__all__) >= (set(HOROVOD_FUNCTIONS) | set(HOROVOD_CLASSES)
                                | set(HOROVOD_VALUES)) - {"elastic"}


def hvd_torch_batchnorm():
    from torch.nn.modules.batchnorm import _BatchNorm
    return _BatchNorm


def test_a_process_set_from_an_mpi_communicator_is_refused_with_the_reason():
    assert hvd.ProcessSet(ranks_or_comm=(2, 0)).ranks == [0, 2]

    class Communicator:  # what mpi4py's Comm looks like to ProcessSet
        pass

    try:
        hvd.ProcessSet(Communicator())
    except ValueError as e:
        assert "no MPI" in str(e) and "Communicator" in str(e), e
    else:
        raise AssertionError("ProcessSet took a communicator")


# horovod.torch's names that horovod.torch.mpi_ops lacks (they live in its
# optimizer, functions, sync_batch_norm and elastic modules).
NOT_IN_MPI_OPS = {"DistributedOptimizer", "broadcast_parameters",
                  "broadcast_optimizer_state", "broadcast_object",
                  "allgather_object", "SyncBatchNorm", "elastic"}


def test_horovod_torch_mpi_ops_names_are_in_hvd_torch_mpi_ops():
    # `from horovod.torch.mpi_ops import allreduce_async` keeps working as
    # `from hvd.torch.mpi_ops import ...`, and gives hvd.torch's objects.
    import hvd.torch.mpi_ops as mpi_ops
    names = (set(HOROVOD_FUNCTIONS) | set(HOROVOD_CLASSES)
             | set(HOROVOD_VALUES)) - NOT_IN_MPI_OPS
    wrong = sorted(n for n in names
                   if getattr(mpi_ops, n, None) is not getattr(hvd, n))
    assert not wrong, f"not hvd.torch's object in mpi_ops: {wrong}"
    assert set(mpi_ops.__all__) == names
