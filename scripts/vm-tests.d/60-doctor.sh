# gdrperf doctor inside the Soft-RoCE VM: it must find rxe0 as a software device, see no GPU,
# and say that GPUDirect cannot work here (exit 2), in text and JSON.

run doctor_vm 1 gdrperf doctor && expect_in doctor_vm "rxe0: software (rxe on lo)"
expect_in doctor_vm "::ffff:127.0.0.1"
expect_in doctor_vm "FAIL  rdma-devices: only software RDMA devices (rxe0)"
if run doctor_vm_json 1 gdrperf doctor --json && grep -q '"name": "rxe0"' "$OUT/doctor_vm_json.log"; then
    pass "doctor --json lists rxe0"
else
    fail "doctor --json lists rxe0" "$(head -c 300 "$OUT/doctor_vm_json.log")"
fi
