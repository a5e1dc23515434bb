//! The columns every row type shares, each group declared and filled once: where the row ran
//! ([`PlaceColumns`]) and this side's CPU and GPU placement with the NIC counters that moved
//! during the size ([`MachineColumns`]) in every row; the path's ceiling
//! ([`CeilingColumns`](crate::output::ceiling_columns::CeilingColumns)) in the bandwidth rows.
//! The row types embed these groups and fill them from the [`RowContext`] with
//! [`PlaceColumns::of`] and [`MachineColumns::of`].
//!
//! A row is still written as one flat record in its published order, because that is what a
//! CSV line is: the csv crate takes no nested struct, and `#[serde(flatten)]` turns the row
//! into a map, which it refuses too. So each row type lists its cells, (column, value) pairs in
//! order, through `Columns`, and serialises that list as one struct (`serialize_cells`),
//! which writes exactly what `#[derive(Serialize)]` on the flat struct wrote. The `columns!`
//! macro declares a struct and its list together, so each field is named once: `column` fields
//! are one column each, `columns` fields a nested group's columns in place, `hidden` fields
//! none.

use serde::ser::{Serialize, SerializeStruct, Serializer};

use crate::node::nic_counters::NicColumns;
use crate::output::context::RowContext;

/// One cell of a row: its column's name and its value.
pub(crate) type Cell<'a> = (&'static str, Value<'a>);

/// A cell's value: the types the rows' columns hold, each serialised as itself.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Value<'a> {
    Text(&'a str),
    Count(u64),
    Small(u32),
    Figure(f64),
    Flag(bool),
    MaybeCount(Option<u64>),
    MaybeSmall(Option<u32>),
    MaybeFigure(Option<f64>),
}

impl Serialize for Value<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            Value::Text(value) => value.serialize(serializer),
            Value::Count(value) => value.serialize(serializer),
            Value::Small(value) => value.serialize(serializer),
            Value::Figure(value) => value.serialize(serializer),
            Value::Flag(value) => value.serialize(serializer),
            Value::MaybeCount(value) => value.serialize(serializer),
            Value::MaybeSmall(value) => value.serialize(serializer),
            Value::MaybeFigure(value) => value.serialize(serializer),
        }
    }
}

macro_rules! value_from {
    ($($type:ty => $variant:ident),* $(,)?) => {
        $(impl<'a> From<&'a $type> for Value<'a> {
            fn from(value: &'a $type) -> Value<'a> {
                Value::$variant(*value)
            }
        })*
    };
}

value_from!(
    u64 => Count, u32 => Small, f64 => Figure, bool => Flag,
    Option<u64> => MaybeCount, Option<u32> => MaybeSmall, Option<f64> => MaybeFigure,
);

impl<'a> From<&'a String> for Value<'a> {
    fn from(value: &'a String) -> Value<'a> {
        Value::Text(value)
    }
}

/// A row, or a group of a row's columns, as its cells in published order.
pub(crate) trait Columns {
    fn cells(&self) -> Vec<Cell<'_>>;
}

/// `cells` as one flat struct named `name`: what the exporters (csv, serde_json) write.
pub(crate) fn serialize_cells<S: Serializer>(
    serializer: S,
    name: &'static str,
    cells: &[Cell<'_>],
) -> Result<S::Ok, S::Error> {
    let mut record = serializer.serialize_struct(name, cells.len())?;
    for (column, value) in cells {
        record.serialize_field(column, value)?;
    }
    record.end()
}

/// Declares a struct whose fields, in order, are its columns (see the module's documentation),
/// with its [`Columns`] list and a `Serialize` that writes that list.
macro_rules! columns {
    (
        $(#[$meta:meta])*
        pub struct $name:ident {
            $( $(#[$field_meta:meta])* $kind:ident $field:ident: $type:ty, )*
        }
    ) => {
        $(#[$meta])*
        pub struct $name {
            $( $(#[$field_meta])* pub $field: $type, )*
        }

        impl $crate::output::row_columns::Columns for $name {
            fn cells(&self) -> Vec<$crate::output::row_columns::Cell<'_>> {
                [$( $crate::output::row_columns::cells!($kind, self.$field, $field) ),*].concat()
            }
        }

        impl ::serde::Serialize for $name {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                let cells = $crate::output::row_columns::Columns::cells(self);
                $crate::output::row_columns::serialize_cells(serializer, stringify!($name), &cells)
            }
        }
    };
}

/// One field's cells in `columns!`, by its kind: `column`, `columns` or `hidden`.
macro_rules! cells {
    (column, $value:expr, $field:ident) => {
        vec![(stringify!($field), (&$value).into())]
    };
    (columns, $value:expr, $field:ident) => {
        $crate::output::row_columns::Columns::cells(&$value)
    };
    (hidden, $value:expr, $field:ident) => {
        Vec::new()
    };
}

pub(crate) use {cells, columns};

columns! {
    /// Where a row ran: both sides' hosts, RDMA devices, memories and GPUs.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct PlaceColumns {
        column host: String,
        column peer_host: String,
        column device: String,
        column peer_device: String,
        /// The memory kinds as text: an `all` row joins the lanes' ("cuda+host").
        column mem_local: String,
        column mem_remote: String,
        column gpu_local: String,
        column gpu_remote: String,
    }
}

impl PlaceColumns {
    pub fn of(context: &RowContext) -> PlaceColumns {
        PlaceColumns {
            host: context.host.clone(),
            peer_host: context.peer_host.clone(),
            device: context.device.clone(),
            peer_device: context.peer_device.clone(),
            mem_local: context.mem_local.to_string(),
            mem_remote: context.mem_remote.to_string(),
            gpu_local: context.gpu_local.clone(),
            gpu_remote: context.gpu_remote.clone(),
        }
    }

    /// The places of `--concurrent` lanes in one `all` row: the hosts of the first lane (the
    /// lanes run between the same two hosts), the rest joined ("mlx5_0+mlx5_1"). `None`
    /// without lanes.
    pub fn aggregate<'a>(lanes: impl Iterator<Item = &'a PlaceColumns> + Clone) -> Option<PlaceColumns> {
        let first = lanes.clone().next()?;
        let join = |pick: fn(&PlaceColumns) -> &str| join_distinct(lanes.clone().map(pick));
        Some(PlaceColumns {
            device: join(|place| &place.device),
            peer_device: join(|place| &place.peer_device),
            mem_local: join(|place| &place.mem_local),
            mem_remote: join(|place| &place.mem_remote),
            gpu_local: join(|place| &place.gpu_local),
            gpu_remote: join(|place| &place.gpu_remote),
            ..first.clone()
        })
    }
}

columns! {
    /// Where this side's measuring thread ran and what its NIC port counted during the size.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct MachineColumns {
        /// The CPUs the thread was pinned to ("0-15", "1"; "none": unpinned).
        column cpu: String,
        /// Their NUMA node (empty when unknown or when the CPUs span nodes).
        column numa_node: Option<u32>,
        /// The PCI bus id of `gpu_local`, with domain (0000:19:00.0): `gpu_local` is a CUDA
        /// index, whose order depends on CUDA_DEVICE_ORDER and CUDA_VISIBLE_DEVICES. Empty for
        /// host memory.
        column gpu_local_bus_id: String,
        /// NIC port counters that moved during this size (see `gdrperf::node::nic_counters`):
        /// compact sums, all error counters together (`nic_errors`, what --max-nic-errors
        /// limits), and every moved counter as name=delta;... (`nic_counters`).
        columns nic: NicColumns,
    }
}

impl MachineColumns {
    pub fn of(context: &RowContext) -> MachineColumns {
        MachineColumns {
            cpu: context.cpu.clone(),
            numa_node: context.numa_node,
            gpu_local_bus_id: context.gpu_local_bus_id.clone(),
            nic: context.nic.clone(),
        }
    }

    /// `--concurrent` lanes in one `all` row: CPUs and bus ids joined, the NUMA node where
    /// they share one, the counters summed (the moved-counter list left empty: each lane's
    /// names its own port).
    pub fn aggregate<'a>(lanes: impl Iterator<Item = &'a MachineColumns> + Clone) -> MachineColumns {
        let sum = |pick: fn(&NicColumns) -> u64| lanes.clone().map(|lane| pick(&lane.nic)).sum();
        MachineColumns {
            cpu: join_distinct(lanes.clone().map(|lane| lane.cpu.as_str())),
            numa_node: common_node(lanes.clone().map(|lane| lane.numa_node)),
            gpu_local_bus_id: join_distinct(lanes.clone().map(|lane| lane.gpu_local_bus_id.as_str())),
            nic: NicColumns {
                nic_retransmissions: sum(|nic| nic.nic_retransmissions),
                nic_seq_errors: sum(|nic| nic.nic_seq_errors),
                nic_rnr_naks: sum(|nic| nic.nic_rnr_naks),
                nic_out_of_buffer: sum(|nic| nic.nic_out_of_buffer),
                nic_link_downed: sum(|nic| nic.nic_link_downed),
                nic_errors: sum(|nic| nic.nic_errors),
                nic_counters: String::new(),
            },
        }
    }
}

columns! {
    /// What this side's parts are, not where they sit: the NIC's node GUID (sysfs
    /// `node_guid`, changes when the card is replaced; a slot's device name does not) and the
    /// GPU's UUID (as nvidia-smi prints it; a bus id names the slot, not the card). Empty where
    /// unknown: no sysfs file, host memory, no CUDA. `gdrperf fleet judge --base` keys parts by
    /// them, so a replaced card reads as replaced.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct IdentityColumns {
        column nic_node_guid: String,
        column gpu_local_uuid: String,
    }
}

impl IdentityColumns {
    pub fn of(context: &RowContext) -> IdentityColumns {
        IdentityColumns {
            nic_node_guid: context.nic_node_guid.clone(),
            gpu_local_uuid: context.gpu_local_uuid.clone(),
        }
    }

    /// `--concurrent` lanes in one `all` row: each joined ("a+b"), as the devices are.
    pub fn aggregate<'a>(lanes: impl Iterator<Item = &'a IdentityColumns> + Clone) -> IdentityColumns {
        IdentityColumns {
            nic_node_guid: join_distinct(lanes.clone().map(|lane| lane.nic_node_guid.as_str())),
            gpu_local_uuid: join_distinct(lanes.map(|lane| lane.gpu_local_uuid.as_str())),
        }
    }
}

columns! {
    /// The QPs' quality of service: `--tclass` (the GRH's traffic class; with `-R`, `-T/--tos`) and `-S/--sl` (the
    /// service level). Empty with `-R`, where rdma_cm's route sets them.
    #[derive(Debug, Clone, Default, PartialEq)]
    pub struct QosColumns {
        column traffic_class: Option<u32>,
        column service_level: Option<u32>,
    }
}

impl QosColumns {
    pub fn of(context: &RowContext) -> QosColumns {
        QosColumns { traffic_class: context.traffic_class, service_level: context.service_level }
    }
}

/// The NIC counter columns, in the order of [`NicColumns`]'s fields (declared beside the
/// counters they sum, in `nic_counters`, which knows nothing of rows).
impl Columns for NicColumns {
    fn cells(&self) -> Vec<Cell<'_>> {
        vec![
            ("nic_retransmissions", (&self.nic_retransmissions).into()),
            ("nic_seq_errors", (&self.nic_seq_errors).into()),
            ("nic_rnr_naks", (&self.nic_rnr_naks).into()),
            ("nic_out_of_buffer", (&self.nic_out_of_buffer).into()),
            ("nic_link_downed", (&self.nic_link_downed).into()),
            ("nic_errors", (&self.nic_errors).into()),
            ("nic_counters", (&self.nic_counters).into()),
        ]
    }
}

/// The distinct values in order of first appearance, joined with '+' ("mlx5_0+mlx5_1"; "host").
pub(crate) fn join_distinct<'a>(values: impl Iterator<Item = &'a str>) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for value in values {
        if !seen.contains(&value) {
            seen.push(value);
        }
    }
    seen.join("+")
}

/// The lanes' NUMA node when they all share one, else `None`.
fn common_node(mut nodes: impl Iterator<Item = Option<u32>>) -> Option<u32> {
    let first = nodes.next()??;
    nodes.all(|node| node == Some(first)).then_some(first)
}
