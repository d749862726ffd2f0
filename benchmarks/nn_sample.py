"""Wall time of hydroplane.nn.sample on one row of logits (a DeviceArray), per filter setting.

    PYTHONPATH=src python3 benchmarks/nn_sample.py [--device 0] [--vocab 262144] [--repeat 3]

Each setting runs once (pipelines made), then `repeat` times; the mean wall time per call includes reading the token
back (.numpy()). The token is checked against hydroplane.ops.nn.reference_sample.
"""

import argparse
import time

import numpy as np

from hydroplane.launch.jit import device_array
from hydroplane.ops import nn

SETTINGS = (dict(), dict(temperature=0.8, top_k=40), dict(temperature=0.8, top_p=0.95),
            dict(temperature=0.8, top_k=40, top_p=0.95))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="0")
    parser.add_argument("--vocab", type=int, default=262144)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    device = "ref" if args.device == "ref" else int(args.device)
    logits = (np.random.default_rng(0).standard_normal((1, args.vocab)) * 3).astype(np.float32)
    row = device_array(logits, device)
    for options in SETTINGS:
        token = nn.sample(row, seed=3, **options).numpy()
        start = time.perf_counter()
        for _ in range(args.repeat):
            token = nn.sample(row, seed=3, **options).numpy()
        seconds = (time.perf_counter() - start) / args.repeat
        ok = np.array_equal(token, nn.reference_sample(logits, seed=3, **options))
        print(f"{options or 'greedy'}: {seconds * 1e3:.1f} ms, token {int(token[0])} ({'ok' if ok else 'MISMATCH'})")


if __name__ == "__main__":
    main()
