#!/usr/bin/python3
"""The study protocol's allocation core in straightforward NumPy, for the
side-by-side comparison with pflex (bench/bench_protocol.c, the same protocol;
run both with bench/compare_numpy.sh). Headline groups of a runs CSV, each
true curve its measured points interpolated linearly, both scenarios, W
workloads of 100 jobs, cuts 0-40% by 5%; equal, moe-ft, dram and pfi by
water filling (a sort by headroom per weight and cumulative sums), oracle by the
greedy on the upper concave hulls of the curves (all segments of a workload
sorted by slope, a cumulative sum and a search for the budget). Prints the
protocol's wall time (after loading) and the gap recovered at 30%.

usage: study_numpy.py RUNS.csv [--workloads W] [--seed S]"""
import csv
import sys
import time

import numpy as np

ACME_PT, ACME_FT = 4026, 66971
CUTS = [0.05 * c for c in range(9)]


def load(path):
    groups = {}
    with open(path, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r.get("set", "") == "headline"]
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    pct = {c: any(float(r[c]) > 1 for r in rows) for c in ("dram_active", "mem_copy_util")}
    out = []
    for runs in groups.values():
        runs.sort(key=lambda r: float(r["cap_w"]))
        p = np.array([float(r["power_w"]) for r in runs])
        t = np.array([float(r["tokens_per_s"]) for r in runs])
        o = np.argsort(p, kind="stable")
        p, t = p[o], np.maximum.accumulate(t[o])
        top = runs[-1]
        gpus = int(top["gpus"])
        caps = [200, 300, 400, 500, 600] if gpus <= 8 else [200, 500, 600]
        grid = np.array([c * gpus for c in caps if c * gpus < p[-1]])
        tg = np.interp(grid, p, t)
        ok = tg < t[-1]
        pfi = np.mean((1 - grid[ok] / p[-1]) / (1 - tg[ok] / t[-1])) if ok.any() else 1.0
        f = {c: float(top[c]) / (100 if pct[c] else 1) for c in pct}
        # the upper concave hull of the points: its segments, steepest first
        hull = [0]
        for i in range(1, len(p)):
            while len(hull) >= 2:
                a, b = hull[-2], hull[-1]
                if (p[b] - p[a]) * (t[i] - t[a]) - (t[b] - t[a]) * (p[i] - p[a]) >= 0:
                    hull.pop()
                else:
                    break
            hull.append(i)
        hp, ht = p[hull], t[hull]
        slope = np.diff(ht) / np.diff(hp)
        keep = slope > 0
        out.append(dict(p=p, t=t, pmin=p[0], pmax=p[-1], pfi=pfi, gpus=gpus,
                        moe_ft=top["arch"] == "moe" and top["task"] == "ft",
                        pt=top["task"] == "pt", dram=f["dram_active"] * f["mem_copy_util"],
                        slope=slope[keep], dp=np.diff(hp)[keep]))
    return out


def water_fill(lo, hi, w, cut):
    """p = hi - min(hi - lo, L w), the level L at which the cuts sum to cut:
    jobs in order of headroom per weight, the first k clipped (a sort and two
    cumulative sums); zero weights are cut only when nothing else is left."""
    h = hi - lo
    if cut >= h.sum():
        return lo.copy()
    pos = w > 0
    r = np.where(pos, h / np.where(pos, w, 1), np.inf)
    o = np.argsort(r, kind="stable")
    hs, ws, rs = np.cumsum(h[o]), w[o], r[o]
    wrest = ws[::-1].cumsum()[::-1]  # weight of jobs k.. (not clipped)
    hbefore = hs - h[o]
    reach = hbefore + rs * wrest  # cut given when jobs before k are clipped and k just is
    k = int(np.searchsorted(reach, cut))
    if k >= len(o) or wrest[k] <= 0:
        return lo.copy()
    level = (cut - hbefore[k]) / wrest[k]
    return hi - np.minimum(h, level * w)


def oracle(S, D, lo, budget):
    """Greedy on the hulls: rows of S (slopes) and D (lengths, 0 as padding)."""
    n, m = S.shape
    slope, dp = S.ravel(), D.ravel()
    o = np.argsort(-slope, kind="stable")
    take = np.minimum(dp[o], np.maximum(budget - (np.cumsum(dp[o]) - dp[o]), 0))
    p = lo.copy()
    np.add.at(p, o // m, take)
    return p


def tput(P, T, p):
    """Total throughput of jobs (rows of the padded point arrays P, T) at p."""
    k = np.clip((P <= p[:, None]).sum(axis=1) - 1, 0, P.shape[1] - 2)
    rows = np.arange(len(p))
    x0, x1, y0, y1 = P[rows, k], P[rows, k + 1], T[rows, k], T[rows, k + 1]
    f = np.where(x1 > x0, (np.minimum(p, x1) - x0) / np.where(x1 > x0, x1 - x0, 1), 0)
    return float((y0 + f * (y1 - y0)).sum())


def main():
    path = sys.argv[1]
    args = dict(zip(sys.argv[2::2], sys.argv[3::2]))
    workloads, seed = int(args.get("--workloads", 500)), int(args.get("--seed", 1))
    groups = load(path)
    G = len(groups)
    # per group, padded to common widths: points, hull segments, bounds, weights
    K = max(len(g["p"]) for g in groups)
    Pall = np.array([np.pad(g["p"], (0, K - len(g["p"])), constant_values=np.inf)
                     for g in groups])
    Tall = np.array([np.pad(g["t"], (0, K - len(g["t"])), mode="edge") for g in groups])
    M = max(len(g["dp"]) for g in groups)
    Sall = np.array([np.pad(g["slope"], (0, M - len(g["slope"]))) for g in groups])
    Dall = np.array([np.pad(g["dp"], (0, M - len(g["dp"]))) for g in groups])
    lo_all = np.array([g["pmin"] for g in groups])
    hi_all = np.array([g["pmax"] for g in groups])
    tmax_all = np.array([g["t"][-1] for g in groups])
    w_all = [hi_all, hi_all * np.array([2.0 if g["moe_ft"] else 1.0 for g in groups]),
             np.array([g["dram"] for g in groups]),
             hi_all / tmax_all * np.array([max(g["pfi"], 0) for g in groups])]
    pt = np.array([i for i, g in enumerate(groups) if g["pt"]])
    ft = np.array([i for i, g in enumerate(groups) if not g["pt"]])
    rng = np.random.default_rng(seed)
    names = ["equal", "moe-ft", "dram", "pfi", "oracle"]
    tot = np.zeros((2, len(CUTS), len(names)))
    t0 = time.perf_counter()
    for sc in range(2):
        for _ in range(workloads):
            if sc == 0:
                idx = rng.integers(G, size=100)
            else:
                u = rng.random(100) < ACME_PT / (ACME_PT + ACME_FT)
                idx = np.where(u, pt[rng.integers(len(pt), size=100)],
                               ft[rng.integers(len(ft), size=100)])
            P, T, lo, hi = Pall[idx], Tall[idx], lo_all[idx], hi_all[idx]
            weights = [w[idx] for w in w_all]
            for c, cut in enumerate(CUTS):
                target = (1 - cut) * hi.sum()
                for s, w in enumerate(weights):
                    p = water_fill(lo, hi, w, hi.sum() - target) if cut > 0 else hi
                    tot[sc, c, s] += tput(P, T, p)
                p = oracle(Sall[idx], Dall[idx], lo, target - lo.sum()) if cut > 0 else hi
                tot[sc, c, 4] += tput(P, T, p)
    dt = time.perf_counter() - t0
    print(f"numpy: {dt:.3f} s for {workloads} workloads x 100 jobs x 9 cuts x 2 scenarios x "
          f"5 strategies ({len(groups)} groups)")
    for sc in range(2):
        gap = tot[sc, 6, 4] - tot[sc, 6, 0]
        print(f"  {'production' if sc else 'random':10s} 30% gap recovered: " +
              " ".join(f"{n} {(tot[sc, 6, s] - tot[sc, 6, 0]) / gap:.3f}"
                       for s, n in enumerate(names)))
    print(f"seconds {dt:.6f}")


if __name__ == "__main__":
    main()
