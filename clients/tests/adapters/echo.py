#!/usr/bin/env python3
"""The protocol's own cost: an adapter with no library behind it, answering every request at once
(every acquire is granted, so it is no lock: `clients check` refuses it). The criterion benchmark
`clients/benches/protocol.rs` times a round trip through it: what any Python adapter adds to its
library's figures."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "../../adapters/python"))

from lockbench_adapter import Library, serve  # noqa: E402


class Echo(Library):
    def __init__(self, hello):
        self.backend = hello["backend"]

    def describe(self):
        return {"library": "echo", "version": "0", "backend": self.backend, "renewal": "manual",
                "fencing": False, "notifies_loss": False}

    def acquire(self, key, ttl_ms, wait_ms):
        return {"held": True, "token": None, "fencing_token": None, "validity_ms": None}

    def renew(self, key, ttl_ms):
        return {"held": True}

    def release(self, key):
        return {"released": True}

    def held(self, key):
        return {"held": True}


if __name__ == "__main__":
    serve(Echo)
