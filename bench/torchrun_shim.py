"""Smallest shim that makes Debian's torchrun (torch 1.13) start on Python 3.11.

Debian's /usr/bin/torchrun fails before it starts any worker:
    torch/distributed/elastic/multiprocessing/api.py, in to_map
        map[i] = val_or_map.get(i, Std.NONE)
    AttributeError: 'NoneType' object has no attribute 'get'
Cause: `Std.from_str` converts "0" (the default of --redirects and --tee) by iterating
`for s in Std` and returning the member equal to 0; since Python 3.11, iterating an IntFlag
yields only its canonical single-bit members (OUT, ERR), so neither NONE (0) nor ALL (3) is
found and from_str returns None, which to_map then calls .get on.

This shim replaces exactly that one method, `Std.from_str`, with one that builds the member by
value (`Std(int(v))`), then runs the unmodified `torch.distributed.run.main()`. Nothing else is
patched. It also timestamps the agent's log lines (unix seconds) so that detection can be timed.

    /usr/bin/python3 bench/torchrun_shim.py --nproc_per_node 2 --max_restarts 3 train.py ...
"""
import logging
import re
import sys

from torch.distributed.elastic.multiprocessing import api as mp_api
from torch.distributed.elastic.multiprocessing.api import Std


def _from_str(cls, vm):
    if re.match(mp_api._VALUE_REGEX, vm):
        return cls(int(vm))
    if re.match(mp_api._MAPPING_REGEX, vm):
        return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
    raise ValueError(f"{vm} does not match: <{mp_api._VALUE_REGEX}> or <{mp_api._MAPPING_REGEX}>")


Std.from_str = classmethod(_from_str)

if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, force=True,
                        format="%(created).3f %(levelname)s %(name)s: %(message)s")
    from torch.distributed.run import main
    sys.argv[0] = "torchrun"
    sys.exit(main())
