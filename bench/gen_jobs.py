#!/usr/bin/env python3
"""Writes a jobs JSON of N jobs for the scaling benchmark (bench/README.md):
a third each with a PFI, parametric parameters, and measured points (the
three curve sources of docs/allocation.md), GPU counts of 8 to 64; the
values are drawn (seeded), not measured.

usage: bench/gen_jobs.py N OUT.json [--seed S]"""
import json
import random
import sys


def job(i, rng):
    gpus = rng.choice([8, 16, 32, 64])
    p_max = 700.0 * gpus
    t_max = round(rng.uniform(5e3, 5e4) * gpus, 1)
    j = {"name": "job%d" % i, "gpu": rng.choice(["H100", "H200"]), "gpus": gpus,
         "p_max": p_max, "t_max": t_max}
    kind = i % 3
    if kind == 0:
        j["pfi"] = round(rng.uniform(1.05, 2.5), 4)
    elif kind == 1:
        j["params"] = {"c": round(rng.uniform(0.1, 0.6), 3)}
    else:
        del j["p_max"], j["t_max"]
        caps = [200, 400, 500, 600, 700]
        drop = rng.uniform(0.1, 0.5)
        j["points"] = [[round(c * gpus * (0.9 + 0.1 * c / 700), 1),
                        round(t_max * (1 - drop * (700 - c) / 500), 1), c * gpus] for c in caps]
    return j


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit(__doc__)
    n, out = int(sys.argv[1]), sys.argv[2]
    seed = int(sys.argv[4]) if len(sys.argv) == 5 and sys.argv[3] == "--seed" else 1
    rng = random.Random(seed)
    with open(out, "w") as f:
        json.dump({"jobs": [job(i, rng) for i in range(n)]}, f)


main()
