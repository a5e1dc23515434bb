//! The simulated fabric: leaves of [`group_size`] consecutive nodes under two spines, the
//! switch map it gives the judge, and the names it gives nodes.

use crate::switch_map::SwitchMap;

/// How simulated nodes are named: `node0000...`, or by the simulated fabric ([`fabric_conf`]):
/// `su{spine}r{leaf:03}n{node in the leaf:02}` (`su0r003n07`), the scheme
/// [`crate::node_names`] reads groups from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Naming {
    pub racks: bool,
    pub nodes: usize,
}

impl Naming {
    pub fn name(self, node: usize) -> String {
        if !self.racks {
            return format!("node{node:04}");
        }
        let size = group_size(self.nodes);
        let leaf = node / size;
        let spine = usize::from(leaf >= self.nodes.div_ceil(size) / 2);
        format!("su{spine}r{leaf:03}n{:02}", node % size)
    }
}

/// The nodes of a simulated leaf: a sixteenth of the fleet, 3 to 16.
pub fn group_size(nodes: usize) -> usize {
    (nodes / 16).clamp(3, 16)
}

/// The simulated fabric's switch map, in Slurm's topology.conf format (what `--write` leaves
/// beside the job for `gdrperf fleet judge --topology`): leaves `leaf0...` of [`group_size`]
/// consecutive nodes (the last may be smaller), spines `spine0` and `spine1` over the first and
/// second half of the leaves, and `top` over both.
pub fn fabric_conf(naming: Naming) -> String {
    let nodes = naming.nodes;
    let size = group_size(nodes);
    let leaves = nodes.div_ceil(size);
    let mut text = String::from("# gdrperf fleet simulate's fabric\n");
    for leaf in 0..leaves {
        let members: Vec<String> =
            (leaf * size..((leaf + 1) * size).min(nodes)).map(|node| naming.name(node)).collect();
        text += &format!("SwitchName=leaf{leaf} Nodes={}\n", members.join(","));
    }
    let half = leaves / 2;
    for (index, range) in [(0, 0..half), (1, half..leaves)] {
        let children: Vec<String> = range.map(|leaf| format!("leaf{leaf}")).collect();
        if !children.is_empty() {
            text += &format!("SwitchName=spine{index} Switches={}\n", children.join(","));
        }
    }
    text + "SwitchName=top Switches=spine0,spine1\n"
}

/// [`fabric_conf`], read.
pub fn fabric(naming: Naming) -> SwitchMap {
    SwitchMap::parse(&fabric_conf(naming)).expect("the simulated fabric's map reads")
}

/// The nodes of `spine0` of [`fabric`]: the first half of the leaves.
pub(super) fn first_half(nodes: usize) -> Vec<usize> {
    let size = group_size(nodes);
    (0..(nodes.div_ceil(size) / 2 * size).min(nodes)).collect()
}
