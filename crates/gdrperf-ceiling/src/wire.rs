//! What a port carries of payload: its data rate, less the headers of every packet at the active
//! MTU. The formulas and their sources are in docs/methodology.md ("Path ceilings").
//!
//! **Data rate.** sysfs `ports/N/rate` ("400 Gb/sec (4X NDR)") is the kernel's speed × width.
//! For Ethernet (RoCE) it is the MAC rate, already net of the PHY's encoding. For InfiniBand
//! it is the signalling rate for SDR/DDR/QDR (8b/10b) and FDR (64b/66b), and the data rate for
//! FDR10, EDR, HDR, NDR and XDR: [`infiniband_lane_data_gbps`] holds the data rate of a lane per
//! speed (IBTA Vol. 2, physical layer), so a "40 Gb/sec (4X QDR)" port carries 32 Gb/s.
//!
//! **Headers.** Every packet of an RC RDMA WRITE or SEND carries, besides its payload (at most
//! the active MTU):
//! - InfiniBand: LRH 8 + BTH 12 + ICRC 4 + VCRC 2 = 26 bytes (IBTA Vol. 1, 5.2 and 7.7-7.8);
//!   the first packet of a WRITE or READ adds RETH 16 (9.3.3). No GRH within one subnet.
//! - RoCE v2 over IPv4: Ethernet preamble and start delimiter 8 + MAC header 14 + FCS 4 +
//!   inter-frame gap 12 (IEEE 802.3 clause 3 and 4.4.2) + IPv4 20 + UDP 8 + BTH 12 + ICRC 4 =
//!   82 bytes (IBTA Annex A17); IPv6 adds 20. A VLAN tag (4) is not counted: sysfs does not say.
//!
//! Not counted, because no fixed figure exists: InfiniBand flow-control packets and link-layer
//! symbols, ACKs (they travel the other way), Ethernet pause frames.

use serde::{Deserialize, Serialize};

/// The link layer of a port, as sysfs `link_layer` words it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkLayer {
    InfiniBand,
    /// RoCE v2 (the only RoCE version gdrperf uses); IPv4 unless the GID says IPv6.
    Ethernet,
}

impl LinkLayer {
    /// From sysfs's word.
    pub fn from_sysfs(text: &str) -> Option<LinkLayer> {
        match text.trim() {
            "InfiniBand" => Some(LinkLayer::InfiniBand),
            "Ethernet" => Some(LinkLayer::Ethernet),
            _ => None,
        }
    }
}

/// InfiniBand per-packet header bytes: LRH 8, BTH 12, ICRC 4, VCRC 2 (IBTA Vol. 1).
pub const INFINIBAND_PACKET_HEADER_BYTES: u64 = 8 + 12 + 4 + 2;
/// RoCE v2 over IPv4 per-frame bytes: preamble+SFD 8, MAC 14, FCS 4, IFG 12, IPv4 20, UDP 8,
/// BTH 12, ICRC 4 (IEEE 802.3; IBTA Annex A17).
pub const ROCE_V2_IPV4_PACKET_HEADER_BYTES: u64 = 8 + 14 + 4 + 12 + 20 + 8 + 12 + 4;
/// RDMA Extended Transport Header, on the first packet of a WRITE or READ (IBTA Vol. 1, 9.3.3).
pub const RETH_BYTES: u64 = 16;

/// The data rate of one InfiniBand lane in Gb/s, by the speed's name in sysfs's rate text.
/// SDR/DDR/QDR use 8b/10b on 2.5/5/10 Gbaud; FDR 64b/66b on 14.0625 Gbaud; FDR10 64b/66b on
/// 10.3125 Gbaud; EDR 25, HDR 50, NDR 100, XDR 200 (IBTA Vol. 2 and its roadmap's data rates).
pub fn infiniband_lane_data_gbps(speed: &str) -> Option<f64> {
    Some(match speed {
        "SDR" => 2.0,
        "DDR" => 4.0,
        "QDR" => 8.0,
        "FDR10" => 10.0,
        "FDR" => 14.0625 * 64.0 / 66.0,
        "EDR" => 25.0,
        "HDR" => 50.0,
        "NDR" => 100.0,
        "XDR" => 200.0,
        _ => return None,
    })
}

/// The data rate of a port in Gb/s from its sysfs rate text and link layer: "400 Gb/sec (4X
/// NDR)" -> 400 on either layer; "40 Gb/sec (4X QDR)" -> 32 on InfiniBand (8b/10b).
pub fn port_data_gbps(rate: &str, link_layer: LinkLayer) -> Option<f64> {
    let nominal: f64 = rate.split_whitespace().next()?.parse().ok()?;
    if link_layer == LinkLayer::Ethernet {
        return Some(nominal);
    }
    let inside = rate.split_once('(').map(|(_, rest)| rest.trim_end_matches(')'));
    let mut words = inside.into_iter().flat_map(str::split_whitespace);
    let lanes = words.next().and_then(|width| width.strip_suffix('X')).and_then(|n| n.parse::<f64>().ok());
    match (lanes, words.next().and_then(infiniband_lane_data_gbps)) {
        (Some(lanes), Some(lane)) => Some(lanes * lane),
        // A rate without a speed name: take the number as sysfs gives it.
        _ => Some(nominal),
    }
}

/// Per-packet header bytes of a link layer.
pub fn packet_header_bytes(link_layer: LinkLayer) -> u64 {
    match link_layer {
        LinkLayer::InfiniBand => INFINIBAND_PACKET_HEADER_BYTES,
        LinkLayer::Ethernet => ROCE_V2_IPV4_PACKET_HEADER_BYTES,
    }
}

/// The fraction of the wire's bytes that is payload for messages of `message_bytes` at `mtu`:
/// each message takes ceil(bytes / MTU) packets, each with its headers, plus a RETH on the first
/// when `with_reth` (WRITE, READ).
pub fn wire_efficiency(message_bytes: u64, mtu: u32, link_layer: LinkLayer, with_reth: bool) -> f64 {
    let message_bytes = message_bytes.max(1);
    let packets = message_bytes.div_ceil(u64::from(mtu.max(1)));
    let overhead = packets * packet_header_bytes(link_layer) + if with_reth { RETH_BYTES } else { 0 };
    message_bytes as f64 / (message_bytes + overhead) as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn infiniband_rates_are_data_rates_and_ethernet_rates_are_taken_as_given() {
        assert_eq!(port_data_gbps("400 Gb/sec (4X NDR)", LinkLayer::InfiniBand), Some(400.0));
        assert_eq!(port_data_gbps("40 Gb/sec (4X QDR)", LinkLayer::InfiniBand), Some(32.0));
        let fdr = port_data_gbps("56 Gb/sec (4X FDR)", LinkLayer::InfiniBand).unwrap();
        assert!((fdr - 54.545_454).abs() < 1e-3, "{fdr}");
        assert_eq!(port_data_gbps("100 Gb/sec (4X EDR)", LinkLayer::Ethernet), Some(100.0));
        assert_eq!(port_data_gbps("25 Gb/sec", LinkLayer::InfiniBand), Some(25.0));
        assert_eq!(port_data_gbps("fast", LinkLayer::Ethernet), None);
    }

    #[test]
    fn header_sizes_are_the_sums_of_the_specs_fields() {
        assert_eq!(INFINIBAND_PACKET_HEADER_BYTES, 26);
        assert_eq!(ROCE_V2_IPV4_PACKET_HEADER_BYTES, 82);
    }

    #[test]
    fn a_64k_write_at_mtu_4096_pays_16_headers_and_one_reth() {
        // 16 packets x 26 bytes + 16 = 432 bytes of headers on 65536 of payload.
        let infiniband = wire_efficiency(65536, 4096, LinkLayer::InfiniBand, true);
        assert!((infiniband - 65536.0 / 65968.0).abs() < 1e-12);
        // RoCE at MTU 1024: 64 frames x 82 bytes, no RETH (a SEND).
        let roce = wire_efficiency(65536, 1024, LinkLayer::Ethernet, false);
        assert!((roce - 65536.0 / (65536.0 + 64.0 * 82.0)).abs() < 1e-12);
        // A 2-byte SEND is one packet: 2 / 28.
        assert!((wire_efficiency(2, 4096, LinkLayer::InfiniBand, false) - 2.0 / 28.0).abs() < 1e-12);
    }
}
