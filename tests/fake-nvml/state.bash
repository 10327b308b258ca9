# The fake NVML's state file (tests/fake-nvml/fake_nvml.c reads it): sourced
# by the integration tests (tests/integration/nvml_common.bash) and the agent
# benchmark (bench/bench_agent.sh), so both start from the same GPUs.

# fake_nvml_write_state FILE N [NAME]: N H200-like GPUs at their default
# 700 W limit, range 200-700 W, drawing 650 W; UUIDs GPU-NAME-...-0000000000i
# (NAME default "fake").
fake_nvml_write_state() {
  local file=$1 n=$2 name=${3:-fake} i
  : > "$file"
  for ((i = 0; i < n; i++)); do
    cat >> "$file" <<EOS
gpu$i.name=NVIDIA H200
gpu$i.uuid=GPU-$name-0000-0000-0000-00000000000$i
gpu$i.pci=00000000:1$i:00.0
gpu$i.power_mw=650000
gpu$i.energy_mj=123456789
gpu$i.limit_mw=700000
gpu$i.default_mw=700000
gpu$i.min_mw=200000
gpu$i.max_mw=700000
gpu$i.sm_mhz=1980
gpu$i.mem_mhz=3201
gpu$i.util_gpu=97
gpu$i.util_mem=61
gpu$i.throttle=4
gpu$i.mem_used=85899345920
gpu$i.mem_total=150323855360
EOS
  done
}
