//! Groups of nodes from their names, where no switch map is given: a fleet whose nodes are named
//! by rack or leaf (`r03n07`, `gpu-a12-03`, `node-rack2-14`, `su1-r03-n07`; Slurm's hostlists
//! `r[01-16]n[01-32]` expand to such names) tells its groups in the names, and they are tested
//! as a switch map's are ([`crate::switch_map`]).
//!
//! The rule, conservative: a name is split into runs of digits and the text around them. Every
//! node name of the rows must have the same number of digit runs, two or more, the same text
//! after the last run (`-ib`, or nothing) and the same text between the last two (the `n` of
//! `r03n07`): the last run numbers a node within its group, and what comes before it is the
//! group (`r03`, `gpu-a12`, `node-rack2`). A group level is kept when it has two groups or more,
//! at most half as many groups as nodes, and two or more groups of two nodes or more. Each run
//! before that gives a level above (`su1` over `su1-r03`), kept where it has two groups or more;
//! a group of it is a switch over two or more groups of the level below. Anything else gives no
//! groups: names with one number (`node[001-128]`, `gpu0703`: where a rack starts, or whether
//! some digits are a rack, is not in the name), names of several schemes (one `login1` among
//! `r03n07`s), groups of one node each.
//!
//! What it cannot tell: whether the names follow the cabling. A fleet recabled but not renamed
//! gives groups that are not switches; a slow switch whose nodes are not one name group is then
//! not named as a group here (it still can be inferred from the pair matrix among named nodes).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;

use crate::switch_map::{GroupOrigin, Switch, SwitchMap};

/// The digit runs of `name`, as byte ranges.
fn digit_runs(name: &str) -> Vec<Range<usize>> {
    let bytes = name.as_bytes();
    let mut runs = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at].is_ascii_digit() {
            let start = at;
            while at < bytes.len() && bytes[at].is_ascii_digit() {
                at += 1;
            }
            runs.push(start..at);
        } else {
            at += 1;
        }
    }
    runs
}

/// The groups `nodes` (the rows' node names) give by their names, as a switch map (origin
/// [`GroupOrigin::NodeNames`]); `None` where the names do not clearly give groups (module
/// documentation).
pub fn groups_from_names(nodes: &[String]) -> Option<SwitchMap> {
    if nodes.len() < 4 {
        return None;
    }
    let runs: Vec<Vec<Range<usize>>> = nodes.iter().map(|name| digit_runs(name)).collect();
    let count = runs[0].len();
    if count < 2 || runs.iter().any(|list| list.len() != count) {
        return None;
    }
    // The same text after the last run, and between the last two, in every name.
    let tail = |index: usize| &nodes[index][runs[index][count - 1].end..];
    let between = |index: usize| &nodes[index][runs[index][count - 2].end..runs[index][count - 1].start];
    if (1..nodes.len()).any(|index| tail(index) != tail(0) || between(index) != between(0)) {
        return None;
    }
    // Per level (0: the leaves), each node's group: the name up to the end of that run.
    let key = |index: usize, level: usize| nodes[index][..runs[index][count - 2 - level].end].to_string();
    let mut switches: Vec<Switch> = Vec::new();
    let leaves: BTreeMap<String, BTreeSet<String>> = grouped(nodes, |index| key(index, 0));
    let paired = leaves.values().filter(|members| members.len() >= 2).count();
    if leaves.len() < 2 || 2 * leaves.len() > nodes.len() || paired < 2 {
        return None;
    }
    for (name, members) in &leaves {
        if members.len() >= 2 {
            switches.push(Switch { name: name.clone(), nodes: members.clone(), level: 0 });
        }
    }
    for level in 1..count - 1 {
        let groups = grouped(nodes, |index| key(index, level));
        if groups.len() < 2 {
            break;
        }
        let mut kept = 0;
        for (name, members) in groups {
            let below: BTreeSet<String> = (0..nodes.len())
                .filter(|&index| members.contains(&nodes[index]))
                .map(|index| key(index, level - 1))
                .collect();
            if below.len() >= 2 {
                switches.push(Switch { name, nodes: members, level });
                kept += 1;
            }
        }
        if kept == 0 {
            break;
        }
    }
    Some(SwitchMap { switches, origin: GroupOrigin::NodeNames })
}

/// The nodes by `key`, each group's members sorted.
fn grouped(nodes: &[String], key: impl Fn(usize) -> String) -> BTreeMap<String, BTreeSet<String>> {
    let mut groups: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (index, node) in nodes.iter().enumerate() {
        groups.entry(key(index)).or_default().insert(node.clone());
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[String]) -> Option<Vec<(String, usize, usize)>> {
        groups_from_names(list).map(|map| {
            assert_eq!(map.origin, GroupOrigin::NodeNames);
            map.switches
                .iter()
                .map(|switch| (switch.name.clone(), switch.level, switch.nodes.len()))
                .collect()
        })
    }

    fn expand(list: &str) -> Vec<String> {
        gdrperf_cluster::hostlist::expand(list).unwrap()
    }

    #[test]
    fn rack_and_node_numbers_give_one_group_a_rack() {
        // Slurm's hostlist r[01-04]n[01-16]: four racks of sixteen.
        let groups = names(&expand("r[01-04]n[01-16]")).unwrap();
        assert_eq!(
            groups,
            [("r01", 0, 16), ("r02", 0, 16), ("r03", 0, 16), ("r04", 0, 16)].map(|(name, level, nodes)| (
                name.to_string(),
                level,
                nodes
            ))
        );
        // A letter in the rack's part, dashes: gpu-a12-03.
        let groups = names(&expand("gpu-a[11-12]-[01-08],gpu-b[11-12]-[01-08]")).unwrap();
        let leaves: Vec<&str> = groups.iter().map(|(name, _, _)| name.as_str()).collect();
        assert_eq!(leaves, ["gpu-a11", "gpu-a12", "gpu-b11", "gpu-b12"]);
        // node-rack2-14: the text around the numbers is kept whole.
        let groups = names(&expand("node-rack[1-3]-[1-12]")).unwrap();
        assert_eq!(groups[2], ("node-rack3".to_string(), 0, 12));
        // A suffix every name shares (the RDMA interface's name) is not a number of its own.
        let groups = names(&expand("r[1-2]n[01-04]-ib")).unwrap();
        assert_eq!(groups.len(), 2);
        // A job on a part of the fleet: the racks it touched, a rack of one node not tested.
        let groups = names(&expand("r01n[05-16],r02n[01-03],r03n07")).unwrap();
        assert_eq!(groups, [("r01".to_string(), 0, 12), ("r02".to_string(), 0, 3)]);
    }

    #[test]
    fn a_number_before_the_rack_gives_a_level_above() {
        // Scalable unit, rack, node: su0 over r01-r02, su1 over r03-r04.
        let mut list = expand("su0-r[01-02]-n[01-04]");
        list.extend(expand("su1-r[03-04]-n[01-04]"));
        let groups = names(&list).unwrap();
        assert_eq!(
            groups,
            [
                ("su0-r01", 0, 4),
                ("su0-r02", 0, 4),
                ("su1-r03", 0, 4),
                ("su1-r04", 0, 4),
                ("su0", 1, 8),
                ("su1", 1, 8)
            ]
            .map(|(name, level, nodes)| (name.to_string(), level, nodes))
        );
        // A constant number before the rack (a model) is one group of everything: no level.
        let groups = names(&expand("dgx-h100-r[1-2]n[1-4]")).unwrap();
        assert_eq!(groups.iter().map(|group| group.1).max(), Some(0));
    }

    #[test]
    fn names_that_do_not_clearly_give_groups_give_none() {
        // One number: where a rack starts is not in the name.
        assert_eq!(names(&expand("node[001-128]")), None);
        assert_eq!(names(&expand("gpu[0701-0716]")), None);
        // A model number and a node number: one group of all.
        assert_eq!(names(&expand("dgx-h100-[001-016]")), None);
        // One node whose name follows no scheme.
        let mut list = expand("r[01-02]n[01-08]");
        list.push("login1".into());
        assert_eq!(names(&list), None);
        // Two schemes of two numbers: the text between them differs.
        let mut list = expand("r01n[01-04]");
        list.extend(expand("r02x[01-04]"));
        assert_eq!(names(&list), None);
        // Groups of one node each (the last number is the same everywhere: an interface).
        assert_eq!(names(&expand("node[1-8]-ib0")), None);
        // Pairs at most half the time: 8 nodes, 5 groups.
        assert_eq!(names(&expand("r1n[1-4],r[2-5]n1")), None);
        // Too few nodes to tell anything.
        assert_eq!(names(&expand("r1n[1-2],r2n1")), None);
    }
}
