//! The ceiling of several lanes at once (`--concurrent`): their ceilings add, except where
//! lanes cross the same PCIe link.
//!
//! Each lane's ceiling ([`crate::ceiling()`]) counts every link on its path as if the lane had it
//! alone. Lanes with a NIC each on one GPU (`-d mlx5_0,mlx5_1 --gpu 0,0`: two rails per GPU, a
//! dual-port NIC behind the GPU's PCIe switch) share that GPU's link; lanes listing one NIC twice
//! share its link. A link's payload rate ([`crate::pcie_link`]) is the link's, however many
//! lanes' transfers cross it: flows through one link add up to at most its capacity (the same
//! reasoning as the ceiling itself, the least of the limits on a path). So for every link that
//! two or more lanes cross, the lanes crossing it count for at most that link's rate, once:
//!
//! `aggregate <= (sum of the other lanes' ceilings) + min(link, sum of its lanes' ceilings)`
//!
//! and the aggregate is the least of these bounds and the plain sum. That is an upper bound, as
//! each lane's ceiling is, and exact when the lanes sharing links share all of them (the lanes on
//! one GPU of one run). Not counted once: the wire (a port's rate is per port; lanes sharing a
//! port share its rate too, but the wire limit mixes both ends' ports and is left per lane).

use serde::{Deserialize, Serialize};

use crate::ceiling::{Ceiling, PathPart};
use crate::facts::EndFacts;

/// A PCIe link a lane's data crosses, named so that two lanes crossing the same one name it
/// alike: the end's role, what it is and its PCI address.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SharedLink {
    /// "client GPU 0000:1b:00.0 PCIe link".
    pub name: String,
    /// Its payload rate in the lane's direction(s), in Gb/s (both directions of a
    /// bidirectional row, as the row's ceiling sums them).
    pub gbps: f64,
}

/// The PCIe links (GPU and NIC, with their PCI addresses) in `ceiling`'s limits, each end's
/// facts found by its role: `local` is the end named `local_role`, `peer` the other.
pub fn links_of(
    ceiling: &Ceiling,
    local_role: &str,
    local: &EndFacts,
    peer: Option<&EndFacts>,
) -> Vec<SharedLink> {
    let Ceiling::Hardware { limits, .. } = ceiling else { return Vec::new() };
    let facts_of = |role: &str| if role == local_role { Some(local) } else { peer };
    let mut links: Vec<SharedLink> = Vec::new();
    for limit in limits {
        let (role, what, pcie) = match &limit.part {
            PathPart::GpuLink { role } => {
                (role, "GPU", facts_of(role).and_then(|facts| facts.gpu_pcie.as_ref()))
            }
            PathPart::NicLink { role } => {
                (role, "NIC", facts_of(role).and_then(|facts| facts.nic_pcie.as_ref()))
            }
            PathPart::Wire | PathPart::StagedCopies { .. } => continue,
        };
        let Some(address) = pcie.map(|pcie| pcie.address.as_str()).filter(|address| !address.is_empty())
        else {
            continue;
        };
        let name = format!("{role} {what} {address} PCIe link");
        // A bidirectional row lists a link once per direction: the link carries both.
        match links.iter_mut().find(|link| link.name == name) {
            Some(link) => link.gbps += limit.gbps,
            None => links.push(SharedLink { name, gbps: limit.gbps }),
        }
    }
    links
}

/// One lane as the aggregate sees it: its ceiling and the links it crosses.
#[derive(Debug, Clone, Copy)]
pub struct LaneCeiling<'a> {
    pub gbps: Option<f64>,
    pub links: &'a [SharedLink],
}

/// The lanes' ceiling together.
#[derive(Debug, Clone, PartialEq)]
pub struct AggregateCeiling {
    /// `None` when a lane has no figure (the sum would claim a bound nobody knows).
    pub gbps: Option<f64>,
    /// The shared links that bind, each "client GPU 0000:1b:00.0 PCIe link shared by lanes 0+1,
    /// counted once"; empty when the plain sum does.
    pub counted_once: Vec<String>,
}

/// The ceiling of `lanes` run at once (lane `i` is `lanes[i]`): see the module's rule.
pub fn aggregate(lanes: &[LaneCeiling]) -> AggregateCeiling {
    let Some(sum) = lanes.iter().map(|lane| lane.gbps).sum::<Option<f64>>() else {
        return AggregateCeiling { gbps: None, counted_once: Vec::new() };
    };
    let mut names: Vec<&str> = Vec::new();
    for link in lanes.iter().flat_map(|lane| lane.links) {
        if !names.contains(&link.name.as_str()) {
            names.push(&link.name);
        }
    }
    let mut bounds: Vec<(f64, String)> = Vec::new();
    for name in names {
        let crossing: Vec<usize> = (0..lanes.len())
            .filter(|&index| lanes[index].links.iter().any(|link| link.name == name))
            .collect();
        if crossing.len() < 2 {
            continue;
        }
        // Every lane crossing it names the same link; the least figure keeps the bound one.
        let link_gbps = crossing
            .iter()
            .flat_map(|&index| lanes[index].links.iter().filter(|link| link.name == name))
            .map(|link| link.gbps)
            .fold(f64::INFINITY, f64::min);
        let (mut on, mut off) = (0.0, 0.0);
        for (index, lane) in lanes.iter().enumerate() {
            let gbps = lane.gbps.unwrap_or(0.0);
            if crossing.contains(&index) {
                on += gbps;
            } else {
                off += gbps;
            }
        }
        let lanes_named: Vec<String> = crossing.iter().map(ToString::to_string).collect();
        bounds.push((
            off + link_gbps.min(on),
            format!("{name} shared by lanes {}, counted once", lanes_named.join("+")),
        ));
    }
    let least = bounds.iter().map(|(gbps, _)| *gbps).fold(sum, f64::min);
    let counted_once = if least < sum {
        bounds.into_iter().filter(|(gbps, _)| *gbps == least).map(|(_, label)| label).collect()
    } else {
        Vec::new()
    };
    AggregateCeiling { gbps: Some(least), counted_once }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(name: &str, gbps: f64) -> SharedLink {
        SharedLink { name: name.into(), gbps }
    }

    /// Two lanes with a NIC each on one GPU whose link carries less than both NICs: the GPU's
    /// link counts once. A third lane on another GPU adds its own ceiling.
    #[test]
    fn lanes_on_one_gpu_count_its_link_once() {
        let gpu0 = [link("client GPU 0000:1b:00.0 PCIe link", 450.0)];
        let gpu1 = [link("client GPU 0000:43:00.0 PCIe link", 450.0)];
        let two_rails = [
            LaneCeiling { gbps: Some(380.0), links: &gpu0 },
            LaneCeiling { gbps: Some(380.0), links: &gpu0 },
        ];
        let all = aggregate(&two_rails);
        assert_eq!(all.gbps, Some(450.0), "the GPU link, once, not 760");
        assert_eq!(all.counted_once, ["client GPU 0000:1b:00.0 PCIe link shared by lanes 0+1, counted once"]);
        let three = [two_rails[0], LaneCeiling { gbps: Some(380.0), links: &gpu1 }, two_rails[1]];
        let all = aggregate(&three);
        assert_eq!(all.gbps, Some(830.0), "lane 1's own GPU adds its ceiling");
        assert_eq!(all.counted_once, ["client GPU 0000:1b:00.0 PCIe link shared by lanes 0+2, counted once"]);
    }

    /// Lanes on separate links add up as before; a shared link above the lanes' sum binds
    /// nothing; a lane without a figure leaves the aggregate without one.
    #[test]
    fn lanes_that_share_nothing_or_fit_the_link_add_up() {
        let (a, b) = (
            [link("server GPU 0000:1b:00.0 PCIe link", 450.0)],
            [link("server GPU 0000:43:00.0 PCIe link", 450.0)],
        );
        let apart = aggregate(&[
            LaneCeiling { gbps: Some(100.0), links: &a },
            LaneCeiling { gbps: Some(100.0), links: &b },
        ]);
        assert_eq!((apart.gbps, apart.counted_once.len()), (Some(200.0), 0));
        let fits = aggregate(&[
            LaneCeiling { gbps: Some(100.0), links: &a },
            LaneCeiling { gbps: Some(100.0), links: &a },
        ]);
        assert_eq!((fits.gbps, fits.counted_once.len()), (Some(200.0), 0), "450 Gb/s of link carries both");
        let unknown =
            aggregate(&[LaneCeiling { gbps: None, links: &a }, LaneCeiling { gbps: Some(100.0), links: &a }]);
        assert_eq!(unknown.gbps, None);
        assert_eq!(aggregate(&[]).gbps, Some(0.0));
    }
}
