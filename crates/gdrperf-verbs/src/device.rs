//! Opening an RDMA device and choosing the port and GID to talk through.
//!
//! Everything an RDMA program does starts from a device context. Before touching verbs we check
//! that libibverbs can be loaded at all: sideway loads it at run time (one binary runs on any
//! rdma-core), and when it is missing every call fails with a misleading "Operation not
//! supported". We say what is really wrong instead.

use std::ffi::CStr;
use std::fmt;
use std::io;
use std::sync::Arc;

use crate::protection_domain::{Backend, ProtectionDomain};
use crate::{simulated, Result, VerbsError};
use serde::{Deserialize, Serialize};
use sideway::ibverbs::device::{DeviceInfo, DeviceList};
use sideway::ibverbs::device_context::{DeviceContext, LinkLayer as SidewayLinkLayer, PortState};

/// Fails with [`VerbsError::NoLibibverbs`] when `libibverbs.so.1` cannot be loaded.
///
/// rdma-mummy-sys dlopens the library in a constructor and silently carries on without it, so
/// we repeat the dlopen here to learn the loader's reason.
pub fn ensure_libibverbs() -> Result<()> {
    // SAFETY: dlopen with a valid C string; the handle is deliberately leaked (the library stays
    // loaded for the life of the process anyway, rdma-mummy-sys holds it too).
    let handle = unsafe { libc::dlopen(c"libibverbs.so.1".as_ptr(), libc::RTLD_LAZY | libc::RTLD_LOCAL) };
    if !handle.is_null() {
        return Ok(());
    }
    // SAFETY: dlerror returns a thread-local C string or null.
    let reason = unsafe {
        let message = libc::dlerror();
        if message.is_null() {
            "unknown dlopen error".to_string()
        } else {
            CStr::from_ptr(message).to_string_lossy().into_owned()
        }
    };
    Err(VerbsError::NoLibibverbs { reason })
}

/// Names of the RDMA devices present (`mlx5_0`, `rxe0`, ...), in the order libibverbs lists them;
/// the simulated device first where `GDRPERF_SIMULATED_NIC` asks for it (see [`crate::simulated`]).
pub fn device_names() -> Result<Vec<String>> {
    if simulated::listed() {
        let mut names = vec![simulated::DEVICE_NAME.to_string()];
        names.extend(
            ensure_libibverbs()
                .and_then(|()| device_list())
                .into_iter()
                .flat_map(|list| list.iter().map(|device| device.name()).collect::<Vec<_>>()),
        );
        return Ok(names);
    }
    ensure_libibverbs()?;
    let list = device_list()?;
    Ok(list.iter().map(|device| device.name()).collect())
}

/// libibverbs' device list. It fails (ENOSYS) rather than returning an empty list when the kernel
/// has no RDMA support loaded at all; both mean "no device" to the user.
fn device_list() -> Result<DeviceList> {
    let list = DeviceList::new().map_err(|error| {
        let errno = std::error::Error::source(&error)
            .map(|source| source.to_string())
            .unwrap_or_else(|| error.to_string());
        let detail = if std::path::Path::new("/sys/class/infiniband").exists() {
            format!("ibv_get_device_list: {errno}")
        } else {
            format!("the kernel has no RDMA devices (no /sys/class/infiniband); ibv_get_device_list: {errno}")
        };
        VerbsError::NoDevice { detail }
    })?;
    if list.is_empty() {
        return Err(VerbsError::NoDevice { detail: "libibverbs lists none".to_string() });
    }
    Ok(list)
}

/// An opened RDMA device: the context every other verbs object hangs off.
///
/// Cloning is cheap (the context is reference counted) and every queue pair, completion queue
/// and memory region keeps the context alive for as long as it lives.
#[derive(Clone)]
pub struct Device {
    name: String,
    /// `None` on the simulated NIC, which has no verbs context.
    context: Option<Arc<DeviceContext>>,
    port_count: u8,
    firmware: String,
    /// `ibv_device_attr`'s vendor and part ids: what perftest recognises a device by.
    vendor_id: u32,
    vendor_part_id: u32,
    /// RDMA READs (and atomics) one QP may have outstanding as initiator: `max_qp_rd_atom`.
    max_reads_per_qp: u32,
}

impl fmt::Debug for Device {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.debug_struct("Device").field("name", &self.name).finish()
    }
}

impl Device {
    /// Opens the named device, or the first one when `name` is `None` (perftest's default). The
    /// simulated NICs (`simulated0` to `simulated7`, [`crate::simulated::port_of`]) open by their
    /// names, and `simulated0` as the default where `GDRPERF_SIMULATED_NIC` lists it.
    pub fn open(name: Option<&str>) -> Result<Device> {
        match name {
            None if simulated::listed() => return Device::open_simulated(simulated::DEVICE_NAME),
            Some(wanted) if simulated::is_simulated(wanted) => return Device::open_simulated(wanted),
            _ => {}
        }
        ensure_libibverbs()?;
        let list = device_list()?;
        let device = match name {
            None => list
                .get(0)
                .ok_or_else(|| VerbsError::NoDevice { detail: "libibverbs lists none".to_string() })?,
            Some(wanted) => list.iter().find(|device| device.name() == wanted).ok_or_else(|| {
                VerbsError::UnknownDevice {
                    name: wanted.to_string(),
                    available: list.iter().map(|device| device.name()).collect::<Vec<_>>().join(", "),
                }
            })?,
        };
        let name = device.name();
        let context = device.open().map_err(|error| VerbsError::OpenDevice {
            device: name.clone(),
            source: io::Error::other(error),
        })?;
        let attributes = context.query_device().map_err(|error| VerbsError::QueryDevice {
            device: name.clone(),
            source: io::Error::other(error),
        })?;
        Ok(Device {
            name,
            context: Some(context),
            port_count: attributes.phys_port_cnt(),
            firmware: attributes.firmware_version(),
            vendor_id: attributes.vendor_id(),
            vendor_part_id: attributes.vendor_part_id(),
            max_reads_per_qp: attributes.max_qp_rd_atom().max(0) as u32,
        })
    }

    /// A simulated NIC (`simulated0`, `simulated1`, ...): one port each, no firmware, vendor
    /// ids 0 (perftest knows none of it).
    fn open_simulated(name: &str) -> Result<Device> {
        let settings = simulated::open()?;
        Ok(Device {
            name: name.to_string(),
            context: None,
            port_count: 1,
            firmware: settings.describe(),
            vendor_id: 0,
            vendor_part_id: 0,
            max_reads_per_qp: 16,
        })
    }

    /// Whether this is the simulated NIC: nothing it shows is a measurement of hardware.
    pub fn is_simulated(&self) -> bool {
        self.context.is_none()
    }

    /// How many RDMA READs one QP may have outstanding (`max_qp_rd_atom`): the bound of
    /// gdr-read-bw's `-o/--outs`, as perftest bounds it.
    pub fn max_reads_per_qp(&self) -> u32 {
        self.max_reads_per_qp
    }

    /// The device's name as libibverbs reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Firmware version string (empty for software devices such as rxe; on the simulated NIC,
    /// the words saying it is one).
    pub fn firmware(&self) -> &str {
        &self.firmware
    }

    /// The device's node GUID as sysfs writes it (`506b:4b03:00f1:2c3a`): the card's identity,
    /// which the device name (it stays with the slot) is not. None where sysfs has no
    /// `node_guid` or it is empty. Read from sysfs rather than `ibv_query_device`, whose
    /// `node_guid` is in network byte order, so the text is the one `ibstat` and `gdrperf
    /// doctor`'s inventory show.
    pub fn node_guid(&self) -> Option<String> {
        let path = format!("/sys/class/infiniband/{}/node_guid", self.name);
        std::fs::read_to_string(path).ok().map(|text| text.trim().to_string()).filter(|text| !text.is_empty())
    }

    /// `ibv_device_attr`'s vendor id and vendor part id (rxe: 0xffffff and 0).
    pub fn vendor_ids(&self) -> (u32, u32) {
        (self.vendor_id, self.vendor_part_id)
    }

    /// The underlying sideway context, for the other verbs wrappers; the simulated NIC has none
    /// (what needs one, rdma_cm, is refused there with this error).
    pub fn context(&self) -> Result<&Arc<DeviceContext>> {
        self.context.as_ref().ok_or(VerbsError::NotOnSimulatedNic { what: "rdma_cm (-R)" })
    }

    /// Queries `port` and checks that it exists and is ACTIVE: a benchmark on a port that is
    /// down would only time out later with a less helpful message.
    pub fn active_port(&self, port: u8) -> Result<PortInfo> {
        if port == 0 || port > self.port_count {
            return Err(VerbsError::UnknownPort {
                device: self.name.clone(),
                port,
                port_count: self.port_count,
            });
        }
        let Some(context) = &self.context else { return Ok(simulated_port(port)) };
        let attributes = context.query_port(port).map_err(|error| VerbsError::QueryPort {
            device: self.name.clone(),
            port,
            source: io::Error::other(error),
        })?;
        let state = attributes.port_state();
        if state != PortState::Active {
            return Err(VerbsError::PortDown {
                device: self.name.clone(),
                port,
                state: format!("{state:?}").to_uppercase(),
            });
        }
        let link_layer = match attributes.link_layer() {
            SidewayLinkLayer::InfiniBand => LinkLayer::InfiniBand,
            // libibverbs reports "unspecified" for old IB drivers; perftest treats it as IB.
            SidewayLinkLayer::Unspecified => LinkLayer::InfiniBand,
            SidewayLinkLayer::Ethernet => LinkLayer::Ethernet,
        };
        Ok(PortInfo {
            number: port,
            link_layer,
            active_mtu: Mtu::from_sideway(attributes.active_mtu()),
            max_mtu: Mtu::from_sideway(attributes.max_mtu()),
            lid: attributes.lid(),
            gid_table_len: attributes.gid_tbl_len().max(0) as u32,
            rate: read_port_rate(&self.name, port),
        })
    }

    /// Picks the GID to address this port by.
    ///
    /// With `requested` set, that index is checked and used. Otherwise, on RoCE, the first
    /// RoCE v2 GID holding an IPv4-mapped address (what perftest users pass with `-x` by hand),
    /// then any RoCE v2 GID, then any non-zero GID; on InfiniBand no GID at all: the LID routes.
    pub fn choose_gid(&self, port: &PortInfo, requested: Option<u32>) -> Result<Option<GidChoice>> {
        self.choose_gid_of(port, requested, false)
    }

    /// [`Device::choose_gid`], with `ipv6` preferring a RoCE v2 GID that holds an IPv6 address
    /// (not IPv4-mapped), as perftest's `--ipv6` does in `get_best_gid_index`.
    pub fn choose_gid_of(
        &self,
        port: &PortInfo,
        requested: Option<u32>,
        ipv6: bool,
    ) -> Result<Option<GidChoice>> {
        if let Some(index) = requested {
            return self.read_gid(port.number, index).map(Some);
        }
        if port.link_layer == LinkLayer::InfiniBand {
            return Ok(None);
        }
        let candidates: Vec<GidChoice> =
            (0..port.gid_table_len).filter_map(|index| self.read_gid(port.number, index).ok()).collect();
        best_gid(&candidates, ipv6)
            .map(Some)
            .ok_or_else(|| VerbsError::NoGid { device: self.name.clone(), port: port.number })
    }

    /// The entry of `port`'s GID table that holds `gid` (what rdma_cm connected from, with
    /// `-R`), if any.
    pub fn find_gid(&self, port: &PortInfo, gid: Gid) -> Option<GidChoice> {
        (0..port.gid_table_len)
            .filter_map(|index| self.read_gid(port.number, index).ok())
            .find(|choice| choice.gid == gid)
    }

    fn read_gid(&self, port: u8, index: u32) -> Result<GidChoice> {
        let bad = |reason: String| VerbsError::BadGid { device: self.name.clone(), port, index, reason };
        let Some(context) = &self.context else {
            return match index {
                0 => Ok(GidChoice { index, gid: simulated_gid(), kind: GidKind::RoceV2 }),
                _ => Err(bad("the simulated NIC has one GID, index 0".to_string())),
            };
        };
        let gid = context.query_gid(port, index).map_err(|error| bad(error.to_string()))?;
        let gid = Gid(gid.raw);
        if gid.is_zero() {
            return Err(bad("the entry is empty".to_string()));
        }
        // ibv_query_gid_type answers 1 for RoCE v2 and 0 for IB or RoCE v1 (sysfs's encoding).
        let kind = match context.query_gid_type(port, index) {
            Ok(1) => GidKind::RoceV2,
            _ => GidKind::IbOrRoceV1,
        };
        Ok(GidChoice { index, gid, kind })
    }

    /// Allocates a protection domain: the scope tying queue pairs to the memory they may touch.
    pub fn alloc_pd(&self) -> Result<Arc<ProtectionDomain>> {
        let Some(context) = &self.context else {
            // The name was checked when the device opened; port 0 is only a fallback.
            let port = simulated::port_of(&self.name).unwrap_or(0);
            return Ok(ProtectionDomain::new(Backend::Simulated(simulated::alloc_pd(port))));
        };
        let pd = context.alloc_pd().map_err(|error| VerbsError::AllocPd(io::Error::other(error)))?;
        Ok(ProtectionDomain::new(Backend::Verbs(pd)))
    }
}

/// The simulated NIC's port: active, RoCE (so the GID paths run), MTU 4096, no rate (the
/// kernel's rate text would feed path ceilings, and a simulated port has none).
fn simulated_port(number: u8) -> PortInfo {
    PortInfo {
        number,
        link_layer: LinkLayer::Ethernet,
        active_mtu: Mtu(4096),
        max_mtu: Mtu(4096),
        lid: 0,
        gid_table_len: 1,
        rate: None,
    }
}

/// The simulated NIC's one GID: `::ffff:127.0.0.1` (the process talks to itself).
fn simulated_gid() -> Gid {
    let mut raw = [0u8; 16];
    raw[10] = 0xff;
    raw[11] = 0xff;
    raw[12..].copy_from_slice(&[127, 0, 0, 1]);
    Gid(raw)
}

/// Reads the port's active rate as the kernel words it ("100 Gb/sec (4X EDR)"), if available.
/// Used for the run header and for thresholds given in percent of the port rate.
fn read_port_rate(device: &str, port: u8) -> Option<String> {
    let path = format!("/sys/class/infiniband/{device}/ports/{port}/rate");
    std::fs::read_to_string(path).ok().map(|text| text.trim().to_string())
}

/// Link layer of a port: it decides how peers address each other (LID on IB, GID on RoCE).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkLayer {
    InfiniBand,
    Ethernet,
}

impl fmt::Display for LinkLayer {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            LinkLayer::InfiniBand => "InfiniBand",
            LinkLayer::Ethernet => "Ethernet",
        })
    }
}

/// What we need to know about the port a benchmark runs on.
#[derive(Debug, Clone)]
pub struct PortInfo {
    pub number: u8,
    pub link_layer: LinkLayer,
    pub active_mtu: Mtu,
    /// The largest MTU the port supports: an active MTU below it is a cause of a short row.
    pub max_mtu: Mtu,
    pub lid: u16,
    pub gid_table_len: u32,
    /// The kernel's words for the active rate, e.g. "100 Gb/sec (4X EDR)".
    pub rate: Option<String>,
}

/// Path MTU in bytes, one of the five values InfiniBand defines.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Mtu(u16);

impl Mtu {
    /// Accepts 256, 512, 1024, 2048 or 4096.
    pub fn from_bytes(bytes: u32) -> Option<Mtu> {
        matches!(bytes, 256 | 512 | 1024 | 2048 | 4096).then_some(Mtu(bytes as u16))
    }

    pub fn bytes(self) -> u32 {
        u32::from(self.0)
    }

    fn from_sideway(mtu: sideway::ibverbs::device_context::Mtu) -> Mtu {
        use sideway::ibverbs::device_context::Mtu as S;
        Mtu(match mtu {
            S::Mtu256 => 256,
            S::Mtu512 => 512,
            S::Mtu1024 => 1024,
            S::Mtu2048 => 2048,
            S::Mtu4096 => 4096,
        })
    }

    pub(crate) fn to_sideway(self) -> sideway::ibverbs::device_context::Mtu {
        use sideway::ibverbs::device_context::Mtu as S;
        match self.0 {
            256 => S::Mtu256,
            512 => S::Mtu512,
            1024 => S::Mtu1024,
            2048 => S::Mtu2048,
            _ => S::Mtu4096,
        }
    }
}

impl fmt::Display for Mtu {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}", self.0)
    }
}

/// A 128-bit GID, shown as an IPv6 address (RoCE GIDs are IP addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Gid(pub [u8; 16]);

impl Gid {
    pub fn is_zero(&self) -> bool {
        self.0.iter().all(|byte| *byte == 0)
    }

    /// `::ffff:a.b.c.d`: the GID RoCE v2 derives from an IPv4 address.
    pub fn is_ipv4_mapped(&self) -> bool {
        self.0[..10].iter().all(|byte| *byte == 0) && self.0[10] == 0xff && self.0[11] == 0xff
    }
}

impl fmt::Display for Gid {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let address = std::net::Ipv6Addr::from(self.0);
        match address.to_ipv4_mapped() {
            Some(v4) => write!(formatter, "::ffff:{v4}"),
            None => write!(formatter, "{address}"),
        }
    }
}

/// RoCE v2 GIDs are routable (UDP/IP); IB and RoCE v1 GIDs are not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum GidKind {
    IbOrRoceV1,
    RoceV2,
}

/// The GID a RoCE port is addressed by, of `candidates` (its non-empty entries): a RoCE v2 GID
/// of the family asked for (IPv4-mapped, or with `ipv6` an IPv6 one, a global address before a
/// link-local one), then any RoCE v2 GID, then the first.
fn best_gid(candidates: &[GidChoice], ipv6: bool) -> Option<GidChoice> {
    let v2 = |choice: &&GidChoice| choice.kind == GidKind::RoceV2;
    let link_local = |choice: &GidChoice| choice.gid.0[0] == 0xfe && choice.gid.0[1] & 0xc0 == 0x80;
    let family: Vec<&GidChoice> =
        candidates.iter().filter(v2).filter(|choice| choice.gid.is_ipv4_mapped() != ipv6).collect();
    family
        .iter()
        .find(|choice| !link_local(choice))
        .or_else(|| family.first())
        .copied()
        .or_else(|| candidates.iter().find(v2))
        .or_else(|| candidates.first())
        .copied()
}

/// A GID table entry chosen for a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct GidChoice {
    pub index: u32,
    pub gid: Gid,
    pub kind: GidKind,
}

impl fmt::Display for GidChoice {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            GidKind::RoceV2 => "RoCE v2",
            GidKind::IbOrRoceV1 => "IB/RoCE v1",
        };
        write!(formatter, "{} ({}, {})", self.index, self.gid, kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv4_mapped_gid_is_recognised_and_printed() {
        let mut raw = [0u8; 16];
        raw[10] = 0xff;
        raw[11] = 0xff;
        raw[12..].copy_from_slice(&[127, 0, 0, 1]);
        let gid = Gid(raw);
        assert!(gid.is_ipv4_mapped());
        assert_eq!(gid.to_string(), "::ffff:127.0.0.1");
        let link_local = Gid(std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 1, 2, 3, 4).octets());
        assert!(!link_local.is_ipv4_mapped());
        assert_eq!(link_local.to_string(), "fe80::1:2:3:4");
    }

    #[test]
    fn ipv6_prefers_an_ipv6_gid_and_the_default_an_ipv4_mapped_one() {
        let entry = |index: u32, address: std::net::Ipv6Addr, kind: GidKind| GidChoice {
            index,
            gid: Gid(address.octets()),
            kind,
        };
        let v4 = std::net::Ipv4Addr::new(192, 0, 2, 10).to_ipv6_mapped();
        let link_local = std::net::Ipv6Addr::new(0xfe80, 0, 0, 0, 1, 2, 3, 4);
        let global = std::net::Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1);
        let table = [
            entry(0, link_local, GidKind::IbOrRoceV1),
            entry(1, link_local, GidKind::RoceV2),
            entry(2, v4, GidKind::IbOrRoceV1),
            entry(3, v4, GidKind::RoceV2),
            entry(5, global, GidKind::RoceV2),
        ];
        assert_eq!(best_gid(&table, false).map(|choice| choice.index), Some(3));
        assert_eq!(best_gid(&table, true).map(|choice| choice.index), Some(5), "global before link-local");
        assert_eq!(best_gid(&table[..4], true).map(|choice| choice.index), Some(1), "a link-local IPv6 GID");
        assert_eq!(
            best_gid(&table[..1], true).map(|choice| choice.index),
            Some(0),
            "nothing of either: the first"
        );
        assert_eq!(best_gid(&[], false), None);
    }

    #[test]
    fn mtu_accepts_only_infiniband_values() {
        assert_eq!(Mtu::from_bytes(4096).map(Mtu::bytes), Some(4096));
        assert_eq!(Mtu::from_bytes(1500), None);
        assert_eq!(Mtu::from_bytes(0), None);
    }
}
