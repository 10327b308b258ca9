#!/usr/bin/env python3
"""Writes series.csv: a SIMULATED telemetry series (not a measurement) of a
2-GPU job capped at 500 W, sampled every 2 s for 10 minutes: 60 s of start-up
(low power, no throughput), then training with an evaluation dip every 200 s
and a checkpoint near the end. Deterministic (a fixed-seed generator), so
`python3 examples/gen_series.py > examples/series.csv` rewrites it byte for
byte."""
import math
import random

rng = random.Random(7)
print("time_s,gpu,power_w,gpu_util,fb_used_mib,sm_clock,dram_active,tokens_per_s")
for step in range(0, 301):
    t = 2 * step
    training = t >= 60
    dip = training and (t % 200) < 12          # evaluation: low power, no tokens
    ckpt = 540 <= t < 556                       # checkpoint write
    for gpu in range(2):
        if not training:
            p, util, fb, clk, dram = 80 + 3 * rng.random(), 0, 512, 345, 0.0
        elif dip or ckpt:
            p, util, fb, clk, dram = 210 + 20 * rng.random(), 35, 70100, 1410, 0.08
        else:
            p = 488 + 10 * math.sin(t / 17 + gpu) + 4 * rng.random()
            util, fb, clk = 97 + rng.randint(0, 2), 71230, 1755 - rng.randint(0, 40)
            dram = 0.40 + 0.02 * rng.random()
        print(f"{t},{gpu},{p:.1f},{util},{fb},{clk},{dram:.3f},")
    if training and not dip and not ckpt and step % 5 == 0:
        print(f"{t + 0.4},,,,,,,{2 * (25400 + 300 * rng.random()):.1f}")
