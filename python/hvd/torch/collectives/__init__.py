"""The collectives of ``hvd.torch``, one module per collective.

Each of ``allreduce``, ``allgather``, ``broadcast``, ``alltoall`` and
``reducescatter`` holds every form of its collective: ``*_async``,
synchronous, grouped and the autograd Functions; ``barrier`` holds ``join``
and ``barrier``. ``handles`` holds ``Handle``, ``poll``, ``synchronize`` and
the calling protocol of them all; ``arguments`` the argument helpers they
share (names, process-set ranks, lists of tensors).

Import the functions from ``hvd.torch``. This package re-exports nothing on
purpose: ``hvd.torch.allreduce`` is the function, so the modules live one
level down (``hvd.torch.collectives.allreduce``) where their names shadow
nothing.
"""
