//! The inventory section of `report.html`: what the run ran on, from `inventory.json`
//! (written by `gdrperf accept` from `gdrperf_topology::identity`). Read as JSON values, so a
//! folder written by an older gdrperf, without the file or with fewer fields, still renders.

use serde_json::Value;

use crate::html_text::{cell, escape};

/// The inventory's name in an acceptance folder.
pub const FILE_NAME: &str = "inventory.json";

/// The section; says so when the folder has no inventory. `pairs_run` are the (GPU bus id,
/// NIC) pairs the summary's rows ran on: only their PCIe paths are drawn (a DGX has 72 pairs),
/// the rest are counted and stay in `inventory.json`.
pub fn section(inventory: Option<&Value>, pairs_run: &[(String, String)]) -> String {
    let mut html = String::from("<h2 id=\"inventory\">Inventory</h2>\n");
    let Some(inventory) = inventory else {
        return html
            + "<p>No inventory.json in this folder: it was written by a gdrperf that did not record one.</p>\n";
    };
    let node = &inventory["node"];
    let cuda = match (&inventory["cuda"]["version"], &inventory["cuda"]["absent"]) {
        (Value::String(version), _) => escape(version),
        (_, Value::String(reason)) => format!("absent: {}", escape(reason)),
        _ => "-".into(),
    };
    let system = &node["system"];
    let facts: [(&str, String); 9] = [
        ("host name", cell(&node["hostname"])),
        ("kernel", cell(&node["kernel"])),
        ("NVIDIA driver", cell(&node["nvidia_driver"])),
        ("CUDA (driver API)", cuda),
        (
            "rdma-core",
            format!(
                "{} <span class=\"note\">{}</span>",
                cell(&node["rdma_core"]),
                cell(&node["rdma_core_source"])
            ),
        ),
        ("system", format!("{} {}", cell(&system["vendor"]), cell(&system["product"]))),
        ("BIOS", format!("{} ({})", cell(&system["bios_version"]), cell(&system["bios_date"]))),
        ("read from", cell(&inventory["sysfs_root"])),
        (
            "gdrperf",
            format!("{} (commit {})", cell(&inventory["gdrperf_version"]), cell(&inventory["git_commit"])),
        ),
    ];
    html.push_str("<table>\n");
    for (name, value) in facts {
        html.push_str(&format!("<tr><th>{name}</th><td>{value}</td></tr>\n"));
    }
    html.push_str("</table>\n<h3>RDMA devices</h3>\n");
    html.push_str(&table(
        &["device", "kind", "board id", "firmware", "node GUID", "port GUIDs", "PCI", "PCIe link"],
        node["nics"].as_array().into_iter().flatten().map(|nic| {
            let ports: Vec<String> = nic["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|port| {
                    format!(
                        "{}: {} ({})",
                        cell(&port["number"]),
                        cell(&port["port_guid"]),
                        cell(&port["rate"])
                    )
                })
                .collect();
            vec![
                cell(&nic["name"]),
                cell(&nic["kind"]),
                cell(&nic["board_id"]),
                cell(&nic["firmware"]),
                cell(&nic["node_guid"]),
                ports.join("<br>"),
                cell(&nic["pci"]["address"]),
                link(&nic["pci"]["link"]),
            ]
        }),
    ));
    html.push_str("<h3>GPUs</h3>\n");
    let gpus: Vec<&Value> = node["gpus"].as_array().into_iter().flatten().collect();
    if gpus.is_empty() {
        html.push_str("<p>No NVIDIA GPU on the PCI bus.</p>\n");
    } else {
        html.push_str(&table(
            &["bus id", "model", "UUID", "video BIOS", "PCIe link"],
            gpus.iter().map(|gpu| {
                let uuid = match (&gpu["uuid"], &gpu["uuid_absent"]) {
                    (Value::String(uuid), _) => escape(uuid),
                    (_, Value::String(reason)) => format!("absent: {}", escape(reason)),
                    _ => "-".into(),
                };
                vec![
                    cell(&gpu["bus_id"]),
                    cell(&gpu["model"]),
                    uuid,
                    cell(&gpu["video_bios"]),
                    link(&gpu["pci"]["link"]),
                ]
            }),
        ));
    }
    let all_paths: Vec<&Value> = node["paths"].as_array().into_iter().flatten().collect();
    let paths: Vec<&Value> = all_paths
        .iter()
        .copied()
        .filter(|path| {
            pairs_run
                .iter()
                .any(|(gpu, nic)| path["gpu_bus_id"] == gpu.as_str() && path["nic"] == nic.as_str())
        })
        .collect();
    if !paths.is_empty() {
        html.push_str("<h3>PCIe paths between the GPUs and NICs that ran</h3>\n");
        if all_paths.len() > paths.len() {
            html.push_str(&format!(
                "<p class=\"note\">{} other GPU-NIC pairs are in inventory.json.</p>\n",
                all_paths.len() - paths.len()
            ));
        }
        html.push_str(&table(
            &["GPU", "NIC", "relation", "bridges (link)"],
            paths.iter().map(|path| {
                let bridges: Vec<String> = path["bridges"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|bridge| format!("{} ({})", cell(&bridge["address"]), link(&bridge["link"])))
                    .collect();
                vec![
                    cell(&path["gpu_bus_id"]),
                    cell(&path["nic"]),
                    format!("{}: {}", cell(&path["relation"]), cell(&path["meaning"])),
                    if bridges.is_empty() { "-".into() } else { bridges.join("<br>") },
                ]
            }),
        ));
    }
    html
}

/// `32.0 GT/s PCIe x16 (of 32.0 GT/s PCIe x16)`, or `-`.
fn link(link: &Value) -> String {
    if link["current_speed"].is_null() && link["current_width"].is_null() {
        return "-".into();
    }
    let text = format!(
        "{} x{} (max {} x{})",
        cell(&link["current_speed"]),
        cell(&link["current_width"]),
        cell(&link["max_speed"]),
        cell(&link["max_width"])
    );
    // A link below what both ends can do is what a reader looks for: it is marked.
    let degraded = link["current_width"].as_u64() < link["max_width"].as_u64()
        || (link["current_speed"].is_string() && link["current_speed"] != link["max_speed"]);
    if degraded {
        format!("<strong class=\"FAIL-text\">{text}</strong>")
    } else {
        text
    }
}

/// Cells are already escaped HTML.
fn table(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let mut html = String::from("<table>\n<tr>");
    for name in header {
        html.push_str(&format!("<th>{name}</th>"));
    }
    html.push_str("</tr>\n");
    for row in rows {
        html.push_str("<tr>");
        for value in row {
            html.push_str(&format!("<td>{value}</td>"));
        }
        html.push_str("</tr>\n");
    }
    html + "</table>\n"
}
