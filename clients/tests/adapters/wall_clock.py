#!/usr/bin/env python3
"""A deliberately broken adapter for the conformance test: redis-py's, stamping its messages with
the wall clock (time.time_ns) instead of CLOCK_MONOTONIC. `lockbench clients check` must refuse
it at its first stamped reply."""

import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../adapters/python"))

import lockbench_adapter  # noqa: E402

lockbench_adapter.now_ns = time.time_ns

from redis_py import RedisPy  # noqa: E402

lockbench_adapter.serve(RedisPy)
