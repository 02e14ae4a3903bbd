"""Elastic training with torch: ``hvd.torch.elastic``, as
``horovod.torch.elastic``.

``run`` (the retry loop), ``State`` and ``ObjectState`` are
``hvd.elastic``'s; ``TorchState`` keeps a model, an optimizer, samplers and
other attributes; ``ElasticSampler`` shards the rest of an epoch over the
current ranks::

    import hvd.torch as hvd
    hvd.init()
    sampler = hvd.elastic.ElasticSampler(dataset)
    state = hvd.elastic.TorchState(model, optimizer, sampler=sampler,
                                   epoch=0, batch=0)

    @hvd.elastic.run
    def train(state): ...

    train(state)
"""

from ...elastic import HostUpdateResult, ObjectState, State, run
from .sampler import ElasticSampler
from .state import (ModelStateHandler, OptimizerStateHandler,
                    SamplerStateHandler, StatefulHandler, StateHandler,
                    TorchState, get_handler_registry, set_handler_registry)

__all__ = [
    "run", "State", "ObjectState", "HostUpdateResult", "TorchState",
    "ElasticSampler",
    "StateHandler", "ModelStateHandler", "OptimizerStateHandler",
    "SamplerStateHandler", "StatefulHandler",
    "get_handler_registry", "set_handler_registry",
]
