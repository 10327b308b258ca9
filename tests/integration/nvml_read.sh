# pflex gpus against the fake NVML: every reading, JSON, optional readings
# marked absent, the ClocksThrottleReasons fallback, and load/init failures.
source "$(dirname "$0")/nvml_common.bash"
fake_state 2

out=$("$PFLEX" gpus)
echo "$out"
# Values below are the fake's state (nvml_common.bash), in W and MiB.
echo "$out" | grep >/dev/null '^0 .*NVIDIA H200 .*GPU-fake-0000-0000-0000-000000000000 .* 650.0 .* 700.0 .* 700.0 200-700 .* 1980 .* 3201 .* 97 .* 81920 sw_power_cap' \
  || fail "table row of GPU 0"
echo "$out" | grep >/dev/null '^1 .*GPU-fake-0000-0000-0000-000000000001' || fail "table row of GPU 1"

json=$("$PFLEX" gpus --json)
# 123456789 mJ = 123456.789 J; 150323855360 B = 143360 MiB; throttle 4 = sw_power_cap.
python3 - "$json" <<'PY'
import json, sys
g = json.loads(sys.argv[1])
assert len(g) == 2, g
a = g[0]
assert a["power_w"] == 650.0 and a["limit_w"] == 700.0 and a["default_limit_w"] == 700.0, a
assert a["min_limit_w"] == 200.0 and a["max_limit_w"] == 700.0, a
assert a["enforced_limit_w"] == 700.0, a
assert abs(a["energy_j"] - 123456.789) < 1e-6, a
assert a["sm_clock_mhz"] == 1980 and a["mem_clock_mhz"] == 3201, a
assert a["gpu_util"] == 97 and a["mem_util"] == 61, a
assert a["mem_total_mib"] == 143360.0 and a["mem_used_mib"] == 81920.0, a
assert a["throttle_reasons"] == "sw_power_cap", a
assert a["pci_bus_id"] == "00000000:10:00.0", a
PY

# --watch: a telemetry series CSV, read-only; 0.3 s at 10 Hz = samples at 0, 0.1, 0.2, 0.3 s.
"$PFLEX" gpus --watch 0.3 --hz 10 > "$T/watch.csv"
python3 - "$T/watch.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert len(rows) == 8, len(rows)
assert sorted({r["gpu"] for r in rows}) == ["0", "1"], rows
assert all(float(r["power_w"]) == 650.0 and r["gpu_util"] == "97" and r["limit_w"] == "700.000" for r in rows), rows
assert all(r["throttle"] == "0x4" for r in rows), rows
assert all(r["mem_copy_util"] == "61" and r["dram_active"] == "" for r in rows), rows
PY
expect_eq "$(fake_get gpu0.set_count)" "" "--watch changed a limit"
# --profiling: NVML's GPM activities from each GPU's second sample on (GPU 0
# has GPM in the fake, GPU 1 not).
fake_set gpu0.gpm_sm 88
fake_set gpu0.gpm_tensor 41.5
fake_set gpu0.gpm_dram 55
"$PFLEX" gpus --watch 0.3 --hz 10 --profiling > "$T/watch_gpm.csv"
python3 - "$T/watch_gpm.csv" <<'PY'
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
g0 = [r for r in rows if r["gpu"] == "0"]
assert len(g0) == 4 and g0[0]["dram_active"] == "", g0
assert all((r["sm_active"], r["pipe_tensor_active"], r["dram_active"]) == ("0.8800", "0.4150", "0.5500") for r in g0[1:]), g0
assert all(r["dram_active"] == "" for r in rows if r["gpu"] == "1"), rows
PY

# Optional readings the device does not support are absent, not numbers.
fake_set gpu1.fail.energy not_supported
fake_set gpu1.fail.clock not_supported
json=$("$PFLEX" gpus --json)
python3 - "$json" <<'PY'
import json, sys
g = json.loads(sys.argv[1])
assert "energy_j" not in g[1] and "sm_clock_mhz" not in g[1] and "mem_clock_mhz" not in g[1], g[1]
assert "energy_j" in g[0] and "sm_clock_mhz" in g[0], g[0]
assert g[1]["power_w"] == 650.0, g[1]
PY
"$PFLEX" gpus | grep >/dev/null '^1 .* 650.0 .* 700.0 .* 700.0 200-700 \+- \+- ' || fail "unsupported clocks shown as -"

# A power reading the fake caps at the limit: 650 W drawn, 450 W limit -> 450 W.
fake_set gpu0.limit_mw 450000
"$PFLEX" gpus --json | python3 -c 'import json,sys; g=json.load(sys.stdin); assert g[0]["power_w"]==450.0, g[0]'

# No library: a clear error, exit 1.
set +e
msg=$(PFLEX_NVML_LIB="$T/nonexistent.so.1" "$PFLEX" gpus 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "exit status without NVML"
echo "$msg" | grep >/dev/null "cannot load NVML '$T/nonexistent.so.1'" || fail "missing-library message: $msg"

# nvmlInit failing (uninitialized) is reported with NVML's own text.
fake_set fail.init uninitialized
set +e
msg=$("$PFLEX" gpus 2>&1); rc=$?
set -e
expect_eq "$rc" 1 "exit status when nvmlInit fails"
echo "$msg" | grep >/dev/null "nvmlInit: Uninitialized" || fail "init failure message: $msg"
echo "nvml_read: ok"
