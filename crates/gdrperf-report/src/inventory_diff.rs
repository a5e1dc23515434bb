//! What changed in the node between two acceptance runs: the `inventory.json` files of two
//! folders side by side. A NIC whose node GUID changed was swapped; firmware that
//! moved, a GPU with another UUID, a link that trains narrower, a kernel or driver upgrade are
//! each one line, so a regression in the numbers can be read against what was changed.
//!
//! Works on JSON values, not on the writer's types, so that folders written by different
//! gdrperf versions still compare: a fact missing on one side reads `-`.

use serde::Serialize;
use serde_json::Value;

/// One fact that differs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InventoryChange {
    /// What it is: `kernel`, `NIC mlx5_0 firmware`, `GPU 0000:1b:00.0 UUID (swapped)`.
    pub what: String,
    pub base: String,
    pub new: String,
}

/// Node-wide facts compared, as (label, JSON pointer into the inventory).
const NODE_FACTS: [(&str, &str); 10] = [
    ("host name", "/node/hostname"),
    ("kernel", "/node/kernel"),
    ("NVIDIA driver", "/node/nvidia_driver"),
    ("CUDA", "/cuda/version"),
    ("rdma-core", "/node/rdma_core"),
    ("system vendor", "/node/system/vendor"),
    ("system product", "/node/system/product"),
    ("BIOS version", "/node/system/bios_version"),
    ("BIOS date", "/node/system/bios_date"),
    ("gdrperf", "/gdrperf_version"),
];

/// Per RDMA device, keyed by its name.
const NIC_FACTS: [(&str, &str); 7] = [
    ("node GUID (NIC swapped)", "/node_guid"),
    ("board id", "/board_id"),
    ("firmware", "/firmware"),
    ("PCI address", "/pci/address"),
    ("PCIe link speed", "/pci/link/current_speed"),
    ("PCIe link width", "/pci/link/current_width"),
    ("kind", "/kind"),
];

/// Per GPU, keyed by its bus id.
const GPU_FACTS: [(&str, &str); 5] = [
    ("UUID (GPU swapped)", "/uuid"),
    ("model", "/model"),
    ("video BIOS", "/video_bios"),
    ("PCIe link speed", "/pci/link/current_speed"),
    ("PCIe link width", "/pci/link/current_width"),
];

/// Per port of a device, keyed by device name and port number.
const PORT_FACTS: [(&str, &str); 3] = [("GUID", "/port_guid"), ("rate", "/rate"), ("state", "/state")];

/// Every fact that differs between `base` and `new` (both `inventory.json` documents), node
/// facts first, then NICs and GPUs in name order, then PCIe paths.
pub fn diff(base: &Value, new: &Value) -> Vec<InventoryChange> {
    let mut changes = Vec::new();
    for (label, pointer) in NODE_FACTS {
        push_if_differs(&mut changes, label.to_string(), base.pointer(pointer), new.pointer(pointer));
    }
    keyed(&mut changes, "NIC", list(base, "/node/nics"), list(new, "/node/nics"), "name", &NIC_FACTS);
    for (name, base_nic, new_nic) in
        pairs(list(base, "/node/nics"), list(new, "/node/nics"), |nic| text(&nic["name"]))
    {
        let port_key = |port: &Value| text(&port["number"]);
        for (number, base_port, new_port) in
            pairs(list(base_nic, "/ports"), list(new_nic, "/ports"), port_key)
        {
            for (label, pointer) in PORT_FACTS {
                push_if_differs(
                    &mut changes,
                    format!("NIC {name} port {number} {label}"),
                    base_port.pointer(pointer),
                    new_port.pointer(pointer),
                );
            }
        }
    }
    keyed(&mut changes, "GPU", list(base, "/node/gpus"), list(new, "/node/gpus"), "bus_id", &GPU_FACTS);
    let path_key = |path: &Value| format!("{} - {}", text(&path["gpu_bus_id"]), text(&path["nic"]));
    for (key, base_path, new_path) in pairs(list(base, "/node/paths"), list(new, "/node/paths"), path_key) {
        push_if_differs(
            &mut changes,
            format!("PCIe path {key} relation"),
            base_path.get("relation"),
            new_path.get("relation"),
        );
        let bridges = |path: &Value| {
            list(path, "/bridges").iter().map(|bridge| text(&bridge["address"])).collect::<Vec<_>>().join(" ")
        };
        let (base_bridges, new_bridges) = (bridges(base_path), bridges(new_path));
        if base_bridges != new_bridges {
            changes.push(InventoryChange {
                what: format!("PCIe path {key} bridges"),
                base: base_bridges,
                new: new_bridges,
            });
        }
    }
    changes
}

/// The lines `gdrperf compare` prints: one per change, or one saying nothing changed.
pub fn render(changes: &[InventoryChange]) -> String {
    if changes.is_empty() {
        return "inventory: unchanged\n".into();
    }
    changes
        .iter()
        .map(|change| format!("inventory: {}: {} -> {}\n", change.what, change.base, change.new))
        .collect()
}

/// Devices present on one side only, then each shared device's facts.
fn keyed(
    changes: &mut Vec<InventoryChange>,
    kind: &str,
    base: &[Value],
    new: &[Value],
    key: &str,
    facts: &[(&str, &str)],
) {
    let name = |item: &Value| text(&item[key]);
    for item in base.iter().filter(|item| !new.iter().any(|other| name(other) == name(item))) {
        changes.push(InventoryChange {
            what: format!("{kind} {}", name(item)),
            base: "present".into(),
            new: "gone".into(),
        });
    }
    for item in new.iter().filter(|item| !base.iter().any(|other| name(other) == name(item))) {
        changes.push(InventoryChange {
            what: format!("{kind} {}", name(item)),
            base: "absent".into(),
            new: "added".into(),
        });
    }
    for (id, base_item, new_item) in pairs(base, new, name) {
        for (label, pointer) in facts {
            push_if_differs(
                changes,
                format!("{kind} {id} {label}"),
                base_item.pointer(pointer),
                new_item.pointer(pointer),
            );
        }
    }
}

/// Items present on both sides, matched by `key`, in key order.
fn pairs<'a>(
    base: &'a [Value],
    new: &'a [Value],
    key: impl Fn(&Value) -> String,
) -> Vec<(String, &'a Value, &'a Value)> {
    let mut matched: Vec<(String, &Value, &Value)> = base
        .iter()
        .filter_map(|item| {
            let id = key(item);
            new.iter().find(|other| key(other) == id).map(|other| (id, item, other))
        })
        .collect();
    matched.sort_by(|a, b| a.0.cmp(&b.0));
    matched
}

fn list<'a>(value: &'a Value, pointer: &str) -> &'a [Value] {
    value.pointer(pointer).and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default()
}

fn text(value: &Value) -> String {
    match value {
        Value::Null => "-".into(),
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

fn push_if_differs(
    changes: &mut Vec<InventoryChange>,
    what: String,
    base: Option<&Value>,
    new: Option<&Value>,
) {
    let (base, new) =
        (base.map(text).unwrap_or_else(|| "-".into()), new.map(text).unwrap_or_else(|| "-".into()));
    if base != new {
        changes.push(InventoryChange { what, base, new });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn inventory(guid: &str, firmware: &str, width: u32, uuid: &str) -> Value {
        json!({
            "node": {
                "kernel": "6.1.0-18-amd64",
                "nics": [{"name": "mlx5_0", "node_guid": guid, "firmware": firmware, "board_id": "MT_0000000838",
                          "pci": {"address": "0000:18:00.0", "link": {"current_speed": "32.0 GT/s PCIe", "current_width": width}},
                          "ports": [{"number": 1, "port_guid": guid, "rate": "400 Gb/sec (4X NDR)", "state": "ACTIVE"}]}],
                "gpus": [{"bus_id": "0000:1b:00.0", "uuid": uuid}],
                "paths": [{"gpu_bus_id": "0000:1b:00.0", "nic": "mlx5_0", "relation": "PIX", "bridges": [{"address": "0000:17:00.0"}]}],
            },
            "cuda": {"version": "12.8"},
        })
    }

    #[test]
    fn the_same_node_is_unchanged() {
        let base = inventory("a088:c218:0300:0001", "28.39.1002", 16, "GPU-1");
        assert_eq!(diff(&base, &base), []);
        assert_eq!(render(&[]), "inventory: unchanged\n");
    }

    #[test]
    fn a_swapped_nic_moved_firmware_narrow_link_and_new_gpu_are_named() {
        let base = inventory("a088:c218:0300:0001", "28.39.1002", 16, "GPU-1");
        let mut new = inventory("b8ce:f603:00aa:0002", "28.40.1000", 8, "GPU-2");
        new["node"]["kernel"] = "6.1.0-25-amd64".into();
        let lines = render(&diff(&base, &new));
        assert_eq!(
            lines,
            "inventory: kernel: 6.1.0-18-amd64 -> 6.1.0-25-amd64\n\
             inventory: NIC mlx5_0 node GUID (NIC swapped): a088:c218:0300:0001 -> b8ce:f603:00aa:0002\n\
             inventory: NIC mlx5_0 firmware: 28.39.1002 -> 28.40.1000\n\
             inventory: NIC mlx5_0 PCIe link width: 16 -> 8\n\
             inventory: NIC mlx5_0 port 1 GUID: a088:c218:0300:0001 -> b8ce:f603:00aa:0002\n\
             inventory: GPU 0000:1b:00.0 UUID (GPU swapped): GPU-1 -> GPU-2\n"
        );
    }

    #[test]
    fn devices_gone_or_added_and_a_missing_file_side_are_said() {
        let base = inventory("a088:c218:0300:0001", "28.39.1002", 16, "GPU-1");
        let mut new = base.clone();
        new["node"]["nics"][0]["name"] = "mlx5_4".into();
        new["node"]["paths"] = json!([]);
        let changes = diff(&base, &new);
        assert!(changes.contains(&InventoryChange {
            what: "NIC mlx5_0".into(),
            base: "present".into(),
            new: "gone".into()
        }));
        assert!(changes.contains(&InventoryChange {
            what: "NIC mlx5_4".into(),
            base: "absent".into(),
            new: "added".into()
        }));
        // An older folder without inventory.json compares as all facts unknown.
        let changes = diff(&Value::Null, &base);
        assert!(changes.iter().any(|change| change.what == "kernel" && change.base == "-"), "{changes:?}");
    }
}
