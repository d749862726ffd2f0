"""`hydroplane devices`: every Vulkan device's capability table (plain aligned text, or --json), and the reference
executor, which is always there.

Without a Vulkan loader, a driver or a device it says so in one `hydroplane: note:` line on stderr, lists the
reference executor (`--device ref`, on the CPU) and exits 0; `--json` stays one JSON document (`"devices": []`, the
reason in `"vulkan_error"`).
"""

from __future__ import annotations

import json
import sys

from hydroplane.vk.capabilities import DeviceInfo, devices
from hydroplane.vk.errors import VulkanError

REFERENCE_HINT = ("`--device ref` runs kernels on hydroplane's reference executor instead, on the CPU and with no "
                  "GPU (e.g. `hydroplane run K.spv --device ref ...`, `hydroplane gemm 256 256 256 --device ref`)")


def register(subparsers) -> None:
    p = subparsers.add_parser("devices", help="list Vulkan devices and their cooperative-matrix capabilities")
    p.add_argument("--json", action="store_true", help="print one JSON document for machines")
    p.set_defaults(func=run_devices)


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.4g} {unit}"
    return f"{nbytes} B"


def _yes(flag) -> str:
    return "yes" if flag else "no"


def device_rows(d: DeviceInfo) -> list[tuple[str, str]]:
    """(label, value) rows of one device's table."""
    rows = [
        ("device", f"#{d.index} {d.name} ({d.device_type})"),
        ("vendor", f"{d.vendor} (0x{d.vendor_id:04x}), device 0x{d.device_id:04x}"),
        ("driver", f"{d.driver_name} {d.driver_version} ({d.driver_info})"),
        ("api version", d.api_version),
        ("subgroup size", f"{d.subgroup_size} (range {d.min_subgroup_size}-{d.max_subgroup_size}, "
                          f"required size for compute: {_yes(d.required_subgroup_size_compute)})"),
        ("shared memory", _size(d.shared_memory)),
        ("workgroup",
         f"max {d.max_workgroup_invocations} invocations, size {'x'.join(map(str, d.max_workgroup_size))}"),
        ("timestamps", f"period {d.timestamp_period_ns:g} ns, {d.timestamp_valid_bits} valid bits"),
        ("memory heaps", ", ".join(f"{_size(h['size'])}{' device-local' if h['device_local'] else ''}"
                                   for h in d.memory_heaps)),
        ("number formats", ", ".join(k for k, v in d.support().items() if v) or "-"),
        ("VK_KHR_cooperative_matrix", _yes(d.cooperative_matrix_khr)),
    ]
    rows += [("  KHR shape", s.text()) for s in d.coop_khr]
    if d.coop_nv:
        rows += [("  NV shape", s.text()) for s in d.coop_nv]
    rows.append(("VK_NV_cooperative_matrix2", _yes(d.cooperative_matrix_nv2)))
    if d.cooperative_matrix_nv2:
        bits = d.features.get("cooperative_matrix2_nv", {})
        rows.append(("  NV2 features", ", ".join(k.replace("cooperativeMatrix", "") for k, v in bits.items() if v)))
        rows += [(f"  NV2 {k.replace('cooperativeMatrix', '')}", str(v)) for k, v in d.coop_nv2_properties.items()]
        rows += [("  NV2 flexible", s.text()) for s in d.coop_nv2_flexible]
    rows.append(("VK_EXT_cooperative_matrix_maintenance1", _yes(d.cooperative_matrix_ext)))
    if d.cooperative_matrix_ext:
        bits = d.features.get("cooperative_matrix_maintenance1_ext", {})
        rows.append(("  EXT features", ", ".join(k.replace("cooperativeMatrix", "") for k, v in bits.items() if v)))
        rows += [("  EXT properties2", s.text()) for s in d.coop_ext]
    rows.append(("pipeline statistics", _yes(d.pipeline_statistics)))
    return rows


def render_table(infos: list[DeviceInfo]) -> str:
    """Plain text: one block per device, labels padded to one column."""
    blocks = []
    for d in infos:
        rows = device_rows(d)
        width = max(len(label) for label, _ in rows)
        blocks.append("\n".join(f"{label.ljust(width)}  {value}" for label, value in rows))
    return "\n\n".join(blocks) if blocks else f"no Vulkan devices; {REFERENCE_HINT}"


# The reference executor as the listing shows it (it runs every kernel and op: device="ref", --device ref)
REFERENCE = {"device": "ref", "name": "hydroplane reference executor (CPU, NumPy)",
             "use": "device=\"ref\" in Python, --device ref on the command line",
             "cooperative_matrices": "any shape and type of the KHR, NV and NV2 extensions (up to 4096 per side)"}


def reference_block() -> str:
    width = max(len(label) for label in REFERENCE)
    return "\n".join(f"{label.ljust(width)}  {value}" for label, value in REFERENCE.items())


def run_devices(args) -> int:
    error = None
    try:
        infos = devices()
    except VulkanError as err:  # no loader, no driver (VK_ERROR_INCOMPATIBLE_DRIVER), no instance
        infos, error = [], str(err)
        print(f"hydroplane: note: no Vulkan device ({err}); {REFERENCE_HINT}", file=sys.stderr, flush=True)
    if args.json:
        json.dump({"devices": [d.to_dict() for d in infos], "reference": REFERENCE, "vulkan_error": error},
                  sys.stdout, indent=2)
        sys.stdout.write("\n")
    else:
        print((render_table(infos) + "\n\n" if infos or error is None else "") + reference_block())
    return 0
