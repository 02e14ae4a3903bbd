"""Trains until stopped: says "stepping <rank>" once, then allreduces every
20 ms forever."""

import time

import numpy as np

import hvd

hvd.init()
print("stepping", hvd.rank(), flush=True)
while True:
    hvd.allreduce(np.ones(4, np.float32), name="g")
    time.sleep(0.02)
